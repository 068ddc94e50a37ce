//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

// depthwiseSeqF32 is a depthwise convolution (one input and one output
// feature per group, f32) summed as YNNPACK's multiply-add kernels sum it:
// each output element is +0 plus the rounded product x·k of each window
// position in order, each sum rounded (no FMA); a position in the padding
// contributes 0·k. The features are the vector lanes. False when it does
// not apply (no vector kernels, or input dilation).
func depthwiseSeqF32(par int, p *convPlan, x, k, out []float32) bool {
	if len(simdF32) == 0 || p.og != 1 || p.cg != 1 || p.batchGroups || p.live != nil {
		return false
	}
	rows, c, w := p.nb*p.p, p.c, p.w
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
						acc = acc.Add(xv.Mul(kv))
					}
					acc.Store((*[16]float32)(o[q:]))
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
					acc = acc.Add(xv.Mul(kv))
				}
				acc.Store((*[8]float32)(o[q:]))
			}
			if q < c {
				// The last features through an 8-lane vector of copies.
				tail := c - q
				acc := archsimd.BroadcastFloat32x8(0)
				for wi, off := range tab {
					copy(kt[:tail], k[wi*c+q:wi*c+c])
					clear(xt[:8])
					if off >= 0 {
						copy(xt[:tail], img[int(off)*c+q:int(off)*c+c])
					}
					xv := archsimd.LoadFloat32x8((*[8]float32)(xt[:8]))
					acc = acc.Add(xv.Mul(archsimd.LoadFloat32x8((*[8]float32)(kt[:8]))))
				}
				acc.Store((*[8]float32)(ot[:8]))
				copy(o[q:], ot[:tail])
			}
		}
		archsimd.ClearAVXUpperBits()
	})
	return true
}
