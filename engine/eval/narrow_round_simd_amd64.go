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
	if len(xs) == 0 {
		return 0
	}
	sign, abs, inf := archsimd.BroadcastInt32x16(bitsSign), archsimd.BroadcastInt32x16(bitsAbs), archsimd.BroadcastInt32x16(bitsInf)
	qnan, keep := archsimd.BroadcastInt32x16(bf16QNaN), archsimd.BroadcastInt32x16(bf16Keep)
	half, one := archsimd.BroadcastInt32x16(0x7fff), archsimd.BroadcastInt32x16(1)
	base := unsafe.Pointer(&xs[0])
	i := 0
	for ; i+16 <= len(xs); i += 16 {
		p := (*[16]int32)(unsafe.Add(base, 4*i))
		b := archsimd.LoadInt32x16(p)
		r := b.Add(half).Add(b.ShiftAllRight(16).And(one)).And(keep)
		nan := b.And(sign).Or(qnan)
		nan.Merge(r, b.And(abs).Greater(inf)).Store(p)
	}
	archsimd.ClearAVXUpperBits()
	return i
}

func roundBF16X8(xs []int32) int {
	if len(xs) == 0 {
		return 0
	}
	sign, abs, inf := archsimd.BroadcastInt32x8(bitsSign), archsimd.BroadcastInt32x8(bitsAbs), archsimd.BroadcastInt32x8(bitsInf)
	qnan, keep := archsimd.BroadcastInt32x8(bf16QNaN), archsimd.BroadcastInt32x8(bf16Keep)
	half, one := archsimd.BroadcastInt32x8(0x7fff), archsimd.BroadcastInt32x8(1)
	base := unsafe.Pointer(&xs[0])
	i := 0
	for ; i+8 <= len(xs); i += 8 {
		p := (*[8]int32)(unsafe.Add(base, 4*i))
		b := archsimd.LoadInt32x8(p)
		r := b.Add(half).Add(b.ShiftAllRight(16).And(one)).And(keep)
		nan := b.And(sign).Or(qnan)
		nan.Merge(r, b.And(abs).Greater(inf)).Store(p)
	}
	archsimd.ClearAVXUpperBits()
	return i
}

func roundF16X16(xs []int32) int {
	if len(xs) == 0 {
		return 0
	}
	sign, abs, inf := archsimd.BroadcastInt32x16(bitsSign), archsimd.BroadcastInt32x16(bitsAbs), archsimd.BroadcastInt32x16(bitsInf)
	keep, rnd, one := archsimd.BroadcastInt32x16(f16Keep), archsimd.BroadcastInt32x16(0xfff), archsimd.BroadcastInt32x16(1)
	nanBits, nanMin := archsimd.BroadcastInt32x16(f16NaNBits), archsimd.BroadcastInt32x16(f16NaNMin)
	minNorm, infAfter := archsimd.BroadcastInt32x16(f16MinNorm), archsimd.BroadcastInt32x16(f16InfAfter)
	halfF := archsimd.BroadcastFloat32x16(0.5)
	base := unsafe.Pointer(&xs[0])
	i := 0
	for ; i+16 <= len(xs); i += 16 {
		p := (*[16]int32)(unsafe.Add(base, 4*i))
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
	if len(xs) == 0 {
		return 0
	}
	sign, abs, inf := archsimd.BroadcastInt32x8(bitsSign), archsimd.BroadcastInt32x8(bitsAbs), archsimd.BroadcastInt32x8(bitsInf)
	keep, rnd, one := archsimd.BroadcastInt32x8(f16Keep), archsimd.BroadcastInt32x8(0xfff), archsimd.BroadcastInt32x8(1)
	nanBits, nanMin := archsimd.BroadcastInt32x8(f16NaNBits), archsimd.BroadcastInt32x8(f16NaNMin)
	minNorm, infAfter := archsimd.BroadcastInt32x8(f16MinNorm), archsimd.BroadcastInt32x8(f16InfAfter)
	halfF := archsimd.BroadcastFloat32x8(0.5)
	base := unsafe.Pointer(&xs[0])
	i := 0
	for ; i+8 <= len(xs); i += 8 {
		p := (*[8]int32)(unsafe.Add(base, 4*i))
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

// Constant vectors loaded from memory: archsimd's ShiftAll*(n) and scalar
// broadcasts compile to a legacy-SSE MOVQ, which inside a loop pays the
// dirty-upper-bits penalty every iteration (docs/design.md 14a).
var (
	vec16s     = splat8(16)
	vec13s     = splat8(13)
	packOrder  = [8]int32{0, 1, 4, 5, 2, 3, 6, 7} // undoes VPACKUSDW's 128-bit grouping
	vecH8000   = splat8(0x8000)
	vecH7fff   = splat8(0x7fff)
	vecH7bff   = splat8(0x7bff) // above: f16 Inf or NaN
	vecH0400   = splat8(0x400)  // below: f16 zero or subnormal
	vecRebias  = splat8(112 << 23)
	vecInfBias = splat8(224 << 23)
	vecMagic   = splat8(113 << 23) // 2^-14
	vecAbs32   = splat8(bitsAbs)
	vecInf32m1 = splat8(bitsInf - 1) // above: f32 Inf or NaN
	vecNorm1   = splat8(f16MinNorm - 1)
	vecInf32   = splat8(bitsInf)
	vecH7c00   = splat8(0x7c00)
)

func splat8(v int32) (a [8]int32) {
	for i := range a {
		a[i] = v
	}
	return a
}

// widenBF16Vector sets dst[i] to the f32 bits of bf16 src[i] (src[i]<<16)
// for the whole vectors of dst; it returns how many it did.
func widenBF16Vector(src []uint16, dst []uint32) int {
	if subnormalLanes < 8 {
		return 0
	}
	if len(dst) == 0 {
		return 0
	}
	src = src[:len(dst)]
	ps, pd := unsafe.Pointer(&src[0]), unsafe.Pointer(&dst[0])
	c := archsimd.LoadInt32x8(&vec16s).AsUint32x8()
	i := 0
	for ; i+8 <= len(dst); i += 8 {
		archsimd.LoadUint16x8((*[8]uint16)(unsafe.Add(ps, 2*i))).ExtendToUint32().ShiftLeft(c).Store((*[8]uint32)(unsafe.Add(pd, 4*i)))
	}
	archsimd.ClearAVXUpperBits()
	return i
}

// widenF16Vector sets dst[i] to the f32 bits of f16 src[i] (dtype's
// f16ToF32: NaN payloads kept, subnormals exact) for the whole vectors of
// dst; it returns how many it did.
func widenF16Vector(src []uint16, dst []uint32) int {
	if subnormalLanes < 8 {
		return 0
	}
	src = src[:len(dst)]
	c13, c16 := archsimd.LoadInt32x8(&vec13s), archsimd.LoadInt32x8(&vec16s)
	signM, absM := archsimd.LoadInt32x8(&vecH8000), archsimd.LoadInt32x8(&vecH7fff)
	infM1, norm := archsimd.LoadInt32x8(&vecH7bff), archsimd.LoadInt32x8(&vecH0400)
	rebias, infBias, magic := archsimd.LoadInt32x8(&vecRebias), archsimd.LoadInt32x8(&vecInfBias), archsimd.LoadInt32x8(&vecMagic)
	magicF := magic.AsFloat32x8()
	i := 0
	for ; i+8 <= len(dst); i += 8 {
		h := archsimd.LoadUint16x8((*[8]uint16)(src[i:])).ExtendToUint32().AsInt32x8()
		em := h.And(absM)
		sh := em.ShiftLeft(c13)
		r := sh.Add(infBias).Merge(sh.Add(rebias), em.Greater(infM1))
		// m * 2^-24 as (2^-14 + m * 2^-24) - 2^-14, both steps exact.
		sub := sh.Or(magic).AsFloat32x8().Sub(magicF).AsInt32x8()
		r = sub.Merge(r, norm.Greater(em))
		r.Or(h.And(signM).ShiftLeft(c16)).Store((*[8]int32)(unsafe.Pointer(&dst[i])))
	}
	archsimd.ClearAVXUpperBits()
	return i
}

// narrowBF16Vector sets dst[i] to the top half of src[i] for the whole
// 16-element pieces of src (two 8-lane vectors shifted, packed with
// VPACKUSDW and put back in order); it returns how many it did.
func narrowBF16Vector(src []uint32, dst []uint16) int {
	if subnormalLanes < 8 || !narrowBF16VectorOn {
		return 0
	}
	dst = dst[:len(src)]
	c := archsimd.LoadInt32x8(&vec16s).AsUint32x8()
	perm := archsimd.LoadInt32x8(&packOrder).AsUint32x8()
	i := 0
	for ; i+16 <= len(src); i += 16 {
		a := archsimd.LoadUint32x8((*[8]uint32)(src[i:])).ShiftRight(c).AsInt32x8()
		b := archsimd.LoadUint32x8((*[8]uint32)(src[i+8:])).ShiftRight(c).AsInt32x8()
		a.SaturateToUint16ConcatGrouped(b).AsUint32x8().Permute(perm).AsUint16x16().Store((*[16]uint16)(dst[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return i
}

// narrowF16Vector sets dst[i] to f32 src[i] converted to f16 (dtype's
// f32ToF16: nearest even, NaN payload's top ten bits, one when they are
// zero) for the whole 16-element pieces of src; it returns how many it did.
// Each value is rounded as roundF16One does and its f16 bits then read off
// exactly.
func narrowF16Vector(src []uint32, dst []uint16) int {
	if subnormalLanes == 16 {
		return narrowF16X16(src, dst)
	}
	if subnormalLanes < 8 {
		return 0
	}
	dst = dst[:len(src)]
	var k f16Consts
	k.load()
	c16, c13 := archsimd.LoadInt32x8(&vec16s), archsimd.LoadInt32x8(&vec13s)
	perm := archsimd.LoadInt32x8(&packOrder).AsUint32x8()
	signM, abs32, inf32m1, norm1 := archsimd.LoadInt32x8(&vecH8000), archsimd.LoadInt32x8(&vecAbs32), archsimd.LoadInt32x8(&vecInf32m1), archsimd.LoadInt32x8(&vecNorm1)
	rebias, magic, h7c00 := archsimd.LoadInt32x8(&vecRebias), archsimd.LoadInt32x8(&vecMagic), archsimd.LoadInt32x8(&vecH7c00)
	magicF, inf32 := magic.AsFloat32x8(), archsimd.LoadInt32x8(&vecInf32)
	// Each half of 16 encoded into tmp, then the two packed: one copy of
	// the encoding in the loop (a closure for it was a call per vector).
	var tmp [16]int32
	i := 0
	for ; i+16 <= len(src); i += 16 {
		for h := 0; h < 16; h += 8 {
			r := k.round(archsimd.LoadInt32x8((*[8]int32)(unsafe.Pointer(&src[i+h])))) // an f16 value's f32 bits
			a := r.And(abs32)
			e := a.Sub(rebias).ShiftRight(c13)                                      // normal
			e = h7c00.Or(a.Sub(inf32).ShiftRight(c13)).Merge(e, a.Greater(inf32m1)) // Inf, NaN
			sub := a.AsFloat32x8().Add(magicF).AsInt32x8().Sub(magic).ShiftRight(c13)
			e = sub.Merge(e, norm1.Greater(a).Or(norm1.Equal(a)))
			e.Or(r.ShiftRight(c16).And(signM)).Store((*[8]int32)(tmp[h:]))
		}
		lo, hi := archsimd.LoadInt32x8((*[8]int32)(tmp[:8])), archsimd.LoadInt32x8((*[8]int32)(tmp[8:]))
		lo.SaturateToUint16ConcatGrouped(hi).AsUint32x8().Permute(perm).AsUint16x16().Store((*[16]uint16)(dst[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return i
}

// f16Consts are roundF16X8's constants, loaded from memory.
type f16Consts struct {
	sign, abs, inf, keep, rnd, one, nanBits, nanMin, minNorm, infAfter archsimd.Int32x8
	half                                                               archsimd.Float32x8
}

var (
	vecSign32   = splat8(bitsSign)
	vecF16Keep  = splat8(f16Keep)
	vecFFF      = splat8(0xfff)
	vecOne      = splat8(1)
	vecNaNBits  = splat8(f16NaNBits)
	vecNaNMin   = splat8(f16NaNMin)
	vecMinNorm  = splat8(f16MinNorm)
	vecInfAfter = splat8(f16InfAfter)
	vecHalfF    = [8]float32{0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5}
)

func (k *f16Consts) load() {
	k.sign, k.abs, k.inf = archsimd.LoadInt32x8(&vecSign32), archsimd.LoadInt32x8(&vecAbs32), archsimd.LoadInt32x8(&vecInf32)
	k.keep, k.rnd, k.one = archsimd.LoadInt32x8(&vecF16Keep), archsimd.LoadInt32x8(&vecFFF), archsimd.LoadInt32x8(&vecOne)
	k.nanBits, k.nanMin = archsimd.LoadInt32x8(&vecNaNBits), archsimd.LoadInt32x8(&vecNaNMin)
	k.minNorm, k.infAfter = archsimd.LoadInt32x8(&vecMinNorm), archsimd.LoadInt32x8(&vecInfAfter)
	k.half = archsimd.LoadFloat32x8(&vecHalfF)
}

// round is roundF16One on each lane of b (roundF16X8's steps).
func (k *f16Consts) round(b archsimd.Int32x8) archsimd.Int32x8 {
	c13 := archsimd.LoadInt32x8(&vec13s)
	a := b.And(k.abs)
	r := a.Add(k.rnd).Add(a.ShiftRight(c13).And(k.one)).And(k.keep)
	sub := a.AsFloat32x8().Add(k.half).Sub(k.half).AsInt32x8()
	r = sub.Merge(r, k.minNorm.Greater(a))
	r = k.inf.Merge(r, a.Greater(k.infAfter))
	r = k.inf.Or(a.And(k.nanBits).Max(k.nanMin)).Merge(r, a.Greater(k.inf))
	return r.Or(b.And(k.sign))
}

// narrowBF16VectorOn: the vector narrowing (on). It was off while the
// loop's shift count went through a legacy-SSE MOVQ (37% of softmax's time
// to golden); kept switchable for the tests.
var narrowBF16VectorOn = true

var (
	vecLow29  = [4]int64{1<<29 - 1, 1<<29 - 1, 1<<29 - 1, 1<<29 - 1}
	vecHigh29 = [4]int64{^(1<<29 - 1), ^(1<<29 - 1), ^(1<<29 - 1), ^(1<<29 - 1)}
	vecBit29  = [4]int64{1 << 29, 1 << 29, 1 << 29, 1 << 29}
)

// fmaF16Vector is fmaF16Block's arithmetic on the whole 8-lane vectors of
// o: each f16 operand (held exactly as f32) widened to f64, one f64 FMA,
// rounded to f32 to odd by its bits (the 29 bits f32 drops cleared, the
// lowest kept one set, when any was set: the truncation toward zero with
// the sticky bit fmaF16Block gets by comparing float32(r) with r; every
// such r is an f32 normal, zero or infinity), then roundF16One's rounding.
// It stops at the first vector with a NaN operand or result, for the
// caller's scalar loop, and returns how many elements it did.
func fmaF16Vector(a, b, c, o []float32) int {
	if subnormalLanes == 16 {
		return fmaF16X16(a, b, c, o)
	}
	if subnormalLanes < 8 {
		return 0
	}
	a, b, c = a[:len(o)], b[:len(o)], c[:len(o)]
	var k f16Consts
	k.load()
	low, high, bit := archsimd.LoadInt64x4(&vecLow29), archsimd.LoadInt64x4(&vecHigh29), archsimd.LoadInt64x4(&vecBit29)
	var zero archsimd.Int64x4
	odd := func(x, y, z archsimd.Float32x4) archsimd.Float32x4 {
		r := x.ConvertToFloat64().MulAdd(y.ConvertToFloat64(), z.ConvertToFloat64()).AsInt64x4()
		t := r.Merge(r.And(high).Or(bit), r.And(low).Equal(zero))
		return t.AsFloat64x4().ConvertToFloat32()
	}
	i := 0
	for ; i+8 <= len(o); i += 8 {
		x := archsimd.LoadFloat32x8((*[8]float32)(a[i:]))
		y := archsimd.LoadFloat32x8((*[8]float32)(b[i:]))
		z := archsimd.LoadFloat32x8((*[8]float32)(c[i:]))
		r := x.SetLo(odd(x.GetLo(), y.GetLo(), z.GetLo())).SetHi(odd(x.GetHi(), y.GetHi(), z.GetHi()))
		if x.NotEqual(x).Or(y.NotEqual(y)).Or(z.NotEqual(z)).Or(r.NotEqual(r)).ToBits() != 0 {
			break
		}
		k.round(r.AsInt32x8()).AsFloat32x8().Store((*[8]float32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return i
}

// fmaF16X16 is fmaF16Vector 16 lanes at a time (AVX-512: two f64x8 FMAs,
// then roundF16X16's rounding).
func fmaF16X16(a, b, c, o []float32) int {
	a, b, c = a[:len(o)], b[:len(o)], c[:len(o)]
	sign, abs, inf := archsimd.BroadcastInt32x16(bitsSign), archsimd.BroadcastInt32x16(bitsAbs), archsimd.BroadcastInt32x16(bitsInf)
	keep, rnd, one := archsimd.BroadcastInt32x16(f16Keep), archsimd.BroadcastInt32x16(0xfff), archsimd.BroadcastInt32x16(1)
	nanBits, nanMin := archsimd.BroadcastInt32x16(f16NaNBits), archsimd.BroadcastInt32x16(f16NaNMin)
	minNorm, infAfter := archsimd.BroadcastInt32x16(f16MinNorm), archsimd.BroadcastInt32x16(f16InfAfter)
	halfF := archsimd.BroadcastFloat32x16(0.5)
	low, high, bit := archsimd.BroadcastInt64x8(1<<29-1), archsimd.BroadcastInt64x8(^(1<<29 - 1)), archsimd.BroadcastInt64x8(1<<29)
	var zero archsimd.Int64x8
	odd := func(x, y, z archsimd.Float32x8) archsimd.Float32x8 {
		r := x.ConvertToFloat64().MulAdd(y.ConvertToFloat64(), z.ConvertToFloat64()).AsInt64x8()
		t := r.Merge(r.And(high).Or(bit), r.And(low).Equal(zero))
		return t.AsFloat64x8().ConvertToFloat32()
	}
	i := 0
	for ; i+16 <= len(o); i += 16 {
		x := archsimd.LoadFloat32x16((*[16]float32)(a[i:]))
		y := archsimd.LoadFloat32x16((*[16]float32)(b[i:]))
		z := archsimd.LoadFloat32x16((*[16]float32)(c[i:]))
		f := x.SetLo(odd(x.GetLo(), y.GetLo(), z.GetLo())).SetHi(odd(x.GetHi(), y.GetHi(), z.GetHi()))
		if x.NotEqual(x).Or(y.NotEqual(y)).Or(z.NotEqual(z)).Or(f.NotEqual(f)).ToBits() != 0 {
			break
		}
		bb := f.AsInt32x16()
		ab := bb.And(abs)
		r := ab.Add(rnd).Add(ab.ShiftAllRight(13).And(one)).And(keep)
		sub := ab.AsFloat32x16().Add(halfF).Sub(halfF).AsInt32x16()
		r = sub.Merge(r, minNorm.Greater(ab))
		r = inf.Merge(r, ab.Greater(infAfter))
		r = inf.Or(ab.And(nanBits).Max(nanMin)).Merge(r, ab.Greater(inf))
		r.Or(bb.And(sign)).AsFloat32x16().Store((*[16]float32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return i
}

// narrowF16X16 is narrowF16Vector 16 lanes at a time (AVX-512: roundF16X16's
// rounding, the same encoding, VPMOVDW).
func narrowF16X16(src []uint32, dst []uint16) int {
	dst = dst[:len(src)]
	abs, inf := archsimd.BroadcastInt32x16(bitsAbs), archsimd.BroadcastInt32x16(bitsInf)
	keep, rnd, one := archsimd.BroadcastInt32x16(f16Keep), archsimd.BroadcastInt32x16(0xfff), archsimd.BroadcastInt32x16(1)
	nanBits, nanMin := archsimd.BroadcastInt32x16(f16NaNBits), archsimd.BroadcastInt32x16(f16NaNMin)
	minNorm, infAfter := archsimd.BroadcastInt32x16(f16MinNorm), archsimd.BroadcastInt32x16(f16InfAfter)
	halfF := archsimd.BroadcastFloat32x16(0.5)
	rebias, magic, h7c00 := archsimd.BroadcastInt32x16(112<<23), archsimd.BroadcastInt32x16(113<<23), archsimd.BroadcastInt32x16(0x7c00<<13)
	signM := archsimd.BroadcastInt32x16(0x8000)
	magicF := magic.AsFloat32x16()
	i := 0
	for ; i+16 <= len(src); i += 16 {
		b := archsimd.LoadInt32x16((*[16]int32)(unsafe.Pointer(&src[i])))
		a := b.And(abs)
		r := a.Add(rnd).Add(a.ShiftAllRight(13).And(one)).And(keep)
		sub := a.AsFloat32x16().Add(halfF).Sub(halfF).AsInt32x16()
		r = sub.Merge(r, minNorm.Greater(a))
		r = inf.Merge(r, a.Greater(infAfter))
		r = inf.Or(a.And(nanBits).Max(nanMin)).Merge(r, a.Greater(inf)) // |rounded|, an f16 value's f32 bits
		// The f16 bits, shifted up by 13: normal, Inf or NaN, subnormal.
		e := r.Sub(rebias)
		e = h7c00.Or(r.Sub(inf)).Merge(e, r.Greater(inf.Sub(one)))
		e = r.AsFloat32x16().Add(magicF).AsInt32x16().Sub(magic).Merge(e, minNorm.Greater(r))
		e.ShiftAllRight(13).Or(b.ShiftAllRight(16).And(signM)).AsUint32x16().TruncateToUint16().Store((*[16]uint16)(dst[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return i
}
