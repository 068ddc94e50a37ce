//go:build !(goexperiment.simd && amd64)

package eval

// minMaxRowsF32 has no vector form in the portable build.
func minMaxRowsF32(op string, i0 float32, xs []float32, runLen int, o []float32) int { return 0 }
