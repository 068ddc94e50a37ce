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
	n := len(o)
	x = x[:n]
	switch op {
	case "sqrt", "floor", "ceil", "round-nearest-even", "round-nearest-afz", "abs", "negate", "sign":
	default:
		return 0
	}
	switch binaryLanes {
	case 16:
		n &^= 15
		half := archsimd.LoadUint32x16(&unaryK16[0]).AsFloat32x16()
		abs := archsimd.LoadUint32x16(&unaryK16[1])
		sign := archsimd.LoadUint32x16(&unaryK16[2])
		one := archsimd.LoadUint32x16(&unaryK16[3])
		var zero16 archsimd.Float32x16
		for i := 0; i < n; i += 16 {
			v := archsimd.LoadFloat32x16((*[16]float32)(x[i:]))
			var r archsimd.Float32x16
			switch op {
			case "sqrt":
				r = v.Sqrt()
			case "floor":
				r = v.FloorScaled(0)
			case "abs": // the sign bit cleared (a NaN keeps its payload, as XLA's vandps does)
				r = v.AsUint32x16().And(abs).AsFloat32x16()
			case "negate":
				r = v.AsUint32x16().Xor(sign).AsFloat32x16()
			case "sign": // ±1 with v's sign; NaN and ±0 as they are
				r = v.AsUint32x16().And(sign).Or(one).AsFloat32x16()
				r = v.Merge(r, v.IsNaN().Or(v.Equal(zero16)))
			case "ceil":
				r = v.CeilScaled(0)
			case "round-nearest-even":
				r = v.RoundToEvenScaled(0)
			default:
				t := v.TruncScaled(0)
				d := v.Sub(t).AsUint32x16().And(abs).AsFloat32x16()
				away := v.AsUint32x16().And(sign).Or(one).AsFloat32x16()
				r = t.Add(away).Merge(t, d.GreaterEqual(half))
			}
			r.Store((*[16]float32)(o[i:]))
		}
	case 8:
		n &^= 7
		half := archsimd.LoadUint32x8(&unaryK8[0]).AsFloat32x8()
		abs := archsimd.LoadUint32x8(&unaryK8[1])
		sign := archsimd.LoadUint32x8(&unaryK8[2])
		one := archsimd.LoadUint32x8(&unaryK8[3])
		var zero8 archsimd.Float32x8
		for i := 0; i < n; i += 8 {
			v := archsimd.LoadFloat32x8((*[8]float32)(x[i:]))
			var r archsimd.Float32x8
			switch op {
			case "sqrt":
				r = v.Sqrt()
			case "floor":
				r = v.Floor()
			case "abs": // the sign bit cleared (a NaN keeps its payload, as XLA's vandps does)
				r = v.AsUint32x8().And(abs).AsFloat32x8()
			case "negate":
				r = v.AsUint32x8().Xor(sign).AsFloat32x8()
			case "sign": // ±1 with v's sign; NaN and ±0 as they are
				r = v.AsUint32x8().And(sign).Or(one).AsFloat32x8()
				r = v.Merge(r, v.IsNaN().Or(v.Equal(zero8)))
			case "ceil":
				r = v.Ceil()
			case "round-nearest-even":
				r = v.RoundToEven()
			default:
				t := v.Trunc()
				d := v.Sub(t).AsUint32x8().And(abs).AsFloat32x8()
				away := v.AsUint32x8().And(sign).Or(one).AsFloat32x8()
				r = t.Add(away).Merge(t, d.GreaterEqual(half))
			}
			r.Store((*[8]float32)(o[i:]))
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
