package eval

import (
	"math"
	"math/rand"
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

// TestGemmKernelsNonFinite runs every kernel this CPU can run on operands
// sprinkled with NaN, ±Inf and zeros (so 0·Inf and Inf−Inf occur) at edge
// shapes, layouts and goroutine counts, against a float64 reference: whether
// an element is NaN, +Inf, −Inf or finite does not depend on the summation
// order when nothing overflows, and finite elements keep the error bound.
func TestGemmKernelsNonFinite(t *testing.T) {
	for _, kn := range gemmKernelsF32() {
		t.Run("f32_"+kn.name, func(t *testing.T) { testKernelNonFinite(t, kn, 0x1p-24) })
	}
	for _, kn := range gemmKernelsF64() {
		t.Run("f64_"+kn.name, func(t *testing.T) { testKernelNonFinite(t, kn, 0x1p-53) })
	}
}

func testKernelNonFinite[T float32 | float64](t *testing.T, kn *gemmKernel[T], eps float64) {
	r := rand.New(rand.NewSource(9))
	class := func(v float64) int {
		switch {
		case math.IsNaN(v):
			return 0
		case math.IsInf(v, 1):
			return 1
		case math.IsInf(v, -1):
			return 2
		}
		return 3
	}
	special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0}
	for _, sz := range []gemmSize{{1, 1, 1, 1}, {1, kn.mr, kn.nr, 1}, {1, kn.mr + 1, kn.nr - 1, 5}, {2, 2*kn.mr - 1, 2*kn.nr + 3, kn.kc + 3}, {1, 3, 7, 2*kn.kc + 1}, {1, 40, 70, 33}} {
		nb, m, n, k := sz.nb, sz.m, sz.n, sz.k
		av, bv := make([]float64, nb*m*k), make([]float64, nb*k*n)
		for _, s := range [][]float64{av, bv} {
			for i := range s {
				s[i] = float64(T(r.Float64()*2 - 1))
				if r.Intn(60) == 0 {
					s[i] = special[r.Intn(len(special))]
				}
			}
		}
		want, bound := make([]float64, nb*m*n), make([]float64, nb*m*n)
		for b := 0; b < nb; b++ {
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					for p := 0; p < k; p++ {
						x := av[(b*m+i)*k+p] * bv[(b*k+p)*n+j]
						want[(b*m+i)*n+j] += x
						bound[(b*m+i)*n+j] += math.Abs(x)
					}
				}
			}
		}
		for an, la := range gemmTestLayouts(m, k) {
			for bn, lb := range gemmTestLayouts(k, n) {
				a, b := storeLayout[T](av, nb, m, k, la), storeLayout[T](bv, nb, k, n, lb)
				for _, par := range []int{1, 2} {
					c := make([]T, nb*m*n)
					kn.run(par, nb, m, n, k, a, la, b, lb, c)
					for i, v := range c {
						got := float64(v)
						if class(got) != class(want[i]) || class(got) == 3 && !(math.Abs(got-want[i]) <= float64(k+1)*eps*bound[i]) {
							t.Fatalf("%s %v A %s B %s par %d: c[%d] = %g, want %g", kn.name, sz, an, bn, par, i, got, want[i])
						}
					}
				}
			}
		}
	}
}
