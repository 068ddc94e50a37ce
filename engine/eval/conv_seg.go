package eval

import (
	"os"

	"goldtrace/engine/hlo"
)

// convSegDisabled sends convolutions past convYnnSegmented (tests;
// GOLDTRACE_CONV_SEG=0 to compare).
var convSegDisabled = os.Getenv("GOLDTRACE_CONV_SEG") == "0"

// convYnnSegmented computes a 2-D f32 convolution on YNNPACK's order without
// an im2col matrix, when that order is one FMA chain per output element over
// the whole window in im2col order (kh, kw, input feature), from +0, plus
// +0: every run of the plan is a single block of all the input features,
// one lane, no tail, and no deeper than the whole-product kernel takes
// (convYnnLayout.sliceKC), so convolveYnnF32 clears C and runs the GEMM
// kernel with kc = the window's depth over rows built by im2colRow.
//
// Here the kernel reads A where it lies: with [N, H, W, C] input and
// [KH, KW, C, O] kernel, window row kh of output position (oh, ow) is the
// KW*C consecutive elements of input row oh*sh - padlo + kh*dh from column
// ow*sw - padlo on (no W dilation), so a tile's A is KH runs per row, rows
// sw*C apart, runs one input row apart. Each output row's KH input rows
// are copied, padded with zeros as im2colRow pads, into a strip, and a
// segmented form of the GEMM's storing kernel (convSegAVX2F32S or
// convSegAVX512F32S: the same instructions as gemmAVX2F32AS or
// gemmAVX512F32AS, the A pointers moving on to the next run every KW*C
// steps) computes the tiles of C (6×16 or 12×32) as their chains plus +0,
// so C is neither cleared nor read. Same FMAs in the same order on the
// same values: the bits are convolveYnnF32's (TestConvSegMatchesYnn).
//
// It reports false, having done nothing, for other convolutions and in the
// portable build.
func convYnnSegmented(par int, p *convPlan, y *convYnn, in *hlo.Instruction, ldims, rdims []int64, lhs, rhs []float32) ([]float32, bool) {
	kern := convSegKernel()
	if kern == nil || convSegDisabled || len(in.Window) != 2 || len(ldims) != 4 || len(rdims) != 4 ||
		p.groups != 1 || p.batchGroups || p.live != nil || (p.cg == 1 && p.og == 1) ||
		!permuteIsIdentity(ldims, p.lhsPerm) || !permuteIsIdentity(rdims, p.rhsPerm) {
		return nil, false
	}
	for _, wd := range in.Window {
		if wd.WindowReversal || wd.BaseDilation > 1 || wd.PadLow < 0 || wd.PadHigh < 0 || wd.Stride < 1 {
			return nil, false
		}
	}
	if in.Window[1].WindowDilation > 1 {
		return nil, false
	}
	for _, r := range y.runs(p.og) {
		if lay := newConvYnnLayout(p.w, p.cg, r.tk, r.kstep); !lay.identity || lay.sliceKC(r) == nil {
			return nil, false
		}
	}
	n, h, w, c := int(ldims[p.lhsPerm[0]]), int(ldims[p.lhsPerm[1]]), int(ldims[p.lhsPerm[2]]), p.c
	kh, kw, o := int(rdims[p.rhsPerm[0]]), int(rdims[p.rhsPerm[1]]), p.o
	oh, ow := int(p.outDims[1]), int(p.outDims[2])
	wh, ww := in.Window[0], in.Window[1]
	sh, sw, dh := int(wh.Stride), int(ww.Stride), int(max(wh.WindowDilation, 1))
	plh, plw := int(wh.PadLow), int(ww.PadLow)
	wp := w + plw + int(ww.PadHigh) // a padded input row, in pixels
	depth, seg := kh*kw*c, kw*c
	mr, nr := kern.mr, kern.nr
	if depth != p.w*p.cg || n != p.nb || ow < mr || oh < 1 || o < 1 || (ow-1)*sw+kw > wp {
		return nil, false
	}
	// B in nr-column panels of all depth rows (panel j at bp[j*depth:]),
	// columns past o zero.
	npad := roundUp(o, nr)
	bp := make([]float32, depth*npad)
	for j := 0; j < npad; j += nr {
		pan := bp[j*depth : (j+nr)*depth]
		for k := 0; k < depth; k++ {
			copy(pan[k*nr:k*nr+min(nr, o-j)], rhs[k*o+j:])
		}
	}
	out := storageForWriting[float32](n * oh * ow * o)
	rowLen := wp * c
	dynamicFor(par, n*oh, func(next func() int) {
		strip := make([]float32, kh*rowLen)
		tile := make([]float32, mr*nr)
		for item := next(); item < n*oh; item = next() {
			img, y := item/oh, item%oh
			// The window rows of output row y, padded.
			for r := 0; r < kh; r++ {
				dst := strip[r*rowLen : (r+1)*rowLen]
				ih := y*sh - plh + r*dh
				if ih < 0 || ih >= h {
					clear(dst)
					continue
				}
				clear(dst[:plw*c])
				copy(dst[plw*c:(plw+w)*c], lhs[(img*h+ih)*w*c:])
				clear(dst[(plw+w)*c:])
			}
			orow := out[item*ow*o : (item+1)*ow*o]
			for j := 0; j < o; j += nr {
				pan := bp[j*depth : (j+nr)*depth]
				cols := min(nr, o-j)
				for x := 0; x < ow; x += mr {
					x0 := min(x, ow-mr) // the last tile overlaps the one before
					a := strip[x0*sw*c:]
					if cols == nr && x0 == x {
						kern.tile(seg, kh, a, sw*c, rowLen, pan, orow[x*o+j:], o)
						continue
					}
					kern.tile(seg, kh, a, sw*c, rowLen, pan, tile, nr)
					for i := x - x0; i < mr; i++ {
						copy(orow[(x0+i)*o+j:(x0+i)*o+j+cols], tile[i*nr:])
					}
				}
			}
		}
	})
	return permuteToPar(par, out, p.outDims, p.outPerm), true
}
