package golden

import (
	"testing"

	"goldtrace/engine/eval"
	"goldtrace/engine/hlo"
)

// TestYNNCallsMergedOnce: a bf16 softmax's exp is read both by the sum
// (inside the YNNPACK fusion, widened) and by the divide; legalization
// gives each reader an f32 exp of its own, and cseYNN leaves one of them,
// read by both.
func TestYNNCallsMergedOnce(t *testing.T) {
	const src = `HloModule m

mx {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT c = bf16[] maximum(a, b)
}

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

ENTRY main {
  x = bf16[64,4096]{1,0} parameter(0)
  ninf = bf16[] constant(-inf)
  m = bf16[64]{0} reduce(x, ninf), dimensions={1}, to_apply=mx
  mb = bf16[64,4096]{1,0} broadcast(m), dimensions={0}
  d = bf16[64,4096]{1,0} subtract(x, mb)
  e = bf16[64,4096]{1,0} exponential(d)
  ef = f32[64,4096]{1,0} convert(e)
  z = f32[] constant(0)
  s = f32[64]{0} reduce(ef, z), dimensions={1}, to_apply=add
  sb = bf16[64]{0} convert(s)
  sbb = bf16[64,4096]{1,0} broadcast(sb), dimensions={0}
  ROOT y = bf16[64,4096]{1,0} divide(e, sbb)
}
`
	m, err := hlo.ParseText([]byte(src), "test.hlo")
	if err != nil {
		t.Fatal(err)
	}
	lm, err := legalize(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var exps []*hlo.Instruction
	for _, in := range lm.Entry.Instructions {
		if in.Opcode == "custom-call" && in.CustomCallTarget == eval.YNNTarget {
			if o, err := eval.ParseYNNOp(in.BackendConfig); err == nil && o.Op == "exp" {
				exps = append(exps, in)
			}
		}
	}
	if len(exps) != 1 {
		t.Fatalf("%d YNNPACK exps after legalization, want 1: %v", len(exps), opcodes(lm.Entry))
	}
	readers := 0
	for _, in := range lm.Entry.Instructions {
		for _, o := range in.Operands {
			if o == exps[0] {
				readers++
			}
		}
	}
	if readers != 2 {
		t.Errorf("the exp has %d readers, want 2 (the sum and the product)", readers)
	}
}

// TestLocalTuplesForwarded: an inlined call's tuple whose first element is
// never read lets that element go (xent_grad's log_softmax value), and its
// other elements are read directly.
func TestLocalTuplesForwarded(t *testing.T) {
	const src = `HloModule m

ENTRY main {
  x = f32[64,100]{1,0} parameter(0)
  y = f32[64,100]{1,0} parameter(1)
  dead = f32[64,100]{1,0} subtract(x, y)
  e = f32[64,100]{1,0} exponential(x)
  t = (f32[64,100]{1,0}, f32[64,100]{1,0}) tuple(dead, e)
  g = f32[64,100]{1,0} get-tuple-element(t), index=1
  ROOT r = f32[64,100]{1,0} add(g, y)
}
`
	m, err := hlo.ParseText([]byte(src), "test.hlo")
	if err != nil {
		t.Fatal(err)
	}
	lm, err := legalize(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range lm.Entry.Instructions {
		if in.Opcode == "tuple" || in.Opcode == "subtract" || in.Opcode == "get-tuple-element" {
			t.Errorf("%s (%s) left after legalization: %v", in.Name, in.Opcode, opcodes(lm.Entry))
		}
	}
}
