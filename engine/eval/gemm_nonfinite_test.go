package eval

import (
	"math"
	"testing"
)

// TestGemmZeroTimesInf: IEEE (and XLA:CPU) give NaN for 0·Inf inside a dot
// product; a BLAS that skips zero elements would give a finite sum.
func TestGemmZeroTimesInf(t *testing.T) {
	const n = 16
	a := make([]float32, n*n) // all zeros
	b := make([]float32, n*n)
	for i := range b {
		b[i] = 1
	}
	b[3*n+5] = float32(math.Inf(1))
	c := make([]float32, n*n)
	gemm(2, 1, n, n, n, a, b, c)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if got := c[i*n+j]; (j == 5) != math.IsNaN(float64(got)) {
				t.Fatalf("c[%d,%d] = %v: want NaN exactly in column 5 (0·Inf)", i, j, got)
			}
		}
	}
	a64, b64, c64 := make([]float64, 4), []float64{math.Inf(-1), 1, 1, 1}, make([]float64, 4)
	gemm(1, 1, 2, 2, 2, a64, b64, c64)
	if !math.IsNaN(c64[0]) || math.IsNaN(c64[1]) {
		t.Fatalf("f64: got %v, want [NaN 0 NaN 0]", c64)
	}
	ac, bc, cc := make([]complex128, 4), []complex128{complex(math.Inf(1), 0), 1, 1, 1}, make([]complex128, 4)
	gemm(1, 1, 2, 2, 2, ac, bc, cc)
	if r := real(cc[0]); !math.IsNaN(r) {
		t.Fatalf("complex: got %v, want NaN real part in element 0", cc)
	}
}
