//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

//go:generate go run gemm_gen.go

// With the simd experiment, f32 and f64 products run on archsimd FMA
// micro-kernels: AVX-512 when the CPU has it, else AVX2+FMA, else the portable
// kernel (which then loses to gonum, see floatsOnBLAS).
//
// Blocking for the 4×(2 vectors) tiles: a kc×nr B panel (32 KiB for f32 on
// AVX-512) stays in L1 while the mc×kc A block streams from L2 and the
// kc×nc packed B block sits in L2/L3.
var (
	simdF32 = simdKernels(
		&gemmKernel[float32]{name: "avx512", mr: 4, nr: 32, kc: 256, mc: 256, nc: 2048, micro: microF32x16, microB: microF32x16B},
		&gemmKernel[float32]{name: "avx2", mr: 4, nr: 16, kc: 256, mc: 256, nc: 2048, micro: microF32x8, microB: microF32x8B})
	simdF64 = simdKernels(
		&gemmKernel[float64]{name: "avx512", mr: 4, nr: 16, kc: 256, mc: 128, nc: 1024, micro: microF64x8},
		&gemmKernel[float64]{name: "avx2", mr: 4, nr: 8, kc: 256, mc: 128, nc: 1024, micro: microF64x4})

	f32Kernel = append(simdF32, genericKernel[float32]())[0]
	f64Kernel = append(simdF64, genericKernel[float64]())[0]

	// floatsOnBLAS sends float products to gonum only on CPUs without a SIMD
	// kernel, where gonum's assembly beats the portable kernel.
	floatsOnBLAS = len(simdF32) == 0
)

// simdKernels keeps the kernels this CPU can run, best first, from an
// AVX-512 and an AVX2 candidate.
func simdKernels[T number](avx512, avx2 *gemmKernel[T]) []*gemmKernel[T] {
	var ks []*gemmKernel[T]
	if archsimd.X86.AVX512() {
		ks = append(ks, avx512)
	}
	if archsimd.X86.AVX2() && archsimd.X86.FMA() {
		ks = append(ks, avx2)
	}
	return ks
}

// gemmKernelsF32 and gemmKernelsF64 list every kernel usable here, for tests.
func gemmKernelsF32() []*gemmKernel[float32] { return append(simdF32, genericKernel[float32]()) }
func gemmKernelsF64() []*gemmKernel[float64] { return append(simdF64, genericKernel[float64]()) }
