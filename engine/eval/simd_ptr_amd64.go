//go:build goexperiment.simd && amd64

package eval

import (
	"simd/archsimd"
	"unsafe"
)

// The hot vector loops address their operands by byte offset from a base
// pointer instead of slicing per vector: a (*[8]float32)(s[i:]) conversion
// costs a bounds check and a slice mask on every load and store, which
// roughly doubled the instructions of a short elementwise loop. Each loop
// takes its base pointers from f32Base / u32Base, which check once that the
// slice holds the n elements the loop touches.

// f32Base returns the address of s[0] after checking that s has at least
// n > 0 elements.
func f32Base(s []float32, n int) unsafe.Pointer { return unsafe.Pointer(&s[:n][0]) }

// u32Base is f32Base for uint32 slices.
func u32Base(s []uint32, n int) unsafe.Pointer { return unsafe.Pointer(&s[:n][0]) }

func loadFloat32x8(p unsafe.Pointer, off int) archsimd.Float32x8 {
	return archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, off)))
}

func storeFloat32x8(v archsimd.Float32x8, p unsafe.Pointer, off int) {
	v.Store((*[8]float32)(unsafe.Add(p, off)))
}

func loadFloat32x16(p unsafe.Pointer, off int) archsimd.Float32x16 {
	return archsimd.LoadFloat32x16((*[16]float32)(unsafe.Add(p, off)))
}

func storeFloat32x16(v archsimd.Float32x16, p unsafe.Pointer, off int) {
	v.Store((*[16]float32)(unsafe.Add(p, off)))
}

func loadUint32x8(p unsafe.Pointer, off int) archsimd.Uint32x8 {
	return archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(p, off)))
}

func storeUint32x8(v archsimd.Uint32x8, p unsafe.Pointer, off int) {
	v.Store((*[8]uint32)(unsafe.Add(p, off)))
}

func loadUint32x16(p unsafe.Pointer, off int) archsimd.Uint32x16 {
	return archsimd.LoadUint32x16((*[16]uint32)(unsafe.Add(p, off)))
}

func storeUint32x16(v archsimd.Uint32x16, p unsafe.Pointer, off int) {
	v.Store((*[16]uint32)(unsafe.Add(p, off)))
}

// flushSubnormal8 replaces each subnormal lane of r by the zero of its sign
// (XLA:CPU's flush-to-zero): a lane whose magnitude, read as a float, is
// below the smallest normal is a subnormal or a zero, and either way keeps
// only its sign bit. NaN magnitudes compare false and pass. mag holds
// 0x7fffffff and minNormal 0x1p-126 in every lane.
func flushSubnormal8(r archsimd.Float32x8, mag archsimd.Uint32x8, minNormal archsimd.Float32x8) archsimd.Float32x8 {
	bits := r.AsUint32x8()
	tiny := bits.And(mag).AsFloat32x8().Less(minNormal).ToInt32x8().AsUint32x8()
	return bits.AndNot(tiny.And(mag)).AsFloat32x8()
}

// flushSubnormal16 is flushSubnormal8 on 16 lanes, with a mask register
// choosing the sign-only lanes; sign holds 0x80000000 in every lane.
func flushSubnormal16(r archsimd.Float32x16, sign archsimd.Uint32x16, minNormal archsimd.Float32x16) archsimd.Float32x16 {
	bits := r.AsUint32x16()
	tiny := bits.AndNot(sign).AsFloat32x16().Less(minNormal)
	return bits.And(sign).Merge(bits, tiny).AsFloat32x16()
}
