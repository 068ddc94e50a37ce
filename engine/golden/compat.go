package golden

import (
	"slices"

	"goldtrace/engine/eval"
)

// validXLACompat reports whether v is an Options.XLACompat the evaluator
// knows (eval.ApplyXLACompat); "" is the newest XLA:CPU.
func validXLACompat(v string) bool { return slices.Contains(eval.XLACompatVersions, v) }
