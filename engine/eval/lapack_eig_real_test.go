package eval

import (
	"math"
	"math/rand"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/lapack"
	"gonum.org/v1/gonum/lapack/gonum"
)

// TestSyevRealVectors checks the QL eigenvector path against gonum's Dsyev
// (the eigenvalues) and against the matrix itself (A v = w v, V orthogonal),
// on random symmetric matrices and on ones with repeated eigenvalues, for
// both triangles.
func TestSyevRealVectors(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for _, tc := range []struct {
		name string
		n    int
		make func(n int) []float64
	}{
		{"random_70", 70, func(n int) []float64 { return randSym(r, n) }},
		{"random_200", 200, func(n int) []float64 { return randSym(r, n) }},
		{"repeated_90", 90, func(n int) []float64 {
			// Q diag(1,1,...,2,2,...) Q^T: two eigenvalues of multiplicity n/2.
			a := make([]float64, n*n)
			for i := 0; i < n; i++ {
				a[i*n+i] = float64(1 + i%2)
			}
			q := randSym(r, n)
			impl := gonum.Implementation{}
			w := make([]float64, n)
			work := gonumWork(func(wk []float64) { impl.Dsyev(lapack.EVCompute, blas.Lower, n, q, n, w, wk, -1) })
			impl.Dsyev(lapack.EVCompute, blas.Lower, n, q, n, w, work, len(work))
			out := make([]float64, n*n)
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					var s float64
					for k := 0; k < n; k++ {
						s += q[i*n+k] * a[k*n+k] * q[j*n+k]
					}
					out[i*n+j] = s
				}
			}
			return out
		}},
		{"diagonal_40", 40, func(n int) []float64 {
			a := make([]float64, n*n)
			for i := 0; i < n; i++ {
				a[i*n+i] = float64(n - i)
			}
			return a
		}},
	} {
		for _, uplo := range []blas.Uplo{blas.Lower, blas.Upper} {
			n := tc.n
			orig := tc.make(n)
			a, w := append([]float64(nil), orig...), make([]float64, n)
			if !syevRealVectors(2, uplo, n, a, w) {
				t.Fatalf("%s: not converged", tc.name)
			}
			ref, wref := append([]float64(nil), orig...), make([]float64, n)
			impl := gonum.Implementation{}
			work := gonumWork(func(wk []float64) { impl.Dsyev(lapack.EVNone, uplo, n, ref, n, wref, wk, -1) })
			impl.Dsyev(lapack.EVNone, uplo, n, ref, n, wref, work, len(work))
			scale := math.Max(math.Abs(wref[0]), math.Abs(wref[n-1]))
			tol := 64 * float64(n) * 0x1p-52 * scale
			for k := range w {
				if math.Abs(w[k]-wref[k]) > tol {
					t.Fatalf("%s %c: eigenvalue %d = %v, Dsyev %v", tc.name, uplo, k, w[k], wref[k])
				}
			}
			for k := 0; k < n; k++ {
				for i := 0; i < n; i++ {
					var av float64
					for j := 0; j < n; j++ {
						av += orig[i*n+j] * a[j*n+k]
					}
					if d := math.Abs(av - w[k]*a[i*n+k]); d > tol {
						t.Fatalf("%s %c: (A v%d)[%d] off by %v", tc.name, uplo, k, i, d)
					}
				}
				for l := 0; l <= k; l++ {
					var dot float64
					for i := 0; i < n; i++ {
						dot += a[i*n+k] * a[i*n+l]
					}
					if k == l {
						dot--
					}
					if math.Abs(dot) > 64*float64(n)*0x1p-52 {
						t.Fatalf("%s %c: vectors %d, %d have inner product off by %v", tc.name, uplo, k, l, dot)
					}
				}
			}
		}
	}
}

// randSym is a random symmetric n x n matrix (both triangles set).
func randSym(r *rand.Rand, n int) []float64 {
	a := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			v := r.NormFloat64()
			a[i*n+j], a[j*n+i] = v, v
		}
	}
	return a
}

// TestRotateRowsVector checks the vector rotation against the scalar loop bit
// for bit, on lengths with ragged tails.
func TestRotateRowsVector(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	for _, n := range []int{1, 3, 4, 7, 8, 13, 64} {
		x, y := make([]float64, n), make([]float64, n)
		for i := range x {
			x[i], y[i] = r.NormFloat64(), r.NormFloat64()
		}
		c, s := 0.6, -0.8
		y1, o1 := append([]float64(nil), y...), make([]float64, n)
		y2, o2 := append([]float64(nil), y...), make([]float64, n)
		rotateRows(c, s, x, y1, o1)
		rotateRowsGo(c, s, x, y2, o2)
		for i := range x {
			if math.Float64bits(y1[i]) != math.Float64bits(y2[i]) || math.Float64bits(o1[i]) != math.Float64bits(o2[i]) {
				t.Fatalf("n=%d element %d differs", n, i)
			}
		}
	}
}

// TestSyevRealValues checks the eigenvalue-only path against Dsyev's.
func TestSyevRealValues(t *testing.T) {
	r := rand.New(rand.NewSource(6))
	impl := gonum.Implementation{}
	for _, n := range []int{26, 97, 180} {
		for _, uplo := range []blas.Uplo{blas.Lower, blas.Upper} {
			a := randSym(r, n)
			w := make([]float64, n)
			if !syevRealValues(2, uplo, n, a, w) {
				t.Fatalf("n=%d: not converged", n)
			}
			ref, wref := append([]float64(nil), a...), make([]float64, n)
			work := gonumWork(func(wk []float64) { impl.Dsyev(lapack.EVNone, uplo, n, ref, n, wref, wk, -1) })
			impl.Dsyev(lapack.EVNone, uplo, n, ref, n, wref, work, len(work))
			tol := 64 * float64(n) * 0x1p-52 * math.Max(-wref[0], wref[n-1])
			for k := range w {
				if math.Abs(w[k]-wref[k]) > tol {
					t.Fatalf("n=%d %c: eigenvalue %d = %v, Dsyev %v", n, uplo, k, w[k], wref[k])
				}
			}
		}
	}
}

// TestTridiagKernelsVector checks dotF64, axpyF64 and rank2F64 against their
// scalar loops bit for bit, on lengths with ragged tails.
func TestTridiagKernelsVector(t *testing.T) {
	r := rand.New(rand.NewSource(10))
	vec := func(n int) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = r.NormFloat64()
		}
		return x
	}
	same := func(a, b []float64) bool {
		for i := range a {
			if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
				return false
			}
		}
		return true
	}
	for _, n := range []int{0, 1, 5, 8, 9, 16, 31, 100} {
		x, y := vec(n), vec(n)
		if g, w := dotF64(x, y), dotF64Go(x, y); math.Float64bits(g) != math.Float64bits(w) {
			t.Fatalf("n=%d: dot %v, scalar loop %v", n, g, w)
		}
		y1, y2 := append([]float64(nil), y...), append([]float64(nil), y...)
		axpyF64(y1, x, 0.3)
		axpyF64Go(y2, x, 0.3)
		if !same(y1, y2) {
			t.Fatalf("n=%d: axpy differs", n)
		}
		w := vec(n)
		y1, y2 = append([]float64(nil), y...), append([]float64(nil), y...)
		rank2F64(y1, x, w, 0.7, -1.3)
		rank2F64Go(y2, x, w, 0.7, -1.3)
		if !same(y1, y2) {
			t.Fatalf("n=%d: rank-2 update differs", n)
		}
	}
}
