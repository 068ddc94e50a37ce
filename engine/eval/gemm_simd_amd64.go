//go:build goexperiment.simd && amd64

package eval

import (
	"fmt"
	"os"
	"simd/archsimd"
	"unsafe"

	"goldtrace/internal/hostcpu"
)

//go:generate go run gemm_gen.go

// With the simd experiment, f32 and f64 products run on the assembly FMA
// micro-kernels of gemm_kernels_amd64.s: AVX-512 when the CPU has it, else
// AVX2+FMA, else the portable kernel (which then loses to gonum, see
// floatsOnBLAS).
//
// Blocking: a kc×nr B panel (32 KiB for f32 at kc=256, in L1) is reused by
// every mr-tall panel of the mc×kc A block (192 KiB f32, 192 KiB f64: in L2
// also on CPUs with 512 KiB of it), and the kc×nc packed B block (2 MiB)
// sits in L2/L3. kc=256 is part of the arithmetic (each tile's FMA chain
// covers one kc slice) and must not change; dots in YNNPACK's order run a
// copy with kc set to YNNPACK's K block (withKC, dot_ynn.go).
var (
	simdF32 = simdKernels(
		withShort(&gemmKernel[float32]{name: "avx512", mr: 12, nr: 32, kc: 256, mc: 192, nc: 2048, micro: microAVX512F32, microB: microAVX512F32B, microA: microAVX512F32A},
			shortKernel(4, 32, gemmAVX512F32R4, gemmAVX512F32R4A, true), shortKernel(8, 32, gemmAVX512F32R8, gemmAVX512F32R8A, true)),
		withShort(&gemmKernel[float32]{name: "avx2", mr: 6, nr: 16, kc: 256, mc: 192, nc: 2048, micro: microAVX2F32, microB: microAVX2F32B, microA: microAVX2F32A},
			shortKernel(2, 16, gemmAVX2F32R2, gemmAVX2F32R2A, true), shortKernel(4, 16, gemmAVX2F32R4, gemmAVX2F32R4A, true)))
	simdF64 = simdKernels(
		withShort(&gemmKernel[float64]{name: "avx512", mr: 12, nr: 16, kc: 256, mc: 96, nc: 1024, micro: microAVX512F64, microA: microAVX512F64A},
			shortKernel(4, 16, gemmAVX512F64R4, gemmAVX512F64R4A, false), shortKernel(8, 16, gemmAVX512F64R8, gemmAVX512F64R8A, false)),
		withShort(&gemmKernel[float64]{name: "avx2", mr: 6, nr: 8, kc: 256, mc: 96, nc: 1024, micro: microAVX2F64, microA: microAVX2F64A},
			shortKernel(2, 8, gemmAVX2F64R2, gemmAVX2F64R2A, false), shortKernel(4, 8, gemmAVX2F64R4, gemmAVX2F64R4A, false)))

	_ = withChains(simdF32,
		withShort(shortKernel(12, 32, gemmAVX512F32C, gemmAVX512F32AC, true),
			shortKernel(4, 32, gemmAVX512F32R4C, gemmAVX512F32R4AC, true), shortKernel(8, 32, gemmAVX512F32R8C, gemmAVX512F32R8AC, true)),
		withShort(shortKernel(6, 16, gemmAVX2F32C, gemmAVX2F32AC, true),
			shortKernel(2, 16, gemmAVX2F32R2C, gemmAVX2F32R2AC, true), shortKernel(4, 16, gemmAVX2F32R4C, gemmAVX2F32R4AC, true)))

	_ = withStores(simdF32,
		withShort(shortKernel(12, 32, gemmAVX512F32S, gemmAVX512F32AS, true),
			shortKernel(4, 32, gemmAVX512F32R4S, gemmAVX512F32R4AS, true), shortKernel(8, 32, gemmAVX512F32R8S, gemmAVX512F32R8AS, true)),
		withShort(shortKernel(6, 16, gemmAVX2F32S, gemmAVX2F32AS, true),
			shortKernel(2, 16, gemmAVX2F32R2S, gemmAVX2F32R2AS, true), shortKernel(4, 16, gemmAVX2F32R4S, gemmAVX2F32R4AS, true)))

	_ = withStores(simdF64,
		withShort(shortKernel(12, 16, gemmAVX512F64S, gemmAVX512F64AS, false),
			shortKernel(4, 16, gemmAVX512F64R4S, gemmAVX512F64R4AS, false), shortKernel(8, 16, gemmAVX512F64R8S, gemmAVX512F64R8AS, false)),
		withShort(shortKernel(6, 8, gemmAVX2F64S, gemmAVX2F64AS, false),
			shortKernel(2, 8, gemmAVX2F64R2S, gemmAVX2F64R2AS, false), shortKernel(4, 8, gemmAVX2F64R4S, gemmAVX2F64R4AS, false)))

	f32Kernel = append(simdF32, genericKernel[float32]())[0]
	f64Kernel = append(simdF64, genericKernel[float64]())[0]

	// floatsOnBLAS sends float products to gonum only on CPUs without a SIMD
	// kernel, where gonum's assembly beats the portable kernel.
	floatsOnBLAS = len(simdF32) == 0
)

// withShort gives kn its short-row kernels (fewest rows first), taking
// its nr and blocking.
func withShort[T number](kn *gemmKernel[T], short ...*gemmKernel[T]) *gemmKernel[T] {
	for _, s := range short {
		s.name = fmt.Sprintf("%s_r%d", kn.name, s.mr)
		s.kc, s.mc, s.nc = kn.kc, kn.mc, kn.nc
		if s.nr != kn.nr {
			panic("eval: short kernel of another width")
		}
	}
	kn.short = short
	return kn
}

// shortKernel wraps the assembly kernel of mr rows and nr columns and
// its in-place-A form, with a microB form when withB.
func shortKernel[T number](mr, nr int, f func(kc int, a, b *T, ldb int, c *T, ldc int),
	fa func(kc int, a *T, lda int, b *T, ldb int, c *T, ldc int), withB bool) *gemmKernel[T] {
	kn := &gemmKernel[T]{mr: mr, nr: nr}
	kn.micro = func(kc int, a, b, c []T, ldc int) {
		if kc > 0 {
			_, _, _ = a[kc*mr-1], b[kc*nr-1], c[(mr-1)*ldc+nr-1]
			f(kc, &a[0], &b[0], nr, &c[0], ldc)
		}
	}
	if withB {
		kn.microB = func(kc int, a, b []T, ldb int, c []T, ldc int) {
			if kc > 0 {
				_, _, _ = a[kc*mr-1], b[(kc-1)*ldb+nr-1], c[(mr-1)*ldc+nr-1]
				f(kc, &a[0], &b[0], ldb, &c[0], ldc)
			}
		}
	}
	kn.microA = func(kc int, a []T, lda int, b, c []T, ldc int) {
		if kc > 0 {
			_, _, _ = a[(mr-1)*lda+kc-1], b[kc*nr-1], c[(mr-1)*ldc+nr-1]
			fa(kc, &a[0], lda, &b[0], nr, &c[0], ldc)
		}
	}
	return kn
}

// withChains gives the kernels of ks (from simdKernels) their chain forms:
// the AVX-512 one avx512's, the AVX2 one avx2's, with the same blocking.
func withChains[T number](ks []*gemmKernel[T], avx512, avx2 *gemmKernel[T]) bool {
	for _, kn := range ks {
		ch := avx2
		if kn.name == "avx512" {
			ch = avx512
		}
		ch.name, ch.kc, ch.mc, ch.nc = kn.name+"_chain", kn.kc, kn.mc, kn.nc
		for _, s := range ch.short {
			s.name, s.kc, s.mc, s.nc = ch.name+fmt.Sprintf("_r%d", s.mr), kn.kc, kn.mc, kn.nc
		}
		kn.chain = ch
	}
	return true
}

// withStores gives the kernels of ks their storing forms (the "S" kernels:
// the first kc slice of a product into storage never cleared), the AVX-512
// one avx512's, the AVX2 one avx2's, with the same blocking.
func withStores[T number](ks []*gemmKernel[T], avx512, avx2 *gemmKernel[T]) bool {
	for _, kn := range ks {
		st := avx2
		if kn.name == "avx512" {
			st = avx512
		}
		st.name, st.kc, st.mc, st.nc = kn.name+"_store", kn.kc, kn.mc, kn.nc
		for _, s := range st.short {
			s.name, s.kc, s.mc, s.nc = st.name+fmt.Sprintf("_r%d", s.mr), kn.kc, kn.mc, kn.nc
		}
		kn.store = st
	}
	return true
}

// simdKernels keeps the kernels this CPU can run, best first, from an
// AVX-512 and an AVX2 candidate. Which one runs changes no bits: every
// kernel computes each element of C as the same FMA chain over each kc slice.
func simdKernels[T number](avx512, avx2 *gemmKernel[T]) []*gemmKernel[T] {
	var ks []*gemmKernel[T]
	if archsimd.X86.AVX512() {
		ks = append(ks, avx512)
	}
	if archsimd.X86.AVX2() && archsimd.X86.FMA() {
		if preferAVX2GEMM() {
			ks = append([]*gemmKernel[T]{avx2}, ks...)
		} else {
			ks = append(ks, avx2)
		}
	}
	return ks
}

// preferAVX2GEMM reports whether the AVX2 kernels should run although the
// CPU has AVX-512: the AVX-512 kernels' kc×32 f32 (kc×16 f64) B panel is 32
// KiB at kc=256, so with the A panel beside it a 32 KiB L1 data cache (AMD
// Zen 4, which also splits 512-bit FMAs in two) cannot hold it; the AVX2
// kernels' half-width panels fit. Measured on an EPYC Zen 4: 1024³ f32 on one
// core 97 GFLOP/s with AVX-512, 106 with AVX2. GOLDTRACE_GEMM_KERNEL=avx512
// or avx2 overrides the choice, to compare.
func preferAVX2GEMM() bool {
	switch os.Getenv("GOLDTRACE_GEMM_KERNEL") {
	case "avx2":
		return true
	case "avx512":
		return false
	}
	return hostcpu.X86.L1DataKiB > 0 && hostcpu.X86.L1DataKiB < 48
}

// gemmKernelsF32 and gemmKernelsF64 list every kernel usable here, for tests.
func gemmKernelsF32() []*gemmKernel[float32] { return append(simdF32, genericKernel[float32]()) }
func gemmKernelsF64() []*gemmKernel[float64] { return append(simdF64, genericKernel[float64]()) }

// The micro and microB forms of the assembly kernels: the slices' bounds are
// checked here, once, for everything the kernel reads and writes.

func microAVX512F32(kc int, a, b, c []float32, ldc int) {
	if kc > 0 {
		_, _, _ = a[kc*12-1], b[kc*32-1], c[11*ldc+31]
		gemmAVX512F32(kc, &a[0], &b[0], 32, &c[0], ldc)
	}
}

func microAVX512F32B(kc int, a, b []float32, ldb int, c []float32, ldc int) {
	if kc > 0 {
		_, _, _ = a[kc*12-1], b[(kc-1)*ldb+31], c[11*ldc+31]
		gemmAVX512F32(kc, &a[0], &b[0], ldb, &c[0], ldc)
	}
}

func microAVX2F32(kc int, a, b, c []float32, ldc int) {
	if kc > 0 {
		_, _, _ = a[kc*6-1], b[kc*16-1], c[5*ldc+15]
		gemmAVX2F32(kc, &a[0], &b[0], 16, &c[0], ldc)
	}
}

func microAVX2F32B(kc int, a, b []float32, ldb int, c []float32, ldc int) {
	if kc > 0 {
		_, _, _ = a[kc*6-1], b[(kc-1)*ldb+15], c[5*ldc+15]
		gemmAVX2F32(kc, &a[0], &b[0], ldb, &c[0], ldc)
	}
}

func microAVX512F64(kc int, a, b, c []float64, ldc int) {
	if kc > 0 {
		_, _, _ = a[kc*12-1], b[kc*16-1], c[11*ldc+15]
		gemmAVX512F64(kc, &a[0], &b[0], 16, &c[0], ldc)
	}
}

func microAVX2F64(kc int, a, b, c []float64, ldc int) {
	if kc > 0 {
		_, _, _ = a[kc*6-1], b[kc*8-1], c[5*ldc+7]
		gemmAVX2F64(kc, &a[0], &b[0], 8, &c[0], ldc)
	}
}

func microAVX512F32A(kc int, a []float32, lda int, b, c []float32, ldc int) {
	if kc > 0 {
		_, _, _ = a[11*lda+kc-1], b[kc*32-1], c[11*ldc+31]
		gemmAVX512F32A(kc, &a[0], lda, &b[0], 32, &c[0], ldc)
	}
}

func microAVX2F32A(kc int, a []float32, lda int, b, c []float32, ldc int) {
	if kc > 0 {
		_, _, _ = a[5*lda+kc-1], b[kc*16-1], c[5*ldc+15]
		gemmAVX2F32A(kc, &a[0], lda, &b[0], 16, &c[0], ldc)
	}
}

func microAVX512F64A(kc int, a []float64, lda int, b, c []float64, ldc int) {
	if kc > 0 {
		_, _, _ = a[11*lda+kc-1], b[kc*16-1], c[11*ldc+15]
		gemmAVX512F64A(kc, &a[0], lda, &b[0], 16, &c[0], ldc)
	}
}

func microAVX2F64A(kc int, a []float64, lda int, b, c []float64, ldc int) {
	if kc > 0 {
		_, _, _ = a[5*lda+kc-1], b[kc*8-1], c[5*ldc+7]
		gemmAVX2F64A(kc, &a[0], lda, &b[0], 8, &c[0], ldc)
	}
}

// gemmCopyRows copies rows runs of width bytes (a multiple of 8) from src to
// dst, the runs sstride bytes apart in src and dstride bytes apart in dst.
// Needs AVX.
//
//go:noescape
func gemmCopyRows(dst *byte, dstride int, src *byte, sstride, rows, width int)

var copyRowsAsm = archsimd.X86.AVX2()

// copyRows sets dst[r*ds : r*ds+n] = src[r*ss : r*ss+n] for r < rows: the
// packing of full panels from runs that are contiguous in the operand.
func copyRows[T number](dst []T, ds int, src []T, ss, rows, n int) {
	if rows <= 0 || n <= 0 {
		return
	}
	_, _ = dst[(rows-1)*ds+n-1], src[(rows-1)*ss+n-1]
	size := int(unsafe.Sizeof(dst[0]))
	if !copyRowsAsm || n*size%8 != 0 {
		copyRowsGo(dst, ds, src, ss, rows, n)
		return
	}
	gemmCopyRows((*byte)(unsafe.Pointer(&dst[0])), ds*size, (*byte)(unsafe.Pointer(&src[0])), ss*size, rows, n*size)
}

// ynnISA is the vector width (512 or 256) of the YNNPACK kernels XLA:CPU
// runs on this CPU (its plan, dot_ynn.go), or 0 when no assembly kernel here
// can run their FMA chains. It follows the CPU, not the kernel that runs
// the chains (preferAVX2GEMM).
var ynnISA = func() int {
	switch {
	case len(simdF32) == 0:
		return 0
	case archsimd.X86.AVX512():
		return 512
	}
	return 256
}()
