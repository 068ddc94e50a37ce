//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

// simdFMA8 says whether fma8 and fmaBroadcast8 can use the hardware FMA.
var simdFMA8 = archsimd.X86.AVX2() && archsimd.X86.FMA()

// fma8 sets acc[l] = fma(a[l], b[l], acc[l]) with one rounding per lane.
func fma8(a, b, acc *[8]float32) {
	if !simdFMA8 {
		fma8Portable(a, b, acc)
		return
	}
	archsimd.LoadFloat32x8(a).MulAdd(archsimd.LoadFloat32x8(b), archsimd.LoadFloat32x8(acc)).Store(acc)
}

// fmaBroadcast8 sets acc[l] = fma(x, b[l], acc[l]).
func fmaBroadcast8(x float32, b, acc *[8]float32) {
	if !simdFMA8 {
		fmaBroadcast8Portable(x, b, acc)
		return
	}
	archsimd.BroadcastFloat32x8(x).MulAdd(archsimd.LoadFloat32x8(b), archsimd.LoadFloat32x8(acc)).Store(acc)
}
