package eval

import (
	"math"

	"gonum.org/v1/gonum/blas"
)

// Householder reduction of a real symmetric matrix to tridiagonal form,
// A = Q T Q^T, in float64 on all cores: the matrix is kept whole (both
// triangles), so each step's product A22 v and rank-2 update A22 -= v w^T +
// w v^T run over contiguous rows split between the goroutines, a vector at a
// time (dotF64, rank2F64, axpyF64). The reflectors are LAPACK's (dlarfg:
// beta = -sign(alpha) ||x||, v[0] = 1), applied unblocked; Q is formed
// backward from them (as dorg2l/dorg2r do), touching only the trailing block
// each reflector acts on.

// tridiagonalize reduces the n x n row-major symmetric matrix a (both
// triangles set; destroyed) and returns T's diagonal d, off-diagonal e
// (e[i] couples i and i+1; len n, e[n-1] = 0) and the reflectors: vs[k] of
// length n-k-1 with vs[k][0] = 1 acting on rows k+1.., with taus[k].
func tridiagonalize(par int, a []float64, n int) (d, e []float64, vs [][]float64, taus []float64) {
	d, e = make([]float64, n), make([]float64, n)
	vs, taus = make([][]float64, n), make([]float64, n)
	y := make([]float64, n)
	for k := 0; k+1 < n; k++ {
		p := n - k - 1
		x := a[k*n+k+1 : k*n+n] // row k right of the diagonal = column k below it
		d[k] = a[k*n+k]
		alpha := x[0]
		xnorm := 0.0
		if p > 1 {
			xnorm = norm2(x[1:])
		}
		if xnorm == 0 {
			e[k] = alpha
			continue
		}
		beta := -math.Copysign(math.Hypot(alpha, xnorm), alpha)
		tau := (beta - alpha) / beta
		v := make([]float64, p)
		v[0] = 1
		scale := 1 / (alpha - beta)
		for i := 1; i < p; i++ {
			v[i] = x[i] * scale
		}
		e[k], vs[k], taus[k] = beta, v, tau
		// y = tau A22 v, then w = y - (tau/2)(y.v) v, A22 -= v w^T + w v^T.
		base := (k+1)*n + k + 1
		yv := y[:p]
		rowsPar(par, p, p, func(i0, i1 int) {
			for i := i0; i < i1; i++ {
				yv[i] = tau * dotF64(a[base+i*n:base+i*n+p], v)
			}
		})
		half := -0.5 * tau * dotF64(yv, v)
		axpyF64(yv, v, half) // yv is now w
		rowsPar(par, p, 2*p, func(i0, i1 int) {
			for i := i0; i < i1; i++ {
				rank2F64(a[base+i*n:base+i*n+p], v, yv, v[i], yv[i])
			}
		})
	}
	d[n-1] = a[n*n-1]
	return d, e, vs, taus
}

// formQ returns Q = H_0 H_1 ... H_{n-2} (row-major n x n) from
// tridiagonalize's reflectors, H_k = I - tau_k u u^T with u = [0; vs[k]].
// Built from the last reflector back, each H_k touches only the trailing
// block of rows and columns k+1.. (identity elsewhere at that point).
func formQ(par int, n int, vs [][]float64, taus []float64) []float64 {
	q := make([]float64, n*n)
	for i := 0; i < n; i++ {
		q[i*n+i] = 1
	}
	r := make([]float64, n)
	for k := n - 2; k >= 0; k-- {
		v, tau := vs[k], taus[k]
		if v == nil || tau == 0 {
			continue
		}
		p := len(v)
		base := (k+1)*n + k + 1
		rv := r[:p]
		// r = u^T B (columns split between goroutines), B -= tau u r^T.
		rowsPar(par, p, p, func(c0, c1 int) {
			clear(rv[c0:c1])
			for i := 0; i < p; i++ {
				axpyF64(rv[c0:c1], q[base+i*n+c0:base+i*n+c1], v[i])
			}
		})
		rowsPar(par, p, p, func(i0, i1 int) {
			for i := i0; i < i1; i++ {
				axpyF64(q[base+i*n:base+i*n+p], rv, -tau*v[i])
			}
		})
	}
	return q
}

// rowsPar splits [0, n) into contiguous ranges run on up to par goroutines,
// serially when the work (n rows of cost elements each) is small.
func rowsPar(par, n, cost int, f func(lo, hi int)) {
	if par <= 1 || n*cost < 1<<14 {
		f(0, n)
		return
	}
	chunks := min(n, 4*par)
	parallelItems(par, chunks, func(c int) { f(c*n/chunks, (c+1)*n/chunks) })
}

// norm2 is the Euclidean norm of x without overflow or underflow (scaled
// as dnrm2 does, to the largest magnitude).
func norm2(x []float64) float64 {
	amax := 0.0
	for _, v := range x {
		if a := math.Abs(v); a > amax || a != a {
			amax = a
		}
	}
	if amax == 0 || math.IsInf(amax, 0) || math.IsNaN(amax) {
		return amax
	}
	s := 0.0
	inv := 1 / amax
	for _, v := range x {
		t := v * inv
		s += t * t
	}
	return amax * math.Sqrt(s)
}

// fullSymmetric returns the n x n symmetric matrix held in the uplo triangle
// of the row-major a, both triangles set.
func fullSymmetric(a []float64, n int, uplo blas.Uplo) []float64 {
	f := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			v := a[i*n+j]
			if uplo == blas.Upper {
				v = a[j*n+i]
			}
			f[i*n+j], f[j*n+i] = v, v
		}
	}
	return f
}

// dotF64Go is the dot product of x and y[:len(x)] summed in eight
// interleaved partial sums (element i into sum i%8), combined as
// ((s0+s4)+(s2+s6)) + ((s1+s5)+(s3+s7)), then the tail in order: the order
// the vector forms use.
func dotF64Go(x, y []float64) float64 {
	y = y[:len(x)]
	var s [8]float64
	i := 0
	for ; i+8 <= len(x); i += 8 {
		for j := 0; j < 8; j++ {
			s[j] += x[i+j] * y[i+j]
		}
	}
	t := combine8(s)
	for ; i < len(x); i++ {
		t += x[i] * y[i]
	}
	return t
}

func combine8(s [8]float64) float64 {
	return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]))
}

// axpyF64Go sets y += alpha*x.
func axpyF64Go(y, x []float64, alpha float64) {
	x = x[:len(y)]
	for i := range y {
		y[i] += alpha * x[i]
	}
}

// rank2F64Go sets row -= vi*w + wi*v.
func rank2F64Go(row, v, w []float64, vi, wi float64) {
	v, w = v[:len(row)], w[:len(row)]
	for j := range row {
		row[j] -= vi*w[j] + wi*v[j]
	}
}
