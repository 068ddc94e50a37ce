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

import (
	"os"

	"goldtrace/engine/tensor"
)

// windowFastDisabled turns the prefix-scan path of reduce-window off
// (GOLDTRACE_NO_PREFIX_SCAN=1), to compare.
var windowFastDisabled = os.Getenv("GOLDTRACE_NO_PREFIX_SCAN") == "1"

// windowOrderDisabled folds every window in row-major order
// (GOLDTRACE_ROW_MAJOR_WINDOWS=1) instead of XLA:CPU's
// (reduce_window_xla_order.go), to compare.
var windowOrderDisabled = os.Getenv("GOLDTRACE_ROW_MAJOR_WINDOWS") == "1"

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
	return g.walkBox(o, q, buf[:0], sc, nil)
}

// walkBox is walk appending to buf, over window offsets [b.lo[d], b.hi[d]]
// in each dimension d (all of them for a nil b).
func (g *windowGeom) walkBox(o int64, q int, buf []int64, sc *windowScratch, b *windowBox) []int64 {
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
		lo, hi := int64(0), g.size[d]-1
		if b != nil {
			lo, hi = b.lo[d], b.hi[d]
		}
		for wi := lo; wi <= hi; wi++ {
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
	if d, ok := g.prefixScan(); ok && !windowFastDisabled {
		reduceWindowPrefix(op, i0, xs, g, d, o)
		return
	}
	if g.lastDimWindow() && !windowFastDisabled {
		reduceWindowLine(op, i0, xs, g, o)
		return
	}
	_, f32 := any(i0).(float32)
	if boxes := g.xlaBoxes(op, f32); boxes != nil {
		reduceWindowBoxes(i0, xs, g, q, run, boxes, o)
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

// prefixScan reports the one dimension d along which g is a running
// (prefix) window, the form cumsum, cumprod, cummax and cummin lower to:
// every other dimension's window is trivial, and in d the window has stride 1,
// no dilation and at least out[d]-1 low padding, so every window starts at or
// before input 0 and result i folds input elements 0..e(i) with
// e(i) = i - padLow + size - 1 (clipped to the input), e non-decreasing.
func (g *windowGeom) prefixScan() (d int, ok bool) {
	d = -1
	for i, w := range g.win {
		if w.Size == 1 && w.Stride == 1 && w.PadLow == 0 && w.PadHigh == 0 && w.BaseDilation == 1 && w.WindowDilation == 1 {
			continue
		}
		if d >= 0 {
			return 0, false
		}
		d = i
	}
	if d < 0 {
		return 0, false
	}
	w := g.win[d]
	if w.Stride != 1 || w.BaseDilation != 1 || w.WindowDilation != 1 || w.WindowReversal || w.PadLow < g.out[d]-1 || g.out[d] < 2 {
		return 0, false
	}
	return d, true
}

// prefixRows lays out a prefixScan geometry along dimension d: outer rows
// of n inputs giving m results each, their elements inner apart, and
// last(i), the last input result i's window reaches.
func (g *windowGeom) prefixRows(d int) (outer, inner, n, m int64, last func(int64) int64) {
	outer, inner = 1, 1
	for i := 0; i < d; i++ {
		outer *= g.in[i]
	}
	for i := d + 1; i < len(g.in); i++ {
		inner *= g.in[i]
	}
	n, m, w := g.in[d], g.out[d], g.win[d]
	return outer, inner, n, m, func(i int64) int64 { return min(i-w.PadLow+w.Size-1, n-1) }
}

// reduceWindowPrefix is reduceWindowFloat for a prefix-scan geometry (see
// prefixScan): result i of a row is result i-1's fold continued over the
// input elements e(i-1)+1..e(i), which is the per-window fold of 0..e(i)
// from the init value, element for element and in the same order, without
// refolding the shared prefix.
func reduceWindowPrefix[F float](op string, i0 F, xs []F, g *windowGeom, d int, o []F) {
	outer, inner, n, m, last := g.prefixRows(d)
	if outer == 0 || inner == 0 {
		return
	}
	if inner == 1 {
		code := fastOpCode(op)
		parallelForWork(int(outer), int(outer*n), func(lo, hi int) {
			for r := int64(lo); r < int64(hi); r++ {
				x, y := xs[r*n:(r+1)*n], o[r*m:(r+1)*m]
				acc, j := i0, int64(-1)
				for i := range m {
					for e := last(i); j < e; {
						j++
						acc = foldOne(code, acc, x[j])
					}
					y[i] = acc
				}
			}
		})
		return
	}
	// Rows of the scan are runs of inner elements, split into chunks so two
	// cores share even a single outer row.
	const chunk = 2048
	chunks := (inner + chunk - 1) / chunk
	parallelForWork(int(outer*chunks), int(outer*n*inner), func(lo, hi int) {
		for t := int64(lo); t < int64(hi); t++ {
			r, c0 := t/chunks, (t%chunks)*chunk
			c1 := min(c0+chunk, inner)
			j := int64(-1)
			var prev []F
			for i := range m {
				y := o[(r*m+i)*inner+c0 : (r*m+i)*inner+c1]
				if prev == nil {
					for c := range y {
						y[c] = i0
					}
				} else {
					copy(y, prev)
				}
				for e := last(i); j < e; {
					j++
					foldRun(op, y, xs[(r*n+j)*inner+c0:(r*n+j)*inner+c1])
				}
				prev = y
			}
		}
	})
}

// fastOpCode numbers the fast reducer ops for foldOne.
func fastOpCode(op string) int {
	switch op {
	case "add":
		return 0
	case "multiply":
		return 1
	case "maximum":
		return 2
	}
	return 3 // minimum
}

// foldOne is foldFloatAt's step for one element.
func foldOne[F float](code int, acc, v F) F {
	switch code {
	case 0:
		return acc + v
	case 1:
		return acc * v
	case 2:
		return maxFloat(acc, v)
	}
	return minFloat(acc, v)
}

// lastDimWindow reports whether g's only non-trivial window dimension is
// the last one, with stride 1 and no dilation or reversal: each result folds
// one contiguous stretch of its row (the reverse scans of 16 that XLA's
// cumulative-scan tree makes, see engine/golden/xla_rewrites.go).
func (g *windowGeom) lastDimWindow() bool {
	r := len(g.win)
	if r == 0 {
		return false
	}
	for _, w := range g.win[:r-1] {
		if !(w.Size == 1 && w.Stride == 1 && w.PadLow == 0 && w.PadHigh == 0 && w.BaseDilation == 1 && w.WindowDilation == 1) {
			return false
		}
	}
	w := g.win[r-1]
	return w.Stride == 1 && w.BaseDilation == 1 && w.WindowDilation == 1 && !w.WindowReversal
}

// reduceWindowLine is reduceWindowFloat for a lastDimWindow geometry: result
// i of a row folds the row's elements i-padLow .. i-padLow+size-1 (clipped
// to the row) from the init value in increasing order, as the per-window
// walk does, padding skipped.
func reduceWindowLine[F float](op string, i0 F, xs []F, g *windowGeom, o []F) {
	r := len(g.in) - 1
	n, m, w := g.in[r], g.out[r], g.win[r]
	rows := tensor.NumElements(g.out) / max(m, 1)
	if rows == 0 || m == 0 {
		return
	}
	code := fastOpCode(op)
	parallelForWork(int(rows), int(rows*m*w.Size), func(lo, hi int) {
		for k := int64(lo); k < int64(hi); k++ {
			x, y := xs[k*n:(k+1)*n], o[k*m:(k+1)*m]
			for i := range m {
				a, b := max(i-w.PadLow, 0), min(i-w.PadLow+w.Size, n)
				acc := i0
				for j := a; j < b; j++ {
					acc = foldOne(code, acc, x[j])
				}
				y[i] = acc
			}
		}
	})
}
