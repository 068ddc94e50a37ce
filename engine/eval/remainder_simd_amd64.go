//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

// remainderVecF32 runs remainderRawF32 eight elements at a time: a group
// whose lanes all take the inline case (finite a, normal finite b, exponents
// at most 23 apart) is computed in float64 lanes, the same exact operations
// (convert, divide, truncate, multiply, subtract, convert back, a's sign);
// any other group goes element by element. It returns how many leading
// elements it set (a multiple of 8).
func remainderVecF32(a, b, o []float32) int {
	n := min(len(a), len(b), len(o)) &^ 7
	if n == 0 || !archsimd.X86.AVX2() {
		return 0
	}
	pa, pb, po := f32Base(a, n), f32Base(b, n), f32Base(o, n)
	abs := archsimd.BroadcastUint32x8(0x7fffffff)
	sign := archsimd.BroadcastUint32x8(0x80000000)
	maxSub := archsimd.BroadcastInt32x8(0x007fffff)
	inf := archsimd.BroadcastInt32x8(0x7f800000)
	span := archsimd.BroadcastInt32x8(24)
	for i := 0; i < n; i += 8 {
		ua, ub := loadUint32x8(pa, 4*i), loadUint32x8(pb, 4*i)
		ax, ay := ua.And(abs), ub.And(abs)
		bx, by := ax.AsInt32x8(), ay.AsInt32x8()
		ok := by.Greater(maxSub).And(inf.Greater(by)).And(inf.Greater(bx)).
			And(ay.ShiftAllRight(23).AsInt32x8().Add(span).Greater(ax.ShiftAllRight(23).AsInt32x8()))
		if ok.ToBits() != 0xff {
			archsimd.ClearAVXUpperBits()
			remainderRawF32Scalar(a[i:i+8], b[i:i+8], o[i:i+8])
			continue
		}
		x, y := ax.AsFloat32x8(), ay.AsFloat32x8()
		xl, yl := x.GetLo().ConvertToFloat64(), y.GetLo().ConvertToFloat64()
		xh, yh := x.GetHi().ConvertToFloat64(), y.GetHi().ConvertToFloat64()
		rl := xl.Sub(xl.Div(yl).Trunc().Mul(yl)).ConvertToFloat32()
		rh := xh.Sub(xh.Div(yh).Trunc().Mul(yh)).ConvertToFloat32()
		r := x.SetLo(rl).SetHi(rh).AsUint32x8().Or(ua.And(sign))
		storeUint32x8(r, po, 4*i)
	}
	archsimd.ClearAVXUpperBits()
	return n
}
