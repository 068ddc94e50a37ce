package ir

import "goldtrace/kernel/ir/irpb"

// Validate checks k against the IR's structure and the hardware rules the
// NKI documentation states; it returns nil or an ErrorList sorted by
// position.
func Validate(k *irpb.Kernel) error {
	return checkStructure(k).Err()
}
