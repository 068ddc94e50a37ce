package sim

import (
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
	"goldtrace/kernel/ir/irpb"
)

// BenchmarkInstructionOverhead: a sequential loop of small (128,4)
// instructions; reports ns per executed instruction.
func BenchmarkInstructionOverhead(b *testing.B) {
	k := newK("small")
	x := k.param("x", dtype.F32, 128, 4)
	o := k.output("o", dtype.F32, 128, 4)
	s := k.sbuf("s", dtype.F32, 128, 4)
	k.alloc(s)
	k.dma(k.full(s), k.full(x))
	k.loop(irpb.LoopKind_SEQUENTIAL, 0, 10000, 1, func(i int) {
		k.op("tensor_scalar", dts(k.full(s)), dts(k.full(s)), attrs{"op0": S("multiply"), "scalar0": F(1.0001)})
		k.op("tensor_tensor", dts(k.full(s)), dts(k.full(s), k.full(s)), attrs{"op": S("maximum")})
	})
	k.dma(k.full(o), k.full(s))
	kern := k.kernel()
	in := tensor.New(dtype.F32, []int64{128, 4})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Run(kern, []*tensor.Tensor{in}, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/20000, "ns/instruction")
}
