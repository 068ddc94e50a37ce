//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

// 32-bit integer add, subtract, multiply, and, or, xor and shifts a vector
// at a time, on the bits of s32 or u32 elements (the same ops for both:
// two's complement wraps alike; shift-right-arithmetic shifts as s32).
// Each lane computes what binaryInt's scalar loop does at width 32: VPMULLD
// keeps the product's low 32 bits, VPSLLVD and VPSRLVD give 0 for a count
// of 32 or more read as unsigned, VPSRAVD the sign for such counts, as
// binaryInt's count-clamping does (TestBinaryInt32VectorMatchesScalar).
// One loop per op and width, as binary_simd_amd64.go's f32 loops, four
// vectors an iteration (the loop overhead of one vector an iteration cost
// fused threefry rounds twice their time), then one at a time.

// binaryInt32Vector computes the whole vectors at the front of o and
// returns how many elements that was (0 when op has no vector form here).
func binaryInt32Vector(op string, a, b, o []uint32) int {
	n := len(o)
	a, b = a[:n], b[:n]
	switch binaryLanes {
	case 16:
		switch op {
		case "add":
			return addU32X16(a, b, o)
		case "subtract":
			return subtractU32X16(a, b, o)
		case "multiply":
			return multiplyU32X16(a, b, o)
		case "and":
			return andU32X16(a, b, o)
		case "or":
			return orU32X16(a, b, o)
		case "xor":
			return xorU32X16(a, b, o)
		case "shift-left":
			return shiftLeftU32X16(a, b, o)
		case "shift-right-logical":
			return shiftRightLogicalU32X16(a, b, o)
		case "shift-right-arithmetic":
			return shiftRightArithmeticU32X16(a, b, o)
		}
	case 8:
		switch op {
		case "add":
			return addU32X8(a, b, o)
		case "subtract":
			return subtractU32X8(a, b, o)
		case "multiply":
			return multiplyU32X8(a, b, o)
		case "and":
			return andU32X8(a, b, o)
		case "or":
			return orU32X8(a, b, o)
		case "xor":
			return xorU32X8(a, b, o)
		case "shift-left":
			return shiftLeftU32X8(a, b, o)
		case "shift-right-logical":
			return shiftRightLogicalU32X8(a, b, o)
		case "shift-right-arithmetic":
			return shiftRightArithmeticU32X8(a, b, o)
		}
	}
	return 0
}

func addU32X16(a, b, o []uint32) int {
	n := len(o) &^ 15
	a, b, o = a[:n], b[:n], o[:n]
	i := 0
	for ; i+64 <= n; i += 64 {
		aa, bb, oo := (*[64]uint32)(a[i:]), (*[64]uint32)(b[i:]), (*[64]uint32)(o[i:])
		x0 := archsimd.LoadUint32x16((*[16]uint32)(aa[0:]))
		y0 := archsimd.LoadUint32x16((*[16]uint32)(bb[0:]))
		x0.Add(y0).Store((*[16]uint32)(oo[0:]))
		x1 := archsimd.LoadUint32x16((*[16]uint32)(aa[16:]))
		y1 := archsimd.LoadUint32x16((*[16]uint32)(bb[16:]))
		x1.Add(y1).Store((*[16]uint32)(oo[16:]))
		x2 := archsimd.LoadUint32x16((*[16]uint32)(aa[32:]))
		y2 := archsimd.LoadUint32x16((*[16]uint32)(bb[32:]))
		x2.Add(y2).Store((*[16]uint32)(oo[32:]))
		x3 := archsimd.LoadUint32x16((*[16]uint32)(aa[48:]))
		y3 := archsimd.LoadUint32x16((*[16]uint32)(bb[48:]))
		x3.Add(y3).Store((*[16]uint32)(oo[48:]))
	}
	for ; i < n; i += 16 {
		x := archsimd.LoadUint32x16((*[16]uint32)(a[i:]))
		y := archsimd.LoadUint32x16((*[16]uint32)(b[i:]))
		x.Add(y).Store((*[16]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func subtractU32X16(a, b, o []uint32) int {
	n := len(o) &^ 15
	a, b, o = a[:n], b[:n], o[:n]
	i := 0
	for ; i+64 <= n; i += 64 {
		aa, bb, oo := (*[64]uint32)(a[i:]), (*[64]uint32)(b[i:]), (*[64]uint32)(o[i:])
		x0 := archsimd.LoadUint32x16((*[16]uint32)(aa[0:]))
		y0 := archsimd.LoadUint32x16((*[16]uint32)(bb[0:]))
		x0.Sub(y0).Store((*[16]uint32)(oo[0:]))
		x1 := archsimd.LoadUint32x16((*[16]uint32)(aa[16:]))
		y1 := archsimd.LoadUint32x16((*[16]uint32)(bb[16:]))
		x1.Sub(y1).Store((*[16]uint32)(oo[16:]))
		x2 := archsimd.LoadUint32x16((*[16]uint32)(aa[32:]))
		y2 := archsimd.LoadUint32x16((*[16]uint32)(bb[32:]))
		x2.Sub(y2).Store((*[16]uint32)(oo[32:]))
		x3 := archsimd.LoadUint32x16((*[16]uint32)(aa[48:]))
		y3 := archsimd.LoadUint32x16((*[16]uint32)(bb[48:]))
		x3.Sub(y3).Store((*[16]uint32)(oo[48:]))
	}
	for ; i < n; i += 16 {
		x := archsimd.LoadUint32x16((*[16]uint32)(a[i:]))
		y := archsimd.LoadUint32x16((*[16]uint32)(b[i:]))
		x.Sub(y).Store((*[16]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func multiplyU32X16(a, b, o []uint32) int {
	n := len(o) &^ 15
	a, b, o = a[:n], b[:n], o[:n]
	i := 0
	for ; i+64 <= n; i += 64 {
		aa, bb, oo := (*[64]uint32)(a[i:]), (*[64]uint32)(b[i:]), (*[64]uint32)(o[i:])
		x0 := archsimd.LoadUint32x16((*[16]uint32)(aa[0:]))
		y0 := archsimd.LoadUint32x16((*[16]uint32)(bb[0:]))
		x0.Mul(y0).Store((*[16]uint32)(oo[0:]))
		x1 := archsimd.LoadUint32x16((*[16]uint32)(aa[16:]))
		y1 := archsimd.LoadUint32x16((*[16]uint32)(bb[16:]))
		x1.Mul(y1).Store((*[16]uint32)(oo[16:]))
		x2 := archsimd.LoadUint32x16((*[16]uint32)(aa[32:]))
		y2 := archsimd.LoadUint32x16((*[16]uint32)(bb[32:]))
		x2.Mul(y2).Store((*[16]uint32)(oo[32:]))
		x3 := archsimd.LoadUint32x16((*[16]uint32)(aa[48:]))
		y3 := archsimd.LoadUint32x16((*[16]uint32)(bb[48:]))
		x3.Mul(y3).Store((*[16]uint32)(oo[48:]))
	}
	for ; i < n; i += 16 {
		x := archsimd.LoadUint32x16((*[16]uint32)(a[i:]))
		y := archsimd.LoadUint32x16((*[16]uint32)(b[i:]))
		x.Mul(y).Store((*[16]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func andU32X16(a, b, o []uint32) int {
	n := len(o) &^ 15
	a, b, o = a[:n], b[:n], o[:n]
	i := 0
	for ; i+64 <= n; i += 64 {
		aa, bb, oo := (*[64]uint32)(a[i:]), (*[64]uint32)(b[i:]), (*[64]uint32)(o[i:])
		x0 := archsimd.LoadUint32x16((*[16]uint32)(aa[0:]))
		y0 := archsimd.LoadUint32x16((*[16]uint32)(bb[0:]))
		x0.And(y0).Store((*[16]uint32)(oo[0:]))
		x1 := archsimd.LoadUint32x16((*[16]uint32)(aa[16:]))
		y1 := archsimd.LoadUint32x16((*[16]uint32)(bb[16:]))
		x1.And(y1).Store((*[16]uint32)(oo[16:]))
		x2 := archsimd.LoadUint32x16((*[16]uint32)(aa[32:]))
		y2 := archsimd.LoadUint32x16((*[16]uint32)(bb[32:]))
		x2.And(y2).Store((*[16]uint32)(oo[32:]))
		x3 := archsimd.LoadUint32x16((*[16]uint32)(aa[48:]))
		y3 := archsimd.LoadUint32x16((*[16]uint32)(bb[48:]))
		x3.And(y3).Store((*[16]uint32)(oo[48:]))
	}
	for ; i < n; i += 16 {
		x := archsimd.LoadUint32x16((*[16]uint32)(a[i:]))
		y := archsimd.LoadUint32x16((*[16]uint32)(b[i:]))
		x.And(y).Store((*[16]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func orU32X16(a, b, o []uint32) int {
	n := len(o) &^ 15
	a, b, o = a[:n], b[:n], o[:n]
	i := 0
	for ; i+64 <= n; i += 64 {
		aa, bb, oo := (*[64]uint32)(a[i:]), (*[64]uint32)(b[i:]), (*[64]uint32)(o[i:])
		x0 := archsimd.LoadUint32x16((*[16]uint32)(aa[0:]))
		y0 := archsimd.LoadUint32x16((*[16]uint32)(bb[0:]))
		x0.Or(y0).Store((*[16]uint32)(oo[0:]))
		x1 := archsimd.LoadUint32x16((*[16]uint32)(aa[16:]))
		y1 := archsimd.LoadUint32x16((*[16]uint32)(bb[16:]))
		x1.Or(y1).Store((*[16]uint32)(oo[16:]))
		x2 := archsimd.LoadUint32x16((*[16]uint32)(aa[32:]))
		y2 := archsimd.LoadUint32x16((*[16]uint32)(bb[32:]))
		x2.Or(y2).Store((*[16]uint32)(oo[32:]))
		x3 := archsimd.LoadUint32x16((*[16]uint32)(aa[48:]))
		y3 := archsimd.LoadUint32x16((*[16]uint32)(bb[48:]))
		x3.Or(y3).Store((*[16]uint32)(oo[48:]))
	}
	for ; i < n; i += 16 {
		x := archsimd.LoadUint32x16((*[16]uint32)(a[i:]))
		y := archsimd.LoadUint32x16((*[16]uint32)(b[i:]))
		x.Or(y).Store((*[16]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func xorU32X16(a, b, o []uint32) int {
	n := len(o) &^ 15
	a, b, o = a[:n], b[:n], o[:n]
	i := 0
	for ; i+64 <= n; i += 64 {
		aa, bb, oo := (*[64]uint32)(a[i:]), (*[64]uint32)(b[i:]), (*[64]uint32)(o[i:])
		x0 := archsimd.LoadUint32x16((*[16]uint32)(aa[0:]))
		y0 := archsimd.LoadUint32x16((*[16]uint32)(bb[0:]))
		x0.Xor(y0).Store((*[16]uint32)(oo[0:]))
		x1 := archsimd.LoadUint32x16((*[16]uint32)(aa[16:]))
		y1 := archsimd.LoadUint32x16((*[16]uint32)(bb[16:]))
		x1.Xor(y1).Store((*[16]uint32)(oo[16:]))
		x2 := archsimd.LoadUint32x16((*[16]uint32)(aa[32:]))
		y2 := archsimd.LoadUint32x16((*[16]uint32)(bb[32:]))
		x2.Xor(y2).Store((*[16]uint32)(oo[32:]))
		x3 := archsimd.LoadUint32x16((*[16]uint32)(aa[48:]))
		y3 := archsimd.LoadUint32x16((*[16]uint32)(bb[48:]))
		x3.Xor(y3).Store((*[16]uint32)(oo[48:]))
	}
	for ; i < n; i += 16 {
		x := archsimd.LoadUint32x16((*[16]uint32)(a[i:]))
		y := archsimd.LoadUint32x16((*[16]uint32)(b[i:]))
		x.Xor(y).Store((*[16]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func shiftLeftU32X16(a, b, o []uint32) int {
	n := len(o) &^ 15
	a, b, o = a[:n], b[:n], o[:n]
	i := 0
	for ; i+64 <= n; i += 64 {
		aa, bb, oo := (*[64]uint32)(a[i:]), (*[64]uint32)(b[i:]), (*[64]uint32)(o[i:])
		x0 := archsimd.LoadUint32x16((*[16]uint32)(aa[0:]))
		y0 := archsimd.LoadUint32x16((*[16]uint32)(bb[0:]))
		x0.ShiftLeft(y0).Store((*[16]uint32)(oo[0:]))
		x1 := archsimd.LoadUint32x16((*[16]uint32)(aa[16:]))
		y1 := archsimd.LoadUint32x16((*[16]uint32)(bb[16:]))
		x1.ShiftLeft(y1).Store((*[16]uint32)(oo[16:]))
		x2 := archsimd.LoadUint32x16((*[16]uint32)(aa[32:]))
		y2 := archsimd.LoadUint32x16((*[16]uint32)(bb[32:]))
		x2.ShiftLeft(y2).Store((*[16]uint32)(oo[32:]))
		x3 := archsimd.LoadUint32x16((*[16]uint32)(aa[48:]))
		y3 := archsimd.LoadUint32x16((*[16]uint32)(bb[48:]))
		x3.ShiftLeft(y3).Store((*[16]uint32)(oo[48:]))
	}
	for ; i < n; i += 16 {
		x := archsimd.LoadUint32x16((*[16]uint32)(a[i:]))
		y := archsimd.LoadUint32x16((*[16]uint32)(b[i:]))
		x.ShiftLeft(y).Store((*[16]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func shiftRightLogicalU32X16(a, b, o []uint32) int {
	n := len(o) &^ 15
	a, b, o = a[:n], b[:n], o[:n]
	i := 0
	for ; i+64 <= n; i += 64 {
		aa, bb, oo := (*[64]uint32)(a[i:]), (*[64]uint32)(b[i:]), (*[64]uint32)(o[i:])
		x0 := archsimd.LoadUint32x16((*[16]uint32)(aa[0:]))
		y0 := archsimd.LoadUint32x16((*[16]uint32)(bb[0:]))
		x0.ShiftRight(y0).Store((*[16]uint32)(oo[0:]))
		x1 := archsimd.LoadUint32x16((*[16]uint32)(aa[16:]))
		y1 := archsimd.LoadUint32x16((*[16]uint32)(bb[16:]))
		x1.ShiftRight(y1).Store((*[16]uint32)(oo[16:]))
		x2 := archsimd.LoadUint32x16((*[16]uint32)(aa[32:]))
		y2 := archsimd.LoadUint32x16((*[16]uint32)(bb[32:]))
		x2.ShiftRight(y2).Store((*[16]uint32)(oo[32:]))
		x3 := archsimd.LoadUint32x16((*[16]uint32)(aa[48:]))
		y3 := archsimd.LoadUint32x16((*[16]uint32)(bb[48:]))
		x3.ShiftRight(y3).Store((*[16]uint32)(oo[48:]))
	}
	for ; i < n; i += 16 {
		x := archsimd.LoadUint32x16((*[16]uint32)(a[i:]))
		y := archsimd.LoadUint32x16((*[16]uint32)(b[i:]))
		x.ShiftRight(y).Store((*[16]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func shiftRightArithmeticU32X16(a, b, o []uint32) int {
	n := len(o) &^ 15
	a, b, o = a[:n], b[:n], o[:n]
	i := 0
	for ; i+64 <= n; i += 64 {
		aa, bb, oo := (*[64]uint32)(a[i:]), (*[64]uint32)(b[i:]), (*[64]uint32)(o[i:])
		x0 := archsimd.LoadUint32x16((*[16]uint32)(aa[0:])).AsInt32x16()
		y0 := archsimd.LoadUint32x16((*[16]uint32)(bb[0:])).AsInt32x16()
		x0.ShiftRight(y0).AsUint32x16().Store((*[16]uint32)(oo[0:]))
		x1 := archsimd.LoadUint32x16((*[16]uint32)(aa[16:])).AsInt32x16()
		y1 := archsimd.LoadUint32x16((*[16]uint32)(bb[16:])).AsInt32x16()
		x1.ShiftRight(y1).AsUint32x16().Store((*[16]uint32)(oo[16:]))
		x2 := archsimd.LoadUint32x16((*[16]uint32)(aa[32:])).AsInt32x16()
		y2 := archsimd.LoadUint32x16((*[16]uint32)(bb[32:])).AsInt32x16()
		x2.ShiftRight(y2).AsUint32x16().Store((*[16]uint32)(oo[32:]))
		x3 := archsimd.LoadUint32x16((*[16]uint32)(aa[48:])).AsInt32x16()
		y3 := archsimd.LoadUint32x16((*[16]uint32)(bb[48:])).AsInt32x16()
		x3.ShiftRight(y3).AsUint32x16().Store((*[16]uint32)(oo[48:]))
	}
	for ; i < n; i += 16 {
		x := archsimd.LoadUint32x16((*[16]uint32)(a[i:])).AsInt32x16()
		y := archsimd.LoadUint32x16((*[16]uint32)(b[i:])).AsInt32x16()
		x.ShiftRight(y).AsUint32x16().Store((*[16]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func addU32X8(a, b, o []uint32) int {
	n := len(o) &^ 7
	a, b, o = a[:n], b[:n], o[:n]
	i := 0
	for ; i+32 <= n; i += 32 {
		aa, bb, oo := (*[32]uint32)(a[i:]), (*[32]uint32)(b[i:]), (*[32]uint32)(o[i:])
		x0 := archsimd.LoadUint32x8((*[8]uint32)(aa[0:]))
		y0 := archsimd.LoadUint32x8((*[8]uint32)(bb[0:]))
		x0.Add(y0).Store((*[8]uint32)(oo[0:]))
		x1 := archsimd.LoadUint32x8((*[8]uint32)(aa[8:]))
		y1 := archsimd.LoadUint32x8((*[8]uint32)(bb[8:]))
		x1.Add(y1).Store((*[8]uint32)(oo[8:]))
		x2 := archsimd.LoadUint32x8((*[8]uint32)(aa[16:]))
		y2 := archsimd.LoadUint32x8((*[8]uint32)(bb[16:]))
		x2.Add(y2).Store((*[8]uint32)(oo[16:]))
		x3 := archsimd.LoadUint32x8((*[8]uint32)(aa[24:]))
		y3 := archsimd.LoadUint32x8((*[8]uint32)(bb[24:]))
		x3.Add(y3).Store((*[8]uint32)(oo[24:]))
	}
	for ; i < n; i += 8 {
		x := archsimd.LoadUint32x8((*[8]uint32)(a[i:]))
		y := archsimd.LoadUint32x8((*[8]uint32)(b[i:]))
		x.Add(y).Store((*[8]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func subtractU32X8(a, b, o []uint32) int {
	n := len(o) &^ 7
	a, b, o = a[:n], b[:n], o[:n]
	i := 0
	for ; i+32 <= n; i += 32 {
		aa, bb, oo := (*[32]uint32)(a[i:]), (*[32]uint32)(b[i:]), (*[32]uint32)(o[i:])
		x0 := archsimd.LoadUint32x8((*[8]uint32)(aa[0:]))
		y0 := archsimd.LoadUint32x8((*[8]uint32)(bb[0:]))
		x0.Sub(y0).Store((*[8]uint32)(oo[0:]))
		x1 := archsimd.LoadUint32x8((*[8]uint32)(aa[8:]))
		y1 := archsimd.LoadUint32x8((*[8]uint32)(bb[8:]))
		x1.Sub(y1).Store((*[8]uint32)(oo[8:]))
		x2 := archsimd.LoadUint32x8((*[8]uint32)(aa[16:]))
		y2 := archsimd.LoadUint32x8((*[8]uint32)(bb[16:]))
		x2.Sub(y2).Store((*[8]uint32)(oo[16:]))
		x3 := archsimd.LoadUint32x8((*[8]uint32)(aa[24:]))
		y3 := archsimd.LoadUint32x8((*[8]uint32)(bb[24:]))
		x3.Sub(y3).Store((*[8]uint32)(oo[24:]))
	}
	for ; i < n; i += 8 {
		x := archsimd.LoadUint32x8((*[8]uint32)(a[i:]))
		y := archsimd.LoadUint32x8((*[8]uint32)(b[i:]))
		x.Sub(y).Store((*[8]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func multiplyU32X8(a, b, o []uint32) int {
	n := len(o) &^ 7
	a, b, o = a[:n], b[:n], o[:n]
	i := 0
	for ; i+32 <= n; i += 32 {
		aa, bb, oo := (*[32]uint32)(a[i:]), (*[32]uint32)(b[i:]), (*[32]uint32)(o[i:])
		x0 := archsimd.LoadUint32x8((*[8]uint32)(aa[0:]))
		y0 := archsimd.LoadUint32x8((*[8]uint32)(bb[0:]))
		x0.Mul(y0).Store((*[8]uint32)(oo[0:]))
		x1 := archsimd.LoadUint32x8((*[8]uint32)(aa[8:]))
		y1 := archsimd.LoadUint32x8((*[8]uint32)(bb[8:]))
		x1.Mul(y1).Store((*[8]uint32)(oo[8:]))
		x2 := archsimd.LoadUint32x8((*[8]uint32)(aa[16:]))
		y2 := archsimd.LoadUint32x8((*[8]uint32)(bb[16:]))
		x2.Mul(y2).Store((*[8]uint32)(oo[16:]))
		x3 := archsimd.LoadUint32x8((*[8]uint32)(aa[24:]))
		y3 := archsimd.LoadUint32x8((*[8]uint32)(bb[24:]))
		x3.Mul(y3).Store((*[8]uint32)(oo[24:]))
	}
	for ; i < n; i += 8 {
		x := archsimd.LoadUint32x8((*[8]uint32)(a[i:]))
		y := archsimd.LoadUint32x8((*[8]uint32)(b[i:]))
		x.Mul(y).Store((*[8]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func andU32X8(a, b, o []uint32) int {
	n := len(o) &^ 7
	a, b, o = a[:n], b[:n], o[:n]
	i := 0
	for ; i+32 <= n; i += 32 {
		aa, bb, oo := (*[32]uint32)(a[i:]), (*[32]uint32)(b[i:]), (*[32]uint32)(o[i:])
		x0 := archsimd.LoadUint32x8((*[8]uint32)(aa[0:]))
		y0 := archsimd.LoadUint32x8((*[8]uint32)(bb[0:]))
		x0.And(y0).Store((*[8]uint32)(oo[0:]))
		x1 := archsimd.LoadUint32x8((*[8]uint32)(aa[8:]))
		y1 := archsimd.LoadUint32x8((*[8]uint32)(bb[8:]))
		x1.And(y1).Store((*[8]uint32)(oo[8:]))
		x2 := archsimd.LoadUint32x8((*[8]uint32)(aa[16:]))
		y2 := archsimd.LoadUint32x8((*[8]uint32)(bb[16:]))
		x2.And(y2).Store((*[8]uint32)(oo[16:]))
		x3 := archsimd.LoadUint32x8((*[8]uint32)(aa[24:]))
		y3 := archsimd.LoadUint32x8((*[8]uint32)(bb[24:]))
		x3.And(y3).Store((*[8]uint32)(oo[24:]))
	}
	for ; i < n; i += 8 {
		x := archsimd.LoadUint32x8((*[8]uint32)(a[i:]))
		y := archsimd.LoadUint32x8((*[8]uint32)(b[i:]))
		x.And(y).Store((*[8]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func orU32X8(a, b, o []uint32) int {
	n := len(o) &^ 7
	a, b, o = a[:n], b[:n], o[:n]
	i := 0
	for ; i+32 <= n; i += 32 {
		aa, bb, oo := (*[32]uint32)(a[i:]), (*[32]uint32)(b[i:]), (*[32]uint32)(o[i:])
		x0 := archsimd.LoadUint32x8((*[8]uint32)(aa[0:]))
		y0 := archsimd.LoadUint32x8((*[8]uint32)(bb[0:]))
		x0.Or(y0).Store((*[8]uint32)(oo[0:]))
		x1 := archsimd.LoadUint32x8((*[8]uint32)(aa[8:]))
		y1 := archsimd.LoadUint32x8((*[8]uint32)(bb[8:]))
		x1.Or(y1).Store((*[8]uint32)(oo[8:]))
		x2 := archsimd.LoadUint32x8((*[8]uint32)(aa[16:]))
		y2 := archsimd.LoadUint32x8((*[8]uint32)(bb[16:]))
		x2.Or(y2).Store((*[8]uint32)(oo[16:]))
		x3 := archsimd.LoadUint32x8((*[8]uint32)(aa[24:]))
		y3 := archsimd.LoadUint32x8((*[8]uint32)(bb[24:]))
		x3.Or(y3).Store((*[8]uint32)(oo[24:]))
	}
	for ; i < n; i += 8 {
		x := archsimd.LoadUint32x8((*[8]uint32)(a[i:]))
		y := archsimd.LoadUint32x8((*[8]uint32)(b[i:]))
		x.Or(y).Store((*[8]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func xorU32X8(a, b, o []uint32) int {
	n := len(o) &^ 7
	a, b, o = a[:n], b[:n], o[:n]
	i := 0
	for ; i+32 <= n; i += 32 {
		aa, bb, oo := (*[32]uint32)(a[i:]), (*[32]uint32)(b[i:]), (*[32]uint32)(o[i:])
		x0 := archsimd.LoadUint32x8((*[8]uint32)(aa[0:]))
		y0 := archsimd.LoadUint32x8((*[8]uint32)(bb[0:]))
		x0.Xor(y0).Store((*[8]uint32)(oo[0:]))
		x1 := archsimd.LoadUint32x8((*[8]uint32)(aa[8:]))
		y1 := archsimd.LoadUint32x8((*[8]uint32)(bb[8:]))
		x1.Xor(y1).Store((*[8]uint32)(oo[8:]))
		x2 := archsimd.LoadUint32x8((*[8]uint32)(aa[16:]))
		y2 := archsimd.LoadUint32x8((*[8]uint32)(bb[16:]))
		x2.Xor(y2).Store((*[8]uint32)(oo[16:]))
		x3 := archsimd.LoadUint32x8((*[8]uint32)(aa[24:]))
		y3 := archsimd.LoadUint32x8((*[8]uint32)(bb[24:]))
		x3.Xor(y3).Store((*[8]uint32)(oo[24:]))
	}
	for ; i < n; i += 8 {
		x := archsimd.LoadUint32x8((*[8]uint32)(a[i:]))
		y := archsimd.LoadUint32x8((*[8]uint32)(b[i:]))
		x.Xor(y).Store((*[8]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func shiftLeftU32X8(a, b, o []uint32) int {
	n := len(o) &^ 7
	a, b, o = a[:n], b[:n], o[:n]
	i := 0
	for ; i+32 <= n; i += 32 {
		aa, bb, oo := (*[32]uint32)(a[i:]), (*[32]uint32)(b[i:]), (*[32]uint32)(o[i:])
		x0 := archsimd.LoadUint32x8((*[8]uint32)(aa[0:]))
		y0 := archsimd.LoadUint32x8((*[8]uint32)(bb[0:]))
		x0.ShiftLeft(y0).Store((*[8]uint32)(oo[0:]))
		x1 := archsimd.LoadUint32x8((*[8]uint32)(aa[8:]))
		y1 := archsimd.LoadUint32x8((*[8]uint32)(bb[8:]))
		x1.ShiftLeft(y1).Store((*[8]uint32)(oo[8:]))
		x2 := archsimd.LoadUint32x8((*[8]uint32)(aa[16:]))
		y2 := archsimd.LoadUint32x8((*[8]uint32)(bb[16:]))
		x2.ShiftLeft(y2).Store((*[8]uint32)(oo[16:]))
		x3 := archsimd.LoadUint32x8((*[8]uint32)(aa[24:]))
		y3 := archsimd.LoadUint32x8((*[8]uint32)(bb[24:]))
		x3.ShiftLeft(y3).Store((*[8]uint32)(oo[24:]))
	}
	for ; i < n; i += 8 {
		x := archsimd.LoadUint32x8((*[8]uint32)(a[i:]))
		y := archsimd.LoadUint32x8((*[8]uint32)(b[i:]))
		x.ShiftLeft(y).Store((*[8]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func shiftRightLogicalU32X8(a, b, o []uint32) int {
	n := len(o) &^ 7
	a, b, o = a[:n], b[:n], o[:n]
	i := 0
	for ; i+32 <= n; i += 32 {
		aa, bb, oo := (*[32]uint32)(a[i:]), (*[32]uint32)(b[i:]), (*[32]uint32)(o[i:])
		x0 := archsimd.LoadUint32x8((*[8]uint32)(aa[0:]))
		y0 := archsimd.LoadUint32x8((*[8]uint32)(bb[0:]))
		x0.ShiftRight(y0).Store((*[8]uint32)(oo[0:]))
		x1 := archsimd.LoadUint32x8((*[8]uint32)(aa[8:]))
		y1 := archsimd.LoadUint32x8((*[8]uint32)(bb[8:]))
		x1.ShiftRight(y1).Store((*[8]uint32)(oo[8:]))
		x2 := archsimd.LoadUint32x8((*[8]uint32)(aa[16:]))
		y2 := archsimd.LoadUint32x8((*[8]uint32)(bb[16:]))
		x2.ShiftRight(y2).Store((*[8]uint32)(oo[16:]))
		x3 := archsimd.LoadUint32x8((*[8]uint32)(aa[24:]))
		y3 := archsimd.LoadUint32x8((*[8]uint32)(bb[24:]))
		x3.ShiftRight(y3).Store((*[8]uint32)(oo[24:]))
	}
	for ; i < n; i += 8 {
		x := archsimd.LoadUint32x8((*[8]uint32)(a[i:]))
		y := archsimd.LoadUint32x8((*[8]uint32)(b[i:]))
		x.ShiftRight(y).Store((*[8]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func shiftRightArithmeticU32X8(a, b, o []uint32) int {
	n := len(o) &^ 7
	a, b, o = a[:n], b[:n], o[:n]
	i := 0
	for ; i+32 <= n; i += 32 {
		aa, bb, oo := (*[32]uint32)(a[i:]), (*[32]uint32)(b[i:]), (*[32]uint32)(o[i:])
		x0 := archsimd.LoadUint32x8((*[8]uint32)(aa[0:])).AsInt32x8()
		y0 := archsimd.LoadUint32x8((*[8]uint32)(bb[0:])).AsInt32x8()
		x0.ShiftRight(y0).AsUint32x8().Store((*[8]uint32)(oo[0:]))
		x1 := archsimd.LoadUint32x8((*[8]uint32)(aa[8:])).AsInt32x8()
		y1 := archsimd.LoadUint32x8((*[8]uint32)(bb[8:])).AsInt32x8()
		x1.ShiftRight(y1).AsUint32x8().Store((*[8]uint32)(oo[8:]))
		x2 := archsimd.LoadUint32x8((*[8]uint32)(aa[16:])).AsInt32x8()
		y2 := archsimd.LoadUint32x8((*[8]uint32)(bb[16:])).AsInt32x8()
		x2.ShiftRight(y2).AsUint32x8().Store((*[8]uint32)(oo[16:]))
		x3 := archsimd.LoadUint32x8((*[8]uint32)(aa[24:])).AsInt32x8()
		y3 := archsimd.LoadUint32x8((*[8]uint32)(bb[24:])).AsInt32x8()
		x3.ShiftRight(y3).AsUint32x8().Store((*[8]uint32)(oo[24:]))
	}
	for ; i < n; i += 8 {
		x := archsimd.LoadUint32x8((*[8]uint32)(a[i:])).AsInt32x8()
		y := archsimd.LoadUint32x8((*[8]uint32)(b[i:])).AsInt32x8()
		x.ShiftRight(y).AsUint32x8().Store((*[8]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}
