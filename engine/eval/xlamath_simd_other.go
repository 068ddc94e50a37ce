//go:build !goexperiment.simd || !amd64

package eval

// xlaVectorF32 has no vector kernels to offer without simd/archsimd: the
// scalar lane kernels in xlamath.go do all the work.
func xlaVectorF32(op string) func(x, o []float32) int { return nil }

// xlaEstimateF32 has nothing to offer either: XLA:CPU's rsqrt starts from
// the CPU's estimate instruction, which portable Go cannot run, so rsqrt
// stays correctly rounded (elementwise_kernels.go).
func xlaEstimateF32(op string) func(x, o []float32) { return nil }

// RsqrtMatchesXLA reports whether f32 rsqrt here runs the estimate
// instruction XLA:CPU uses; without simd/archsimd it never does (f64 rsqrt
// matches only on hosts without AVX-512, where XLA:CPU divides 1 by sqrt).
func RsqrtMatchesXLA() bool { return false }
