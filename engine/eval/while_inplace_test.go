package eval

import (
	"slices"
	"testing"

	"goldtrace/engine/hlo"
)

// A scan-shaped loop: the stacked output is updated in place (the plan finds
// both the direct and the called dynamic-update-slice), and the initial
// buffer, which the entry also returns and the parameter passes in, keeps its
// contents.
func TestWhileInPlaceUpdate(t *testing.T) {
	const src = `HloModule m
upd {
  b = f32[4,2] parameter(0)
  r = f32[1,2] parameter(1)
  i = s32[] parameter(2)
  z = s32[] constant(0)
  ROOT d = f32[4,2] dynamic-update-slice(b, r, i, z)
}
body {
  s = (s32[], f32[4,2], f32[4,2], f32[4,2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  f = f32[] convert(i1)
  r = f32[1,2] broadcast(f), dimensions={}
  b = f32[4,2] get-tuple-element(s), index=1
  d = f32[4,2] call(b, r, i), to_apply=upd
  c = f32[4,2] get-tuple-element(s), index=2
  z = s32[] constant(0)
  e = f32[4,2] dynamic-update-slice(c, r, i, z)
  k = f32[4,2] get-tuple-element(s), index=3
  ROOT t = (s32[], f32[4,2], f32[4,2], f32[4,2]) tuple(i1, d, e, k)
}
cond {
  s = (s32[], f32[4,2], f32[4,2], f32[4,2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  p = f32[4,2] parameter(0)
  z = s32[] constant(0)
  w0 = (s32[], f32[4,2], f32[4,2], f32[4,2]) tuple(z, p, p, p)
  w = (s32[], f32[4,2], f32[4,2], f32[4,2]) while(w0), condition=cond, body=body
  d = f32[4,2] get-tuple-element(w), index=1
  e = f32[4,2] get-tuple-element(w), index=2
  k = f32[4,2] get-tuple-element(w), index=3
  ROOT t = (f32[4,2], f32[4,2], f32[4,2], f32[4,2]) tuple(d, e, k, p)
}`
	m, err := hlo.ParseText([]byte(src), "test.hlo")
	if err != nil {
		t.Fatal(err)
	}
	var w *hlo.Instruction
	for _, in := range m.Entry.Instructions {
		if in.Opcode == "while" {
			w = in
		}
	}
	ev := New(m, Options{})
	if p := ev.inPlace().plan(m, w); !slices.Equal(p.slots, []int{1, 2}) {
		t.Fatalf("in-place slots %v, want [1 2]", p.slots)
	}
	p := f32s(-1, -2, -3, -4, -5, -6, -7, -8)
	p.Dims = []int64{4, 2}
	v, err := ev.Run([]Value{ArrayValue(p)})
	if err != nil {
		t.Fatal(err)
	}
	upd := []float32{1, 1, 2, 2, 3, 3, 4, 4}
	orig := []float32{-1, -2, -3, -4, -5, -6, -7, -8}
	for i, want := range [][]float32{upd, upd, orig, orig} {
		if got := v.Tuple[i].T.F32(); !slices.Equal(got, want) {
			t.Errorf("output %d = %v, want %v", i, got, want)
		}
	}
	if got := p.F32(); !slices.Equal(got, orig) {
		t.Errorf("the input changed: %v", got)
	}
}
