//go:build !(goexperiment.simd && amd64)

package eval

// ynnVectorF32 has no vector form in the portable build.
func ynnVectorF32(o YNNOp, x, out []float32) int { return 0 }

// ynnBinaryVectorF32 has no vector form in the portable build.
func ynnBinaryVectorF32(o YNNOp, a, b, out []float32) int { return 0 }

// ynnVectorF32Width has no vector form in the portable build.
func ynnVectorF32Width(o YNNOp, x, out []float32, wide bool) int { return 0 }

// ynnBinaryVectorF32Width has no vector form in the portable build.
func ynnBinaryVectorF32Width(o YNNOp, a, b, out []float32, wide bool) int { return 0 }
