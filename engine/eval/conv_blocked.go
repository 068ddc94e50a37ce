package eval

// Streaming im2col. convolve's GEMM over the whole [nb*P, W*cg] im2col
// matrix is run instead on blocks of its rows, each built just before it is
// multiplied, on all cores: no full-size im2col matrix, and the gather is
// parallel too. Every element of C is still the same K-ordered sum: the
// packed kernels add each kc-deep slice of the contraction into C in order
// whatever the row count or tile position, and gonum's loops accumulate
// along k into C directly. The one thing that depends on the operands as a
// whole is the choice between them (gonum only for finite operands), so
// with gonum in play the blocks are used only when the whole input is
// finite, which makes every block's choice the whole matrix's.

import (
	"math"
	"sync"
	"sync/atomic"
)

// dynamicFor runs body on up to par goroutines; each takes work items from
// next (a shared counter, so a goroutine on a busy core takes fewer) until
// it returns n or more. A panic in a worker reaches the caller.
func dynamicFor(par, n int, body func(next func() int)) {
	var ctr atomic.Int64
	next := func() int { return int(ctr.Add(1) - 1) }
	par = min(par, n)
	if par <= 1 {
		body(next)
		return
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var perr any
	for i := 0; i < par; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					mu.Lock()
					perr = r
					mu.Unlock()
				}
			}()
			body(next)
		}()
	}
	wg.Wait()
	if perr != nil {
		panic(perr)
	}
}

// convStreaming selects convolveBlocked (tests turn it off to compare).
var convStreaming = true

// convBlockElems is about the size of one im2col block (in elements).
const convBlockElems = 1 << 17

// convolveBlocked is convolve by row blocks; ok is false when it does not
// apply (complex, or gonum with a non-finite input) and convolve must run
// the whole matrix.
func convolveBlocked[T number](par int, p *convPlan, x, k []T) (out []T, ok bool) {
	if !convStreaming {
		return nil, false
	}
	switch xs := any(x).(type) {
	case []complex128:
		return nil, false
	case []float32:
		if floatsOnBLAS && !allFinite(xs) {
			return nil, false
		}
	case []float64:
		if floatsOnBLAS && !allFinite(xs) {
			return nil, false
		}
	}
	if p.groups > 1 && !p.batchGroups && p.cg == 1 && depthwiseIm2col {
		if xs, ok := any(x).([]float32); ok && depthwiseDirect {
			if out, ok := depthwiseDirectF32(par, p, xs, any(k).([]float32)); ok {
				return any(out).([]T), true
			}
		}
		return convolveDepthwise(par, p, x, k), true
	}
	rows, depth := p.nb*p.p, p.w*p.cg
	rb := max(4, convBlockElems/max(depth, 1)/4*4) // a multiple of every kernel's tile height
	if rb < convSlicedRows && !floatsOnBLAS {
		convSlicedRuns.Add(1)
		return convolveSliced(par, p, x, k), true
	}
	if p.live != nil && p.groups == 1 && convDilatedOn && !floatsOnBLAS {
		if out, ok := convolveDilated(par, p, x, k); ok {
			return out, true
		}
	}
	blocks := (rows + rb - 1) / rb
	p.rowRuns()
	out = storageForWriting[T](rows * p.o) // [nb, P, O]; every block sets its rows
	for q := 0; q < p.groups; q++ {
		n0, c0 := p.groupStart(q)
		b := groupKernel(p, k, q)
		dynamicFor(par, blocks, func(next func() int) {
			a := make([]T, rb*depth)
			var c []T
			if p.groups > 1 {
				c = make([]T, rb*p.og)
			}
			for blk := next(); blk < blocks; blk = next() {
				r0, r1 := blk*rb, min((blk+1)*rb, rows)
				for r := r0; r < r1; r++ {
					im2colRow(p, a[(r-r0)*depth:(r-r0+1)*depth], x, n0, c0, r, 0, depth)
				}
				m := r1 - r0
				if p.groups == 1 {
					convGemmOver(p, m, p.og, depth, a[:m*depth], b, out[r0*p.o:r1*p.o])
					continue
				}
				cb := c[:m*p.og]
				convGemmOver(p, m, p.og, depth, a[:m*depth], b, cb)
				for r := r0; r < r1; r++ {
					copy(out[r*p.o+q*p.og:r*p.o+(q+1)*p.og], cb[(r-r0)*p.og:(r-r0+1)*p.og])
				}
			}
		})
	}
	return out, true
}

// eigenConvKC is the depth of the contraction slices XLA:CPU's Eigen
// convolutions (those not given to YNNPACK: 1-D and 3-D ones, 2-D ones
// with at most 16 features) sum an output in, each slice's FMA chain from
// zero and added to the output in order: Eigen's threaded contraction
// blocks k at most 320 deep and then evens the blocks out (k/nk rounded up
// to a multiple of 8, nk = ceil(k/320)). Fitted against jax.jit on 1-D
// convolutions: depth 300 is one slice, 384 two of 192, 500 256+244, 576
// two of 288, 640 two of 320; the kernel's own 256-deep slices had made
// 1-D convolutions of depth 384 (128 features, window 3) differ on 86% of
// the outputs.
func eigenConvKC(depth int) int {
	const maxKC = 320
	if depth <= maxKC {
		return depth
	}
	nk := (depth + maxKC - 1) / maxKC
	return roundUp((depth+nk-1)/nk, 8)
}

// eigenConvOrder turns eigenConvKC's slices on (tests turn it off to compare).
var eigenConvOrder = true

// eigenKernel is the kernel of convolution p's f32 im2col products in
// eigenConvKC's slices, or nil when they keep the kernel's own: other
// types, gonum, and convolutions of a dilated input (convolveDilated's
// slices, which jax.jit matches as they are).
func eigenKernel[T number](p *convPlan, depth int) *gemmKernel[T] {
	if _, f32 := any(*new(T)).(float32); !f32 || !eigenConvOrder || floatsOnBLAS || p.live != nil {
		return nil
	}
	kn := kernelFor[T]()
	if kc := eigenConvKC(depth); kc < depth || depth > kn.kc {
		return kn.withKC(kc)
	}
	return nil // one slice either way
}

// convGemmOver is gemmStridedOver for one row block of convolution p's
// im2col product (m×depth by depth×n, row-major), in eigenKernel's slices.
func convGemmOver[T number](p *convPlan, m, n, depth int, a, b, c []T) {
	if kn := eigenKernel[T](p, depth); kn != nil {
		kn.runOver(1, 1, m, n, depth, a, rowMajor(m, depth), b, rowMajor(depth, n), c)
		return
	}
	gemmStridedOver(1, 1, m, n, depth, a, rowMajor(m, depth), b, rowMajor(depth, n), c)
}

// depthwiseIm2col selects convolveDepthwise, and depthwiseDirect its f32
// lanes-as-channels form (tests turn them off to compare).
var depthwiseIm2col, depthwiseDirect = true, true

// convolveDepthwise is convolveBlocked for one input feature per group (a
// depthwise convolution): instead of gathering each group's window values
// one element at a time, a block's window values are gathered for every
// feature at once (one contiguous run of all c features per window
// position) and dealt out feature by feature into per-group rows, so each
// group's product is the same row-major M×w by w×og GEMM call as
// convolveBlocked's (only M, the block's row count, differs: the kernels'
// arithmetic per element does not depend on it).
func convolveDepthwise[T number](par int, p *convPlan, x, k []T) []T {
	rows, depth := p.nb*p.p, p.w
	wide := depth * p.c // a block row's window values of every feature
	rb := max(4, convBlockElems/max(wide, 1)/4*4)
	blocks := (rows + rb - 1) / rb
	out := make([]T, rows*p.o)
	bs := make([][]T, p.groups)
	for q := range bs {
		bs[q] = make([]T, depth*p.og)
		for r := 0; r < depth; r++ {
			copy(bs[q][r*p.og:(r+1)*p.og], k[r*p.o+q*p.og:])
		}
	}
	dynamicFor(par, blocks, func(next func() int) {
		a := make([]T, rb*wide) // [group][row][window position]
		c := make([]T, rb*p.og)
		for blk := next(); blk < blocks; blk = next() {
			r0, r1 := blk*rb, min((blk+1)*rb, rows)
			m := r1 - r0
			per := m * depth // one group's rows
			for r := r0; r < r1; r++ {
				n, pos := r/p.p, r%p.p
				img := x[n*p.inSpatial*p.c:]
				for w, off := range p.tab[pos*p.w : (pos+1)*p.w] {
					at := (r-r0)*depth + w
					if off < 0 {
						for q := 0; q < p.c; q++ {
							a[q*per+at] = 0
						}
						continue
					}
					for q, v := range img[int(off)*p.c : int(off)*p.c+p.c] {
						a[q*per+at] = v
					}
				}
			}
			for q := 0; q < p.groups; q++ {
				cb := c[:m*p.og]
				clear(cb)
				gemm(1, 1, m, p.og, depth, a[q*per:(q+1)*per], bs[q], cb)
				for r := r0; r < r1; r++ {
					copy(out[r*p.o+q*p.og:r*p.o+(q+1)*p.og], cb[(r-r0)*p.og:(r-r0+1)*p.og])
				}
			}
		}
	})
	return out
}

// groupStart is the first input batch and feature group q reads.
func (p *convPlan) groupStart(q int) (n0, c0 int) {
	if p.batchGroups {
		return q * p.nb, 0
	}
	return 0, q * p.cg
}

// groupKernel is group q's [W*cg, og] slice of the normalised kernel k
// [W, cg, O]: k itself with one group, else a copy.
func groupKernel[T number](p *convPlan, k []T, q int) []T {
	if p.groups == 1 {
		return k[:p.w*p.cg*p.o]
	}
	depth := p.w * p.cg
	b := make([]T, depth*p.og)
	for r := 0; r < depth; r++ {
		copy(b[r*p.og:(r+1)*p.og], k[r*p.o+q*p.og:])
	}
	return b
}

// convRun is a run of one im2col row: the n elements from column d are the
// input's n elements from offset off (within the image), or padding (zeros)
// when off < 0.
type convRun struct {
	d, n int32
	off  int
}

// rowRuns fills p.runs and p.runStart (output position pos's runs are
// runs[runStart[pos]:runStart[pos+1]]) when the groups span every input
// feature: window elements reading consecutive input positions (or all
// padding) are one run. Every image of the batch reads the same runs, so
// im2colRow walks each position's window once per plan, not once per row.
func (p *convPlan) rowRuns() {
	if p.runStart != nil || p.cg != p.c || p.p*p.w == 0 || p.w*p.cg > math.MaxInt32 {
		return
	}
	cg := p.cg
	start := make([]int32, p.p+1)
	// Count first, so the runs (~7 a position for a 7x7 window) are one
	// allocation rather than a slice regrown some 20 times.
	total := 0
	for pos := 0; pos < p.p; pos++ {
		tab := p.tab[pos*p.w : (pos+1)*p.w]
		for w := 0; w < len(tab); w = windowRunEnd(tab, w) {
			total++
		}
		if total > math.MaxInt32 {
			return
		}
		start[pos+1] = int32(total)
	}
	runs := make([]convRun, 0, total)
	for pos := 0; pos < p.p; pos++ {
		tab := p.tab[pos*p.w : (pos+1)*p.w]
		for w := 0; w < len(tab); {
			off, we := tab[w], windowRunEnd(tab, w)
			if off < 0 {
				runs = append(runs, convRun{int32(w * cg), int32((we - w) * cg), -1})
			} else {
				runs = append(runs, convRun{int32(w * cg), int32((we - w) * cg), int(off) * cg})
			}
			w = we
		}
	}
	p.runs, p.runStart = runs, start
}

// windowRunEnd returns the end of the run of window elements that starts at
// w: following elements all in padding with it, or reading the input
// positions after its own.
func windowRunEnd(tab []int64, w int) int {
	off, we := tab[w], w+1
	if off < 0 {
		for we < len(tab) && tab[we] < 0 {
			we++
		}
		return we
	}
	for we < len(tab) && tab[we] == off+int64(we-w) {
		we++
	}
	return we
}

// im2colRow writes columns [d0, d1) of row r of group (n0, c0)'s im2col
// matrix (window element w, input feature f at column w*cg+f) into dst.
// Window elements reading consecutive input positions, with the group
// spanning every input feature, are one contiguous run of the input and are
// copied as one.
func im2colRow[T number](p *convPlan, dst, x []T, n0, c0, r, d0, d1 int) {
	n, pos := r/p.p, r%p.p
	img := x[(n0+n)*p.inSpatial*p.c:]
	tab := p.tab[pos*p.w : (pos+1)*p.w]
	cg := p.cg
	if d0 == 0 && d1 == len(tab)*cg && p.runStart != nil {
		// The whole row over every feature: its runs (rowRuns).
		dst = dst[:d1]
		for _, rn := range p.runs[p.runStart[pos]:p.runStart[pos+1]] {
			seg := dst[rn.d : rn.d+rn.n]
			if rn.off < 0 {
				clear(seg)
			} else {
				copy(seg, img[rn.off:])
			}
		}
		return
	}
	for d := d0; d < d1; {
		w, f := d/cg, d%cg
		off := tab[w]
		// Extend the run over following window elements when it continues
		// in the input (or in padding).
		end := min(d1, (w+1)*cg)
		if cg == p.c {
			for we := w + 1; we < len(tab) && end < d1; we++ {
				next := tab[we]
				if (off < 0) != (next < 0) || (off >= 0 && next != off+int64(we-w)) {
					break
				}
				end = min(d1, (we+1)*cg)
			}
		}
		seg := dst[d-d0 : end-d0]
		if off < 0 {
			clear(seg)
		} else {
			copy(seg, img[int(off)*p.c+c0+f:])
		}
		d = end
	}
}

// convSlicedRows: when fewer im2col rows than this fit a row block, the
// contraction is long (a weight gradient sums over a whole image) and
// convolveSliced runs instead. Not with gonum in play: its choice is made
// per product, and a slice of the kernel may be finite where the whole is
// not.
const convSlicedRows = 64

// convSlicedRuns counts convolveSliced's runs (tests).
var convSlicedRuns atomic.Int64

// convolveSliced is convolveBlocked for long contractions: each goroutine
// takes a chunk of im2col rows (of output elements) and walks the
// contraction in kc-deep slices, building the chunk's rows of each slice
// just before multiplying it with the kernel's matching rows. The chunk's
// outputs stay in cache across the slices, the kernel is read once a chunk
// rather than once every few rows, and no block of the im2col matrix is
// larger than chunk × kc. The GEMM runs one slice at a time at the kernel's
// own kc boundaries, so each output is the whole-matrix product's sum bit
// for bit (per slice the tile's FMA chain from zero, added to C in slice
// order; gonum adds along k into C directly).
func convolveSliced[T number](par int, p *convPlan, x, k []T) []T {
	rows, depth := p.nb*p.p, p.w*p.cg
	kn := kernelFor[T]()
	if ek := eigenKernel[T](p, depth); ek != nil {
		kn = ek
	}
	kc := kn.kc
	// Chunks: a few per goroutine, each at most ~256 KiB of outputs, in
	// whole 12-row tiles.
	chunk := roundUp(max(1, rows/(4*max(par, 1))), 12)
	chunk = min(chunk, max(48, (64<<10)/max(p.og, 1)/12*12))
	chunks := (rows + chunk - 1) / chunk
	out := storageForWriting[T](rows * p.o) // [nb, P, O]; every chunk sets its rows
	for q := 0; q < p.groups; q++ {
		n0, c0 := p.groupStart(q)
		b := groupKernel(p, k, q)
		dynamicFor(par, chunks, func(next func() int) {
			a := make([]T, chunk*kc)
			c := make([]T, chunk*p.og)
			for ch := next(); ch < chunks; ch = next() {
				r0, r1 := ch*chunk, min((ch+1)*chunk, rows)
				m := r1 - r0
				cb := c[:m*p.og]
				for pc := 0; pc < depth; pc += kc {
					kcs := min(kc, depth-pc)
					for r := r0; r < r1; r++ {
						im2colRow(p, a[(r-r0)*kcs:(r-r0+1)*kcs], x, n0, c0, r, pc, pc+kcs)
					}
					av, bv := a[:m*kcs], b[pc*p.og:(pc+kcs)*p.og]
					switch {
					case kn.kc != kernelFor[T]().kc && pc == 0:
						kn.runOver(1, 1, m, p.og, kcs, av, rowMajor(m, kcs), bv, rowMajor(kcs, p.og), cb)
					case kn.kc != kernelFor[T]().kc:
						kn.run(1, 1, m, p.og, kcs, av, rowMajor(m, kcs), bv, rowMajor(kcs, p.og), cb)
					case pc == 0: // the first slice sets cb, the others add to it
						gemmStridedOver(1, 1, m, p.og, kcs, av, rowMajor(m, kcs), bv, rowMajor(kcs, p.og), cb)
					default:
						gemm(1, 1, m, p.og, kcs, av, bv, cb)
					}
				}
				for r := r0; r < r1; r++ {
					copy(out[r*p.o+q*p.og:r*p.o+(q+1)*p.og], cb[(r-r0)*p.og:(r-r0+1)*p.og])
				}
			}
		})
	}
	return out
}
