package eval

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"

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
	cpu, proc := threadCPU(), procCPU()
	for i := 0; i < bm.N; i++ {
		clear(c)
		gemm(par, 1, n, n, n, a, b, c)
	}
	bm.ReportMetric(2*float64(n*n*n)*float64(bm.N)/bm.Elapsed().Seconds()/1e9, "GFLOP/s")
	if par == 1 {
		bm.ReportMetric(2*float64(n*n*n)*float64(bm.N)/(threadCPU()-cpu)/1e9, "GFLOP/s_cpu")
	} else {
		bm.ReportMetric(2*float64(n*n*n)*float64(bm.N)/(procCPU()-proc)/1e9, "GFLOP/cpu-s")
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
		if kn.microA != nil {
			packed := &gemmKernel[float32]{name: kn.name, mr: kn.mr, nr: kn.nr, kc: kn.kc, mc: kn.mc, nc: kn.nc, micro: kn.micro}
			bm.Run("f32_"+kn.name+"_packedA", func(bm *testing.B) { benchKernel(bm, packed, a, b) })
		}
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

// BenchmarkDotModules evaluates whole dot modules (operand conversion,
// GEMM, result rounding) on every core: square f32 and bf16 products and a
// batch of attention-score products.
func BenchmarkDotModules(bm *testing.B) {
	for _, tc := range []struct {
		name, ty       string
		batch, m, k, n int
	}{
		{"f32_1024", "f32", 0, 1024, 1024, 1024},
		{"bf16_1024", "bf16", 0, 1024, 1024, 1024},
		{"f32_attn_48x256x64x256", "f32", 48, 256, 64, 256},
		{"bf16_attn_48x256x64x256", "bf16", 48, 256, 64, 256},
	} {
		bm.Run(tc.name, func(bm *testing.B) {
			shape := func(r, c int) string {
				if tc.batch > 0 {
					return fmt.Sprintf("%s[%d,%d,%d]", tc.ty, tc.batch, r, c)
				}
				return fmt.Sprintf("%s[%d,%d]", tc.ty, r, c)
			}
			dn := "lhs_contracting_dims={1}, rhs_contracting_dims={0}"
			if tc.batch > 0 {
				dn = "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}"
			}
			src := fmt.Sprintf("HloModule m\n\nENTRY e {\n  a = %s parameter(0)\n  b = %s parameter(1)\n  ROOT d = %s dot(a, b), %s\n}\n",
				shape(tc.m, tc.k), shape(tc.k, tc.n), shape(tc.m, tc.n), dn)
			mod, err := hlo.ParseText([]byte(src), "dot.hlo")
			if err != nil {
				bm.Fatal(err)
			}
			nb := max(tc.batch, 1)
			args := make([]Value, 2)
			r := rand.New(rand.NewSource(1))
			for i, dims := range [][]int64{{int64(tc.m), int64(tc.k)}, {int64(tc.k), int64(tc.n)}} {
				if tc.batch > 0 {
					dims = append([]int64{int64(tc.batch)}, dims...)
				}
				x := tensor.New(dtype.F32, dims)
				for j := range x.F32() {
					x.F32()[j] = float32(r.NormFloat64())
				}
				if tc.ty == "bf16" {
					y := tensor.New(dtype.BF16, dims)
					dtype.EncodeF32(dtype.BF16, x.F32(), y.Data)
					x = y
				}
				args[i] = ArrayValue(x)
			}
			bm.ResetTimer()
			cpu := procCPU()
			for range bm.N {
				if _, err := Evaluate(mod, args, Options{}); err != nil {
					bm.Fatal(err)
				}
			}
			flops := 2 * float64(nb*tc.m*tc.n*tc.k) * float64(bm.N)
			bm.ReportMetric(flops/bm.Elapsed().Seconds()/1e9, "GFLOP/s")
			bm.ReportMetric(flops/(procCPU()-cpu)/1e9, "GFLOP/cpu-s")
		})
	}
}

// TestBF16LoopsMatchDtype checks the dot path's bf16 conversion loops
// against dtype's on every exponent, rounding ties, subnormals, infinities
// and NaNs of both signs and several payloads.
func TestBF16LoopsMatchDtype(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	var src []float32
	for e := uint32(0); e < 256; e++ {
		for _, mant := range []uint32{0, 1, 0x7fff, 0x8000, 0x8001, 0x18000, 0x17fff, 0x7fffff, 0x400000, 0x3fffff} {
			for _, sign := range []uint32{0, 1 << 31} {
				src = append(src, math.Float32frombits(sign|e<<23|mant))
			}
		}
	}
	for range 100000 {
		src = append(src, math.Float32frombits(r.Uint32()))
	}
	got, want := make([]uint16, len(src)), make([]byte, 2*len(src))
	encodeBF16(got, src)
	dtype.EncodeF32(dtype.BF16, src, want)
	for i, g := range got {
		if w := uint16(want[2*i]) | uint16(want[2*i+1])<<8; g != w {
			t.Fatalf("encode %#x: got %#x, dtype %#x", math.Float32bits(src[i]), g, w)
		}
	}
	dec, decWant := make([]float32, len(got)), make([]float32, len(got))
	decodeBF16(dec, got)
	dtype.DecodeF32(dtype.BF16, want, decWant)
	for i := range dec {
		if math.Float32bits(dec[i]) != math.Float32bits(decWant[i]) {
			t.Fatalf("decode %#x: got %#x, dtype %#x", got[i], math.Float32bits(dec[i]), math.Float32bits(decWant[i]))
		}
	}
}

// BenchmarkGemmAttnShape is one attention-score product (256×64 by 64×256)
// on one goroutine with hot operands, and the batch of 48 of them.
func BenchmarkGemmAttnShape(bm *testing.B) {
	for _, nb := range []int{1, 48} {
		bm.Run(fmt.Sprint(nb), func(bm *testing.B) {
			const m, k, n = 256, 64, 256
			r := rand.New(rand.NewSource(1))
			a, b := make([]float32, nb*m*k), make([]float32, nb*k*n)
			for i := range a {
				a[i], b[i] = r.Float32(), r.Float32()
			}
			c := make([]float32, nb*m*n)
			cpu := oneThread(bm)
			for i := 0; i < bm.N; i++ {
				clear(c)
				gemm(1, nb, m, n, k, a, b, c)
			}
			reportFlops(bm, cpu, 2*float64(nb*m*n*k))
		})
	}
}
