//go:build !(goexperiment.simd && amd64)

package eval

// convSegTiles is a segmented storing kernel and its tile: assembly in the
// SIMD build, none here.
type convSegTiles struct{ mr, nr int }

func (k *convSegTiles) tile(kc, segs int, a []float32, lda, segStride int, b, c []float32, ldc int) {
	panic("conv_seg: no segmented kernel in this build")
}

// convSegKernel: the segmented kernels are assembly for the SIMD build.
func convSegKernel() *convSegTiles { return nil }
