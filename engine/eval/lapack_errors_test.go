package eval

import (
	"math"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func lapackInstr(target, config string, results ...hlo.Shape) *hlo.Instruction {
	shape := hlo.Shape{Elem: dtype.Tuple, Tuple: results}
	if len(results) == 1 {
		shape = results[0]
	}
	return &hlo.Instruction{Name: "cc", Opcode: "custom-call", CustomCallTarget: target, BackendConfig: config, Shape: shape}
}

func sh(t dtype.Type, dims ...int64) hlo.Shape { return hlo.Shape{Elem: t, Dims: dims} }

func filled(t dtype.Type, v float64, dims ...int64) Value {
	x := tensor.New(t, dims)
	vals := make([]float64, x.NumElements())
	for i := range vals {
		vals[i] = v
	}
	return ArrayValue(fromF64s(t, dims, vals))
}

// Malformed custom-calls are errors naming the problem, never panics.
func TestLapackMalformed(t *testing.T) {
	f64 := dtype.F64
	cases := []struct {
		name string
		in   *hlo.Instruction
		args []Value
		want string
	}{
		{"getrf rank 1", lapackInstr("lapack_dgetrf_ffi", "", sh(f64, 3), sh(dtype.S32, 3), sh(dtype.S32)), []Value{filled(f64, 1, 3)}, "rank >= 2"},
		{"getrf int", lapackInstr("lapack_dgetrf_ffi", "", sh(dtype.S32, 2, 2), sh(dtype.S32, 2), sh(dtype.S32)), []Value{filled(dtype.S32, 1, 2, 2)}, "element type"},
		{"getrf no operand", lapackInstr("lapack_dgetrf_ffi", "", sh(f64, 2, 2), sh(dtype.S32, 2), sh(dtype.S32)), nil, "operand 0"},
		{"getrf bad pivots", lapackInstr("lapack_dgetrf_ffi", "", sh(f64, 2, 2), sh(dtype.S32, 3), sh(dtype.S32)), []Value{filled(f64, 1, 2, 2)}, "result element 1"},
		{"getrf pivots f32", lapackInstr("lapack_dgetrf_ffi", "", sh(f64, 2, 2), sh(dtype.F32, 2), sh(dtype.S32)), []Value{filled(f64, 1, 2, 2)}, "want s32"},
		{"getrf not tuple", lapackInstr("lapack_dgetrf_ffi", "", sh(f64, 2, 2)), []Value{filled(f64, 1, 2, 2)}, "3-tuple"},
		{"orgqr wide", lapackInstr("lapack_dorgqr_ffi", "", sh(f64, 2, 3)), []Value{filled(f64, 1, 2, 3), filled(f64, 1, 2)}, "m >= n >= k"},
		{"orgqr no tau", lapackInstr("lapack_dorgqr_ffi", "", sh(f64, 3, 2)), []Value{filled(f64, 1, 3, 2)}, "operand 1"},
		{"syevd not square", lapackInstr("lapack_dsyevd_ffi", "{mode = 86 : ui8, uplo = 76 : ui8}", sh(f64, 2, 3), sh(f64, 2), sh(dtype.S32)), []Value{filled(f64, 1, 2, 3)}, "square"},
		{"syevd bad mode", lapackInstr("lapack_dsyevd_ffi", "{mode = 65 : ui8, uplo = 76 : ui8}", sh(f64, 2, 2), sh(f64, 2), sh(dtype.S32)), []Value{filled(f64, 1, 2, 2)}, "mode"},
		{"gesdd mode O", lapackInstr("lapack_dgesdd_ffi", "{mode = 79 : ui8}", sh(f64, 3, 2), sh(f64, 2), sh(f64, 3, 3), sh(f64, 2, 2), sh(dtype.S32)), []Value{filled(f64, 1, 3, 2)}, "mode"},
		{"gesdd bad u", lapackInstr("lapack_dgesdd_ffi", "{mode = 65 : ui8}", sh(f64, 3, 2), sh(f64, 2), sh(f64, 3, 2), sh(f64, 2, 2), sh(dtype.S32)), []Value{filled(f64, 1, 3, 2)}, "result element 2"},
		{"zgesdd real u", lapackInstr("lapack_zgesdd_ffi", "{mode = 65 : ui8}", sh(dtype.C128, 2, 2), sh(f64, 2), sh(f64, 2, 2), sh(dtype.C128, 2, 2), sh(dtype.S32)), []Value{filled(dtype.C128, 1, 2, 2)}, "result element 2"},
		{"cgesvd bad vt", lapackInstr("lapack_cgesvd_ffi", "{mode = 83 : ui8}", sh(dtype.C64, 3, 2), sh(dtype.F32, 2), sh(dtype.C64, 3, 2), sh(dtype.C64, 3, 2), sh(dtype.S32)), []Value{filled(dtype.C64, 1, 3, 2)}, "result element 3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := evalCustomCall(nil, c.in, c.args)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// Non-finite inputs must come back (LAPACK's own results there are
// implementation accidents), without panics or hangs.
func TestLapackNonFinite(t *testing.T) {
	f64, s32 := dtype.F64, dtype.S32
	for _, v := range []float64{math.NaN(), math.Inf(1)} {
		for _, c := range []struct {
			in   *hlo.Instruction
			args []Value
		}{
			{lapackInstr("lapack_dgetrf_ffi", "", sh(f64, 3, 3), sh(s32, 3), sh(s32)), []Value{filled(f64, v, 3, 3)}},
			{lapackInstr("lapack_dgeqrf_ffi", "", sh(f64, 3, 3), sh(f64, 3)), []Value{filled(f64, v, 3, 3)}},
			{lapackInstr("lapack_dsyevd_ffi", "{mode = 86 : ui8, uplo = 76 : ui8}", sh(f64, 3, 3), sh(f64, 3), sh(s32)), []Value{filled(f64, v, 3, 3)}},
			{lapackInstr("lapack_zheevd_ffi", "{mode = 86 : ui8, uplo = 76 : ui8}", sh(dtype.C128, 3, 3), sh(f64, 3), sh(s32)), []Value{filled(dtype.C128, v, 3, 3)}},
			{lapackInstr("lapack_dgesdd_ffi", "{mode = 65 : ui8}", sh(f64, 3, 2), sh(f64, 2), sh(f64, 3, 3), sh(f64, 2, 2), sh(s32)), []Value{filled(f64, v, 3, 2)}},
			{lapackInstr("lapack_dgesvd_ffi", "{mode = 83 : ui8}", sh(f64, 2, 4), sh(f64, 2), sh(f64, 2, 2), sh(f64, 2, 4), sh(s32)), []Value{filled(f64, v, 2, 4)}},
			{lapackInstr("lapack_zgesdd_ffi", "{mode = 65 : ui8}", sh(dtype.C128, 2, 3), sh(f64, 2), sh(dtype.C128, 2, 2), sh(dtype.C128, 3, 3), sh(s32)), []Value{filled(dtype.C128, v, 2, 3)}},
		} {
			if _, err := evalCustomCall(nil, c.in, c.args); err != nil {
				t.Errorf("%s on %v: %v", c.in.CustomCallTarget, v, err)
			}
		}
	}
}
