package eval

import (
	"fmt"

	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func init() { Register("convolution", flushingArithmetic(evalConvolution, flushAlways)) }

// convPlan is a convolution normalised to input [N, S..., C], kernel
// [W..., Cg, O] and output [Nout, P..., O] (row-major), split into groups:
// group q reads input batches [q*nb, q*nb+nb) (batch groups) or features
// [q*cg, q*cg+cg) (feature groups) and writes output features [q*og, q*og+og).
type convPlan struct {
	n, c, o     int // input batch, input features, output features
	groups      int
	batchGroups bool
	nb, cg, og  int // per-group batch, input features, output features
	inSpatial   int // product of input spatial dims
	p, w        int // output positions, window positions
	tab         []int64
	// live[pos*w + win] is false where output position pos's window element
	// win falls in a hole of a dilated input (lhs_dilate > 1), whatever the
	// padding; nil without input dilation.
	live []bool
	// runs and runStart, when set (rowRuns), list each output position's
	// im2col row as runs of the input.
	runs     []convRun
	runStart []int32
	lhsPerm  []int
	rhsPerm  []int
	outDims  []int64 // normalised output dims
	outPerm  []int   // result dim i is normalised dim outPerm[i]
}

func planConv(in *hlo.Instruction, lhs, rhs []int64) (*convPlan, error) {
	d := in.ConvDims
	if d == nil {
		return nil, fmt.Errorf("convolution has no dim_labels")
	}
	ns := len(d.InputSpatial)
	if len(d.KernelSpatial) != ns || len(d.OutputSpatial) != ns || len(in.Window) != ns {
		return nil, fmt.Errorf("convolution has %d input spatial dims, %d kernel, %d output and %d window dims",
			ns, len(d.KernelSpatial), len(d.OutputSpatial), len(in.Window))
	}
	if len(lhs) != ns+2 || len(rhs) != ns+2 || len(in.Shape.Dims) != ns+2 {
		return nil, fmt.Errorf("convolution operands and result must have rank %d", ns+2)
	}
	for _, list := range [][]int64{append([]int64{d.InputBatch, d.InputFeature}, d.InputSpatial...),
		append([]int64{d.KernelInputFeature, d.KernelOutputFeature}, d.KernelSpatial...),
		append([]int64{d.OutputBatch, d.OutputFeature}, d.OutputSpatial...)} {
		if err := checkDimList(list, ns+2, "convolution", "dim_labels"); err != nil {
			return nil, err
		}
	}
	out := in.Shape.Dims
	p := &convPlan{n: int(lhs[d.InputBatch]), c: int(lhs[d.InputFeature]), o: int(rhs[d.KernelOutputFeature]), p: 1, w: 1, inSpatial: 1}
	fg, bg := max(in.FeatureGroupCount, 1), max(in.BatchGroupCount, 1)
	switch {
	case fg > 1 && bg > 1:
		return nil, fmt.Errorf("convolution has both feature_group_count %d and batch_group_count %d", fg, bg)
	case bg > 1:
		p.groups, p.batchGroups = int(bg), true
		if p.n%p.groups != 0 {
			return nil, fmt.Errorf("convolution batch %d not divisible by batch_group_count %d", p.n, bg)
		}
		p.nb, p.cg = p.n/p.groups, p.c
	default:
		p.groups = int(fg)
		if p.c%p.groups != 0 {
			return nil, fmt.Errorf("convolution input features %d not divisible by feature_group_count %d", p.c, fg)
		}
		p.nb, p.cg = p.n, p.c/p.groups
	}
	if p.o%p.groups != 0 {
		return nil, fmt.Errorf("convolution output features %d not divisible by group count %d", p.o, p.groups)
	}
	p.og = p.o / p.groups
	if int(rhs[d.KernelInputFeature]) != p.cg {
		return nil, fmt.Errorf("convolution kernel input features %d, want %d", rhs[d.KernelInputFeature], p.cg)
	}
	if int(out[d.OutputBatch]) != p.nb || int(out[d.OutputFeature]) != p.o {
		return nil, fmt.Errorf("convolution result batch/feature %d/%d, want %d/%d", out[d.OutputBatch], out[d.OutputFeature], p.nb, p.o)
	}
	inS, winS, outS := make([]int64, ns), make([]int64, ns), make([]int64, ns)
	for i := 0; i < ns; i++ {
		inS[i], winS[i], outS[i] = lhs[d.InputSpatial[i]], rhs[d.KernelSpatial[i]], out[d.OutputSpatial[i]]
		if in.Window[i].Size != winS[i] {
			return nil, fmt.Errorf("convolution window size %d != kernel spatial size %d in dim %d", in.Window[i].Size, winS[i], i)
		}
		if in.Window[i].Stride < 1 || in.Window[i].BaseDilation < 0 || in.Window[i].WindowDilation < 0 {
			return nil, fmt.Errorf("convolution window dim %d has invalid stride or dilation", i)
		}
		p.inSpatial *= int(inS[i])
		p.w *= int(winS[i])
		p.p *= int(outS[i])
	}
	// tab[pos*w + win] is the input spatial offset read by output position pos
	// through window element win, or -1 for padding and dilation holes.
	p.tab = make([]int64, p.p*p.w)
	for _, wd := range in.Window {
		if wd.BaseDilation > 1 {
			p.live = make([]bool, p.p*p.w)
		}
	}
	p.fillTab(in.Window, inS, winS, outS)
	p.lhsPerm = concatInts([]int64{d.InputBatch}, d.InputSpatial, []int64{d.InputFeature})
	p.lhsPerm = concatInts([]int64{d.InputBatch}, d.InputSpatial, []int64{d.InputFeature})
	p.rhsPerm = concatInts(d.KernelSpatial, []int64{d.KernelInputFeature, d.KernelOutputFeature})
	p.outDims = append(append([]int64{int64(p.nb)}, outS...), int64(p.o))
	p.outPerm = make([]int, ns+2)
	p.outPerm[d.OutputBatch] = 0
	p.outPerm[d.OutputFeature] = ns + 1
	for i, od := range d.OutputSpatial {
		p.outPerm[od] = 1 + i
	}
	return p, nil
}

// fillTab fills p.tab (and p.live) dimension by dimension: an element's
// offset is the sum over the spatial dims of that dim's input position times
// its stride, -1 when any dim's position is padding or a hole, and it is
// live when no dim's position falls between dilated elements. Each dim's
// part is tabulated once per (output position, window element) of that dim,
// and a table row, one output position's window, is their outer sum.
func (p *convPlan) fillTab(window []hlo.WindowDim, inS, winS, outS []int64) {
	if p.p == 0 || p.w == 0 {
		return
	}
	ns := len(inS)
	inStr := tensor.Strides(inS)
	type dimPart struct {
		off  []int64 // [o*win + k]: offset in the input, -1 outside it
		live []bool  // [o*win + k]: not between dilated elements
	}
	parts := make([]dimPart, ns)
	for s := 0; s < ns; s++ {
		wd := window[s]
		ld, rd := max(wd.BaseDilation, 1), max(wd.WindowDilation, 1)
		n, w := outS[s], winS[s]
		dp := dimPart{off: make([]int64, n*w), live: make([]bool, n*w)}
		for o := int64(0); o < n; o++ {
			for k0 := int64(0); k0 < w; k0++ {
				k := k0
				if wd.WindowReversal {
					k = w - 1 - k
				}
				pos := o*wd.Stride - wd.PadLow + k*rd
				dp.live[o*w+k0] = pos%ld == 0
				if pos < 0 || pos%ld != 0 || pos/ld >= inS[s] {
					dp.off[o*w+k0] = -1
				} else {
					dp.off[o*w+k0] = pos / ld * inStr[s]
				}
			}
		}
		parts[s] = dp
	}
	outStr := tensor.Strides(outS)
	parallelForWork(p.p, p.p*p.w, func(lo, hi int) {
		for pi := lo; pi < hi; pi++ {
			row := p.tab[pi*p.w : (pi+1)*p.w]
			var live []bool
			if p.live != nil {
				live = p.live[pi*p.w : (pi+1)*p.w]
			}
			// Expand dim by dim: after dim s, row[:cnt] holds the offsets of
			// the window elements over dims 0..s, in row-major order.
			row[0] = 0
			if live != nil {
				live[0] = true
			}
			cnt := 1
			for s := 0; s < ns; s++ {
				w := int(winS[s])
				o := (int64(pi) / outStr[s]) % outS[s]
				off := parts[s].off[int(o)*w : int(o+1)*w]
				lv := parts[s].live[int(o)*w : int(o+1)*w]
				// Backwards, so that row[i] is read before row[i*w..] overwrites it.
				for i := cnt - 1; i >= 0; i-- {
					base := row[i]
					dst := row[i*w : (i+1)*w]
					for k, v := range off {
						if base < 0 || v < 0 {
							dst[k] = -1
						} else {
							dst[k] = base + v
						}
					}
					if live != nil {
						l := live[i]
						ld := live[i*w : (i+1)*w]
						for k, v := range lv {
							ld[k] = l && v
						}
					}
				}
				cnt *= w
			}
		}
	})
}

func evalConvolution(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if len(args) != 2 || args[0].T == nil || args[1].T == nil {
		return Value{}, fmt.Errorf("convolution takes two array operands")
	}
	lhs, rhs := args[0].T, args[1].T
	p, err := planConv(in, lhs.Dims, rhs.Dims)
	if err != nil {
		return Value{}, err
	}
	par := ev.parallelism()
	out := in.Shape
	ynn := convYnnRoute(in, p, lhs.Dims, rhs.Dims, lhs.Type, rhs.Type, out.Elem) // XLA's YNNPACK order (conv_ynn.go)
	c := contractAs(contractionClass(out.Elem, lhs.Type, rhs.Type), lhs, rhs, out.Elem, out.Dims, kernels{
		f32: func(a, b []float32) []float32 {
			if ynn != nil {
				if out, ok := convYnnSegmented(par, p, ynn, in, lhs.Dims, rhs.Dims, a, b); ok {
					return out
				}
				return convolveYnnF32(par, p, ynn, lhs.Dims, rhs.Dims, a, b)
			}
			return convolve(par, p, lhs.Dims, rhs.Dims, a, b)
		},
		f64:  func(a, b []float64) []float64 { return convolve(par, p, lhs.Dims, rhs.Dims, a, b) },
		c128: func(a, b []complex128) []complex128 { return convolve(par, p, lhs.Dims, rhs.Dims, a, b) },
		i64:  func(a, b []int64) []int64 { return convolve(par, p, lhs.Dims, rhs.Dims, a, b) },
		// Each output sums at most one kernel window over its group's input features.
		depth: rhs.NumElements() / max(rhs.Dims[in.ConvDims.KernelOutputFeature], 1),
	})
	return ArrayValue(c), nil
}

// convolve runs each group as one GEMM over an im2col matrix:
// [nb*P, W*cg] x [W*cg, og].
func convolve[T number](par int, p *convPlan, ldims, rdims []int64, lhs, rhs []T) []T {
	x, releaseX := permuteScratch(par, lhs, ldims, p.lhsPerm) // [N, S, C]
	k, releaseK := permuteScratch(par, rhs, rdims, p.rhsPerm) // [W, cg, O]
	if out, ok := convolveBlocked(par, p, x, k); ok {
		releaseX()
		releaseK()
		return permuteToPar(par, out, p.outDims, p.outPerm)
	}
	out := make([]T, p.nb*p.p*p.o) // [nb, P, O]
	rows, depth := p.nb*p.p, p.w*p.cg
	a := make([]T, rows*depth)
	b := make([]T, depth*p.og)
	c := make([]T, rows*p.og)
	for q := 0; q < p.groups; q++ {
		n0, c0 := 0, q*p.cg
		if p.batchGroups {
			n0, c0 = q*p.nb, 0
		}
		for n := 0; n < p.nb; n++ {
			img := x[(n0+n)*p.inSpatial*p.c:]
			for pos := 0; pos < p.p; pos++ {
				row := a[(n*p.p+pos)*depth : (n*p.p+pos+1)*depth]
				for w, off := range p.tab[pos*p.w : (pos+1)*p.w] {
					dst := row[w*p.cg : (w+1)*p.cg]
					if off < 0 {
						clear(dst)
						continue
					}
					copy(dst, img[int(off)*p.c+c0:])
				}
			}
		}
		for r := 0; r < depth; r++ {
			copy(b[r*p.og:(r+1)*p.og], k[r*p.o+q*p.og:])
		}
		clear(c)
		if kn := eigenKernel[T](p, depth); kn != nil {
			kn.run(par, 1, rows, p.og, depth, a, rowMajor(rows, depth), b, rowMajor(depth, p.og), c)
		} else {
			gemm(par, 1, rows, p.og, depth, a, b, c)
		}
		for r := 0; r < rows; r++ {
			copy(out[r*p.o+q*p.og:r*p.o+(q+1)*p.og], c[r*p.og:(r+1)*p.og])
		}
	}
	return permuteTo(out, p.outDims, p.outPerm)
}
