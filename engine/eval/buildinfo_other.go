//go:build !goexperiment.simd || !amd64

package eval

const simdExperiment = false

func vectorMathName() string { return "scalar" }

// sseAfterAVX is a no-op without the archsimd kernels.
func sseAfterAVX() {}
