package sim

import (
	"math/rand/v2"
	"os"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
	"goldtrace/kernel/ir"
)

// BenchmarkPBFile runs a serialized kernel from $KSIM_PB (a development aid
// for profiling kernels traced in Python; skipped without the variable).
func BenchmarkPBFile(b *testing.B) {
	path := os.Getenv("KSIM_PB")
	if path == "" {
		b.Skip("KSIM_PB not set")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	k, err := ir.Unmarshal(data)
	if err != nil {
		b.Fatal(err)
	}
	p, err := compile(k)
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range loopsOfProg(p.body) {
		b.Logf("loop var %d [%d,%d) parallel=%v locals=%v", l.v, l.start, l.stop, l.parallel, l.locals)
	}
	r := rand.New(rand.NewPCG(1, 1))
	var ins []*tensor.Tensor
	for _, id := range k.Inputs {
		t := k.Tensors[id]
		ins = append(ins, randTensor(r, dtype.Type(t.Dtype), -1, 1, t.Shape...))
	}
	benchKernel(b, k, ins, 0, 0)
}
