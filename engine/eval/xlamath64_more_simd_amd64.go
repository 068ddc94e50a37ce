//go:build goexperiment.simd && amd64

package eval

// f64 fused multiply-adds and log1p's small-|x| branch a vector at a time,
// at xlaF64Lanes (8 on AVX-512, 4 on AVX2+FMA): each lane the operations of
// the scalar code in its order (VFMADD where it calls math.FMA), so each
// lane has the scalar code's bits. Held to it by TestFMAF64VectorMatchesScalar
// and TestLog1pF64VectorMatchesScalar at every width the CPU runs.

import (
	"math"
	"simd/archsimd"
)

// fmaF64Vector computes o[i] = math.FMA(a[i], b[i], c[i]) over the whole
// vectors at the front of o and returns how many elements that was. A
// vector with a NaN result is recomputed by math.FMA, which decides which
// NaN operand's payload the result carries (the vector instruction's
// operand order may differ).
func fmaF64Vector(a, b, c, o []float64) int {
	switch xlaF64Lanes {
	case 8:
		n := len(o) &^ 7
		if n == 0 {
			return 0
		}
		pa, pb, pc, po := f64Base(a, n), f64Base(b, n), f64Base(c, n), f64Base(o, n)
		for off, end := 0, 8*n; off < end; off += 64 {
			r := loadFloat64x8(pa, off).MulAdd(loadFloat64x8(pb, off), loadFloat64x8(pc, off))
			storeFloat64x8(r, po, off)
			if r.IsNaN().ToBits() != 0 {
				for k := off / 8; k < off/8+8; k++ {
					o[k] = math.FMA(a[k], b[k], c[k])
				}
			}
		}
		archsimd.ClearAVXUpperBits()
		return n
	case 4:
		n := len(o) &^ 3
		if n == 0 {
			return 0
		}
		pa, pb, pc, po := f64Base(a, n), f64Base(b, n), f64Base(c, n), f64Base(o, n)
		for off, end := 0, 8*n; off < end; off += 32 {
			r := loadFloat64x4(pa, off).MulAdd(loadFloat64x4(pb, off), loadFloat64x4(pc, off))
			storeFloat64x4(r, po, off)
			if r.IsNaN().ToBits() != 0 {
				for k := off / 8; k < off/8+4; k++ {
					o[k] = math.FMA(a[k], b[k], c[k])
				}
			}
		}
		archsimd.ClearAVXUpperBits()
		return n
	}
	return 0
}

// log1pSmallVector computes o[i] = log1pSmall64(x[i]) over the whole
// vectors at the front of x, whatever x[i] is (lanes outside the small
// branch get values the caller overwrites), and returns how many elements
// that was.
func log1pSmallVector(x, o []float64) int {
	switch xlaF64Lanes {
	case 8:
		n := len(x) &^ 7
		if n == 0 {
			return 0
		}
		o = o[:len(x)]
		var num, den [len(log1p64Num)]archsimd.Float64x8
		for i := range num {
			num[i] = archsimd.BroadcastFloat64x8(log1p64Num[i])
			den[i] = archsimd.BroadcastFloat64x8(log1p64Den[i])
		}
		negHalf := archsimd.BroadcastFloat64x8(-0.5)
		px, po := f64Base(x, n), f64Base(o, n)
		for off, end := 0, 8*n; off < end; off += 64 {
			v := loadFloat64x8(px, off)
			x2 := v.Mul(v)
			p, q := num[0], den[0]
			for i := 1; i < len(num); i++ {
				p = p.MulAdd(v, num[i])
				q = q.MulAdd(v, den[i])
			}
			t := v.Mul(x2).Mul(p.Div(q))
			storeFloat64x8(v.Add(x2.MulAdd(negHalf, t)), po, off)
		}
		archsimd.ClearAVXUpperBits()
		return n
	case 4:
		n := len(x) &^ 3
		if n == 0 {
			return 0
		}
		o = o[:len(x)]
		var num, den [len(log1p64Num)]archsimd.Float64x4
		for i := range num {
			num[i] = archsimd.BroadcastFloat64x4(log1p64Num[i])
			den[i] = archsimd.BroadcastFloat64x4(log1p64Den[i])
		}
		negHalf := archsimd.BroadcastFloat64x4(-0.5)
		px, po := f64Base(x, n), f64Base(o, n)
		for off, end := 0, 8*n; off < end; off += 32 {
			v := loadFloat64x4(px, off)
			x2 := v.Mul(v)
			p, q := num[0], den[0]
			for i := 1; i < len(num); i++ {
				p = p.MulAdd(v, num[i])
				q = q.MulAdd(v, den[i])
			}
			t := v.Mul(x2).Mul(p.Div(q))
			storeFloat64x4(v.Add(x2.MulAdd(negHalf, t)), po, off)
		}
		archsimd.ClearAVXUpperBits()
		return n
	}
	return 0
}

// signBitF64Vector is abs (clear) or negate (flip) of the sign bit of each
// f64 over the whole vectors at the front of o (bit operations: every
// width gives the scalar loop's bits, NaN payloads untouched); it returns
// how many elements that was.
func signBitF64Vector(abs bool, x, o []float64) int {
	switch binaryLanes {
	case 16:
		n := len(o) &^ 7
		if n == 0 {
			return 0
		}
		px, po := f64Base(x, n), f64Base(o, n)
		m := archsimd.BroadcastUint64x8(1 << 63)
		for off, end := 0, 8*n; off < end; off += 64 {
			v := loadFloat64x8(px, off).AsUint64x8()
			if abs {
				v = v.AndNot(m)
			} else {
				v = v.Xor(m)
			}
			storeFloat64x8(v.AsFloat64x8(), po, off)
		}
		archsimd.ClearAVXUpperBits()
		return n
	case 8:
		n := len(o) &^ 3
		if n == 0 {
			return 0
		}
		px, po := f64Base(x, n), f64Base(o, n)
		m := archsimd.BroadcastUint64x4(1 << 63)
		for off, end := 0, 8*n; off < end; off += 32 {
			v := loadFloat64x4(px, off).AsUint64x4()
			if abs {
				v = v.AndNot(m)
			} else {
				v = v.Xor(m)
			}
			storeFloat64x4(v.AsFloat64x4(), po, off)
		}
		archsimd.ClearAVXUpperBits()
		return n
	}
	return 0
}
