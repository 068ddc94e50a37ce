//go:build !(goexperiment.simd && amd64)

package eval

// depthwiseDirectF32 needs the assembly GEMM's arithmetic to reproduce;
// the portable build's products are gonum's, so it keeps the GEMM path.
func depthwiseDirectF32(par int, p *convPlan, x, k []float32) ([]float32, bool) { return nil, false }
