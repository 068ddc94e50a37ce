package eval

// The typed loops behind elementwise.go. Each kernel switches on the opcode
// once and then runs a tight loop; it returns false (touching nothing) for an
// opcode it does not define, which callers use to validate with empty slices.
// tanh, exp, expm1, log1p and logistic (f32 and f64), f32 log and erf and
// rsqrt (where the CPU's estimate instruction runs) are XLA:CPU's own
// approximations, bit for bit (xlamath.go, xlamath64.go); what XLA:CPU hands
// to libm (sin, cos, tan, cbrt, pow, atan2; f64 log and erf) goes to the
// host's libm where cgo can reach it (libm.go); the rest compute in float64
// and round once: within an ulp or two of XLA:CPU, and correctly rounded
// where XLA's are.

import (
	"math"
	"math/bits"
	"math/cmplx"
	"unsafe"
)

type float interface{ ~float32 | ~float64 }

// sseBlock is how many elements the scalar kernels below run between two
// sseAfterAVX calls: their math is legacy-SSE code, which a signal's return
// or earlier AVX code on the same thread can leave paying a merge penalty on
// every instruction (pow over 1M f32: 8x the CPU time) until the next
// VZEROUPPER.
const sseBlock = 4096

func unaryFloat[F float](op string, x, o []F) bool {
	if xs, ok := any(x).([]float32); ok && (op == "sine" || op == "cosine") && glibcSinCosVerdict() {
		glibcSinCosF32(op == "cosine", xs, any(o).([]float32))
		return true // glibc's sinf/cosf, as XLA:CPU calls them (glibc_sincosf.go)
	}
	if libmUnary(op, x, o) {
		return true // what XLA:CPU calls libm for, computed by libm (libm.go)
	}
	if len(o) > sseBlock {
		for lo := 0; lo < len(o); lo += sseBlock {
			hi := min(lo+sseBlock, len(o))
			if !unaryFloat(op, x[lo:hi], o[lo:hi]) {
				return false
			}
		}
		return true
	}
	sseAfterAVX()
	if xs, ok := any(x).([]float32); ok {
		if f := xlaUnaryF32Kept(op); f != nil {
			f(xs, any(o).([]float32))
			return true
		}
		// sqrt and the roundings: whole vectors first, the loop below the rest.
		if k := unaryF32Vector(op, xs, any(o).([]float32)[:len(xs)]); k > 0 {
			x, o = x[k:], o[k:]
		} else if k := sinCosF32Vector(op, xs, any(o).([]float32)[:len(xs)]); k > 0 {
			x, o = x[k:], o[k:]
		}
	}
	if xs, ok := any(x).([]float64); ok {
		// XLA:CPU's own f64 kernels (xlamath64.go).
		if f := xlaUnaryF64(op); f != nil {
			f(xs, any(o).([]float64))
			return true
		}
		// sqrt, log, sine, cosine: whole vectors with math's bits (f64math_simd_amd64.go).
		if k := unaryF64Vector(op, xs, any(o).([]float64)[:len(xs)]); k > 0 {
			x, o = x[k:], o[k:]
		}
	}
	switch op {
	case "abs":
		// The sign bit cleared, NaN payloads kept (XLA's and-mask; a round trip
		// through float64 would quiet a signaling NaN).
		for i, v := range x {
			if math.Signbit(float64(v)) {
				v = -v
			}
			o[i] = v
		}
	case "negate":
		for i, v := range x {
			o[i] = -v
		}
	case "ceil":
		for i, v := range x {
			o[i] = F(math.Ceil(float64(v)))
		}
	case "floor":
		for i, v := range x {
			o[i] = F(math.Floor(float64(v)))
		}
	case "round-nearest-afz":
		for i, v := range x {
			o[i] = F(math.Round(float64(v)))
		}
	case "round-nearest-even":
		for i, v := range x {
			o[i] = F(math.RoundToEven(float64(v)))
		}
	case "sign":
		for i, v := range x {
			switch {
			case v != v || v == 0:
				o[i] = v
			case v > 0:
				o[i] = 1
			default:
				o[i] = -1
			}
		}
	case "cosine":
		for i, v := range x {
			o[i] = F(math.Cos(float64(v)))
		}
	case "sine":
		for i, v := range x {
			o[i] = F(math.Sin(float64(v)))
		}
	case "tan":
		for i, v := range x {
			o[i] = F(math.Tan(float64(v)))
		}
	case "log":
		for i, v := range x {
			o[i] = F(math.Log(float64(v)))
		}
	case "sqrt":
		for i, v := range x {
			o[i] = F(math.Sqrt(float64(v)))
		}
	case "rsqrt":
		// Correctly rounded, as XLA:CPU's f64 rsqrt on hosts without
		// AVX-512; its estimate-based rsqrt (f32 everywhere, f64 on AVX-512)
		// runs only where xlaEstimateF32/xlaEstimateF64 can (RsqrtMatchesXLA).
		for i, v := range x {
			o[i] = F(1 / math.Sqrt(float64(v)))
		}
	case "cbrt":
		for i, v := range x {
			o[i] = F(math.Cbrt(float64(v)))
		}
	case "sinh":
		for i, v := range x {
			o[i] = F(math.Sinh(float64(v)))
		}
	case "cosh":
		for i, v := range x {
			o[i] = F(math.Cosh(float64(v)))
		}
	case "acos":
		for i, v := range x {
			o[i] = F(math.Acos(float64(v)))
		}
	case "asin":
		for i, v := range x {
			o[i] = F(math.Asin(float64(v)))
		}
	case "atanh":
		for i, v := range x {
			o[i] = F(math.Atanh(float64(v)))
		}
	case "acosh":
		for i, v := range x {
			o[i] = F(math.Acosh(float64(v)))
		}
	case "asinh":
		for i, v := range x {
			o[i] = F(math.Asinh(float64(v)))
		}
	case "erf":
		for i, v := range x {
			o[i] = F(math.Erf(float64(v)))
		}
	case "real":
		copy(o, x)
	case "imag":
		clear(o)
	default:
		return false
	}
	return true
}

func binaryFloat[F float](op string, a, b, o []F) bool {
	if libmBinary(op, a, b, o) {
		return true
	}
	if len(o) > sseBlock {
		for lo := 0; lo < len(o); lo += sseBlock {
			hi := min(lo+sseBlock, len(o))
			if !binaryFloat(op, a[lo:hi], b[lo:hi], o[lo:hi]) {
				return false
			}
		}
		return true
	}
	sseAfterAVX()
	if xs, ok := any(a).([]float32); ok && len(o) > 0 {
		// The whole vectors first (binary_simd_amd64.go), then the tail below.
		k := binaryF32Vector(op, xs, any(b).([]float32), any(o).([]float32))
		if op == "power" {
			k = powF32Vector(xs, any(b).([]float32), any(o).([]float32))
		}
		a, b, o = a[k:], b[k:], o[k:]
	}
	switch op {
	case "add":
		for i := range o {
			o[i] = a[i] + b[i]
		}
	case "subtract":
		for i := range o {
			o[i] = a[i] - b[i]
		}
	case "multiply":
		for i := range o {
			o[i] = a[i] * b[i]
		}
	case "divide":
		for i := range o {
			o[i] = a[i] / b[i]
		}
	case "remainder":
		for i := range o {
			o[i] = F(math.Mod(float64(a[i]), float64(b[i])))
		}
	case "power":
		for i := range o {
			o[i] = F(math.Pow(float64(a[i]), float64(b[i])))
		}
	case "atan2":
		for i := range o {
			o[i] = F(math.Atan2(float64(a[i]), float64(b[i])))
		}
	case "maximum":
		// XLA:CPU: NaN propagates from either side, and +0 > -0.
		for i := range o {
			x, y := a[i], b[i]
			switch {
			case x != x || x > y:
				o[i] = x
			case y != y || y > x:
				o[i] = y
			case math.Signbit(float64(x)):
				o[i] = y
			default:
				o[i] = x
			}
		}
	case "minimum":
		for i := range o {
			x, y := a[i], b[i]
			switch {
			case x != x || x < y:
				o[i] = x
			case y != y || y < x:
				o[i] = y
			case math.Signbit(float64(x)):
				o[i] = x
			default:
				o[i] = y
			}
		}
	default:
		return false
	}
	return true
}

// isSigned reports whether T is a signed integer type.
func isSigned[T integer]() bool { return ^T(0) < 0 }

// signExtend interprets the low width bits of v as a two's-complement number.
func signExtend(v uint64, width int) int64 {
	s := uint(64 - width)
	return int64(v<<s) >> s
}

func unaryInt[T integer](op string, x, o []T, width int) bool {
	signed := isSigned[T]()
	mask := uint64(1)<<uint(width) - 1
	if width == 64 {
		mask = ^uint64(0)
	}
	switch op {
	case "negate":
		for i, v := range x {
			o[i] = -v
		}
	case "abs":
		for i, v := range x {
			if signed && v < 0 {
				v = -v
			}
			o[i] = v
		}
	case "not":
		for i, v := range x {
			o[i] = ^v
		}
	case "sign":
		for i, v := range x {
			switch {
			case v > 0:
				o[i] = 1
			case v < 0:
				o[i] = ^T(0) // -1; only reachable for signed T
			default:
				o[i] = 0
			}
		}
	case "popcnt":
		// Sub-byte types count the bits of their 8-bit (sign-extended)
		// storage, as XLA:CPU does.
		pm := mask
		if width < 8 {
			pm = 0xFF
		}
		for i, v := range x {
			o[i] = T(bits.OnesCount64(uint64(v) & pm))
		}
	case "count-leading-zeros":
		for i, v := range x {
			o[i] = T(bits.LeadingZeros64(uint64(v)&mask) - (64 - width))
		}
	case "real":
		copy(o, x)
	default:
		return false
	}
	return true
}

func binaryInt[T integer](op string, a, b, o []T, width int) bool {
	signed := isSigned[T]()
	uw := uint64(width)
	mask := uint64(1)<<uw - 1
	if width == 64 {
		mask = ^uint64(0)
	}
	switch op {
	case "add":
		for i := range o {
			o[i] = a[i] + b[i]
		}
	case "subtract":
		for i := range o {
			o[i] = a[i] - b[i]
		}
	case "multiply":
		for i := range o {
			o[i] = a[i] * b[i]
		}
	case "divide":
		// x/0 is all ones (-1 signed, max unsigned); Go already gives
		// INT_MIN/-1 = INT_MIN without trapping.
		for i := range o {
			if b[i] == 0 {
				o[i] = ^T(0)
			} else {
				o[i] = a[i] / b[i]
			}
		}
	case "remainder":
		for i := range o {
			if b[i] == 0 {
				o[i] = a[i]
			} else {
				o[i] = a[i] % b[i]
			}
		}
	case "maximum":
		for i := range o {
			o[i] = max(a[i], b[i])
		}
	case "minimum":
		for i := range o {
			o[i] = min(a[i], b[i])
		}
	case "and":
		for i := range o {
			o[i] = a[i] & b[i]
		}
	case "or":
		for i := range o {
			o[i] = a[i] | b[i]
		}
	case "xor":
		for i := range o {
			o[i] = a[i] ^ b[i]
		}
	case "shift-left":
		// Counts are compared as unsigned, so negative counts shift everything out.
		for i := range o {
			if c := uint64(b[i]) & mask; c >= uw {
				o[i] = 0
			} else {
				o[i] = a[i] << c
			}
		}
	case "shift-right-logical":
		for i := range o {
			if c := uint64(b[i]) & mask; c >= uw {
				o[i] = 0
			} else {
				o[i] = T((uint64(a[i]) & mask) >> c)
			}
		}
	case "shift-right-arithmetic":
		// Unsigned operands shift as the signed type of the same width.
		for i := range o {
			c := uint64(b[i]) & mask
			if c >= uw {
				c = uw - 1
			}
			o[i] = T(signExtend(uint64(a[i]), width) >> c)
		}
	case "power":
		// XLA:CPU's square-and-multiply over the exponent's low 6 bits; a
		// negative exponent (sign bit of the width set, even for unsigned
		// types) gives 1 for base 1 and 0 otherwise.
		for i := range o {
			base, e := a[i], uint64(b[i])&mask
			if signExtend(e, width) < 0 {
				if base == 1 {
					o[i] = 1
				} else {
					o[i] = 0
				}
				continue
			}
			acc := T(1)
			for k := 0; k < 6; k++ {
				if e&1 == 1 {
					acc *= base
				}
				base *= base
				e >>= 1
			}
			o[i] = acc
		}
	case "mulhi":
		for i := range o {
			o[i] = T(mulhi(uint64(a[i]), uint64(b[i]), width, signed))
		}
	default:
		return false
	}
	return true
}

// mulhi returns the high width bits of the 2*width-bit product of a and b
// (sign- or zero-extended from width bits).
func mulhi(a, b uint64, width int, signed bool) uint64 {
	if width < 64 {
		if signed {
			p := signExtend(a, width) * signExtend(b, width)
			return uint64(p >> uint(width))
		}
		m := uint64(1)<<uint(width) - 1
		return ((a & m) * (b & m)) >> uint(width)
	}
	hi, _ := bits.Mul64(a, b)
	if signed {
		// Correct the unsigned high word for negative factors.
		if int64(a) < 0 {
			hi -= b
		}
		if int64(b) < 0 {
			hi -= a
		}
	}
	return hi
}

type cplx interface{ ~complex64 | ~complex128 }

func unaryCplx[C cplx](op string, x, o []C) bool {
	if len(o) > sseBlock {
		for lo := 0; lo < len(o); lo += sseBlock {
			hi := min(lo+sseBlock, len(o))
			if !unaryCplx(op, x[lo:hi], o[lo:hi]) {
				return false
			}
		}
		return true
	}
	sseAfterAVX()
	if isC64(*new(C)) {
		if complexXLA[C, float32](op, x, o) {
			return true
		}
	} else if complexXLA[C, float64](op, x, o) {
		return true
	}
	switch op {
	case "negate":
		for i, v := range x {
			o[i] = -v
		}
	case "sign":
		for i, v := range x {
			z := complex128(v)
			switch {
			case z == 0:
				o[i] = v
			case isC64(v):
				re, im := float32(real(z)), float32(imag(z))
				m := absComplexXLA(re, im)
				o[i] = C(complex(float64(re/m), float64(im/m)))
			default:
				m := absComplexXLA(real(z), imag(z))
				o[i] = C(complex(real(z)/m, imag(z)/m))
			}
		}
	case "sqrt":
		for i, v := range x {
			o[i] = C(cmplx.Sqrt(complex128(v)))
		}
	case "rsqrt":
		for i, v := range x {
			o[i] = C(1 / cmplx.Sqrt(complex128(v)))
		}
	case "cbrt":
		for i, v := range x {
			o[i] = C(cmplx.Pow(complex128(v), 1.0/3))
		}
	case "exponential":
		for i, v := range x {
			o[i] = C(cmplx.Exp(complex128(v)))
		}
	case "exponential-minus-one":
		for i, v := range x {
			o[i] = C(cexpm1(complex128(v)))
		}
	case "log":
		for i, v := range x {
			o[i] = C(cmplx.Log(complex128(v)))
		}
	case "log-plus-one":
		for i, v := range x {
			o[i] = C(clog1p(complex128(v)))
		}
	case "logistic":
		for i, v := range x {
			o[i] = C(1 / (1 + cmplx.Exp(-complex128(v))))
		}
	case "sine":
		for i, v := range x {
			o[i] = C(cmplx.Sin(complex128(v)))
		}
	case "cosine":
		for i, v := range x {
			o[i] = C(cmplx.Cos(complex128(v)))
		}
	case "tan":
		for i, v := range x {
			o[i] = C(cmplx.Tan(complex128(v)))
		}
	case "tanh":
		for i, v := range x {
			o[i] = C(cmplx.Tanh(complex128(v)))
		}
	case "sinh":
		for i, v := range x {
			o[i] = C(cmplx.Sinh(complex128(v)))
		}
	case "cosh":
		for i, v := range x {
			o[i] = C(cmplx.Cosh(complex128(v)))
		}
	case "asin":
		for i, v := range x {
			o[i] = C(cmplx.Asin(complex128(v)))
		}
	case "acos":
		for i, v := range x {
			o[i] = C(cmplx.Acos(complex128(v)))
		}
	case "asinh":
		for i, v := range x {
			o[i] = C(cmplx.Asinh(complex128(v)))
		}
	case "acosh":
		for i, v := range x {
			o[i] = C(cmplx.Acosh(complex128(v)))
		}
	case "atanh":
		for i, v := range x {
			o[i] = C(cmplx.Atanh(complex128(v)))
		}
	default:
		return false
	}
	return true
}

// cexpm1 is e^z - 1 without cancellation for small z.
func cexpm1(z complex128) complex128 {
	a, b := real(z), imag(z)
	s := math.Sin(b / 2)
	return complex(math.Expm1(a)*math.Cos(b)-2*s*s, math.Exp(a)*math.Sin(b))
}

// clog1p is log(1+z) without cancellation for small z.
func clog1p(z complex128) complex128 {
	a, b := real(z), imag(z)
	return complex(0.5*math.Log1p(a*(2+a)+b*b), math.Atan2(b, 1+a))
}

// complexPart computes abs, real or imag of complex elements into their real type.
func complexPart[C cplx, F float](op string, x []C, o []F) {
	if xs, ok := any(x).([]complex64); ok && (op == "real" || op == "imag") {
		// The part's own bits, every other float of the pairs.
		parts, out := rawView[float32](unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(xs))), 8*len(xs))), any(o).([]float32)
		k := 0
		if op == "imag" {
			k = 1
		}
		out = out[:len(xs)]
		for i := range out {
			out[i] = parts[2*i+k]
		}
		return
	}
	switch op {
	case "abs":
		for i, v := range x {
			z := complex128(v)
			if isC64(v) {
				o[i] = F(absComplexXLA(float32(real(z)), float32(imag(z))))
			} else {
				o[i] = F(absComplexXLA(real(z), imag(z)))
			}
		}
	case "real":
		for i, v := range x {
			o[i] = F(real(complex128(v)))
		}
	case "imag":
		for i, v := range x {
			o[i] = F(imag(complex128(v)))
		}
	}
}

func binaryCplx[C cplx](op string, a, b, o []C) bool {
	if len(o) > sseBlock {
		for lo := 0; lo < len(o); lo += sseBlock {
			hi := min(lo+sseBlock, len(o))
			if !binaryCplx(op, a[lo:hi], b[lo:hi], o[lo:hi]) {
				return false
			}
		}
		return true
	}
	sseAfterAVX()
	switch op {
	case "add":
		for i := range o {
			o[i] = a[i] + b[i]
		}
	case "subtract":
		for i := range o {
			o[i] = a[i] - b[i]
		}
	case "multiply":
		for i := range o {
			o[i] = mulComplexXLA(a[i], b[i])
		}
	case "divide":
		for i := range o {
			x, y := complex128(a[i]), complex128(b[i])
			if isC64(a[i]) {
				re, im := divComplexXLA(float32(real(x)), float32(imag(x)), float32(real(y)), float32(imag(y)))
				o[i] = C(complex(float64(re), float64(im)))
			} else {
				re, im := divComplexXLA(real(x), imag(x), real(y), imag(y))
				o[i] = C(complex(re, im))
			}
		}
	case "power":
		for i := range o {
			o[i] = C(cmplx.Pow(complex128(a[i]), complex128(b[i])))
		}
	default:
		return false
	}
	return true
}

// mulComplexXLA is XLA:CPU's complex product: one product fused into each
// part, re = fma(ar, br, -ai*bi), im = fma(ai, br, ar*bi).
func mulComplexXLA[C cplx](a, b C) C {
	x, y := complex128(a), complex128(b)
	return C(complex(fmaPart[C](real(x), real(y), -roundPart[C](imag(x)*imag(y))),
		fmaPart[C](imag(x), real(y), roundPart[C](real(x)*imag(y)))))
}

// roundPart rounds v to the component precision of C.
func roundPart[C cplx](v float64) float64 {
	var z C
	if isC64(z) {
		return float64(float32(v))
	}
	return v
}

// fmaPart is a*b+c rounded once to the component precision of C.
func fmaPart[C cplx](a, b, c float64) float64 {
	var z C
	if isC64(z) {
		return float64(float32(a*b + c)) // a*b is exact in f64 for f32 inputs
	}
	return math.FMA(a, b, c)
}

func isC64[C cplx](z C) bool { _, ok := any(z).(complex64); return ok }
