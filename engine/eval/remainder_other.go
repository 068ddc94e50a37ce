//go:build !(goexperiment.simd && amd64)

package eval

// remainderVecF32: no vector kernel in this build (remainderRawF32Scalar
// runs).
func remainderVecF32(a, b, o []float32) int { return 0 }
