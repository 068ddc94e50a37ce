package customcall

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/eval"
	"goldtrace/engine/golden"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
	"goldtrace/kernel/config"
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

func attrS(s string) *irpb.Attr { return &irpb.Attr{Value: &irpb.Attr_S{S: s}} }
func attrI(i int64) *irpb.Attr  { return &irpb.Attr{Value: &irpb.Attr_I{I: i}} }
func attrInts(v ...int64) *irpb.Attr {
	return &irpb.Attr{Value: &irpb.Attr_Ints{Ints: &irpb.IntList{V: v}}}
}

// deviceCollectivesKernel applies each device collective to x (p, f) in
// groups {0,2} and {1,3}, HBM to HBM, and a 4-cycle permute.
func deviceCollectivesKernel(p, f int64) *irpb.Kernel {
	b := newKKit("device_collectives")
	x := b.param("x", p, f)
	sum, gath, scat, perm := b.output("sum", p, f), b.output("gathered", 2*p, f), b.output("scattered", p/2, f), b.output("permuted", p, f)
	groups := map[string]*irpb.Attr{"replica_groups": attrInts(0, 2, 1, 3), "group_size": attrI(2)}
	with := func(extra map[string]*irpb.Attr) map[string]*irpb.Attr {
		m := map[string]*irpb.Attr{}
		for k, v := range groups {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	b.inst("cc_all_reduce", []int32{sum}, []int32{x}, with(map[string]*irpb.Attr{"op": attrS("add")}))
	b.inst("cc_all_gather", []int32{gath}, []int32{x}, with(map[string]*irpb.Attr{"collective_dim": attrI(0)}))
	b.inst("cc_reduce_scatter", []int32{scat}, []int32{x}, with(map[string]*irpb.Attr{"op": attrS("add"), "collective_dim": attrI(0)}))
	b.inst("cc_collective_permute", []int32{perm}, []int32{x}, map[string]*irpb.Attr{"source_target_pairs": attrInts(0, 1, 1, 2, 2, 3, 3, 0)})
	return b.k
}

// A kernel's device collectives meet the other emulated devices and give
// bit for bit what the module's own HLO collectives give on the same
// operands (the evaluator's XLA:CPU semantics: sums from +0 in group order).
func TestGoldenKernelDeviceCollectivesMatchHLO(t *testing.T) {
	const devices, p, f = 4, 8, 16
	cfg := encodeKernel(t, deviceCollectivesKernel(p, f), func(c *config.Config) { c.ResultIsSequence = true })
	text := fmt.Sprintf(`HloModule m, replica_count=%d
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  a = f32[8,16]{1,0} parameter(0)
  kern = (f32[8,16]{1,0}, f32[16,16]{1,0}, f32[4,16]{1,0}, f32[8,16]{1,0}) custom-call(a), custom_call_target="AwsNeuronCustomNativeKernel", custom_call_has_side_effect=true, backend_config="%s"
  ar = f32[8,16]{1,0} all-reduce(a), replica_groups={{0,2},{1,3}}, to_apply=add
  ag = f32[16,16]{1,0} all-gather(a), replica_groups={{0,2},{1,3}}, dimensions={0}
  rs = f32[4,16]{1,0} reduce-scatter(a), replica_groups={{0,2},{1,3}}, dimensions={0}, to_apply=add
  cp = f32[8,16]{1,0} collective-permute(a), source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  k0 = f32[8,16]{1,0} get-tuple-element(kern), index=0
  k1 = f32[16,16]{1,0} get-tuple-element(kern), index=1
  k2 = f32[4,16]{1,0} get-tuple-element(kern), index=2
  k3 = f32[8,16]{1,0} get-tuple-element(kern), index=3
  ROOT t = (f32[8,16]{1,0}, f32[16,16]{1,0}, f32[4,16]{1,0}, f32[8,16]{1,0}, f32[8,16]{1,0}, f32[16,16]{1,0}, f32[4,16]{1,0}, f32[8,16]{1,0}) tuple(k0, k1, k2, k3, ar, ag, rs, cp)
}`, devices, cfg)
	r := rand.New(rand.NewPCG(31, 32))
	var ins []*tensor.Tensor
	xs := make([][]float32, devices)
	for d := range devices {
		xs[d] = randF32(r, p*f)
		xs[d][0] = float32(math.Copysign(0, -1))
		ins = append(ins, f32Tensor(t, xs[d], p, f))
	}
	res, err := runGolden(t, text, ins...)
	if err != nil {
		t.Fatalf("golden: %v", err)
	}
	for d := range devices {
		outs := res.Outputs[8*d : 8*d+8]
		for k := range 4 {
			wantF32(t, fmt.Sprintf("device %d, collective %d vs HLO", d, k), outs[k], outs[4+k].F32())
		}
		// And the arithmetic itself: the group of d is {d%2, d%2+2}.
		g := []int{d % 2, d%2 + 2}
		sum := make([]float32, p*f) // from +0: a sum of -0s is +0
		for i := range sum {
			sum[i] = sum[i] + xs[g[0]][i] + xs[g[1]][i]
		}
		wantF32(t, fmt.Sprintf("device %d sum", d), outs[0], sum)
		wantF32(t, fmt.Sprintf("device %d gathered", d), outs[1], append(append([]float32{}, xs[g[0]]...), xs[g[1]]...))
		wantF32(t, fmt.Sprintf("device %d permuted", d), outs[3], xs[(d+3)%4])
	}
}

// Outside a multi-device golden, a kernel collective whose group needs other
// devices is an error naming the custom-call and the instruction.
func TestGoldenKernelDeviceCollectivesNeedTheirDevices(t *testing.T) {
	cfg := encodeKernel(t, deviceCollectivesKernel(8, 16), func(c *config.Config) { c.ResultIsSequence = true })
	text := fmt.Sprintf(`HloModule m
ENTRY e {
  a = f32[8,16]{1,0} parameter(0)
  ROOT kern = (f32[8,16]{1,0}, f32[16,16]{1,0}, f32[4,16]{1,0}, f32[8,16]{1,0}) custom-call(a), custom_call_target="AwsNeuronCustomNativeKernel", backend_config="%s"
}`, cfg)
	_, err := evalText(t, text, eval.Options{}, f32Tensor(t, make([]float32, 128), 8, 16))
	if err == nil || !strings.Contains(err.Error(), "%kern") || !strings.Contains(err.Error(), "cc_all_reduce") || !strings.Contains(err.Error(), "names device 2, but the kernel runs on one device") {
		t.Fatalf("one device: %v", err)
	}
	// A module of 4 replicas evaluated as one device (no exchange): the
	// other devices' data is not there.
	four := strings.Replace(text, "HloModule m", "HloModule m, replica_count=4", 1)
	_, err = evalText(t, four, eval.Options{}, f32Tensor(t, make([]float32, 128), 8, 16))
	if err == nil || !strings.Contains(err.Error(), "needs device 2's data") {
		t.Fatalf("four replicas, one evaluated: %v", err)
	}
}

// Integer reductions wrap in the type's width, as XLA's do: an s32 kernel
// all_reduce and the module's s32 all-reduce agree on sums that overflow.
func TestGoldenKernelIntegerCollectiveWraps(t *testing.T) {
	b := newKKit("int_sum")
	x := b.param("x", 4, 8)
	o := b.output("sum", 4, 8)
	m := b.output("max", 4, 8)
	for _, id := range []int32{x, o, m} {
		b.k.Tensors[id].Dtype = int32(dtype.S32)
	}
	b.inst("cc_all_reduce", []int32{o}, []int32{x}, map[string]*irpb.Attr{"op": attrS("add")})
	b.inst("cc_all_reduce", []int32{m}, []int32{x}, map[string]*irpb.Attr{"op": attrS("maximum")})
	cfg := encodeKernel(t, b.k, func(c *config.Config) { c.ResultIsSequence = true })
	text := fmt.Sprintf(`HloModule m, replica_count=3
add {
  x = s32[] parameter(0)
  y = s32[] parameter(1)
  ROOT s = s32[] add(x, y)
}
max {
  x = s32[] parameter(0)
  y = s32[] parameter(1)
  ROOT s = s32[] maximum(x, y)
}
ENTRY e {
  a = s32[4,8]{1,0} parameter(0)
  kern = (s32[4,8]{1,0}, s32[4,8]{1,0}) custom-call(a), custom_call_target="AwsNeuronCustomNativeKernel", custom_call_has_side_effect=true, backend_config="%s"
  s = s32[4,8]{1,0} all-reduce(a), replica_groups={}, to_apply=add
  m = s32[4,8]{1,0} all-reduce(a), replica_groups={}, to_apply=max
  k0 = s32[4,8]{1,0} get-tuple-element(kern), index=0
  k1 = s32[4,8]{1,0} get-tuple-element(kern), index=1
  ROOT t = (s32[4,8]{1,0}, s32[4,8]{1,0}, s32[4,8]{1,0}, s32[4,8]{1,0}) tuple(k0, k1, s, m)
}`, cfg)
	r := rand.New(rand.NewPCG(41, 42))
	var ins []*tensor.Tensor
	want := make([]int32, 32)
	for range 3 {
		in := tensor.New(dtype.S32, []int64{4, 8})
		for i := range in.I32() {
			v := int32(r.Uint32())
			if i < 4 {
				v = math.MaxInt32 - int32(i) // overflows when summed
			}
			in.I32()[i] = v
			want[i] += v // Go's int32 arithmetic wraps
		}
		ins = append(ins, in)
	}
	res, err := runGolden(t, text, ins...)
	if err != nil {
		t.Fatalf("golden: %v", err)
	}
	for d := range 3 {
		outs := res.Outputs[4*d : 4*d+4]
		for k := range 2 {
			if !bytes.Equal(outs[k].Data, outs[2+k].Data) {
				t.Fatalf("device %d: kernel %d %v, HLO %v", d, k, outs[k].I32(), outs[2+k].I32())
			}
		}
		for i, v := range outs[0].I32() {
			if v != want[i] {
				t.Fatalf("device %d sum[%d] = %d, want %d", d, i, v, want[i])
			}
		}
	}
}

// What stays refused: a launch of several program instances that mixes
// nl.all_reduce (instances running together) with device collectives
// (instances in program order) — an UnsupportedError naming the custom-call,
// never a guess.
func TestGoldenKernelMixedCollectivesRefused(t *testing.T) {
	k := gridSumKernel(2, 8, 16)
	b := &kkit{k: k, line: 10}
	rs := int32(len(k.Tensors)) - 1 // the all_reduce result tile
	b.instAcc("cc_all_reduce", []*irpb.Access{b.full(rs)}, []*irpb.Access{b.full(rs)}, map[string]*irpb.Attr{"op": attrS("add")})
	// the new instruction must come before the final store
	body := k.Body
	k.Body = append(append(append([]*irpb.Stmt{}, body[:2]...), body[3]), body[2])
	cfg := encodeKernel(t, k, nil)
	text := fmt.Sprintf(`HloModule m, replica_count=2
ENTRY e {
  a = f32[16,16]{1,0} parameter(0)
  ROOT kern = f32[16,16]{1,0} custom-call(a), custom_call_target="AwsNeuronCustomNativeKernel", custom_call_has_side_effect=true, backend_config="%s"
}`, cfg)
	_, err := runGolden(t, text, f32Tensor(t, make([]float32, 256), 16, 16))
	var ue *eval.UnsupportedError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "%kern") || !strings.Contains(err.Error(), "mixes nl.all_reduce across its 2 program instances with device collectives") {
		t.Fatalf("mixed collectives: %v", err)
	}
}

// Narrow floats: a kernel all_reduce gives what the module's all-reduce of
// the same type gives (XLA:CPU: bf16 promoted to f32 and rounded once, f16
// and the 8-bit floats summed in f16 steps).
func TestGoldenKernelNarrowFloatCollectivesMatchHLO(t *testing.T) {
	const devices = 5
	for _, dt := range []dtype.Type{dtype.BF16, dtype.F16, dtype.F8E5M2, dtype.F8E4M3FN} {
		b := newKKit("narrow_sum")
		x := b.param("x", 4, 8)
		o := b.output("sum", 4, 8)
		m := b.output("max", 4, 8)
		for _, id := range []int32{x, o, m} {
			b.k.Tensors[id].Dtype = int32(dt)
		}
		b.inst("cc_all_reduce", []int32{o}, []int32{x}, map[string]*irpb.Attr{"op": attrS("add")})
		b.inst("cc_all_reduce", []int32{m}, []int32{x}, map[string]*irpb.Attr{"op": attrS("maximum")})
		cfg := encodeKernel(t, b.k, func(c *config.Config) { c.ResultIsSequence = true })
		ty := dt.String()
		text := fmt.Sprintf(`HloModule m, replica_count=%d
add {
  x = %[2]s[] parameter(0)
  y = %[2]s[] parameter(1)
  ROOT s = %[2]s[] add(x, y)
}
max {
  x = %[2]s[] parameter(0)
  y = %[2]s[] parameter(1)
  ROOT s = %[2]s[] maximum(x, y)
}
ENTRY e {
  a = %[2]s[4,8]{1,0} parameter(0)
  kern = (%[2]s[4,8]{1,0}, %[2]s[4,8]{1,0}) custom-call(a), custom_call_target="AwsNeuronCustomNativeKernel", custom_call_has_side_effect=true, backend_config="%[3]s"
  s = %[2]s[4,8]{1,0} all-reduce(a), replica_groups={}, to_apply=add
  m = %[2]s[4,8]{1,0} all-reduce(a), replica_groups={}, to_apply=max
  k0 = %[2]s[4,8]{1,0} get-tuple-element(kern), index=0
  k1 = %[2]s[4,8]{1,0} get-tuple-element(kern), index=1
  ROOT t = (%[2]s[4,8]{1,0}, %[2]s[4,8]{1,0}, %[2]s[4,8]{1,0}, %[2]s[4,8]{1,0}) tuple(k0, k1, s, m)
}`, devices, ty, cfg)
		r := rand.New(rand.NewPCG(51, uint64(dt)))
		var ins []*tensor.Tensor
		for range devices {
			in := tensor.New(dt, []int64{4, 8})
			dtype.EncodeF32(dt, randF32(r, 32), in.Data)
			ins = append(ins, in)
		}
		res, err := runGolden(t, text, ins...)
		if err != nil {
			t.Fatalf("%v: golden: %v", dt, err)
		}
		for d := range devices {
			outs := res.Outputs[4*d : 4*d+4]
			for k := range 2 {
				if !bytes.Equal(outs[k].Data, outs[2+k].Data) {
					t.Fatalf("%v device %d output %d: kernel %x, HLO %x", dt, d, k, outs[k].Data, outs[2+k].Data)
				}
			}
		}
	}
}

// Devices that reach different device collectives at one exchange fail
// (each contribution carries its instruction's site id) instead of mixing
// their data.
func TestEvalDevicesRejectsMismatchedSites(t *testing.T) {
	in := &hlo.Instruction{Name: "kern", Opcode: "custom-call"}
	other := func(site int) func(*hlo.Instruction, []int64, eval.Value) ([]eval.Value, error) {
		return func(_ *hlo.Instruction, group []int64, v eval.Value) ([]eval.Value, error) {
			o := tensor.New(dtype.F64, v.T.Dims)
			copy(o.F64(), v.T.F64())
			o.F64()[0] = float64(site)
			return []eval.Value{v, eval.ArrayValue(o)}, nil
		}
	}
	for _, c := range []struct {
		site int
		want string
	}{
		{0, ""},
		{3, `device 1 reached device collective #3 of kernel "k" where device 0 reached #0`},
	} {
		ev := eval.New(nil, eval.Options{ReplicaCount: 2, Exchange: other(c.site)})
		d := &evalDevices{ev: ev, in: in, name: "k", grid: ev.Grid()}
		got, err := d.Exchange(0, []float64{1.5, 2.5})
		if c.want == "" {
			if err != nil || len(got) != 2 || got[1][1] != 2.5 {
				t.Fatalf("matching sites: %v %v", got, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("site %d: %v", c.site, err)
		}
	}
}
