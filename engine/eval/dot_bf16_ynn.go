package eval

import (
	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
	"goldtrace/internal/hostcpu"
)

// bf16 x bf16 -> f32 dots (preferred_element_type=float32) in XLA:CPU's
// order (jaxlib 0.10.2, measured against jax.jit):
//
//   - With both operands in the canonical layout XLA's DotDecomposer gives
//     them ([batch..., M, K] and [batch..., K, N]; operands whose batch
//     dimensions do not lead are transposed into it), the bf16 operands go
//     to YNNPACK's bf16 kernel. On a host with AVX512-BF16 that is
//     VDPBF16PS: each output element is one f32 accumulator taking the K
//     products in pairs, the odd one first (acc += a[k+1]·b[k+1], then
//     acc += a[k]·b[k]; bf16 products are exact in f32, so each step rounds
//     once). K is cut into blocks of floor(131072 / (4·bn))·2 with bn =
//     32·max(1, 65536/(32·K)), at least 16 and at most N rounded up to 16;
//     each block starts from zero and is added to the element in order.
//     Fitted bit for bit on M×K×N from 3×7×5 to 256×16384×8, batched and
//     attention-shaped products included.
//   - With the rhs [batch..., N, K] (x·wᵀ), XLA converts both operands to
//     f32 and runs YNNPACK's f32 dot (dot_ynn.go's order).
//   - A transposed lhs ([batch..., K, M]) is also converted to f32, and the
//     f32 dot's order follows (XLA's own loops). Matrix-vector products
//     (m or n of 1) keep the general path.
//
// The pair order is the GEMM's FMA chain over K with adjacent K indices
// swapped (an exact product added to a chain rounds the same as VDPBF16PS's
// step), so both operands are decoded with the pairs swapped and the chain
// kernels run YNNPACK's K blocks. Hosts without AVX512-BF16 run another
// YNNPACK kernel, not modelled: the dot keeps the old order there.

// ynnBF16KStep is the K block of YNNPACK's bf16 kernel for n columns and
// depth k.
func ynnBF16KStep(n, k int) int {
	const bn, tn, elem, bk = 32, 16, 2, 2
	pbn := bn * max(1, ynnCache/elem/(bn*k))
	pbn = max(tn, min(ceilDiv(n, tn)*tn, pbn))
	if s := ynnCache / (pbn * elem * bk) * bk; s > 0 {
		return s
	}
	return k
}

// batchLeads reports whether perm keeps its first nBatch dims in place.
func batchLeads(perm []int, nBatch int) bool {
	for i := range nBatch {
		if perm[i] != i {
			return false
		}
	}
	return true
}

// dotBF16F32 computes a bf16 x bf16 -> f32 dot p in XLA:CPU's order where
// that is known (see above), reporting false to leave it to the general
// path.
func dotBF16F32(ev *Evaluator, par int, p *dotPlan, lhs, rhs *tensor.Tensor, ot dtype.Type, lhsIn, rhsIn *hlo.Instruction) ([]float32, bool) {
	if ynnISA == 0 || ynnOrderDisabled || lhs.Type != dtype.BF16 || rhs.Type != dtype.BF16 || ot != dtype.F32 ||
		p.m <= 1 || p.n <= 1 {
		return nil, false
	}
	lp, rp := throughTranspose(lhsIn, p.lhsPerm), throughTranspose(rhsIn, p.rhsPerm)
	if !isIdentity(lp) && batchLeads(lp, p.nBatch) {
		// [batch..., K, M]: XLA converts both to f32 and runs the f32 dot.
		a, b := operandF32(lhs), operandF32(rhs)
		ynn := ynnRoute(p, dtype.F32, dtype.F32, dtype.F32, lhsIn, rhsIn)
		return dotInF32(ev, par, p, lhs.Dims, rhs.Dims, a, b, ynn), true
	}
	canonRHS := isIdentity(rp) || !batchLeads(rp, p.nBatch)
	pairs := canonRHS && hostcpu.X86.AVX512BF16
	if !pairs && (canonRHS || !rhsIsBatchNK(rp, p.nBatch, p.nContract)) {
		return nil, false
	}
	var y *ynnDot
	var a, b []float32
	var la, lb gemmLayout
	if pairs && isIdentity(p.lhsPerm) && isIdentity(p.rhsPerm) {
		// VDPBF16PS itself where nothing denormal can occur (gemm_bf16pairs).
		if c := ev.newF32sOver(p.b * p.m * p.n); gemmBF16PairsOddFirst(par, p.b, p.m, p.n, p.k, ynnBF16KStep(p.n, p.k),
			bf16Src{u16: lhs.U16(), l: rowMajor(p.m, p.k)}, bf16Src{u16: rhs.U16(), l: rowMajor(p.k, p.n)}, c) {
			return c, true
		}
		// In place and row-major: decoded with the pairs swapped in one pass.
		a, la = decodeBF16SwappingK(lhs.U16(), p.b*p.m, p.k, 1), rowMajor(p.m, p.k)
		b, lb = decodeBF16SwappingK(rhs.U16(), p.b, p.k, p.n), rowMajor(p.k, p.n)
		y = &ynnDot{tasks: []ynnTask{{0, p.m, 0, p.n, 1, ynnBF16KStep(p.n, p.k), true}}, kn: kernelFor[float32]()}
		c := ev.newF32s(p.b*p.m*p.n, true)
		y.run(par, p.b, p.m, p.n, p.k, a, la, b, lb, c)
		return c, true
	}
	a, la = asMatrices(operandF32(lhs), lhs.Dims, p.lhsPerm, p.nBatch, p.nLhsFree, p.m, p.k)
	b, lb = asMatrices(operandF32(rhs), rhs.Dims, p.rhsPerm, p.nBatch, p.nContract, p.k, p.n)
	if pairs {
		// asMatrices reads an operand in place only when its dims are in
		// order; a transposed view is copied row-major.
		if la.cs != 1 {
			a, la = relayout(a, la, p.b, p.m, p.k), rowMajor(p.m, p.k)
		}
		if lb.cs != 1 {
			b, lb = relayout(b, lb, p.b, p.k, p.n), rowMajor(p.k, p.n)
		}
		swapAdjacentK(a, p.b*p.m, p.k, 1, p.k)
		swapAdjacentK(b, p.b, p.k, p.n, p.k*p.n)
		y = &ynnDot{tasks: []ynnTask{{0, p.m, 0, p.n, 1, ynnBF16KStep(p.n, p.k), true}}, kn: kernelFor[float32]()}
	} else {
		y = &ynnDot{tasks: ynnPlanF32Kept(p.m, p.n, p.k, ynnISA == 512, true), kn: kernelFor[float32]()}
	}
	c := ev.newF32s(p.b*p.m*p.n, true)
	y.run(par, p.b, p.m, p.n, p.k, a, la, b, lb, c)
	return c, true
}

// swapAdjacentK swaps K indices 2j and 2j+1 of each of count slabs (slab
// stride apart) whose K index steps by width elements over k of them: rows
// of A (width 1) or row pairs of B (each row width wide). Slabs or, for one
// slab, row pairs are spread over the cores.
func swapAdjacentK(x []float32, count, k, width, stride int) {
	pairs := k / 2
	parallelFor(count*pairs, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			base, j := (t/pairs)*stride, 2*(t%pairs)
			p, q := x[base+j*width:][:width], x[base+(j+1)*width:][:width]
			for i := range p {
				p[i], q[i] = q[i], p[i]
			}
		}
	})
}

// decodeBF16SwappingK decodes count slabs of k rows of width bf16 values
// (row-major) into f32 with rows 2j and 2j+1 of each slab swapped, rows
// spread over the cores; the storage is not cleared first (every element
// is written).
func decodeBF16SwappingK(src []uint16, count, k, width int) []float32 {
	out := storageForWriting[float32](count * k * width)
	parallelForWork(count*k, count*k*width, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			j := t % k
			from := t - j + (j ^ 1)
			if j^1 >= k {
				from = t // the odd K's last row has no partner
			}
			decodeBF16(out[t*width:][:width], src[from*width:][:width])
		}
	})
	return out
}

// relayout copies a batch of rows×cols matrices in layout l into row-major
// order, rows spread over the cores.
func relayout(x []float32, l gemmLayout, nb, rows, cols int) []float32 {
	out := make([]float32, nb*rows*cols)
	parallelFor(nb*rows, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			bi, r := t/rows, t%rows
			for c := range cols {
				out[t*cols+c] = x[bi*l.bs+r*l.rs+c*l.cs]
			}
		}
	})
	return out
}
