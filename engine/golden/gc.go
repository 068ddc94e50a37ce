package golden

import (
	"os"
	"runtime/debug"
)

// goldenGCPercent is the Go GC's heap growth target while goldens run. The
// evaluator's heap is almost all pointer-free tensor storage, which the
// collector marks for nothing, so collecting when the heap has grown by a
// quarter (instead of Go's default doubling) costs little time and keeps
// the peak resident set near the values live at once (issue 12's bound:
// 1.5 × (inputs + outputs + largest live set)). GOGC, when set, wins.
const goldenGCPercent = 25

func init() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(goldenGCPercent)
	}
}
