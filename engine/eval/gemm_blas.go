package eval

import (
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// blasGemm runs complex products (and, where the build says so, float
// products: see floatsOnBLAS) on gonum's BLAS, whose inner loops are
// assembly. It reports false for types and layouts it does not take; the
// packed kernels handle those.
func blasGemm[T number](par, nb, m, n, k int, a []T, la gemmLayout, bm []T, lb gemmLayout, c []T) bool {
	ta, lda, ok := blasOperand(la, m, k)
	if !ok {
		return false
	}
	tb, ldb, ok := blasOperand(lb, k, n)
	if !ok {
		return false
	}
	impl := gonum.Implementation{}
	// gonum parallelises one large product itself; batched ones are spread
	// over goroutines here.
	each := func(f func(b int)) {
		if nb == 1 {
			f(0)
			return
		}
		runParallel(par, nb, func(lo, hi int) {
			for b := lo; b < hi; b++ {
				f(b)
			}
		})
	}
	switch a := any(a).(type) {
	case []float32:
		b, c := any(bm).([]float32), any(c).([]float32)
		if !floatsOnBLAS || !allFinite(a) || !allFinite(b) {
			return false
		}
		each(func(i int) {
			impl.Sgemm(ta, tb, m, n, k, 1, a[i*la.bs:], lda, b[i*lb.bs:], ldb, 1, c[i*m*n:(i+1)*m*n], n)
		})
	case []float64:
		b, c := any(bm).([]float64), any(c).([]float64)
		if !floatsOnBLAS || !allFinite(a) || !allFinite(b) {
			return false
		}
		each(func(i int) {
			impl.Dgemm(ta, tb, m, n, k, 1, a[i*la.bs:], lda, b[i*lb.bs:], ldb, 1, c[i*m*n:(i+1)*m*n], n)
		})
	case []complex128:
		b, c := any(bm).([]complex128), any(c).([]complex128)
		if !allFiniteComplex(a) || !allFiniteComplex(b) {
			return false
		}
		each(func(i int) {
			impl.Zgemm(ta, tb, m, n, k, 1, a[i*la.bs:], lda, b[i*lb.bs:], ldb, 1, c[i*m*n:(i+1)*m*n], n)
		})
	default:
		return false
	}
	return true
}

// allFinite reports whether xs holds no Inf or NaN. gonum's BLAS skips the
// products of zero elements, so 0·Inf would not give the NaN IEEE (and
// XLA:CPU) gives; operands with non-finite values take the packed kernels.
func allFinite[T float32 | float64](xs []T) bool {
	for _, v := range xs {
		if v-v != 0 {
			return false
		}
	}
	return true
}

func allFiniteComplex(xs []complex128) bool {
	for _, v := range xs {
		if r, i := real(v), imag(v); r-r != 0 || i-i != 0 {
			return false
		}
	}
	return true
}

// blasOperand expresses a layout of rows×cols matrices as a BLAS operand:
// row-major with leading dimension ld, or its transpose.
func blasOperand(l gemmLayout, rows, cols int) (blas.Transpose, int, bool) {
	switch {
	case l.cs == 1 && l.rs >= max(cols, 1):
		return blas.NoTrans, l.rs, true
	case l.rs == 1 && l.cs >= max(rows, 1):
		return blas.Trans, l.cs, true
	}
	return blas.NoTrans, 0, false
}

// runParallel splits [0,n) into up to par contiguous chunks run concurrently.
func runParallel(par, n int, f func(lo, hi int)) {
	if par <= 1 || n <= 1 {
		f(0, n)
		return
	}
	chunks := min(par, n)
	var wg sync.WaitGroup
	for i := 0; i < chunks; i++ {
		lo, hi := i*n/chunks, (i+1)*n/chunks
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	wg.Wait()
}
