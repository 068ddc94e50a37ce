//go:build !(goexperiment.simd && amd64)

package eval

// ynnVectorF32 has no vector form in the portable build.
func ynnVectorF32(o YNNOp, x, out []float32) int { return 0 }
