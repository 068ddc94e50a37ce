package golden

import (
	"os"
	"runtime/debug"
	"sync"
)

// goldenGCPercent is the Go GC's heap growth target while goldens run. The
// evaluator's heap is almost all pointer-free tensor storage, which the
// collector marks for nothing, so collecting when the heap has grown by a
// quarter (instead of Go's default doubling) costs little time and keeps
// the peak resident set near the values live at once (issue 12's bound:
// 1.5 × (inputs + outputs + largest live set)). GOGC, when set, wins.
//
// The target is lowered only while a golden runs: the library also traces
// kernels (dump_config), whose heap is small and made of many small objects,
// and there a quarter's growth means a collection on every trace.
const goldenGCPercent = 25

var goldenGC struct {
	sync.Mutex
	active int
	saved  int
}

// tuneGCForGoldens lowers the GC target until the returned function is
// called; nested and concurrent runs share one lowering.
func tuneGCForGoldens() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	goldenGC.Lock()
	if goldenGC.active == 0 {
		goldenGC.saved = debug.SetGCPercent(goldenGCPercent)
	}
	goldenGC.active++
	goldenGC.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			goldenGC.Lock()
			goldenGC.active--
			if goldenGC.active == 0 {
				debug.SetGCPercent(goldenGC.saved)
			}
			goldenGC.Unlock()
		})
	}
}
