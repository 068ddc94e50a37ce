package sim

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
	"goldtrace/kernel/ir/irpb"
)

// FuzzRun feeds arbitrary kernel protos (seeded with the test kernels) to
// Run with zero-filled inputs of the declared shapes: it must return outputs
// or an error, never panic or hang.
func FuzzRun(f *testing.F) {
	for _, k := range []*irpb.Kernel{softmaxKernel(128, 64, dtype.F32), matmulKernel(128, 128, 512, dtype.BF16, dtype.F32), ccFuzzSeed()} {
		b, err := proto.Marshal(k)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	defer func(e, t int64) { MaxInstructionExecutions, MaxTileElements = e, t }(MaxInstructionExecutions, MaxTileElements)
	MaxInstructionExecutions, MaxTileElements = 1<<12, 1<<16
	f.Fuzz(func(t *testing.T, data []byte) {
		var k irpb.Kernel
		if proto.Unmarshal(data, &k) != nil {
			return
		}
		var ins []*tensor.Tensor
		for _, id := range k.Inputs {
			if id < 0 || int(id) >= len(k.Tensors) || k.Tensors[id] == nil {
				return
			}
			tt := k.Tensors[id]
			dt := dtype.Type(tt.Dtype)
			if tensor.CheckShape(dt, tt.Shape) != nil || tensor.NumElements(tt.Shape) > 1<<16 {
				return
			}
			ins = append(ins, tensor.New(dt, tt.Shape))
		}
		var total int64
		for _, tt := range k.Tensors {
			if tt != nil {
				total += max(tensor.NumElements(tt.Shape), 0)
			}
		}
		if total > 1<<18 || len(k.Grid) > 2 {
			return
		}
		for _, g := range k.Grid {
			if g > 4 {
				return
			}
		}
		if err := safeCall(func() error { _, err := Run(&k, ins, Options{Parallel: 2}); return err }); err != nil {
			if e, ok := err.(*Error); ok && e.Rule == "runtime" && len(e.Msg) > 8 && e.Msg[:8] == "internal" {
				t.Fatalf("simulator panicked: %v", err)
			}
		}
	})
}

// ccFuzzSeed is a kernel of device collectives (run on one device: rank 0).
func ccFuzzSeed() *irpb.Kernel {
	b := newK("cc_seed", 2)
	x := b.param("x", dtype.F32, 4, 8)
	o := b.output("o", dtype.F32, 4, 8)
	g := b.output("g", dtype.F32, 4, 8)
	xs := b.sbuf("xs", dtype.F32, 4, 8)
	b.alloc(xs)
	b.dma(b.full(xs), b.full(x))
	b.op("cc_all_reduce", dts(b.full(xs)), dts(b.full(xs)), attrs{"op": S("maximum"), "replica_groups": Ints(0), "group_size": I(1)})
	b.dma(b.full(o), b.full(xs))
	b.op("cc_all_gather", dts(b.full(g)), dts(b.full(x)), attrs{"collective_dim": I(1)})
	b.op("cc_collective_permute", dts(b.full(o)), dts(b.full(x)), attrs{"source_target_pairs": Ints(0, 0)})
	return b.kernel()
}
