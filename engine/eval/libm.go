package eval

import (
	"os"

	"goldtrace/internal/hostlibm"
)

// XLA:CPU does not approximate every transcendental itself: sin, cos, tan,
// cbrt, pow and atan2 (f32 and f64), f64 log and f64 erf are calls into the
// C library of the process its code runs in, made with flush-to-zero and
// denormals-are-zero set. Measured on glibc 2.36 with jax 0.10.2:
// jax.jit(jnp.sin) equals sinf on every one of 50000 f32 inputs, and
// likewise each function above; Go's math (through float64, rounded once)
// differed on 1-4% of f32 inputs and 14-26% of f64 ones. glibc picks each
// function's variant (FMA or not) from the CPU, so only the same library on
// the same CPU gives the same bits: goldtrace calls it in place
// (internal/hostlibm) where cgo reaches it, and Go's math elsewhere.
//
// Callers flush operands and results as for the Go kernels
// (keepsSubnormals, fixSubnormalPaths, fixCbrtSubnormals): under
// denormals-are-zero libm sees a flushed operand as XLA's code does.

// libmF32 and libmF64 are the opcodes XLA:CPU hands to libm, per element
// type (f32 log and erf are XLA's own polynomials, xlamath.go).
var (
	libmF32 = map[string]hostlibm.Func{"sine": hostlibm.Sin, "cosine": hostlibm.Cos, "tan": hostlibm.Tan,
		"cbrt": hostlibm.Cbrt, "power": hostlibm.Pow, "atan2": hostlibm.Atan2}
	libmF64 = map[string]hostlibm.Func{"sine": hostlibm.Sin, "cosine": hostlibm.Cos, "tan": hostlibm.Tan,
		"cbrt": hostlibm.Cbrt, "log": hostlibm.Log, "erf": hostlibm.Erf, "power": hostlibm.Pow, "atan2": hostlibm.Atan2}
)

// hostLibmName is the C library libmUnary and libmBinary call.
func hostLibmName() string {
	if libmDisabled {
		return "none (Go math)"
	}
	return hostlibm.Name()
}

// libmDisabled sends every op to the Go kernels (tests compare the two;
// GOLDTRACE_NO_HOST_LIBM=1 asks for it, to tell a libm difference from
// another).
var libmDisabled = !hostlibm.Available || os.Getenv("GOLDTRACE_NO_HOST_LIBM") != ""

// libmUnary computes op of x into o with the host's libm where XLA:CPU
// does, reporting whether it did.
func libmUnary[F float](op string, x, o []F) bool {
	if libmDisabled || len(o) == 0 {
		return false
	}
	switch xs := any(x).(type) {
	case []float32:
		f, ok := libmF32[op]
		return ok && hostlibm.UnaryF32(f, xs, any(o).([]float32))
	case []float64:
		f, ok := libmF64[op]
		return ok && hostlibm.UnaryF64(f, xs, any(o).([]float64))
	}
	return false
}

// libmBinary is libmUnary for pow and atan2.
func libmBinary[F float](op string, a, b, o []F) bool {
	if libmDisabled || len(o) == 0 || (op != "power" && op != "atan2") {
		return false
	}
	switch as := any(a).(type) {
	case []float32:
		return hostlibm.BinaryF32(libmF32[op], as, any(b).([]float32), any(o).([]float32))
	case []float64:
		return hostlibm.BinaryF64(libmF64[op], as, any(b).([]float64), any(o).([]float64))
	}
	return false
}
