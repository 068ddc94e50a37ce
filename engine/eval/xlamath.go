package eval

// Float32 transcendentals computed the way XLA:CPU computes them, bit for
// bit. XLA:CPU does not call libm for these: it emits its own polynomial or
// rational approximations in f32 arithmetic, and LLVM contracts a multiply
// feeding an add into one fused multiply-add where the multiply has no other
// use. The constants, the operation order and the places where an FMA
// appears below are read from the LLVM IR and machine code XLA:CPU (jaxlib
// 0.10.2) emits; TestXLAMathSweep checks them against jax.jit on CPU.
//
// Every product that XLA:CPU does not fuse is written as float32(a*b): the
// conversion forbids the Go compiler from fusing it (it may on GOAMD64=v3).

import (
	"math"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// fma32 is a*b+c rounded once to float32, as the vfmadd instructions do.
// The product of two float32 is exact in float64, so only the sum rounds
// there; narrowing that float64 sum to float32 rounds once more, which can
// only go wrong when the sum landed exactly halfway between two float32
// values. That (rare) case is left to fma32Tie.
func fma32(a, b, c float32) float32 {
	s := float64(a)*float64(b) + float64(c)
	if math.Float64bits(s)<<35 == 1<<63 {
		return fma32Tie(a, b, c)
	}
	return float32(s)
}

// fma32Tie is fma32 for a float64 sum on a float32 midpoint: it rounds the
// sum to odd instead (one float64 ulp towards the exact sum when inexact),
// after which narrowing to float32 rounds the exact sum once.
func fma32Tie(a, b, c float32) float32 {
	p, q := float64(a)*float64(b), float64(c)
	s := p + q
	t := s - p
	if e := (p - (s - t)) + (q - t); e != 0 { // the rounding error of s (TwoSum)
		sb := math.Float64bits(s)
		s = math.Float64frombits(sb + uint64(int64(math.Float64bits(e)^sb)>>62|1))
	}
	return float32(s)
}

// xlaLanes is how many elements the f32 kernels below evaluate side by
// side. Their polynomials are long chains of dependent steps; running eight
// independent chains at once (XLA:CPU runs 8 or 16 in vector registers) keeps
// the multiplier busy instead of waiting on each step's latency.
const xlaLanes = 8

// hornerLanes sets p[i] to the polynomial cs[0]*x^n + ... + cs[n] at x[i],
// one fma32 per coefficient.
func hornerLanes(x, p, cs []float32) {
	p = p[:len(x)]
	for i := range p {
		p[i] = cs[0]
	}
	for _, c := range cs[1:] {
		cd := float64(c)
		for i, xi := range x {
			// fma32's common path, inlined by hand: Go will not inline it.
			s := float64(p[i])*float64(xi) + cd
			if math.Float64bits(s)<<35 == 1<<63 {
				s = float64(fma32Tie(p[i], xi, c))
			}
			p[i] = float32(s)
		}
	}
}

// mapLanes runs a lane kernel over whole slices, xlaLanes elements at a time.
func mapLanes(kernel func(x, o []float32)) func(x, o []float32) {
	return func(x, o []float32) {
		o = o[:len(x)]
		for lo := 0; lo < len(x); lo += xlaLanes {
			hi := min(lo+xlaLanes, len(x))
			kernel(x[lo:hi], o[lo:hi])
		}
	}
}

// oneLane applies a lane kernel to a single value.
func oneLane(kernel func(x, o []float32), x float32) float32 {
	in, out := [1]float32{x}, [1]float32{}
	kernel(in[:], out[:])
	return out[0]
}

var (
	tanhNum = [...]float32{-0x1.3e4b8p-52, 0x1.c266fcp-43, -0x1.7a6ffep-34, 0x1.b80082p-25,
		0x1.f28694p-17, 0x1.4e1bdap-11, 0x1.40b3b8p-8}
	tanhDen = [...]float32{0x1.41a7bp-20, 0x1.f12bacp-14, 0x1.29540ap-9, 0x1.40b3bap-8}
	// erf's odd numerator (x^9 down to x^1, the x itself applied last) and
	// even denominator (x^12 down to 1), as decimal float32 literals in XLA.
	erfNum = [...]float32{0.00022905065861350646, 0.0034082910107109506, 0.050955695062380861,
		0.18520832239976145, 1.128379143519084}
	erfDen = [...]float32{-1.1791602954361697e-7, 0.000023547966471313185, 0.0010179625278914885,
		0.014070470171167667, 0.11098505178285362, 0.49746925110067538, 1}
	expPoly = [...]float32{0x1.a0d2cep-13, 0x1.6e879cp-10, 0x1.11121p-7, 0x1.555382p-5,
		0x1.555554p-3, 0.5}
	logPoly0 = [...]float32{0x1.204376p-4, -0x1.d7a37p-4, 0x1.de4a34p-4}
	logPoly1 = [...]float32{-0x1.fcba9ep-4, 0x1.23d37ep-3, -0x1.555cap-3}
	logPoly2 = [...]float32{0x1.999d58p-3, -0x1.fffff8p-3, 0x1.555554p-2}
	log1pNum = [...]float32{1, 0x1.e2035ap+3, 0x1.4c30b6p+6, 0x1.bb865ap+7, 0x1.351946p+8,
		0x1.b0db14p+7, 0x1.e0f304p+5}
	log1pDen = [...]float32{4.527e-05, 0x1.fe818ap-2, 0x1.a509f4p+2, 0x1.de9738p+4,
		0x1.e798ecp+5, 0x1.c8e75ap+5, 0x1.40a202p+4}
)

// tanhLanes is XLA:CPU's f32 tanh: x itself near zero, ±1 beyond 20, and
// in between an odd rational function of degree 13/6 on x clamped to
// ±7.99881.
func tanhLanes(x, o []float32) {
	var c, c2, p, q [xlaLanes]float32
	n := len(x)
	for i, v := range x {
		const clampTo = 0x1.ffec88p+2
		v = max(min(v, clampTo), -clampTo) // NaN stays NaN (Go's min/max propagate it)
		c[i], c2[i] = v, float32(v*v)
	}
	hornerLanes(c2[:n], p[:n], tanhNum[:])
	hornerLanes(c2[:n], q[:n], tanhDen[:])
	o = o[:n]
	for i, v := range x {
		switch ax := float32(math.Abs(float64(v))); {
		case ax >= 20:
			o[i] = float32(math.Copysign(1, float64(v)))
		case ax < 4e-4:
			o[i] = v
		default:
			o[i] = float32(c[i]*p[i]) / q[i]
		}
	}
}

// erfClamp is where XLA:CPU's f32 erf returns ±1: the rational function
// below is within half an ulp of 1 from there on.
const erfClamp = float32(3.832506856900711)

// erfLanes is XLA:CPU's f32 erf (the rational interpolant Eigen uses too):
// ±1 for |x| >= erfClamp, else x*P(x²)/Q(x²), both polynomials by FMA
// Horner steps and nothing clamped first. NaN fails the |x| test and stays
// NaN through the division. bf16 and f16 compute through it in f32.
func erfLanes(x, o []float32) {
	var x2, p, q [xlaLanes]float32
	n := len(x)
	for i, v := range x {
		x2[i] = float32(v * v)
	}
	hornerLanes(x2[:n], p[:n], erfNum[:])
	hornerLanes(x2[:n], q[:n], erfDen[:])
	o = o[:n]
	for i, v := range x {
		if float32(math.Abs(float64(v))) >= erfClamp {
			o[i] = float32(math.Copysign(1, float64(v)))
		} else {
			o[i] = float32(v*p[i]) / q[i]
		}
	}
}

// expLanes is XLA:CPU's f32 exp before its last step: e^x = y * scale, with
// y = e^r from a degree-7 polynomial and scale = 2^n built from bits. The
// input is clamped to [-87.8, 88.8] and n to [-127, 127]; scale is 0 for
// n = -127, so exp underflows to 0 a little above -87.8. With neg set it
// computes e^-x.
func expLanes(x, y, scale []float32, neg bool) {
	var r, p [xlaLanes]float32
	n := len(x)
	for i, v := range x {
		if neg {
			v = -v
		}
		v = max(min(v, 88.8), -87.8)
		k := float32(math.Floor(float64(fma32(v, 0x1.715476p+0, 0.5))))
		k = max(min(k, 127), -127)
		ri := fma32(-0x1.63p-1, k, v)
		r[i] = fma32(0x1.bd0106p-13, k, ri)
		scale[i] = math.Float32frombits(uint32(f32ToInt32(k)+127) << 23)
	}
	hornerLanes(r[:n], p[:n], expPoly[:])
	for i := range n {
		y[i] = fma32(p[i], float32(r[i]*r[i]), r[i]) + 1
	}
}

// f32ToInt32 truncates like cvttps2dq: NaN and out-of-range give MinInt32.
func f32ToInt32(v float32) int32 {
	if !(v > -2147483904 && v < 2147483648) {
		return math.MinInt32
	}
	return int32(v)
}

func expXLALanes(x, o []float32) {
	var y, scale [xlaLanes]float32
	expLanes(x, y[:], scale[:], false)
	for i := range x {
		o[i] = float32(y[i] * scale[i])
	}
}

// logisticLanes is XLA:CPU's expansion 1/(1+e^-x), where the last multiply
// of the exp and the +1 fuse into one FMA.
func logisticLanes(x, o []float32) {
	var y, scale [xlaLanes]float32
	expLanes(x, y[:], scale[:], true)
	for i := range x {
		o[i] = 1 / fma32(y[i], scale[i], 1)
	}
}

func expXLA(x float32) float32 { return oneLane(expXLALanes, x) }

const f32MinNormal = 0x1p-126

// logLanes is XLA:CPU's f32 log (Cephes' logf): x = m * 2^e with m in
// [sqrt(1/2), sqrt(2)), log(m) from a degree-9 polynomial in m-1. Special
// inputs are patched by bit masks: NaN and negatives give the all-ones NaN,
// zero gives -inf, +inf stays.
func logLanes(x, o []float32) {
	var e, z, p0, p1, p2 [xlaLanes]float32
	n := len(x)
	for i, v := range x {
		if !(v > f32MinNormal) {
			v = f32MinNormal
		}
		bits := math.Float32bits(v)
		ei := float32(int32(bits>>23)-127) + 1
		m := math.Float32frombits(bits&0x807FFFFF | 0x3F000000) // in [0.5, 1)
		zi := m - 1
		if m < 0x1.6a09e6p-1 {
			ei--
			zi += m
		}
		e[i], z[i] = ei, zi
	}
	hornerLanes(z[:n], p0[:n], logPoly0[:])
	hornerLanes(z[:n], p1[:n], logPoly1[:])
	hornerLanes(z[:n], p2[:n], logPoly2[:])
	o = o[:n]
	for i, v := range x {
		switch {
		case v == 0:
			o[i] = float32(math.Inf(-1))
		case v == float32(math.Inf(1)):
			o[i] = v
		case !(v > 0):
			o[i] = math.Float32frombits(0xFFFFFFFF)
		default:
			zi, ei := z[i], e[i]
			z2 := float32(zi * zi)
			z3 := float32(z2 * zi)
			t := fma32(p0[i], z3, p1[i])
			t = fma32(t, z3, p2[i])
			y := fma32(t, z3, float32(-0x1.bd0106p-13*ei))
			y = fma32(-z2, 0.5, zi) + y
			o[i] = fma32(0x1.63p-1, ei, y)
		}
	}
}

// log1pLanes is XLA:CPU's f32 log1p: log(1+x) unless |x| < sqrt(2)-1, where
// a rational function of degree 6/6 (Cephes' log1pf) keeps the small values
// accurate. Both are computed for every lane, as XLA:CPU does.
func log1pLanes(x, o []float32) {
	var u, p, q [xlaLanes]float32
	n := len(x)
	for i, v := range x {
		u[i] = v + 1
	}
	logLanes(u[:n], o)
	hornerLanes(x, p[:n], log1pNum[:]) // its first step, 1*x + c, is the plain sum XLA computes
	hornerLanes(x, q[:n], log1pDen[:])
	for i, v := range x {
		if float32(math.Abs(float64(v))) < 0x1.a8279ap-2 {
			x2 := float32(v * v)
			r := float32(float32(v*x2) * (q[i] / p[i]))
			o[i] = v + fma32(x2, -0.5, r)
		}
	}
}

// xlaUnaryF32 returns the slice loop computing op as XLA:CPU does in f32,
// or nil when op has no such implementation here. Where the CPU has a
// vector version (xlamath_simd_amd64.go), it runs the whole vectors and the
// lane kernels below finish the tail. rsqrt has no lane kernel: it is the
// CPU's estimate instruction refined (xlaEstimateF32), or nil.
func xlaUnaryF32(op string) func(x, o []float32) {
	if f := xlaEstimateF32(op); f != nil {
		return f
	}
	scalar := xlaScalarF32(op)
	vector := xlaVectorF32(op)
	if scalar == nil || vector == nil {
		return scalar
	}
	return func(x, o []float32) {
		n := vector(x, o)
		scalar(x[n:], o[n:len(x)])
	}
}

// xlaScalarF32 is xlaUnaryF32 without vector instructions.
func xlaScalarF32(op string) func(x, o []float32) {
	switch op {
	case "tanh":
		return mapLanes(tanhLanes)
	case "exponential":
		return mapLanes(expXLALanes)
	case "exponential-minus-one":
		return mapLanes(expm1Lanes)
	case "log":
		return mapLanes(logLanes)
	case "log-plus-one":
		return mapLanes(log1pLanes)
	case "logistic":
		return mapLanes(logisticLanes)
	case "erf":
		return mapLanes(erfLanes)
	}
	return nil
}

// keepsSubnormals reports whether XLA:CPU's f32 op returns (a function of)
// its input without arithmetic where subnormals occur, so neither the input
// nor the output is flushed: tanh returns x itself for |x| < 4e-4, expm1 x
// itself where x/2 flushes (expm1Lanes), and glibc's sin and tan a tiny x as
// it is.
func keepsSubnormals(op string) bool {
	return op == "tanh" || keepsSubnormals64(op)
}

// keepsSubnormals64 is keepsSubnormals for f64, where XLA's own tanh
// flushes (it has no small-x shortcut) but glibc's sin and tan and XLA's
// expm1 (expm1_64) still return a tiny x unchanged.
func keepsSubnormals64(op string) bool {
	return op == "sine" || op == "tan" || op == "exponential-minus-one"
}

// cbrtOfSubnormalF32 is what XLA:CPU's f32 cbrt returns for every subnormal
// input, of either sign (its exponent manipulation sees a zero exponent
// field): -5.595173541877215e-16. bf16 and f16 compute through f32.
const cbrtOfSubnormalF32 = 0xa6214518

// narrowLogistic is logistic on a type narrower than f32. XLA expands it
// before choosing precisions, so each step of 1/(1+e^-x) (negate, exp, add,
// divide) computes in f32 and rounds to t, with no fused multiply-add.
func narrowLogistic(t dtype.Type) func(float32) float32 {
	round := func(v float32) float32 { return dtype.ToF32(t, dtype.FromF32(t, flush(v))) }
	return func(x float32) float32 {
		e := round(expXLA(round(-x)))
		return round(1 / round(1+e))
	}
}

// f16Expm1 is expm1 on f16, which XLA:CPU computes natively: expm1Lanes'
// formula with each step (exp, tanh, the add, subtract and multiply)
// rounded to f16. (bf16, computed in f32 by float normalization, rounds
// expm1Lanes' result once.)
func f16Expm1(x float32) float32 {
	round := func(v float32) float32 { return dtype.ToF32(dtype.F16, dtype.FromF32(dtype.F16, flush(v))) }
	e := round(expXLA(x))
	h := round(x * 0.5)
	switch {
	case x > 0.5 || x < -0.5:
		return round(e - 1)
	case h == 0:
		return x
	}
	return round(round(oneLane(tanhLanes, h)) * round(e+1))
}

// narrowRoundsInside reports whether unary op on narrow float type t rounds
// to t between its steps (unaryNarrowLogistic), so that it cannot run as
// its f32 kernel rounded once.
func narrowRoundsInside(op string, t dtype.Type) bool {
	return op == "logistic" || op == "exponential-minus-one" && t == dtype.F16
}

// unaryNarrowLogistic applies narrowLogistic (f16Expm1 for expm1) to a
// classF32 tensor of type other than f32.
func unaryNarrowLogistic(x *tensor.Tensor, op string) *tensor.Tensor {
	xs := daz(asF32(x))
	o := make([]float32, len(xs))
	f := narrowLogistic(x.Type)
	if op == "exponential-minus-one" {
		f = f16Expm1
	}
	parallelFor(len(xs), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			o[i] = f(xs[i])
		}
	})
	return newFromF32(x.Type, x.Dims, o)
}

// expm1Lanes is XLA:CPU's f32 expm1 (its elemental emitter's, not glibc's):
// exp(x)-1 where |x| > 0.5, else tanh(x/2)*(exp(x)+1), and x itself where
// x/2 flushes to zero (so subnormal and tiny inputs come back unchanged),
// with XLA's own exp and tanh. Measured bit for bit against jax.jit
// (jaxlib 0.10.2) on 210000 values of every magnitude; the float64 expm1
// it replaces matched on half of them.
func expm1Lanes(x, o []float32) {
	var e, h, t [xlaLanes]float32
	n := len(x)
	for i, v := range x {
		h[i] = v * 0.5
	}
	expXLALanes(x, e[:n])
	tanhLanes(h[:n], t[:n])
	for i, v := range x {
		switch {
		case v > 0.5 || v < -0.5:
			o[i] = e[i] - 1
		case h[i] < 0x1p-126 && h[i] > -0x1p-126: // flushed (FTZ), or zero
			o[i] = v
		default:
			o[i] = t[i] * (e[i] + 1)
		}
	}
}
