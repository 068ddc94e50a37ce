//go:build !(goexperiment.simd && amd64)

package eval

// bf16Src is a matrix operand whose values are bf16 (see the simd build's
// gemm_bf16pairs_simd_amd64.go).
type bf16Src struct {
	u16 []uint16
	f32 []float32
	l   gemmLayout
}

// gemmBF16Pairs and gemmBF16PairsOddFirst need the simd experiment's
// AVX512-BF16 kernel.
func gemmBF16Pairs(par, nb, m, n, k, kc int, a, b bf16Src, c []float32) bool { return false }

func gemmBF16PairsOddFirst(par, nb, m, n, k, kc int, a, b bf16Src, c []float32) bool { return false }

// bf16PairsAvailable: never in the portable build.
func bf16PairsAvailable() bool { return false }
