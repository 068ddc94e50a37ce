//go:build goexperiment.simd && amd64

package eval

// The archsimd 4×(2 vectors) micro-kernels that gemm_kernels_amd64.s
// replaced, kept as the bit-for-bit reference of the assembly kernels
// (TestGemmAsmMatchesArchsimd): one FMA per k into each accumulator from
// zero, then the tile added to C.

import (
	"math"
	"math/rand"
	"simd/archsimd"
	"testing"
	"unsafe"
)

// archsimdMicroF32x16 adds the 4x32 product of packed panels a (4×kc) and b (kc×32) to c.
func archsimdMicroF32x16(kc int, a, b, c []float32, ldc int) {
	if kc <= 0 {
		return
	}
	_, _ = a[kc*4-1], b[kc*32-1]
	pa, pb := unsafe.Pointer(unsafe.SliceData(a)), unsafe.Pointer(unsafe.SliceData(b))
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x16
	for i := 0; i < kc; i++ {
		ai, bi := unsafe.Add(pa, i*16), unsafe.Add(pb, i*128)
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

// archsimdMicroF32x8 adds the 4x16 product of packed panels a (4×kc) and b (kc×16) to c.
func archsimdMicroF32x8(kc int, a, b, c []float32, ldc int) {
	if kc <= 0 {
		return
	}
	_, _ = a[kc*4-1], b[kc*16-1]
	pa, pb := unsafe.Pointer(unsafe.SliceData(a)), unsafe.Pointer(unsafe.SliceData(b))
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x8
	for i := 0; i < kc; i++ {
		ai, bi := unsafe.Add(pa, i*16), unsafe.Add(pb, i*64)
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

// archsimdMicroF64x8 adds the 4x16 product of packed panels a (4×kc) and b (kc×16) to c.
func archsimdMicroF64x8(kc int, a, b, c []float64, ldc int) {
	if kc <= 0 {
		return
	}
	_, _ = a[kc*4-1], b[kc*16-1]
	pa, pb := unsafe.Pointer(unsafe.SliceData(a)), unsafe.Pointer(unsafe.SliceData(b))
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float64x8
	for i := 0; i < kc; i++ {
		ai, bi := unsafe.Add(pa, i*32), unsafe.Add(pb, i*128)
		b0 := archsimd.LoadFloat64x8((*[8]float64)(unsafe.Add(bi, 0)))
		b1 := archsimd.LoadFloat64x8((*[8]float64)(unsafe.Add(bi, 64)))
		a0 := archsimd.BroadcastFloat64x8(*(*float64)(unsafe.Add(ai, 0)))
		c00 = a0.MulAdd(b0, c00)
		c01 = a0.MulAdd(b1, c01)
		a1 := archsimd.BroadcastFloat64x8(*(*float64)(unsafe.Add(ai, 8)))
		c10 = a1.MulAdd(b0, c10)
		c11 = a1.MulAdd(b1, c11)
		a2 := archsimd.BroadcastFloat64x8(*(*float64)(unsafe.Add(ai, 16)))
		c20 = a2.MulAdd(b0, c20)
		c21 = a2.MulAdd(b1, c21)
		a3 := archsimd.BroadcastFloat64x8(*(*float64)(unsafe.Add(ai, 24)))
		c30 = a3.MulAdd(b0, c30)
		c31 = a3.MulAdd(b1, c31)
	}
	r0 := c[0*ldc : 0*ldc+16]
	archsimd.LoadFloat64x8((*[8]float64)(r0[0:])).Add(c00).Store((*[8]float64)(r0[0:]))
	archsimd.LoadFloat64x8((*[8]float64)(r0[8:])).Add(c01).Store((*[8]float64)(r0[8:]))
	r1 := c[1*ldc : 1*ldc+16]
	archsimd.LoadFloat64x8((*[8]float64)(r1[0:])).Add(c10).Store((*[8]float64)(r1[0:]))
	archsimd.LoadFloat64x8((*[8]float64)(r1[8:])).Add(c11).Store((*[8]float64)(r1[8:]))
	r2 := c[2*ldc : 2*ldc+16]
	archsimd.LoadFloat64x8((*[8]float64)(r2[0:])).Add(c20).Store((*[8]float64)(r2[0:]))
	archsimd.LoadFloat64x8((*[8]float64)(r2[8:])).Add(c21).Store((*[8]float64)(r2[8:]))
	r3 := c[3*ldc : 3*ldc+16]
	archsimd.LoadFloat64x8((*[8]float64)(r3[0:])).Add(c30).Store((*[8]float64)(r3[0:]))
	archsimd.LoadFloat64x8((*[8]float64)(r3[8:])).Add(c31).Store((*[8]float64)(r3[8:]))
}

// archsimdMicroF64x4 adds the 4x8 product of packed panels a (4×kc) and b (kc×8) to c.
func archsimdMicroF64x4(kc int, a, b, c []float64, ldc int) {
	if kc <= 0 {
		return
	}
	_, _ = a[kc*4-1], b[kc*8-1]
	pa, pb := unsafe.Pointer(unsafe.SliceData(a)), unsafe.Pointer(unsafe.SliceData(b))
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float64x4
	for i := 0; i < kc; i++ {
		ai, bi := unsafe.Add(pa, i*32), unsafe.Add(pb, i*64)
		b0 := archsimd.LoadFloat64x4((*[4]float64)(unsafe.Add(bi, 0)))
		b1 := archsimd.LoadFloat64x4((*[4]float64)(unsafe.Add(bi, 32)))
		a0 := archsimd.BroadcastFloat64x4(*(*float64)(unsafe.Add(ai, 0)))
		c00 = a0.MulAdd(b0, c00)
		c01 = a0.MulAdd(b1, c01)
		a1 := archsimd.BroadcastFloat64x4(*(*float64)(unsafe.Add(ai, 8)))
		c10 = a1.MulAdd(b0, c10)
		c11 = a1.MulAdd(b1, c11)
		a2 := archsimd.BroadcastFloat64x4(*(*float64)(unsafe.Add(ai, 16)))
		c20 = a2.MulAdd(b0, c20)
		c21 = a2.MulAdd(b1, c21)
		a3 := archsimd.BroadcastFloat64x4(*(*float64)(unsafe.Add(ai, 24)))
		c30 = a3.MulAdd(b0, c30)
		c31 = a3.MulAdd(b1, c31)
	}
	r0 := c[0*ldc : 0*ldc+8]
	archsimd.LoadFloat64x4((*[4]float64)(r0[0:])).Add(c00).Store((*[4]float64)(r0[0:]))
	archsimd.LoadFloat64x4((*[4]float64)(r0[4:])).Add(c01).Store((*[4]float64)(r0[4:]))
	r1 := c[1*ldc : 1*ldc+8]
	archsimd.LoadFloat64x4((*[4]float64)(r1[0:])).Add(c10).Store((*[4]float64)(r1[0:]))
	archsimd.LoadFloat64x4((*[4]float64)(r1[4:])).Add(c11).Store((*[4]float64)(r1[4:]))
	r2 := c[2*ldc : 2*ldc+8]
	archsimd.LoadFloat64x4((*[4]float64)(r2[0:])).Add(c20).Store((*[4]float64)(r2[0:]))
	archsimd.LoadFloat64x4((*[4]float64)(r2[4:])).Add(c21).Store((*[4]float64)(r2[4:]))
	r3 := c[3*ldc : 3*ldc+8]
	archsimd.LoadFloat64x4((*[4]float64)(r3[0:])).Add(c30).Store((*[4]float64)(r3[0:]))
	archsimd.LoadFloat64x4((*[4]float64)(r3[4:])).Add(c31).Store((*[4]float64)(r3[4:]))
}

// TestGemmAsmMatchesArchsimd checks every assembly kernel this CPU runs
// against the archsimd kernel of its vector width, through the whole packed
// GEMM (and the few-row path), bit for bit: random values with NaNs of
// several payloads and signs, infinities and zeros, contractions across kc
// slices, row-major and transposed operands, one and two goroutines. Where a
// shape leaves ragged edge tiles for either kernel the two may differ only in
// which NaN payload wins (the archsimd path added edge tiles in scalar Go),
// so there NaNs compare as NaNs; shapes made of full tiles for both compare
// every bit.
func TestGemmAsmMatchesArchsimd(t *testing.T) {
	type pair[T float32 | float64] struct{ asm, ref *gemmKernel[T] }
	ref32 := map[string]*gemmKernel[float32]{
		"avx512": {name: "archsimd512", mr: 4, nr: 32, kc: 256, mc: 256, nc: 2048, micro: archsimdMicroF32x16},
		"avx2":   {name: "archsimd2", mr: 4, nr: 16, kc: 256, mc: 256, nc: 2048, micro: archsimdMicroF32x8},
	}
	ref64 := map[string]*gemmKernel[float64]{
		"avx512": {name: "archsimd512", mr: 4, nr: 16, kc: 256, mc: 128, nc: 1024, micro: archsimdMicroF64x8},
		"avx2":   {name: "archsimd2", mr: 4, nr: 8, kc: 256, mc: 128, nc: 1024, micro: archsimdMicroF64x4},
	}
	if len(simdF32) == 0 {
		t.Skip("no SIMD kernels on this CPU")
	}
	rng := rand.New(rand.NewSource(5))
	nans := []uint32{0x7fc00000, 0xffc00000, 0x7fc12345, 0xffd00001, 0x7f800001}
	for trial := 0; trial < 120; trial++ {
		m, n, k := 1+rng.Intn(100), 1+rng.Intn(100), 1+rng.Intn(600)
		full := trial%2 == 0
		if full {
			m, n = 12*(1+rng.Intn(6)), 32*(1+rng.Intn(3))
		}
		par := 1 + trial%3%2
		la, lb := rowMajor(m, k), rowMajor(k, n)
		if trial%4 == 1 {
			la, lb = colMajor(m, k), colMajor(k, n)
		}
		av, bv := make([]float64, m*k), make([]float64, k*n)
		for _, s := range [][]float64{av, bv} {
			for i := range s {
				s[i] = float64(float32(rng.NormFloat64()))
				switch rng.Intn(300) {
				case 0:
					s[i] = float64(math.Float32frombits(nans[rng.Intn(len(nans))]))
				case 1:
					s[i] = math.Inf(1 - 2*rng.Intn(2))
				case 2:
					s[i] = 0
				}
			}
		}
		a32, b32 := storeLayout[float32](av, 1, m, k, la), storeLayout[float32](bv, 1, k, n, lb)
		a64, b64 := storeLayout[float64](av, 1, m, k, la), storeLayout[float64](bv, 1, k, n, lb)
		for _, kn := range simdF32 {
			got, want := make([]float32, m*n), make([]float32, m*n)
			kn.run(par, 1, m, n, k, a32, la, b32, lb, got)
			ref32[kn.name].run(par, 1, m, n, k, a32, la, b32, lb, want)
			for i := range got {
				if g, w := got[i], want[i]; math.Float32bits(g) != math.Float32bits(w) && (full || g == g || w == w) {
					t.Fatalf("f32 %s m=%d n=%d k=%d par=%d: c[%d] = %#x, archsimd %#x", kn.name, m, n, k, par, i, math.Float32bits(g), math.Float32bits(w))
				}
			}
		}
		for _, kn := range simdF64 {
			got, want := make([]float64, m*n), make([]float64, m*n)
			kn.run(par, 1, m, n, k, a64, la, b64, lb, got)
			ref64[kn.name].run(par, 1, m, n, k, a64, la, b64, lb, want)
			for i := range got {
				if g, w := got[i], want[i]; math.Float64bits(g) != math.Float64bits(w) && (full || g == g || w == w) {
					t.Fatalf("f64 %s m=%d n=%d k=%d par=%d: c[%d] = %#x, archsimd %#x", kn.name, m, n, k, par, i, math.Float64bits(g), math.Float64bits(w))
				}
			}
		}
	}
}
