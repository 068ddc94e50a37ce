//go:build !(goexperiment.simd && amd64)

package eval

// convSegKernel: the segmented kernel is assembly for the SIMD build.
func convSegKernel() func(kc, segs int, a []float32, lda, segStride int, b, c []float32, ldc int) {
	return nil
}
