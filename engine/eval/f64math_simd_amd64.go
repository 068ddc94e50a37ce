//go:build goexperiment.simd && amd64

package eval

// f64 log, sine, cosine and sqrt a vector at a time, bit for bit what
// math.Log (log_amd64.s lane by lane), math.Sin and math.Cos (below 2^29;
// other vectors through math) and math.Sqrt return on this machine: the Go
// math that stands in for libm's log, sin and cos where goldtrace cannot
// call the host's libm (libm.go); sqrt is correctly rounded either way. (f64
// exp and tanh are XLA:CPU's own kernels, xlamath64*.go.) The self-check
// below turns the vector forms off if a build ever computes otherwise;
// TestUnaryF64VectorMatchesMath checks every width against the math package
// on edge cases and random values.

import (
	"math"
	"simd/archsimd"
)

// f64MathLanes is the vector width of unaryF64Vector: 8 (AVX-512), 4
// (AVX2+FMA) or 0. Tests set it to each width the CPU runs.
var f64MathLanes = defaultF64MathLanes()

func defaultF64MathLanes() int {
	switch {
	case !archsimd.X86.FMA() || !archsimd.X86.AVX2():
		return 0
	case archsimd.X86.AVX512():
		return 8
	}
	return 4
}

func f64MathLaneWidths() []int {
	var ws []int
	if defaultF64MathLanes() == 8 {
		ws = append(ws, 8)
	}
	if defaultF64MathLanes() != 0 {
		ws = append(ws, 4)
	}
	return append(ws, 0)
}

const (
	kHalf = iota
	kOne
	kTwo
	kHSqrt2
	kL1
	kL2
	kL3
	kL4
	kL5
	kL6
	kL7
	kLn2Hi
	kLn2Lo
	kLogMagic
	kTrigMax
	kFourOverPi
	kEighth
	kEight
	kThree
	kFour
	kPI4A
	kPI4B
	kPI4C
	kS0
	kS1
	kS2
	kS3
	kS4
	kS5
	kC0
	kCc1
	kCc2
	kCc3
	kCc4
	kCc5
	kCount
)

// f64MathK holds each constant in eight lanes (loaded from memory: no
// scalar broadcasts in the loops).
var f64MathK = func() (t [kCount][8]float64) {
	v := [kCount]float64{
		kHalf: 0.5, kOne: 1, kTwo: 2, kHSqrt2: 7.07106781186547524401e-01, kL1: 6.666666666666735130e-01, kL2: 3.999999999940941908e-01,
		kL3: 2.857142874366239149e-01, kL4: 2.222219843214978396e-01, kL5: 1.818357216161805012e-01,
		kL6: 1.531383769920937332e-01, kL7: 1.479819860511658591e-01, kLn2Hi: 6.93147180369123816490e-01,
		kLn2Lo: 1.90821492927058770002e-10, kLogMagic: 0x1p52 + 0x3fe,
		kTrigMax: 1 << 29, kFourOverPi: 4 / math.Pi, kEighth: 0.125, kEight: 8, kThree: 3, kFour: 4,
		kPI4A: 7.85398125648498535156e-1, kPI4B: 3.77489470793079817668e-8, kPI4C: 2.69515142907905952645e-15,
		kS0: 1.58962301576546568060e-10, kS1: -2.50507477628578072866e-8, kS2: 2.75573136213857245213e-6,
		kS3: -1.98412698295895385996e-4, kS4: 8.33333333332211858878e-3, kS5: -1.66666666666666307295e-1,
		kC0: -1.13585365213876817300e-11, kCc1: 2.08757008419747316778e-9, kCc2: -2.75573141792967388112e-7,
		kCc3: 2.48015872888517045348e-5, kCc4: -1.38888888888730564116e-3, kCc5: 4.16666666666665929218e-2,
	}
	for i := range t {
		for l := range t[i] {
			t[i][l] = v[i]
		}
	}
	return t
}()

// Bit-pattern constants of logF64xW, eight lanes each.
const (
	lbMant = iota
	lbHalf
	lbShift
	lbExp
	lbMagic
	lbInf
	lbOne
	lbNaN
	lbNegInf
	lbSign
	lbZero
	lbCount
)

var f64LogBits = func() (t [lbCount][8]uint64) {
	v := [lbCount]uint64{lbMant: 1<<52 - 1, lbHalf: 0x3fe0000000000000, lbShift: 52, lbExp: 0x7ff,
		lbMagic: 0x4330000000000000, lbInf: 0x7ff0000000000000, lbOne: 1, lbNaN: 0x7ff8000000000001,
		lbNegInf: 0xfff0000000000000, lbSign: 1 << 63}
	for i := range t {
		for l := range t[i] {
			t[i][l] = v[i]
		}
	}
	return t
}()

var (
	f64MathShift = [8]uint64{52, 52, 52, 52, 52, 52, 52, 52}
	f64MathSign  = [8]uint64{1 << 63, 1 << 63, 1 << 63, 1 << 63, 1 << 63, 1 << 63, 1 << 63, 1 << 63}
)

// unaryF64Vector computes the whole vectors at the front of o and returns
// how many elements that was (0 when op has no vector form here).
func unaryF64Vector(op string, x, o []float64) int {
	x = x[:len(o)]
	switch f64MathLanes {
	case 8:
		return unaryF64x8(op, x, o)
	case 4:
		return unaryF64x4(op, x, o)
	}
	return 0
}

func init() {
	// The vector forms must reproduce math's bits in this build: a quick
	// check on values of every case (the test checks many more).
	if f64MathLanes == 0 {
		return
	}
	xs := []float64{0, math.Copysign(0, -1), 1e-310, -1e-310, 1e-300, 0.1, -0.3, 0.6249, 0.625, -0.7, 1, 2.5, -3.75,
		20, -44, 44.02, 88, 300, -300, -708.4, -709, -720, -745.1, -745.2, 709.7, 709.79, -1000, 1e300,
		math.Inf(1), math.Inf(-1), math.NaN(), 1.0 / 3, -2.0 / 3, 5e-9, 0.0001, 5e-324, 0.7071067811865476, 1e308, 3.14159, -1.5707963267948966, 6e8, 1e17, 0.785}
	for len(xs)%8 != 0 {
		xs = append(xs, 0.5)
	}
	o := make([]float64, len(xs))
	for _, op := range []string{"sqrt", "log", "sine", "cosine"} {
		unaryF64Vector(op, xs, o)
		sseAfterAVX()
		for i, v := range xs {
			var w float64
			switch op {
			case "log":
				w = math.Log(v)
			case "sine":
				w = math.Sin(v)
			case "cosine":
				w = math.Cos(v)
			default:
				w = math.Sqrt(v)
			}
			if math.Float64bits(w) != math.Float64bits(o[i]) {
				f64MathLanes = 0
				return
			}
		}
	}
}

func unaryF64x4(op string, x, o []float64) int {
	n := len(o) &^ (4 - 1)
	switch op {
	case "log":
		for i := 0; i < n; i += 4 {
			logF64x4(archsimd.LoadFloat64x4((*[4]float64)(x[i:]))).Store((*[4]float64)(o[i:]))
		}
	case "sine", "cosine":
		return sinCosF64Loopx4(x, o, op == "cosine")
	case "sqrt":
		for i := 0; i < n; i += 4 {
			archsimd.LoadFloat64x4((*[4]float64)(x[i:])).Sqrt().Store((*[4]float64)(o[i:]))
		}
	default:
		return 0
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func unaryF64x8(op string, x, o []float64) int {
	n := len(o) &^ (8 - 1)
	switch op {
	case "log":
		for i := 0; i < n; i += 8 {
			logF64x8(archsimd.LoadFloat64x8((*[8]float64)(x[i:]))).Store((*[8]float64)(o[i:]))
		}
	case "sine", "cosine":
		return sinCosF64Loopx8(x, o, op == "cosine")
	case "sqrt":
		for i := 0; i < n; i += 8 {
			archsimd.LoadFloat64x8((*[8]float64)(x[i:])).Sqrt().Store((*[8]float64)(o[i:]))
		}
	default:
		return 0
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// logF64x4 is math.Log (log_amd64.s, subnormal operands through its
// frexp of the bits as it does) on 4 lanes.
func logF64x4(x archsimd.Float64x4) archsimd.Float64x4 {
	c := &f64MathK
	ld := func(i int) archsimd.Float64x4 { return archsimd.LoadFloat64x4((*[4]float64)(c[i][:4])) }
	lu := func(i int) archsimd.Uint64x4 { return archsimd.LoadUint64x4((*[4]uint64)(f64LogBits[i][:4])) }
	bx := x.AsUint64x4()
	f1 := bx.And(lu(lbMant)).Or(lu(lbHalf)).AsFloat64x4()
	k := bx.ShiftRight(lu(lbShift)).And(lu(lbExp)).Or(lu(lbMagic)).AsFloat64x4().Sub(ld(kLogMagic))
	one := ld(kOne)
	var zero archsimd.Float64x4
	adj := one.Merge(zero, f1.LessEqual(ld(kHSqrt2)))
	k = k.Sub(adj)
	f1 = f1.Mul(adj.Add(one))
	f := f1.Sub(one)
	s := f.Div(ld(kTwo).Add(f))
	s2 := s.Mul(s)
	s4 := s2.Mul(s2)
	t1 := s2.Mul(ld(kL7).Mul(s4).Add(ld(kL5)).Mul(s4).Add(ld(kL3)).Mul(s4).Add(ld(kL1)))
	t2 := s4.Mul(ld(kL6).Mul(s4).Add(ld(kL4)).Mul(s4).Add(ld(kL2)))
	r := t1.Add(t2)
	hfsq := ld(kHalf).Mul(f).Mul(f)
	u := s.Mul(r.Add(hfsq)).Add(ld(kLn2Lo).Mul(k))
	v := hfsq.Sub(u).Sub(f)
	res := k.Mul(ld(kLn2Hi)).Sub(v)
	var izero archsimd.Int64x4
	ix := bx.AsInt64x4()
	res = x.Merge(res, ix.Greater(lu(lbInf).AsInt64x4().Sub(lu(lbOne).AsInt64x4())))
	res = lu(lbNaN).AsFloat64x4().Merge(res, ix.Less(izero))
	return lu(lbNegInf).AsFloat64x4().Merge(res, bx.AndNot(lu(lbSign)).Equal(lu(lbZero)))
}

// logF64x8 is math.Log (log_amd64.s, subnormal operands through its
// frexp of the bits as it does) on 8 lanes.
func logF64x8(x archsimd.Float64x8) archsimd.Float64x8 {
	c := &f64MathK
	ld := func(i int) archsimd.Float64x8 { return archsimd.LoadFloat64x8((*[8]float64)(c[i][:8])) }
	lu := func(i int) archsimd.Uint64x8 { return archsimd.LoadUint64x8((*[8]uint64)(f64LogBits[i][:8])) }
	bx := x.AsUint64x8()
	f1 := bx.And(lu(lbMant)).Or(lu(lbHalf)).AsFloat64x8()
	k := bx.ShiftRight(lu(lbShift)).And(lu(lbExp)).Or(lu(lbMagic)).AsFloat64x8().Sub(ld(kLogMagic))
	one := ld(kOne)
	var zero archsimd.Float64x8
	adj := one.Merge(zero, f1.LessEqual(ld(kHSqrt2)))
	k = k.Sub(adj)
	f1 = f1.Mul(adj.Add(one))
	f := f1.Sub(one)
	s := f.Div(ld(kTwo).Add(f))
	s2 := s.Mul(s)
	s4 := s2.Mul(s2)
	t1 := s2.Mul(ld(kL7).Mul(s4).Add(ld(kL5)).Mul(s4).Add(ld(kL3)).Mul(s4).Add(ld(kL1)))
	t2 := s4.Mul(ld(kL6).Mul(s4).Add(ld(kL4)).Mul(s4).Add(ld(kL2)))
	r := t1.Add(t2)
	hfsq := ld(kHalf).Mul(f).Mul(f)
	u := s.Mul(r.Add(hfsq)).Add(ld(kLn2Lo).Mul(k))
	v := hfsq.Sub(u).Sub(f)
	res := k.Mul(ld(kLn2Hi)).Sub(v)
	var izero archsimd.Int64x8
	ix := bx.AsInt64x8()
	res = x.Merge(res, ix.Greater(lu(lbInf).AsInt64x8().Sub(lu(lbOne).AsInt64x8())))
	res = lu(lbNaN).AsFloat64x8().Merge(res, ix.Less(izero))
	return lu(lbNegInf).AsFloat64x8().Merge(res, bx.AndNot(lu(lbSign)).Equal(lu(lbZero)))
}

// sinCosF64x4 is math.Sin (cos false) or math.Cos (math/sin.go, unfused)
// on 4 lanes whose |x| is below 2^29 (not NaN); ok is false when a lane
// is not.
func sinCosF64x4(x archsimd.Float64x4, cos bool) (archsimd.Float64x4, bool) {
	c := &f64MathK
	ld := func(i int) archsimd.Float64x4 { return archsimd.LoadFloat64x4((*[4]float64)(c[i][:4])) }
	sign := archsimd.LoadUint64x4((*[4]uint64)(f64MathSign[:4]))
	ax := x.AsUint64x4().AndNot(sign).AsFloat64x4()
	if ax.GreaterEqual(ld(kTrigMax)).Or(x.IsNaN()).ToBits() != 0 {
		return x, false
	}
	one, half := ld(kOne), ld(kHalf)
	y := ax.Mul(ld(kFourOverPi)).Trunc()
	odd := y.Sub(y.Mul(half).Trunc().Mul(ld(kTwo)))
	y = y.Add(odd) // odd is 0 or 1
	j := y.Sub(y.Mul(ld(kEighth)).Trunc().Mul(ld(kEight)))
	z := ax.Sub(y.Mul(ld(kPI4A))).Sub(y.Mul(ld(kPI4B))).Sub(y.Mul(ld(kPI4C)))
	hi := j.Greater(ld(kThree))
	j = j.Sub(ld(kFour)).Merge(j, hi)
	two := j.Equal(ld(kTwo))
	zz := z.Mul(z)
	ps := ld(kS0).Mul(zz).Add(ld(kS1)).Mul(zz).Add(ld(kS2)).Mul(zz).Add(ld(kS3)).Mul(zz).Add(ld(kS4)).Mul(zz).Add(ld(kS5))
	pc := ld(kC0).Mul(zz).Add(ld(kCc1)).Mul(zz).Add(ld(kCc2)).Mul(zz).Add(ld(kCc3)).Mul(zz).Add(ld(kCc4)).Mul(zz).Add(ld(kCc5))
	ys := z.Add(z.Mul(zz).Mul(ps))
	yc := one.Sub(half.Mul(zz)).Add(zz.Mul(zz).Mul(pc))
	var zero archsimd.Float64x4
	var zu archsimd.Uint64x4
	var r archsimd.Float64x4
	flip := sign.Merge(zu, hi) // the sign flips of the octant (and of x for sin)
	if cos {
		r = ys.Merge(yc, two)
		flip = flip.Xor(sign.Merge(zu, two))
	} else {
		r = yc.Merge(ys, two)
		flip = flip.Xor(x.AsUint64x4().And(sign))
	}
	r = r.AsUint64x4().Xor(flip).AsFloat64x4()
	if !cos {
		r = x.Merge(r, x.Equal(zero))
	}
	return r, true
}

func sinCosF64Loopx4(x, o []float64, cos bool) int {
	n := len(o) &^ (4 - 1)
	var fix []int
	for i := 0; i < n; i += 4 {
		r, ok := sinCosF64x4(archsimd.LoadFloat64x4((*[4]float64)(x[i:])), cos)
		if !ok {
			fix = append(fix, i)
			continue
		}
		r.Store((*[4]float64)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	for _, i := range fix {
		for l := i; l < i+4; l++ {
			if cos {
				o[l] = math.Cos(x[l])
			} else {
				o[l] = math.Sin(x[l])
			}
		}
	}
	return n
}

// sinCosF64x8 is math.Sin (cos false) or math.Cos (math/sin.go, unfused)
// on 8 lanes whose |x| is below 2^29 (not NaN); ok is false when a lane
// is not.
func sinCosF64x8(x archsimd.Float64x8, cos bool) (archsimd.Float64x8, bool) {
	c := &f64MathK
	ld := func(i int) archsimd.Float64x8 { return archsimd.LoadFloat64x8((*[8]float64)(c[i][:8])) }
	sign := archsimd.LoadUint64x8((*[8]uint64)(f64MathSign[:8]))
	ax := x.AsUint64x8().AndNot(sign).AsFloat64x8()
	if ax.GreaterEqual(ld(kTrigMax)).Or(x.IsNaN()).ToBits() != 0 {
		return x, false
	}
	one, half := ld(kOne), ld(kHalf)
	y := ax.Mul(ld(kFourOverPi)).TruncScaled(0)
	odd := y.Sub(y.Mul(half).TruncScaled(0).Mul(ld(kTwo)))
	y = y.Add(odd) // odd is 0 or 1
	j := y.Sub(y.Mul(ld(kEighth)).TruncScaled(0).Mul(ld(kEight)))
	z := ax.Sub(y.Mul(ld(kPI4A))).Sub(y.Mul(ld(kPI4B))).Sub(y.Mul(ld(kPI4C)))
	hi := j.Greater(ld(kThree))
	j = j.Sub(ld(kFour)).Merge(j, hi)
	two := j.Equal(ld(kTwo))
	zz := z.Mul(z)
	ps := ld(kS0).Mul(zz).Add(ld(kS1)).Mul(zz).Add(ld(kS2)).Mul(zz).Add(ld(kS3)).Mul(zz).Add(ld(kS4)).Mul(zz).Add(ld(kS5))
	pc := ld(kC0).Mul(zz).Add(ld(kCc1)).Mul(zz).Add(ld(kCc2)).Mul(zz).Add(ld(kCc3)).Mul(zz).Add(ld(kCc4)).Mul(zz).Add(ld(kCc5))
	ys := z.Add(z.Mul(zz).Mul(ps))
	yc := one.Sub(half.Mul(zz)).Add(zz.Mul(zz).Mul(pc))
	var zero archsimd.Float64x8
	var zu archsimd.Uint64x8
	var r archsimd.Float64x8
	flip := sign.Merge(zu, hi) // the sign flips of the octant (and of x for sin)
	if cos {
		r = ys.Merge(yc, two)
		flip = flip.Xor(sign.Merge(zu, two))
	} else {
		r = yc.Merge(ys, two)
		flip = flip.Xor(x.AsUint64x8().And(sign))
	}
	r = r.AsUint64x8().Xor(flip).AsFloat64x8()
	if !cos {
		r = x.Merge(r, x.Equal(zero))
	}
	return r, true
}

func sinCosF64Loopx8(x, o []float64, cos bool) int {
	n := len(o) &^ (8 - 1)
	var fix []int
	for i := 0; i < n; i += 8 {
		r, ok := sinCosF64x8(archsimd.LoadFloat64x8((*[8]float64)(x[i:])), cos)
		if !ok {
			fix = append(fix, i)
			continue
		}
		r.Store((*[8]float64)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	for _, i := range fix {
		for l := i; l < i+8; l++ {
			if cos {
				o[l] = math.Cos(x[l])
			} else {
				o[l] = math.Sin(x[l])
			}
		}
	}
	return n
}
