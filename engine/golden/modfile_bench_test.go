package golden

import (
	"fmt"
	"math/rand"
	"os"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/npy"
	"goldtrace/engine/tensor"
)

// BenchmarkModuleFile runs the HLO text module named by GOLDTRACE_BENCH_HLO
// the way infergoldens does (legalized, then evaluated) on normal(0, 0.1)
// f32, bf16 and f16 inputs (other types zero), for profiling real modules:
//
//	GOLDTRACE_BENCH_HLO=m.hlo go test -run '^$' -bench ModuleFile -cpuprofile cpu.prof ./engine/golden/
//
// With GOLDTRACE_BENCH_NPY=dir, parameter i is read from dir/in<i>.npy
// instead (for integer modules, whose zero inputs would take other paths).
func BenchmarkModuleFile(bm *testing.B) {
	path := os.Getenv("GOLDTRACE_BENCH_HLO")
	if path == "" {
		bm.Skip("GOLDTRACE_BENCH_HLO is not set")
	}
	src, err := os.ReadFile(path)
	if err != nil {
		bm.Fatal(err)
	}
	m, err := hlo.ParseText(src, path)
	if err != nil {
		bm.Fatal(err)
	}
	r := rand.New(rand.NewSource(1))
	var args []*tensor.Tensor
	npyDir := os.Getenv("GOLDTRACE_BENCH_NPY")
	for i, p := range m.Entry.Params {
		if npyDir != "" {
			x, err := npy.ReadFile(fmt.Sprintf("%s/in%d.npy", npyDir, i))
			if err != nil {
				bm.Fatal(err)
			}
			args = append(args, x)
			continue
		}
		x := tensor.New(p.Shape.Elem, p.Shape.Dims)
		switch p.Shape.Elem {
		case dtype.F32:
			for i := range x.F32() {
				x.F32()[i] = float32(r.NormFloat64() * 0.1)
			}
		case dtype.BF16, dtype.F16:
			v := make([]float32, x.NumElements())
			for i := range v {
				v[i] = float32(r.NormFloat64() * 0.1)
			}
			dtype.EncodeF32(p.Shape.Elem, v, x.Data)
		}
		args = append(args, x)
	}
	bm.ResetTimer()
	for range bm.N {
		if _, err := Run(m, args, Options{}); err != nil {
			bm.Fatal(err)
		}
	}
}
