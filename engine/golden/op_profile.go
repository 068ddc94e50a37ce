package golden

import (
	"fmt"
	"os"
	"sort"
	"time"

	"goldtrace/engine/hlo"
)

// opProfileOn (GOLDTRACE_OP_PROFILE=1) prints, when a run ends, the entry
// computation's instructions that took longest (device 0), for finding
// where a module's time goes without a Go profiler. An instruction's time
// is the wall time since the entry instruction before it finished, so a
// fused group's members show up under the instruction that ran the group.
var opProfileOn = os.Getenv("GOLDTRACE_OP_PROFILE") == "1"

type opProfile struct {
	entry *hlo.Computation
	last  time.Time
	spent map[*hlo.Instruction]time.Duration
}

// newOpProfile is nil unless GOLDTRACE_OP_PROFILE=1; a nil profile's
// methods do nothing.
func newOpProfile(entry *hlo.Computation) *opProfile {
	if !opProfileOn {
		return nil
	}
	return &opProfile{entry: entry, spent: map[*hlo.Instruction]time.Duration{}}
}

func (p *opProfile) begin(t time.Time) {
	if p != nil {
		p.last = t
	}
}

func (p *opProfile) step(in *hlo.Instruction) {
	if p == nil || in.Parent != p.entry {
		return
	}
	now := time.Now()
	p.spent[in] += now.Sub(p.last)
	p.last = now
}

func (p *opProfile) report() {
	if p == nil {
		return
	}
	type row struct {
		in *hlo.Instruction
		d  time.Duration
	}
	var rows []row
	var total time.Duration
	for in, d := range p.spent {
		rows = append(rows, row{in, d})
		total += d
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].d > rows[j].d })
	fmt.Fprintf(os.Stderr, "goldtrace op profile: %.2f ms in %d entry instructions\n", total.Seconds()*1e3, len(rows))
	for i, r := range rows {
		if i == 25 {
			break
		}
		fmt.Fprintf(os.Stderr, "  %8.3f ms  %-20s %s %s\n", r.d.Seconds()*1e3, r.in.Opcode, r.in.Name, r.in.Shape.String())
	}
}
