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
	bm.ResetTimer()
	for i := 0; i < bm.N; i++ {
		clear(c)
		gemm(par, 1, n, n, n, a, b, c)
	}
	bm.ReportMetric(2*float64(n*n*n)*float64(bm.N)/bm.Elapsed().Seconds()/1e9, "GFLOP/s")
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
	bm.ResetTimer()
	for i := 0; i < bm.N; i++ {
		clear(c)
		kn.run(1, 1, n, n, n, a, rowMajor(n, n), b, rowMajor(n, n), c)
	}
	bm.ReportMetric(2*float64(n*n*n)*float64(bm.N)/bm.Elapsed().Seconds()/1e9, "GFLOP/s")
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
	bm.ResetTimer()
	for i := 0; i < bm.N; i++ {
		for range reps {
			kn.micro(kc, a, b, c, kn.nr)
		}
	}
	bm.ReportMetric(2*float64(kn.mr*kn.nr*kc*reps)*float64(bm.N)/bm.Elapsed().Seconds()/1e9, "GFLOP/s")
}
