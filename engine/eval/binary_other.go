//go:build !(goexperiment.simd && amd64)

package eval

// binaryF32Vector has no vector form in the portable build.
func binaryF32Vector(op string, a, b, o []float32) int { return 0 }

// foldRunMinMaxVector has no vector form in the portable build.
func foldRunMinMaxVector(op string, acc, xs []float32) int { return 0 }
