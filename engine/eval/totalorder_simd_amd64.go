//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

// totalOrderKeysVector is totalOrderKeysInto's loop over whole vectors at
// the front of xs (16 lanes with AVX-512, 8 with AVX2), branch-free: the
// key is the bits, xor 0x7fffffff where the sign is set (the arithmetic
// shift's all-ones, shifted right once). It returns how many it did.
func totalOrderKeysVector(xs []float32, o []int32) int {
	o = o[:len(xs)]
	switch binaryLanes {
	case 16:
		n := len(xs) &^ 15
		if n == 0 {
			return 0
		}
		px, po := f32Base(xs, n), u32Base(int32Bits(o), n)
		for off, end := 0, 4*n; off < end; off += 64 {
			v := loadUint32x16(px, off).AsInt32x16()
			m := v.ShiftAllRight(31).AsUint32x16().ShiftAllRight(1).AsInt32x16()
			storeUint32x16(v.Xor(m).AsUint32x16(), po, off)
		}
		archsimd.ClearAVXUpperBits()
		return n
	case 8:
		n := len(xs) &^ 7
		if n == 0 {
			return 0
		}
		px, po := f32Base(xs, n), u32Base(int32Bits(o), n)
		for off, end := 0, 4*n; off < end; off += 32 {
			v := loadUint32x8(px, off).AsInt32x8()
			m := v.ShiftAllRight(31).AsUint32x8().ShiftAllRight(1).AsInt32x8()
			storeUint32x8(v.Xor(m).AsUint32x8(), po, off)
		}
		archsimd.ClearAVXUpperBits()
		return n
	}
	return 0
}
