//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

// depthwiseDirectF32 is convolveDepthwise for f32 with one output feature
// per group, computed directly with the channels as vector lanes instead of
// one M×W by W×1 GEMM per channel (a product one column wide, which spends
// its time packing). Each output element is the FMA chain the assembly GEMM
// kernels compute for it: the accumulator starts at +0, takes
// x·k + acc for each window position in order (an input position in the
// padding contributes 0·k, as im2col's zero does), and is then added to
// the cleared result, +0 + acc. The operands sit where the GEMM has them
// (x as A, k as B), so NaN payloads propagate the same way. It applies
// where the GEMM is those kernels and the window fits one kc slice.
func depthwiseDirectF32(par int, p *convPlan, x, k []float32) ([]float32, bool) {
	if len(simdF32) == 0 || p.og != 1 || p.cg != 1 || p.batchGroups || p.w > simdF32[0].kc || p.live != nil {
		return nil, false
	}
	rows, c, w := p.nb*p.p, p.c, p.w
	out := make([]float32, rows*p.o)
	wide := archsimd.X86.AVX512()
	parallelForWork(rows, rows*c*w, func(lo, hi int) {
		var xt, kt, ot [16]float32
		for r := lo; r < hi; r++ {
			n, pos := r/p.p, r%p.p
			img := x[n*p.inSpatial*c:]
			tab := p.tab[pos*w : (pos+1)*w]
			o := out[r*c : (r+1)*c]
			q := 0
			if wide {
				for ; q+16 <= c; q += 16 {
					acc := archsimd.BroadcastFloat32x16(0)
					for wi, off := range tab {
						kv := archsimd.LoadFloat32x16((*[16]float32)(k[wi*c+q:]))
						xv := archsimd.BroadcastFloat32x16(0)
						if off >= 0 {
							xv = archsimd.LoadFloat32x16((*[16]float32)(img[int(off)*c+q:]))
						}
						acc = xv.MulAdd(kv, acc)
					}
					acc.Add(archsimd.BroadcastFloat32x16(0)).Store((*[16]float32)(o[q:]))
				}
			}
			for ; q+8 <= c; q += 8 {
				acc := archsimd.BroadcastFloat32x8(0)
				for wi, off := range tab {
					kv := archsimd.LoadFloat32x8((*[8]float32)(k[wi*c+q:]))
					xv := archsimd.BroadcastFloat32x8(0)
					if off >= 0 {
						xv = archsimd.LoadFloat32x8((*[8]float32)(img[int(off)*c+q:]))
					}
					acc = xv.MulAdd(kv, acc)
				}
				acc.Add(archsimd.BroadcastFloat32x8(0)).Store((*[8]float32)(o[q:]))
			}
			if q < c {
				// The last channels through an 8-lane vector of copies.
				tail := c - q
				acc := archsimd.BroadcastFloat32x8(0)
				for wi, off := range tab {
					copy(kt[:tail], k[wi*c+q:wi*c+c])
					clear(xt[:8])
					if off >= 0 {
						copy(xt[:tail], img[int(off)*c+q:int(off)*c+c])
					}
					xv := archsimd.LoadFloat32x8((*[8]float32)(xt[:8]))
					acc = xv.MulAdd(archsimd.LoadFloat32x8((*[8]float32)(kt[:8])), acc)
				}
				acc.Add(archsimd.BroadcastFloat32x8(0)).Store((*[8]float32)(ot[:8]))
				copy(o[q:], ot[:tail])
			}
		}
		archsimd.ClearAVXUpperBits()
	})
	return out, true
}
