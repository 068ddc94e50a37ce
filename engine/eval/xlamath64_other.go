//go:build !goexperiment.simd || !amd64

package eval

// xlaVectorF64 has no vector kernels to offer without simd/archsimd: the
// scalar kernels in xlamath64.go do all the work, with the same bits.
func xlaVectorF64(op string) func(x, o []float64) int { return nil }

// xlaEstimateF64 has nothing to offer either: XLA:CPU's f64 rsqrt on
// AVX-512 hosts starts from VRSQRT14PD's estimate, which portable Go cannot
// run, so rsqrt stays correctly rounded (elementwise_kernels.go), as
// XLA:CPU computes it on other hosts.
func xlaEstimateF64(op string) func(x, o []float64) { return nil }

var xlaF64Lanes = 0

func xlaF64LaneWidths() []int { return []int{0} }

// fmaF64Vector has no vector form in the portable build.
func fmaF64Vector(a, b, c, o []float64) int { return 0 }

// log1pSmallVector has no vector form in the portable build.
func log1pSmallVector(x, o []float64) int { return 0 }

// signBitF64Vector has no vector form in the portable build.
func signBitF64Vector(abs bool, x, o []float64) int { return 0 }
