package eval

// Blocked loops for reduce-window and select-and-scatter. A window's input
// positions are the row-major product of each dimension's valid offsets, so
// they are built per dimension (no per-window allocation), and trailing
// dimensions the window does not touch (size 1, stride 1, no padding or
// dilation: the channels of an NHWC pool) become an inner run of contiguous
// elements that every window position updates together. Each result element
// still folds its window's elements in row-major window order starting from
// the init value, so the arithmetic and its order are what the per-window
// loop computes.

import "goldtrace/engine/tensor"

// windowScratch is one goroutine's reusable state for windowGeom.walk.
type windowScratch struct {
	strides []int64
	oi      []int64
	lists   [][]int64
	idx     []int
}

func (g *windowGeom) scratch() *windowScratch {
	r := len(g.in)
	return &windowScratch{strides: tensor.Strides(g.in), oi: make([]int64, r), lists: make([][]int64, r), idx: make([]int, r)}
}

// walk is positions without allocation: it appends to buf the input linear
// indices of result element o's window over dimensions [0, q) (q <= rank;
// dimensions from q on are taken at offset 0), in row-major window order.
func (g *windowGeom) walk(o int64, q int, buf []int64, sc *windowScratch) []int64 {
	buf = buf[:0]
	for d := len(g.in) - 1; d >= 0; d-- {
		if g.out[d] > 0 {
			sc.oi[d] = o % g.out[d]
			o /= g.out[d]
		}
	}
	for d := 0; d < q; d++ {
		w := g.win[d]
		l := sc.lists[d][:0]
		base := sc.oi[d]*w.Stride - w.PadLow
		for wi := int64(0); wi < g.size[d]; wi++ {
			p := base + wi*w.WindowDilation
			if p < 0 || p%w.BaseDilation != 0 || p/w.BaseDilation >= g.in[d] {
				continue
			}
			l = append(l, p/w.BaseDilation*sc.strides[d])
		}
		sc.lists[d] = l
		if len(l) == 0 {
			return buf
		}
		sc.idx[d] = 0
	}
	if q == 0 {
		return append(buf, 0)
	}
	for {
		lin := int64(0)
		for d := 0; d < q; d++ {
			lin += sc.lists[d][sc.idx[d]]
		}
		buf = append(buf, lin)
		d := q - 1
		for ; d >= 0; d-- {
			sc.idx[d]++
			if sc.idx[d] < len(sc.lists[d]) {
				break
			}
			sc.idx[d] = 0
		}
		if d < 0 {
			return buf
		}
	}
}

// trivialTail returns how many trailing dimensions the window leaves alone
// and the element count of that inner run.
func (g *windowGeom) trivialTail() (t int, run int64) {
	run = 1
	for d := len(g.in) - 1; d >= 0; d-- {
		w := g.win[d]
		if w.Size != 1 || w.Stride != 1 || w.PadLow != 0 || w.PadHigh != 0 || w.BaseDilation != 1 || w.WindowDilation != 1 {
			break
		}
		t++
		run *= g.in[d]
	}
	return t, run
}

// reduceWindowFloat folds each window of xs into o with a fast reducer op
// (add, multiply, maximum, minimum), from init value i0.
func reduceWindowFloat[F float](op string, i0 F, xs []F, g *windowGeom, o []F) {
	t, run := g.trivialTail()
	q := len(g.in) - t
	n := tensor.NumElements(g.out)
	if run == 0 || n == 0 {
		return
	}
	outer := int(n / run)
	parallelForWork(outer, int(n*max(tensor.NumElements(g.size), 1)), func(lo, hi int) {
		sc := g.scratch()
		var buf []int64
		for k := lo; k < hi; k++ {
			base := int64(k) * run
			buf = g.walk(base, q, buf, sc)
			if run == 1 {
				o[k] = foldFloatAt(op, i0, xs, buf)
				continue
			}
			acc := o[base : base+run]
			if a, ok := any(acc).([]float32); ok {
				// The whole vectors of the run fold in registers
				// (minmax_simd_amd64.go), the rest below.
				c := foldWindowMinMaxVector(op, any(i0).(float32), any(xs).([]float32), buf, a)
				acc = acc[c:]
				for i := range buf {
					buf[i] += int64(c)
				}
			}
			for c := range acc {
				acc[c] = i0
			}
			for _, p := range buf {
				foldRun(op, acc, xs[p:p+int64(len(acc))])
			}
		}
	})
}

// foldRun sets acc[c] = op(acc[c], xs[c]) for every c.
func foldRun[F float](op string, acc, xs []F) {
	xs = xs[:len(acc)]
	switch op {
	case "add":
		for c, v := range xs {
			acc[c] += v
		}
	case "multiply":
		for c, v := range xs {
			acc[c] *= v
		}
	case "maximum", "minimum":
		foldRunMinMax(op, acc, xs)
	}
}

// foldRunMinMax is foldRun's maximum and minimum: the whole vectors first
// where the build has them (minmax_simd_amd64.go), then lane by lane.
func foldRunMinMax[F float](op string, acc, xs []F) {
	if a, ok := any(acc).([]float32); ok {
		k := foldRunMinMaxVector(op, a, any(xs).([]float32))
		acc, xs = acc[k:], xs[k:]
	}
	if op == "maximum" {
		for c, v := range xs {
			acc[c] = maxFloat(acc[c], v)
		}
		return
	}
	for c, v := range xs {
		acc[c] = minFloat(acc[c], v)
	}
}
