//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

// The vector forms of dotF64Go, axpyF64Go and rank2F64Go: separate
// multiplies and adds in the scalar loops' order, so bit for bit the same
// (AVX-512: one 8-lane accumulator; AVX2: two 4-lane ones, lanes 0-3 and
// 4-7).

func dotF64(x, y []float64) float64 {
	n := len(x)
	y = y[:n]
	var s [8]float64
	i := 0
	switch {
	case archsimd.X86.AVX512() && n >= 8:
		acc := archsimd.BroadcastFloat64x8(0)
		for ; i+8 <= n; i += 8 {
			acc = acc.Add(archsimd.LoadFloat64x8((*[8]float64)(x[i:])).Mul(archsimd.LoadFloat64x8((*[8]float64)(y[i:]))))
		}
		acc.Store(&s)
		archsimd.ClearAVXUpperBits()
	case archsimd.X86.AVX2() && n >= 8:
		lo, hi := archsimd.BroadcastFloat64x4(0), archsimd.BroadcastFloat64x4(0)
		for ; i+8 <= n; i += 8 {
			lo = lo.Add(archsimd.LoadFloat64x4((*[4]float64)(x[i:])).Mul(archsimd.LoadFloat64x4((*[4]float64)(y[i:]))))
			hi = hi.Add(archsimd.LoadFloat64x4((*[4]float64)(x[i+4:])).Mul(archsimd.LoadFloat64x4((*[4]float64)(y[i+4:]))))
		}
		lo.Store((*[4]float64)(s[:4]))
		hi.Store((*[4]float64)(s[4:]))
		archsimd.ClearAVXUpperBits()
	default:
		return dotF64Go(x, y)
	}
	t := combine8(s)
	for ; i < n; i++ {
		t += x[i] * y[i]
	}
	return t
}

func axpyF64(y, x []float64, alpha float64) {
	n := len(y)
	x = x[:n]
	i := 0
	switch {
	case archsimd.X86.AVX512():
		a := archsimd.BroadcastFloat64x8(alpha)
		for ; i+8 <= n; i += 8 {
			yp := (*[8]float64)(y[i:])
			archsimd.LoadFloat64x8(yp).Add(a.Mul(archsimd.LoadFloat64x8((*[8]float64)(x[i:])))).Store(yp)
		}
		archsimd.ClearAVXUpperBits()
	case archsimd.X86.AVX2():
		a := archsimd.BroadcastFloat64x4(alpha)
		for ; i+4 <= n; i += 4 {
			yp := (*[4]float64)(y[i:])
			archsimd.LoadFloat64x4(yp).Add(a.Mul(archsimd.LoadFloat64x4((*[4]float64)(x[i:])))).Store(yp)
		}
		archsimd.ClearAVXUpperBits()
	}
	if i < n {
		axpyF64Go(y[i:], x[i:], alpha)
	}
}

func rank2F64(row, v, w []float64, vi, wi float64) {
	n := len(row)
	v, w = v[:n], w[:n]
	j := 0
	switch {
	case archsimd.X86.AVX512():
		a, b := archsimd.BroadcastFloat64x8(vi), archsimd.BroadcastFloat64x8(wi)
		for ; j+8 <= n; j += 8 {
			rp := (*[8]float64)(row[j:])
			t := a.Mul(archsimd.LoadFloat64x8((*[8]float64)(w[j:]))).Add(b.Mul(archsimd.LoadFloat64x8((*[8]float64)(v[j:]))))
			archsimd.LoadFloat64x8(rp).Sub(t).Store(rp)
		}
		archsimd.ClearAVXUpperBits()
	case archsimd.X86.AVX2():
		a, b := archsimd.BroadcastFloat64x4(vi), archsimd.BroadcastFloat64x4(wi)
		for ; j+4 <= n; j += 4 {
			rp := (*[4]float64)(row[j:])
			t := a.Mul(archsimd.LoadFloat64x4((*[4]float64)(w[j:]))).Add(b.Mul(archsimd.LoadFloat64x4((*[4]float64)(v[j:]))))
			archsimd.LoadFloat64x4(rp).Sub(t).Store(rp)
		}
		archsimd.ClearAVXUpperBits()
	}
	if j < n {
		rank2F64Go(row[j:], v[j:], w[j:], vi, wi)
	}
}
