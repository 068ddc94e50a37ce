package eval

// YNNPACK's f32 summation order, as XLA:CPU (jaxlib 0.10.2) runs it for the
// add-reductions it hands to YNNPACK (a __ynn_fusion: f32 operands of 4096
// or more elements, any reduced dimensions). Read from the machine code of
// ynn::sum_k1_fp32_avx512 / sum_k1_fp32_avx (rows) and sum_kn_fp32_avx512
// (columns) in libjax_common.so and fitted bit for bit against jax.jit
// (engine/eval/testdata/gen_ynn_order.py, tests/test_ynn_reduce_order.py).
// The AVX kernel (the one an AVX2-only host runs) keeps the same 16 logical
// lanes as two 8-lane halves and the same final tree, so the order does not
// depend on the host's vector width; the portable build computes it the
// same way.
//
// Rows (the reduced elements contiguous, k of them): 16 lane accumulators,
// element i going to lane i%16. Every 64 elements form a partial
// (((0+v0)+v1)+v2)+v3 of four 16-lane vectors; while 256 or more elements
// are left, four partials p0..p3 are added as ((p0+p1)+p2)+p3 into acc0,
// then single partials while 64 or more are left, then one zero-padded
// partial of the rest. Each time 1024 elements have been consumed, acc0
// goes into acc1 by Kahan summation (the error term dropped where it is not
// finite) and restarts from zero. At the end t = acc1 + (acc0 - err), plus
// zero, is reduced by halving (lane i + lane i+8, then +4, +2, +1) and added
// to the output, which starts as the init value.
//
// Rows of more than 32768 elements beside fewer than 2·threads others are
// cut into chunks of 32768, each summed into a partial of its own, and the
// row kernel sums the partials (for up to four: (p0+p2)+(p1+p3)); beside
// more rows each is one kernel call (reduce_ynn_general.go: YNNPACK's
// schedule, which follows XLA's thread count).
//
// Columns (a block of reduced dimensions with n contiguous kept elements
// after it, k reduced rows): each column on its own, in kernel calls
// reduce_ynn_general.go lays out (YNNPACK's split factors, partial sums
// and their second reduce). Within a call of k rows: k < 4 adds
// ((r0+0)+r1)+r2 (missing rows zero); k == 4 adds (((0+r0)+r1)+r2)+r3;
// otherwise groups of four rows
// (((0+r0)+r1)+r2)+r3 go into acc0, acc0 into acc1 every 16 rows, acc1 into
// acc2 by Kahan summation every 256 rows, a last group of 1-3 rows as
// ((r0+0)+r1)+r2, then acc1 += acc0, Kahan into acc2, and the output adds
// acc2.
//
// f32 sums over any reduced dimensions take those calls
// (reduce_ynn_general.go). f64 sums (jax_enable_x64) take the same
// schedule with f64's tile (16384 elements) and kernels: sum_k1_fp64 is 8
// lanes (ynnRowKernel64), sum_kn_fp64 is sum_kn_fp32's column order on
// 8-lane vectors (read from its machine code; ynnColKernelT serves both),
// fitted bit for bit on ~150 random shapes (tests/test_ynn_f64.py). Not
// covered (the reduce keeps the evaluator's own order): rows of bf16
// converted to f32 inside the fusion longer than
// 32768 (shorter ones run sum_k1_bf16_fp32's order: 32-element vectors give
// lane l elements 2l+1 then 2l, partials of 128, blocks of 512, Kahan every
// 2048) and bf16 columns. The elementwise
// ops XLA fuses into the YNNPACK reduce take YNNPACK's own numerics
// (ynn_math.go, ynn_fusion.go); the golden driver's prediction of the fusion
// also tells a bf16 widening inside it apart (YNNSumAttr).

import (
	"math"
	"os"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// ynnOrderDisabled keeps the old left-to-right fold for YNNPACK-sized sums
// (GOLDTRACE_NO_YNN_ORDER=1), to compare.
var ynnOrderDisabled = os.Getenv("GOLDTRACE_NO_YNN_ORDER") == "1"

const (
	ynnLanes     = 16
	ynnChunk     = 32768 // elements per kernel call
	ynnKahanRows = 1024  // row elements between Kahan steps
)

// ynnKind is which YNNPACK sum kernel XLA:CPU runs for a reduce.
type ynnKind uint8

const (
	ynnNone ynnKind = iota // not a YNNPACK sum we reproduce
	ynnF32                 // sum_k1_fp32 / sum_kn_fp32
	ynnBF16                // sum_k1_bf16_fp32 / sum_kn_bf16_fp32: bf16 widened in the fusion
	ynnF64                 // sum_k1_fp64 (rows only)
)

// ynnChunk64 is the f64 row kernel's chunk (128 KiB, as ynnChunk's f32).
const ynnChunk64 = 16384

// ynnSumOrder reports which YNNPACK order f32 add-reduction r takes in
// XLA:CPU, ynnNone when it is not one we reproduce (see the file comment).
// uses counts an instruction's uses in its computation (only asked of a
// widening of bf16 and of its operand).
func ynnSumOrder(r *hlo.Instruction, uses func(*hlo.Instruction) int) ynnKind {
	if ynnOrderDisabled || r == nil || r.Opcode != "reduce" || len(r.Operands) != 2 || len(r.Dimensions) == 0 {
		return ynnNone
	}
	x := r.Operands[0]
	if !x.Shape.IsArray() || !r.Shape.IsArray() || r.Shape.Elem != x.Shape.Elem || x.Shape.Elem != dtype.F32 && x.Shape.Elem != dtype.F64 {
		return ynnNone
	}
	if fastReducer(r.ToApply()) != "add" || tensor.NumElements(x.Shape.Dims) < ynnMinElements {
		return ynnNone
	}
	reduced := make([]bool, len(x.Shape.Dims))
	for _, d := range r.Dimensions {
		if d < 0 || int(d) >= len(reduced) {
			return ynnNone
		}
		reduced[d] = true
	}
	// f32 and f64 sums of any reduced set take ynnSumGeneralT; the bf16
	// kernels are fitted on rows only.
	_, red, inner, ok := reducedBlock(x.Shape.Dims, reduced)
	if !ok {
		inner, red = 0, 0
	}
	if x.Shape.Elem == dtype.F64 {
		return ynnF64 // any reduced set (ynnSumGeneralT with the f64 kernels)
	}
	hint := r.FrontendAttrs[YNNSumAttr] // the golden driver's fusion prediction (engine/golden/ynn.go)
	if hint == "bf16" && x.Opcode != "convert" {
		// sum(x*x) of bf16 x: sum_squared_k1_bf16_fp32 squares the bf16
		// data in the bf16 kernel's order (rows of one chunk, as below).
		if inner != 1 || red > ynnChunk {
			return ynnNone
		}
		return ynnBF16
	}
	if x.Opcode == "convert" && len(x.Operands) == 1 && x.Operands[0].Shape.Elem == dtype.BF16 {
		if src := x.Operands[0]; hint == "f32" || hint == "" && (uses(x) != 1 || uses(src) != 1 || src.Opcode == "slice" && len(src.Operands) == 1 && !equalDims(src.Shape.Dims, src.Operands[0].Shape.Dims)) {
			// XLA widens in a loop fusion of its own (wrapped_convert,
			// convert_slice_fusion) unless the widening and its bf16
			// operand have no other use and no slice lies between; the
			// YNNPACK fusion then sums f32 (measured: x[:, :n] row sums,
			// a widened x summed twice).
			return ynnF32
		}
		// The widening runs inside the kernel, which feeds a lane its
		// elements in another order. Rows longer than one chunk are not
		// fitted, nor are columns (sum_kn_bf16_fp32 agreed with the f32
		// column order on some inputs of chunked shapes, not all).
		if inner != 1 || red > ynnChunk {
			return ynnNone
		}
		return ynnBF16
	}
	if x.Opcode == "convert" && len(x.Operands) == 1 && x.Operands[0].Shape.Elem != dtype.F32 {
		return ynnNone // other widenings: not fitted
	}
	return ynnF32
}

// YNNSumAttr, a frontend attribute of an f32 add-reduce of a bf16 widening,
// says which YNNPACK kernel sums it: "bf16" when the widening is inside the
// YNNPACK fusion (YNNPACK reads the bf16 data itself), "f32" when XLA
// widens outside it. Without it, the use counts decide.
const YNNSumAttr = "goldtrace.ynn_sum"

// ynnUseCount is in's use count framePlanFor recorded, -1 when none was.
func (ev *Evaluator) ynnUseCount(in *hlo.Instruction) int {
	if v, ok := ev.ynnUses.Load(in); ok {
		return int(v.(int32))
	}
	return -1
}

// reduceAddYNN is the f32 reduce of x over the reduced block in YNNPACK's
// order, or nil when in is not such a reduce.
func reduceAddYNN(ev *Evaluator, in *hlo.Instruction, x, init *tensor.Tensor, reduced []bool, outDims []int64) *tensor.Tensor {
	kind := ynnSumOrder(in, ev.ynnUseCount)
	if kind == ynnF64 && x.Type == dtype.F64 && init.Type == dtype.F64 {
		out := tensor.New(dtype.F64, outDims)
		ynnSumGeneralT(ynnSum64, x.F64(), x.Dims, reduced, init.F64()[0], out.F64(), ev.ynnProducerOf(in))
		return out
	}
	if x.Type != dtype.F32 || init.Type != dtype.F32 || kind == ynnNone || kind == ynnF64 {
		return nil
	}
	xs, i0 := x.F32(), init.F32()[0]
	out := tensor.New(dtype.F32, outDims)
	o := out.F32()
	outer, red, inner, ok := reducedBlock(x.Dims, reduced)
	producer := ev.ynnProducerOf(in)
	if chunked, rows := ynnRowChunking(x.Dims, reduced, ynnChunk, producer); ok && inner == 1 && rows {
		parallelForWork(int(outer), int(outer*red), func(lo, hi int) {
			sseAfterAVX()
			for g := lo; g < hi; g++ {
				o[g] = ynnSumRow(kind, i0, xs[int64(g)*red:int64(g+1)*red], chunked)
			}
		})
		return out
	}
	if kind != ynnF32 {
		return nil
	}
	ynnSumGeneral(xs, x.Dims, reduced, i0, o, producer)
	return out
}

// ynnRowChunking says how YNNPACK sums the rows of a reduce over trailing
// dimensions (reduce_ynn_general.go): ok when each row is the row kernel
// over the whole row (chunked false) or over chunks of ynnChunk summed again
// (chunked true), not ok when the reduced block's split is another (several
// dimensions of more than ynnChunk elements together), or the reduced
// dimensions are not trailing.
func ynnRowChunking(dims []int64, reduced []bool, tile int64, producer bool) (chunked, ok bool) {
	rows, k, nred := int64(1), int64(1), 0
	for d, e := range dims {
		switch {
		case !reduced[d] && nred > 0 && e != 1:
			return false, false
		case !reduced[d]:
			rows *= e
		case e != 1:
			k *= e
			nred++
		}
	}
	if k <= tile {
		return false, true
	}
	return ynnRowsParallel(rows, k, tile, producer), nred == 1
}

// ynnSumRow is init plus the sum of xs in YNNPACK's row order. A row
// longer than ynnChunk is one kernel call, unless chunked
// (ynnRowsParallel: few rows), when each chunk of ynnChunk is summed into a
// partial of its own and the row kernel sums the partials
// (reduce_ynn_general.go).
func ynnSumRow(kind ynnKind, init float32, xs []float32, chunked bool) float32 {
	if kind == ynnBF16 {
		return init + ynnRowKernelBF16(xs) // at most one chunk (ynnSumOrder)
	}
	if len(xs) <= ynnChunk {
		return init + ynnRowKernel(xs)
	}
	p := make([]float32, (len(xs)+ynnChunk-1)/ynnChunk)
	if !chunked {
		// The serial schedule's partials: the whole row in the first.
		p[0] = ynnRowKernel(xs)
		return init + ynnRowKernel(p)
	}
	for j := range p {
		p[j] = ynnRowKernel(xs[j*ynnChunk : min((j+1)*ynnChunk, len(xs))])
	}
	return init + ynnRowKernel(p)
}

// ynnPartial adds the 64 elements of xs (zero-padded) into dst as
// (((0+v0)+v1)+v2)+v3, v being 16-element vectors.
func ynnPartial(xs []float32) (p [ynnLanes]float32) {
	var buf [4 * ynnLanes]float32
	if len(xs) < len(buf) {
		copy(buf[:], xs)
		xs = buf[:]
	}
	xs = xs[:4*ynnLanes]
	for l := range p {
		p[l] = ((((0 + xs[l]) + xs[ynnLanes+l]) + xs[2*ynnLanes+l]) + xs[3*ynnLanes+l])
	}
	return p
}

// ynnBlocks256Go adds nblk blocks of 256 elements of xs into acc: each
// block's four 64-element partials p0..p3 as ((p0+p1)+p2)+p3.
func ynnBlocks256Go(xs []float32, nblk int, acc *[ynnLanes]float32) {
	for i := 0; i < 256*nblk; i += 256 {
		b := ynnPartial(xs[i:])
		for j := 1; j < 4; j++ {
			p := ynnPartial(xs[i+64*j:])
			for l := range b {
				b[l] += p[l]
			}
		}
		for l := range acc {
			acc[l] += b[l]
		}
	}
}

// ynnKahan adds acc0 into acc1 with Kahan's compensation err (zeroed where
// not finite) and clears acc0.
func ynnKahan(acc0, acc1, err *[ynnLanes]float32) {
	for l := range acc0 {
		y := acc0[l] - err[l]
		t := acc1[l] + y
		e := (t - acc1[l]) - y
		if math.IsInf(float64(e), 0) || e != e {
			e = 0
		}
		acc1[l], err[l], acc0[l] = t, e, 0
	}
}

// ynnRowKernel is what one call of YNNPACK's row-sum kernel adds to its
// output for the row xs.
func ynnRowKernel(xs []float32) float32 {
	if len(xs) <= 4*ynnLanes {
		return ynnRowShort(xs)
	}
	var acc0, acc1, err [ynnLanes]float32
	k, i := len(xs), 0
	for k-i >= 256 {
		// Blocks of 256 up to the next Kahan step (or the last whole block).
		nb := min((k-i)/256, (ynnKahanRows-i%ynnKahanRows)/256)
		ynnBlocks256(xs[i:], nb, &acc0)
		if i += 256 * nb; i%ynnKahanRows == 0 {
			ynnKahan(&acc0, &acc1, &err)
		}
	}
	for ; k-i >= 64; i += 64 {
		p := ynnPartial(xs[i:])
		for l := range acc0 {
			acc0[l] += p[l]
		}
		if (i+64)%ynnKahanRows == 0 {
			ynnKahan(&acc0, &acc1, &err)
		}
	}
	if k > i {
		p := ynnPartial(xs[i:])
		for l := range acc0 {
			acc0[l] += p[l]
		}
	}
	return ynnFinish(&acc0, &acc1, &err)
}

// ynnRowShort is ynnRowKernel of at most 64 elements (one zero-padded
// partial, no Kahan step): groupnorm's rows of 4 are called a million times.
// A lane starts as 0 + x, which is never -0, so the kernel's additions of
// zero padding and of its empty accumulators change nothing and are left out.
func ynnRowShort(xs []float32) float32 {
	var t [ynnLanes]float32
	n := min(len(xs), ynnLanes)
	for l, x := range xs[:n] {
		t[l] = 0 + x
	}
	for i := ynnLanes; i < len(xs); i++ {
		t[i%ynnLanes] += xs[i]
	}
	a0, a1, a2, a3 := t[0]+t[8], t[1]+t[9], t[2]+t[10], t[3]+t[11]
	a4, a5, a6, a7 := t[4]+t[12], t[5]+t[13], t[6]+t[14], t[7]+t[15]
	b0, b1, b2, b3 := a0+a4, a1+a5, a2+a6, a3+a7
	return (b0 + b2) + (b1 + b3)
}

// ynnPartialBF16 is the bf16 kernel's partial of 128 elements (zero-padded):
// each of four 32-element vectors gives lane l its element 2l+1, then 2l
// (the high and the low half of the lane's 32 bits).
func ynnPartialBF16(xs []float32) (p [ynnLanes]float32) {
	var buf [8 * ynnLanes]float32
	if len(xs) < len(buf) {
		copy(buf[:], xs)
		xs = buf[:]
	}
	xs = xs[:8*ynnLanes]
	for l := range p {
		s := xs[2*l+1] + 0
		s += xs[2*l]
		for v := 1; v < 4; v++ {
			s += xs[32*v+2*l+1]
			s += xs[32*v+2*l]
		}
		p[l] = s + 0
	}
	return p
}

// ynnRowKernelBF16 is ynnRowKernel for the bf16 kernel: partials of 128
// elements, blocks of four partials while 512 are left, Kahan steps every
// 2048 elements, the same final tree. xs holds the bf16 values widened.
func ynnRowKernelBF16(xs []float32) float32 {
	var acc0, acc1, err [ynnLanes]float32
	k, i := len(xs), 0
	for ; k-i >= 512; i += 512 {
		b := ynnPartialBF16(xs[i:])
		for j := 1; j < 4; j++ {
			p := ynnPartialBF16(xs[i+128*j:])
			for l := range b {
				b[l] += p[l]
			}
		}
		for l := range acc0 {
			acc0[l] += b[l]
		}
		if (i+512)%(2*ynnKahanRows) == 0 {
			ynnKahan(&acc0, &acc1, &err)
		}
	}
	for ; k-i >= 128; i += 128 {
		p := ynnPartialBF16(xs[i:])
		for l := range acc0 {
			acc0[l] += p[l]
		}
		if (i+128)%(2*ynnKahanRows) == 0 {
			ynnKahan(&acc0, &acc1, &err)
		}
	}
	if k > i {
		p := ynnPartialBF16(xs[i:])
		for l := range acc0 {
			acc0[l] += p[l]
		}
	}
	return ynnFinish(&acc0, &acc1, &err)
}

// ynnFinish is the kernels' end: t = acc1 + (acc0 - err) + 0, reduced by
// halving.
func ynnFinish(acc0, acc1, err *[ynnLanes]float32) float32 {
	var t [ynnLanes]float32
	for l := range t {
		t[l] = (acc1[l] + (acc0[l] - err[l])) + 0
	}
	for h := ynnLanes / 2; h >= 1; h /= 2 {
		for l := 0; l < h; l++ {
			t[l] += t[l+h]
		}
	}
	return t[0]
}

// ynnSumRow64 is init plus the sum of xs in YNNPACK's f64 row order:
// chunks of ynnChunk64, grouped over two partials as ynnSumRow's.
func ynnSumRow64(init float64, xs []float64) float64 {
	if len(xs) <= ynnChunk64 {
		return init + ynnRowKernel64(xs)
	}
	var p [2]float64
	for j, s := 0, 0; s < len(xs); j, s = j+1, s+ynnChunk64 {
		p[j%2] += ynnRowKernel64(xs[s:min(s+ynnChunk64, len(xs))])
	}
	return init + (p[0] + p[1])
}

// ynnRowKernel64 is one call of sum_k1_fp64 (ynn::sum_k1_fp64_avx512 and
// _avx alike): 8 lanes, 32-element partials (((0+v0)+v1)+v2)+v3, blocks of
// four partials ((p0+p1)+p2)+p3 into acc0 while 128 elements are left,
// then single partials paired in a pending vector that goes into acc0
// after every odd-numbered partial (counted from the row's start), the
// zero-padded rest into the pending vector, Kahan steps into acc1 when
// 1024 elements have been consumed, and the halving tree of
// acc1 + (acc0 + pending - err) + 0.
func ynnRowKernel64(xs []float64) float64 {
	const L = 8
	var acc0, acc1, err, pend [L]float64
	kahan := func() {
		for l := range acc0 {
			y := acc0[l] - err[l]
			t := acc1[l] + y
			e := (t - acc1[l]) - y
			if math.IsInf(e, 0) || e != e {
				e = 0
			}
			acc1[l], err[l], acc0[l] = t, e, 0
		}
	}
	partial := func(v []float64) (p [L]float64) {
		var buf [4 * L]float64
		if len(v) < len(buf) {
			copy(buf[:], v)
			v = buf[:]
		}
		v = v[:4*L]
		for l := range p {
			p[l] = (((0 + v[l]) + v[L+l]) + v[2*L+l]) + v[3*L+l]
		}
		return p
	}
	k, i := len(xs), 0
	for k-i >= 128 {
		// Blocks of 128 up to the next Kahan step (or the last whole block).
		nb := min((k-i)/128, (1024-i%1024)/128)
		ynnBlocks128x64(xs[i:], nb, &acc0)
		if i += 128 * nb; i%1024 == 0 {
			kahan()
		}
	}
	for ; k-i >= 32; i += 32 {
		p := partial(xs[i:])
		for l := range pend {
			pend[l] += p[l]
		}
		if (i/32)%2 == 1 {
			for l := range acc0 {
				acc0[l] += pend[l]
				pend[l] = 0
			}
			if (i+32)%1024 == 0 {
				kahan()
			}
		}
	}
	if k > i {
		p := partial(xs[i:])
		for l := range pend {
			pend[l] += p[l]
		}
	}
	var t [L]float64
	for l := range t {
		t[l] = (acc1[l] + ((acc0[l] + pend[l]) - err[l])) + 0
	}
	for h := L / 2; h >= 1; h /= 2 {
		for l := 0; l < h; l++ {
			t[l] += t[l+h]
		}
	}
	return t[0]
}

// ynnBlocks128x64Go adds nblk blocks of 128 elements of xs into acc as
// ynnRowKernel64's first loop does: each block's four 32-element partials
// (((0+v0)+v1)+v2)+v3 added as ((p0+p1)+p2)+p3.
func ynnBlocks128x64Go(xs []float64, nblk int, acc *[8]float64) {
	for i := 0; i < 128*nblk; i += 128 {
		var b [8]float64
		for j := 0; j < 4; j++ {
			v := xs[i+32*j : i+32*j+32]
			for l := range b {
				p := (((0 + v[l]) + v[8+l]) + v[16+l]) + v[24+l]
				if j == 0 {
					b[l] = p
				} else {
					b[l] += p
				}
			}
		}
		for l := range acc {
			acc[l] += b[l]
		}
	}
}

// ynnColScratchT holds one tile's column accumulators.
type ynnColScratchT[T ynnFloat] struct {
	acc0, acc1, acc2, err [1024]T
}

type ynnColScratch = ynnColScratchT[float32]

// ynnSumColumns adds to o[c] (c from c0, len(o) columns) the sum of column
// c0+c of the red×inner block xs in YNNPACK's column order.
func ynnSumColumns(xs []float32, red, inner, c0 int, o []float32, s *ynnColScratch) {
	chunk := ynnChunk / inner
	for r0 := 0; r0 < red; r0 += chunk {
		ynnColKernelT(ynnColGroups, xs, min(chunk, red-r0), inner, r0, c0, o, s)
	}
}

// ynnColKernelT is one call of YNNPACK's column-sum kernel over rows
// r0..r0+k of xs, columns c0..c0+len(o), added into o; grp adds groups of
// four rows (ynnColGroups). sum_kn_fp64 is sum_kn_fp32's order on 8-lane
// vectors (read from its machine code), so one kernel serves both.
func ynnColKernelT[T ynnFloat](grp func(xs []T, inner, ngroups int, acc0, acc1 []T), xs []T, k, inner, r0, c0 int, o []T, s *ynnColScratchT[T]) {
	n := len(o)
	row := func(r int) []T {
		b := (r0+r)*inner + c0
		return xs[b : b+n]
	}
	if k <= 4 {
		var r1, r2 []T
		if k > 1 {
			r1 = row(1)
		}
		if k > 2 {
			r2 = row(2)
		}
		a := row(0)
		for c := range o {
			var g T
			if k == 4 {
				g = (((0 + a[c]) + r1[c]) + r2[c]) + row(3)[c]
			} else {
				g = a[c] + 0
				if r1 != nil {
					g += r1[c]
				}
				if r2 != nil {
					g += r2[c]
				} else {
					g += 0
				}
			}
			o[c] += g
		}
		return
	}
	acc0, acc1, acc2, err := s.acc0[:n], s.acc1[:n], s.acc2[:n], s.err[:n]
	clear(acc0)
	clear(acc1)
	clear(acc2)
	clear(err)
	i := 0
	for k-i >= 4 {
		// Groups of four rows up to the next Kahan step (every 256 rows).
		ng := min((k-i)/4, (256-i%256)/4)
		grp(xs[(r0+i)*inner+c0:], inner, ng, acc0, acc1)
		if i += 4 * ng; i%256 == 0 {
			ynnKahanN(acc1, acc2, err)
		}
	}
	if k > i {
		a := row(i)
		for c := range acc0 {
			g := a[c] + 0
			if i+1 < k {
				g += row(i + 1)[c]
			} else {
				g += 0
			}
			if i+2 < k {
				g += row(i + 2)[c]
			} else {
				g += 0
			}
			acc0[c] += g
		}
	}
	for c := range acc0 {
		acc1[c] += acc0[c]
	}
	ynnKahanN(acc1, acc2, err)
	for c := range o {
		o[c] += acc2[c]
	}
}

// ynnColGroupsGo adds ngroups groups of four rows (stride inner) of xs
// into acc0 as (((0+r0)+r1)+r2)+r3, moving acc0 into acc1 after every
// fourth group. The caller starts it at a multiple of 16 rows.
func ynnColGroupsGo[T ynnFloat](xs []T, inner, ngroups int, acc0, acc1 []T) {
	n := len(acc0)
	acc1 = acc1[:n]
	for g := 0; g < ngroups; g++ {
		b := 4 * g * inner
		a, r1, r2, r3 := xs[b:b+n], xs[b+inner:b+inner+n], xs[b+2*inner:b+2*inner+n], xs[b+3*inner:b+3*inner+n]
		for c := range acc0 {
			acc0[c] += (((0 + a[c]) + r1[c]) + r2[c]) + r3[c]
		}
		if g%4 == 3 {
			for c := range acc0 {
				acc1[c] += acc0[c]
				acc0[c] = 0
			}
		}
	}
}

// ynnKahanN is ynnKahan on slices: acc2 += acc1 compensated, acc1 cleared.
func ynnKahanN[T ynnFloat](acc1, acc2, err []T) {
	for c := range acc1 {
		y := acc1[c] - err[c]
		t := acc2[c] + y
		e := (t - acc2[c]) - y
		if math.IsInf(float64(e), 0) || e != e {
			e = 0
		}
		acc2[c], err[c], acc1[c] = t, e, 0
	}
}
