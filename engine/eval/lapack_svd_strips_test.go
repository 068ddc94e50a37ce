package eval

import (
	"math"
	"math/rand"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/lapack"
	"gonum.org/v1/gonum/lapack/gonum"
)

// TestSvdDirectStripsBitForBit checks that svdDirect (U^T rotated as
// Dbdsqr's C, VT and C in column strips on several goroutines) gives every
// bit of the single Dbdsqr call that rotates U's columns and all of VT.
func TestSvdDirectStripsBitForBit(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	impl := gonum.Implementation{}
	for _, sh := range [][2]int{{150, 130}, {130, 150}, {200, 200}} {
		m, n := sh[0], sh[1]
		k := min(m, n)
		a := make([]float64, m*n)
		for i := range a {
			a[i] = r.NormFloat64()
		}
		got, want := append([]float64(nil), a...), append([]float64(nil), a...)
		sg, sw := make([]float64, k), make([]float64, k)
		ug, uw := make([]float64, m*k), make([]float64, m*k)
		vg, vw := make([]float64, k*n), make([]float64, k*n)
		if !svdDirect(3, impl, m, n, got, sg, ug, k, vg, n) {
			t.Fatal("svdDirect did not converge")
		}
		// The reference: the same reduction, one Dbdsqr call on U and VT.
		e, tq, tp := make([]float64, k), make([]float64, k), make([]float64, k)
		work := gonumWork(func(w []float64) { impl.Dgebrd(m, n, want, n, sw, e, tq, tp, w, -1) })
		impl.Dgebrd(m, n, want, n, sw, e, tq, tp, work, len(work))
		for i := 0; i < m; i++ {
			copy(uw[i*k:i*k+min(n, k)], want[i*n:])
		}
		for i := 0; i < min(m, k); i++ {
			copy(vw[i*n:(i+1)*n], want[i*n:])
		}
		qw := gonumWork(func(w []float64) { impl.Dorgbr(lapack.GenerateQ, m, k, n, uw, k, tq, w, -1) })
		impl.Dorgbr(lapack.GenerateQ, m, k, n, uw, k, tq, qw, len(qw))
		pw := gonumWork(func(w []float64) { impl.Dorgbr(lapack.GeneratePT, k, n, m, vw, n, tp, w, -1) })
		impl.Dorgbr(lapack.GeneratePT, k, n, m, vw, n, tp, pw, len(pw))
		uplo := blas.Upper
		if m < n {
			uplo = blas.Lower
		}
		if !impl.Dbdsqr(uplo, k, n, m, 0, sw, e, vw, n, uw, k, nil, 1, make([]float64, 4*k)) {
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
