package sim

import (
	"goldtrace/engine/dtype"
	"goldtrace/kernel/ir/irpb"
)

// matmulKernel is the tutorial's fully optimized tiled matmul shape:
// result (M,N) = lhsT(K,M).T @ rhs(K,N), 128×128 stationary and 128×512
// moving tiles, PSUM accumulation over K, inputs of dtype in, result out.
func matmulKernel(K, M, N int64, in, out dtype.Type) *irpb.Kernel {
	b := newK("matmul")
	lhsT := b.param("lhsT", in, K, M)
	rhs := b.param("rhs", in, K, N)
	res := b.output("result", out, M, N)
	const TM, TN, TK = 128, 512, 128
	b.loop(irpb.LoopKind_AFFINE, 0, M/TM, 1, func(m int) {
		b.loop(irpb.LoopKind_AFFINE, 0, N/TN, 1, func(n int) {
			ps := b.psum("res_psum", dtype.F32, TM, TN)
			b.alloc(ps)
			b.op("memset", dts(b.full(ps)), nil, attrs{"value": F(0)})
			b.loop(irpb.LoopKind_AFFINE, 0, K/TK, 1, func(k int) {
				lt := b.sbuf("lhsT_tile", in, TK, TM)
				b.alloc(lt)
				b.dma(b.full(lt), b.tile(lhsT, []int64{TK, TM}, aff(0, lv(k, TK)), aff(0, lv(m, TM))))
				rt := b.sbuf("rhs_tile", in, TK, TN)
				b.alloc(rt)
				b.dma(b.full(rt), b.tile(rhs, []int64{TK, TN}, aff(0, lv(k, TK)), aff(0, lv(n, TN))))
				b.op("matmul", dts(b.full(ps)), dts(b.full(lt), b.full(rt)), attrs{"accumulate": B(true)})
			})
			sb := b.sbuf("res_sb", out, TM, TN)
			b.alloc(sb)
			b.op("tensor_copy", dts(b.full(sb)), dts(b.full(ps)), nil)
			b.dma(b.tile(res, []int64{TM, TN}, aff(0, lv(m, TM)), aff(0, lv(n, TN))), b.full(sb))
		})
	})
	return b.kernel()
}

// softmaxKernel: rows of 128 per iteration: max, exp(x - max) by activation
// with a bias, sum, reciprocal, multiply.
func softmaxKernel(R, C int64, dt dtype.Type) *irpb.Kernel {
	b := newK("softmax")
	x := b.param("x", dt, R, C)
	y := b.output("y", dt, R, C)
	b.loop(irpb.LoopKind_AFFINE, 0, R/128, 1, func(i int) {
		xt := b.sbuf("x_tile", dt, 128, C)
		b.alloc(xt)
		b.dma(b.full(xt), b.tile(x, []int64{128, C}, aff(0, lv(i, 128))))
		nmx := b.sbuf("neg_max", dtype.F32, 128, 1)
		b.alloc(nmx)
		b.op("tensor_reduce", dts(b.full(nmx)), dts(b.full(xt)), attrs{"op": S("maximum"), "axes": Ints(1), "negate": B(true)})
		e := b.sbuf("e", dtype.F32, 128, C)
		b.alloc(e)
		b.op("activation", dts(b.full(e)), dts(b.full(xt), b.full(nmx)), attrs{"func": S("exp"), "has_bias": B(true)})
		s := b.sbuf("sum", dtype.F32, 128, 1)
		b.alloc(s)
		b.op("tensor_reduce", dts(b.full(s)), dts(b.full(e)), attrs{"op": S("add"), "axes": Ints(1)})
		rs := b.sbuf("rsum", dtype.F32, 128, 1)
		b.alloc(rs)
		b.op("activation", dts(b.full(rs)), dts(b.full(s)), attrs{"func": S("reciprocal")})
		yt := b.sbuf("y_tile", dt, 128, C)
		b.alloc(yt)
		b.op("tensor_scalar", dts(b.full(yt)), dts(b.full(e), b.full(rs)), attrs{"op0": S("multiply"), "has_operand0_tile": B(true)})
		b.dma(b.tile(y, []int64{128, C}, aff(0, lv(i, 128))), b.full(yt))
	})
	return b.kernel()
}

// matmulBlockedKernel mirrors bench/kernels.py's matmul_blocked as the
// Python tracer emits it: per block of BN·TN result columns the moving tiles
// of all K in one SBUF tensor (K/TK, TK, BN·TN) (partition axis first), per
// M tile the stationary tiles of all K, a (TM, TN) PSUM accumulator per
// N tile created by memset (no alloc), copied to SBUF and stored.
func matmulBlockedKernel(K, M, N int64, dt dtype.Type) *irpb.Kernel {
	b := newK("matmul_blocked")
	lhsT := b.param("lhsT", dt, K, M)
	rhs := b.param("rhs", dt, K, N)
	res := b.output("out", dt, M, N)
	const TK, TM, TN, BN = 128, 128, 512, 2
	KT := K / TK
	b.loop(irpb.LoopKind_AFFINE, 0, N/(TN*BN), 1, func(n int) {
		rt := b.sbuf("rhs_tiles", dt, TK, KT, TN*BN)
		b.alloc(rt)
		b.loop(irpb.LoopKind_AFFINE, 0, KT, 1, func(k int) {
			b.dma(acc(rt, []int64{TK, TN * BN}, aff(0, tax(0, 1)), aff(0, lv(k, 1)), aff(0, tax(1, 1))),
				b.tile(rhs, []int64{TK, TN * BN}, aff(0, lv(k, TK)), aff(0, lv(n, TN*BN))))
		})
		b.loop(irpb.LoopKind_AFFINE, 0, M/TM, 1, func(m int) {
			lt := b.sbuf("lhs_tiles", dt, TK, KT, TM)
			b.alloc(lt)
			b.loop(irpb.LoopKind_AFFINE, 0, KT, 1, func(k int) {
				b.dma(acc(lt, []int64{TK, TM}, aff(0, tax(0, 1)), aff(0, lv(k, 1)), aff(0, tax(1, 1))),
					b.tile(lhsT, []int64{TK, TM}, aff(0, lv(k, TK)), aff(0, lv(m, TM))))
			})
			ps := b.psum("acc", dtype.F32, TM, TN)
			sb := b.sbuf("res", dt, TM, TN)
			b.loop(irpb.LoopKind_AFFINE, 0, BN, 1, func(bn int) {
				b.op("memset", dts(b.full(ps)), nil, attrs{"value": F(0)})
				b.loop(irpb.LoopKind_AFFINE, 0, KT, 1, func(k int) {
					b.op("matmul", dts(b.full(ps)), dts(
						acc(lt, []int64{TK, TM}, aff(0, tax(0, 1)), aff(0, lv(k, 1)), aff(0, tax(1, 1))),
						acc(rt, []int64{TK, TN}, aff(0, tax(0, 1)), aff(0, lv(k, 1)), aff(0, lv(bn, TN), tax(1, 1)))),
						attrs{"accumulate": B(true)})
				})
				b.op("tensor_copy", dts(b.full(sb)), dts(b.full(ps)), nil)
				b.dma(b.tile(res, []int64{TM, TN}, aff(0, lv(m, TM)), aff(0, lv(n, TN*BN), lv(bn, TN))), b.full(sb))
			})
		})
	})
	return b.kernel()
}

// matmulTutorialKernel has the public tutorial's fully optimized structure:
// an SBUF result block (TBM, 128, BLOCK_N) zeroed per (n2, m2) block and
// accumulated over the K blocks with result_tiles[bm] += res_tile, the
// stationary and moving tiles of each K block loaded into block tensors.
// Tensors are laid out as the Python tracer emits them (partition first).
func matmulTutorialKernel(K, M, N, TBK, TBM, TBN int64, dt, acc dtype.Type) *irpb.Kernel {
	b := newK("matmul_tutorial")
	lhsT := b.param("lhsT", dt, K, M)
	rhs := b.param("rhs", dt, K, N)
	res := b.output("result", acc, M, N)
	const TK, TM, TN = 128, 128, 512
	BM, BN, BK := TM*TBM, TN*TBN, TK*TBK
	a3 := func(t int32, shape []int64, i0, i1, i2 *irpb.Affine) *irpb.Access {
		return &irpb.Access{Tensor: t, Shape: shape, Index: []*irpb.Affine{i0, i1, i2}}
	}
	b.loop(irpb.LoopKind_AFFINE, 0, N/BN, 1, func(n2 int) {
		b.loop(irpb.LoopKind_AFFINE, 0, M/BM, 1, func(m2 int) {
			rt := b.sbuf("result_tiles", acc, TM, TBM, BN)
			b.op("memset", dts(b.full(rt)), nil, attrs{"value": F(0)})
			b.loop(irpb.LoopKind_AFFINE, 0, K/BK, 1, func(k2 int) {
				lt := b.sbuf("lhsT_tiles", dt, TK, TBK, BM)
				b.alloc(lt)
				b.loop(irpb.LoopKind_AFFINE, 0, TBK, 1, func(bk int) {
					b.dma(a3(lt, []int64{TK, BM}, aff(0, tax(0, 1)), aff(0, lv(bk, 1)), aff(0, tax(1, 1))),
						b.tile(lhsT, []int64{TK, BM}, aff(0, lv(k2, BK), lv(bk, TK)), aff(0, lv(m2, BM))))
				})
				rh := b.sbuf("rhs_tiles", dt, TK, TBK, BN)
				b.alloc(rh)
				b.loop(irpb.LoopKind_AFFINE, 0, TBK, 1, func(bk int) {
					b.dma(a3(rh, []int64{TK, BN}, aff(0, tax(0, 1)), aff(0, lv(bk, 1)), aff(0, tax(1, 1))),
						b.tile(rhs, []int64{TK, BN}, aff(0, lv(k2, BK), lv(bk, TK)), aff(0, lv(n2, BN))))
				})
				b.loop(irpb.LoopKind_AFFINE, 0, TBM, 1, func(bm int) {
					b.loop(irpb.LoopKind_AFFINE, 0, TBN, 1, func(bn int) {
						ps := b.psum("res_tile", dtype.F32, TM, TN)
						b.op("memset", dts(b.full(ps)), nil, attrs{"value": F(0)})
						b.loop(irpb.LoopKind_AFFINE, 0, TBK, 1, func(bk int) {
							b.op("matmul", dts(b.full(ps)), dts(
								a3(lt, []int64{TK, TM}, aff(0, tax(0, 1)), aff(0, lv(bk, 1)), aff(0, lv(bm, TM), tax(1, 1))),
								a3(rh, []int64{TK, TN}, aff(0, tax(0, 1)), aff(0, lv(bk, 1)), aff(0, lv(bn, TN), tax(1, 1)))),
								attrs{"accumulate": B(true)})
						})
						slot := a3(rt, []int64{TM, TN}, aff(0, tax(0, 1)), aff(0, lv(bm, 1)), aff(0, lv(bn, TN), tax(1, 1)))
						b.op("tensor_tensor", dts(slot), dts(a3(rt, []int64{TM, TN}, aff(0, tax(0, 1)), aff(0, lv(bm, 1)), aff(0, lv(bn, TN), tax(1, 1))), b.full(ps)), attrs{"op": S("add")})
					})
				})
			})
			b.loop(irpb.LoopKind_AFFINE, 0, TBM, 1, func(bm int) {
				b.dma(b.tile(res, []int64{TM, BN}, aff(0, lv(m2, BM), lv(bm, TM)), aff(0, lv(n2, BN))),
					a3(rt, []int64{TM, BN}, aff(0, tax(0, 1)), aff(0, lv(bm, 1)), aff(0, tax(1, 1))))
			})
		})
	})
	return b.kernel()
}
