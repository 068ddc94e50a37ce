package eval

// The order XLA:CPU's own loop emitter (not YNNPACK) adds an f32/f64 sum
// reduce-window in, measured on jax 0.10.2 (tests/test_xla_reduce_window_order.py,
// docs/xla-cpu-semantics.md). The window is an xla.loop over one symbol per
// window dimension whose indexing map constrains each padded dimension's
// operand index to the operand. Two things move the adds away from row-major
// window order:
//
//   - XLA's PeelLoops pass, innermost symbol first while the symbols inside
//     it span fewer than 64 iterations: the first constrained symbol whose
//     last offset peeled off leaves it unconstrained (for 2 offsets always:
//     the one left is a constant) is split into a main loop nest over the
//     rest and a tail loop nest over that last offset, each over all other
//     symbols, main first. Only one symbol is peeled in jaxlib 0.10.2 (a
//     3x3 stride-2 SAME pool keeps its row checks; peeling rows too would
//     make 17% of f32[2,8,8,4]'s results differ). A 3x3 stride-2 SAME pool
//     (padding (0,1)) adds columns 0 and 1 of every row, then column 2 of
//     every row.
//   - LLVM: when the innermost window dimension has 2 offsets, it is
//     unrolled and the loop over the next one vectorized if that has 2, 4
//     or 8 offsets (2 or 4 for f64), a power-of-two operand stride and no
//     offset checks on itself or inside it (an outer dimension's check
//     wraps the loop): one lane per offset (lane 0 starting from the
//     running value, the others from -0), the lanes then summed by halving
//     for each iteration of the outer window loops. A 2x2 pool on
//     f32[2,8,8,4] adds (a00+a01)+(a10+a11); on f32[2,9,9,4] (row stride 36)
//     it folds row-major. Likewise when the window covers the whole last
//     operand dimension (each lane reads one contiguous row).

import "goldtrace/engine/tensor"

// windowBox is one loop nest of a peeled window: offsets [lo[d], hi[d]] of
// each window dimension d, in row-major order or as lanes.
type windowBox struct {
	lo, hi []int64
	// lanes: fold as LLVM's vectorized loop, one lane per offset of window
	// dimension lane, the offsets of the dims after it unrolled per lane.
	lanes bool
	lane  int
}

// constrained reports whether window dimension d's bounds check depends on
// its window offset in [lo, hi] the way XLA's IndexingMap::Simplify sees it:
// offsets may reach below the operand, or past its end from a result whose
// window starts inside it (results past floor((n-1+padLow-lo)/stride) are
// dropped from the range first; the low side is not tightened). Measured:
// f32[12,3,9,7] window 2 stride 3 padding (0,2) is unconstrained, f32[6,8,..]
// window 2 stride 2 padding (2,1) constrained.
func (g *windowGeom) constrained(d int, lo, hi int64) bool {
	if lo == hi || g.out[d] == 0 {
		return false
	}
	w := g.win[d]
	if lo-w.PadLow < 0 {
		return true
	}
	last := min(g.out[d]-1, (g.in[d]-1+w.PadLow-lo)/w.Stride)
	return last*w.Stride+hi-w.PadLow > g.in[d]-1
}

// checkFree reports whether b's loop nest keeps no bounds check on a window
// offset of dimension from or inside it (checks on the result index alone
// are hoisted out; an outer dimension's check wraps the inner loops).
func (g *windowGeom) checkFree(b *windowBox, from int) bool {
	for d := from; d < len(g.win); d++ {
		if g.constrained(d, b.lo[d], b.hi[d]) {
			return false
		}
	}
	return true
}

// laneDim reports the window dimension LLVM vectorizes b's nest over, if it
// does (see the file comment; the exceptions are measured, not derived).
func (g *windowGeom) laneDim(b *windowBox, f32 bool) (int, bool) {
	var dims []int
	for d := range g.win {
		if b.hi[d] > b.lo[d] {
			dims = append(dims, d)
		}
	}
	if len(dims) < 2 {
		return 0, false
	}
	last, lane := dims[len(dims)-1], dims[len(dims)-2]
	k, r := b.hi[last]-b.lo[last]+1, b.hi[lane]-b.lo[lane]+1
	if !(r == 2 || r == 4 || (r == 8 && f32)) {
		return 0, false
	}
	stride := int64(1)
	for _, n := range g.in[lane+1:] {
		stride *= n
	}
	// The window's last dim is the operand's innermost one (extent-1 dims
	// after it aside).
	lastDim := true
	for _, n := range g.in[last+1:] {
		lastDim = lastDim && n == 1
	}
	unit := g.win[lane].Stride == 1
	// 2 lanes stay scalar when the loop over the lane dimension's results
	// is outermost (f32[16,8] and f32[1,16,8] 2x2 stride 1, f32[6,5] 2x5).
	outermost := true
	for _, n := range g.in[:lane] {
		outermost = outermost && n == 1
	}
	pair := r == 2 && unit && lastDim
	if lastDim && k == g.in[last] && stride == k {
		// Whole rows: also scalar for 2 rows of 2, 4 or 8 at stride 1
		// unless an outer window dimension loops around them or the rows
		// give one result (f32[4,9,9,4] window 2x4 and f32[2,7,3,2] 2x2
		// scalar; f32[5,16,6,4] 2x2x4 and f32[9,2,2] 2x2 vectorized), and
		// for rows of more than 8 (f32[4,6,16] 4x16).
		inside := len(dims) > 2 || g.out[lane] == 1
		return lane, k <= 8 && !(pair && (outermost || (k&(k-1) == 0 && !inside)))
	}
	if k == 2 && stride > 0 && stride&(stride-1) == 0 {
		return lane, !(pair && outermost)
	}
	return 0, false
}

// xlaBoxes is the loop nests XLA:CPU folds g's windows in, for sum
// reducers; nil for row-major order. Dilated and reversed windows keep
// row-major order (not measured).
func (g *windowGeom) xlaBoxes(op string, f32 bool) []windowBox {
	if op != "add" || windowOrderDisabled {
		return nil
	}
	r := len(g.win)
	for _, w := range g.win {
		if w.BaseDilation != 1 || w.WindowDilation != 1 || w.WindowReversal {
			return nil
		}
	}
	full := windowBox{lo: make([]int64, r), hi: make([]int64, r)}
	for d, w := range g.win {
		full.hi[d] = g.size[d] - 1
		if g.out[d] == 1 {
			// One result: Simplify turns the bounds check into the
			// offset's range (f32[16,3,5,16] window 5 padding (1,1)).
			full.lo[d] = max(0, w.PadLow)
			full.hi[d] = min(full.hi[d], g.in[d]-1+w.PadLow)
		}
		if full.lo[d] > full.hi[d] || g.out[d] == 0 {
			return nil
		}
	}
	// maps as PeelLoops builds them: the tail, then the main nest.
	maps := []windowBox{full}
	span := int64(1)
	for d := r - 1; d >= 0 && span < 64; d-- {
		cur := maps[len(maps)-1]
		lo, hi := cur.lo[d], cur.hi[d]
		span *= hi - lo + 1
		if !g.constrained(d, lo, hi) || g.constrained(d, lo, hi-1) {
			continue
		}
		tail := windowBox{lo: append([]int64{}, cur.lo...), hi: append([]int64{}, cur.hi...)}
		tail.lo[d] = hi
		main := windowBox{lo: append([]int64{}, cur.lo...), hi: append([]int64{}, cur.hi...)}
		main.hi[d] = hi - 1
		maps = append(maps[:len(maps)-1], tail, main)
		break
	}
	boxes := make([]windowBox, 0, len(maps))
	plain := len(maps) == 1
	for i := len(maps) - 1; i >= 0; i-- {
		b := maps[i]
		if lane, ok := g.laneDim(&b, f32); ok && g.checkFree(&b, lane) {
			b.lane, b.lanes = lane, true
			plain = false
		}
		boxes = append(boxes, b)
	}
	if plain {
		return nil
	}
	return boxes
}

// reduceWindowBoxes is reduceWindowFloat's sum in the loop nests boxes:
// each result (or run of q-trailing contiguous results) folds the nests one
// after another from i0.
func reduceWindowBoxes[F float](i0 F, xs []F, g *windowGeom, q int, run int64, boxes []windowBox, o []F) {
	n := tensor.NumElements(g.out)
	outer := int(n / run)
	parallelForWork(outer, int(n*max(tensor.NumElements(g.size), 1)), func(lo, hi int) {
		sc := g.scratch()
		var buf []int64
		lv := make([]F, 8*run)
		for k := lo; k < hi; k++ {
			base := int64(k) * run
			acc := o[base : base+run]
			for c := range acc {
				acc[c] = i0
			}
			for bi := range boxes {
				b := &boxes[bi]
				buf = g.walkBox(base, q, buf[:0], sc, b)
				if b.lanes {
					// The vectorized loop's offsets are all inside the
					// operand for a result or (its check on the result
					// hoisted out) none are, for each outer offset.
					if sh := g.laneShape(b, q); len(buf)%(sh[1]*sh[2]) == 0 {
						sh[0] = len(buf) / (sh[1] * sh[2])
						foldLanes(acc, xs, buf, sh, lv)
						continue
					}
				}
				if run == 1 {
					a := acc[0]
					for _, p := range buf {
						a += xs[p]
					}
					acc[0] = a
					continue
				}
				for _, p := range buf {
					foldRun("add", acc, xs[p:p+run])
				}
			}
		}
	})
}

// laneShape is how a lanes box's positions (row-major, none outside the
// operand) group: outer loop iterations, lanes, and positions per lane.
func (g *windowGeom) laneShape(b *windowBox, q int) [3]int {
	outer, inner := 1, 1
	for d := 0; d < b.lane; d++ {
		outer *= int(b.hi[d] - b.lo[d] + 1)
	}
	for d := b.lane + 1; d < q; d++ {
		inner *= int(b.hi[d] - b.lo[d] + 1)
	}
	return [3]int{outer, int(b.hi[b.lane] - b.lo[b.lane] + 1), inner}
}

// foldLanes folds positions buf into the run acc as the vectorized loop
// does; lv is scratch for lanes × len(acc) values. Lane 0 is acc itself.
func foldLanes[F float](acc, xs []F, buf []int64, shape [3]int, lv []F) {
	outer, lanes, inner := shape[0], shape[1], shape[2]
	n := len(acc)
	lane := func(r int) []F {
		if r == 0 {
			return acc
		}
		return lv[r*n : (r+1)*n]
	}
	for o := 0; o < outer; o++ {
		for r := 0; r < lanes; r++ {
			p := buf[(o*lanes+r)*inner:]
			v := lane(r)
			if r == 0 {
				foldRun("add", v, xs[p[0]:p[0]+int64(n)])
			} else {
				// -0 + x is x.
				copy(v, xs[p[0]:p[0]+int64(n)])
			}
			for _, i := range p[1:inner] {
				foldRun("add", v, xs[i:i+int64(n)])
			}
		}
		for h := lanes / 2; h >= 1; h /= 2 {
			for i := 0; i < h; i++ {
				foldRun("add", lane(i), lane(i+h))
			}
		}
	}
}
