package eval

import (
	"fmt"
	"math/cmplx"
	"strings"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func init() {
	Register("cholesky", evalCholesky)
	Register("triangular-solve", evalTriangularSolve)
}

// Matrices are handled per batch in complex128 (real inputs have zero
// imaginary parts), so one code path serves f32/f64/c64/c128; results are
// rounded once to the result type.

// matrixBatch splits the trailing two dims off dims.
func matrixBatch(dims []int64, what string) (batch, rows, cols int, err error) {
	if len(dims) < 2 {
		return 0, 0, 0, fmt.Errorf("%s operand must have rank >= 2, got %v", what, dims)
	}
	rows, cols = int(dims[len(dims)-2]), int(dims[len(dims)-1])
	return int(tensor.NumElements(dims[:len(dims)-2])), rows, cols, nil
}

// cholesky factors each n x n matrix in place (row-major), reading only the
// lower (or upper) triangle and writing the factor there; the other triangle
// is left as it was. It returns, per matrix, 0 or the 1-based order of the
// first non-positive leading minor (LAPACK's info); NaNs then propagate.
func cholesky(a []complex128, batch, n int, lower bool) []int32 {
	info := make([]int32, batch)
	at := func(m []complex128, i, j int) *complex128 {
		if lower {
			return &m[i*n+j]
		}
		return &m[j*n+i] // upper: work on the conjugate transpose view
	}
	for b := 0; b < batch; b++ {
		m := a[b*n*n : (b+1)*n*n]
		for j := 0; j < n; j++ {
			d := real(*at(m, j, j))
			for k := 0; k < j; k++ {
				l := *at(m, j, k)
				if !lower {
					l = cmplx.Conj(l)
				}
				d -= real(l * cmplx.Conj(l))
			}
			if !(d > 0) && info[b] == 0 {
				info[b] = int32(j + 1)
			}
			dj := complex(sqrtOrNaN(d), 0)
			*at(m, j, j) = dj
			for i := j + 1; i < n; i++ {
				s := *at(m, i, j)
				if !lower {
					s = cmplx.Conj(s)
				}
				for k := 0; k < j; k++ {
					lik, ljk := *at(m, i, k), *at(m, j, k)
					if !lower {
						lik, ljk = cmplx.Conj(lik), cmplx.Conj(ljk)
					}
					s -= lik * cmplx.Conj(ljk)
				}
				v := s / dj
				if !lower {
					v = cmplx.Conj(v)
				}
				*at(m, i, j) = v
			}
		}
	}
	return info
}

func sqrtOrNaN(d float64) float64 {
	if d < 0 {
		return real(cmplx.NaN())
	}
	return real(cmplx.Sqrt(complex(d, 0)))
}

// evalCholesky: XLA:CPU's expander fills the unused triangle with zeros.
func evalCholesky(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if len(args) != 1 || args[0].T == nil {
		return Value{}, fmt.Errorf("cholesky takes one array operand")
	}
	x := args[0].T
	batch, n, cols, err := matrixBatch(x.Dims, "cholesky")
	if err != nil {
		return Value{}, err
	}
	if n != cols {
		return Value{}, fmt.Errorf("cholesky operand must be square, got %v", x.Dims)
	}
	zeroOther := func(set func(k int)) {
		for b := 0; b < batch; b++ {
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					if (in.Lower && j > i) || (!in.Lower && j < i) {
						set(b*n*n + i*n + j)
					}
				}
			}
		}
	}
	if !x.Type.IsComplex() && !in.Shape.Elem.IsComplex() {
		a := realCopy(x)
		choleskyReal(ev.parallelism(), a, batch, n, in.Lower)
		zeroOther(func(k int) { a[k] = 0 })
		return ArrayValue(fromF64s(in.Shape.Elem, in.Shape.Dims, a)), nil
	}
	a := toC128s(x)
	a = append([]complex128(nil), a...)
	cholesky(a, batch, n, in.Lower)
	zeroOther(func(k int) { a[k] = 0 })
	return ArrayValue(fromC128s(in.Shape.Elem, in.Shape.Dims, a)), nil
}

// triSolveSpec is a triangular solve: op(A) X = B (left) or X op(A) = B.
type triSolveSpec struct {
	left, lower, unit bool
	trans             string // "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"
}

func evalTriangularSolve(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if len(args) != 2 || args[0].T == nil || args[1].T == nil {
		return Value{}, fmt.Errorf("triangular-solve takes two array operands")
	}
	spec := triSolveSpec{left: in.LeftSide, lower: in.Lower, unit: in.UnitDiagonal, trans: strings.ToUpper(in.TransposeA)}
	out, err := triangularSolveTo(ev.parallelism(), args[0].T, args[1].T, spec, in.Shape.Elem, in.Shape.Dims)
	if err != nil {
		return Value{}, err
	}
	return ArrayValue(out), nil
}

// triangularSolveTo is triangularSolve with its result rounded to typ: real
// operands take the blocked float64 path (linalg_real.go), complex ones the
// complex128 substitution.
func triangularSolveTo(par int, at, bt *tensor.Tensor, s triSolveSpec, typ dtype.Type, dims []int64) (*tensor.Tensor, error) {
	if !at.Type.IsComplex() && !bt.Type.IsComplex() && !typ.IsComplex() {
		batch, m, rows, cols, err := triSolveShapes(at, bt, s)
		if err != nil {
			return nil, err
		}
		return fromF64s(typ, dims, triangularSolveReal(par, toF64s(at), toF64s(bt), batch, m, rows, cols, s)), nil
	}
	x, err := triangularSolve(at, bt, s)
	if err != nil {
		return nil, err
	}
	return fromC128s(typ, dims, x), nil
}

// triSolveShapes checks a triangular solve's operand shapes.
func triSolveShapes(at, bt *tensor.Tensor, s triSolveSpec) (batch, m, rows, cols int, err error) {
	batch, m, m2, err := matrixBatch(at.Dims, "triangular-solve a")
	if err != nil {
		return 0, 0, 0, 0, err
	}
	bb, rows, cols, err := matrixBatch(bt.Dims, "triangular-solve b")
	if err != nil {
		return 0, 0, 0, 0, err
	}
	k := cols
	if s.left {
		k = rows
	}
	if m != m2 || bb != batch || k != m {
		return 0, 0, 0, 0, fmt.Errorf("triangular-solve shapes a %v and b %v do not agree", at.Dims, bt.Dims)
	}
	return batch, m, rows, cols, nil
}

// triangularSolve solves every batch, reading only the selected triangle of A.
func triangularSolve(at, bt *tensor.Tensor, s triSolveSpec) ([]complex128, error) {
	batch, m, rows, cols, err := triSolveShapes(at, bt, s)
	if err != nil {
		return nil, err
	}
	a, b := toC128s(at), toC128s(bt)
	x := append([]complex128(nil), b...)
	t := make([]complex128, m*m)
	for bi := 0; bi < batch; bi++ {
		am := a[bi*m*m : (bi+1)*m*m]
		// t = op(triangle of A), as a dense matrix.
		for i := 0; i < m; i++ {
			for j := 0; j < m; j++ {
				v := am[i*m+j]
				if (s.lower && j > i) || (!s.lower && j < i) {
					v = 0
				}
				if i == j && s.unit {
					v = 1
				}
				switch s.trans {
				case "TRANSPOSE":
					t[j*m+i] = v
				case "ADJOINT":
					t[j*m+i] = cmplx.Conj(v)
				default:
					t[i*m+j] = v
				}
			}
		}
		lowerEff := s.lower == (s.trans == "" || s.trans == "NO_TRANSPOSE")
		xm := x[bi*rows*cols : (bi+1)*rows*cols]
		if s.left {
			// Column by column: t x[:,c] = b[:,c].
			for c := 0; c < cols; c++ {
				substitute(t, m, lowerEff, func(i int) *complex128 { return &xm[i*cols+c] })
			}
		} else {
			// Row by row: x[r,:] t = b[r,:]  <=>  t^T x[r,:]^T = b[r,:]^T.
			tt := make([]complex128, m*m)
			for i := 0; i < m; i++ {
				for j := 0; j < m; j++ {
					tt[j*m+i] = t[i*m+j]
				}
			}
			for r := 0; r < rows; r++ {
				substitute(tt, m, !lowerEff, func(i int) *complex128 { return &xm[r*cols+i] })
			}
		}
	}
	return x, nil
}

// substitute solves t y = v in place for triangular t, v given by element.
func substitute(t []complex128, m int, lower bool, v func(int) *complex128) {
	if lower {
		for i := 0; i < m; i++ {
			s := *v(i)
			for j := 0; j < i; j++ {
				s -= t[i*m+j] * *v(j)
			}
			*v(i) = s / t[i*m+i]
		}
		return
	}
	for i := m - 1; i >= 0; i-- {
		s := *v(i)
		for j := i + 1; j < m; j++ {
			s -= t[i*m+j] * *v(j)
		}
		*v(i) = s / t[i*m+i]
	}
}
