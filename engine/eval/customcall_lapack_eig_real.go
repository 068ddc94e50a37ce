package eval

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/lapack/gonum"
)

// Real symmetric eigenvectors past dsteqr's range. For n > eighFollowMax
// LAPACK's dsyevd runs divide and conquer, whose eigenvector signs no other
// algorithm reproduces, so here the tridiagonal problem is solved by implicit
// QL whose plane rotations are recorded and then applied to the eigenvector
// matrix in one pass: each goroutine takes a strip of its rows and runs every
// rotation over them in order, the strip staying in cache (gonum's Dsteqr
// applies each sweep over the whole matrix, a column pair at a time). The
// reduction to tridiagonal form and Q are linalg_tridiag.go's (parallel,
// vectorized Householder steps), in float64 as for the smaller sizes.

// eighFollowMax is the largest order for which dstedc hands the problem to
// dsteqr (gonum's Dsyev follows that algorithm, signs included).
const eighFollowMax = 25

// qlSweep is one implicit QL sweep: rotations for planes (i, i+1), i from hi
// down to lo, their (c, s) pairs at cs[2*(hi-i)], cs[2*(hi-i)+1].
type qlSweep struct {
	lo, hi int
	cs     []float64
}

// syevFastRange reports whether the uplo triangle of a is finite and within
// the range Dsyev takes without scaling, [sqrt(tiny/eps), sqrt(eps/tiny)].
func syevFastRange(a []float64, n int, uplo blas.Uplo) bool {
	anorm := 0.0
	for i := 0; i < n; i++ {
		lo, hi := 0, i+1
		if uplo == blas.Upper {
			lo, hi = i, n
		}
		for _, v := range a[i*n+lo : i*n+hi] {
			if !(math.Abs(v) <= anorm) {
				anorm = math.Abs(v)
			}
		}
	}
	rmin := math.Sqrt(0x1p-1022 / 0x1p-53)
	return !(math.IsNaN(anorm) || math.IsInf(anorm, 0) || (anorm > 0 && anorm < rmin) || anorm > 1/rmin)
}

// syevRealValues sets w to the eigenvalues (ascending) of the symmetric
// matrix in the uplo triangle of a (left as it is), through tridiagonalize
// and gonum's Dsterf; false when outside syevFastRange or not converged.
func syevRealValues(par int, uplo blas.Uplo, n int, a, w []float64) bool {
	if !syevFastRange(a, n, uplo) {
		return false
	}
	d, e, _, _ := tridiagonalize(par, fullSymmetric(a, n, uplo), n)
	if !lapackAttempt(func() bool { return gonum.Implementation{}.Dsterf(n, d, e) }) {
		return false
	}
	copy(w, d)
	return true
}

// syevRealVectors replaces the n x n row-major symmetric matrix a (uplo
// triangle read) by its eigenvectors (columns) and sets w to the eigenvalues
// in ascending order. It reports false when the matrix is outside the range
// this path takes (non-finite, or needing LAPACK's scaling) or QL does not
// converge; a is then unspecified and the caller uses Dsyev.
func syevRealVectors(par int, uplo blas.Uplo, n int, a, w []float64) bool {
	if !syevFastRange(a, n, uplo) {
		return false
	}
	d, e, vs, taus := tridiagonalize(par, fullSymmetric(a, n, uplo), n)
	q := formQ(par, n, vs, taus)
	sweeps, ok := tridiagonalQL(d, e)
	if !ok {
		return false
	}
	// zt holds the eigenvectors as rows: zt = Q^T, then every rotation.
	zt := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			zt[j*n+i] = q[i*n+j]
		}
	}
	applyQLSweeps(par, zt, n, sweeps)
	// Ascending eigenvalues, vectors with them (a stable order for ties).
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	for i := 1; i < n; i++ {
		for j := i; j > 0 && d[perm[j]] < d[perm[j-1]]; j-- {
			perm[j], perm[j-1] = perm[j-1], perm[j]
		}
	}
	vals := append([]float64(nil), d...)
	for k, p := range perm {
		w[k] = vals[p]
		row := zt[p*n : (p+1)*n]
		for r, v := range row {
			a[r*n+k] = v
		}
	}
	return true
}

// tridiagonalQL finds the eigenvalues of the symmetric tridiagonal matrix
// with diagonal d and off-diagonal e (e[i] couples i and i+1; e[n-1] is
// scratch) by implicit QL with Wilkinson shifts, leaving them in d
// (unordered), and returns the rotations that accumulate the eigenvectors.
// It reports false after 30n sweeps without convergence.
func tridiagonalQL(d, e []float64) ([]qlSweep, bool) {
	n := len(d)
	const eps = 0x1p-52
	var sweeps []qlSweep
	var store []float64
	budget := 30 * n
	for l := 0; l < n; l++ {
		for {
			m := l
			for ; m < n-1; m++ {
				if math.Abs(e[m]) <= eps*(math.Abs(d[m])+math.Abs(d[m+1])) {
					break
				}
			}
			if m == l {
				break
			}
			if budget--; budget < 0 {
				return nil, false
			}
			g := (d[l+1] - d[l]) / (2 * e[l])
			r := math.Hypot(g, 1)
			g = d[m] - d[l] + e[l]/(g+math.Copysign(r, g))
			s, c, p := 1.0, 1.0, 0.0
			if len(store) < 2*(m-l) {
				store = make([]float64, max(2*(m-l), 1<<16))
			}
			cs := store[: 0 : 2*(m-l)]
			store = store[2*(m-l):]
			i := m - 1
			underflow := false
			for ; i >= l; i-- {
				f, b := s*e[i], c*e[i]
				r = math.Hypot(f, g)
				e[i+1] = r
				if r == 0 {
					// Recover from underflow: the block splits at i+1.
					d[i+1] -= p
					e[m] = 0
					underflow = true
					break
				}
				s, c = f/r, g/r
				g = d[i+1] - p
				r = (d[i]-g)*s + 2*c*b
				p = s * r
				d[i+1] = g + p
				g = c*r - b
				cs = append(cs, c, s)
			}
			if len(cs) > 0 {
				sweeps = append(sweeps, qlSweep{lo: m - len(cs)/2, hi: m - 1, cs: cs})
			}
			if underflow {
				continue
			}
			d[l] -= p
			e[l] = g
			e[m] = 0
		}
	}
	return sweeps, true
}

// qlStrip is the number of columns of zt one goroutine rotates at a time.
const qlStrip = 64

// applyQLSweeps applies every sweep, in order, to the rows of the n x n
// row-major zt: rotation (c, s) on plane i maps rows (x, y) = (zt[i],
// zt[i+1]) to (c*x - s*y, s*x + c*y). Columns are independent, so strips of
// them run on all cores.
func applyQLSweeps(par int, zt []float64, n int, sweeps []qlSweep) {
	strips := (n + qlStrip - 1) / qlStrip
	parallelItems(par, strips, func(st int) {
		c0, c1 := st*qlStrip, min((st+1)*qlStrip, n)
		for _, sw := range sweeps {
			rotateStrip(zt, n, c0, c1, sw)
		}
	})
}

// rotateStrip applies one sweep to columns [c0, c1) of zt. Row i+1's new
// value is carried from rotation i to rotation i-1 (which reads it as its
// y), so each rotation loads and stores one row of the strip.
func rotateStrip(zt []float64, n, c0, c1 int, sw qlSweep) {
	var carry [qlStrip]float64
	y := carry[:c1-c0]
	copy(y, zt[(sw.hi+1)*n+c0:(sw.hi+1)*n+c1])
	for k, i := 0, sw.hi; i >= sw.lo; k, i = k+2, i-1 {
		rotateRows(sw.cs[k], sw.cs[k+1], zt[i*n+c0:i*n+c1], y, zt[(i+1)*n+c0:(i+1)*n+c1])
	}
	copy(zt[sw.lo*n+c0:sw.lo*n+c1], y)
}

// rotateRowsGo sets out = s*x + c*y and y = c*x - s*y elementwise.
func rotateRowsGo(c, s float64, x, y, out []float64) {
	y = y[:len(x)]
	out = out[:len(x)]
	for j, xv := range x {
		yv := y[j]
		out[j] = s*xv + c*yv
		y[j] = c*xv - s*yv
	}
}
