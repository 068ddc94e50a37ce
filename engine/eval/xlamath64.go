package eval

// Float64 transcendentals computed the way XLA:CPU computes them, bit for
// bit. For f64 exp, tanh, expm1, log1p and logistic XLA:CPU does not call
// libm either: its intrinsics (xla.exp.f64, xla.tanh.f64, ...) and elemental
// emitter build rational approximations in f64 arithmetic, and LLVM
// contracts each multiply feeding an add into one fused multiply-add where
// the multiply has no other use. The constants, the operation order and the
// places where an FMA appears below are read from the LLVM IR and the
// object code (xla_dump_to's *.ir-with-opt.ll and *.o) jaxlib 0.10.2 emits
// on AVX-512 and AVX2 hosts alike; tests/test_xla_f64_math.py sweeps them
// against jax.jit with x64 enabled.
//
// XLA's code runs with flush-to-zero and denormals-are-zero. Callers flush
// operands and results (unary's classF64 path, keepsSubnormals64); the one
// intermediate that can land in the subnormal range and matter is exp's
// final scaling, flushed here (expScale64). Elsewhere a flushed
// intermediate is too small against what it is added to to change a
// rounding. A NaN operand comes back quieted, as the vector instructions
// return it.
//
// Every product XLA:CPU does not fuse is a plain product here: the gc
// compiler fuses nothing on GOAMD64=v1 (the setting the library builds
// with) and only explicit math.FMA calls where XLA fuses. On v3 it may fuse
// a*b+c by itself, so such products are written float64(a*b).

import (
	"math"
)

// Bits of the f64 constants, as the IR spells them (f0x...).
var (
	exp64Lo    = math.Float64frombits(0xC086232BDD7ABCD2) // ln(2^-1022): below it, 0
	exp64Hi    = math.Float64frombits(0x40862E42FEFA39EF) // ln(MaxFloat64): above it, +inf
	exp64Log2e = math.Float64frombits(0x3FF71547652B82FE)
	exp64NegC1 = -math.Float64frombits(0x3FE62E4000000000) // ln 2 in two parts
	exp64NegC2 = -math.Float64frombits(0x3EB7F7D1CF79ABCA)
	exp64P     = [...]float64{math.Float64frombits(0x3F2089CDD5E44BE8), math.Float64frombits(0x3F9F06D10CCA2C7E), 1}
	exp64Q     = [...]float64{math.Float64frombits(0x3EC92EB6BC365FA0), math.Float64frombits(0x3F64AE39B508B6C0),
		math.Float64frombits(0x3FCD17099887E074), 2}

	tanh64Clamp = math.Float64frombits(0x4031B6D58F246197) // about 17.71
	// tanh's odd numerator (the x itself applied last) and even
	// denominator, highest power of x² first.
	tanh64Num = [...]float64{math.Float64frombits(0x3B3F9F82E5D782DF), math.Float64frombits(0x3C2C3C836C04B4C8),
		math.Float64frombits(0x3CEC3379F905E662), math.Float64frombits(0x3D929AFF6C8EDD96),
		math.Float64frombits(0x3E2525A389DCE7C2), math.Float64frombits(0x3EA708819BE51CD9),
		math.Float64frombits(0x3F18996F4026A7FA), math.Float64frombits(0x3F787F80B957ED00),
		math.Float64frombits(0x3FC36FBA9B450E5A), 1}
	tanh64Den = [...]float64{math.Float64frombits(0x3BBE8630CF903250), math.Float64frombits(0x3C90AABCA9A5FEA0),
		math.Float64frombits(0x3D4232981AA2BBA8), math.Float64frombits(0x3DDEE2F015EA8065),
		math.Float64frombits(0x3E681F1947C52304), math.Float64frombits(0x3EE26C82AB46D140),
		math.Float64frombits(0x3F4B2E7C4D488C04), math.Float64frombits(0x3FA1998830265B50),
		math.Float64frombits(0x3FDF0D32A2F7DC79), 1}

	log1p64Small = math.Float64frombits(0x3FDA827999FCEF32) // about sqrt(2)-1
	// log1p's rational function on |x| < log1p64Small, highest power first:
	// x*x²*(num(x)/den(x)) - x²/2 + x.
	log1p64Num = [...]float64{math.Float64frombits(0x3F07BC0962B395CA), math.Float64frombits(0x3FDFE818A0FE1A83),
		math.Float64frombits(0x401A509F46F4FA53), math.Float64frombits(0x403DE9738B8CB9C9),
		math.Float64frombits(0x404E798EB86C3351), math.Float64frombits(0x404C8E7597479A10),
		math.Float64frombits(0x40340A202D99830A)}
	log1p64Den = [...]float64{1, math.Float64frombits(0x402E20359E903E37), math.Float64frombits(0x4054C30B52213498),
		math.Float64frombits(0x406BB86590FCFB56), math.Float64frombits(0x407351945DC908A5),
		math.Float64frombits(0x406B0DB13E48E066), math.Float64frombits(0x404E0F304466448E)}
)

const f64MinNormal = 0x1p-1022

// quietNaN64 is NaN x as an SSE/AVX operation returns it: quieted, payload
// and sign kept.
func quietNaN64(x float64) float64 {
	return math.Float64frombits(math.Float64bits(x) | 1<<51)
}

// expCore64 is XLA:CPU's f64 exp (xla.exp.f64) up to its last product:
// e^x = v * s. x is clamped to [exp64Lo, exp64Hi]; n = floor(x*log2(e) +
// 1/2) (one FMA), r = x - n*ln2 in two FMA steps, e^r = 1 + 2*P(r)/(Q(r) -
// P(r)) with P(r) = r*(1 + p0 r² + p1 r⁴) and Q of degree 6 in r (FMA
// Horner steps in r²), and 2^n applied as three factors 2^(n>>2) (in v)
// and one of 2^(n-3(n>>2)) (s), so that no factor overflows. The caller
// decides the clamped ranges (0, +inf) and the NaN.
func expCore64(x float64) (v, s float64) {
	c := max(min(x, exp64Hi), exp64Lo)
	n := math.Floor(math.FMA(c, exp64Log2e, 0.5))
	g := math.FMA(n, exp64NegC1, c)
	g = math.FMA(n, exp64NegC2, g)
	g2 := float64(g * g)
	p := math.FMA(math.FMA(g2, exp64P[0], exp64P[1]), g2, exp64P[2])
	p = float64(p * g)
	q := math.FMA(math.FMA(math.FMA(g2, exp64Q[0], exp64Q[1]), g2, exp64Q[2]), g2, exp64Q[3])
	y := math.FMA(p/(q-p), 2, 1) // 2r is exact: one rounding either way
	// n converts with truncation (cvttpd2dq; n is integral) and is clamped
	// to ±2099 as XLA's ldexp does; the clamp on x keeps it in [-1022, 1024].
	k := int64(max(min(int32(n), 2099), -2099))
	b := k >> 2
	s1 := math.Float64frombits(uint64(b<<52) + 0x3FF0000000000000)
	v = float64(float64(float64(y*s1)*s1) * s1)
	s = math.Float64frombits(uint64((k-3*b)<<52) + 0x3FF0000000000000)
	return v, s
}

// exp64 is XLA:CPU's f64 exp: 0 below exp64Lo, +inf above exp64Hi, else
// v*s, flushed to zero where that lands below the smallest normal (just
// above exp64Lo).
func exp64(x float64) float64 {
	switch {
	case x != x:
		return quietNaN64(x)
	case x < exp64Lo:
		return 0
	case x > exp64Hi:
		return math.Inf(1)
	}
	v, s := expCore64(x)
	r := float64(v * s)
	if r < f64MinNormal {
		return 0 // FTZ
	}
	return r
}

// tanh64 is XLA:CPU's f64 tanh (xla.tanh.f64): ±1 where |x| >= 20, else
// x*N(x²)/D(x²) on x clamped to ±tanh64Clamp, N and D of degree 9 in x²
// by FMA Horner steps, one division. There is no small-x shortcut: a tiny
// x comes back as x*1/1.
func tanh64(x float64) float64 {
	if x != x {
		return quietNaN64(x)
	}
	if math.Abs(x) >= 20 {
		return math.Copysign(1, x)
	}
	c := max(min(x, tanh64Clamp), -tanh64Clamp)
	c2 := float64(c * c)
	p, q := tanh64Num[0], tanh64Den[0]
	for i := 1; i < len(tanh64Num); i++ {
		p = math.FMA(c2, p, tanh64Num[i])
		q = math.FMA(c2, q, tanh64Den[i])
	}
	return float64(c*p) / q
}

// expm1_64 is XLA:CPU's f64 expm1 (its elemental emitter's, the formula
// of the f32 one, expm1Lanes): exp(x)-1 where |x| > 0.5, else
// tanh(x/2)*(exp(x)+1), and x itself where x/2 flushes to zero (so tiny and
// subnormal x come back unchanged), on XLA's own exp64 and tanh64.
func expm1_64(x float64) float64 {
	if x != x {
		return quietNaN64(x)
	}
	h := x * 0.5
	switch {
	case math.Abs(h) < f64MinNormal: // flushed (FTZ), or zero
		return x
	case x > 0.5 || x < -0.5:
		return exp64(x) - 1
	}
	return float64(tanh64(h) * (exp64(x) + 1))
}

// log1pSmall64 is XLA:CPU's f64 log1p for |x| < log1p64Small (and finite):
// x + (x*x²*(N(x)/D(x)) - x²/2), the last two steps one FMA, N and D by FMA
// Horner steps in x.
func log1pSmall64(x float64) float64 {
	x2 := float64(x * x)
	p, q := log1p64Num[0], log1p64Den[0]
	for i := 1; i < len(log1p64Num); i++ {
		p = math.FMA(p, x, log1p64Num[i])
		q = math.FMA(q, x, log1p64Den[i])
	}
	t := float64(float64(x*x2) * (p / q))
	return x + math.FMA(x2, -0.5, t)
}

// log1p64SmallBits is log1p64Small's bits.
var log1p64SmallBits = math.Float64bits(log1p64Small)

// log1pLarge64 is log1p's other branch, log(x+1) by libm's log as XLA:CPU
// calls it (libm.go), into o.
func log1pLarge64(x, o []float64) {
	for i, v := range x {
		o[i] = v + 1
	}
	if !libmUnary("log", o, o) {
		for i, v := range o {
			o[i] = math.Log(v)
		}
	}
}

// log1p64 is XLA:CPU's f64 log1p over a slice: log(x+1) by libm, except
// log1pSmall64 where |x| < log1p64Small. A chunk at a time, libm's log
// runs only on the elements outside the small branch, gathered (each
// element's log is its own: which others share the call changes no bits),
// and the small branch a vector at a time where the CPU has one.
func log1p64(x, o []float64) {
	o = o[:len(x)]
	const chunk = 512
	var big [chunk]float64
	var at [chunk]int32
	for s := 0; s < len(x); s += chunk {
		xs, os := x[s:min(s+chunk, len(x))], o[s:min(s+chunk, len(x))]
		// Without a branch (a random mix mispredicts): every element is
		// written at k, and k moves on past the big ones. !(|v| < small)
		// is |v|'s bits >= small's (NaNs included), as integers.
		k := 0
		for i, v := range xs {
			big[k], at[k] = v, int32(i)
			k += int((log1p64SmallBits - 1 - math.Float64bits(v)&^(1<<63)) >> 63)
		}
		i := log1pSmallVector(xs, os)
		sseAfterAVX()
		for ; i < len(xs); i++ {
			if math.Abs(xs[i]) < log1p64Small {
				os[i] = log1pSmall64(xs[i])
			}
		}
		if k > 0 {
			log1pLarge64(big[:k], big[:k])
			for j, v := range big[:k] {
				os[at[j]] = v
			}
		}
	}
}

// logistic64 is XLA:CPU's f64 logistic, which it expands to 1/(1+e^-x):
// the exp's last product and the +1 fuse into one FMA; 1 where -x is
// below exp64Lo, 0 where it is above exp64Hi. A NaN comes back negated
// (the negate is a sign flip) and quieted.
func logistic64(x float64) float64 {
	switch {
	case x != x:
		return quietNaN64(-x)
	case x > -exp64Lo:
		return 1
	case x < -exp64Hi:
		return 0
	}
	v, s := expCore64(-x)
	return 1 / math.FMA(v, s, 1)
}

// xlaUnaryF64 returns the slice loop computing op as XLA:CPU does in f64,
// or nil when XLA:CPU's f64 op is not its own approximation (libm's, or
// exact). Where the CPU has a vector version (xlamath64_simd_amd64.go), it
// runs the whole vectors and the scalar kernels the tail.
func xlaUnaryF64(op string) func(x, o []float64) {
	if f := xlaEstimateF64(op); f != nil {
		return f
	}
	scalar := xlaScalarF64(op)
	vector := xlaVectorF64(op)
	if scalar == nil || vector == nil {
		return scalar
	}
	return func(x, o []float64) {
		n := vector(x, o)
		scalar(x[n:], o[n:len(x)])
	}
}

// mapF64 is a scalar kernel over slices.
func mapF64(f func(float64) float64) func(x, o []float64) {
	return func(x, o []float64) {
		o = o[:len(x)]
		for i, v := range x {
			o[i] = f(v)
		}
	}
}

// xlaScalarF64 is xlaUnaryF64 without vector instructions.
func xlaScalarF64(op string) func(x, o []float64) {
	switch op {
	case "exponential":
		return mapF64(exp64)
	case "tanh":
		return mapF64(tanh64)
	case "exponential-minus-one":
		return mapF64(expm1_64)
	case "log-plus-one":
		return log1p64
	case "logistic":
		return mapF64(logistic64)
	}
	return nil
}
