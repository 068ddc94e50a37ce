package sim

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
	"goldtrace/internal/pyref"
	"goldtrace/kernel/ir/irpb"
)

// numpyBest times a numpy statement (best of reps, after setup) in the same
// run as the benchmark; 0 when numpy is missing.
func numpyBest(b *testing.B, setup, stmt string, reps int) time.Duration {
	if pyref.Missing("numpy") != nil {
		return 0
	}
	code := setup + `
import time
best = 1e9
for _ in range(` + strconv.Itoa(reps) + `):
    t = time.perf_counter(); ` + stmt + `; best = min(best, time.perf_counter() - t)
print(best)`
	out, err := pyref.Command("-c", code).Output()
	if err != nil {
		b.Logf("numpy timing failed: %v", err)
		return 0
	}
	s, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil {
		return 0
	}
	return time.Duration(s * 1e9)
}

func benchKernel(b *testing.B, k *irpb.Kernel, ins []*tensor.Tensor, np time.Duration) {
	opts := Options{}
	if _, err := Run(k, ins, opts); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	best := time.Duration(1 << 62)
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := Run(k, ins, opts); err != nil {
			b.Fatal(err)
		}
		best = min(best, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(float64(best.Microseconds())/1000, "best-ms")
	if np > 0 {
		b.ReportMetric(float64(np.Microseconds())/1000, "numpy-ms")
		b.ReportMetric(float64(best)/float64(np), "x-numpy")
	}
}

// BenchmarkMatmulKernel: 1024³ bf16 tiled matmul (128×128 stationary,
// 128×512 moving, PSUM accumulation over K) against numpy's f32 matmul.
func BenchmarkMatmulKernel(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	k := matmulKernel(1024, 1024, 1024, dtype.BF16, dtype.BF16)
	ins := []*tensor.Tensor{randTensor(r, dtype.BF16, -1, 1, 1024, 1024), randTensor(r, dtype.BF16, -1, 1, 1024, 1024)}
	np := numpyBest(b, "import numpy as np\na=np.random.rand(1024,1024).astype(np.float32)\nb=np.random.rand(1024,1024).astype(np.float32)", "a.T @ b", 10)
	benchKernel(b, k, ins, np)
}

// BenchmarkSoftmaxKernel: 4096×1024 f32 softmax in 128-row tiles against
// numpy's row softmax.
func BenchmarkSoftmaxKernel(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 2))
	k := softmaxKernel(4096, 1024, dtype.F32)
	ins := []*tensor.Tensor{randTensor(r, dtype.F32, -5, 5, 4096, 1024)}
	np := numpyBest(b, "import numpy as np\nx=np.random.rand(4096,1024).astype(np.float32)",
		"e = np.exp(x - x.max(axis=1, keepdims=True)); y = e * (1 / e.sum(axis=1, keepdims=True))", 10)
	benchKernel(b, k, ins, np)
}
