package hloproto

import (
	"errors"

	"goldtrace/engine/hlo"
)

// parseTextDefault is replaced by hlo.ParseText once the text parser exists.
func parseTextDefault(data []byte) (*hlo.Module, error) {
	return nil, errors.New("hloproto: HLO text input needs the HLO text parser (hlo.ParseText), which is not available yet")
}
