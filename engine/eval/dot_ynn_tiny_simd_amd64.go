//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

// ynnTinyVectors says ynnTinyTaskVec runs here (AVX2 and FMA, which every
// host that takes YNNPACK's order has).
var ynnTinyVectors = archsimd.X86.AVX2() && archsimd.X86.FMA()

// ynnTinyTaskVec is ynnTinyTask eight columns at a time on VFMADD (the
// rounding fma32Exact computes) and VADDPS: a holds the batch element's A
// row-major (row i at i*lda), bp its B row-major with rows ldb apart, and
// at least 8 readable columns from every multiple of 8 below n (zero or
// anything past column n). Columns past the task's are computed and
// dropped.
func ynnTinyTaskVec(t ynnTask, n, k int, a []float32, lda int, bp []float32, ldb int, c []float32) {
	tk := t.tk
	km := k - k%tk
	var zero archsimd.Float32x8
	var out [8]float32
	for j0 := t.j0; j0 < t.j1; j0 += 8 {
		cols := min(8, t.j1-j0)
		for i := t.i0; i < t.i1; i++ {
			ar := a[i*lda : i*lda+k]
			var acc archsimd.Float32x8
			first := true
			for lo := 0; lo < k; {
				hi := min(km, lo+t.kstep)
				if lo >= km {
					hi = k
				}
				var l0, l1, l2, l3 archsimd.Float32x8
				for p := lo; p < hi; p += tk {
					l0 = archsimd.BroadcastFloat32x8(ar[p]).MulAdd(archsimd.LoadFloat32x8Slice(bp[p*ldb+j0:]), l0)
					if tk == 1 {
						continue
					}
					if p+1 < hi {
						l1 = archsimd.BroadcastFloat32x8(ar[p+1]).MulAdd(archsimd.LoadFloat32x8Slice(bp[(p+1)*ldb+j0:]), l1)
					}
					if tk == 2 {
						continue
					}
					if p+2 < hi {
						l2 = archsimd.BroadcastFloat32x8(ar[p+2]).MulAdd(archsimd.LoadFloat32x8Slice(bp[(p+2)*ldb+j0:]), l2)
					}
					if p+3 < hi {
						l3 = archsimd.BroadcastFloat32x8(ar[p+3]).MulAdd(archsimd.LoadFloat32x8Slice(bp[(p+3)*ldb+j0:]), l3)
					}
				}
				// Each lane as the GEMM leaves it in its cleared lane
				// storage: +0 plus the chain.
				var s archsimd.Float32x8
				switch tk {
				case 1:
					s = zero.Add(l0)
				case 2:
					s = zero.Add(l0).Add(zero.Add(l1))
				default:
					s = zero.Add(l0).Add(zero.Add(l1)).Add(zero.Add(l2).Add(zero.Add(l3)))
				}
				if first {
					acc, first = s, false
				} else {
					acc = s.Add(acc)
				}
				lo = hi
			}
			acc.StoreSlice(out[:])
			copy(c[i*n+j0:i*n+j0+cols], out[:cols])
		}
	}
}
