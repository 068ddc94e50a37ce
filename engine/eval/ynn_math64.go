package eval

// Float64 elementwise functions as YNNPACK computes them inside a
// __ynn_fusion under jax_enable_x64: jaxlib 0.10.2's
// ynn::*_fp64_x86_avx512f_avx512bw kernels, constants, operation order and
// every FMA read from their machine code (as ynn_math.go's f32 ones), held
// to jax.jit by tests/test_ynn_f64.py. They are not XLA's own f64 kernels
// (xlamath64.go). As in f32, the kernels run under flush-to-zero and
// denormals-are-zero (ynnIn64, ynnOut64).

import (
	"fmt"
	"math"
	"slices"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func ynnIn64(v float64) float64 {
	if v != 0 && math.Abs(v) < 0x1p-1022 {
		return math.Copysign(0, v)
	}
	return v
}

func ynnOut64(v float64) float64 { return ynnIn64(v) }

// x86Max64 and x86Min64 are MAXPD/MINPD with src1 a and src2 b.
func x86Max64(a, b float64) float64 {
	if a > b {
		return a
	}
	return b
}

func x86Min64(a, b float64) float64 {
	if a < b {
		return a
	}
	return b
}

func f64bits(b uint64) float64 { return math.Float64frombits(b) }

var (
	ynnExp64Lo   = f64bits(0xc08628b76e3a7b61) // -709.0896: 2^n is 0 at n = -1023
	ynnExp64Hi   = f64bits(0x40862e42fefa39ef) // 709.7827: 2^n is +inf at n = 1024
	ynnLog2e64   = f64bits(0x3ff71547652b82fe)
	ynnRound64   = f64bits(0x4338000000000000) // 1.5*2^52
	ynnLn2Hi64   = f64bits(0xbfe62e42fee00000) // -ln2, high part
	ynnLn2Lo64   = f64bits(0xbdea39ef35793c76) // -ln2, low part
	ynnExpBias64 = f64bits(0x43300000000003ff) // 2^52 + 1023: (n + it) << 52 is 2^n
	// e^r - 1 = r + r²·(E(r²) + r·O(r²)), E and O by Horner from the first.
	ynnExp64Even = [6]float64{f64bits(0x3e2235b01d3c214d), f64bits(0x3e927e0f467e8431), f64bits(0x3efa01a04566020a),
		f64bits(0x3f56c16c16b2cab6), f64bits(0x3fa5555555555d7a), f64bits(0x3fdffffffffffff8)}
	ynnExp64Odd = [5]float64{f64bits(0x3e5b11e3e4b25337), f64bits(0x3ec71dc4d049219e), f64bits(0x3f2a01a02d49a775),
		f64bits(0x3f811111110be1e1), f64bits(0x3fc555555555572a)}
)

// ynnExpParts64 is ynnExpParts for f64: e^v = p*s + s, s = 2^n from bits
// (0 at n = -1023, +inf at n = 1024, v itself when v is NaN).
func ynnExpParts64(v float64) (p, s float64) {
	t := x86Min64(ynnExp64Hi, x86Max64(ynnExp64Lo, v))
	n := float64(float64(t*ynnLog2e64)+ynnRound64) - ynnRound64
	r := math.FMA(n, ynnLn2Hi64, t)
	r = math.FMA(n, ynnLn2Lo64, r)
	r2 := float64(r * r)
	e := ynnExp64Even[0]
	for _, c := range ynnExp64Even[1:] {
		e = math.FMA(e, r2, c)
	}
	o := ynnExp64Odd[0]
	for _, c := range ynnExp64Odd[1:] {
		o = math.FMA(o, r2, c)
	}
	p = math.FMA(o, r, e)
	p = math.FMA(p, r2, r)
	s = math.Float64frombits(math.Float64bits(n+ynnExpBias64) << 52)
	if v != v {
		s = v
	}
	return p, s
}

// ynnExp64 is ynn::exp_fp64: e^(x*in) * out.
func ynnExp64(x, in, out float64) float64 {
	v := ynnOut64(float64(ynnIn64(x) * in))
	p, s := ynnExpParts64(v)
	e := ynnOut64(math.FMA(p, s, s))
	if math.IsInf(s, 0) {
		e = s
	}
	return ynnOut64(float64(e * out))
}

// unary64 is the scalar function of a unary f64 YNNOp, nil for ops
// without an f64 kernel of their own here.
func (o YNNOp) unary64() func(float64) float64 {
	in, c0, c1 := o.In64, o.C064, o.C164
	switch o.Op {
	case "exp":
		return func(x float64) float64 { return ynnExp64(x, in, c1) }
	case "log":
		return func(x float64) float64 { return ynnLog64(x, in, c1) }
	case "tanh":
		return func(x float64) float64 { return ynnTanh64(ynnOut64(float64(ynnIn64(x)*in)), c0, c1) }
	case "negate":
		return func(x float64) float64 { return ynnOut64(0 - ynnIn64(x)) }
	case "expm1":
		return func(x float64) float64 { return ynnExpm164(x, in, c1) }
	case "log1p":
		return func(x float64) float64 { return ynnLog1p64(x, in, c1) }
	case "rsqrt":
		return func(x float64) float64 { return ynnOut64(1 / math.Sqrt(ynnIn64(x))) }
	case "erf":
		return func(x float64) float64 { return ynnErf64(x, in, c0, c1) }
	}
	return nil
}

// evalYNNElementwise64 is evalYNNElementwise for an f64 op.
func evalYNNElementwise64(in *hlo.Instruction, o YNNOp, args []Value) (Value, error) {
	for _, a := range args {
		if a.T == nil || a.T.Type != dtype.F64 || !slices.Equal(a.T.Dims, in.Shape.Dims) {
			return Value{}, fmt.Errorf("f64 %s takes f64 arrays of the result's shape", o.Op)
		}
	}
	out := tensor.New(dtype.F64, in.Shape.Dims)
	y := out.F64()
	switch len(args) {
	case 1:
		f := o.unary64()
		if f == nil {
			return Value{}, fmt.Errorf("unknown f64 unary op %q", o.Op)
		}
		x := args[0].T.F64()
		parallelForWork(len(y), 24*len(y), func(lo, hi int) {
			i := lo + ynnVectorF64(o, x[lo:hi], y[lo:hi])
			sseAfterAVX()
			for ; i < hi; i++ {
				y[i] = f(x[i])
			}
		})
	case 2:
		m := x86Max64
		switch o.Op {
		case "maximum":
		case "minimum":
			m = x86Min64
		default:
			return Value{}, fmt.Errorf("unknown f64 binary op %q", o.Op)
		}
		a, b := args[0].T.F64(), args[1].T.F64()
		parallelForWork(len(y), 2*len(y), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				y[i] = m(ynnIn64(a[i]), ynnIn64(b[i]))
			}
		})
	default:
		return Value{}, fmt.Errorf("f64 %s: takes one or two operands, got %d", o.Op, len(args))
	}
	return ArrayValue(out), nil
}

var (
	ynnNaN64    = f64bits(0x7ff8000000000000)
	ynnSqrt2_64 = f64bits(0x3ff6a09e667f3bcd)
	ynnLn2_64   = f64bits(0x3fe62e42fefa39ef)
	// log(m) for f = m - 1: f + f²·N(f)/D(f), N = f·A(f²) + B(f²),
	// D = f·C(f²) + E(f²), each by Horner from its first coefficient.
	ynnLog64A = [3]float64{f64bits(0xbf6837475a1e9888), f64bits(0xbfdb74b455a137a7), f64bits(0xbff3e34ad8c76067)}
	ynnLog64B = [3]float64{f64bits(0xbfb1213839634a69), f64bits(0xbff1c6839d645941), f64bits(0xbfdfffffffffffee)}
	ynnLog64C = [3]float64{f64bits(0x3fb4552d561d9da1), f64bits(0x4001d8af20c03734), f64bits(0x400938a02e1cb600)}
	ynnLog64E = [4]float64{f64bits(0x3f68a6b6134937f9), f64bits(0x3fe46188d0cd4d4b), f64bits(0x400e96ee66ccd02c), 1}
)

func horner64(c []float64, x float64) float64 {
	v := c[0]
	for _, k := range c[1:] {
		v = math.FMA(v, x, k)
	}
	return v
}

// getexp64 is VGETEXPPD: floor(log2|v|), -inf for zero, +inf for
// infinities, NaN for NaN (v already flushed).
func getexp64(v float64) float64 {
	b := math.Float64bits(v) &^ (1 << 63)
	switch {
	case b == 0:
		return math.Inf(-1)
	case b >= 0x7ff0000000000000:
		if b == 0x7ff0000000000000 {
			return math.Inf(1)
		}
		return v
	}
	return float64(int64(b>>52) - 1023)
}

// ynnLogTail64 is log's end: the rational function of f plus e*ln2.
func ynnLogTail64(f, e, out float64) float64 {
	f2 := float64(f * f)
	num := math.FMA(f, horner64(ynnLog64A[:], f2), horner64(ynnLog64B[:], f2))
	den := math.FMA(f, horner64(ynnLog64C[:], f2), horner64(ynnLog64E[:], f2))
	r := math.FMA(num/den, f2, f)
	r = math.FMA(e, ynnLn2_64, r)
	return ynnOut64(float64(r * out))
}

// ynnMant64 is ynnMant for f64: the mantissa in [1, 2) and the exponent
// (NaN below zero), moved so that m <= sqrt2.
func ynnMant64(v float64) (m, e float64) {
	m = math.Float64frombits(math.Float64bits(v)&0x000fffffffffffff | 0x3ff0000000000000)
	e = getexp64(v)
	if v < 0 {
		e = ynnNaN64 // the kernel's constant: +NaN, payload 0
	}
	if m > ynnSqrt2_64 {
		e = e + 1
		m = float64(m * 0.5)
	}
	return m, e
}

// ynnExpm164 is ynn::expm1_fp64: s*p + (s-1) of x*in, times out.
func ynnExpm164(x, in, out float64) float64 {
	v := ynnOut64(float64(ynnIn64(x) * in))
	p, s := ynnExpParts64(v)
	e := ynnOut64(math.FMA(s, p, s-1))
	if math.IsInf(s, 0) {
		e = s
	}
	return ynnOut64(float64(e * out))
}

// ynnLog1p64 is ynn::log1p_fp64: log of u = v+1 as log's, except that f
// is v itself where u's (moved) exponent is 0.
func ynnLog1p64(x, in, out float64) float64 {
	v := ynnOut64(float64(ynnIn64(x) * in))
	u := ynnOut64(v + 1)
	m, e := ynnMant64(u)
	f := m - 1
	if e == 0 {
		f = v
	}
	return ynnLogTail64(f, e, out)
}

// ynnLog64 is ynn::log_fp64 of x*in, times out.
func ynnLog64(x, in, out float64) float64 {
	v := ynnOut64(float64(ynnIn64(x) * in))
	m, e := ynnMant64(v)
	return ynnLogTail64(m-1, e, out)
}

// ynnTanh64 is ynn::tanh_fp64: with y = min(2x, 300),
// q = expm1(y)/(expm1(y)+2), expm1(y) = s*p + (s-1), returned as the FMA
// q*c1 + c0.
func ynnTanh64(x, c0, c1 float64) float64 {
	y := x86Min64(300, x+x)
	p, s := ynnExpParts64(y)
	e := ynnOut64(math.FMA(s, p, s-1))
	if math.IsInf(s, 0) {
		e = s
	}
	q := ynnOut64(e / (e + 2))
	return ynnOut64(math.FMA(q, c1, c0))
}

// YNNOp64 reports whether op (a YNNTarget op name) has an f64 kernel here.
func YNNOp64(op string) bool { return YNNOp{Op: op}.unary64() != nil }

var (
	ynnErf64Clamp = f64bits(0x4017afb5caedfafc) // 5.92: |x| capped
	ynnErf64Small = f64bits(0x3feccccccccccccd) // 0.9: a·P(a²)/Q(a²) below
	// Below 0.9: P, Q in a² (Horner from the first).
	ynnErf64P = [6]float64{f64bits(0x3ed3be9c4089732c), f64bits(0x3f33c23a6a7dde5b), f64bits(0x3f73cc3521bc1dbb),
		f64bits(0x3fac99dbad7448df), f64bits(0x3fccbdcfa810f39a), f64bits(0x3ff20dd750429b6d)}
	ynnErf64Q = [6]float64{f64bits(0x3f0a16e304461dcc), f64bits(0x3f55ff798dc1d15f), f64bits(0x3f9196b11a01b645),
		f64bits(0x3fc03fdbfab214ee), f64bits(0x3fe108d6d989d789), 1}
	// From 0.9: 1 - N(a)/D(a)·e^(-a²), N and D in a.
	ynnErf64N = [9]float64{f64bits(0x3da6ed1241b6aa37), f64bits(0xbf44a855ba6a7f3b), f64bits(0xbf700e82b0e52dbe),
		f64bits(0xbf696c3b53b25415), f64bits(0x3fb0f888c6672a8b), f64bits(0x3fd79cf076b7387d),
		f64bits(0x3fef3ed0b5ffdeba), f64bits(0x3ff6cd120c9dfd80), f64bits(0x3ff000000efc62cc)}
	ynnErf64D = [9]float64{f64bits(0xbf524ea8f636b40c), f64bits(0xbf7c75b981253f1c), f64bits(0xbf78d0f93ae3c02d),
		f64bits(0x3fbd304cb093f2c7), f64bits(0x3fe4dbda9dc66ab7), f64bits(0x3ffcad485d02760a),
		f64bits(0x4006dc821b3ac61b), f64bits(0x40046d74fc0cd0b8), 1}
)

// ynnErf64 is ynn::erf_fp64 of x*in as the FMA erf*c1 + c0: with
// a = min(|v|, 5.92), a·P(a²)/Q(a²) below 0.9, else
// 1 - (N(a)/D(a))·exp(-a²) (exp_fp64's own steps), the sign of v copied on.
func ynnErf64(x, in, c0, c1 float64) float64 {
	v := ynnOut64(float64(ynnIn64(x) * in))
	a := x86Min64(ynnErf64Clamp, math.Abs(v))
	a2 := ynnOut64(float64(a * a))
	var r float64
	if a < ynnErf64Small {
		r = float64(a * (horner64(ynnErf64P[:], a2) / horner64(ynnErf64Q[:], a2)))
	} else {
		p, s := ynnExpParts64(-a2)
		e := ynnOut64(math.FMA(p, s, s))
		if math.IsInf(s, 0) {
			e = s
		}
		r = 1 - float64((horner64(ynnErf64N[:], a)/horner64(ynnErf64D[:], a))*e)
	}
	r = math.Copysign(ynnOut64(r), v)
	return ynnOut64(math.FMA(r, c1, c0))
}
