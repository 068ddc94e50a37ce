package eval

import (
	"os"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// The max-pool gradient's select-and-scatter as a typed loop: select is one
// float compare of its two parameters and scatter one add of its two, on
// f32 or f64. Everything else takes the scalar machine
// (scalarSelectAndScatter), which this reproduces step for step: the
// compare sees both values flushed, the add flushes its operands and its
// result, the pick starts at the window's first in-bounds element and moves
// to each later candidate the compare rejects, and every result element
// receives its sources in source order. Trailing dimensions the window
// leaves alone (the channels of NHWC) are a run of lanes updated together,
// and the work is split over leading untouched dimensions (the batch) or
// over the lanes, whose results never meet.

// selectScatterFastDisabled turns the typed loop off
// (GOLDTRACE_NO_FAST_SELECT_SCATTER=1), to compare.
var selectScatterFastDisabled = os.Getenv("GOLDTRACE_NO_FAST_SELECT_SCATTER") == "1"

// selectScatterPlan is what selectScatterFastPlan read from the two
// computations.
type selectScatterPlan struct {
	dir       string // the compare's direction
	candFirst bool   // the compare reads (candidate, current): param 1 first
	srcFirst  bool   // the add reads (source, current): param 1 first
}

// selectScatterFastPlan recognizes the computations, or returns false.
func selectScatterFastPlan(sel, scat *hlo.Computation, t dtype.Type) (selectScatterPlan, bool) {
	var p selectScatterPlan
	if t != dtype.F32 && t != dtype.F64 {
		return p, false
	}
	first, ok := twoParamRoot(sel, "compare")
	if !ok || sel.Params[0].Shape.Elem != t || sel.Params[1].Shape.Elem != t || sel.Root.Shape.Elem != dtype.Pred {
		return p, false
	}
	if ct, err := sel.Root.EffectiveComparisonType(); err != nil || (ct != "" && ct != "FLOAT") || cmpFunc[float64](sel.Root.ComparisonDirection) == nil {
		return p, false
	}
	p.dir, p.candFirst = sel.Root.ComparisonDirection, !first
	first, ok = twoParamRoot(scat, "add")
	if !ok || scat.Root.Shape.Elem != t || scat.Params[0].Shape.Elem != t || scat.Params[1].Shape.Elem != t {
		return p, false
	}
	p.srcFirst = !first
	return p, true
}

// twoParamRoot reports whether c's root is op applied to c's two scalar
// parameters, each once, and whether parameter 0 comes first.
func twoParamRoot(c *hlo.Computation, op string) (param0First, ok bool) {
	if c == nil || len(c.Params) != 2 || c.Root == nil || c.Root.Opcode != op || len(c.Root.Operands) != 2 || len(c.Root.Shape.Dims) != 0 {
		return false, false
	}
	a, b := c.Root.Operands[0], c.Root.Operands[1]
	switch {
	case a == c.Params[0] && b == c.Params[1]:
		return true, true
	case a == c.Params[1] && b == c.Params[0]:
		return false, true
	}
	return false, false
}

// selectScatterFloat runs the plan over xs (operand), ss (source) into os
// (the result, holding the init value everywhere).
func selectScatterFloat[F float](p selectScatterPlan, xs, ss, os []F, g *windowGeom) {
	t, run := g.trivialTail()
	q := len(g.in) - t
	n := tensor.NumElements(g.out)
	if run == 0 || n == 0 {
		return
	}
	windows := int(n / run)
	// Leading dimensions the window leaves alone split the work into parts
	// that write disjoint results; without any, the lanes do.
	prefix := int64(1)
	for d := 0; d < q; d++ {
		w := g.win[d]
		if w.Size != 1 || w.Stride != 1 || w.PadLow != 0 || w.PadHigh != 0 || w.BaseDilation != 1 || w.WindowDilation != 1 {
			break
		}
		prefix *= g.in[d]
	}
	perPrefix := windows / int(prefix)
	work := int(n * max(tensor.NumElements(g.size), 1))
	// The compare as (current, candidate): reading (candidate, current)
	// mirrors its direction.
	dir := p.dir
	if p.candFirst {
		dir = map[string]string{"GE": "LE", "LE": "GE", "GT": "LT", "LT": "GT", "EQ": "EQ", "NE": "NE"}[dir]
	}
	cmp := cmpFunc[F](dir)
	body := func(wlo, whi int, clo, chi int64) {
		sc := g.scratch()
		var buf []int64
		lanes := chi - clo
		cur := make([]F, lanes)
		pick := make([]int32, lanes)
		for w := wlo; w < whi; w++ {
			base := int64(w) * run
			buf = g.walk(base, q, buf, sc)
			if len(buf) == 0 {
				continue
			}
			for c := range lanes {
				cur[c], pick[c] = flush(xs[buf[0]+clo+c]), 0
			}
			for j := 1; j < len(buf); j++ {
				row := xs[buf[j]+clo : buf[j]+chi]
				if c32, ok := any(cur).([]float32); ok {
					pickRowF32(dir, c32, pick, any(row).([]float32), int32(j))
					continue
				}
				for c, v := range row {
					v = flush(v)
					if !cmp(cur[c], v) {
						cur[c], pick[c] = v, int32(j)
					}
				}
			}
			src := ss[base+clo : base+chi]
			for c, s := range src {
				at := buf[pick[c]] + clo + int64(c)
				o, s := flush(os[at]), flush(s)
				if p.srcFirst {
					os[at] = flush(s + o)
				} else {
					os[at] = flush(o + s)
				}
			}
		}
	}
	if prefix > 1 {
		parallelForWork(int(prefix), work, func(lo, hi int) { body(lo*perPrefix, hi*perPrefix, 0, run) })
		return
	}
	parallelForWork(int(run), work, func(lo, hi int) { body(0, windows, int64(lo), int64(hi)) })
}

// selectScatterFast is evalSelectAndScatter's typed loop, or false when
// the computations or types are not its kind.
func selectScatterFast(sel, scat *hlo.Computation, g *windowGeom, x, src, out *tensor.Tensor) bool {
	if x.Type != src.Type || x.Type != out.Type {
		return false
	}
	p, ok := selectScatterFastPlan(sel, scat, x.Type)
	if !ok {
		return false
	}
	switch x.Type {
	case dtype.F32:
		selectScatterFloat(p, x.F32(), src.F32(), out.F32(), g)
	case dtype.F64:
		selectScatterFloat(p, x.F64(), src.F64(), out.F64(), g)
	default:
		return false
	}
	return true
}

// pickRowF32 moves each lane's pick to candidate j where the compare
// (current, candidate) in direction dir is false; one loop per direction
// keeps the compare inline.
func pickRowF32(dir string, cur []float32, pick []int32, row []float32, j int32) {
	row, pick = row[:len(cur)], pick[:len(cur)]
	switch dir {
	case "GE":
		for c, v := range row {
			if v = flush32(v); !(cur[c] >= v) {
				cur[c], pick[c] = v, j
			}
		}
	case "GT":
		for c, v := range row {
			if v = flush32(v); !(cur[c] > v) {
				cur[c], pick[c] = v, j
			}
		}
	case "LE":
		for c, v := range row {
			if v = flush32(v); !(cur[c] <= v) {
				cur[c], pick[c] = v, j
			}
		}
	case "LT":
		for c, v := range row {
			if v = flush32(v); !(cur[c] < v) {
				cur[c], pick[c] = v, j
			}
		}
	case "EQ":
		for c, v := range row {
			if v = flush32(v); !(cur[c] == v) {
				cur[c], pick[c] = v, j
			}
		}
	case "NE":
		for c, v := range row {
			if v = flush32(v); !(cur[c] != v) {
				cur[c], pick[c] = v, j
			}
		}
	}
}
