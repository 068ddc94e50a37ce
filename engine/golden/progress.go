package golden

import (
	"fmt"
	"io"
	"sync"
	"time"

	"goldtrace/engine/hlo"
)

// progress tracks how far each device has got through the entry computation,
// for the -v 2 progress lines. The evaluator's trace hook feeds it.
type progress struct {
	entry   *hlo.Computation
	total   int // entry instructions
	mu      sync.Mutex
	done    []int              // entry instructions finished, per device
	steps   []int64            // all instructions evaluated (nested ones too), per device
	current []*hlo.Instruction // last instruction seen, per device
	began   time.Time
}

func newProgress(m *hlo.Module, devices int) *progress {
	return &progress{
		entry:   m.Entry,
		total:   len(m.Entry.Instructions),
		done:    make([]int, devices),
		steps:   make([]int64, devices),
		current: make([]*hlo.Instruction, devices),
	}
}

func (p *progress) step(dev int, in *hlo.Instruction) {
	p.mu.Lock()
	p.steps[dev]++
	if in.Parent == p.entry {
		p.done[dev]++
	}
	p.current[dev] = in
	p.mu.Unlock()
}

// start prints a line to w every interval (one second by default) until the
// returned stop is called. With w nil it does nothing.
func (p *progress) start(w io.Writer, interval time.Duration) (stop func()) {
	p.began = time.Now()
	if w == nil {
		return func() {}
	}
	if interval <= 0 {
		interval = time.Second
	}
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				p.report(w)
			}
		}
	}()
	return func() {
		close(quit)
		<-finished
	}
}

func (p *progress) report(w io.Writer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	elapsed := time.Since(p.began).Round(100 * time.Millisecond)
	for d := range p.done {
		prefix := ""
		if len(p.done) > 1 {
			prefix = fmt.Sprintf("device %d: ", d)
		}
		at := "start"
		if in := p.current[d]; in != nil {
			at = fmt.Sprintf("%%%s (%s) in %s", in.Name, in.Opcode, in.Parent.Name)
		}
		fmt.Fprintf(w, "infergoldens: %s%s %d/%d entry instructions (%d evaluated), at %s\n",
			prefix, elapsed, p.done[d], p.total, p.steps[d], at)
	}
}
