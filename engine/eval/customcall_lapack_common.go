package eval

import (
	"fmt"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// Helpers shared by the LAPACK factorization targets (getrf, geqrf, orgqr,
// syevd, gesdd/gesvd). Every target works on batches of matrices: the
// operand_layout_constraints jax attaches ({0,1}, column-major) only make the
// physical buffer what LAPACK expects of the logical matrix, so the evaluator,
// which holds logical row-major values, handles each trailing m x n block as
// the matrix LAPACK sees. Real types are factored in float64 with gonum's
// LAPACK (the reference algorithms, row-major) and rounded once to the result
// type; f32 results therefore differ from sgetrf & co. by f32 rounding error,
// not by algorithm.

// lapackMatrix returns operand i as a batch of m x n matrices of a LAPACK
// element type (f32, f64, c64, c128).
func lapackMatrix(args []Value, i int, what string) (x *tensor.Tensor, batch, m, n int, err error) {
	if i >= len(args) || args[i].T == nil {
		return nil, 0, 0, 0, fmt.Errorf("operand %d (%s) must be an array", i, what)
	}
	x = args[i].T
	switch x.Type {
	case dtype.F32, dtype.F64, dtype.C64, dtype.C128:
	default:
		return nil, 0, 0, 0, fmt.Errorf("operand %d (%s) has element type %v, want f32, f64, c64 or c128", i, what, x.Type)
	}
	batch, m, n, err = matrixBatch(x.Dims, what)
	return x, batch, m, n, err
}

// lapackResultShapes returns the element shapes of in's tuple result, checking
// that there are len(sizes) of them and that element i holds sizes[i] values
// (any number when sizes[i] < 0).
func lapackResultShapes(in *hlo.Instruction, sizes ...int) ([]hlo.Shape, error) {
	if in.Shape.Elem != dtype.Tuple || len(in.Shape.Tuple) != len(sizes) {
		return nil, fmt.Errorf("result must be a %d-tuple, got %v", len(sizes), in.Shape)
	}
	for i, want := range sizes {
		s := in.Shape.Tuple[i]
		if got := tensor.NumElements(s.Dims); want >= 0 && got != int64(want) {
			return nil, fmt.Errorf("result element %d is %s, want %d elements", i, tensor.ShapeString(s.Elem, s.Dims), want)
		}
	}
	return in.Shape.Tuple, nil
}

// int32Result stores LAPACK integers (pivots, info) in an s32 result element.
func int32Result(s hlo.Shape, vals []int32) (*tensor.Tensor, error) {
	if s.Elem != dtype.S32 {
		return nil, fmt.Errorf("integer result is %s, want s32", tensor.ShapeString(s.Elem, s.Dims))
	}
	t := tensor.New(dtype.S32, s.Dims)
	copy(t.I32(), vals)
	return t, nil
}

// tupleOf wraps tensors as a tuple value.
func tupleOf(ts ...*tensor.Tensor) Value {
	vs := make([]Value, len(ts))
	for i, t := range ts {
		vs[i] = ArrayValue(t)
	}
	return TupleValue(vs...)
}

// realCopy returns x's values as a fresh float64 slice the caller may modify
// (toF64s aliases f64 storage).
func realCopy(x *tensor.Tensor) []float64 { return append([]float64(nil), toF64s(x)...) }

// complexCopy is realCopy for complex values.
func complexCopy(x *tensor.Tensor) []complex128 { return append([]complex128(nil), toC128s(x)...) }

// lapackAttempt runs one gonum LAPACK call, reporting false when it fails to
// converge or panics: gonum panics on some non-finite inputs where LAPACK
// returns info > 0, and jax turns info != 0 into NaN results either way.
func lapackAttempt(f func() bool) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return f()
}

// gonumWork returns a workspace of the size a gonum routine asks for when
// called with lwork = -1.
func gonumWork(query func(work []float64)) []float64 {
	w := make([]float64, 1)
	query(w)
	return make([]float64, max(1, int(w[0])))
}
