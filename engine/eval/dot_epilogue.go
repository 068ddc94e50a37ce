package eval

import (
	"fmt"
	"sync"
	"sync/atomic"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// A dot's epilogue: when a blocked f32 group is the only reader of a
// two-dimensional f32 dot's result, reads it only elementwise (planInPlace)
// and has every other operand computed before the dot, the group runs on
// the dot's result tile by tile as the GEMM finishes each tile (a chunk of
// rows by a packed block of columns, runOverTiles), from the goroutine
// that made it, writing its value over the tile while it is still in that
// core's cache. Pairwise distances' sqrt(max(|a|²+|b|²-2a·b, 0)) had read
// its 64 MB product back from memory after the GEMM had written it. Each
// element goes through the same kernels as in the group's own run (blocks
// are position-independent), so the bits are the same; a dot that does not
// run pipelined leaves the group to run after it, in place.

// dotEpilogue is the group run Call hands the dot it evaluates
// (Evaluator.dotEpi); dotInF32 takes it.
type dotEpilogue struct {
	tile func(c []float32, r0, r1, c0, c1 int) // rows [r0,r1), columns [c0,c1) of c are final
	ran  bool                                  // every tile went through tile
	mu   sync.Mutex
	err  error // a panic in a tile
}

// dotEpilogueRuns counts the dots whose group ran on their tiles (tests).
var dotEpilogueRuns atomic.Int64

// takeDotEpilogue returns the epilogue Call set for the dot being
// evaluated (nil: none), once.
func (ev *Evaluator) takeDotEpilogue() *dotEpilogue {
	if ev == nil {
		return nil
	}
	e := ev.dotEpi
	ev.dotEpi = nil
	return e
}

// planDotEpilogues returns, per position of c's instructions, the position
// of the group that may run on that dot's tiles (-1: none), or nil.
func planDotEpilogues(c *hlo.Computation, fp *framePlan) []int32 {
	var out []int32
	for gi, g := range fp.groups {
		if g == nil || len(g.extras) > 0 || len(g.dims) != 2 || g.elem != dtype.F32 {
			continue
		}
		for _, p := range fp.ginplace[gi] {
			d := c.Instructions[p]
			if d.Opcode != "dot" || d.Shape.Elem != dtype.F32 || len(d.Operands) != 2 || p == fp.root || int(p) >= gi {
				continue
			}
			// Every use of the dot is the group's.
			n := int32(0)
			for _, q := range fp.gconsumes[gi] {
				if q == p {
					n++
				}
			}
			if fp.uses[p] != n {
				continue
			}
			// Every other outside operand exists when the dot runs (a
			// constant is taken early: dotWithEpilogue).
			early := true
			for _, ops := range fp.gops[gi] {
				for _, q := range ops {
					early = early && (q <= p || fp.konst[q])
				}
			}
			if !early {
				continue
			}
			if out == nil {
				out = make([]int32, len(c.Instructions))
				for i := range out {
					out[i] = -1
				}
			}
			if out[p] < 0 {
				out[p] = int32(gi)
				g.forgetClean(d)
			}
		}
	}
	return out
}

// forgetClean makes g scan outside operand x for subnormals again: a dot's
// tiles reach its epilogue before the dot's result is flushed.
func (g *fusedGroup) forgetClean(x *hlo.Instruction) {
	if g.estate0 == nil {
		return
	}
	for j, m := range g.members {
		for k, o := range m.Operands {
			if id := g.extID[j][k]; o == x && id >= 0 {
				g.estate0[id] = 0
			}
		}
	}
}

// dotWithEpilogue evaluates the dot at idx (op f on args) with its group
// (fp.dotEpi[idx]) running on its tiles, and records in fb when it did.
func (ev *Evaluator) dotWithEpilogue(fp *framePlan, fb *frameBuf, idx int, f OpFunc, in *hlo.Instruction, args []Value) (Value, error) {
	gi := int(fp.dotEpi[idx])
	g := fp.groups[gi]
	for _, ops := range fp.gops[gi] {
		for _, q := range ops {
			if q > int32(idx) && fp.konst[q] && !fb.have[q] {
				// A constant the group reads, placed after the dot: its
				// value, as Call will set it when it gets there.
				fb.vals[q], fb.have[q] = fp.consts[q], true
			}
		}
	}
	sc := g.takeScratch()
	defer g.putScratch(sc)
	ext := fuseInputs{f: sc.f, pred: sc.pred, raw: sc.raw, predArgs: sc.predArgs}
	if err := g.outsideInputs(&ext, sc, fb.valueOf, &fb.lookup, gi, in); err != nil {
		return callOp(f, ev, in, args) // the group runs later, as it would have
	}
	cols := int(g.dims[1])
	blk := min(fuseBlock, int(tensor.NumElements(g.dims)))
	e := &dotEpilogue{}
	var once sync.Once
	e.tile = func(c []float32, r0, r1, c0, c1 int) {
		defer func() {
			if r := recover(); r != nil {
				e.mu.Lock()
				e.err = fmt.Errorf("internal error: %v", r)
				e.mu.Unlock()
			}
		}()
		once.Do(func() {
			for _, ref := range g.outside {
				if g.members[ref.j].Operands[ref.k] == in {
					ext.f[ref.j][ref.k] = c
				}
			}
		})
		w := getFuseWorker(g, blk)
		defer putFuseWorker(w)
		for r := r0; r < r1; r++ {
			for s, end := r*cols+c0, r*cols+c1; s < end; s += fuseBlock {
				e := min(s+fuseBlock, end)
				w.block(g, ext, s, e, c[s:e])
			}
		}
	}
	ev.dotEpi = e
	v, err := callOp(f, ev, in, args)
	ev.dotEpi = nil
	if err != nil {
		return v, err
	}
	if e.err != nil {
		return Value{}, &Error{"", g.members[len(g.members)-1].Name, "fusion", e.err}
	}
	if e.ran {
		dotEpilogueRuns.Add(1)
		if fb.epiDone == nil {
			fb.epiDone = make([]int32, len(fp.uses))
			for i := range fb.epiDone {
				fb.epiDone[i] = -1
			}
		}
		fb.epiDone[gi] = int32(idx)
	}
	return v, nil
}
