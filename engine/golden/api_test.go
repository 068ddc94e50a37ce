package golden

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"goldtrace/engine/dtype"
	"goldtrace/engine/eval"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func parse(t *testing.T, src string) *hlo.Module {
	t.Helper()
	m, err := hlo.ParseText([]byte(src), "test.hlo")
	if err != nil {
		t.Fatal(err)
	}
	if err := hlo.Verify(m); err != nil {
		t.Fatal(err)
	}
	return m
}

func f32s(t *tensor.Tensor) []float64 {
	out := make([]float64, t.NumElements())
	dtype.DecodeF64(t.Type, t.Data, out)
	return out
}

func TestSynthesizeInputsHeuristics(t *testing.T) {
	m := parse(t, `HloModule m
ENTRY main {
  x = f32[64] parameter(0)
  attn_scale = f32[16] parameter(1)
  causal_mask = pred[2,4,4] parameter(2)
  idx = s32[] parameter(3)
  table = f32[10] parameter(4)
  ds = f32[4] dynamic-slice(table, idx), dynamic_slice_sizes={4}
  gi = s64[5,1] parameter(5)
  g = f32[5,3] gather(table, gi), offset_dims={1}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1, slice_sizes={3}
  n = u8[100] parameter(6)
  h = bf16[8] parameter(7)
  ROOT t = (f32[4], f32[5,3]) tuple(ds, g)
}`)
	in := SynthesizeInputs(m, 42)
	leaves := ParamLeaves(m)
	if len(in) != len(leaves) {
		t.Fatalf("%d inputs for %d parameters", len(in), len(leaves))
	}
	for i, p := range leaves {
		if in[i].Type != p.Shape.Elem || !slices.Equal(in[i].Dims, p.Shape.Dims) {
			t.Errorf("input %d is %v, parameter is %s", i, in[i], hloShapeString(p.Shape))
		}
	}
	for _, v := range f32s(in[0]) {
		if v < -1 || v >= 1 {
			t.Errorf("float input %v outside [-1, 1)", v)
		}
	}
	for _, v := range f32s(in[1]) {
		if e := math.Log2(v); e != math.Trunc(e) || e < -3 || e > 3 {
			t.Errorf("scale %v is not a power of two in [1/8, 8]", v)
		}
	}
	mask := in[2].Bools()
	for k, b := range mask {
		i, j := k/4%4, k%4
		if b != (j <= i) {
			t.Errorf("mask[%d] = %v, want causal (j <= i)", k, b)
		}
	}
	if v := in[3].I32()[0]; v < 0 || v > 10-4 {
		t.Errorf("dynamic-slice start %d is out of range [0, 6]", v)
	}
	for _, v := range in[4+1].I64() { // gi
		if v < 0 || v > 10-3 {
			t.Errorf("gather index %d is out of range [0, 7]", v)
		}
	}
	distinct := map[uint8]bool{}
	for _, v := range in[6].U8() {
		if v >= 16 {
			t.Errorf("integer input %d outside [0, 16)", v)
		}
		distinct[v] = true
	}
	if len(distinct) < 8 {
		t.Errorf("integers barely vary: %v", distinct)
	}

	again := SynthesizeInputs(m, 42)
	other := SynthesizeInputs(m, 43)
	differs := false
	for i := range in {
		if !bytes.Equal(in[i].Data, again[i].Data) {
			t.Errorf("input %d differs between two runs with the same seed", i)
		}
		differs = differs || !bytes.Equal(in[i].Data, other[i].Data)
	}
	if !differs {
		t.Error("seeds 42 and 43 give identical inputs")
	}
}

// TestSynthesizeEveryType makes inputs of every element type and checks they
// are in range for the type.
func TestSynthesizeEveryType(t *testing.T) {
	var b strings.Builder
	b.WriteString("HloModule every\nENTRY main {\n")
	for i, typ := range dtype.All() {
		fmt.Fprintf(&b, "  p%d = %v[3,5] parameter(%d)\n", i, typ, i)
	}
	fmt.Fprintf(&b, "  ROOT t = () tuple()\n}\n")
	m := parse(t, b.String())
	for i, x := range SynthesizeInputs(m, 1) {
		typ := dtype.All()[i]
		if x.Type != typ || x.NumElements() != 15 {
			t.Fatalf("%v: got %v", typ, x)
		}
		if typ.IsFloat() {
			for _, v := range f32s(x) {
				if math.IsNaN(v) || math.Abs(v) > 8 {
					t.Errorf("%v: value %v", typ, v)
				}
			}
		}
	}
}

func TestRunLeavesModuleUnchanged(t *testing.T) {
	src := `HloModule m, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY main {
  x = bf16[4] parameter(0)
  c = bf16[4] constant({1.5, 2, -3, 0.25})
  ROOT a = bf16[4] add(x, c)
}`
	m := parse(t, src)
	x := SynthesizeInputs(m, 0)
	res, err := Run(m, x, Options{Upcast: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Outputs[0].Type; got != dtype.F32 {
		t.Errorf("-U output is %v, want f32", got)
	}
	if m.Entry.Root.Shape.Elem != dtype.BF16 || m.Entry.Params[0].Shape.Elem != dtype.BF16 ||
		m.Entry.Instructions[1].Literal.Tensor.Type != dtype.BF16 || len(m.InputOutputAlias) != 1 {
		t.Error("Run changed the caller's module")
	}
	if len(res.Module.InputOutputAlias) != 0 {
		t.Error("aliasing was not stripped")
	}
	if x[0].Type != dtype.BF16 {
		t.Error("Run changed the caller's input")
	}
	// The upcast sum is exact: bf16 values added in f32.
	xs := f32s(x[0])
	for i, c := range []float64{1.5, 2, -3, 0.25} {
		if got := float64(res.Outputs[0].F32()[i]); got != float64(float32(xs[i]+c)) {
			t.Errorf("element %d: %v, want %v", i, got, xs[i]+c)
		}
	}
}

// A custom-call handler that only accepts bf16 and returns (x, f32(x)) lets
// the test see that -U keeps a kernel's operand and result types.
func init() {
	eval.RegisterCustomCall("golden_test_bf16_only", func(ev *eval.Evaluator, in *hlo.Instruction, args []eval.Value) (eval.Value, error) {
		x := args[0].T
		if x.Type != dtype.BF16 {
			return eval.Value{}, fmt.Errorf("wants bf16, got %v", x)
		}
		wide := tensor.New(dtype.F32, x.Dims)
		dtype.DecodeF32(x.Type, x.Data, wide.F32())
		return eval.TupleValue(eval.ArrayValue(x), eval.ArrayValue(wide)), nil
	})
}

func TestUpcastKeepsCustomCallTypes(t *testing.T) {
	m := parse(t, `HloModule m
ENTRY main {
  x = bf16[3] parameter(0)
  y = bf16[3] multiply(x, x)
  k = (bf16[3], f32[3]) custom-call(y), custom_call_target="golden_test_bf16_only"
  a = bf16[3] get-tuple-element(k), index=0
  b = f32[3] get-tuple-element(k), index=1
  s = bf16[3] add(a, a)
  ROOT t = (bf16[3], f32[3]) tuple(s, b)
}`)
	x := tensor.New(dtype.BF16, []int64{3})
	dtype.EncodeF32(dtype.BF16, []float32{1.5, -3.25, 10.125}, x.Data)
	// 10.125² = 102.515625 needs more bits than bf16 has: -U rounds it to
	// bf16 going into the kernel, as the kernel's bf16 operand demands.
	res, err := Run(m, []*tensor.Tensor{x}, Options{Upcast: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{2 * 2.25, 2 * 10.5625, 2 * 102.5}
	for i, w := range want {
		if got := res.Outputs[0].F32()[i]; got != w {
			t.Errorf("s[%d] = %v, want %v", i, got, w)
		}
	}
	if res.Outputs[0].Type != dtype.F32 || res.Outputs[1].Type != dtype.F32 {
		t.Errorf("output types %v, %v; want f32", res.Outputs[0].Type, res.Outputs[1].Type)
	}
}

func TestInputErrors(t *testing.T) {
	m := parse(t, `HloModule m
ENTRY main {
  p = (f32[2], s32[3]) parameter(0)
  q = f16[2] parameter(1)
  ROOT a = f32[2] get-tuple-element(p), index=0
}`)
	good := SynthesizeInputs(m, 0)
	wrongType := tensor.New(dtype.F32, []int64{3})
	cases := []struct {
		name   string
		inputs []*tensor.Tensor
		opts   Options
		param  int
		want   string
	}{
		{"count", good[:2], Options{}, -1, "wrong number of inputs: expected 3, got 2"},
		{"tuple leaf dtype", []*tensor.Tensor{good[0], wrongType, good[2]}, Options{}, 0, "parameter 0 (%p) {1}: wrong dtype"},
		{"nil", []*tensor.Tensor{good[0], good[1], nil}, Options{}, 1, "parameter 1 (%q): missing"},
		{"shape", []*tensor.Tensor{good[0], good[1], tensor.New(dtype.F16, []int64{2, 1})}, Options{}, 1, "expected f16[2], got f16[2,1]"},
		{"shape even with -u", []*tensor.Tensor{good[0], good[1], tensor.New(dtype.F32, []int64{3})}, Options{UnsafeDtypeCast: true}, 1, "wrong shape"},
	}
	for _, tc := range cases {
		_, err := Run(m, tc.inputs, tc.opts)
		var ie *InputError
		if !errors.As(err, &ie) {
			t.Errorf("%s: got %v, want an InputError", tc.name, err)
			continue
		}
		if ie.Param != tc.param || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v (param %d); want param %d and %q", tc.name, err, ie.Param, tc.param, tc.want)
		}
	}
	// -u converts the value; with -U an f32 input for an f16 parameter is
	// already the legalized type.
	f32in := tensor.New(dtype.F32, []int64{2})
	for _, o := range []Options{{UnsafeDtypeCast: true}, {Upcast: true}} {
		if _, err := Run(m, []*tensor.Tensor{good[0], good[1], f32in}, o); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

func TestDeviceCount(t *testing.T) {
	m := &hlo.Module{ReplicaCount: 2, NumPartitions: 3}
	one := &hlo.Module{}
	cases := []struct {
		m    *hlo.Module
		opts Options
		want int
		err  bool
	}{
		{m, Options{}, 1, false},
		{m, Options{EmulateDevices: AllDevices}, 6, false},
		{m, Options{SPMD: true}, 1, false}, // global inputs and outputs
		{m, Options{SPMD: true, EmulateDevices: AllDevices}, 0, true},
		{m, Options{EmulateDevices: 6}, 6, false},
		{m, Options{EmulateDevices: 4}, 0, true},
		{one, Options{EmulateDevices: 4}, 4, false},
		{one, Options{EmulateDevices: -5}, 0, true},
	}
	for _, tc := range cases {
		got, err := DeviceCount(tc.m, tc.opts)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("DeviceCount(%d×%d, %+v) = %d, %v", tc.m.ReplicaCount, tc.m.NumPartitions, tc.opts, got, err)
		}
	}
}

func TestProgressReport(t *testing.T) {
	m := parse(t, twoParamModule)
	p := newProgress(m, 2)
	p.step(1, m.Entry.Instructions[0])
	p.step(1, m.Entry.Instructions[2])
	var buf bytes.Buffer
	p.report(&buf)
	out := buf.String()
	for _, want := range []string{"device 0: ", "0/3 entry instructions", "device 1: ", "2/3 entry instructions", "%s (add) in main"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress lacks %q:\n%s", want, out)
		}
	}
}

func TestUnsupportedCustomCallFailsBeforeRunning(t *testing.T) {
	m := parse(t, `HloModule m
ENTRY main {
  x = f32[2] parameter(0)
  ROOT c = f32[2] custom-call(x), custom_call_target="nope"
}`)
	_, err := Run(m, SynthesizeInputs(m, 0), Options{SaveIntermediates: true})
	var ee *EvalError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "%c") {
		t.Fatalf("got %v", err)
	}
}

// syncBuffer is a bytes.Buffer safe for the progress goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func TestRunReportsProgress(t *testing.T) {
	m := parse(t, `HloModule loop
cond {
  p = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(20000)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[8] get-tuple-element(p), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT t = (s32[], f32[8]) tuple(j, x)
}
ENTRY main {
  x = f32[8] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[8]) tuple(z, x)
  w = (s32[], f32[8]) while(t), condition=cond, body=body
  ROOT r = f32[8] get-tuple-element(w), index=1
}`)
	var buf syncBuffer
	if _, err := Run(m, SynthesizeInputs(m, 0), Options{Progress: &buf, ProgressInterval: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	buf.mu.Lock()
	out := buf.b.String()
	buf.mu.Unlock()
	if !strings.Contains(out, "entry instructions") || !strings.Contains(out, "evaluated), at %") {
		t.Errorf("no progress line:\n%s", out)
	}
}

// With ConsumeInputs, Run clears the caller's inputs and lets each go after
// its last use, with the outputs of a run that keeps them: a parameter
// passed through to the result still comes out as a copy of its own, and
// the storage the module's intermediates release is reused correctly.
func TestConsumeInputsKeepsResults(t *testing.T) {
	m := parse(t, `HloModule m
ENTRY main {
  x = f32[256,512] parameter(0)
  y = f32[256,512] parameter(1)
  a = f32[256,512] add(x, y)
  e = f32[256,512] exponential(a)
  s = f32[256,512] subtract(e, y)
  m = f32[256,512] multiply(s, s)
  ROOT t = (f32[256,512], f32[256,512], f32[256,512]) tuple(m, x, a)
}`)
	in := SynthesizeInputs(m, 7)
	keep := []*tensor.Tensor{in[0].Clone(), in[1].Clone()}
	want, err := Run(m, []*tensor.Tensor{keep[0].Clone(), keep[1].Clone()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Run(m, in, Options{ConsumeInputs: true})
	if err != nil {
		t.Fatal(err)
	}
	if in[0] != nil || in[1] != nil {
		t.Fatalf("the consumed inputs were not cleared")
	}
	for i := range want.Outputs {
		if !bytes.Equal(got.Outputs[i].Data, want.Outputs[i].Data) {
			t.Fatalf("output %d differs when the inputs are consumed", i)
		}
	}
	if !bytes.Equal(got.Outputs[1].Data, keep[0].Data) {
		t.Fatalf("the passed-through input changed")
	}
}
