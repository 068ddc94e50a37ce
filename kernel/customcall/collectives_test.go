package customcall

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"goldtrace/engine/golden"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
	"goldtrace/kernel/ir/irpb"
)

// Kernels with collectives inside multi-device goldens. Expected values are
// float32 arithmetic done here.

// rowBlock is rows [pid*p, pid*p+p) of a (n*p, f) tensor: program instance
// pid's block.
func (b *kkit) rowBlock(t int32, p int64) *irpb.Access {
	f := b.k.Tensors[t].Shape[1]
	return &irpb.Access{Tensor: t, Shape: []int64{p, f}, Index: []*irpb.Affine{
		{Terms: []*irpb.Term{{Kind: irpb.TermKind_PROGRAM_ID, Id: 0, Coef: p}, {Kind: irpb.TermKind_TILE_AXIS, Id: 0, Coef: 1}}},
		{Terms: []*irpb.Term{{Kind: irpb.TermKind_TILE_AXIS, Id: 1, Coef: 1}}},
	}}
}

func (b *kkit) instAcc(op string, dst, src []*irpb.Access, attrs map[string]*irpb.Attr) {
	b.line++
	b.k.Body = append(b.k.Body, &irpb.Stmt{Kind: &irpb.Stmt_Inst{Inst: &irpb.Instruction{Op: op, Dst: dst, Src: src, Attrs: attrs, Loc: &irpb.Loc{Line: b.line + 1}}}})
}

// gridSumKernel launches n program instances; instance i loads block i of
// x (n*p, f), all_reduces it (add) across the launch and stores the sum
// as block i of the output: every block is x_0 + x_1 + ... + x_{n-1}.
func gridSumKernel(n, p, f int64) *irpb.Kernel {
	b := newKKit("grid_sum")
	b.k.Grid = []int64{n}
	x := b.param("x", n*p, f)
	o := b.output("out", n*p, f)
	xs, rs := b.sbuf("xs", p, f), b.sbuf("rs", p, f)
	b.instAcc("dma", []*irpb.Access{b.full(xs)}, []*irpb.Access{b.rowBlock(x, p)}, nil)
	b.instAcc("all_reduce", []*irpb.Access{b.full(rs)}, []*irpb.Access{b.full(xs)}, map[string]*irpb.Attr{"op": {Value: &irpb.Attr_S{S: "add"}}})
	b.instAcc("dma", []*irpb.Access{b.rowBlock(o, p)}, []*irpb.Access{b.full(rs)}, nil)
	return b.k
}

// runGolden runs an HLO module through the golden driver on every device
// it declares, each device with its own inputs (device-major).
func runGolden(t *testing.T, text string, inputs ...*tensor.Tensor) (*golden.Result, error) {
	t.Helper()
	m, err := hlo.ParseText([]byte(text), "kernel_coll_test.hlo")
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	return golden.Run(m, inputs, golden.Options{EmulateDevices: golden.AllDevices})
}

// A launch-local all_reduce (nl.all_reduce across the program instances of
// one launch) runs per device: each emulated device runs its own launch on
// its own operand, and the module's own all-reduce then sums across devices.
func TestGoldenKernelLaunchCollectivesPerDevice(t *testing.T) {
	const devices, n, p, f = 4, 2, 8, 16
	cfg := encodeKernel(t, gridSumKernel(n, p, f), nil)
	text := fmt.Sprintf(`HloModule m, replica_count=%d
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  a = f32[16,16]{1,0} parameter(0)
  kern = f32[16,16]{1,0} custom-call(a), custom_call_target="AwsNeuronCustomNativeKernel", custom_call_has_side_effect=true, backend_config="%s"
  across = f32[16,16]{1,0} all-reduce(kern), replica_groups={}, to_apply=add
  ROOT t = (f32[16,16]{1,0}, f32[16,16]{1,0}) tuple(kern, across)
}`, devices, cfg)
	r := rand.New(rand.NewPCG(21, 22))
	xs := make([][]float32, devices)
	var ins []*tensor.Tensor
	for d := range xs {
		xs[d] = randF32(r, n*p*f)
		ins = append(ins, f32Tensor(t, xs[d], n*p, f))
	}
	res, err := runGolden(t, text, ins...)
	if err != nil {
		t.Fatalf("golden: %v", err)
	}
	if res.Devices != devices || res.OutputsPerDevice != 2 {
		t.Fatalf("devices %d, outputs per device %d", res.Devices, res.OutputsPerDevice)
	}
	local := make([][]float32, devices)
	for d, x := range xs {
		half := make([]float32, p*f)
		for i := range half {
			half[i] = x[i] + x[p*f+i]
		}
		local[d] = append(append([]float32{}, half...), half...)
	}
	across := make([]float32, n*p*f)
	for i := range across {
		for d := range devices {
			across[i] += local[d][i]
		}
	}
	for d := range devices {
		wantF32(t, fmt.Sprintf("device %d kernel", d), res.Outputs[2*d], local[d])
		wantF32(t, fmt.Sprintf("device %d all-reduce", d), res.Outputs[2*d+1], across)
	}
}
