//go:build goexperiment.simd && amd64

package eval

import (
	"simd/archsimd"
	"unsafe"
)

// microF32x16B is the Float32x16 4×32 micro-kernel reading B in place: row i
// of the kc×32 block at b[i*ldb:]. Same FMA chains as the packed kernel.
func microF32x16B(kc int, a, b []float32, ldb int, c []float32, ldc int) {
	if kc <= 0 {
		return
	}
	_, _ = a[kc*4-1], b[(kc-1)*ldb+32-1]
	pa, pb := unsafe.Pointer(unsafe.SliceData(a)), unsafe.Pointer(unsafe.SliceData(b))
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x16
	for i := 0; i < kc; i++ {
		ai, bi := unsafe.Add(pa, i*16), unsafe.Add(pb, i*ldb*4)
		b0 := archsimd.LoadFloat32x16((*[16]float32)(unsafe.Add(bi, 0)))
		b1 := archsimd.LoadFloat32x16((*[16]float32)(unsafe.Add(bi, 64)))
		a0 := archsimd.BroadcastFloat32x16(*(*float32)(unsafe.Add(ai, 0)))
		c00 = a0.MulAdd(b0, c00)
		c01 = a0.MulAdd(b1, c01)
		a1 := archsimd.BroadcastFloat32x16(*(*float32)(unsafe.Add(ai, 4)))
		c10 = a1.MulAdd(b0, c10)
		c11 = a1.MulAdd(b1, c11)
		a2 := archsimd.BroadcastFloat32x16(*(*float32)(unsafe.Add(ai, 8)))
		c20 = a2.MulAdd(b0, c20)
		c21 = a2.MulAdd(b1, c21)
		a3 := archsimd.BroadcastFloat32x16(*(*float32)(unsafe.Add(ai, 12)))
		c30 = a3.MulAdd(b0, c30)
		c31 = a3.MulAdd(b1, c31)
	}
	r0 := c[0*ldc : 0*ldc+32]
	archsimd.LoadFloat32x16((*[16]float32)(r0[0:])).Add(c00).Store((*[16]float32)(r0[0:]))
	archsimd.LoadFloat32x16((*[16]float32)(r0[16:])).Add(c01).Store((*[16]float32)(r0[16:]))
	r1 := c[1*ldc : 1*ldc+32]
	archsimd.LoadFloat32x16((*[16]float32)(r1[0:])).Add(c10).Store((*[16]float32)(r1[0:]))
	archsimd.LoadFloat32x16((*[16]float32)(r1[16:])).Add(c11).Store((*[16]float32)(r1[16:]))
	r2 := c[2*ldc : 2*ldc+32]
	archsimd.LoadFloat32x16((*[16]float32)(r2[0:])).Add(c20).Store((*[16]float32)(r2[0:]))
	archsimd.LoadFloat32x16((*[16]float32)(r2[16:])).Add(c21).Store((*[16]float32)(r2[16:]))
	r3 := c[3*ldc : 3*ldc+32]
	archsimd.LoadFloat32x16((*[16]float32)(r3[0:])).Add(c30).Store((*[16]float32)(r3[0:]))
	archsimd.LoadFloat32x16((*[16]float32)(r3[16:])).Add(c31).Store((*[16]float32)(r3[16:]))
}

// microF32x8B is the Float32x8 4×16 micro-kernel reading B in place: row i
// of the kc×16 block at b[i*ldb:]. Same FMA chains as the packed kernel.
func microF32x8B(kc int, a, b []float32, ldb int, c []float32, ldc int) {
	if kc <= 0 {
		return
	}
	_, _ = a[kc*4-1], b[(kc-1)*ldb+16-1]
	pa, pb := unsafe.Pointer(unsafe.SliceData(a)), unsafe.Pointer(unsafe.SliceData(b))
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x8
	for i := 0; i < kc; i++ {
		ai, bi := unsafe.Add(pa, i*16), unsafe.Add(pb, i*ldb*4)
		b0 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(bi, 0)))
		b1 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(bi, 32)))
		a0 := archsimd.BroadcastFloat32x8(*(*float32)(unsafe.Add(ai, 0)))
		c00 = a0.MulAdd(b0, c00)
		c01 = a0.MulAdd(b1, c01)
		a1 := archsimd.BroadcastFloat32x8(*(*float32)(unsafe.Add(ai, 4)))
		c10 = a1.MulAdd(b0, c10)
		c11 = a1.MulAdd(b1, c11)
		a2 := archsimd.BroadcastFloat32x8(*(*float32)(unsafe.Add(ai, 8)))
		c20 = a2.MulAdd(b0, c20)
		c21 = a2.MulAdd(b1, c21)
		a3 := archsimd.BroadcastFloat32x8(*(*float32)(unsafe.Add(ai, 12)))
		c30 = a3.MulAdd(b0, c30)
		c31 = a3.MulAdd(b1, c31)
	}
	r0 := c[0*ldc : 0*ldc+16]
	archsimd.LoadFloat32x8((*[8]float32)(r0[0:])).Add(c00).Store((*[8]float32)(r0[0:]))
	archsimd.LoadFloat32x8((*[8]float32)(r0[8:])).Add(c01).Store((*[8]float32)(r0[8:]))
	r1 := c[1*ldc : 1*ldc+16]
	archsimd.LoadFloat32x8((*[8]float32)(r1[0:])).Add(c10).Store((*[8]float32)(r1[0:]))
	archsimd.LoadFloat32x8((*[8]float32)(r1[8:])).Add(c11).Store((*[8]float32)(r1[8:]))
	r2 := c[2*ldc : 2*ldc+16]
	archsimd.LoadFloat32x8((*[8]float32)(r2[0:])).Add(c20).Store((*[8]float32)(r2[0:]))
	archsimd.LoadFloat32x8((*[8]float32)(r2[8:])).Add(c21).Store((*[8]float32)(r2[8:]))
	r3 := c[3*ldc : 3*ldc+16]
	archsimd.LoadFloat32x8((*[8]float32)(r3[0:])).Add(c30).Store((*[8]float32)(r3[0:]))
	archsimd.LoadFloat32x8((*[8]float32)(r3[8:])).Add(c31).Store((*[8]float32)(r3[8:]))
}
