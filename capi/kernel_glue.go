package main

import (
	"goldtrace/kernel/ir"
	"goldtrace/kernel/ir/irpb"
)

// A kernel breaking a rule is the caller's error (an invalid argument); the
// message names the rule and the kernel's file:line.
func validateKernel(k *irpb.Kernel) error {
	if err := ir.Validate(k); err != nil {
		return withStatus(statusInvalidArgument, "%v", err)
	}
	return nil
}

func marshalKernel(k *irpb.Kernel) ([]byte, error) { return ir.Marshal(k) }

func unmarshalKernel(b []byte) (*irpb.Kernel, error) {
	k, err := ir.Unmarshal(b)
	if err != nil {
		return nil, withStatus(statusParse, "kernel IR: %v", err)
	}
	return k, nil
}

func formatKernel(k *irpb.Kernel) string { return ir.Format(k) }
