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
// there; narrowing that float64 to float32 is then correct unless it landed
// exactly halfway between two float32 values, which fma32Tie repairs.
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	s := p + float64(c)
	if math.Float64bits(s)&(1<<29-1) == 1<<28 {
		s = fma32Tie(p, float64(c), s)
	}
	return float32(s)
}

// fma32Tie rounds the float64 sum s = p+c to odd when it was inexact, so
// that the following narrowing to float32 (24 bits out of 53) rounds the
// exact sum once.
func fma32Tie(p, c, s float64) float64 {
	bb := s - p
	e := (p - (s - bb)) + (c - bb) // the exact rounding error of s (TwoSum)
	if e == 0 || s-s != 0 {
		return s
	}
	bits := math.Float64bits(s)
	if (e > 0) == (s > 0) {
		bits++
	} else {
		bits--
	}
	return math.Float64frombits(bits)
}

// tanhXLA is XLA:CPU's f32 tanh: x itself near zero, ±1 beyond 20, and in
// between an odd rational function of degree 13/6 on x clamped to ±7.99881.
func tanhXLA(x float32) float32 {
	ax := float32(math.Abs(float64(x)))
	if ax >= 20 {
		return float32(math.Copysign(1, float64(x)))
	}
	if ax < 4e-4 {
		return x
	}
	const clampTo = 0x1.ffec88p+2
	c := x
	if c < -clampTo {
		c = -clampTo
	}
	if c > clampTo {
		c = clampTo
	}
	c2 := float32(c * c)
	p := fma32(c2, -0x1.3e4b8p-52, 0x1.c266fcp-43)
	p = fma32(c2, p, -0x1.7a6ffep-34)
	p = fma32(c2, p, 0x1.b80082p-25)
	p = fma32(c2, p, 0x1.f28694p-17)
	p = fma32(c2, p, 0x1.4e1bdap-11)
	p = fma32(c2, p, 0x1.40b3b8p-8)
	q := fma32(c2, 0x1.41a7bp-20, 0x1.f12bacp-14)
	q = fma32(c2, q, 0x1.29540ap-9)
	q = fma32(c2, q, 0x1.40b3bap-8)
	return float32(c*p) / q
}

// expXLAParts is XLA:CPU's f32 exp before its last step: e^x = y * scale,
// with y = e^r from a degree-7 polynomial and scale = 2^n built from bits.
// The input is clamped to [-87.8, 88.8] and n to [-127, 127]; scale is 0 for
// n = -127, so exp underflows to 0 a little above -87.8.
func expXLAParts(x float32) (y, scale float32) {
	if x < -87.8 {
		x = -87.8
	}
	if x > 88.8 {
		x = 88.8
	}
	n := float32(math.Floor(float64(fma32(x, 0x1.715476p+0, 0.5))))
	if n < -127 {
		n = -127
	}
	if n > 127 {
		n = 127
	}
	r := fma32(-0x1.63p-1, n, x)
	r = fma32(0x1.bd0106p-13, n, r)
	p := fma32(r, 0x1.a0d2cep-13, 0x1.6e879cp-10)
	p = fma32(p, r, 0x1.11121p-7)
	p = fma32(p, r, 0x1.555382p-5)
	p = fma32(p, r, 0x1.555554p-3)
	p = fma32(p, r, 0.5)
	y = fma32(p, float32(r*r), r) + 1
	scale = math.Float32frombits(uint32(f32ToInt32(n)+127) << 23)
	return y, scale
}

// f32ToInt32 truncates like cvttps2dq: NaN and out-of-range give MinInt32.
func f32ToInt32(v float32) int32 {
	if !(v > -2147483904 && v < 2147483648) {
		return math.MinInt32
	}
	return int32(v)
}

func expXLA(x float32) float32 {
	y, scale := expXLAParts(x)
	return float32(y * scale)
}

// logisticXLA is XLA:CPU's expansion 1/(1+e^-x), where the last multiply of
// the exp and the +1 fuse into one FMA.
func logisticXLA(x float32) float32 {
	y, scale := expXLAParts(-x)
	return 1 / fma32(y, scale, 1)
}

const f32MinNormal = 0x1p-126

// logXLA is XLA:CPU's f32 log (Cephes' logf): x = m * 2^e with m in
// [sqrt(1/2), sqrt(2)), log(m) from a degree-9 polynomial in m-1. Special
// inputs are patched by bit masks: NaN and negatives give the all-ones NaN,
// zero gives -inf, +inf stays.
func logXLA(x float32) float32 {
	switch {
	case x == 0:
		return float32(math.Inf(-1))
	case x == float32(math.Inf(1)):
		return x
	case !(x > 0):
		return math.Float32frombits(0xFFFFFFFF)
	}
	u := x
	if !(u > f32MinNormal) {
		u = f32MinNormal
	}
	bits := math.Float32bits(u)
	e := float32(int32(bits>>23)-127) + 1
	m := math.Float32frombits(bits&0x807FFFFF | 0x3F000000) // in [0.5, 1)
	z := m - 1
	if m < 0x1.6a09e6p-1 {
		e--
		z += m
	}
	z2 := float32(z * z)
	z3 := float32(z2 * z)
	p0 := fma32(z, 0x1.204376p-4, -0x1.d7a37p-4)
	p1 := fma32(z, -0x1.fcba9ep-4, 0x1.23d37ep-3)
	p2 := fma32(z, 0x1.999d58p-3, -0x1.fffff8p-3)
	p0 = fma32(p0, z, 0x1.de4a34p-4)
	p1 = fma32(p1, z, -0x1.555cap-3)
	p2 = fma32(p2, z, 0x1.555554p-2)
	t := fma32(p0, z3, p1)
	t = fma32(t, z3, p2)
	y := fma32(t, z3, float32(-0x1.bd0106p-13*e))
	y = fma32(-z2, 0.5, z) + y
	return fma32(0x1.63p-1, e, y)
}

// log1pXLA is XLA:CPU's f32 log1p: log(1+x) unless |x| < sqrt(2)-1, where a
// rational function of degree 6/6 (Cephes' log1pf) keeps the small values
// accurate.
func log1pXLA(x float32) float32 {
	if !(float32(math.Abs(float64(x))) < 0x1.a8279ap-2) {
		return logXLA(x + 1)
	}
	x2 := float32(x * x)
	p := x + 0x1.e2035ap+3
	p = fma32(p, x, 0x1.4c30b6p+6)
	p = fma32(p, x, 0x1.bb865ap+7)
	p = fma32(p, x, 0x1.351946p+8)
	p = fma32(p, x, 0x1.b0db14p+7)
	p = fma32(p, x, 0x1.e0f304p+5)
	q := fma32(4.527e-05, x, 0x1.fe818ap-2)
	q = fma32(q, x, 0x1.a509f4p+2)
	q = fma32(q, x, 0x1.de9738p+4)
	q = fma32(q, x, 0x1.e798ecp+5)
	q = fma32(q, x, 0x1.c8e75ap+5)
	q = fma32(q, x, 0x1.40a202p+4)
	r := float32(float32(x*x2) * (q / p))
	return x + fma32(x2, -0.5, r)
}

// xlaUnaryF32 returns the slice loop computing op as XLA:CPU does in f32,
// or nil when op has no such implementation here.
func xlaUnaryF32(op string) func(x, o []float32) {
	switch op {
	case "tanh":
		return mapF32(tanhXLA)
	case "exponential":
		return mapF32(expXLA)
	case "log":
		return mapF32(logXLA)
	case "log-plus-one":
		return mapF32(log1pXLA)
	case "logistic":
		return mapF32(logisticXLA)
	}
	return nil
}

// mapF32 applies f to every element; the compiler stencils the loop per f.
func mapF32(f func(float32) float32) func(x, o []float32) {
	return func(x, o []float32) {
		o = o[:len(x)]
		for i, v := range x {
			o[i] = f(v)
		}
	}
}

// keepsSubnormals reports whether XLA:CPU's f32 op returns (a function of)
// its input without arithmetic where subnormals occur, so neither the input
// nor the output is flushed: tanh returns x itself for |x| < 4e-4.
func keepsSubnormals(op string) bool { return op == "tanh" }

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

// unaryNarrowLogistic applies narrowLogistic to a classF32 tensor of type
// other than f32.
func unaryNarrowLogistic(x *tensor.Tensor) *tensor.Tensor {
	xs := daz(asF32(x))
	o := make([]float32, len(xs))
	f := narrowLogistic(x.Type)
	parallelFor(len(xs), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			o[i] = f(xs[i])
		}
	})
	return newFromF32(x.Type, x.Dims, o)
}
