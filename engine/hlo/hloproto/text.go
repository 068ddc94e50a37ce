package hloproto

import (
	"goldtrace/engine/hlo"
)

// parseTextDefault parses HLO text with the engine's text parser.
func parseTextDefault(data []byte) (*hlo.Module, error) {
	return hlo.ParseText(data, "<input>")
}
