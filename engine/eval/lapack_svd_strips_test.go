package eval

import (
	"math"
	"math/rand"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/lapack"
	"gonum.org/v1/gonum/lapack/gonum"
)

// svdReduced is svdDirect's reduction of a (m x n, destroyed): the
// bidiagonal (s, e), U = Q (m x k) and VT = P^T (k x n), k = min(m, n).
func svdReduced(m, n int, a []float64) (s, e, u, vt []float64) {
	impl := gonum.Implementation{}
	k := min(m, n)
	s, e = make([]float64, k), make([]float64, k)
	tq, tp := make([]float64, k), make([]float64, k)
	work := gonumWork(func(w []float64) { impl.Dgebrd(m, n, a, n, s, e, tq, tp, w, -1) })
	impl.Dgebrd(m, n, a, n, s, e, tq, tp, work, len(work))
	u, vt = make([]float64, m*k), make([]float64, k*n)
	for i := 0; i < m; i++ {
		copy(u[i*k:i*k+min(n, k)], a[i*n:])
	}
	for i := 0; i < min(m, k); i++ {
		copy(vt[i*n:(i+1)*n], a[i*n:])
	}
	qw := gonumWork(func(w []float64) { impl.Dorgbr(lapack.GenerateQ, m, k, n, u, k, tq, w, -1) })
	impl.Dorgbr(lapack.GenerateQ, m, k, n, u, k, tq, qw, len(qw))
	pw := gonumWork(func(w []float64) { impl.Dorgbr(lapack.GeneratePT, k, n, m, vt, n, tp, w, -1) })
	impl.Dorgbr(lapack.GeneratePT, k, n, m, vt, n, tp, pw, len(pw))
	return s, e, u, vt
}

func transposed(x []float64, rows, cols int) []float64 {
	t := make([]float64, len(x))
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			t[j*rows+i] = x[i*cols+j]
		}
	}
	return t
}

func randMatrix(r *rand.Rand, m, n int) []float64 {
	a := make([]float64, m*n)
	for i := range a {
		a[i] = r.NormFloat64()
	}
	return a
}

// TestBdsqrStripsBitForBit checks that Dbdsqr run in column strips of VT and
// of U^T (as its C operand) on several goroutines gives every bit of the one
// Dbdsqr call that rotates U's columns and all of VT.
func TestBdsqrStripsBitForBit(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	impl := gonum.Implementation{}
	for _, sh := range [][2]int{{150, 130}, {130, 150}, {200, 200}} {
		m, n := sh[0], sh[1]
		k := min(m, n)
		uplo := blas.Upper
		if m < n {
			uplo = blas.Lower
		}
		sw, ew, uw, vw := svdReduced(m, n, randMatrix(r, m, n))
		sg, eg, ug, vg := append([]float64(nil), sw...), append([]float64(nil), ew...), transposed(uw, m, k), append([]float64(nil), vw...)
		if !bdsqrStrips(3, impl, uplo, k, sg, eg, vg, n, n, ug, m) {
			t.Fatal("bdsqrStrips did not converge")
		}
		ug = transposed(ug, k, m)
		if !impl.Dbdsqr(uplo, k, n, m, 0, sw, ew, vw, n, uw, k, nil, 1, make([]float64, 4*k)) {
			t.Fatal("Dbdsqr did not converge")
		}
		for _, c := range []struct {
			name      string
			got, want []float64
		}{{"s", sg, sw}, {"u", ug, uw}, {"vt", vg, vw}} {
			for i := range c.want {
				if math.Float64bits(c.got[i]) != math.Float64bits(c.want[i]) {
					t.Fatalf("%dx%d: %s[%d] = %v, one Dbdsqr call gives %v", m, n, c.name, i, c.got[i], c.want[i])
				}
			}
		}
	}
}

// TestSvdDirectBidiagQR checks svdDirect past k = 25 on tall and square
// matrices (the recorded-rotation bidiagonal QR) for A = U diag(s) VT, for
// orthonormal U columns and VT rows, and for singular values matching
// Dbdsqr's, to a few ulps per dimension.
func TestSvdDirectBidiagQR(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	impl := gonum.Implementation{}
	for _, sh := range [][2]int{{40, 30}, {150, 130}, {200, 200}} {
		m, n := sh[0], sh[1]
		k := min(m, n)
		a := randMatrix(r, m, n)
		s, u, vt := make([]float64, k), make([]float64, m*k), make([]float64, k*n)
		if !svdDirect(3, impl, m, n, append([]float64(nil), a...), s, u, k, vt, n) {
			t.Fatal("svdDirect did not converge")
		}
		sw, ew, uw, vw := svdReduced(m, n, append([]float64(nil), a...))
		impl.Dbdsqr(blas.Upper, k, n, m, 0, sw, ew, vw, n, uw, k, nil, 1, make([]float64, 4*k))
		tol := 16 * float64(max(m, n)) * 0x1p-52 * sw[0]
		for i := range s {
			if math.Abs(s[i]-sw[i]) > tol {
				t.Fatalf("%dx%d: s[%d] = %v, Dbdsqr %v", m, n, i, s[i], sw[i])
			}
		}
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var x float64
				for l := 0; l < k; l++ {
					x += u[i*k+l] * s[l] * vt[l*n+j]
				}
				if math.Abs(x-a[i*n+j]) > tol {
					t.Fatalf("%dx%d: (U S VT)[%d,%d] = %v, a = %v", m, n, i, j, x, a[i*n+j])
				}
			}
		}
		otol := 16 * float64(max(m, n)) * 0x1p-52
		for p := 0; p < k; p++ {
			for q := 0; q <= p; q++ {
				var du, dv float64
				for i := 0; i < m; i++ {
					du += u[i*k+p] * u[i*k+q]
				}
				for j := 0; j < n; j++ {
					dv += vt[p*n+j] * vt[q*n+j]
				}
				if p == q {
					du, dv = du-1, dv-1
				}
				if math.Abs(du) > otol || math.Abs(dv) > otol {
					t.Fatalf("%dx%d: vectors %d, %d: U inner product off by %v, VT by %v", m, n, p, q, du, dv)
				}
			}
		}
	}
}

// TestRotateRowsFwdVector checks the vector rotation against its scalar loop.
func TestRotateRowsFwdVector(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	for _, n := range []int{1, 4, 7, 8, 13, 64} {
		x, y := randMatrix(r, 1, n), randMatrix(r, 1, n)
		x1, o1 := append([]float64(nil), x...), make([]float64, n)
		x2, o2 := append([]float64(nil), x...), make([]float64, n)
		rotateRowsFwd(0.6, -0.8, x1, y, o1)
		rotateRowsFwdGo(0.6, -0.8, x2, y, o2)
		for i := range x {
			if math.Float64bits(x1[i]) != math.Float64bits(x2[i]) || math.Float64bits(o1[i]) != math.Float64bits(o2[i]) {
				t.Fatalf("n=%d element %d differs", n, i)
			}
		}
	}
}
