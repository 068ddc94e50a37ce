//go:build !(goexperiment.simd && amd64)

package eval

// totalOrderKeysVector has no vector form in the portable build.
func totalOrderKeysVector(xs []float32, o []int32) int { return 0 }
