//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

// rotateRows is rotateRowsGo a vector at a time (AVX-512: 8 lanes, AVX2: 4),
// with separate multiplies and adds, so bit for bit the same.
func rotateRows(c, s float64, x, y, out []float64) {
	n := len(x)
	y, out = y[:n], out[:n]
	j := 0
	switch {
	case archsimd.X86.AVX512():
		cv, sv := archsimd.BroadcastFloat64x8(c), archsimd.BroadcastFloat64x8(s)
		for ; j+8 <= n; j += 8 {
			xv := archsimd.LoadFloat64x8((*[8]float64)(x[j:]))
			yv := archsimd.LoadFloat64x8((*[8]float64)(y[j:]))
			sv.Mul(xv).Add(cv.Mul(yv)).Store((*[8]float64)(out[j:]))
			cv.Mul(xv).Sub(sv.Mul(yv)).Store((*[8]float64)(y[j:]))
		}
		archsimd.ClearAVXUpperBits()
	case archsimd.X86.AVX2():
		cv, sv := archsimd.BroadcastFloat64x4(c), archsimd.BroadcastFloat64x4(s)
		for ; j+4 <= n; j += 4 {
			xv := archsimd.LoadFloat64x4((*[4]float64)(x[j:]))
			yv := archsimd.LoadFloat64x4((*[4]float64)(y[j:]))
			sv.Mul(xv).Add(cv.Mul(yv)).Store((*[4]float64)(out[j:]))
			cv.Mul(xv).Sub(sv.Mul(yv)).Store((*[4]float64)(y[j:]))
		}
		archsimd.ClearAVXUpperBits()
	}
	if j < n {
		rotateRowsGo(c, s, x[j:], y[j:], out[j:])
	}
}

// rotateRowsFwd is rotateRowsFwdGo a vector at a time, bit for bit.
func rotateRowsFwd(c, s float64, x, y, out []float64) {
	n := len(x)
	y, out = y[:n], out[:n]
	j := 0
	switch {
	case archsimd.X86.AVX512():
		cv, sv := archsimd.BroadcastFloat64x8(c), archsimd.BroadcastFloat64x8(s)
		for ; j+8 <= n; j += 8 {
			xv := archsimd.LoadFloat64x8((*[8]float64)(x[j:]))
			yv := archsimd.LoadFloat64x8((*[8]float64)(y[j:]))
			cv.Mul(xv).Add(sv.Mul(yv)).Store((*[8]float64)(out[j:]))
			cv.Mul(yv).Sub(sv.Mul(xv)).Store((*[8]float64)(x[j:]))
		}
		archsimd.ClearAVXUpperBits()
	case archsimd.X86.AVX2():
		cv, sv := archsimd.BroadcastFloat64x4(c), archsimd.BroadcastFloat64x4(s)
		for ; j+4 <= n; j += 4 {
			xv := archsimd.LoadFloat64x4((*[4]float64)(x[j:]))
			yv := archsimd.LoadFloat64x4((*[4]float64)(y[j:]))
			cv.Mul(xv).Add(sv.Mul(yv)).Store((*[4]float64)(out[j:]))
			cv.Mul(yv).Sub(sv.Mul(xv)).Store((*[4]float64)(x[j:]))
		}
		archsimd.ClearAVXUpperBits()
	}
	if j < n {
		rotateRowsFwdGo(c, s, x[j:], y[j:], out[j:])
	}
}
