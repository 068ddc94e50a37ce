package eval

import (
	"math/rand"
	"testing"
)

// BenchmarkComplexDotEigen1024 is probe_more's complex64_matmul without the
// Python around it; BenchmarkComplexDotViaReal the f64 real GEMM it replaced.
func BenchmarkComplexDotEigen1024(b *testing.B) {
	r := rand.New(rand.NewSource(1))
	const n = 1024
	x, y := c64Random(r, n*n), c64Random(r, n*n)
	c := make([]complex64, n*n)
	for b.Loop() {
		dotC64Eigen(2, 1, n, n, n, x, rowMajor(n, n), y, rowMajor(n, n), c)
	}
}

func BenchmarkComplexDotViaReal1024(b *testing.B) {
	r := rand.New(rand.NewSource(1))
	const n = 1024
	x, y := c64Random(r, n*n), c64Random(r, n*n)
	x2, y2 := make([]complex128, n*n), make([]complex128, n*n)
	for i := range x {
		x2[i], y2[i] = complex128(x[i]), complex128(y[i])
	}
	c := make([]complex128, n*n)
	for b.Loop() {
		clear(c)
		complexGemmViaReal(2, 1, n, n, n, x2, rowMajor(n, n), y2, rowMajor(n, n), c)
	}
}

// BenchmarkComplexDotEigen1024Narrow runs the narrower vector path (AVX2
// tiles on an AVX-512 host; the scalar loops in the portable build).
func BenchmarkComplexDotEigen1024Narrow(b *testing.B) {
	ws := c64VectorWidths()
	old := c64VectorTestSet(0)
	if len(ws) > 0 {
		c64VectorTestSet(ws[len(ws)-1])
	}
	defer c64VectorTestSet(old)
	BenchmarkComplexDotEigen1024(b)
}
