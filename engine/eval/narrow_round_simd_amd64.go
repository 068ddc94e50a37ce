//go:build goexperiment.simd && amd64

package eval

import (
	"simd/archsimd"
	"unsafe"
)

// roundBF16Vector is roundBF16One on the whole vectors of xs (16 lanes with
// AVX-512, 8 with AVX2, subnormalLanes' choice); it returns how many it did.
func roundBF16Vector(xs []uint32) int {
	switch subnormalLanes {
	case 16:
		return roundBF16X16(asInt32s(xs))
	case 8:
		return roundBF16X8(asInt32s(xs))
	}
	return 0
}

// roundF16Vector is roundF16One on the whole vectors of xs.
func roundF16Vector(xs []uint32) int {
	switch subnormalLanes {
	case 16:
		return roundF16X16(asInt32s(xs))
	case 8:
		return roundF16X8(asInt32s(xs))
	}
	return 0
}

func asInt32s(xs []uint32) []int32 {
	if len(xs) == 0 {
		return nil
	}
	return unsafe.Slice((*int32)(unsafe.Pointer(&xs[0])), len(xs))
}

// The magnitudes compared are below 2^31, so signed compares order them.
const (
	bitsSign    = -0x80000000
	bitsAbs     = 0x7fffffff
	bitsInf     = 0x7f800000
	bf16QNaN    = 0x7fc00000
	bf16Keep    = -0x10000 // 0xffff0000
	f16Keep     = -0x2000  // 0xffffe000
	f16NaNBits  = 0x7fe000
	f16NaNMin   = 0x2000
	f16MinNorm  = 0x38800000
	f16InfAfter = 0x477fefff // every magnitude above rounds to Inf
)

func roundBF16X16(xs []int32) int {
	sign, abs, inf := archsimd.BroadcastInt32x16(bitsSign), archsimd.BroadcastInt32x16(bitsAbs), archsimd.BroadcastInt32x16(bitsInf)
	qnan, keep := archsimd.BroadcastInt32x16(bf16QNaN), archsimd.BroadcastInt32x16(bf16Keep)
	half, one := archsimd.BroadcastInt32x16(0x7fff), archsimd.BroadcastInt32x16(1)
	i := 0
	for ; i+16 <= len(xs); i += 16 {
		p := (*[16]int32)(xs[i:])
		b := archsimd.LoadInt32x16(p)
		r := b.Add(half).Add(b.ShiftAllRight(16).And(one)).And(keep)
		nan := b.And(sign).Or(qnan)
		nan.Merge(r, b.And(abs).Greater(inf)).Store(p)
	}
	archsimd.ClearAVXUpperBits()
	return i
}

func roundBF16X8(xs []int32) int {
	sign, abs, inf := archsimd.BroadcastInt32x8(bitsSign), archsimd.BroadcastInt32x8(bitsAbs), archsimd.BroadcastInt32x8(bitsInf)
	qnan, keep := archsimd.BroadcastInt32x8(bf16QNaN), archsimd.BroadcastInt32x8(bf16Keep)
	half, one := archsimd.BroadcastInt32x8(0x7fff), archsimd.BroadcastInt32x8(1)
	i := 0
	for ; i+8 <= len(xs); i += 8 {
		p := (*[8]int32)(xs[i:])
		b := archsimd.LoadInt32x8(p)
		r := b.Add(half).Add(b.ShiftAllRight(16).And(one)).And(keep)
		nan := b.And(sign).Or(qnan)
		nan.Merge(r, b.And(abs).Greater(inf)).Store(p)
	}
	archsimd.ClearAVXUpperBits()
	return i
}

func roundF16X16(xs []int32) int {
	sign, abs, inf := archsimd.BroadcastInt32x16(bitsSign), archsimd.BroadcastInt32x16(bitsAbs), archsimd.BroadcastInt32x16(bitsInf)
	keep, rnd, one := archsimd.BroadcastInt32x16(f16Keep), archsimd.BroadcastInt32x16(0xfff), archsimd.BroadcastInt32x16(1)
	nanBits, nanMin := archsimd.BroadcastInt32x16(f16NaNBits), archsimd.BroadcastInt32x16(f16NaNMin)
	minNorm, infAfter := archsimd.BroadcastInt32x16(f16MinNorm), archsimd.BroadcastInt32x16(f16InfAfter)
	halfF := archsimd.BroadcastFloat32x16(0.5)
	i := 0
	for ; i+16 <= len(xs); i += 16 {
		p := (*[16]int32)(xs[i:])
		b := archsimd.LoadInt32x16(p)
		a := b.And(abs)
		r := a.Add(rnd).Add(a.ShiftAllRight(13).And(one)).And(keep)
		sub := a.AsFloat32x16().Add(halfF).Sub(halfF).AsInt32x16()
		r = sub.Merge(r, minNorm.Greater(a))
		r = inf.Merge(r, a.Greater(infAfter))
		r = inf.Or(a.And(nanBits).Max(nanMin)).Merge(r, a.Greater(inf))
		r.Or(b.And(sign)).Store(p)
	}
	archsimd.ClearAVXUpperBits()
	return i
}

func roundF16X8(xs []int32) int {
	sign, abs, inf := archsimd.BroadcastInt32x8(bitsSign), archsimd.BroadcastInt32x8(bitsAbs), archsimd.BroadcastInt32x8(bitsInf)
	keep, rnd, one := archsimd.BroadcastInt32x8(f16Keep), archsimd.BroadcastInt32x8(0xfff), archsimd.BroadcastInt32x8(1)
	nanBits, nanMin := archsimd.BroadcastInt32x8(f16NaNBits), archsimd.BroadcastInt32x8(f16NaNMin)
	minNorm, infAfter := archsimd.BroadcastInt32x8(f16MinNorm), archsimd.BroadcastInt32x8(f16InfAfter)
	halfF := archsimd.BroadcastFloat32x8(0.5)
	i := 0
	for ; i+8 <= len(xs); i += 8 {
		p := (*[8]int32)(xs[i:])
		b := archsimd.LoadInt32x8(p)
		a := b.And(abs)
		r := a.Add(rnd).Add(a.ShiftAllRight(13).And(one)).And(keep)
		sub := a.AsFloat32x8().Add(halfF).Sub(halfF).AsInt32x8()
		r = sub.Merge(r, minNorm.Greater(a))
		r = inf.Merge(r, a.Greater(infAfter))
		r = inf.Or(a.And(nanBits).Max(nanMin)).Merge(r, a.Greater(inf))
		r.Or(b.And(sign)).Store(p)
	}
	archsimd.ClearAVXUpperBits()
	return i
}

// widenBF16Vector sets dst[i] to the f32 bits of bf16 src[i] (src[i]<<16)
// for the whole vectors of dst; it returns how many it did.
func widenBF16Vector(src []uint16, dst []uint32) int {
	src = src[:len(dst)]
	i := 0
	switch subnormalLanes {
	case 16:
		for ; i+16 <= len(dst); i += 16 {
			archsimd.LoadUint16x16((*[16]uint16)(src[i:])).ExtendToUint32().ShiftAllLeft(16).Store((*[16]uint32)(dst[i:]))
		}
	case 8:
		for ; i+8 <= len(dst); i += 8 {
			archsimd.LoadUint16x8((*[8]uint16)(src[i:])).ExtendToUint32().ShiftAllLeft(16).Store((*[8]uint32)(dst[i:]))
		}
	default:
		return 0
	}
	archsimd.ClearAVXUpperBits()
	return i
}

// narrowBF16Vector sets dst[i] to the top half of src[i] for the whole
// vectors of src (AVX-512 only: AVX2 has no 32-to-16-bit narrowing); it
// returns how many it did.
func narrowBF16Vector(src []uint32, dst []uint16) int {
	if subnormalLanes != 16 || !narrowBF16VectorOn {
		return 0
	}
	dst = dst[:len(src)]
	i := 0
	for ; i+16 <= len(src); i += 16 {
		archsimd.LoadUint32x16((*[16]uint32)(src[i:])).ShiftAllRight(16).TruncateToUint16().Store((*[16]uint16)(dst[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return i
}

// narrowBF16VectorOn: off, the scalar loop measured faster in the softmax
// module (VPMOVDW showed 37% of the time to golden, twice the AVX2 build's);
// kept for the tests and for a later look.
var narrowBF16VectorOn = false
