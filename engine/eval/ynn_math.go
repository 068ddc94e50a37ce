package eval

// Float32 elementwise functions as YNNPACK computes them inside a
// __ynn_fusion (jaxlib 0.10.2's libjax_common.so, the
// ynn::*_fp32_x86_avx512f_avx512bw kernels an AVX-512 host runs; the
// avx2_fma3 kernels an AVX2 host runs are the same instruction sequence on
// 8 lanes). Constants, operation order and every FMA are read from that
// machine code; TestYNNMathAgainstJax checks them against jax.jit. They
// are not XLA:CPU's own kernels (xlamath.go): XLA hands the elementwise
// ops it fuses with a reduction to YNNPACK, which computes them itself.
//
// YNNPACK runs on XLA's threads, under flush-to-zero and
// denormals-are-zero: subnormal inputs count as zero and subnormal results
// are flushed (ynnIn, ynnOut). Intermediate values that could be subnormal
// only ever add to a value many orders of magnitude larger, so they are
// left as Go computes them.
//
// Every product that the machine code does not fuse is written as
// float32(a*b): the conversion keeps the Go compiler from fusing it.

import "math"

// ynnIn is an operand as the kernels see it under DAZ.
func ynnIn(v float32) float32 { return flush32(v) }

// ynnOut is a result as the kernels store it under FTZ.
func ynnOut(v float32) float32 { return flush32(v) }

// x86Max and x86Min are MAXPS/MINPS with src1 a and src2 b: b unless a is
// strictly greater (smaller), so a NaN in either gives b.
func x86Max(a, b float32) float32 {
	if a > b {
		return a
	}
	return b
}

func x86Min(a, b float32) float32 {
	if a < b {
		return a
	}
	return b
}

func f32bits(b uint32) float32 { return math.Float32frombits(b) }

var (
	ynnExpLo    = f32bits(0xc2b00f34) // -88.02969
	ynnExpHi    = f32bits(0x42b17218) // 88.72284
	ynnLog2e    = f32bits(0x3fb8aa3b)
	ynnRound    = f32bits(0x4b400000) // 1.5*2^23: (x + it) - it rounds x to an integer
	ynnLn2Hi    = f32bits(0xbf317200) // -ln2, high part
	ynnLn2Lo    = f32bits(0xb5bfbe8e) // -ln2, low part
	ynnExpBias  = f32bits(0x4b00007f) // 2^23 + 127: (n + it) << 23 is 2^n
	ynnExpOdd   = [3]float32{f32bits(0x396ecce9), f32bits(0x3c08629e), f32bits(0x3e2aaad2)}
	ynnExpEven  = [4]float32{f32bits(0xb85127e0), f32bits(0x3ab93cac), f32bits(0x3d2aa994), f32bits(0x3efffffe)}
	ynnSqrt2    = f32bits(0x3fb504f3)
	ynnLogNum   = [3]float32{f32bits(0xbbab5ad8), f32bits(0xbefffff4), f32bits(0xbea99d63)} // f2*c0+c1, then f*c2+that
	ynnLogDen   = [2]float32{f32bits(0x3ecb0c97), f32bits(0x3faa23c9)}                      // 1+f2*c0, then f*c1+that
	ynnLn2      = f32bits(0x3f317218)
	ynnMantMask = uint32(0x007fffff)
)

// ynnExpParts is the part every exp-like kernel shares: for v (NaN or
// not) it returns p and s with e^v = p*s + s, s = 2^n built from bits (0
// at n = -127, +inf at n = 128, v itself when v is NaN) and p = e^r - 1
// for the reduced argument r, from two polynomials in r².
func ynnExpParts(v float32) (p, s float32) {
	t := x86Min(ynnExpHi, x86Max(ynnExpLo, v))
	n := float32(float32(t*ynnLog2e)+ynnRound) - ynnRound
	r := fma32(n, ynnLn2Hi, t)
	r = fma32(n, ynnLn2Lo, r)
	r2 := float32(r * r)
	pa := fma32(fma32(ynnExpOdd[0], r2, ynnExpOdd[1]), r2, ynnExpOdd[2])
	pb := fma32(fma32(fma32(ynnExpEven[0], r2, ynnExpEven[1]), r2, ynnExpEven[2]), r2, ynnExpEven[3])
	p = fma32(r, pa, pb)
	p = fma32(r2, p, r)
	s = math.Float32frombits(math.Float32bits(n+ynnExpBias) << 23)
	if v != v {
		s = v
	}
	return p, s
}

func isInf32(v float32) bool { return math.Float32bits(v)&0x7fffffff == 0x7f800000 }

// ynnExp is ynn::exp_fp32: e^(x*in) * out (in and out are the kernel's
// folded scalar multipliers, 1 unless YNNPACK folded a multiply into it).
func ynnExp(x, in, out float32) float32 {
	v := float32(ynnIn(x) * in)
	p, s := ynnExpParts(v)
	e := ynnOut(fma32(p, s, s))
	if isInf32(s) {
		e = s
	}
	return ynnOut(float32(e * out))
}

// ynnExpm1 is ynn::expm1_fp32: p*s + (s-1).
func ynnExpm1(x, in, out float32) float32 {
	v := float32(ynnIn(x) * in)
	p, s := ynnExpParts(v)
	e := ynnOut(fma32(p, s, s-1))
	if isInf32(s) {
		e = s
	}
	return ynnOut(float32(e * out))
}

// ynnTanh is ynn::tanh_fp32: with y = min(2x, 80), q = expm1(y)/(expm1(y)+2),
// returned as the FMA q*c1 + c0 (c1 = 1, c0 = 0 unless YNNPACK folded a
// scalar multiply-add of the result into it).
func ynnTanh(x, c0, c1 float32) float32 {
	x = ynnIn(x)
	y := x86Min(80, x+x)
	p, s := ynnExpParts(y)
	e := ynnOut(fma32(p, s, s-1))
	if isInf32(s) {
		e = s
	}
	q := ynnOut(e / (e + 2))
	return ynnOut(fma32(q, c1, c0))
}

// getexp is VGETEXPPS: floor(log2|v|) as a float, -inf for zero, +inf
// for infinities, NaN for NaN (v already flushed: no subnormals).
func getexp(v float32) float32 {
	b := math.Float32bits(v) & 0x7fffffff
	switch {
	case b == 0:
		return float32(math.Inf(-1))
	case b >= 0x7f800000:
		if b == 0x7f800000 {
			return float32(math.Inf(1))
		}
		return v
	}
	return float32(int32(b>>23) - 127)
}

// ynnLogTail is the shared end of log and log1p: the rational function of
// f = m - 1 (m the mantissa scaled into [sqrt2/2, sqrt2]) plus e*ln2.
func ynnLogTail(f, e, out float32) float32 {
	f2 := float32(f * f)
	num := fma32(ynnLogNum[2], f, fma32(f2, ynnLogNum[0], ynnLogNum[1]))
	den := fma32(ynnLogDen[1], f, fma32(ynnLogDen[0], f2, 1))
	r := fma32(f2, num/den, f)
	r = fma32(ynnLn2, e, r)
	return ynnOut(float32(r * out))
}

// ynnMant is the mantissa of v as a float in [1, 2) (bits of 1.0 or'ed
// with v's mantissa bits) and v's exponent, moved so that m <= sqrt2.
func ynnMant(v float32) (m, e float32) {
	m = math.Float32frombits(math.Float32bits(v)&ynnMantMask | 0x3f800000)
	e = getexp(v)
	if v < 0 {
		e = float32(math.NaN())
	}
	if m > ynnSqrt2 {
		e = e + 1
		m = float32(m * 0.5)
	}
	return m, e
}

// ynnLog is ynn::log_fp32 of x*in, times out.
func ynnLog(x, in, out float32) float32 {
	v := float32(ynnIn(x) * in)
	m, e := ynnMant(v)
	return ynnLogTail(m-1, e, out)
}

// ynnLog1p is ynn::log1p_fp32: log of u = v+1 as above, except that f is v
// itself where u's (moved) exponent is 0.
func ynnLog1p(x, in, out float32) float32 {
	v := float32(ynnIn(x) * in)
	u := ynnOut(v + 1)
	m, e := ynnMant(u)
	f := m - 1
	if e == 0 {
		f = v
	}
	return ynnLogTail(f, e, out)
}

// ynnRsqrt is ynn::reciprocal_square_root_fp32: 1/sqrt(x), two correctly
// rounded steps (not XLA's estimate and Newton steps).
func ynnRsqrt(x float32) float32 {
	s := float32(math.Sqrt(float64(ynnIn(x))))
	return ynnOut(1 / s)
}

var (
	ynnErfClamp = f32bits(0x40733333) // 3.8
	ynnErfSmall = f32bits(0x3f4ccccd) // 0.8: a*P(a²) below
	ynnErfMid   = f32bits(0x3fcccccd) // 1.6: Q1 below, Q2 from here
	ynnErfP     = [7]float32{f32bits(0xba0d7e29), f32bits(0x39b0108b), f32bits(0x3b9068ea), f32bits(0xbcd9f4a7),
		f32bits(0x3de703e2), f32bits(0xbec0936b), f32bits(0x3f906ebb)}
	ynnErfQ1 = [7]float32{f32bits(0x3b91667c), f32bits(0xbd2e96ec), f32bits(0x3e3cad3f), f32bits(0xbef52543),
		f32bits(0x3f584d11), f32bits(0xbf89e126), f32bits(0x3f7e194d)}
	ynnErfQ2 = [7]float32{f32bits(0x3935b315), f32bits(0xbb604030), f32bits(0x3cee1bb6), f32bits(0xbe0e3e95),
		f32bits(0x3ed1dd46), f32bits(0xbf44e1c4), f32bits(0x3f660b07)}
)

// horner7 is c[0]*x^6 + ... + c[6], one FMA per step.
func horner7(c *[7]float32, x float32) float32 {
	p := c[0]
	for _, k := range c[1:] {
		p = fma32(x, p, k)
	}
	return p
}

// ynnErf is ynn::erf_fp32 of x*in, returned as the FMA erf*c1 + c0: with a
// = min(|x|, 3.8), a*P(a²) below 0.8, else 1 - Q(a)*e^(-a²) (Q one
// polynomial in a below 1.6, another from there), the sign of x copied on.
func ynnErf(x, in, c0, c1 float32) float32 {
	v := float32(ynnIn(x) * in)
	a := x86Min(ynnErfClamp, float32(math.Abs(float64(v))))
	a2 := float32(a * a)
	p, s := ynnExpParts(-a2)
	e := ynnOut(fma32(p, s, s))
	if isInf32(s) {
		e = s
	}
	q := horner7(&ynnErfQ2, a)
	if a < ynnErfMid {
		q = horner7(&ynnErfQ1, a)
	}
	r := ynnOut(1 - float32(q*e))
	if a < ynnErfSmall {
		r = ynnOut(float32(a * horner7(&ynnErfP, a2)))
	}
	r = float32(math.Copysign(float64(r), float64(v)))
	return ynnOut(fma32(r, c1, c0))
}
