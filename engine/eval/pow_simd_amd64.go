//go:build goexperiment.simd && amd64

package eval

import (
	"math"
	"simd/archsimd"
)

// f32 power in float64 lanes, for x > 0 and finite, y finite and |y·log x|
// < 80 (results between 2^-115 and 2^115, normal f32): exp(y·log x) with
// fdlibm's log (Lg1..Lg7 on s = f/(2+f)) and exp (P1..P5, the reduction by
// ln 2 with FMAs). Both are within an ulp or so in float64, so y·log x is
// good to about 2^-45 absolute and the f32 result is math.Pow's rounded
// except next to an f32 rounding boundary; every other lane (x ≤ 0, zeros,
// infinities, NaNs, extreme results) takes math.Pow. XLA:CPU calls glibc's
// powf, which goldtrace matches within a few ulp either way.
var (
	powK8 = [...][8]float64{
		splatF64x8(math.Sqrt2),
		splatF64x8(0x1p52 + 1023),              // 2^52 + the exponent bias: the exponent field as a float
		splatF64x8(6.93147180369123816490e-01), // ln 2 high
		splatF64x8(1.90821492927058770002e-10), // ln 2 low
		splatF64x8(6.666666666666735130e-01),   // Lg1..Lg7
		splatF64x8(3.999999999940941908e-01),
		splatF64x8(2.857142874366239149e-01),
		splatF64x8(2.222219843214978396e-01),
		splatF64x8(1.818357216161805012e-01),
		splatF64x8(1.531383769920937332e-01),
		splatF64x8(1.479819860511658591e-01),
		splatF64x8(1.44269504088896338700e+00), // 1/ln 2
		splatF64x8(1.66666666666666019037e-01), // P1..P5
		splatF64x8(-2.77777777770155933842e-03),
		splatF64x8(6.61375632143793436117e-05),
		splatF64x8(-1.65339022054652515390e-06),
		splatF64x8(4.13813679705723846039e-08),
		splatF64x8(0.5),
		splatF64x8(1),
		splatF64x8(2),
		splatF64x8(0x1.8p52), // k's low bits into the mantissa
		splatF64x8(80),       // |y·log x| limit of the fast lanes
		splatF64x8(math.Inf(1)),
	}
	powBits8 = [...][8]uint64{splatU64x8(1<<52 - 1), splatU64x8(1023 << 52), splatU64x8(0x4330000000000000),
		splatU64x8(1<<63 - 1), splatU64x8(1023), splatU64x8(1 << 63), splatU64x8(52)}
)

// powF32Vector computes x^y of whole groups of 8 (AVX-512) or 4 (AVX2)
// elements into o and returns how many it did.
func powF32Vector(x, y, o []float32) int {
	switch binaryLanes {
	case 16:
		return powF32x8(x, y, o)
	case 8:
		return powF32x4(x, y, o)
	}
	return 0
}

func powF32x8(x, y, o []float32) int {
	k := &powK8
	sqrt2, expBias := archsimd.LoadFloat64x8(&k[0]), archsimd.LoadFloat64x8(&k[1])
	ln2hi, ln2lo := archsimd.LoadFloat64x8(&k[2]), archsimd.LoadFloat64x8(&k[3])
	lg1, lg2, lg3 := archsimd.LoadFloat64x8(&k[4]), archsimd.LoadFloat64x8(&k[5]), archsimd.LoadFloat64x8(&k[6])
	lg4, lg5, lg6, lg7 := archsimd.LoadFloat64x8(&k[7]), archsimd.LoadFloat64x8(&k[8]), archsimd.LoadFloat64x8(&k[9]), archsimd.LoadFloat64x8(&k[10])
	invln2 := archsimd.LoadFloat64x8(&k[11])
	p1, p2, p3 := archsimd.LoadFloat64x8(&k[12]), archsimd.LoadFloat64x8(&k[13]), archsimd.LoadFloat64x8(&k[14])
	p4, p5 := archsimd.LoadFloat64x8(&k[15]), archsimd.LoadFloat64x8(&k[16])
	half, one, two := archsimd.LoadFloat64x8(&k[17]), archsimd.LoadFloat64x8(&k[18]), archsimd.LoadFloat64x8(&k[19])
	magic, limit, inf := archsimd.LoadFloat64x8(&k[20]), archsimd.LoadFloat64x8(&k[21]), archsimd.LoadFloat64x8(&k[22])
	b := &powBits8
	mantMask, oneExp, expAsFloat := archsimd.LoadUint64x8(&b[0]), archsimd.LoadUint64x8(&b[1]), archsimd.LoadUint64x8(&b[2])
	absMask, bias, signBit := archsimd.LoadUint64x8(&b[3]), archsimd.LoadUint64x8(&b[4]), archsimd.LoadUint64x8(&b[5])
	shift52 := archsimd.LoadUint64x8(&b[6]) // a count vector: ShiftAll's count goes through a legacy-SSE MOVQ
	var zero archsimd.Float64x8
	n := len(o) &^ 7
	x, y = x[:n], y[:n]
	for i := 0; i < n; i += 8 {
		xv := archsimd.LoadFloat32x8((*[8]float32)(x[i:])).ConvertToFloat64()
		yv := archsimd.LoadFloat32x8((*[8]float32)(y[i:])).ConvertToFloat64()
		xb := xv.AsUint64x8()
		// log x = e·ln 2 + log m, m in [√½, √2).
		m := xb.And(mantMask).Or(oneExp).AsFloat64x8()
		ef := xb.ShiftRight(shift52).Or(expAsFloat).AsFloat64x8().Sub(expBias)
		big := m.Greater(sqrt2)
		m = m.Mul(half).Merge(m, big)
		ef = ef.Add(one).Merge(ef, big)
		f := m.Sub(one)
		s := f.Div(two.Add(f))
		z := s.Mul(s)
		w := z.Mul(z)
		t1 := lg6.MulAdd(w, lg4).MulAdd(w, lg2).Mul(w)
		t2 := lg7.MulAdd(w, lg5).MulAdd(w, lg3).MulAdd(w, lg1).Mul(z)
		r := t1.Add(t2)
		hfsq := half.Mul(f).Mul(f)
		logm := f.Sub(hfsq.Sub(s.Mul(hfsq.Add(r)).Add(ef.Mul(ln2lo))))
		lx := ef.MulAdd(ln2hi, logm)
		// exp(t), t = y·log x.
		t := yv.Mul(lx)
		kf := t.Mul(invln2).RoundToEvenScaled(0)
		nk := kf.AsUint64x8().Xor(signBit).AsFloat64x8() // -k
		hi := nk.MulAdd(ln2hi, t)
		rr := nk.MulAdd(ln2lo, hi)
		rz := rr.Mul(rr)
		c := p5.MulAdd(rz, p4).MulAdd(rz, p3).MulAdd(rz, p2).MulAdd(rz, p1).Mul(rz)
		c = rr.Sub(c)
		ex := rr.Mul(c).Div(two.Sub(c)).Add(rr).Add(one)
		scale := kf.Add(magic).AsUint64x8().Add(bias).ShiftLeft(shift52).AsFloat64x8()
		res := ex.Mul(scale)
		res.ConvertToFloat32().Store((*[8]float32)(o[i:]))
		fast := xv.Greater(zero).And(xv.Less(inf)).And(yv.AsUint64x8().And(absMask).AsFloat64x8().Less(inf)).
			And(t.AsUint64x8().And(absMask).AsFloat64x8().Less(limit))
		if bits := fast.ToBits(); bits != 0xff {
			for j := range 8 {
				if bits>>j&1 == 0 { // only the lanes outside the fast range
					o[i+j] = float32(math.Pow(float64(x[i+j]), float64(y[i+j])))
				}
			}
		}
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func powF32x4(x, y, o []float32) int {
	k := &powK8
	sqrt2, expBias := archsimd.LoadFloat64x4((*[4]float64)(k[0][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[1][:4]))
	ln2hi, ln2lo := archsimd.LoadFloat64x4((*[4]float64)(k[2][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[3][:4]))
	lg1, lg2, lg3 := archsimd.LoadFloat64x4((*[4]float64)(k[4][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[5][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[6][:4]))
	lg4, lg5, lg6, lg7 := archsimd.LoadFloat64x4((*[4]float64)(k[7][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[8][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[9][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[10][:4]))
	invln2 := archsimd.LoadFloat64x4((*[4]float64)(k[11][:4]))
	p1, p2, p3 := archsimd.LoadFloat64x4((*[4]float64)(k[12][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[13][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[14][:4]))
	p4, p5 := archsimd.LoadFloat64x4((*[4]float64)(k[15][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[16][:4]))
	half, one, two := archsimd.LoadFloat64x4((*[4]float64)(k[17][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[18][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[19][:4]))
	magic, limit, inf := archsimd.LoadFloat64x4((*[4]float64)(k[20][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[21][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[22][:4]))
	b := &powBits8
	mantMask, oneExp, expAsFloat := archsimd.LoadUint64x4((*[4]uint64)(b[0][:4])), archsimd.LoadUint64x4((*[4]uint64)(b[1][:4])), archsimd.LoadUint64x4((*[4]uint64)(b[2][:4]))
	absMask, bias, signBit := archsimd.LoadUint64x4((*[4]uint64)(b[3][:4])), archsimd.LoadUint64x4((*[4]uint64)(b[4][:4])), archsimd.LoadUint64x4((*[4]uint64)(b[5][:4]))
	shift52 := archsimd.LoadUint64x4((*[4]uint64)(b[6][:4])) // a count vector: ShiftAll's count goes through a legacy-SSE MOVQ
	var zero archsimd.Float64x4
	n := len(o) &^ 3
	x, y = x[:n], y[:n]
	for i := 0; i < n; i += 4 {
		xv := archsimd.LoadFloat32x4((*[4]float32)(x[i:])).ConvertToFloat64()
		yv := archsimd.LoadFloat32x4((*[4]float32)(y[i:])).ConvertToFloat64()
		xb := xv.AsUint64x4()
		// log x = e·ln 2 + log m, m in [√½, √2).
		m := xb.And(mantMask).Or(oneExp).AsFloat64x4()
		ef := xb.ShiftRight(shift52).Or(expAsFloat).AsFloat64x4().Sub(expBias)
		big := m.Greater(sqrt2)
		m = m.Mul(half).Merge(m, big)
		ef = ef.Add(one).Merge(ef, big)
		f := m.Sub(one)
		s := f.Div(two.Add(f))
		z := s.Mul(s)
		w := z.Mul(z)
		t1 := lg6.MulAdd(w, lg4).MulAdd(w, lg2).Mul(w)
		t2 := lg7.MulAdd(w, lg5).MulAdd(w, lg3).MulAdd(w, lg1).Mul(z)
		r := t1.Add(t2)
		hfsq := half.Mul(f).Mul(f)
		logm := f.Sub(hfsq.Sub(s.Mul(hfsq.Add(r)).Add(ef.Mul(ln2lo))))
		lx := ef.MulAdd(ln2hi, logm)
		// exp(t), t = y·log x.
		t := yv.Mul(lx)
		kf := t.Mul(invln2).RoundToEvenScaled(0)
		nk := kf.AsUint64x4().Xor(signBit).AsFloat64x4() // -k
		hi := nk.MulAdd(ln2hi, t)
		rr := nk.MulAdd(ln2lo, hi)
		rz := rr.Mul(rr)
		c := p5.MulAdd(rz, p4).MulAdd(rz, p3).MulAdd(rz, p2).MulAdd(rz, p1).Mul(rz)
		c = rr.Sub(c)
		ex := rr.Mul(c).Div(two.Sub(c)).Add(rr).Add(one)
		scale := kf.Add(magic).AsUint64x4().Add(bias).ShiftLeft(shift52).AsFloat64x4()
		res := ex.Mul(scale)
		res.ConvertToFloat32().Store((*[4]float32)(o[i:]))
		fast := xv.Greater(zero).And(xv.Less(inf)).And(yv.AsUint64x4().And(absMask).AsFloat64x4().Less(inf)).
			And(t.AsUint64x4().And(absMask).AsFloat64x4().Less(limit))
		if bits := fast.ToBits(); bits != 0xf {
			for j := range 4 {
				if bits>>j&1 == 0 { // only the lanes outside the fast range
					o[i+j] = float32(math.Pow(float64(x[i+j]), float64(y[i+j])))
				}
			}
		}
	}
	archsimd.ClearAVXUpperBits()
	return n
}
