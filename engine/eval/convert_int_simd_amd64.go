//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

// f32ToSmallIntVector is f32ToSigned/f32ToUnsigned for an integer type of
// at most 16 bits, whose range [lo, hi] f32 holds exactly: clamping to it
// and then truncating (VCVTTPS2DQ) gives the scalar loop's saturation and
// truncation, and NaN lanes are set to 0 as there. It converts the whole
// vectors at the front of f and returns how many elements that was.
func f32ToSmallIntVector[T int8 | int16 | uint8 | uint16](f []float32, o []T, lo, hi float32) int {
	var buf [16]int32
	n := 0
	if archsimd.X86.AVX512() {
		l, h := archsimd.BroadcastFloat32x16(lo), archsimd.BroadcastFloat32x16(hi)
		zero := archsimd.BroadcastInt32x16(0)
		for ; n+16 <= len(f); n += 16 {
			v := archsimd.LoadFloat32x16((*[16]float32)(f[n:]))
			i := v.Max(l).Min(h).ConvertToInt32()
			i = zero.Merge(i, v.IsNaN())
			i.Store(&buf)
			d := o[n : n+16]
			for k := range d {
				d[k] = T(buf[k])
			}
		}
	} else if archsimd.X86.AVX2() {
		l, h := archsimd.BroadcastFloat32x8(lo), archsimd.BroadcastFloat32x8(hi)
		zero := archsimd.BroadcastInt32x8(0)
		for ; n+8 <= len(f); n += 8 {
			v := archsimd.LoadFloat32x8((*[8]float32)(f[n:]))
			i := v.Max(l).Min(h).ConvertToInt32()
			i = zero.Merge(i, v.IsNaN())
			i.Store((*[8]int32)(buf[:8]))
			d := o[n : n+8]
			for k := range d {
				d[k] = T(buf[k])
			}
		}
	}
	archsimd.ClearAVXUpperBits()
	return n
}
