//go:build goexperiment.simd && amd64

package eval

import (
	"runtime"
	"sync"
	"testing"

	"simd/archsimd"
)

// BenchmarkFMAPeak measures the machine's f32 FMA ceiling: independent
// vector FMA chains (16 lanes with AVX-512, else 8) on every core; the
// GFLOP/s metric counts 2 flops per lane per FMA. make bench reports the
// GEMM and convolution rates against it.
func BenchmarkFMAPeak(bm *testing.B) { benchFMAPeak(bm, runtime.GOMAXPROCS(0)) }

// BenchmarkFMAPeak_1core is the ceiling of one core, beside the per-kernel
// GEMM benchmarks (BenchmarkGemmKernels), which run on one goroutine.
func BenchmarkFMAPeak_1core(bm *testing.B) { benchFMAPeak(bm, 1) }

// BenchmarkFMAPeakAVX2_1core is the one-core ceiling with 8-lane vectors,
// beside the AVX2 kernels on a CPU that also has AVX-512.
func BenchmarkFMAPeakAVX2_1core(bm *testing.B) {
	if !archsimd.X86.AVX2() || !archsimd.X86.FMA() {
		bm.Skip("no AVX2 FMA")
	}
	const iters = 1 << 20
	cpu := oneThread(bm)
	for i := 0; i < bm.N; i++ {
		fmaChains8(iters)
	}
	reportFlops(bm, cpu, iters*12*8*2)
}

func benchFMAPeak(bm *testing.B, par int) {
	const iters = 1 << 20
	lanes := 8
	run := fmaChains8
	if archsimd.X86.AVX512() {
		lanes, run = 16, fmaChains16
	} else if !archsimd.X86.AVX2() || !archsimd.X86.FMA() {
		bm.Skip("no FMA vectors")
	}
	if par == 1 {
		cpu := oneThread(bm)
		for i := 0; i < bm.N; i++ {
			run(iters)
		}
		reportFlops(bm, cpu, iters*12*float64(lanes)*2)
		return
	}
	bm.ResetTimer()
	for i := 0; i < bm.N; i++ {
		var wg sync.WaitGroup
		for g := 0; g < par; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				run(iters)
			}()
		}
		wg.Wait()
	}
	flops := float64(bm.N) * float64(par) * iters * 12 * float64(lanes) * 2
	bm.ReportMetric(flops/bm.Elapsed().Seconds()/1e9, "GFLOP/s")
}

var fmaSink float32

func fmaChains16(n int) {
	x, y := archsimd.BroadcastFloat32x16(0.999), archsimd.BroadcastFloat32x16(1e-7)
	a0, a1, a2, a3 := archsimd.BroadcastFloat32x16(0), archsimd.BroadcastFloat32x16(1), archsimd.BroadcastFloat32x16(2), archsimd.BroadcastFloat32x16(3)
	a4, a5, a6, a7 := a0.Add(y), a1.Add(y), a2.Add(y), a3.Add(y)
	a8, a9, a10, a11 := a4.Add(y), a5.Add(y), a6.Add(y), a7.Add(y)
	for i := 0; i < n; i++ {
		a0, a1, a2, a3 = a0.MulAdd(x, y), a1.MulAdd(x, y), a2.MulAdd(x, y), a3.MulAdd(x, y)
		a4, a5, a6, a7 = a4.MulAdd(x, y), a5.MulAdd(x, y), a6.MulAdd(x, y), a7.MulAdd(x, y)
		a8, a9, a10, a11 = a8.MulAdd(x, y), a9.MulAdd(x, y), a10.MulAdd(x, y), a11.MulAdd(x, y)
	}
	s := a0.Add(a1).Add(a2).Add(a3).Add(a4).Add(a5).Add(a6).Add(a7).Add(a8).Add(a9).Add(a10).Add(a11)
	var out [16]float32
	s.Store(&out)
	fmaSink += out[0]
}

func fmaChains8(n int) {
	x, y := archsimd.BroadcastFloat32x8(0.999), archsimd.BroadcastFloat32x8(1e-7)
	a0, a1, a2, a3 := archsimd.BroadcastFloat32x8(0), archsimd.BroadcastFloat32x8(1), archsimd.BroadcastFloat32x8(2), archsimd.BroadcastFloat32x8(3)
	a4, a5, a6, a7 := a0.Add(y), a1.Add(y), a2.Add(y), a3.Add(y)
	a8, a9, a10, a11 := a4.Add(y), a5.Add(y), a6.Add(y), a7.Add(y)
	for i := 0; i < n; i++ {
		a0, a1, a2, a3 = a0.MulAdd(x, y), a1.MulAdd(x, y), a2.MulAdd(x, y), a3.MulAdd(x, y)
		a4, a5, a6, a7 = a4.MulAdd(x, y), a5.MulAdd(x, y), a6.MulAdd(x, y), a7.MulAdd(x, y)
		a8, a9, a10, a11 = a8.MulAdd(x, y), a9.MulAdd(x, y), a10.MulAdd(x, y), a11.MulAdd(x, y)
	}
	s := a0.Add(a1).Add(a2).Add(a3).Add(a4).Add(a5).Add(a6).Add(a7).Add(a8).Add(a9).Add(a10).Add(a11)
	var out [8]float32
	s.Store(&out)
	fmaSink += out[0]
}
