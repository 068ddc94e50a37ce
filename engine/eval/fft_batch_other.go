//go:build !goexperiment.simd || !amd64 || amd64.v3

package eval

// The batched passes need the simd experiment on amd64; with GOAMD64=v3 the
// compiler fuses gonum's multiply-adds, which the vector passes would not.
func fftBatchAvailable() bool { return false }

func fftBatchPasses(n int, c, ch, wa []float64, factors []int, sign float64) {
	panic("fft: batched passes are not built")
}
