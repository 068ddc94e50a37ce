package eval

import (
	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// bf16/f16 reduce-windows summing or multiplying: XLA:CPU computes the
// reducer in f32 and rounds to the narrow type after every step (its
// compiled reducer is add, convert to bf16, convert back), so a window's
// fold is acc = round(flush(acc op x)) from the init value, in row-major
// window order: the scalar machine's steps (encoder: FromF32 of the
// flushed f32 result). Here each step runs over a whole run of trailing
// untouched dimensions (or one element), rounded with roundNarrow; a
// cumulative window continues one running fold, which is the same sequence
// of steps as refolding each window.

// narrowWindowFastDisabled sends them to the scalar machine (tests compare).
var narrowWindowFastDisabled bool

// reduceWindowNarrow folds xs (the narrow values as f32) into o.
func reduceWindowNarrow(op string, t dtype.Type, i0 float32, xs []float32, g *windowGeom, o []float32) {
	step := func(acc, xs []float32) {
		xs = xs[:len(acc)]
		if op == "add" {
			for c, v := range xs {
				acc[c] = flush(flush(acc[c]) + flush(v))
			}
		} else {
			for c, v := range xs {
				acc[c] = flush(flush(acc[c]) * flush(v))
			}
		}
		roundNarrow(t, acc)
	}
	tail, run := g.trivialTail()
	q := len(g.in) - tail
	n := tensor.NumElements(g.out)
	if run == 0 || n == 0 {
		return
	}
	if d, ok := g.prefixScan(); ok && !windowFastDisabled {
		outer, inner, ln, m, last := g.prefixRows(d)
		parallelForWork(int(outer), int(outer*ln*inner), func(lo, hi int) {
			acc := make([]float32, inner)
			for r := int64(lo); r < int64(hi); r++ {
				for c := range acc {
					acc[c] = i0
				}
				j := int64(-1)
				for i := range m {
					for e := last(i); j < e; {
						j++
						step(acc, xs[(r*ln+j)*inner:])
					}
					copy(o[(r*m+i)*inner:(r*m+i+1)*inner], acc)
				}
			}
		})
		return
	}
	outer := int(n / run)
	parallelForWork(outer, int(n*max(tensor.NumElements(g.size), 1)), func(lo, hi int) {
		sc := g.scratch()
		var buf []int64
		for k := lo; k < hi; k++ {
			base := int64(k) * run
			buf = g.walk(base, q, buf, sc)
			acc := o[base : base+run]
			for c := range acc {
				acc[c] = i0
			}
			for _, p := range buf {
				step(acc, xs[p:])
			}
		}
	})
}
