package eval

import (
	"math"
	"unsafe"
)

// XLA:CPU's atan2 is glibc's (llvm.atan2 lowered to atan2f/atan2), running
// with flush-to-zero and denormals-are-zero. glibc tests zeros and exponent
// ranges on the raw bits but computes with the flushed values, so subnormal
// operands take paths a flushed zero would not: f32 atan2(1e-40, 1e-40) is
// 0/0 = NaN, f64 atan2(5e-324, -1) is -pi. atan2DAZ32 and atan2DAZ64 give
// those results from the raw operands (checked against jax on CPU in
// TestElementwiseAgainstJax and TestAtan2Subnormals); everywhere else,
// atan2 of the flushed operands is already right and they report false.

// atan2DAZ32 follows glibc 2.36's atan2f (the fdlibm algorithm) for y, x
// when either is an f32 subnormal.
func atan2DAZ32(y, x float32) (float32, bool) {
	hx, hy := int32(math.Float32bits(x)), int32(math.Float32bits(y))
	ix, iy := hx&0x7fffffff, hy&0x7fffffff
	sub := func(i int32) bool { return i != 0 && i < 0x00800000 }
	if !sub(ix) && !sub(iy) || ix > 0x7f800000 || iy > 0x7f800000 {
		return 0, false
	}
	const (
		pi    = float32(3.1415927410e+00) // 0x40490fdb
		piO2  = float32(1.5707963705e+00) // 0x3fc90fdb
		piLow = float32(-8.7422776573e-08)
	)
	if hx == 0x3f800000 { // x = 1: atanf(y), which returns a tiny y as it is
		return y, true
	}
	m := (hy>>31)&1 | (hx>>30)&2
	if iy == 0 || ix == 0x7f800000 || iy == 0x7f800000 {
		return 0, false // exact zero y, infinite x or y: the flushed operands agree
	}
	if ix == 0 {
		if hy < 0 {
			return -piO2, true
		}
		return piO2, true
	}
	var z float32
	switch k := (iy - ix) >> 23; {
	case k > 60:
		z = piO2 + 0.5*piLow
	case hx < 0 && k < -60:
		z = 0
	default:
		// |y/x| with both flushed: 0/0, 0/x or y/0 (a subnormal is involved).
		fy, fx := flush32(y), flush32(x)
		z = float32(math.Atan(math.Abs(float64(fy) / float64(fx))))
		if fy == 0 && fx == 0 {
			z = float32(math.NaN())
		}
	}
	switch m {
	case 0:
		return z, true
	case 1:
		return -z, true
	case 2:
		return pi - (z - piLow), true
	}
	return (z - piLow) - pi, true
}

// atan2DAZ64 follows glibc 2.36's atan2 (IBM's) for y, x when either is an
// f64 subnormal: x compares equal to 0 (so a y with any bits set gives
// ±pi/2 by y's sign bit), and a subnormal y with a negative x of exponent
// field >= 54 reaches "y > 0 ? pi : -pi", which is -pi once y is flushed.
func atan2DAZ64(y, x float64) (float64, bool) {
	ux, uy := math.Float64bits(x), math.Float64bits(y)
	ax, ay := ux&^(1<<63), uy&^(1<<63)
	const minNormal = 1 << 52
	sub := func(a uint64) bool { return a != 0 && a < minNormal }
	inf := uint64(0x7ff) << 52
	if !sub(ax) && !sub(ay) || ax > inf || ay > inf {
		return 0, false
	}
	if ay == 0 {
		return 0, false // exact zero y: the flushed operands agree
	}
	if ax < minNormal { // x == 0 under DAZ
		if uy>>63 == 1 {
			return -math.Pi / 2, true
		}
		return math.Pi / 2, true
	}
	// Here y is subnormal and x normal or infinite.
	if ax < inf && ux>>63 == 1 && ax>>52 >= 54 {
		return -math.Pi, true
	}
	return 0, false
}

func flush32(v float32) float32 {
	if b := math.Float32bits(v); b&0x7fffffff < 0x00800000 {
		return math.Float32frombits(b & 0x80000000)
	}
	return v
}

// glibc's pow and fmod under DAZ, for operands where a subnormal is
// involved (measured against jax on CPU):
//   - pow(x, y) with subnormal x behaves as if |x| were 2^-150 (f32) or
//     2^-1075 (f64), sign kept: glibc scales a subnormal x by 2^23 or 2^52
//     to normalize it, which DAZ turns into 0, and its exponent arithmetic
//     then lands there. pow(s, 0.5) = 2^-75, pow(s, -1) = inf.
//   - pow(x, y) with subnormal y uses y as it is: pow(-1, 1e-45) is NaN (not
//     an integer), pow(0, 1e-45) is 0.
//   - fmod(y, x) with a subnormal divisor is NaN (x compares equal to 0);
//     otherwise fmod is exact integer arithmetic on the raw bits, so a
//     subnormal dividend or result is kept: fmod(1e-45, 1) = 1e-45, and
//     fmod(1e-300, 2^-1022) is a subnormal.
const (
	powSubnormalF32 = -150 // log2 of the magnitude glibc's powf sees
	powSubnormalF64 = -1075
)

// subnormalPath returns op's result for raw operands a, b (f32 when wide is
// false) when one of them is subnormal and glibc's path differs from the
// flushed operands', and whether it applies.
func subnormalPath(op string, a, b float64, f32 bool) (float64, bool) {
	minNormal, powX := 0x1p-1022, powSubnormalF64
	if f32 {
		minNormal, powX = 0x1p-126, powSubnormalF32
	}
	sub := func(v float64) bool { return v != 0 && math.Abs(v) < minNormal }
	if op == "remainder" { // every element: even a result of normal operands is not flushed
		if sub(b) {
			return math.NaN(), true
		}
		if f32 {
			return fmodF32(a, b), true
		}
		return math.Mod(a, b), true // exact, so exact in f32 too
	}
	if !sub(a) && !sub(b) {
		return 0, false
	}
	switch op {
	case "power":
		r := math.Pow(a, b)
		if sub(a) { // |a| as 2^powX: (±1)^b (NaN for a non-integer b) times 2^(powX*b)
			r = math.Pow(math.Copysign(1, a), b) * math.Exp2(float64(powX)*b)
		}
		if f32 {
			r = float64(flush32(float32(r)))
		} else if math.Abs(r) < minNormal {
			r = math.Copysign(0, r)
		}
		return r, true
	}
	return 0, false
}

// fixSubnormalPaths overwrites o[i] where the raw (unflushed) operands
// y[i], x[i] take one of glibc's subnormal paths (atan2, pow, remainder).
func fixSubnormalPaths[F float](op string, y, x, o []F) {
	var z F
	f32 := unsafe.Sizeof(z) == 4
	if (op == "power" || op == "atan2") && !libmDisabled {
		// libm itself on the raw operands, under denormals-are-zero as
		// XLA:CPU calls it: the paths below are models of what it does.
		minNormal := F(0x1p-1022)
		if f32 {
			minNormal = F(0x1p-126)
		}
		sub := func(v F) bool { return v != 0 && v > -minNormal && v < minNormal }
		for i := range o {
			if sub(y[i]) || sub(x[i]) {
				libmBinary(op, y[i:i+1], x[i:i+1], o[i:i+1])
			}
		}
		return
	}
	if op == "remainder" && f32 {
		f32s := func(v []F) []float32 { return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(v))), len(v)) }
		remainderRawF32(f32s(y), f32s(x), f32s(o))
		return
	}
	for i := range o {
		if op == "atan2" {
			if f32 {
				if r, ok := atan2DAZ32(float32(y[i]), float32(x[i])); ok {
					o[i] = F(r)
				}
			} else if r, ok := atan2DAZ64(float64(y[i]), float64(x[i])); ok {
				o[i] = F(r)
			}
			continue
		}
		if r, ok := subnormalPath(op, float64(y[i]), float64(x[i]), f32); ok {
			o[i] = F(r)
		}
	}
}

// keepsSubnormalResult reports whether binary op's result can be subnormal
// although its kernel runs under FTZ: atan2(s, 1) returns s, fmod is exact.
func keepsSubnormalResult(op string) bool { return op == "atan2" || op == "remainder" }

// fixCbrtSubnormals sets o[i] to XLA:CPU's f32 cbrt of a subnormal wherever
// the raw input x[i] is one (cbrtOfSubnormalF32).
func fixCbrtSubnormals(x, o []float32) {
	for i, v := range x {
		if b := math.Float32bits(v) & 0x7fffffff; b != 0 && b < 0x00800000 {
			o[i] = math.Float32frombits(cbrtOfSubnormalF32)
		}
	}
}

// remainderRawF32 sets o[i] to subnormalPath's remainder of a[i] and b[i]
// (glibc's exact fmodf of the raw operands), the common case inline: for
// finite a and a normal finite b whose exponents are at most 23 apart, the
// quotient |a|/|b| is below 2^24, so float64's division truncates to the
// right integer q (a quotient just under an integer n is at least 2^-24
// below it, 2^-48 of n, far above float64's rounding), and q·|b| (48 bits)
// and |a| - q·|b| (a multiple of |b|'s last bit, below |b|) are exact.
func remainderRawF32(a, b, o []float32) {
	i := remainderVecF32(a, b, o)
	remainderRawF32Scalar(a[i:], b[i:], o[i:])
}

// remainderRawF32Scalar is remainderRawF32 one element at a time.
func remainderRawF32Scalar(a, b, o []float32) {
	for i := range o {
		x, y := a[i], b[i]
		bx, by := math.Float32bits(x)&0x7fffffff, math.Float32bits(y)&0x7fffffff
		if by >= 0x00800000 && by < 0x7f800000 && bx < 0x7f800000 && bx>>23 <= by>>23+23 {
			xf, yf := float64(math.Float32frombits(bx)), float64(math.Float32frombits(by))
			r := float32(xf - math.Trunc(xf/yf)*yf)
			o[i] = math.Float32frombits(math.Float32bits(r) | math.Float32bits(x)&0x80000000)
			continue
		}
		if r, ok := subnormalPath("remainder", float64(x), float64(y), true); ok {
			o[i] = float32(r)
		}
	}
}

// fmodF32 is math.Mod(a, b) for f32 values a and b (held in float64), bit
// for bit, without math.Mod's bit-at-a-time loop: for finite a and finite
// nonzero b, |a| is reduced by multiples q*y of |b| scaled by a power of two
// y, with q < 2^28, so q*y (24+28 bits) and |a| - q*y (a multiple of y's last
// bit, below 2y) are exact in float64; a quotient rounded up to the next
// integer leaves a negative remainder, which one y puts back. The result
// takes a's sign, as math.Mod's does. Other operands go to math.Mod.
func fmodF32(a, b float64) float64 {
	x, y := math.Abs(a), math.Abs(b)
	if y == 0 || math.IsInf(x, 0) || x != x || y != y || math.IsInf(y, 0) {
		return math.Mod(a, b)
	}
	for x >= y {
		ys := y
		if e := math.Ilogb(x) - math.Ilogb(y); e > 27 {
			ys = math.Ldexp(y, e-27)
		}
		q := math.Trunc(x / ys)
		r := x - q*ys
		if r < 0 {
			r += ys
		} else if r >= ys {
			r -= ys
		}
		x = r
	}
	return math.Copysign(x, a)
}
