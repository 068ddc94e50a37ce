//go:build !(goexperiment.simd && amd64)

package eval

// depthwiseSeqF32 has no vector form in this build (convolutions take
// YNNPACK's order only with the assembly kernels).
func depthwiseSeqF32(par int, p *convPlan, x, k, out []float32) bool { return false }
