//go:build !goexperiment.simd || !amd64

package eval

// xlaVectorF32 has no vector kernels to offer without simd/archsimd: the
// scalar lane kernels in xlamath.go do all the work.
func xlaVectorF32(op string) func(x, o []float32) int { return nil }
