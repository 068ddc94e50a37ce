//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

// 32-bit integer divide and remainder a vector at a time, in f64 lanes.
//
// Why the quotient is exact. Let a, b be integers with |a| <= 2^32 and
// 1 <= |b| (every s32 or u32 pair with b != 0), r = a/b the real quotient,
// both a and b exact in f64. The f64 division returns fl(r), r correctly
// rounded, so |fl(r) - r| <= |r|*2^-53 = |a|/(|b|*2^53) <= 2^-21/|b|. If r is
// an integer, fl(r) = r (it is below 2^32, so exact). Otherwise the
// integer n nearest r in the direction away from zero satisfies
// |n - r| = |n*b - a|/|b| >= 1/|b| > 2^-21/|b|, so fl(r) lies strictly
// between trunc(r) and n: truncating fl(r) gives trunc(r), the integer
// quotient C and Go compute. The remainder is then a - q*b in wrapping
// 32-bit arithmetic: the true remainder a - q*b fits 32 bits, so its low
// 32 bits (what VPMULLD and VPSUBD keep) are it.
//
// The two cases without an integer quotient, as binaryInt gives them (and
// XLA defines them): b == 0 gives all ones for divide (-1 signed, the
// maximum unsigned), a for remainder; and s32 INT_MIN/-1 gives INT_MIN, with
// remainder 0. The remainder formula gives both of its cases by itself
// (q*0 = 0 whatever q is; INT_MIN - INT_MIN*-1 wraps to 0); for the quotient
// b == 0 is merged in from a mask, and INT_MIN/-1 = 2^31 converts to
// 0x80000000, the x86 "integer indefinite" that VCVTTPD2DQ returns for any
// out-of-range value, which is INT_MIN. Unsigned lanes convert through the
// sign-flipped signed value plus 2^31 on AVX2 (no VCVTUDQ2PD there), exact
// for every u32, and back as trunc(q) - 2^31 (exact: an integer below 2^32)
// with the sign bit flipped again. TestDivInt32VectorMatchesScalar checks
// every lane against binaryInt, edge cases included.

// divInt32Vector computes the whole vectors at the front of o for op
// "divide" or "remainder" on s32 (signed) or u32 bits and returns how many
// elements that was (0 for other ops).
func divInt32Vector(op string, signed bool, a, b, o []uint32) int {
	if op != "divide" && op != "remainder" {
		return 0
	}
	rem := op == "remainder"
	n := len(o)
	a, b = a[:n], b[:n]
	switch binaryLanes {
	case 16:
		if signed {
			return divS32X16(rem, a, b, o)
		}
		return divU32X16(rem, a, b, o)
	case 8:
		if signed {
			return divS32X8(rem, a, b, o)
		}
		return divU32X8(rem, a, b, o)
	}
	return 0
}

func divS32X16(rem bool, a, b, o []uint32) int {
	n := len(o) &^ 15
	a, b = a[:n], b[:n]
	zero, ones := archsimd.BroadcastInt32x16(0), archsimd.BroadcastInt32x16(-1)
	for i := 0; i < n; i += 16 {
		x := archsimd.LoadUint32x16((*[16]uint32)(a[i:])).AsInt32x16()
		y := archsimd.LoadUint32x16((*[16]uint32)(b[i:])).AsInt32x16()
		lo := x.GetLo().ConvertToFloat64().Div(y.GetLo().ConvertToFloat64()).ConvertToInt32()
		hi := x.GetHi().ConvertToFloat64().Div(y.GetHi().ConvertToFloat64()).ConvertToInt32()
		q := zero.SetLo(lo).SetHi(hi)
		if rem {
			q = x.Sub(q.Mul(y))
		} else {
			q = ones.Merge(q, y.Equal(zero))
		}
		q.AsUint32x16().Store((*[16]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func divU32X16(rem bool, a, b, o []uint32) int {
	n := len(o) &^ 15
	a, b = a[:n], b[:n]
	zero, ones := archsimd.BroadcastUint32x16(0), archsimd.BroadcastUint32x16(^uint32(0))
	for i := 0; i < n; i += 16 {
		x := archsimd.LoadUint32x16((*[16]uint32)(a[i:]))
		y := archsimd.LoadUint32x16((*[16]uint32)(b[i:]))
		lo := x.GetLo().ConvertToFloat64().Div(y.GetLo().ConvertToFloat64()).ConvertToUint32()
		hi := x.GetHi().ConvertToFloat64().Div(y.GetHi().ConvertToFloat64()).ConvertToUint32()
		q := zero.SetLo(lo).SetHi(hi)
		if rem {
			q = x.Sub(q.Mul(y))
		} else {
			q = ones.Merge(q, y.Equal(zero))
		}
		q.Store((*[16]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func divS32X8(rem bool, a, b, o []uint32) int {
	n := len(o) &^ 7
	a, b = a[:n], b[:n]
	zero, ones := archsimd.BroadcastInt32x8(0), archsimd.BroadcastInt32x8(-1)
	for i := 0; i < n; i += 8 {
		x := archsimd.LoadUint32x8((*[8]uint32)(a[i:])).AsInt32x8()
		y := archsimd.LoadUint32x8((*[8]uint32)(b[i:])).AsInt32x8()
		lo := x.GetLo().ConvertToFloat64().Div(y.GetLo().ConvertToFloat64()).ConvertToInt32()
		hi := x.GetHi().ConvertToFloat64().Div(y.GetHi().ConvertToFloat64()).ConvertToInt32()
		q := zero.SetLo(lo).SetHi(hi)
		if rem {
			q = x.Sub(q.Mul(y))
		} else {
			q = ones.Merge(q, y.Equal(zero))
		}
		q.AsUint32x8().Store((*[8]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func divU32X8(rem bool, a, b, o []uint32) int {
	n := len(o) &^ 7
	a, b = a[:n], b[:n]
	zero, ones := archsimd.BroadcastInt32x8(0), archsimd.BroadcastInt32x8(-1)
	flip := archsimd.BroadcastInt32x4(-1 << 31)
	two31 := archsimd.BroadcastFloat64x4(1 << 31)
	// u32 -> f64 exactly: the sign-flipped bits as s32, plus 2^31.
	widen := func(v archsimd.Int32x4) archsimd.Float64x4 {
		return v.Xor(flip).ConvertToFloat64().Add(two31)
	}
	// An integer-valued f64 in [0, 2^32) -> its u32 bits.
	narrow := func(q archsimd.Float64x4) archsimd.Int32x4 {
		return q.Trunc().Sub(two31).ConvertToInt32().Xor(flip)
	}
	for i := 0; i < n; i += 8 {
		x := archsimd.LoadUint32x8((*[8]uint32)(a[i:])).AsInt32x8()
		y := archsimd.LoadUint32x8((*[8]uint32)(b[i:])).AsInt32x8()
		lo := narrow(widen(x.GetLo()).Div(widen(y.GetLo())))
		hi := narrow(widen(x.GetHi()).Div(widen(y.GetHi())))
		q := zero.SetLo(lo).SetHi(hi)
		if rem {
			q = x.Sub(q.Mul(y))
		} else {
			q = ones.Merge(q, y.Equal(zero))
		}
		q.AsUint32x8().Store((*[8]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// unaryInt32Vector computes the whole vectors at the front of o for the
// s32 (signed) or u32 ops sign, negate, abs and not, as unaryInt does at
// width 32, and returns how many elements that was (0 for other ops).
// sign is (x >> 31) | (-x >>> 31) signed (INT_MIN: -1 | 1 = -1) and
// (x | -x) >>> 31 unsigned; abs of INT_MIN wraps to INT_MIN, as -v does.
func unaryInt32Vector(op string, signed bool, x, o []uint32) int {
	switch op {
	case "sign", "negate", "abs", "not":
	default:
		return 0
	}
	n := len(o)
	x = x[:n]
	switch binaryLanes {
	case 16:
		n &^= 15
		zero := archsimd.BroadcastInt32x16(0)
		ones := archsimd.BroadcastInt32x16(-1)
		c31 := archsimd.BroadcastUint32x16(31)
		for i := 0; i < n; i += 16 {
			v := archsimd.LoadUint32x16((*[16]uint32)(x[i:])).AsInt32x16()
			var r archsimd.Int32x16
			switch op {
			case "negate":
				r = zero.Sub(v)
			case "not":
				r = v.Xor(ones)
			case "abs":
				if signed {
					r = v.Abs()
				} else {
					r = v
				}
			case "sign":
				neg := zero.Sub(v)
				if signed {
					r = v.ShiftRight(c31.AsInt32x16()).Or(neg.AsUint32x16().ShiftRight(c31).AsInt32x16())
				} else {
					r = v.Or(neg).AsUint32x16().ShiftRight(c31).AsInt32x16()
				}
			}
			r.AsUint32x16().Store((*[16]uint32)(o[i:]))
		}
	case 8:
		n &^= 7
		zero := archsimd.BroadcastInt32x8(0)
		ones := archsimd.BroadcastInt32x8(-1)
		c31 := archsimd.BroadcastUint32x8(31)
		for i := 0; i < n; i += 8 {
			v := archsimd.LoadUint32x8((*[8]uint32)(x[i:])).AsInt32x8()
			var r archsimd.Int32x8
			switch op {
			case "negate":
				r = zero.Sub(v)
			case "not":
				r = v.Xor(ones)
			case "abs":
				if signed {
					r = v.Abs()
				} else {
					r = v
				}
			case "sign":
				neg := zero.Sub(v)
				if signed {
					r = v.ShiftRight(c31.AsInt32x8()).Or(neg.AsUint32x8().ShiftRight(c31).AsInt32x8())
				} else {
					r = v.Or(neg).AsUint32x8().ShiftRight(c31).AsInt32x8()
				}
			}
			r.AsUint32x8().Store((*[8]uint32)(o[i:]))
		}
	default:
		return 0
	}
	archsimd.ClearAVXUpperBits()
	return n
}
