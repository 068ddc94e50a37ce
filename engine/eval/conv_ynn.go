package eval

import (
	"math"
	"sync"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// XLA:CPU (jaxlib 0.10.2) hands 2-D convolutions to YNNPACK (a
// __ynn_fusion holding the convolution alone) when they are f32 (bf16 and
// f16 ones are converted to f32 around it), batch_group_count is 1, there is
// no input (base) dilation and no window reversal, max(input features,
// output features) > 16, and in each spatial dim neither the output nor the
// kernel is larger than the input (ynn_support.cc's
// IsConvolutionOpSupportedByYnn). ynn_emitter.cc builds it as a pad, a
// stencil copy [n, oh, ow, kh, kw, ci] and a YNNPACK dot with three
// reduction dims, k1 = ci (per group), k2 = kw, k3 = kh, against the filter
// [kh, kw, ci, co] (grouped: split into [g, kh, kw, ci/g, co/g]); the dot's
// m is ow (grouped: an inserted dim of extent 1) and everything else is a
// batch dim. This file reproduces the order YNNPACK sums each output in,
// fitted bit for bit against jax.jit over ~1000 random convolutions on an
// AVX-512 host and under the AVX2 CPUID shim (tests/test_conv_ynn_order.py):
//
//   - The kernel list, its order (the first of equal cost wins) and each
//     kernel's flags are read from get_dot_kernel in jaxlib's
//     libjax_common.so: AVX-512, FMA3, AVX2+FMA3, AVX (no FMA), AVX2 (no
//     FMA) and SSE2 (no FMA) kernels, the AVX-512 ones on AVX-512 hosts
//     only. The cost model is dot_ynn.go's, priced on k1 alone: the define
//     time choice (m taken as 2048, n = co, k = ci) lays out B; should_pack_b
//     leaves B unpacked when that kernel reads B unpacked (tile_k 1, not
//     SSE2), costs no more than twice as much, and A is small (at most 10
//     row blocks of ow times the batch, grouped: n·oh·ow ≤ 10, and never
//     with one output feature per group); each task
//     then picks again on its own m (its ow range, grouped 1) and n among
//     the compatible kernels, which is how SSE2 and AVX kernels (multiply,
//     then add) end up summing some tasks.
//   - schedule_dot blocks k1 only: blocks of floor(131072 / (kh·kw·bn'·4·bk))
//     ·bk input features, bn' the packed B block (or the task's columns when
//     B is unpacked), each block spanning the whole window; no block when
//     that is 0. A block is one chain per element in (kh, kw, ci) order, or
//     tile_k lanes over ci mod tile_k combined as s0+s1, (s0+s1)+(s2+s3);
//     blocks are added to the output in order (c = block + c).
//   - With tile_k 2 or 4, input features past the last multiple of tile_k
//     are summed after every block, one (kh, kw) at a time: lanes of single
//     products, combined and added to the output.
//   - Tasks split ow and co as choose_split_factors does (ynnSplits).
//
// A depthwise convolution (one input feature per group) is then the plain
// sum of rounded products in window order unless it has 16 or more outputs
// per group (FMA chains), or 8 with a tiny image.

// ynnArch is the instruction set of a YNNPACK dot kernel.
type ynnArch uint8

const (
	ynnArchAVX512 ynnArch = iota
	ynnArchFMA3
	ynnArchAVX2FMA3
	ynnArchAVX  // multiply, then add
	ynnArchAVX2 // multiply, then add
	ynnArchSSE2 // multiply, then add
)

// ynnConvKernel is one YNNPACK f32 dot kernel: block bm×bn×bk, tile
// 1×tn×tk.
type ynnConvKernel struct {
	bm, bn, bk, tn, tk int
	arch               ynnArch
}

// fma reports whether the kernel sums by FMA.
func (k ynnConvKernel) fma() bool { return k.arch <= ynnArchAVX2FMA3 }

// unaligned reports whether the kernel can read B unpacked (its
// dot_flag::unaligned_b): the tile_k 1 kernels but SSE2's.
func (k ynnConvKernel) unaligned() bool { return k.tk == 1 && k.arch != ynnArchSSE2 }

// cost is YNNPACK's estimate_dot_cost, in float32 as it computes it.
func (k ynnConvKernel) cost(m, n, kk int) float32 {
	la := k.bm * k.bk / k.tk
	lb := k.bn * k.bk / (k.tn * k.tk)
	block := float32(la*5+lb*11+9) + float32(k.tn*k.tk)*1e-4
	return float32(ceilDiv(m, k.bm)) * float32(ceilDiv(n, k.bn)) * float32(ceilDiv(kk, k.bk)) * block
}

// ynnConvKernels is jaxlib 0.10.2's f32 dot kernel list in the order
// get_dot_kernel tries them (its reference 1x128x1 kernel, priced 100 times
// over, never wins and is left out).
var ynnConvKernels = []ynnConvKernel{
	{1, 64, 1, 16, 1, ynnArchAVX512},  // dot_fp32_1x64x1_1x16x1_avx512
	{2, 64, 1, 16, 1, ynnArchAVX512},  // dot_fp32_2x64x1_1x16x1_avx512
	{3, 64, 1, 16, 1, ynnArchAVX512},  // dot_fp32_3x64x1_1x16x1_avx512
	{4, 64, 1, 16, 1, ynnArchAVX512},  // dot_fp32_4x64x1_1x16x1_avx512
	{5, 64, 1, 16, 1, ynnArchAVX512},  // dot_fp32_5x64x1_1x16x1_avx512
	{1, 32, 1, 16, 1, ynnArchAVX512},  // dot_fp32_1x32x1_1x16x1_avx512
	{2, 32, 1, 16, 1, ynnArchAVX512},  // dot_fp32_2x32x1_1x16x1_avx512
	{3, 32, 1, 16, 1, ynnArchAVX512},  // dot_fp32_3x32x1_1x16x1_avx512
	{4, 32, 1, 16, 1, ynnArchAVX512},  // dot_fp32_4x32x1_1x16x1_avx512
	{5, 32, 1, 16, 1, ynnArchAVX512},  // dot_fp32_5x32x1_1x16x1_avx512
	{5, 16, 1, 16, 1, ynnArchAVX512},  // dot_fp32_5x16x1_1x16x1_avx512
	{1, 32, 2, 8, 2, ynnArchAVX512},   // dot_fp32_1x32x2_1x8x2_avx512
	{2, 32, 2, 8, 2, ynnArchAVX512},   // dot_fp32_2x32x2_1x8x2_avx512
	{3, 32, 2, 8, 2, ynnArchAVX512},   // dot_fp32_3x32x2_1x8x2_avx512
	{4, 32, 2, 8, 2, ynnArchAVX512},   // dot_fp32_4x32x2_1x8x2_avx512
	{5, 32, 2, 8, 2, ynnArchAVX512},   // dot_fp32_5x32x2_1x8x2_avx512
	{1, 16, 2, 8, 2, ynnArchAVX512},   // dot_fp32_1x16x2_1x8x2_avx512
	{4, 16, 2, 8, 2, ynnArchAVX512},   // dot_fp32_4x16x2_1x8x2_avx512
	{4, 8, 2, 8, 2, ynnArchAVX512},    // dot_fp32_4x8x2_1x8x2_avx512
	{8, 8, 2, 8, 2, ynnArchAVX512},    // dot_fp32_8x8x2_1x8x2_avx512
	{1, 32, 4, 4, 4, ynnArchAVX512},   // dot_fp32_1x32x4_1x4x4_avx512
	{2, 32, 4, 4, 4, ynnArchAVX512},   // dot_fp32_2x32x4_1x4x4_avx512
	{1, 16, 4, 4, 4, ynnArchAVX512},   // dot_fp32_1x16x4_1x4x4_avx512
	{3, 16, 4, 4, 4, ynnArchAVX512},   // dot_fp32_3x16x4_1x4x4_avx512
	{4, 16, 4, 4, 4, ynnArchAVX512},   // dot_fp32_4x16x4_1x4x4_avx512
	{5, 16, 4, 4, 4, ynnArchAVX512},   // dot_fp32_5x16x4_1x4x4_avx512
	{2, 8, 4, 4, 4, ynnArchAVX512},    // dot_fp32_2x8x4_1x4x4_avx512
	{4, 8, 4, 4, 4, ynnArchAVX512},    // dot_fp32_4x8x4_1x4x4_avx512
	{6, 8, 4, 4, 4, ynnArchAVX512},    // dot_fp32_6x8x4_1x4x4_avx512
	{4, 4, 4, 4, 4, ynnArchAVX512},    // dot_fp32_4x4x4_1x4x4_avx512
	{8, 4, 4, 4, 4, ynnArchAVX512},    // dot_fp32_8x4x4_1x4x4_avx512
	{1, 32, 1, 8, 1, ynnArchFMA3},     // dot_fp32_1x32x1_1x8x1_fma3
	{2, 32, 1, 8, 1, ynnArchFMA3},     // dot_fp32_2x32x1_1x8x1_fma3
	{1, 16, 1, 8, 1, ynnArchFMA3},     // dot_fp32_1x16x1_1x8x1_fma3
	{2, 16, 1, 8, 1, ynnArchFMA3},     // dot_fp32_2x16x1_1x8x1_fma3
	{3, 16, 1, 8, 1, ynnArchFMA3},     // dot_fp32_3x16x1_1x8x1_fma3
	{4, 16, 1, 8, 1, ynnArchFMA3},     // dot_fp32_4x16x1_1x8x1_fma3
	{5, 16, 1, 8, 1, ynnArchFMA3},     // dot_fp32_5x16x1_1x8x1_fma3
	{6, 16, 1, 8, 1, ynnArchFMA3},     // dot_fp32_6x16x1_1x8x1_fma3
	{8, 8, 1, 8, 1, ynnArchFMA3},      // dot_fp32_8x8x1_1x8x1_fma3
	{1, 16, 2, 4, 2, ynnArchAVX2FMA3}, // dot_fp32_1x16x2_1x4x2_avx2_fma3
	{2, 16, 2, 4, 2, ynnArchAVX2FMA3}, // dot_fp32_2x16x2_1x4x2_avx2_fma3
	{1, 8, 2, 4, 2, ynnArchAVX2FMA3},  // dot_fp32_1x8x2_1x4x2_avx2_fma3
	{3, 8, 2, 4, 2, ynnArchAVX2FMA3},  // dot_fp32_3x8x2_1x4x2_avx2_fma3
	{4, 8, 2, 4, 2, ynnArchAVX2FMA3},  // dot_fp32_4x8x2_1x4x2_avx2_fma3
	{5, 8, 2, 4, 2, ynnArchAVX2FMA3},  // dot_fp32_5x8x2_1x4x2_avx2_fma3
	{6, 8, 2, 4, 2, ynnArchAVX2FMA3},  // dot_fp32_6x8x2_1x4x2_avx2_fma3
	{4, 4, 2, 4, 2, ynnArchAVX2FMA3},  // dot_fp32_4x4x2_1x4x2_avx2_fma3
	{5, 4, 2, 4, 2, ynnArchAVX2FMA3},  // dot_fp32_5x4x2_1x4x2_avx2_fma3
	{6, 4, 2, 4, 2, ynnArchAVX2FMA3},  // dot_fp32_6x4x2_1x4x2_avx2_fma3
	{8, 4, 2, 4, 2, ynnArchAVX2FMA3},  // dot_fp32_8x4x2_1x4x2_avx2_fma3
	{1, 32, 1, 8, 1, ynnArchAVX},      // dot_fp32_1x32x1_1x8x1_avx
	{2, 32, 1, 8, 1, ynnArchAVX},      // dot_fp32_2x32x1_1x8x1_avx
	{1, 16, 1, 8, 1, ynnArchAVX},      // dot_fp32_1x16x1_1x8x1_avx
	{2, 16, 1, 8, 1, ynnArchAVX},      // dot_fp32_2x16x1_1x8x1_avx
	{3, 16, 1, 8, 1, ynnArchAVX},      // dot_fp32_3x16x1_1x8x1_avx
	{4, 16, 1, 8, 1, ynnArchAVX},      // dot_fp32_4x16x1_1x8x1_avx
	{4, 8, 1, 8, 1, ynnArchAVX},       // dot_fp32_4x8x1_1x8x1_avx
	{6, 8, 1, 8, 1, ynnArchAVX},       // dot_fp32_6x8x1_1x8x1_avx
	{8, 8, 1, 8, 1, ynnArchAVX},       // dot_fp32_8x8x1_1x8x1_avx
	{1, 16, 2, 4, 2, ynnArchAVX2},     // dot_fp32_1x16x2_1x4x2_avx2
	{2, 16, 2, 4, 2, ynnArchAVX2},     // dot_fp32_2x16x2_1x4x2_avx2
	{1, 8, 2, 4, 2, ynnArchAVX2},      // dot_fp32_1x8x2_1x4x2_avx2
	{3, 8, 2, 4, 2, ynnArchAVX2},      // dot_fp32_3x8x2_1x4x2_avx2
	{4, 8, 2, 4, 2, ynnArchAVX2},      // dot_fp32_4x8x2_1x4x2_avx2
	{5, 8, 2, 4, 2, ynnArchAVX2},      // dot_fp32_5x8x2_1x4x2_avx2
	{6, 8, 2, 4, 2, ynnArchAVX2},      // dot_fp32_6x8x2_1x4x2_avx2
	{4, 4, 2, 4, 2, ynnArchAVX2},      // dot_fp32_4x4x2_1x4x2_avx2
	{5, 4, 2, 4, 2, ynnArchAVX2},      // dot_fp32_5x4x2_1x4x2_avx2
	{6, 4, 2, 4, 2, ynnArchAVX2},      // dot_fp32_6x4x2_1x4x2_avx2
	{8, 4, 2, 4, 2, ynnArchAVX2},      // dot_fp32_8x4x2_1x4x2_avx2
	{1, 16, 1, 4, 1, ynnArchSSE2},     // dot_fp32_1x16x1_1x4x1_sse2
	{2, 16, 1, 4, 1, ynnArchSSE2},     // dot_fp32_2x16x1_1x4x1_sse2
	{3, 16, 1, 4, 1, ynnArchSSE2},     // dot_fp32_3x16x1_1x4x1_sse2
	{1, 8, 1, 4, 1, ynnArchSSE2},      // dot_fp32_1x8x1_1x4x1_sse2
	{2, 8, 1, 4, 1, ynnArchSSE2},      // dot_fp32_2x8x1_1x4x1_sse2
	{3, 8, 1, 4, 1, ynnArchSSE2},      // dot_fp32_3x8x1_1x4x1_sse2
	{4, 8, 1, 4, 1, ynnArchSSE2},      // dot_fp32_4x8x1_1x4x1_sse2
	{4, 4, 1, 4, 1, ynnArchSSE2},      // dot_fp32_4x4x1_1x4x1_sse2
	{6, 4, 1, 4, 1, ynnArchSSE2},      // dot_fp32_6x4x1_1x4x1_sse2
	{8, 4, 1, 4, 1, ynnArchSSE2},      // dot_fp32_8x4x1_1x4x1_sse2
}

// ynnConvSelect is get_dot_kernel: the first cheapest kernel the host runs
// with tile_k tk (any when 0) that can read B packed in blocks of blockN
// columns (any when 0; kernels reading B unpacked read any), restricted to
// those when unaligned.
func ynnConvSelect(avx512 bool, m, n, k, tk, blockN int, unaligned bool) (best ynnConvKernel, cost float32) {
	cost = float32(math.Inf(1))
	for _, kn := range ynnConvKernels {
		if (kn.arch == ynnArchAVX512 && !avx512) || (unaligned && !kn.unaligned()) || (tk != 0 && kn.tk != tk) ||
			(!kn.unaligned() && blockN > 0 && blockN%kn.tn != 0) {
			continue
		}
		if c := kn.cost(m, n, k); c < cost {
			best, cost = kn, c
		}
	}
	return best, cost
}

// convYnnTask is one task of a convolution's YNNPACK dot: output columns
// (ow) [i0,i1) — all of them for a grouped convolution — and output
// features [j0,j1) of a group, summed with tile_k tk (FMA or multiply-add)
// in blocks of kstep input features (0: one block).
type convYnnTask struct {
	i0, i1, j0, j1 int
	tk, kstep      int
	fma            bool
}

// convYnnPlanF32 is YNNPACK's plan for an f32 convolution of nb images of
// oh×ow outputs, a window of win (kh·kw) positions, cg input and og output
// features per group (grouped: more than one group).
func convYnnPlanF32(nb, oh, ow, win, cg, og int, grouped, avx512 bool) []convYnnTask {
	const elem = 4
	kern, cost := ynnConvSelect(avx512, 2048, og, cg, 0, 0, false)
	unp, ucost := kern, cost
	if kern.tk != 1 {
		unp, ucost = ynnConvSelect(avx512, 2048, og, cg, 1, 0, true)
	}
	smallA := ceilDiv(ow, unp.bm)*nb*oh <= 10
	if grouped {
		smallA = nb*oh*ow <= 10
	}
	// A grouped convolution with one output feature per group always packs
	// B (fitted: as if its filter transpose were folded into the packing).
	pack := (grouped && og == 1) || !(unp.unaligned() && ucost <= 2*cost && smallA)
	if !pack {
		kern = unp
	}
	k := win * cg
	var pbn, splitBN, kPadded int
	if pack {
		pbn = kern.bn * max(1, ynnCache/elem/(kern.bn*k))
		pbn = max(kern.tn, min(ceilDiv(og, kern.tn)*kern.tn, pbn))
		splitBN = pbn
		kPadded = ceilDiv(cg, kern.tk) * kern.tk * win
	} else {
		splitBN = max(64/elem, kern.bn)
		kPadded = k
	}
	m := ow
	if grouped {
		m = 1
	}
	sm, sn := ynnSplits(m, og, kPadded, splitBN)
	if pack {
		sn = max(pbn, sn/pbn*pbn)
	}
	var tasks []convYnnTask
	for j0 := 0; j0 < og; j0 += sn {
		for i0 := 0; i0 < m; i0 += sm {
			tm, tn := min(sm, m-i0), min(sn, og-j0)
			var rk ynnConvKernel
			bn := pbn
			if pack {
				rk, _ = ynnConvSelect(avx512, tm, tn, cg-cg%kern.tk, kern.tk, pbn, false)
			} else {
				rk, _ = ynnConvSelect(avx512, tm, tn, cg, 1, tn, true)
				bn = tn
			}
			kstep := ynnCache / (win * bn * elem * rk.bk) * rk.bk
			t := convYnnTask{i0, i0 + tm, j0, j0 + tn, rk.tk, kstep, rk.fma()}
			if grouped {
				t.i0, t.i1 = 0, ow
			}
			tasks = append(tasks, t)
		}
	}
	return tasks
}

type convYnnKey struct {
	nb, oh, ow, win, cg, og int
	grouped, avx512         bool
}

var convYnnPlans sync.Map // convYnnKey -> []convYnnTask

// convYnnPlanKept is convYnnPlanF32, each plan made once (plans are read
// only).
func convYnnPlanKept(key convYnnKey) []convYnnTask {
	if t, ok := convYnnPlans.Load(key); ok {
		return t.([]convYnnTask)
	}
	t := convYnnPlanF32(key.nb, key.oh, key.ow, key.win, key.cg, key.og, key.grouped, key.avx512)
	convYnnPlans.Store(key, t)
	return t
}

// convYnn is a convolution routed to YNNPACK's order: its plan on this
// host, and the output width its tasks split.
type convYnn struct {
	tasks []convYnnTask
	ow    int
}

// convYnnRoute decides whether XLA:CPU would give convolution in (operand
// dims ldims, rdims; element types lt, rt, result ot) to YNNPACK, returning
// its plan, or nil to keep the im2col GEMM's order. Only the assembly FMA
// kernels can run YNNPACK's chains.
func convYnnRoute(in *hlo.Instruction, p *convPlan, ldims, rdims []int64, lt, rt, ot dtype.Type) *convYnn {
	if ynnISA == 0 || ynnOrderDisabled || convYnnOff || in == nil || in.ConvDims == nil {
		return nil
	}
	switch {
	case lt == dtype.F32 && rt == dtype.F32 && ot == dtype.F32:
	case lt == rt && (lt == dtype.BF16 || lt == dtype.F16) && (ot == lt || ot == dtype.F32):
		// converted to f32 around an f32 convolution
	default:
		return nil
	}
	d := in.ConvDims
	if len(in.Window) != 2 || len(d.InputSpatial) != 2 || p.batchGroups || p.live != nil || max(p.c, p.o) <= 16 ||
		p.nb*p.p*p.o == 0 || p.w*p.cg == 0 {
		return nil
	}
	var outS [2]int
	for i, wd := range in.Window {
		inSize, winSize, outSize := ldims[d.InputSpatial[i]], rdims[d.KernelSpatial[i]], in.Shape.Dims[d.OutputSpatial[i]]
		if wd.BaseDilation > 1 || wd.WindowReversal || outSize > inSize || winSize > inSize {
			return nil
		}
		outS[i] = int(outSize)
	}
	key := convYnnKey{p.nb, outS[0], outS[1], p.w, p.cg, p.og, p.groups > 1, ynnISA == 512}
	tasks := convYnnPlanKept(key)
	for _, t := range tasks {
		if !t.fma && t.tk != 1 {
			return nil // AVX2 lanes without FMA: never picked (an FMA twin comes first), not reproduced
		}
	}
	return &convYnn{tasks: tasks, ow: outS[1]}
}

// convYnnOff turns the YNNPACK order of convolutions off (tests).
var convYnnOff bool

// convYnnRun is a run of tasks summing alike: output columns [i0,i1),
// group features [j0,j1).
type convYnnRun = convYnnTask

// runs merges the plan's tasks into runs: one when every task sums alike
// (task bounds change no element's sum), else the tasks of each feature
// range (merged when their column ranges agree) as they stand.
func (y *convYnn) runs(og int) []convYnnRun {
	t0 := y.tasks[0]
	alike := func(a, b convYnnTask) bool { return a.tk == b.tk && a.kstep == b.kstep && a.fma == b.fma }
	uniform := true
	for _, t := range y.tasks {
		uniform = uniform && alike(t, t0)
	}
	if uniform {
		t0.i0, t0.i1, t0.j0, t0.j1 = 0, y.ow, 0, og
		return []convYnnRun{t0}
	}
	var out []convYnnRun
	for _, t := range y.tasks {
		if n := len(out) - 1; n >= 0 && out[n].j0 == t.j0 && out[n].j1 == t.j1 && out[n].i1 == t.i0 && alike(out[n], t) {
			out[n].i1 = t.i1
			continue
		}
		out = append(out, t)
	}
	return out
}

// convolveYnnF32 computes convolution p of lhs and rhs (f32, dims ldims and
// rhs dims rdims) in YNNPACK's order y.
func convolveYnnF32(par int, p *convPlan, y *convYnn, ldims, rdims []int64, lhs, rhs []float32) []float32 {
	out := storageOf[float32](p.nb * p.p * p.o) // [nb, P, O]
	runs := y.runs(p.og)
	p.rowRuns() // im2col rows as runs of the input (identity layouts)
	if len(runs) == 1 && p.cg == 1 && p.og == 1 {
		x, releaseX := permuteScratch(par, lhs, ldims, p.lhsPerm) // [N, S, C]
		k, releaseK := permuteScratch(par, rhs, rdims, p.rhsPerm) // [W, cg, O]
		done := convYnnDepthwise(par, p, runs[0], x, k, out)
		releaseX()
		releaseK()
		if done {
			return permuteToPar(par, out, p.outDims, p.outPerm)
		}
	}
	// B's rows are read from rhs where they lie, and a large input that is
	// not laid out [N, S, C] is gathered image by image as row blocks need
	// it: a weight gradient's operands are both activations, and permuted
	// copies of them beside the packed B had pushed conv2_wgrad's peak RSS
	// over issue 12's bound.
	x := newConvYnnInput(par, p, lhs, ldims)
	defer x.release()
	k := convYnnKernelRows{rhs, stridedOffsets(rdims, p.rhsPerm[:len(p.rhsPerm)-1]), int(tensor.Strides(rdims)[p.rhsPerm[len(p.rhsPerm)-1]])}
	for q := 0; q < p.groups; q++ {
		for _, r := range runs {
			convYnnRunGroup(par, p, y.ow, q, r, x, k, out)
		}
	}
	return permuteToPar(par, out, p.outDims, p.outPerm)
}

// stridedOffsets lists the offsets, in a row-major tensor of dims, of every
// index of the dims perm names, row-major over them (perm's last varying
// fastest).
func stridedOffsets(dims []int64, perm []int) []int {
	strides := tensor.Strides(dims)
	off := []int{0}
	for _, d := range perm {
		next := make([]int, 0, len(off)*int(dims[d]))
		for _, o := range off {
			for i := int64(0); i < dims[d]; i++ {
				next = append(next, o+int(i*strides[d]))
			}
		}
		off = next
	}
	return off
}

// convYnnGatherMin is the input size (elements) from which an input not
// laid out [N, S, C] is gathered per row block instead of permuted whole.
var convYnnGatherMin = 1 << 20 // a variable for the tests

// convYnnInput is the convolution's input as [N, S, C] images: x itself
// (lhs, or its permuted copy), or, for a large lhs in another layout, lhs
// and where each image's elements lie in it.
type convYnnInput struct {
	x       []float32
	release func()
	lhs     []float32
	nStride int   // offset of image n: n*nStride
	sOff    []int // offset of spatial position s within an image
	cStride int   // feature stride
	imgLen  int   // elements per image (S*C)
}

func newConvYnnInput(par int, p *convPlan, lhs []float32, ldims []int64) *convYnnInput {
	last := len(p.lhsPerm) - 1
	if permuteIsIdentity(ldims, p.lhsPerm) || len(lhs) < convYnnGatherMin {
		x, release := permuteScratch(par, lhs, ldims, p.lhsPerm)
		return &convYnnInput{x: x, release: release}
	}
	strides := tensor.Strides(ldims)
	return &convYnnInput{release: func() {}, lhs: lhs, nStride: int(strides[p.lhsPerm[0]]),
		sOff: stridedOffsets(ldims, p.lhsPerm[1:last]), cStride: int(strides[p.lhsPerm[last]]),
		imgLen: p.inSpatial * p.c}
}

// images returns a slice holding images [nLo, nHi) in [N, S, C] order and
// the image number its start stands for (the whole x and 0, or buf,
// regrown as needed, with the images gathered into it and nLo).
func (in *convYnnInput) images(nLo, nHi int, buf *[]float32) ([]float32, int) {
	if in.x != nil {
		return in.x, 0
	}
	need := (nHi - nLo) * in.imgLen
	if cap(*buf) < need {
		*buf = make([]float32, need)
	}
	dst := (*buf)[:need]
	c := in.imgLen / max(len(in.sOff), 1)
	// Image innermost: a weight gradient's input has the batch dim
	// innermost, so consecutive images are consecutive in lhs.
	for si, so := range in.sOff {
		for f := range c {
			src := in.lhs[nLo*in.nStride+so+f*in.cStride:]
			at := si*c + f
			for i := range nHi - nLo {
				dst[i*in.imgLen+at] = src[i*in.nStride]
			}
		}
	}
	return dst, nLo
}

// convYnnKernelRows locates the rows of the kernel operand viewed as
// [W, cg, O] (its window dims, input feature, output feature) in rhs
// without permuting it: row s starts at rowOff[s], its columns cs apart.
type convYnnKernelRows struct {
	rhs    []float32
	rowOff []int
	cs     int
}

// gather copies the rows src (k rows), columns [col0, col0+nc), into the
// row-major dst.
func (k convYnnKernelRows) gather(dst []float32, src []int, col0, nc int) {
	for kk, s := range src {
		row := dst[kk*nc : (kk+1)*nc]
		base := k.rowOff[s] + col0*k.cs
		if k.cs == 1 {
			copy(row, k.rhs[base:])
			continue
		}
		for j := range row {
			row[j] = k.rhs[base+j*k.cs]
		}
	}
}

// convYnnLayout orders a run's im2col columns (window position w, group
// input feature f at w*cg+f) for YNNPACK's sums: block by block of input
// features, within a block lane by lane (f mod tk), within a lane in
// window then feature order; the tail features (past the last multiple of
// tk) last, window position by window position.
type convYnnLayout struct {
	win, cg, tk int
	bounds      [][2]int       // each block's features [lo, hi)
	blocks      [][]convYnnSeg // each block's lanes (one for tk 1)
	tail        int            // tail features per window position
	tailAt      int            // position of the first tail column
	src         []int          // src[kk]: the im2col column at position kk
	identity    bool           // src is the identity
}

// convYnnSeg is one lane's (or a tk 1 block's) columns [at, at+n).
type convYnnSeg struct{ at, n int }

func newConvYnnLayout(win, cg, tk, kstep int) *convYnnLayout {
	main := cg - cg%tk
	if kstep <= 0 || kstep > main {
		kstep = main
	}
	l := &convYnnLayout{win: win, cg: cg, tk: tk, src: make([]int, 0, win*cg), tail: cg - main}
	for lo := 0; lo < main; lo += kstep {
		hi := min(main, lo+kstep)
		var segs []convYnnSeg
		for r := 0; r < tk; r++ {
			at := len(l.src)
			for w := 0; w < win; w++ {
				for f := lo + r; f < hi; f += tk {
					l.src = append(l.src, w*cg+f)
				}
			}
			segs = append(segs, convYnnSeg{at, len(l.src) - at})
		}
		l.bounds = append(l.bounds, [2]int{lo, hi})
		l.blocks = append(l.blocks, segs)
	}
	l.tailAt = len(l.src)
	for w := 0; w < win; w++ {
		for f := main; f < cg; f++ {
			l.src = append(l.src, w*cg+f)
		}
	}
	l.identity = true
	for i, s := range l.src {
		if s != i {
			l.identity = false
			break
		}
	}
	return l
}

// im2colRow writes row r of group (n0, c0)'s im2col matrix into dst in the
// layout's column order.
func (l *convYnnLayout) im2colRow(p *convPlan, dst, x []float32, n0, c0, r int) {
	if l.identity {
		im2colRow(p, dst, x, n0, c0, r, 0, len(l.src))
		return
	}
	n, pos := r/p.p, r%p.p
	img := x[(n0+n)*p.inSpatial*p.c+c0:]
	tab := p.tab[pos*p.w : (pos+1)*p.w]
	tk := l.tk
	for bi, b := range l.bounds {
		segs := l.blocks[bi]
		cnt := (b[1] - b[0]) / tk // every block holds a multiple of tk features
		for w, off := range tab {
			// Window position w's features of the block, dealt to the lanes.
			d0 := dst[segs[0].at+w*cnt : segs[0].at+(w+1)*cnt]
			if off < 0 {
				for _, s := range segs {
					clear(dst[s.at+w*cnt : s.at+(w+1)*cnt])
				}
				continue
			}
			run := img[int(off)*p.c+b[0] : int(off)*p.c+b[1]]
			switch tk {
			case 1:
				copy(d0, run)
			case 2:
				d1 := dst[segs[1].at+w*cnt : segs[1].at+(w+1)*cnt]
				for j := range d0 {
					d0[j], d1[j] = run[2*j], run[2*j+1]
				}
			default:
				d1 := dst[segs[1].at+w*cnt : segs[1].at+(w+1)*cnt]
				d2 := dst[segs[2].at+w*cnt : segs[2].at+(w+1)*cnt]
				d3 := dst[segs[3].at+w*cnt : segs[3].at+(w+1)*cnt]
				for j := range d0 {
					q := run[4*j : 4*j+4]
					d0[j], d1[j], d2[j], d3[j] = q[0], q[1], q[2], q[3]
				}
			}
		}
	}
	at := l.tailAt
	if t := l.tail; t > 0 {
		for _, off := range tab {
			seg := dst[at : at+t]
			at += t
			if off < 0 {
				clear(seg)
			} else {
				copy(seg, img[int(off)*p.c+l.cg-t:])
			}
		}
	}
}

// sliceKC returns the GEMM kernel whose kc slices are the layout's blocks
// when every block is one FMA chain no deeper than twice the kernel's own
// slices (the kernel then sums the whole product in YNNPACK's order: per
// slice a chain from zero added to C), else nil.
func (l *convYnnLayout) sliceKC(r convYnnRun) *gemmKernel[float32] {
	kn := kernelFor[float32]()
	if !r.fma || r.tk != 1 || l.tail != 0 {
		return nil
	}
	d := l.blocks[0][0].n
	if d > 2*kn.kc && kn.chain != nil {
		return nil
	}
	return kn.withKC(d)
}

// convYnnGEMM is one product of a run's tiles, its B packed once: the
// columns [at, at+n) of the layout-ordered im2col rows times the same rows
// of B, added to a zeroed C as each element's one FMA chain (or, for the
// whole-product kernel of sliceKC, as its blocks' chains in order).
type convYnnGEMM struct {
	kn    *gemmKernel[float32]
	bp    []float32
	at, n int
}

func newConvYnnGEMM(kn *gemmKernel[float32], k convYnnKernelRows, rows []int, col0, nc, at, n int) convYnnGEMM {
	if kn == nil {
		kn = convYnnSegKernel(n)
	}
	return convYnnGEMM{kn, kn.packWholeRows(k.rhs, k.rowOff, rows[at:at+n], k.cs, col0, nc), at, n}
}

// convYnnSegKernel is the kernel summing a block or lane of n columns as
// one FMA chain per element: the chain kernel continuing each element's
// chain across its kc slices, or one slice n deep.
func convYnnSegKernel(n int) *gemmKernel[float32] {
	kn := kernelFor[float32]()
	if n > kn.kc && kn.chain != nil {
		return kn.chain
	}
	return kn.withKC(n)
}

// run adds the product for m rows of a (row stride lda) to dst (m×nc).
func (g convYnnGEMM) run(m, nc int, a []float32, lda int, dst []float32) {
	g.kn.runPrepacked(1, m, nc, g.n, a[g.at:], gemmLayout{m * lda, lda, 1}, g.bp, dst)
}

// convYnnRunGroup computes run r of group q into out.
func convYnnRunGroup(par int, p *convPlan, ow, q int, r convYnnRun, x *convYnnInput, k convYnnKernelRows, out []float32) {
	lay := newConvYnnLayout(p.w, p.cg, r.tk, r.kstep)
	depth := p.w * p.cg
	nc := r.j1 - r.j0
	col0 := q*p.og + r.j0
	if x.x == nil && lay.identity && r.i0 == 0 && r.i1 == ow && nc == p.o && depth*nc >= convYnnChunkMin {
		// A weight gradient's: its input gathered per image, B as large.
		kn := lay.sliceKC(r)
		if kn == nil && r.fma && r.tk == 1 && lay.tail == 0 && len(lay.blocks) == 1 {
			kn = convYnnSegKernel(depth) // one FMA chain over all of K
		}
		if kn != nil {
			convYnnWholeByImages(par, p, q, kn, x, k, out, depth)
			return
		}
	}
	// The products, B packed once (from rhs, rows in the layout's order):
	// the whole product in one when its blocks are the kernel's slices,
	// else one per block (tk 1) or lane.
	var whole *convYnnGEMM
	var segs [][]convYnnGEMM
	if kn := lay.sliceKC(r); kn != nil {
		g := newConvYnnGEMM(kn, k, lay.src, col0, nc, 0, depth)
		whole = &g
	} else if r.fma {
		for _, blk := range lay.blocks {
			var gs []convYnnGEMM
			for _, s := range blk {
				if s.n > 0 {
					gs = append(gs, newConvYnnGEMM(nil, k, lay.src, col0, nc, s.at, s.n))
				} else {
					gs = append(gs, convYnnGEMM{})
				}
			}
			segs = append(segs, gs)
		}
	}
	// Multiply-add tasks and tail features read B's rows unpacked, in the
	// layout's order; FMA blocks only their packed copies.
	var bTiles []float32
	if whole == nil && (!r.fma || lay.tail > 0) {
		bTiles = storageForWriting[float32](depth * nc)
		k.gather(bTiles, lay.src, col0, nc)
	}
	// B's copies are as large as an activation for a weight gradient: the
	// next allocation of their size takes them back.
	defer func() {
		releaseStorage(bTiles)
		if whole != nil {
			releaseStorage(whole.bp)
		}
		for _, gs := range segs {
			for _, g := range gs {
				releaseStorage(g.bp)
			}
		}
	}()
	n0, c0 := p.groupStart(q)
	width := r.i1 - r.i0
	rows := p.nb * p.p / ow * width
	rowOf := func(i int) int { return i }
	if width != ow {
		rowOf = func(i int) int { return i/width*ow + r.i0 + i%width }
	}
	// The whole output's rows when the run covers them all: C is out.
	direct := width == ow && nc == p.o
	rb := min(rows, max(12, convBlockElems/max(depth, 1)/12*12))
	if whole == nil && r.tk > 1 {
		// Each lane's sums stay in cache until they are combined.
		rb = min(rb, max(12, (1<<16)/max(nc, 1)/12*12))
	}
	blocks := ceilDiv(rows, rb)
	dynamicFor(par, blocks, func(next func() int) {
		a := make([]float32, rb*depth)
		var c []float32
		if !direct {
			c = make([]float32, rb*nc)
		}
		sc := &convYnnScratch{}
		var xbuf []float32
		for blk := next(); blk < blocks; blk = next() {
			i0, i1 := blk*rb, min(rows, (blk+1)*rb)
			m := i1 - i0
			xs, base := x.images(n0+rowOf(i0)/p.p, n0+rowOf(i1-1)/p.p+1, &xbuf)
			for i := i0; i < i1; i++ {
				lay.im2colRow(p, a[(i-i0)*depth:(i-i0+1)*depth], xs, n0-base, c0, rowOf(i))
			}
			cb := c[:min(len(c), m*nc)]
			if direct {
				cb = out[i0*nc : i1*nc]
			}
			if whole != nil {
				clear(cb)
				whole.run(m, nc, a, depth, cb)
			} else {
				convYnnTile(lay, r, segs, m, nc, depth, a, bTiles, cb, sc)
			}
			if !direct {
				for i := i0; i < i1; i++ {
					o := rowOf(i)*p.o + col0
					copy(out[o:o+nc], cb[(i-i0)*nc:(i-i0+1)*nc])
				}
			}
		}
	})
}

// convYnnChunkMin is the size of B (elements) from which a convolution
// whose input is gathered per image (a weight gradient) runs in K chunks
// (convYnnWholeByImages) instead of with all of B packed.
var convYnnChunkMin = 1 << 20 // variables for the tests

// convYnnWholeByImages computes group q of a convolution whose whole
// product runs on kernel kn (one FMA chain per K block, blocks added to C
// in order, sliceKC; or one chain over all of K, the chain kernel), its
// im2col columns in natural order and its input gathered per image, as
// convYnnRunGroup does with B packed whole, but without that copy: each
// worker takes a few images at a time, gathers them, and for each K chunk
// (whole kc slices) packs that chunk of B and runs it on the images' output
// rows. The slices reach C in the same order (the chain kernel picks each
// element's chain up from C), so every element's sum is the same.
func convYnnWholeByImages(par int, p *convPlan, q int, kn *gemmKernel[float32], x *convYnnInput, k convYnnKernelRows, out []float32, depth int) {
	nc := p.o
	chunk := max(1, convYnnChunkB/(nc*kn.kc)) * kn.kc
	images := max(1, min(p.nb/(2*par), convYnnImagesElems/max(x.imgLen, 1)))
	groups := ceilDiv(p.nb, images)
	rb := max(12, convBlockElems/chunk/12*12)
	n0, c0 := p.groupStart(q)
	cols := make([]int, depth)
	for i := range cols {
		cols[i] = i
	}
	dynamicFor(par, groups, func(next func() int) {
		var xbuf []float32
		bp := make([]float32, chunk*roundUp(nc, kn.nr))
		a := make([]float32, rb*chunk)
		for g := next(); g < groups; g = next() {
			img0, img1 := g*images, min(p.nb, (g+1)*images)
			xs, base := x.images(n0+img0, n0+img1, &xbuf)
			r0, r1 := img0*p.p, img1*p.p
			clear(out[r0*nc : r1*nc])
			for k0 := 0; k0 < depth; k0 += chunk {
				kd := min(chunk, depth-k0)
				kn.packRowsInto(bp, k.rhs, k.rowOff, cols[k0:k0+kd], k.cs, 0, nc)
				for i0 := r0; i0 < r1; i0 += rb {
					m := min(rb, r1-i0)
					for i := range m {
						im2colRow(p, a[i*kd:(i+1)*kd], xs, n0-base, c0, i0+i, k0, k0+kd)
					}
					kn.runPrepacked(1, m, nc, kd, a, gemmLayout{m * kd, kd, 1}, bp, out[i0*nc:(i0+m)*nc])
				}
			}
		}
	})
}

// convYnnChunkB is the size of a K chunk of packed B in
// convYnnWholeByImages (elements, rounded to whole blocks), and
// convYnnImagesElems the most input a worker gathers at a time.
var (
	convYnnChunkB      = 1 << 16
	convYnnImagesElems = 1 << 19
)

// convYnnScratch is a worker's buffers for convYnnTile.
type convYnnScratch struct {
	t    []float32
	lane [4][]float32
	acc  []float32
}

// convYnnTile sums m rows of the layout-ordered im2col matrix a (row
// stride lda) times b (the layout's rows, nc columns; segs its packed
// blocks and lanes) into c, every element set, in run r's order.
func convYnnTile(lay *convYnnLayout, r convYnnRun, segs [][]convYnnGEMM, m, nc, lda int, a, b, c []float32, sc *convYnnScratch) {
	first := true
	for bi, blk := range lay.blocks {
		switch {
		case !r.fma:
			convYnnMulAdd(m, nc, blk[0], a, lda, b, c, first, sc)
		case r.tk == 1:
			dst := c
			if !first {
				sc.t = grow(sc.t, len(c))
				dst = sc.t[:len(c)]
			}
			clear(dst)
			segs[bi][0].run(m, nc, a, lda, dst)
			if !first {
				addRow(c, dst)
			}
		default:
			lanes := make([][]float32, r.tk)
			for l, s := range blk {
				sc.lane[l] = grow(sc.lane[l], len(c))
				lanes[l] = sc.lane[l][:len(c)]
				clear(lanes[l])
				if s.n > 0 {
					segs[bi][l].run(m, nc, a, lda, lanes[l])
				}
			}
			ynnCombine(r.tk, lanes, c, first)
		}
		first = false
	}
	if lay.tail > 0 {
		for w := 0; w < lay.win; w++ {
			at := lay.tailAt + w*lay.tail
			convYnnTail(lay.tail, r.tk, m, nc, a[at:], lda, b[at*nc:], c, first)
			first = false
		}
	}
}

// convYnnMulAdd is a block on a kernel without FMA: each element's chain
// from zero of rounded products over segment s, set into c (first block) or
// added to it.
func convYnnMulAdd(m, nc int, s convYnnSeg, a []float32, lda int, b, c []float32, first bool, sc *convYnnScratch) {
	sc.acc = grow(sc.acc, nc)
	acc := sc.acc[:nc]
	for i := 0; i < m; i++ {
		clear(acc)
		for kk, av := range a[i*lda+s.at : i*lda+s.at+s.n] {
			mulAddRow(acc, av, b[(s.at+kk)*nc:(s.at+kk+1)*nc])
		}
		ci := c[i*nc : (i+1)*nc]
		if first {
			copy(ci, acc)
		} else {
			addRow(ci, acc)
		}
	}
	sseAfterAVX()
}

// convYnnTail adds one window position's tail features (t of them, the
// columns of a and rows of b): lanes of single products (an FMA from zero:
// the rounded product, +0 for a zero one), combined as the kernel's lanes
// are, the sum added to c (or setting it when nothing came before).
func convYnnTail(t, tk, m, nc int, a []float32, lda int, b, c []float32, first bool) {
	for i := 0; i < m; i++ {
		tailRow(t, tk, a[i*lda:i*lda+t], b, nc, c[i*nc:(i+1)*nc], first)
	}
	sseAfterAVX()
}

// convYnnDepthwise computes a depthwise convolution (one input and one
// output feature per group) summed as run r says, with the features as
// vector lanes; false when it does not apply here.
func convYnnDepthwise(par int, p *convPlan, r convYnnRun, x, k, out []float32) bool {
	if r.fma && r.tk == 1 {
		// FMA chains over the window from zero: depthwiseDirectF32's sum.
		o, ok := depthwiseDirectF32(par, p, x, k)
		if ok {
			copy(out, o)
		}
		return ok
	}
	// Multiply-add kernels, and the tail lanes of tk 2/4 kernels (every
	// feature is a tail one), sum rounded products in window order.
	return depthwiseSeqF32(par, p, x, k, out)
}
