//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

// f32 add, subtract, multiply and divide a vector at a time. Each lane is
// the IEEE operation the scalar loop does (the same rounding, and the same
// NaN when both operands are NaN: TestBinaryF32VectorMatchesScalar), so
// the results are bit for bit the scalar loop's.

var binaryVec16, binaryVec8 = archsimd.X86.AVX512(), archsimd.X86.AVX2()

// binaryF32Vector computes the whole vectors at the front of o and returns
// how many elements that was (0 when op has no vector form here).
func binaryF32Vector(op string, a, b, o []float32) int {
	switch op {
	case "add", "subtract", "multiply", "divide":
	default:
		return 0
	}
	n := len(o)
	a, b = a[:n], b[:n]
	if binaryVec16 {
		n &^= 15
		for i := 0; i < n; i += 16 {
			x := archsimd.LoadFloat32x16((*[16]float32)(a[i:]))
			y := archsimd.LoadFloat32x16((*[16]float32)(b[i:]))
			var r archsimd.Float32x16
			switch op {
			case "add":
				r = x.Add(y)
			case "subtract":
				r = x.Sub(y)
			case "multiply":
				r = x.Mul(y)
			default:
				r = x.Div(y)
			}
			r.Store((*[16]float32)(o[i:]))
		}
		return n
	}
	if binaryVec8 {
		n &^= 7
		for i := 0; i < n; i += 8 {
			x := archsimd.LoadFloat32x8((*[8]float32)(a[i:]))
			y := archsimd.LoadFloat32x8((*[8]float32)(b[i:]))
			var r archsimd.Float32x8
			switch op {
			case "add":
				r = x.Add(y)
			case "subtract":
				r = x.Sub(y)
			case "multiply":
				r = x.Mul(y)
			default:
				r = x.Div(y)
			}
			r.Store((*[8]float32)(o[i:]))
		}
		return n
	}
	return 0
}
