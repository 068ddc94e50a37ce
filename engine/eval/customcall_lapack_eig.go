package eval

import (
	"fmt"
	"math/cmplx"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/lapack"
	"gonum.org/v1/gonum/lapack/gonum"

	"goldtrace/engine/hlo"
)

func init() {
	for _, t := range []string{"ssyevd", "dsyevd", "cheevd", "zheevd"} {
		RegisterCustomCall("lapack_"+t+"_ffi", lapackSyevd)
	}
}

// lapackSyevd is ?syevd / ?heevd: eigenvalues (ascending) and, for mode 'V',
// orthonormal eigenvectors (the columns of the first result) of the
// symmetric (Hermitian) matrix held in the uplo triangle. Results: vectors,
// real w[n], info. Complex matrices go through heevd below.
//
// gonum has no divide-and-conquer driver; Dsyev (tridiagonal reduction, then
// implicit QL/QR) is what dsyevd itself does for n <= 25 (dstedc hands small
// problems to dsteqr), so eigenvector signs agree there; beyond that LAPACK's
// divide and conquer may flip some, which callers cannot rely on anyway. With
// mode 'N' the first result is the input with its uplo triangle destroyed, as
// in LAPACK, but not with the same values.
func lapackSyevd(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	x, batch, n, cols, err := lapackMatrix(args, 0, "syevd a")
	if err != nil {
		return Value{}, err
	}
	if n != cols {
		return Value{}, fmt.Errorf("operand must be square, got %v", x)
	}
	shapes, err := lapackResultShapes(in, batch*n*n, batch*n, batch)
	if err != nil {
		return Value{}, err
	}
	attrs := ffiAttrs(in)
	jobz, uplo := lapack.EVCompute, blas.Lower
	switch ffiChar(attrs, "mode", 'V') {
	case 'V':
	case 'N':
		jobz = lapack.EVNone
	default:
		return Value{}, fmt.Errorf("mode %q is not 'V' or 'N'", ffiChar(attrs, "mode", 'V'))
	}
	switch ffiChar(attrs, "uplo", 'L') {
	case 'L':
	case 'U':
		uplo = blas.Upper
	default:
		return Value{}, fmt.Errorf("uplo %q is not 'L' or 'U'", ffiChar(attrs, "uplo", 'L'))
	}
	w, info := make([]float64, batch*n), make([]int32, batch)
	if x.Type.IsComplex() {
		a := complexCopy(x)
		for b := 0; b < batch; b++ {
			if !lapackAttempt(func() bool {
				return heevd(jobz == lapack.EVCompute, uplo == blas.Lower, n, a[b*n*n:(b+1)*n*n], w[b*n:(b+1)*n])
			}) {
				info[b] = 1
			}
		}
		it, err := int32Result(shapes[2], info)
		if err != nil {
			return Value{}, err
		}
		return tupleOf(fromC128s(shapes[0].Elem, shapes[0].Dims, a), fromF64s(shapes[1].Elem, shapes[1].Dims, w), it), nil
	}
	a := realCopy(x)
	if n > 0 {
		impl := gonum.Implementation{}
		work := gonumWork(func(wk []float64) { impl.Dsyev(jobz, uplo, n, a, n, w, wk, -1) })
		for b := 0; b < batch; b++ {
			mat, wb := a[b*n*n:(b+1)*n*n], w[b*n:(b+1)*n]
			if jobz == lapack.EVNone && n > eighFollowMax && syevRealValues(ev.parallelism(), uplo, n, mat, wb) {
				continue
			}
			if jobz == lapack.EVCompute && n > eighFollowMax {
				orig := append([]float64(nil), mat...)
				if syevRealVectors(ev.parallelism(), uplo, n, mat, wb) {
					continue
				}
				copy(mat, orig)
			}
			if !lapackAttempt(func() bool { return impl.Dsyev(jobz, uplo, n, mat, n, wb, work, len(work)) }) {
				info[b] = 1 // LAPACK counts unconverged off-diagonals; jax only tests != 0
			}
		}
	}
	it, err := int32Result(shapes[2], info)
	if err != nil {
		return Value{}, err
	}
	return tupleOf(fromF64s(shapes[0].Elem, shapes[0].Dims, a), fromF64s(shapes[1].Elem, shapes[1].Dims, w), it), nil
}

// heevd is zheevd's algorithm for small n (gonum has no complex LAPACK):
// Householder reduction to a real tridiagonal T = Q^H A Q (zhetd2, lower),
// eigenvectors Z of T by implicit QL/QR (dsteqr, which dstedc uses up to
// n = 25), and V = Q Z, so eigenvector phases follow LAPACK's for uplo 'L'.
// An 'U' matrix is mirrored to its lower triangle first, which gives the same
// eigenvalues but possibly other phases than zhetrd's upper reduction. a
// (row-major n x n) receives V when vectors are wanted.
func heevd(vectors, lower bool, n int, a []complex128, w []float64) bool {
	if n == 0 {
		return true
	}
	// h is the full Hermitian matrix from the referenced triangle.
	h := make([]complex128, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			v := a[i*n+j]
			if !lower {
				v = cmplx.Conj(a[j*n+i])
			}
			h[i*n+j], h[j*n+i] = v, cmplx.Conj(v)
		}
		h[i*n+i] = complex(real(h[i*n+i]), 0)
	}
	d, e, tau := w, make([]float64, n), make([]complex128, n)
	x := make([]complex128, n)
	for i := 0; i < n-1; i++ {
		m := n - i - 1 // order of the trailing block h[i+1:, i+1:]
		v := x[:m]     // the reflector, then (reused) w
		col := make([]complex128, m)
		for r := range col {
			col[r] = h[(i+1+r)*n+i]
		}
		taui := zlarfg(col)
		e[i], tau[i] = real(col[0]), taui
		col[0] = 1
		if taui != 0 {
			// x = taui * A22 v; w = x - (taui/2)(x^H v) v; A22 -= v w^H + w v^H.
			for r := 0; r < m; r++ {
				var s complex128
				for c := 0; c < m; c++ {
					s += h[(i+1+r)*n+i+1+c] * col[c]
				}
				v[r] = taui * s
			}
			var xv complex128
			for r := 0; r < m; r++ {
				xv += cmplx.Conj(v[r]) * col[r]
			}
			alpha := -0.5 * taui * xv
			for r := 0; r < m; r++ {
				v[r] += alpha * col[r]
			}
			for r := 0; r < m; r++ {
				for c := 0; c < m; c++ {
					h[(i+1+r)*n+i+1+c] -= col[r]*cmplx.Conj(v[c]) + v[r]*cmplx.Conj(col[c])
				}
			}
		} else {
			h[(i+1)*n+i+1] = complex(real(h[(i+1)*n+i+1]), 0)
		}
		for r := 1; r < m; r++ {
			h[(i+1+r)*n+i] = col[r] // keep the reflector tail for Q
		}
		d[i] = real(h[i*n+i])
	}
	d[n-1] = real(h[(n-1)*n+n-1])
	impl := gonum.Implementation{}
	if !vectors {
		return impl.Dsterf(n, d, e)
	}
	z := make([]float64, n*n)
	if !impl.Dsteqr(lapack.EVTridiag, n, d, e, z, n, make([]float64, max(1, 2*n-2))) {
		return false
	}
	// Q = diag(1, Q'), Q' the (n-1)x(n-1) product of the reflectors stored
	// below the subdiagonal (zungtr's lower case).
	q := make([]complex128, n*n)
	q[0] = 1
	if n > 1 {
		sub := make([]complex128, (n-1)*(n-1))
		for r := 1; r < n-1; r++ {
			for c := 0; c < r; c++ {
				sub[r*(n-1)+c] = h[(r+1)*n+c]
			}
		}
		zung2r(n-1, n-1, n-1, sub, tau[:n-1])
		for r := 0; r < n-1; r++ {
			copy(q[(r+1)*n+1:(r+2)*n], sub[r*(n-1):(r+1)*(n-1)])
		}
	}
	for r := 0; r < n; r++ {
		for c := 0; c < n; c++ {
			var s complex128
			for k := 0; k < n; k++ {
				s += q[r*n+k] * complex(z[k*n+c], 0)
			}
			a[r*n+c] = s
		}
	}
	return true
}
