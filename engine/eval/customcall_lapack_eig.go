package eval

import (
	"fmt"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/lapack"
	"gonum.org/v1/gonum/lapack/gonum"

	"goldtrace/engine/hlo"
)

func init() {
	for _, p := range []string{"s", "d"} {
		RegisterCustomCall("lapack_"+p+"syevd_ffi", lapackSyevd)
	}
}

// lapackSyevd is ?syevd: eigenvalues (ascending) and, for mode 'V',
// orthonormal eigenvectors (the columns of the first result) of the
// symmetric matrix held in the uplo triangle. Results: vectors, w[n], info.
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
	a, w, info := realCopy(x), make([]float64, batch*n), make([]int32, batch)
	if n > 0 {
		impl := gonum.Implementation{}
		work := gonumWork(func(wk []float64) { impl.Dsyev(jobz, uplo, n, a, n, w, wk, -1) })
		for b := 0; b < batch; b++ {
			mat, wb := a[b*n*n:(b+1)*n*n], w[b*n:(b+1)*n]
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
