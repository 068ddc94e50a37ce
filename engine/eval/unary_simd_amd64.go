//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

// f32 sqrt, floor, ceil, round-nearest-even and round-nearest-afz a vector
// at a time. Each lane computes what unaryFloat's loop does through float64:
// sqrt and the roundings are exact or correctly rounded either way (an f32
// square root rounded from float64's is the correctly rounded f32 one), a
// NaN comes back quieted with its payload, a negative sqrt operand gives the
// default NaN, and signed zeros keep their sign. round-nearest-afz is
// trunc(x), moved one away from zero where |x - trunc(x)| >= 1/2 (the
// difference is exact) (TestUnaryF32VectorMatchesScalar).

// unaryF32Vector computes the whole vectors at the front of o and returns
// how many elements that was (0 when op has no vector form here).
func unaryF32Vector(op string, x, o []float32) int {
	// The op as a small integer, so each vector's switch is a compare and
	// a predicted branch, not string compares.
	const (
		opSqrt = iota
		opFloor
		opAbs
		opNegate
		opSign
		opCeil
		opRoundEven
		opRoundAway
	)
	var k int
	switch op {
	case "sqrt":
		k = opSqrt
	case "floor":
		k = opFloor
	case "abs":
		k = opAbs
	case "negate":
		k = opNegate
	case "sign":
		k = opSign
	case "ceil":
		k = opCeil
	case "round-nearest-even":
		k = opRoundEven
	case "round-nearest-afz":
		k = opRoundAway
	default:
		return 0
	}
	var n int
	switch binaryLanes {
	case 16:
		if n = len(o) &^ 15; n == 0 {
			return 0
		}
		px, po := f32Base(x, n), f32Base(o, n)
		half := archsimd.LoadUint32x16(&unaryK16[0]).AsFloat32x16()
		abs := archsimd.LoadUint32x16(&unaryK16[1])
		sign := archsimd.LoadUint32x16(&unaryK16[2])
		one := archsimd.LoadUint32x16(&unaryK16[3])
		var zero16 archsimd.Float32x16
		for off, end := 0, 4*n; off < end; off += 64 {
			v := loadFloat32x16(px, off)
			var r archsimd.Float32x16
			switch k {
			case opSqrt:
				r = v.Sqrt()
			case opFloor:
				r = v.FloorScaled(0)
			case opAbs: // the sign bit cleared (a NaN keeps its payload, as XLA's vandps does)
				r = v.AsUint32x16().And(abs).AsFloat32x16()
			case opNegate:
				r = v.AsUint32x16().Xor(sign).AsFloat32x16()
			case opSign: // ±1 with v's sign; NaN and ±0 as they are
				r = v.AsUint32x16().And(sign).Or(one).AsFloat32x16()
				r = v.Merge(r, v.IsNaN().Or(v.Equal(zero16)))
			case opCeil:
				r = v.CeilScaled(0)
			case opRoundEven:
				r = v.RoundToEvenScaled(0)
			default:
				t := v.TruncScaled(0)
				d := v.Sub(t).AsUint32x16().And(abs).AsFloat32x16()
				away := v.AsUint32x16().And(sign).Or(one).AsFloat32x16()
				r = t.Add(away).Merge(t, d.GreaterEqual(half))
			}
			storeFloat32x16(r, po, off)
		}
	case 8:
		if n = len(o) &^ 7; n == 0 {
			return 0
		}
		px, po := f32Base(x, n), f32Base(o, n)
		half := archsimd.LoadUint32x8(&unaryK8[0]).AsFloat32x8()
		abs := archsimd.LoadUint32x8(&unaryK8[1])
		sign := archsimd.LoadUint32x8(&unaryK8[2])
		one := archsimd.LoadUint32x8(&unaryK8[3])
		var zero8 archsimd.Float32x8
		for off, end := 0, 4*n; off < end; off += 32 {
			v := loadFloat32x8(px, off)
			var r archsimd.Float32x8
			switch k {
			case opSqrt:
				r = v.Sqrt()
			case opFloor:
				r = v.Floor()
			case opAbs: // the sign bit cleared (a NaN keeps its payload, as XLA's vandps does)
				r = v.AsUint32x8().And(abs).AsFloat32x8()
			case opNegate:
				r = v.AsUint32x8().Xor(sign).AsFloat32x8()
			case opSign: // ±1 with v's sign; NaN and ±0 as they are
				r = v.AsUint32x8().And(sign).Or(one).AsFloat32x8()
				r = v.Merge(r, v.IsNaN().Or(v.Equal(zero8)))
			case opCeil:
				r = v.Ceil()
			case opRoundEven:
				r = v.RoundToEven()
			default:
				t := v.Trunc()
				d := v.Sub(t).AsUint32x8().And(abs).AsFloat32x8()
				away := v.AsUint32x8().And(sign).Or(one).AsFloat32x8()
				r = t.Add(away).Merge(t, d.GreaterEqual(half))
			}
			storeFloat32x8(r, po, off)
		}
	default:
		return 0
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// The kernels' constants as splatted vectors (loaded, not broadcast from
// scalar registers: see xlamath_simd_gen.go): 0.5, the magnitude mask, the
// sign bit, the bits of 1.
var (
	unaryK16 = [...][16]uint32{splatX16(0x3f000000), splatX16(0x7fffffff), splatX16(0x80000000), splatX16(0x3f800000)}
	unaryK8  = [...][8]uint32{splatX8(0x3f000000), splatX8(0x7fffffff), splatX8(0x80000000), splatX8(0x3f800000)}
)
