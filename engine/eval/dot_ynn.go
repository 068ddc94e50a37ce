package eval

import (
	"sync"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
)

// XLA:CPU (jaxlib 0.10.2) hands every f32 (and f64, ynnPlanF64) matrix-matrix dot it can to
// YNNPACK (a __ynn_fusion): f32 x f32 -> f32 with m > 1, n > 1 and
// max(m, k, n) >= 8, the lhs [batch..., M, K] and the rhs [batch..., K, N]
// or [batch..., N, K] (bf16 and f16 dots with a narrow result are converted
// to f32 around it). This file reproduces the order YNNPACK sums each
// element in, read from its source (ynnpack/subgraph/dot.cc,
// kernels/dot/schedule.cc, kernels/dot/dot.cc, the kernel generators) and
// from jaxlib's binary (the kernel list, and the constant 128 KiB it uses
// as the "L2 cache size": the order does not depend on the host's caches),
// and checked bit for bit against jax (tests/test_dot_ynn_order.py):
//
//   - A kernel is chosen by a cost model over a fixed list of micro-kernels
//     (block bm×bn×bk, tile 1×tn×tk), once with m assumed 2048 to lay out
//     B, then again per task on the task's own m and n among the kernels
//     compatible with that layout.
//   - tile_k tk = 1 kernels sum each element as one FMA chain over a K
//     block from zero (the AVX kernels of AVX2 hosts: multiply then add);
//     tk = 2 and 4 keep tk lanes, lane r summing the k ≡ r (mod tk) of the
//     block by FMA, then add them as s0+s1 and (s0+s1)+(s2+s3). K past the
//     last multiple of tk is one more block of single products.
//   - K is cut into blocks of floor(131072 / (bn' · 4 · bk)) · bk, where
//     bn' is the packed B block (bn times as many bn-blocks of K rows as
//     fit in 32768 elements, at least one, at most N rounded up to tn) or,
//     when B is left unpacked (few row blocks of A, B not transposed), the
//     task's column count. Each block's sum is added to the element in
//     block order: c = block + c.
//   - Tasks split m and n as choose_split_factors does (ynnSplits).

// ynnKernel is one YNNPACK f32 dot micro-kernel: block bm×bn×bk, tile
// 1×tn×tk, and whether it uses FMA.
type ynnKernel struct {
	bm, bn, bk, tn, tk int
	fma                bool
}

// The kernels jaxlib 0.10.2 holds, in the order the selection sees them
// (the first of equal cost wins). AVX2-only hosts see ynnCommonF32 alone;
// the SSE2 kernels and the AVX2 k2 kernels without FMA never win there.
var ynnAVX512F32 = []ynnKernel{
	{1, 32, 1, 16, 1, true}, // dot_fp32_1x32x1_1x16x1_avx512
	{1, 64, 1, 16, 1, true}, // dot_fp32_1x64x1_1x16x1_avx512
	{2, 32, 1, 16, 1, true}, // dot_fp32_2x32x1_1x16x1_avx512
	{2, 64, 1, 16, 1, true}, // dot_fp32_2x64x1_1x16x1_avx512
	{3, 32, 1, 16, 1, true}, // dot_fp32_3x32x1_1x16x1_avx512
	{3, 64, 1, 16, 1, true}, // dot_fp32_3x64x1_1x16x1_avx512
	{4, 32, 1, 16, 1, true}, // dot_fp32_4x32x1_1x16x1_avx512
	{4, 64, 1, 16, 1, true}, // dot_fp32_4x64x1_1x16x1_avx512
	{5, 16, 1, 16, 1, true}, // dot_fp32_5x16x1_1x16x1_avx512
	{5, 32, 1, 16, 1, true}, // dot_fp32_5x32x1_1x16x1_avx512
	{5, 64, 1, 16, 1, true}, // dot_fp32_5x64x1_1x16x1_avx512
	{1, 16, 2, 8, 2, true},  // dot_fp32_1x16x2_1x8x2_avx512
	{1, 32, 2, 8, 2, true},  // dot_fp32_1x32x2_1x8x2_avx512
	{2, 32, 2, 8, 2, true},  // dot_fp32_2x32x2_1x8x2_avx512
	{3, 32, 2, 8, 2, true},  // dot_fp32_3x32x2_1x8x2_avx512
	{4, 16, 2, 8, 2, true},  // dot_fp32_4x16x2_1x8x2_avx512
	{4, 32, 2, 8, 2, true},  // dot_fp32_4x32x2_1x8x2_avx512
	{4, 8, 2, 8, 2, true},   // dot_fp32_4x8x2_1x8x2_avx512
	{5, 32, 2, 8, 2, true},  // dot_fp32_5x32x2_1x8x2_avx512
	{8, 8, 2, 8, 2, true},   // dot_fp32_8x8x2_1x8x2_avx512
	{1, 16, 4, 4, 4, true},  // dot_fp32_1x16x4_1x4x4_avx512
	{1, 32, 4, 4, 4, true},  // dot_fp32_1x32x4_1x4x4_avx512
	{2, 32, 4, 4, 4, true},  // dot_fp32_2x32x4_1x4x4_avx512
	{2, 8, 4, 4, 4, true},   // dot_fp32_2x8x4_1x4x4_avx512
	{3, 16, 4, 4, 4, true},  // dot_fp32_3x16x4_1x4x4_avx512
	{4, 16, 4, 4, 4, true},  // dot_fp32_4x16x4_1x4x4_avx512
	{4, 4, 4, 4, 4, true},   // dot_fp32_4x4x4_1x4x4_avx512
	{4, 8, 4, 4, 4, true},   // dot_fp32_4x8x4_1x4x4_avx512
	{5, 16, 4, 4, 4, true},  // dot_fp32_5x16x4_1x4x4_avx512
	{6, 8, 4, 4, 4, true},   // dot_fp32_6x8x4_1x4x4_avx512
	{8, 4, 4, 4, 4, true},   // dot_fp32_8x4x4_1x4x4_avx512
}

var ynnCommonF32 = []ynnKernel{
	{1, 16, 1, 8, 1, true},  // dot_fp32_1x16x1_1x8x1_fma3
	{1, 32, 1, 8, 1, true},  // dot_fp32_1x32x1_1x8x1_fma3
	{2, 16, 1, 8, 1, true},  // dot_fp32_2x16x1_1x8x1_fma3
	{2, 32, 1, 8, 1, true},  // dot_fp32_2x32x1_1x8x1_fma3
	{3, 16, 1, 8, 1, true},  // dot_fp32_3x16x1_1x8x1_fma3
	{4, 16, 1, 8, 1, true},  // dot_fp32_4x16x1_1x8x1_fma3
	{5, 16, 1, 8, 1, true},  // dot_fp32_5x16x1_1x8x1_fma3
	{6, 16, 1, 8, 1, true},  // dot_fp32_6x16x1_1x8x1_fma3
	{8, 8, 1, 8, 1, true},   // dot_fp32_8x8x1_1x8x1_fma3
	{1, 16, 2, 4, 2, true},  // dot_fp32_1x16x2_1x4x2_avx2_fma3
	{1, 8, 2, 4, 2, true},   // dot_fp32_1x8x2_1x4x2_avx2_fma3
	{2, 16, 2, 4, 2, true},  // dot_fp32_2x16x2_1x4x2_avx2_fma3
	{3, 8, 2, 4, 2, true},   // dot_fp32_3x8x2_1x4x2_avx2_fma3
	{4, 4, 2, 4, 2, true},   // dot_fp32_4x4x2_1x4x2_avx2_fma3
	{4, 8, 2, 4, 2, true},   // dot_fp32_4x8x2_1x4x2_avx2_fma3
	{5, 4, 2, 4, 2, true},   // dot_fp32_5x4x2_1x4x2_avx2_fma3
	{5, 8, 2, 4, 2, true},   // dot_fp32_5x8x2_1x4x2_avx2_fma3
	{6, 4, 2, 4, 2, true},   // dot_fp32_6x4x2_1x4x2_avx2_fma3
	{6, 8, 2, 4, 2, true},   // dot_fp32_6x8x2_1x4x2_avx2_fma3
	{8, 4, 2, 4, 2, true},   // dot_fp32_8x4x2_1x4x2_avx2_fma3
	{1, 16, 1, 8, 1, false}, // dot_fp32_1x16x1_1x8x1_avx
	{1, 32, 1, 8, 1, false}, // dot_fp32_1x32x1_1x8x1_avx
	{2, 16, 1, 8, 1, false}, // dot_fp32_2x16x1_1x8x1_avx
	{2, 32, 1, 8, 1, false}, // dot_fp32_2x32x1_1x8x1_avx
	{3, 16, 1, 8, 1, false}, // dot_fp32_3x16x1_1x8x1_avx
	{4, 16, 1, 8, 1, false}, // dot_fp32_4x16x1_1x8x1_avx
	{4, 8, 1, 8, 1, false},  // dot_fp32_4x8x1_1x8x1_avx
	{6, 8, 1, 8, 1, false},  // dot_fp32_6x8x1_1x8x1_avx
	{8, 8, 1, 8, 1, false},  // dot_fp32_8x8x1_1x8x1_avx
}

// ynnTable is the kernel list of an AVX-512 or an AVX2+FMA host.
func ynnTable(avx512 bool) []ynnKernel {
	if avx512 {
		return append(append([]ynnKernel(nil), ynnAVX512F32...), ynnCommonF32...)
	}
	return ynnCommonF32
}

// YNNPACK's f64 kernels in jaxlib 0.10.2 (all tile_k 1), in the order the
// selection sees them: the AVX-512 list, then FMA3, then AVX (multiply
// then add; never the cheapest where an FMA3 kernel of the same block
// exists, and XLA asks for consistent arithmetic). The portable
// dot_fp64_1x128x1_1x1x1 kernel is never the cheapest and is left out.
var ynnAVX512F64 = []ynnKernel{
	{1, 16, 1, 8, 1, true}, // dot_fp64_1x16x1_1x8x1_avx512
	{1, 32, 1, 8, 1, true}, // dot_fp64_1x32x1_1x8x1_avx512
	{2, 16, 1, 8, 1, true}, // dot_fp64_2x16x1_1x8x1_avx512
	{2, 32, 1, 8, 1, true}, // dot_fp64_2x32x1_1x8x1_avx512
	{3, 16, 1, 8, 1, true}, // dot_fp64_3x16x1_1x8x1_avx512
	{3, 32, 1, 8, 1, true}, // dot_fp64_3x32x1_1x8x1_avx512
	{4, 16, 1, 8, 1, true}, // dot_fp64_4x16x1_1x8x1_avx512
	{4, 32, 1, 8, 1, true}, // dot_fp64_4x32x1_1x8x1_avx512
	{5, 8, 1, 8, 1, true},  // dot_fp64_5x8x1_1x8x1_avx512
	{5, 16, 1, 8, 1, true}, // dot_fp64_5x16x1_1x8x1_avx512
	{5, 32, 1, 8, 1, true}, // dot_fp64_5x32x1_1x8x1_avx512
}

var ynnCommonF64 = []ynnKernel{
	{1, 8, 1, 4, 1, true},   // dot_fp64_1x8x1_1x4x1_fma3
	{1, 16, 1, 4, 1, true},  // dot_fp64_1x16x1_1x4x1_fma3
	{2, 8, 1, 4, 1, true},   // dot_fp64_2x8x1_1x4x1_fma3
	{2, 16, 1, 4, 1, true},  // dot_fp64_2x16x1_1x4x1_fma3
	{3, 8, 1, 4, 1, true},   // dot_fp64_3x8x1_1x4x1_fma3
	{4, 8, 1, 4, 1, true},   // dot_fp64_4x8x1_1x4x1_fma3
	{5, 8, 1, 4, 1, true},   // dot_fp64_5x8x1_1x4x1_fma3
	{6, 8, 1, 4, 1, true},   // dot_fp64_6x8x1_1x4x1_fma3
	{8, 4, 1, 4, 1, true},   // dot_fp64_8x4x1_1x4x1_fma3
	{1, 8, 1, 4, 1, false},  // dot_fp64_1x8x1_1x4x1_avx
	{1, 16, 1, 4, 1, false}, // dot_fp64_1x16x1_1x4x1_avx
	{2, 8, 1, 4, 1, false},  // dot_fp64_2x8x1_1x4x1_avx
	{2, 16, 1, 4, 1, false}, // dot_fp64_2x16x1_1x4x1_avx
	{3, 8, 1, 4, 1, false},  // dot_fp64_3x8x1_1x4x1_avx
	{4, 4, 1, 4, 1, false},  // dot_fp64_4x4x1_1x4x1_avx
	{4, 8, 1, 4, 1, false},  // dot_fp64_4x8x1_1x4x1_avx
	{6, 4, 1, 4, 1, false},  // dot_fp64_6x4x1_1x4x1_avx
	{8, 4, 1, 4, 1, false},  // dot_fp64_8x4x1_1x4x1_avx
}

// ynnTableF64 is the f64 kernel list of an AVX-512 or an AVX2+FMA host.
func ynnTableF64(avx512 bool) []ynnKernel {
	if avx512 {
		return append(append([]ynnKernel(nil), ynnAVX512F64...), ynnCommonF64...)
	}
	return ynnCommonF64
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// ynnCost is YNNPACK's estimate_dot_cost (in float32, as it computes it).
func ynnCost(m, n, k int, kn ynnKernel) float32 {
	la := kn.bm * kn.bk / kn.tk
	lb := kn.bn * kn.bk / (kn.tn * kn.tk)
	block := float32(la*5+lb*11+9) + float32(kn.tn*kn.tk)*1e-4
	return float32(ceilDiv(m, kn.bm)) * float32(ceilDiv(n, kn.bn)) * float32(ceilDiv(k, kn.bk)) * block
}

// ynnSelect is get_dot_kernel over tab: the cheapest kernel with tile_k tk
// (any when 0) whose tile_n divides blockN (when packed, blockN > 0);
// unaligned restricts it to the kernels that read B unpacked (tile_k 1).
func ynnSelect(tab []ynnKernel, m, n, k, tk, blockN int, unaligned bool) (best ynnKernel, cost float32) {
	first := true
	for _, kn := range tab {
		if (tk != 0 && kn.tk != tk) || (unaligned && kn.tk != 1) || (!unaligned && blockN > 0 && blockN%kn.tn != 0) {
			continue
		}
		if c := ynnCost(m, n, k, kn); first || c < cost {
			best, cost, first = kn, c, false
		}
	}
	return best, cost
}

// ynnSplits is choose_split_factors: the task size in m and n.
func ynnSplits(m, n, k, blockN int) (sm, sn int) {
	k = min(k, 1024)
	minArea := min(m, 64) * min(n, 64)
	const maxArea, maxCost, aspect = 256 * 256, 1024 * 64, 4
	sn, sm = min(n, blockN), min(m, 16)
	for {
		if sn*sm >= minArea && ((sm+sn)*k >= maxCost || sm*sn >= maxArea) {
			break
		}
		if (aspect*sn <= sm || sm >= m) && sn < n {
			sn *= 2
		} else if (sm <= aspect*sn || sn >= n) && sm < m {
			sm *= 2
		} else {
			break
		}
	}
	return min(sm, 32768), min(sn, 65536)
}

// ynnCache is the cache size jaxlib's YNNPACK blocks K for (bytes).
const ynnCache = 131072

// ynnTask is one task of the dot: rows [i0,i1) and columns [j0,j1) of each
// batch element, summed with tile_k tk (FMA or not) in K blocks of kstep.
type ynnTask struct {
	i0, i1, j0, j1 int
	tk, kstep      int
	fma            bool
}

// ynnPlanF32 is YNNPACK's plan for an f32 [batch, m, k] x [k, n] dot on an
// AVX-512 or AVX2 host; packB says B must be packed (it is transposed or
// constant).
func ynnPlanF32(m, n, k int, avx512, packB bool) []ynnTask {
	return ynnPlan(ynnTable(avx512), 4, m, n, k, packB)
}

// ynnPlanF64 is ynnPlanF32 for f64 dots, on YNNPACK's f64 kernels (all
// tile_k 1 FMA chains, so every task sums over K blocks only).
func ynnPlanF64(m, n, k int, avx512, packB bool) []ynnTask {
	return ynnPlan(ynnTableF64(avx512), 8, m, n, k, packB)
}

// ynnPlan is YNNPACK's plan over the kernel list tab for elements of elem
// bytes.
func ynnPlan(tab []ynnKernel, elem, m, n, k int, packB bool) []ynnTask {
	kern, cost := ynnSelect(tab, 2048, n, k, 0, 0, false)
	pack := true
	if !packB {
		unp, ucost := kern, cost
		if kern.tk != 1 {
			unp, ucost = ynnSelect(tab, 2048, n, k, 1, 0, true)
		}
		// should_pack_b: A small next to B (at most 10 row blocks per
		// batch element) is not worth packing B for.
		if ucost <= 2*cost && ceilDiv(m, unp.bm) <= 10 {
			pack, kern = false, unp
		}
	}
	var pbn, splitBN int
	kPadded := k
	if pack {
		pbn = kern.bn * max(1, ynnCache/elem/(kern.bn*k))
		pbn = max(kern.tn, min(ceilDiv(n, kern.tn)*kern.tn, pbn))
		splitBN = pbn
		kPadded = ceilDiv(k, kern.tk) * kern.tk
	} else {
		splitBN = max(64/elem, kern.bn)
	}
	sm, sn := ynnSplits(m, n, kPadded, splitBN)
	if pack {
		sn = max(pbn, sn/pbn*pbn)
	}
	var tasks []ynnTask
	for j0 := 0; j0 < n; j0 += sn {
		for i0 := 0; i0 < m; i0 += sm {
			tm, tn := min(sm, m-i0), min(sn, n-j0)
			var rk ynnKernel
			bn := pbn
			if pack {
				rk, _ = ynnSelect(tab, tm, tn, k, kern.tk, pbn, false)
			} else {
				rk, _ = ynnSelect(tab, tm, tn, k, 1, tn, true)
				bn = tn
			}
			kstep := ynnCache / (bn * elem * rk.bk) * rk.bk
			if kstep == 0 {
				kstep = k // schedule_dot makes no K loop
			}
			tasks = append(tasks, ynnTask{i0, i0 + tm, j0, j0 + tn, rk.tk, kstep, rk.fma})
		}
	}
	return tasks
}

// ynnDot is a dot routed to YNNPACK's order: its plan on this host.
type ynnDot struct {
	tasks []ynnTask
	kn    *gemmKernel[float32]
}

// ynnRoute decides whether XLA:CPU would give dot p (lhs, rhs and result
// element types given; lhsIn and rhsIn the operands' instructions, when
// known) to YNNPACK, returning its plan, or nil to keep today's order. Only
// the assembly FMA kernels can run YNNPACK's chains.
func ynnRoute(p *dotPlan, lt, rt, ot dtype.Type, lhsIn, rhsIn *hlo.Instruction) *ynnDot {
	kn := kernelFor[float32]()
	switch {
	case lt == dtype.F32 && rt == dtype.F32 && ot == dtype.F32:
	case lt == rt && (lt == dtype.BF16 || lt == dtype.F16) && ot == lt:
		// converted to f32 around an f32 YNNPACK dot
	default:
		return nil
	}
	packB, ok := ynnTakes(p, lhsIn, rhsIn)
	if !ok {
		return nil
	}
	return &ynnDot{tasks: ynnPlanF32Kept(p.m, p.n, p.k, ynnISA == 512, packB), kn: kn}
}

// ynnRouteF64 is ynnRoute for an f64 x f64 -> f64 dot: its YNNPACK plan, or
// nil.
func ynnRouteF64(p *dotPlan, lt, rt, ot dtype.Type, lhsIn, rhsIn *hlo.Instruction) []ynnTask {
	if ynnOrderDisabled || lt != dtype.F64 || rt != dtype.F64 || ot != dtype.F64 {
		return nil
	}
	packB, ok := ynnTakes(p, lhsIn, rhsIn)
	if !ok {
		return nil
	}
	return ynnPlanF64Kept(p.m, p.n, p.k, ynnISA == 512, packB)
}

// ynnTakes reports whether XLA:CPU hands dot p (of a type YNNPACK takes) to
// YNNPACK, and whether YNNPACK packs B then. Only the assembly FMA kernels
// can run YNNPACK's chains.
func ynnTakes(p *dotPlan, lhsIn, rhsIn *hlo.Instruction) (packB, ok bool) {
	if ynnISA == 0 {
		return false, false
	}
	if p.m <= 1 || p.n <= 1 || max(p.m, p.k, p.n) < 8 {
		return false, false
	}
	// The layout YNNPACK sees is the one XLA's pipeline gives the operands
	// (xlaDotLayout). The lhs must be [batch..., M..., K...]; the rhs
	// [batch..., K..., N...], or [batch..., N..., K...], which YNNPACK
	// transposes while packing B (so B is always packed).
	lp, rp, _, _ := xlaDotLayout(p, lhsIn, rhsIn)
	if !isIdentity(lp) {
		return false, false
	}
	rhsKN := isIdentity(rp)
	if !rhsKN && !rhsIsBatchNK(rp, p.nBatch, p.nContract) {
		return false, false
	}
	return !rhsKN, true
}

// xlaDotLayout is the layout XLA:CPU's pipeline gives dot p's operands
// (lhsIn and rhsIn, when known): for each, the permutation (dotPlan's
// lhsPerm or rhsPerm form) of the dims of the memory the dot reads, and
// whether that memory is a transposed copy XLA makes (outside any fusion).
//
//   - DotDecomposer (dot_decomposer.cc) rewrites a dot that is not canonical
//     (batch dims not leading, in order, on either operand; more than one
//     contracting or free dim) to transpose+reshape its operands to
//     [batch, M, K] and [batch, K, N]; the simplifier merges a transpose
//     feeding that transpose into it and drops it when it is the identity.
//   - TransposeFolding then folds a transpose feeding the dot directly into
//     its dims when it keeps the batch dims in place and the operand has
//     one free and one contracting dim (IsRowColumnTransposeDotOperand), so
//     the dot reads the transpose's source: [batch, K, M] lhs, [batch, N, K]
//     rhs.
//   - Any other transpose is a copy of its own: the dot reads it row-major.
//
// jax.nn.dot_product_attention's [B, T, N, H] dots (batch dims 0 and 2) so
// read [B, N, T, H] and [B, N, H, S] copies: the rhs is K x N, not N x K.
func xlaDotLayout(p *dotPlan, lhsIn, rhsIn *hlo.Instruction) (lp, rp []int, lCopy, rCopy bool) {
	nb := p.nBatch
	nRhsFree := len(p.rhsPerm) - nb - p.nContract
	canonical := p.nContract == 1 && p.nLhsFree <= 1 && nRhsFree <= 1 &&
		batchLeads(p.lhsPerm, nb) && batchLeads(p.rhsPerm, nb)
	operand := func(in *hlo.Instruction, perm []int, nFree int) ([]int, bool) {
		c := throughTranspose(in, perm)
		folds := nFree == 1 && p.nContract == 1 && batchLeads(c, nb)
		switch {
		case canonical && isTranspose(in) && !folds:
			return perm, true // the transpose's copy, read as the dot's dims say
		case canonical:
			return c, false
		case isIdentity(c) || folds:
			return c, false
		}
		return identityPerm(len(perm)), true // DotDecomposer's copy
	}
	lp, lCopy = operand(lhsIn, p.lhsPerm, p.nLhsFree)
	rp, rCopy = operand(rhsIn, p.rhsPerm, nRhsFree)
	return lp, rp, lCopy, rCopy
}

func isTranspose(in *hlo.Instruction) bool { return in != nil && in.Opcode == "transpose" }

func identityPerm(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// throughTranspose maps an operand's dot permutation to its dims in the
// source of in when in is a transpose, else returns perm.
func throughTranspose(in *hlo.Instruction, perm []int) []int {
	if in == nil || in.Opcode != "transpose" || len(in.Dimensions) != len(perm) {
		return perm
	}
	out := make([]int, len(perm))
	for i, d := range perm {
		out[i] = int(in.Dimensions[d])
	}
	return out
}

func isIdentity(perm []int) bool {
	for i, v := range perm {
		if v != i {
			return false
		}
	}
	return true
}

// rhsIsBatchNK reports whether an rhs permutation (batch, contracting,
// free) takes dims that are batch, then free, then contracting, each group
// in order.
func rhsIsBatchNK(perm []int, nb, nc int) bool {
	nf := len(perm) - nb - nc
	for i := 0; i < nb; i++ {
		if perm[i] != i {
			return false
		}
	}
	for i := 0; i < nc; i++ {
		if perm[nb+i] != nb+nf+i {
			return false
		}
	}
	for i := 0; i < nf; i++ {
		if perm[nb+nc+i] != nb+i {
			return false
		}
	}
	return true
}

// uniformKStep returns the K block of a plan whose tasks are all FMA
// chains (tile_k 1) over the same blocks, else 0.
func (y *ynnDot) uniformKStep() int { return uniformChainStep(y.tasks) }

// uniformChainStep returns the K block of tasks that are all FMA chains
// (tile_k 1) over the same blocks, else 0.
func uniformChainStep(tasks []ynnTask) int {
	ks := tasks[0].kstep
	for _, t := range tasks {
		if t.tk != 1 || !t.fma || t.kstep != ks {
			return 0
		}
	}
	return ks
}

// blockKernel returns the GEMM kernel whose kc slices are the plan's K
// blocks when every task sums in FMA chains over the same blocks (the
// kernel run() uses then), else nil.
func (y *ynnDot) blockKernel(k int) *gemmKernel[float32] {
	if ks := y.uniformKStep(); ks > 0 {
		return y.kn.withKC(min(ks, k))
	}
	return nil
}

// columnGroups splits the plan's columns into runs whose tasks all sum in
// FMA chains over the same K blocks, with the kernel for those blocks; nil
// when some task does not.
func (y *ynnDot) columnGroups(k int) (groups []ynnColumns) {
	for _, t := range y.tasks {
		if t.tk != 1 || !t.fma {
			return nil
		}
		kn := y.kn.withKC(min(t.kstep, k))
		if g := len(groups) - 1; g >= 0 && groups[g].j0 == t.j0 {
			if groups[g].kn != kn {
				return nil
			}
			continue
		}
		if g := len(groups) - 1; g >= 0 && groups[g].kn == kn && groups[g].j1 == t.j0 {
			groups[g].j1 = t.j1
			continue
		}
		groups = append(groups, ynnColumns{t.j0, t.j1, kn})
	}
	return groups
}

// ynnColumns is a run of columns [j0,j1) summed by kn's kc slices.
type ynnColumns struct {
	j0, j1 int
	kn     *gemmKernel[float32]
}

// ynnPrepacked runs a one-product dot in YNNPACK's order on B packed once
// and kept across loop steps (loop_invariant.go), each column run on its own
// K blocks; nil when B is not kept or the plan has lanes.
func ynnPrepacked(ev *Evaluator, par int, y *ynnDot, m, n, k int, a []float32, la gemmLayout, b []float32, lb gemmLayout) []float32 {
	groups := y.columnGroups(k)
	if groups == nil {
		return nil
	}
	packs := make([][]float32, len(groups))
	for i, g := range groups {
		if packs[i], _ = ev.packedInvariantFor(b[g.j0*lb.cs:], lb, k, g.j1-g.j0, g.kn); packs[i] == nil {
			return nil
		}
	}
	c := ev.newF32s(m*n, true)
	if len(groups) == 1 {
		groups[0].kn.runPrepacked(par, m, n, k, a, la, packs[0], c)
		return c
	}
	for i, g := range groups {
		nj := g.j1 - g.j0
		tmp := ev.newF32s(m*nj, true)
		g.kn.runPrepacked(par, m, nj, k, a, la, packs[i], tmp)
		for r := 0; r < m; r++ {
			copy(c[r*n+g.j0:][:nj], tmp[r*nj:][:nj])
		}
		ev.freeF32s(tmp)
	}
	return c
}

// uniform reports whether every task sums the same way.
func (y *ynnDot) uniform() bool {
	t0 := y.tasks[0]
	for _, t := range y.tasks {
		if t.tk != t0.tk || t.fma != t0.fma || t.kstep != t0.kstep {
			return false
		}
	}
	return true
}

// runGeneral is run (dot_ynn_tiny.go) for any shape: c = a x b
// (row-major [nb, m, n], whatever it held: every element is set) in
// YNNPACK's order.
func (y *ynnDot) runGeneral(par, nb, m, n, k int, a []float32, la gemmLayout, b []float32, lb gemmLayout, c []float32) {
	if kn := y.blockKernel(k); kn != nil {
		kn.runOver(par, nb, m, n, k, a, la, b, lb, c)
		return
	}
	tasks := y.tasks
	if y.uniform() {
		// Task bounds do not change any element's sum: one task.
		t := tasks[0]
		t.i0, t.i1, t.j0, t.j1 = 0, m, 0, n
		tasks = []ynnTask{t}
	}
	ynnEachTask(tasks, nb, m, n, a, la, b, lb, c, func(t ynnTask, mi, nj int, av, bv, tmp []float32) {
		switch {
		case !t.fma:
			ynnMulAdd(nb, mi, nj, k, t.kstep, av, la, bv, lb, tmp)
		case t.tk == 1:
			y.kn.withKC(min(t.kstep, k)).run(par, nb, mi, nj, k, av, la, bv, lb, tmp)
		default:
			y.lanes(par, t, nb, mi, nj, k, av, la, bv, lb, tmp)
		}
	})
}

// ynnEachTask runs each task's rows and columns of the [nb, m, n] product
// into a zeroed [nb, rows, cols] block (run gets the task's corner of a
// and b) and copies the block into c.
func ynnEachTask[T float32 | float64](tasks []ynnTask, nb, m, n int, a []T, la gemmLayout, b []T, lb gemmLayout, c []T,
	run func(t ynnTask, mi, nj int, av, bv, tmp []T)) {
	for _, t := range tasks {
		mi, nj := t.i1-t.i0, t.j1-t.j0
		tmp := make([]T, nb*mi*nj)
		run(t, mi, nj, a[t.i0*la.rs:], b[t.j0*lb.cs:], tmp)
		for bi := 0; bi < nb; bi++ {
			for i := 0; i < mi; i++ {
				copy(c[bi*m*n+(t.i0+i)*n+t.j0:][:nj], tmp[(bi*mi+i)*nj:][:nj])
			}
		}
	}
}

// lanes runs a tile_k 2 or 4 task: per K block, lane r's FMA chain over the
// block's k ≡ r (mod tk) is an ordinary GEMM over A's columns and B's rows
// tk apart (gathered into contiguous copies, so the GEMM runs at full
// speed), and the lanes are summed pairwise before the block is added to c.
// The K tail past the last multiple of tk is a block of single products.
// Rows go in blocks small enough that a block's lane sums stay in cache,
// the blocks spread over the goroutines.
func (y *ynnDot) lanes(par int, t ynnTask, nb, m, n, k int, a []float32, la gemmLayout, b []float32, lb gemmLayout, c []float32) {
	tk := t.tk
	km := k - k%tk
	dmax := ceilDiv(min(t.kstep, k), tk)
	kn := y.kn.withKC(dmax)
	mr := kn.mr
	rb := max(mr, min(roundUp(m, mr), (1<<16)/max(1, n)/mr*mr))
	type work struct {
		lane [][]float32
		ag   []float32
	}
	var pool sync.Pool
	for bi := 0; bi < nb; bi++ {
		ab, bb, cb := a[bi*la.bs:], b[bi*lb.bs:], c[bi*m*n:(bi+1)*m*n]
		first := true
		block := func(lo, hi int) {
			// Each lane's rows of B, packed once for all row blocks.
			var ds [4]int
			bp := make([][]float32, tk)
			for r := 0; r < tk; r++ {
				ds[r] = ceilDiv(max(0, hi-lo-r), tk)
				if ds[r] > 0 {
					bp[r] = kn.packWhole(bb[(lo+r)*lb.rs:], gemmLayout{0, lb.rs * tk, lb.cs}, ds[r], n)
				}
			}
			blocks := ceilDiv(m, rb)
			kn.parallelFor(min(par, blocks), blocks, func(_ *gemmWork[float32], blk int) {
				w, _ := pool.Get().(*work)
				if w == nil {
					w = &work{lane: make([][]float32, tk), ag: make([]float32, rb*dmax)}
					for r := range w.lane {
						w.lane[r] = make([]float32, rb*n)
					}
				}
				defer pool.Put(w)
				{
					i0 := blk * rb
					rows := min(rb, m-i0)
					for r := 0; r < tk; r++ {
						ln := w.lane[r][:rows*n]
						clear(ln)
						d := ds[r]
						if d == 0 {
							continue
						}
						step := tk * la.cs
						for i := 0; i < rows; i++ {
							src := ab[(i0+i)*la.rs+(lo+r)*la.cs:]
							dst := w.ag[i*d:][:d]
							for q := range dst {
								dst[q] = src[q*step]
							}
						}
						kn.runPrepacked(1, rows, n, d, w.ag[:rows*d], rowMajor(rows, d), bp[r], ln)
					}
					lane := make([][]float32, tk)
					for r := range lane {
						lane[r] = w.lane[r][:rows*n]
					}
					ynnCombine(tk, lane, cb[i0*n:(i0+rows)*n], first)
				}
			})
			first = false
		}
		for lo := 0; lo < km; lo += t.kstep {
			block(lo, min(km, lo+t.kstep))
		}
		if km < k {
			block(km, k)
		}
	}
}

// ynnCombine adds the lanes pairwise (s0+s1, or (s0+s1)+(s2+s3)) and sets
// c to that sum (first block) or adds it to c.
func ynnCombine(tk int, lane [][]float32, c []float32, first bool) {
	sseAfterAVX()
	l0, l1 := lane[0][:len(c)], lane[1][:len(c)]
	if tk == 2 {
		for i := range c {
			s := l0[i] + l1[i]
			if first {
				c[i] = s
			} else {
				c[i] = s + c[i]
			}
		}
		return
	}
	l2, l3 := lane[2][:len(c)], lane[3][:len(c)]
	for i := range c {
		s := (l0[i] + l1[i]) + (l2[i] + l3[i])
		if first {
			c[i] = s
		} else {
			c[i] = s + c[i]
		}
	}
}

// ynnMulAdd is a task on the AVX kernels of an AVX2 host, which multiply
// and then add: per K block of kstep, each element's chain from zero of
// rounded products, added to c.
func ynnMulAdd[T float32 | float64](nb, m, n, k, kstep int, a []T, la gemmLayout, b []T, lb gemmLayout, c []T) {
	for bi := 0; bi < nb; bi++ {
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var acc T
				for lo := 0; lo < k; lo += kstep {
					var s T
					for p := lo; p < min(k, lo+kstep); p++ {
						s += T(a[bi*la.bs+i*la.rs+p*la.cs] * b[bi*lb.bs+p*lb.rs+j*lb.cs])
					}
					if lo == 0 {
						acc = s
					} else {
						acc = s + acc
					}
				}
				c[(bi*m+i)*n+j] = acc
			}
		}
	}
	sseAfterAVX()
}
