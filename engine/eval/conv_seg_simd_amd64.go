//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

// convSegAVX2F32S stores the 6×16 tile at c (rows ldc apart) as the FMA
// chains, plus +0, of A's rows (row r: segs runs of kc elements, run s at
// a + r*lda + s*segStride) times the kc*segs×16 block of B at b (rows ldb
// apart). kc, segs > 0. Needs AVX2 and FMA.
//
//go:noescape
func convSegAVX2F32S(kc, segs int, a *float32, lda, segStride int, b *float32, ldb int, c *float32, ldc int)

// convSegKernel returns the segmented storing kernel when the GEMM runs the
// AVX2 kernels (whose tiles it computes), else nil.
func convSegKernel() func(kc, segs int, a []float32, lda, segStride int, b, c []float32, ldc int) {
	if !archsimd.X86.AVX2() || !archsimd.X86.FMA() || kernelFor[float32]().name != "avx2" {
		return nil
	}
	return convSegAVX2
}

// convSegAVX2 checks the bounds of everything convSegAVX2F32S reads and
// writes, then runs it.
func convSegAVX2(kc, segs int, a []float32, lda, segStride int, b, c []float32, ldc int) {
	if kc <= 0 || segs <= 0 {
		return
	}
	_, _, _ = a[5*lda+(segs-1)*segStride+kc-1], b[kc*segs*16-1], c[5*ldc+15]
	convSegAVX2F32S(kc, segs, &a[0], lda, segStride, &b[0], 16, &c[0], ldc)
}
