package eval

import (
	"math"
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// hoistLoop is a recurrent step written as x·Wᵀ + b with the transpose and
// the bias broadcast inside the body (as JAX lowers a closed-over weight),
// and a broadcast of a step-dependent value that must not be kept.
const hoistLoop = `HloModule hoist

body {
  s = (s32[], f32[16,96], f32[96,96], f32[96]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  h = f32[16,96] get-tuple-element(s), index=1
  w = f32[96,96] get-tuple-element(s), index=2
  b = f32[96] get-tuple-element(s), index=3
  wt = f32[96,96] transpose(w), dimensions={1,0}
  hw = f32[16,96] dot(h, wt), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[16,96] broadcast(b), dimensions={1}
  z = f32[16,96] add(hw, bb)
  fi = f32[] convert(i)
  k = f32[] constant(0.001)
  fk = f32[] multiply(fi, k)
  fb = f32[16,96] broadcast(fk), dimensions={}
  z2 = f32[16,96] add(z, fb)
  h1 = f32[16,96] tanh(z2)
  i1 = s32[] add(i, s32[] constant(1))
  ROOT t = (s32[], f32[16,96], f32[96,96], f32[96]) tuple(i1, h1, w, b)
}

cond {
  s = (s32[], f32[16,96], f32[96,96], f32[96]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  ROOT lt = pred[] compare(i, s32[] constant(6)), direction=LT
}

ENTRY e {
  h0 = f32[16,96] parameter(0)
  w = f32[96,96] parameter(1)
  b = f32[96] parameter(2)
  i0 = s32[] constant(0)
  init = (s32[], f32[16,96], f32[96,96], f32[96]) tuple(i0, h0, w, b)
  w8 = (s32[], f32[16,96], f32[96,96], f32[96]) while(init), condition=cond, body=body
  ROOT hN = f32[16,96] get-tuple-element(w8), index=1
}
`

// Keeping a loop's invariant values (the weight's transpose) changes no bit of the result, leaves step-dependent values
// alone, and lets the product keep its packing of the transposed weight.
func TestWhileHoistedValuesMatch(t *testing.T) {
	m, err := hlo.ParseText([]byte(hoistLoop), "hoist.hlo")
	if err != nil {
		t.Fatal(err)
	}
	var w *hlo.Instruction
	for _, in := range m.Entry.Instructions {
		if in.Opcode == "while" {
			w = in
		}
	}
	rng := rand.New(rand.NewSource(9))
	var args []Value
	for _, dims := range [][]int64{{16, 96}, {96, 96}, {96}} {
		x := tensor.New(dtype.F32, dims)
		for i := range x.F32() {
			x.F32()[i] = float32(rng.NormFloat64() * 0.2)
		}
		args = append(args, ArrayValue(x))
	}
	var out [2]*tensor.Tensor
	for v, disabled := range []bool{false, true} {
		hoistDisabled = disabled
		ev := New(m, Options{})
		got, err := ev.Run(args)
		hoistDisabled = false
		if err != nil {
			t.Fatal(err)
		}
		out[v] = got.T
		if disabled {
			continue
		}
		p := ev.inPlace().plan(m, w)
		names := map[string]bool{}
		for in := range p.hoist {
			names[in.Name] = true
		}
		// (bb is evaluated block by block inside the add's group instead.)
		if !names["wt"] {
			t.Errorf("wt is not kept across steps (kept: %v)", names)
		}
		for _, name := range []string{"fb", "fk", "hw", "z"} {
			if names[name] {
				t.Errorf("step-dependent %s is kept across steps", name)
			}
		}
		// h·Wᵀ takes YNNPACK's order, which B's transpose makes packed
		// (keptPackings: none when that plan has lanes).
		if wantPacked := map[bool]int{false: keptPackings(t, 16, 96, 96, true), true: 0}[floatsOnBLAS]; ev.inv.packed != wantPacked {
			t.Errorf("%d packings of the kept transpose, want %d", ev.inv.packed, wantPacked)
		}
		if len(ev.hoisting) != 0 || len(ev.inv.spans) != 0 {
			t.Errorf("kept values outlive the loop: %d bodies, %d frozen spans", len(ev.hoisting), len(ev.inv.spans))
		}
	}
	for i, g := range out[0].F32() {
		if math.Float32bits(g) != math.Float32bits(out[1].F32()[i]) {
			t.Fatalf("h[%d] = %v with kept values, %v without", i, g, out[1].F32()[i])
		}
	}
}
