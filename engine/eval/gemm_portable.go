//go:build !goexperiment.simd || !amd64

package eval

// Without the simd experiment the float kernels are the portable ones.
var (
	f32Kernel = genericKernel[float32]()
	f64Kernel = genericKernel[float64]()
)

// floatsOnBLAS sends float products to gonum: its assembly inner loops ran
// 16x faster than the portable kernel on f32 1024³.
const floatsOnBLAS = true

// gemmKernelsF32 and gemmKernelsF64 list every kernel usable here, for tests.
func gemmKernelsF32() []*gemmKernel[float32] { return []*gemmKernel[float32]{f32Kernel} }
func gemmKernelsF64() []*gemmKernel[float64] { return []*gemmKernel[float64]{f64Kernel} }

// copyRows sets dst[r*ds : r*ds+n] = src[r*ss : r*ss+n] for r < rows.
func copyRows[T number](dst []T, ds int, src []T, ss, rows, n int) {
	copyRowsGo(dst, ds, src, ss, rows, n)
}

// The portable kernel does not fuse multiply-adds, so no dot takes
// YNNPACK's order (dot_ynn.go) in this build.
const ynnISA = 0
