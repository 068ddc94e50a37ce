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

// convSegAVX512F32S is convSegAVX2F32S for a 12×32 tile. Needs AVX-512F.
//
//go:noescape
func convSegAVX512F32S(kc, segs int, a *float32, lda, segStride int, b *float32, ldb int, c *float32, ldc int)

// convSegKernel returns the segmented storing kernel of the tiles the GEMM
// runs (AVX2's 6×16 or AVX-512's 12×32), or nil.
func convSegKernel() *convSegTiles {
	switch kernelFor[float32]().name {
	case "avx2":
		if archsimd.X86.AVX2() && archsimd.X86.FMA() {
			return &convSegTiles{mr: 6, nr: 16, run: convSegAVX2F32S}
		}
	case "avx512":
		if archsimd.X86.AVX512() {
			return &convSegTiles{mr: 12, nr: 32, run: convSegAVX512F32S}
		}
	}
	return nil
}

// convSegTiles is a segmented storing kernel and its tile.
type convSegTiles struct {
	mr, nr int
	run    func(kc, segs int, a *float32, lda, segStride int, b *float32, ldb int, c *float32, ldc int)
}

// tile checks the bounds of everything the kernel reads and writes, then
// runs it on A at a, the panel b (rows nr apart) and C at c.
func (k *convSegTiles) tile(kc, segs int, a []float32, lda, segStride int, b, c []float32, ldc int) {
	if kc <= 0 || segs <= 0 {
		return
	}
	_, _, _ = a[(k.mr-1)*lda+(segs-1)*segStride+kc-1], b[kc*segs*k.nr-1], c[(k.mr-1)*ldc+k.nr-1]
	k.run(kc, segs, &a[0], lda, segStride, &b[0], k.nr, &c[0], ldc)
}
