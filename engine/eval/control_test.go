package eval

import (
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func f32s(vals ...float32) *tensor.Tensor {
	t := tensor.New(dtype.F32, []int64{int64(len(vals))})
	copy(t.F32(), vals)
	return t
}

func runText(t *testing.T, src string, args ...*tensor.Tensor) (Value, error) {
	t.Helper()
	m, err := hlo.ParseText([]byte(src), "test.hlo")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	var vs []Value
	for _, a := range args {
		vs = append(vs, ArrayValue(a))
	}
	return Evaluate(m, vs, Options{})
}

// Single-device collectives follow XLA's semantics for one participant: the
// operand itself, except collective-permute, whose untargeted device gets zeros.
func TestSingleDeviceCollectives(t *testing.T) {
	const src = `HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[3] parameter(0)
  ar = f32[3] all-reduce(p), replica_groups={}, to_apply=add
  ag = f32[3] all-gather(p), dimensions={0}, replica_groups={{0}}
  self = f32[3] collective-permute(p), source_target_pairs={{0,0}}
  none = f32[3] collective-permute(p), source_target_pairs={{1,0}}
  ars = f32[3] all-reduce-start(p), replica_groups={}, to_apply=add
  ard = f32[3] all-reduce-done(ars)
  ROOT t = (f32[3], f32[3], f32[3], f32[3], f32[3]) tuple(ar, ag, self, none, ard)
}`
	v, err := runText(t, src, f32s(1, -2, 3))
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float32{{1, -2, 3}, {1, -2, 3}, {1, -2, 3}, {0, 0, 0}, {1, -2, 3}}
	if len(v.Leaves()) != len(want) {
		t.Fatalf("%d outputs, want %d", len(v.Leaves()), len(want))
	}
	for i, l := range v.Leaves() {
		if len(l.F32()) != len(want[i]) {
			t.Fatalf("output %d = %v, want %v", i, l.F32(), want[i])
		}
		for k, x := range l.F32() {
			if x != want[i][k] {
				t.Errorf("output %d = %v, want %v", i, l.F32(), want[i])
				break
			}
		}
	}
}

// A bitcast between layouts reinterprets the physical buffer: f32[2,3]{0,1}
// (column-major) bitcast to f32[3,2]{1,0} is the logical transpose.
func TestBitcastUsesLayouts(t *testing.T) {
	const src = `HloModule m
ENTRY e {
  p = f32[2,3]{0,1} parameter(0)
  ROOT b = f32[3,2]{1,0} bitcast(p)
}`
	x := tensor.New(dtype.F32, []int64{2, 3})
	copy(x.F32(), []float32{1, 2, 3, 4, 5, 6})
	v, err := runText(t, src, x)
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{1, 4, 2, 5, 3, 6}
	if len(v.T.F32()) != len(want) || !equalDims(v.T.Dims, []int64{3, 2}) {
		t.Fatalf("got %v%v, want f32[3,2] %v", v.T.Dims, v.T.F32(), want)
	}
	for i, g := range v.T.F32() {
		if g != want[i] {
			t.Fatalf("got %v, want %v", v.T.F32(), want)
		}
	}
}

// A panic inside an op function becomes an error naming the instruction.
func TestOpPanicBecomesError(t *testing.T) {
	Register("test-panic", func(*Evaluator, *hlo.Instruction, []Value) (Value, error) {
		var s []int
		_ = s[3]
		return Value{}, nil
	})
	defer delete(ops, "test-panic")
	c := &hlo.Computation{Name: "c"}
	in := &hlo.Instruction{Name: "boom", Opcode: "test-panic", Shape: hlo.Shape{Elem: dtype.F32}, Parent: c}
	c.Instructions, c.Root = []*hlo.Instruction{in}, in
	_, err := Evaluate(&hlo.Module{Entry: c, Computations: []*hlo.Computation{c}}, nil, Options{})
	if err == nil || !strings.Contains(err.Error(), "%boom") {
		t.Fatalf("got %v, want an error naming %%boom", err)
	}
}

// Integer corner cases XLA defines: x/0, INT_MIN/-1, x%0, oversized shifts.
func TestIntegerCornerCases(t *testing.T) {
	a := tensor.New(dtype.S8, []int64{4})
	b := tensor.New(dtype.S8, []int64{4})
	copy(a.I8(), []int8{7, -128, 7, -128})
	copy(b.I8(), []int8{0, -1, 0, -1})
	check := func(op string, want []int8) {
		t.Helper()
		out, err := binary(op, a, b)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.I8()) != len(want) {
			t.Fatalf("%s = %v, want %v", op, out.I8(), want)
		}
		for i, g := range out.I8() {
			if g != want[i] {
				t.Errorf("%s = %v, want %v", op, out.I8(), want)
				return
			}
		}
	}
	check("divide", []int8{-1, -128, -1, -128})
	check("remainder", []int8{7, 0, 7, 0})
	copy(b.I8(), []int8{8, 9, -1, 7})
	check("shift-left", []int8{0, 0, 0, 0})
	check("shift-right-arithmetic", []int8{0, -1, 0, -1})
	check("shift-right-logical", []int8{0, 0, 0, 1})
}
