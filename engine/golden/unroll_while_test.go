package golden

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/eval"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// Counted integer loops like threefry's (a u32 pair mixed with the counter
// and a rotation table that swaps each step, an inlined call returning a
// tuple), with start, limit, direction, increment and a float state element
// varied: the legalized module (unrolled where tripCount allows) against the
// module evaluated as written, bit for bit, and unrolled exactly when the
// loop is a counted integer loop of at most maxUnrollTrips steps.
func TestUnrollWhileMatchesLoop(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	unrolled := 0
	for trial := 0; trial < 60; trial++ {
		c0, n := rng.Intn(4), rng.Intn(12)
		inc := []int{1, 1, 1, 2}[rng.Intn(4)]
		gt := rng.Intn(2) == 0
		withFloat := rng.Intn(5) == 0
		cmp := "compare(i, lim), direction=LT"
		if gt {
			cmp = "compare(lim, i), direction=GT"
		}
		st := "(s32[], u32[3,700], u32[3,700], u32[4], u32[4], f32[5])"
		src := fmt.Sprintf(`HloModule m

step {
  x = u32[3,700] parameter(0)
  y = u32[3,700] parameter(1)
  r = u32[4] parameter(2)
  k = s32[] parameter(3)
  a = u32[3,700] add(x, y)
  r0s = u32[1] slice(r), slice={[1:2]}
  r0 = u32[] reshape(r0s)
  rb = u32[3,700] broadcast(r0), dimensions={}
  c32 = u32[] constant(32)
  rr = u32[] subtract(c32, r0)
  rrb = u32[3,700] broadcast(rr), dimensions={}
  shl = u32[3,700] shift-left(y, rb)
  shr = u32[3,700] shift-right-logical(y, rrb)
  rot = u32[3,700] or(shl, shr)
  y2 = u32[3,700] xor(a, rot)
  kc = u32[] convert(k)
  kb = u32[3,700] broadcast(kc), dimensions={}
  y3 = u32[3,700] add(y2, kb)
  ROOT t = (u32[3,700], u32[3,700]) tuple(a, y3)
}

body {
  p = %[1]s parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = u32[3,700] get-tuple-element(p), index=1
  y = u32[3,700] get-tuple-element(p), index=2
  r = u32[4] get-tuple-element(p), index=3
  q = u32[4] get-tuple-element(p), index=4
  f = f32[5] get-tuple-element(p), index=5
  s = (u32[3,700], u32[3,700]) call(x, y, r, i), to_apply=step
  x2 = u32[3,700] get-tuple-element(s), index=0
  y2 = u32[3,700] get-tuple-element(s), index=1
  one = s32[] constant(%[2]d)
  i2 = s32[] add(i, one)
  ROOT out = %[1]s tuple(i2, x2, y2, q, r, f)
}

cond {
  p = %[1]s parameter(0)
  i = s32[] get-tuple-element(p), index=0
  lim = s32[] constant(%[3]d)
  ROOT lt = pred[] %[4]s
}

ENTRY e {
  x = u32[3,700] parameter(0)
  y = u32[3,700] parameter(1)
  f = f32[5] parameter(2)
  i0 = s32[] constant(%[5]d)
  r = u32[4] constant({13, 15, 26, 6})
  q = u32[4] constant({17, 29, 16, 24})
  init = %[1]s tuple(i0, x, y, r, q, f)
  w = %[1]s while(init), condition=cond, body=body
  wx = u32[3,700] get-tuple-element(w), index=1
  wy = u32[3,700] get-tuple-element(w), index=2
  wi = s32[] get-tuple-element(w), index=0
  z = u32[3,700] xor(wx, wy)
  ROOT res = (u32[3,700], s32[]) tuple(z, wi)
}
`, st, inc, n, cmp, c0)
		if !withFloat {
			// the float element dropped from the state
			src = stripFloatState(src)
		}
		m, err := hlo.ParseText([]byte(src), "t.hlo")
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		args := []*tensor.Tensor{tensor.New(dtype.U32, []int64{3, 700}), tensor.New(dtype.U32, []int64{3, 700})}
		if withFloat {
			args = append(args, tensor.New(dtype.F32, []int64{5}))
		}
		for _, a := range args[:2] {
			for i := range a.Data {
				a.Data[i] = byte(rng.Intn(256))
			}
		}
		var vs []eval.Value
		for _, a := range args {
			vs = append(vs, eval.ArrayValue(a))
		}
		want, err := eval.New(m, eval.Options{}).Run(vs)
		if err != nil {
			t.Fatalf("as written: %v", err)
		}
		got, err := Run(m, args, Options{})
		if err != nil {
			t.Fatalf("legalized: %v\n%s", err, src)
		}
		wl := want.Leaves()
		for i, g := range got.Outputs {
			if string(g.Data) != string(wl[i].Data) {
				t.Fatalf("c0=%d n=%d inc=%d gt=%v float=%v: output %d differs", c0, n, inc, gt, withFloat, i)
			}
		}
		hasWhile := false
		for _, in := range got.Module.Entry.Instructions {
			hasWhile = hasWhile || in.Opcode == "while"
		}
		should := inc == 1 && !withFloat && n > c0 && n-c0 <= maxUnrollTrips
		if hasWhile == should {
			t.Fatalf("c0=%d n=%d inc=%d float=%v: while left %v, want unrolled %v", c0, n, inc, withFloat, hasWhile, should)
		}
		if should {
			unrolled++
		}
	}
	if unrolled < 10 {
		t.Errorf("only %d loops unrolled", unrolled)
	}
}

// stripFloatState removes the f32[5] element from the test loop's state.
func stripFloatState(src string) string {
	r := []struct{ old, new string }{
		{", f32[5])", ")"},
		{"  f = f32[5] get-tuple-element(p), index=5\n", ""},
		{"tuple(i2, x2, y2, q, r, f)", "tuple(i2, x2, y2, q, r)"},
		{"  f = f32[5] parameter(2)\n", ""},
		{"tuple(i0, x, y, r, q, f)", "tuple(i0, x, y, r, q)"},
	}
	for _, x := range r {
		src = strings.ReplaceAll(src, x.old, x.new)
	}
	return src
}
