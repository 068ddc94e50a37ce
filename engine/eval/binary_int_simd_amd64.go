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
// One loop per op and width, as binary_simd_amd64.go's f32 loops.

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
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 16 {
		x := archsimd.LoadUint32x16((*[16]uint32)(a[i:]))
		y := archsimd.LoadUint32x16((*[16]uint32)(b[i:]))
		x.Add(y).Store((*[16]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func subtractU32X16(a, b, o []uint32) int {
	n := len(o) &^ 15
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 16 {
		x := archsimd.LoadUint32x16((*[16]uint32)(a[i:]))
		y := archsimd.LoadUint32x16((*[16]uint32)(b[i:]))
		x.Sub(y).Store((*[16]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func multiplyU32X16(a, b, o []uint32) int {
	n := len(o) &^ 15
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 16 {
		x := archsimd.LoadUint32x16((*[16]uint32)(a[i:]))
		y := archsimd.LoadUint32x16((*[16]uint32)(b[i:]))
		x.Mul(y).Store((*[16]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func andU32X16(a, b, o []uint32) int {
	n := len(o) &^ 15
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 16 {
		x := archsimd.LoadUint32x16((*[16]uint32)(a[i:]))
		y := archsimd.LoadUint32x16((*[16]uint32)(b[i:]))
		x.And(y).Store((*[16]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func orU32X16(a, b, o []uint32) int {
	n := len(o) &^ 15
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 16 {
		x := archsimd.LoadUint32x16((*[16]uint32)(a[i:]))
		y := archsimd.LoadUint32x16((*[16]uint32)(b[i:]))
		x.Or(y).Store((*[16]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func xorU32X16(a, b, o []uint32) int {
	n := len(o) &^ 15
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 16 {
		x := archsimd.LoadUint32x16((*[16]uint32)(a[i:]))
		y := archsimd.LoadUint32x16((*[16]uint32)(b[i:]))
		x.Xor(y).Store((*[16]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func shiftLeftU32X16(a, b, o []uint32) int {
	n := len(o) &^ 15
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 16 {
		x := archsimd.LoadUint32x16((*[16]uint32)(a[i:]))
		y := archsimd.LoadUint32x16((*[16]uint32)(b[i:]))
		x.ShiftLeft(y).Store((*[16]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func shiftRightLogicalU32X16(a, b, o []uint32) int {
	n := len(o) &^ 15
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 16 {
		x := archsimd.LoadUint32x16((*[16]uint32)(a[i:]))
		y := archsimd.LoadUint32x16((*[16]uint32)(b[i:]))
		x.ShiftRight(y).Store((*[16]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func shiftRightArithmeticU32X16(a, b, o []uint32) int {
	n := len(o) &^ 15
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 16 {
		x := archsimd.LoadUint32x16((*[16]uint32)(a[i:])).AsInt32x16()
		y := archsimd.LoadUint32x16((*[16]uint32)(b[i:])).AsInt32x16()
		x.ShiftRight(y).AsUint32x16().Store((*[16]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func addU32X8(a, b, o []uint32) int {
	n := len(o) &^ 7
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 8 {
		x := archsimd.LoadUint32x8((*[8]uint32)(a[i:]))
		y := archsimd.LoadUint32x8((*[8]uint32)(b[i:]))
		x.Add(y).Store((*[8]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func subtractU32X8(a, b, o []uint32) int {
	n := len(o) &^ 7
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 8 {
		x := archsimd.LoadUint32x8((*[8]uint32)(a[i:]))
		y := archsimd.LoadUint32x8((*[8]uint32)(b[i:]))
		x.Sub(y).Store((*[8]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func multiplyU32X8(a, b, o []uint32) int {
	n := len(o) &^ 7
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 8 {
		x := archsimd.LoadUint32x8((*[8]uint32)(a[i:]))
		y := archsimd.LoadUint32x8((*[8]uint32)(b[i:]))
		x.Mul(y).Store((*[8]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func andU32X8(a, b, o []uint32) int {
	n := len(o) &^ 7
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 8 {
		x := archsimd.LoadUint32x8((*[8]uint32)(a[i:]))
		y := archsimd.LoadUint32x8((*[8]uint32)(b[i:]))
		x.And(y).Store((*[8]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func orU32X8(a, b, o []uint32) int {
	n := len(o) &^ 7
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 8 {
		x := archsimd.LoadUint32x8((*[8]uint32)(a[i:]))
		y := archsimd.LoadUint32x8((*[8]uint32)(b[i:]))
		x.Or(y).Store((*[8]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func xorU32X8(a, b, o []uint32) int {
	n := len(o) &^ 7
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 8 {
		x := archsimd.LoadUint32x8((*[8]uint32)(a[i:]))
		y := archsimd.LoadUint32x8((*[8]uint32)(b[i:]))
		x.Xor(y).Store((*[8]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func shiftLeftU32X8(a, b, o []uint32) int {
	n := len(o) &^ 7
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 8 {
		x := archsimd.LoadUint32x8((*[8]uint32)(a[i:]))
		y := archsimd.LoadUint32x8((*[8]uint32)(b[i:]))
		x.ShiftLeft(y).Store((*[8]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func shiftRightLogicalU32X8(a, b, o []uint32) int {
	n := len(o) &^ 7
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 8 {
		x := archsimd.LoadUint32x8((*[8]uint32)(a[i:]))
		y := archsimd.LoadUint32x8((*[8]uint32)(b[i:]))
		x.ShiftRight(y).Store((*[8]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func shiftRightArithmeticU32X8(a, b, o []uint32) int {
	n := len(o) &^ 7
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 8 {
		x := archsimd.LoadUint32x8((*[8]uint32)(a[i:])).AsInt32x8()
		y := archsimd.LoadUint32x8((*[8]uint32)(b[i:])).AsInt32x8()
		x.ShiftRight(y).AsUint32x8().Store((*[8]uint32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}
