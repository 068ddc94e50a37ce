//go:build !(goexperiment.simd && amd64)

package eval

// mulC64Vector has no vector form in the portable build.
func mulC64Vector(a, b, o []complex64) int { return 0 }

// interleaveC64Vector has no vector form in the portable build.
func interleaveC64Vector(re, im []float32, o []complex64) int { return 0 }
