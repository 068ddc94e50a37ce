//go:build !goexperiment.simd || !amd64

package eval

// fma8 sets acc[l] = fma(a[l], b[l], acc[l]) with one rounding per lane.
func fma8(a, b, acc *[8]float32) { fma8Portable(a, b, acc) }

// fmaBroadcast8 sets acc[l] = fma(x, b[l], acc[l]).
func fmaBroadcast8(x float32, b, acc *[8]float32) { fmaBroadcast8Portable(x, b, acc) }
