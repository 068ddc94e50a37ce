//go:build goexperiment.simd && amd64

package eval

import (
	"math"
	"simd/archsimd"
	"unsafe"
)

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

// f32ToInt32Vector is f32ToSigned for int32 on the whole vectors at the
// front of f (returning how many elements that was): VCVTTPS2DQ truncates
// every value in range and gives 0x80000000 for NaN and for values out of
// range either way, which is already the saturation below; lanes at or above
// 2^31 are set to 0x7fffffff and NaN lanes to 0, as the scalar loop does.
func f32ToInt32Vector(f []float32, o []int32) int {
	n := 0
	if len(f) == 0 {
		return 0
	}
	o = o[:len(f)]
	pf := f32Base(f, len(f))
	po := u32Base(unsafe.Slice((*uint32)(unsafe.Pointer(&o[0])), len(o)), len(o))
	if archsimd.X86.AVX512() {
		lim := archsimd.BroadcastFloat32x16(0x1p31)
		top, zero := archsimd.BroadcastInt32x16(math.MaxInt32), archsimd.BroadcastInt32x16(0)
		for ; n+16 <= len(f); n += 16 {
			v := loadFloat32x16(pf, 4*n)
			i := top.Merge(v.ConvertToInt32(), v.GreaterEqual(lim))
			storeUint32x16(zero.Merge(i, v.IsNaN()).AsUint32x16(), po, 4*n)
		}
	} else if archsimd.X86.AVX2() {
		lim := archsimd.BroadcastFloat32x8(0x1p31)
		top, zero := archsimd.BroadcastInt32x8(math.MaxInt32), archsimd.BroadcastInt32x8(0)
		for ; n+8 <= len(f); n += 8 {
			v := loadFloat32x8(pf, 4*n)
			i := top.Merge(v.ConvertToInt32(), v.GreaterEqual(lim))
			storeUint32x8(zero.Merge(i, v.IsNaN()).AsUint32x8(), po, 4*n)
		}
	}
	archsimd.ClearAVXUpperBits()
	return n
}
