package eval

import (
	"math/rand"
	"runtime"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

func naiveGemm[T number](nb, m, n, k int, a, b []T) []T {
	c := make([]T, nb*m*n)
	for bb := 0; bb < nb; bb++ {
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var s T
				for p := 0; p < k; p++ {
					s += a[bb*m*k+i*k+p] * b[bb*k*n+p*n+j]
				}
				c[bb*m*n+i*n+j] = s
			}
		}
	}
	return c
}

func benchData(n int) ([]float32, []float32) {
	r := rand.New(rand.NewSource(1))
	a := make([]float32, n*n)
	b := make([]float32, n*n)
	for i := range a {
		a[i] = r.Float32()
		b[i] = r.Float32()
	}
	return a, b
}

// BenchmarkDotF32_1024 measures the f32 GEMM core on 1024x1024 matrices on
// every core; the GFLOP/s metric is 2*n^3 per op.
func BenchmarkDotF32_1024(bm *testing.B) { benchGemmF32(bm, 1024, runtime.GOMAXPROCS(0)) }

// BenchmarkDotF32_1024_1core is the same product on one goroutine.
func BenchmarkDotF32_1024_1core(bm *testing.B) { benchGemmF32(bm, 1024, 1) }

// BenchmarkDotF64_1024 is BenchmarkDotF32_1024 in f64.
func BenchmarkDotF64_1024(bm *testing.B) {
	a, b := benchData(1024)
	benchGemm(bm, 1024, runtime.GOMAXPROCS(0), toFloat64s(a), toFloat64s(b))
}

func toFloat64s(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func benchGemmF32(bm *testing.B, n, par int) {
	a, b := benchData(n)
	benchGemm(bm, n, par, a, b)
}

func benchGemm[T float32 | float64](bm *testing.B, n, par int, a, b []T) {
	c := make([]T, n*n)
	if par == 1 {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	bm.ResetTimer()
	cpu := threadCPU()
	for i := 0; i < bm.N; i++ {
		clear(c)
		gemm(par, 1, n, n, n, a, b, c)
	}
	bm.ReportMetric(2*float64(n*n*n)*float64(bm.N)/bm.Elapsed().Seconds()/1e9, "GFLOP/s")
	if par == 1 {
		bm.ReportMetric(2*float64(n*n*n)*float64(bm.N)/(threadCPU()-cpu)/1e9, "GFLOP/s_cpu")
	}
}

func BenchmarkGonumSgemm_1024(bm *testing.B) {
	const n = 1024
	a, b := benchData(n)
	c := make([]float32, n*n)
	bm.ResetTimer()
	for i := 0; i < bm.N; i++ {
		gonum.Implementation{}.Sgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, a, n, b, n, 0, c, n)
	}
	bm.ReportMetric(2*n*n*n*float64(bm.N)/bm.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkGemmKernels runs every f32 and f64 kernel this CPU can run on one
// goroutine: a 1024³ product through the packed path and, as "micro", the
// micro-kernel alone on one kc=256 pair of panels resident in L1 (its
// ceiling).
func BenchmarkGemmKernels(bm *testing.B) {
	a, b := benchData(1024)
	for _, kn := range gemmKernelsF32() {
		bm.Run("f32_"+kn.name, func(bm *testing.B) { benchKernel(bm, kn, a, b) })
		bm.Run("f32_"+kn.name+"_micro", func(bm *testing.B) { benchMicro(bm, kn) })
	}
	a64, b64 := toFloat64s(a), toFloat64s(b)
	for _, kn := range gemmKernelsF64() {
		bm.Run("f64_"+kn.name, func(bm *testing.B) { benchKernel(bm, kn, a64, b64) })
		bm.Run("f64_"+kn.name+"_micro", func(bm *testing.B) { benchMicro(bm, kn) })
	}
}

func benchKernel[T float32 | float64](bm *testing.B, kn *gemmKernel[T], a, b []T) {
	const n = 1024
	c := make([]T, n*n)
	cpu := oneThread(bm)
	for i := 0; i < bm.N; i++ {
		clear(c)
		kn.run(1, 1, n, n, n, a, rowMajor(n, n), b, rowMajor(n, n), c)
	}
	reportFlops(bm, cpu, 2*float64(n*n*n))
}

func benchMicro[T float32 | float64](bm *testing.B, kn *gemmKernel[T]) {
	const kc, reps = 256, 1000
	a, b, c := make([]T, kn.mr*kc), make([]T, kc*kn.nr), make([]T, kn.mr*kn.nr)
	for i := range a {
		a[i] = T(i%7) / 8
	}
	for i := range b {
		b[i] = T(i%5) / 8
	}
	cpu := oneThread(bm)
	for i := 0; i < bm.N; i++ {
		for range reps {
			kn.micro(kc, a, b, c, kn.nr)
		}
	}
	reportFlops(bm, cpu, 2*float64(kn.mr*kn.nr*kc*reps))
}

// BenchmarkGemmF32Tile is the kernel simulator's nc_matmul product (a
// 128×128 stationary tile transposed times a 128×512 moving tile) through
// GemmF32 on one goroutine.
func BenchmarkGemmF32Tile(bm *testing.B) {
	const m, k, n = 128, 128, 512
	a, b := benchData(512)
	c := make([]float32, m*n)
	cpu := oneThread(bm)
	for i := 0; i < bm.N; i++ {
		GemmF32(1, m, n, k, a, 1, m, b, n, 1, c, false)
	}
	reportFlops(bm, cpu, 2*float64(m*n*k))
}

// BenchmarkGemmPack measures packing one kc×nc block of B and one mc×kc
// block of A from row-major 1024×1024 matrices, in elements per second.
func BenchmarkGemmPack(bm *testing.B) {
	a, _ := benchData(1024)
	for _, kn := range gemmKernelsF32()[:1] {
		w := kn.work()
		bm.Run("B", func(bm *testing.B) {
			bp := w.packedB(kn.nr, kn.kc, 1024)
			cpu := oneThread(bm)
			for i := 0; i < bm.N; i++ {
				packB(bp, kn.nr, a, rowMajor(1024, 1024), 0, kn.kc, 0, 1024)
			}
			bm.ReportMetric(float64(kn.kc*1024)*float64(bm.N)/(threadCPU()-cpu)/1e9, "Gelem/s_cpu")
		})
		bm.Run("A", func(bm *testing.B) {
			ap := w.packedA(kn.mr, kn.mc, kn.kc)
			cpu := oneThread(bm)
			for i := 0; i < bm.N; i++ {
				packA(ap, kn.mr, a, rowMajor(1024, 1024), 0, kn.mc, 0, kn.kc)
			}
			bm.ReportMetric(float64(kn.kc*kn.mc)*float64(bm.N)/(threadCPU()-cpu)/1e9, "Gelem/s_cpu")
		})
		bm.Run("Atrans", func(bm *testing.B) {
			ap := w.packedA(kn.mr, kn.mc, kn.kc)
			cpu := oneThread(bm)
			for i := 0; i < bm.N; i++ {
				packA(ap, kn.mr, a, colMajor(1024, 1024), 0, kn.mc, 0, kn.kc)
			}
			bm.ReportMetric(float64(kn.kc*kn.mc)*float64(bm.N)/(threadCPU()-cpu)/1e9, "Gelem/s_cpu")
		})
	}
}

// oneThread locks the benchmark to its OS thread and starts both clocks.
func oneThread(bm *testing.B) float64 {
	runtime.LockOSThread()
	bm.Cleanup(runtime.UnlockOSThread)
	bm.ResetTimer()
	return threadCPU()
}

// reportFlops reports GFLOP/s over wall time and over the thread's CPU time
// since cpu (GFLOP/s_cpu: what one core gave, whatever else ran).
func reportFlops(bm *testing.B, cpu, flopsPerOp float64) {
	t := threadCPU() - cpu
	bm.ReportMetric(flopsPerOp*float64(bm.N)/bm.Elapsed().Seconds()/1e9, "GFLOP/s")
	bm.ReportMetric(flopsPerOp*float64(bm.N)/t/1e9, "GFLOP/s_cpu")
}
