package eval

import (
	"fmt"
	"regexp"
	"strconv"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// The LAPACK typed-FFI targets jax lowers linalg to on CPU. Operands are
// batches of matrices (leading dims batch); the operand_layout_constraints
// make LAPACK see the logical matrices, so they are handled on logical values.
func init() {
	for _, p := range []string{"s", "d", "c", "z"} {
		RegisterCustomCall("lapack_"+p+"potrf_ffi", lapackPotrf)
		RegisterCustomCall("lapack_"+p+"trsm_ffi", lapackTrsm)
	}
}

var ffiAttrRE = regexp.MustCompile(`(\w+)\s*=\s*(-?\d+)\s*:\s*[a-z]+\d+`)

// ffiAttrs reads the integer attributes of a typed-FFI backend_config such as
// `{uplo = 76 : ui8, side = 76 : ui8}`.
func ffiAttrs(in *hlo.Instruction) map[string]int64 {
	out := map[string]int64{}
	for _, m := range ffiAttrRE.FindAllStringSubmatch(in.BackendConfig, -1) {
		if v, err := strconv.ParseInt(m[2], 10, 64); err == nil {
			out[m[1]] = v
		}
	}
	return out
}

// ffiChar returns a character-valued attribute ('L', 'N', ...), or def.
func ffiChar(attrs map[string]int64, name string, def byte) byte {
	if v, ok := attrs[name]; ok {
		return byte(v)
	}
	return def
}

// lapackPotrf returns (factor, s32 info[batch]): the factor in the uplo
// triangle, the other triangle as in the input (LAPACK leaves it untouched).
func lapackPotrf(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if len(args) != 1 || args[0].T == nil {
		return Value{}, fmt.Errorf("takes one matrix operand")
	}
	x := args[0].T
	batch, n, cols, err := matrixBatch(x.Dims, "potrf")
	if err != nil {
		return Value{}, err
	}
	if n != cols {
		return Value{}, fmt.Errorf("operand must be square, got %v", x.Dims)
	}
	lower := ffiChar(ffiAttrs(in), "uplo", 'L') == 'L'
	var factor *tensor.Tensor
	var info []int32
	if x.Type.IsComplex() {
		a := append([]complex128(nil), toC128s(x)...)
		info = cholesky(a, batch, n, lower)
		factor = fromC128s(x.Type, x.Dims, a)
	} else {
		a := realCopy(x)
		info = choleskyReal(ev.parallelism(), a, batch, n, lower)
		factor = fromF64s(x.Type, x.Dims, a)
	}
	it := tensor.New(dtype.S32, x.Dims[:len(x.Dims)-2])
	copy(it.I32(), info)
	return TupleValue(ArrayValue(factor), ArrayValue(it)), nil
}

func lapackTrsm(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if len(args) != 2 || args[0].T == nil || args[1].T == nil {
		return Value{}, fmt.Errorf("takes matrices a and b")
	}
	at := ffiAttrs(in)
	s := triSolveSpec{
		left:  ffiChar(at, "side", 'L') == 'L',
		lower: ffiChar(at, "uplo", 'L') == 'L',
		unit:  ffiChar(at, "diag", 'N') == 'U',
		trans: map[byte]string{'N': "NO_TRANSPOSE", 'T': "TRANSPOSE", 'C': "ADJOINT"}[ffiChar(at, "trans_x", 'N')],
	}
	b := args[1].T
	x, err := triangularSolveTo(ev.parallelism(), args[0].T, b, s, b.Type, b.Dims)
	if err != nil {
		return Value{}, err
	}
	return ArrayValue(x), nil
}
