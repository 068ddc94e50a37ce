package eval

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// programVsCall runs module src with loop programs (loop_program.go) and
// with every loop step through Call, and fails unless every output has the
// same bits (and the inputs are left alone). It returns how many loop
// programs ran (bodies and conditions).
func programVsCall(t *testing.T, src string, args ...*tensor.Tensor) int {
	t.Helper()
	m, err := hlo.ParseText([]byte(src), "program.hlo")
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, src)
	}
	var vs []Value
	var orig []string
	for _, a := range args {
		vs = append(vs, ArrayValue(a))
		orig = append(orig, string(a.Data))
	}
	defer func(old bool) { loopProgramDisabled = old }(loopProgramDisabled)
	loopProgramDisabled = false
	ev := New(m, Options{})
	got, gerr := ev.Run(vs)
	loopProgramDisabled = true
	want, werr := New(m, Options{}).Run(vs)
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("program: %v, Call: %v\n%s", gerr, werr, src)
	}
	if werr != nil {
		return ev.progRuns
	}
	gl, wl := got.Leaves(), want.Leaves()
	if len(gl) != len(wl) {
		t.Fatalf("%d outputs, want %d", len(gl), len(wl))
	}
	for i := range wl {
		if gl[i].Type != wl[i].Type || !equalDims(gl[i].Dims, wl[i].Dims) {
			t.Fatalf("output %d: %v%v, want %v%v\n%s", i, gl[i].Type, gl[i].Dims, wl[i].Type, wl[i].Dims, src)
		}
		if string(gl[i].Data) == string(wl[i].Data) {
			continue
		}
		if wl[i].Type == dtype.F32 {
			g, w := gl[i].F32(), wl[i].F32()
			for k := range w {
				if math.Float32bits(g[k]) != math.Float32bits(w[k]) {
					t.Fatalf("output %d element %d: program %v (%#x), Call %v (%#x)\n%s", i, k, g[k],
						math.Float32bits(g[k]), w[k], math.Float32bits(w[k]), src)
				}
			}
		}
		t.Fatalf("output %d (%v) differs\n%s", i, wl[i].Type, src)
	}
	for i, a := range args {
		if string(a.Data) != orig[i] {
			t.Fatalf("input %d changed\n%s", i, src)
		}
	}
	return ev.progRuns
}

func randF32(r *rand.Rand, dims ...int64) *tensor.Tensor {
	x := tensor.New(dtype.F32, dims)
	for i := range x.F32() {
		x.F32()[i] = float32(r.NormFloat64())
		if i%11 == 5 {
			x.F32()[i] = float32(r.NormFloat64()) * 1e-39 // subnormal
		}
	}
	return x
}

// loopModule wraps a body (state s of type st, counter at element 0) into
// a module running it steps times from the entry's parameters (params,
// their names p0, p1, ... in init, the state's elements after the
// counter).
func loopModule(st, body, params, init string, steps int) string {
	return fmt.Sprintf(`HloModule m
body {
  s = %[1]s parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
%[2]s
}
cond {
  s = %[1]s parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(%[5]d)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
%[3]s
  z = s32[] constant(0)
  init = %[1]s tuple(z, %[4]s)
  ROOT w = %[1]s while(init), condition=cond, body=body
}
`, st, body, params, init, steps)
}

// Loop programs give Call's bits on bodies built to trip them up: state
// elements swapped, passed along a chain (a buffer the state holds for
// several steps), held twice or through views, tuples taken apart in the
// body, invariant groups and scalars, scans with dynamic slices and
// in-place updates, dots, reductions, narrow, pred and f64 groups, groups
// too large for fixed buffers, a nested loop, a condition computed by
// Call, and a loop of no step.
func TestLoopProgramMatchesCall(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	x16, y16, z16 := randF32(r, 16), randF32(r, 16), randF32(r, 16)
	type tc struct {
		name, st, body, params, init string
		args                         []*tensor.Tensor
		steps                        int
	}
	vec := "  p0 = f32[16] parameter(0)\n  p1 = f32[16] parameter(1)\n  p2 = f32[16] parameter(2)"
	cases := []tc{
		{"fori_small", "(s32[], f32[16])", `  x = f32[16] get-tuple-element(s), index=1
  a = f32[] constant(0.999)
  ab = f32[16] broadcast(a), dimensions={}
  b = f32[] constant(0.001)
  bb = f32[16] broadcast(b), dimensions={}
  sn = f32[16] sine(x)
  sb = f32[16] multiply(sn, bb)
  f = f32[16] custom-call(x, ab, sb), custom_call_target="__goldtrace$xla_fma"
  ROOT t = (s32[], f32[16]) tuple(i1, f)`, "  p0 = f32[16] parameter(0)", "p0", []*tensor.Tensor{x16}, 300},
		{"swap", "(s32[], f32[16], f32[16])", `  x = f32[16] get-tuple-element(s), index=1
  y = f32[16] get-tuple-element(s), index=2
  c = f32[] constant(0.5)
  cb = f32[16] broadcast(c), dimensions={}
  x1 = f32[16] multiply(y, cb)
  y0 = f32[16] tanh(x)
  y1 = f32[16] add(y0, cb)
  ROOT t = (s32[], f32[16], f32[16]) tuple(i1, y1, x1)`, vec, "p0, p1", []*tensor.Tensor{x16, y16, z16}, 9},
		{"chain", "(s32[], f32[16], f32[16], f32[16], f32[16])", `  x = f32[16] get-tuple-element(s), index=1
  y = f32[16] get-tuple-element(s), index=2
  z = f32[16] get-tuple-element(s), index=3
  w = f32[16] get-tuple-element(s), index=4
  c = f32[] constant(1.25)
  cb = f32[16] broadcast(c), dimensions={}
  xz = f32[16] add(x, z)
  x1 = f32[16] multiply(xz, cb)
  ROOT t = (s32[], f32[16], f32[16], f32[16], f32[16]) tuple(i1, x1, x, y, w)`, vec, "p0, p1, p2, p0", []*tensor.Tensor{x16, y16, z16}, 23},
		{"chain_pooled", "(s32[], f32[20000], f32[20000], f32[20000], f32[4,4], f32[4,4], f32[4,4])", `  x = f32[20000] get-tuple-element(s), index=1
  y = f32[20000] get-tuple-element(s), index=2
  z = f32[20000] get-tuple-element(s), index=3
  a = f32[4,4] get-tuple-element(s), index=4
  b = f32[4,4] get-tuple-element(s), index=5
  cc = f32[] constant(1.25)
  c = f32[20000] broadcast(cc), dimensions={}
  xz = f32[20000] add(x, z)
  x1 = f32[20000] multiply(xz, c)
  at = f32[4,4] transpose(a), dimensions={1,0}
  ROOT t = (s32[], f32[20000], f32[20000], f32[20000], f32[4,4], f32[4,4], f32[4,4]) tuple(i1, x1, x, y, at, a, b)`,
			"  p0 = f32[20000] parameter(0)\n  p1 = f32[16] parameter(1)\n  pq = f32[4,4] reshape(p1)", "p0, p0, p0, pq, pq, pq",
			[]*tensor.Tensor{randF32(r, 20000), y16}, 13},
		{"views_twice", "(s32[], f32[16], f32[4,4], f32[16], f32[16])", `  x = f32[16] get-tuple-element(s), index=1
  q = f32[4,4] get-tuple-element(s), index=2
  c = f32[] constant(0.75)
  cb = f32[16] broadcast(c), dimensions={}
  qr = f32[16] reshape(q)
  e = f32[16] exponential(x)
  x1 = f32[16] subtract(cb, e)
  x2 = f32[16] add(x1, qr)
  v = f32[4,4] reshape(x2)
  b = f32[16] bitcast(x2)
  ROOT t = (s32[], f32[16], f32[4,4], f32[16], f32[16]) tuple(i1, x2, v, b, x2)`,
			"  p0 = f32[16] parameter(0)\n  p1 = f32[16] parameter(1)\n  p2 = f32[16] parameter(2)\n  pq = f32[4,4] reshape(p1)",
			"p0, pq, p2, p2", []*tensor.Tensor{x16, y16, z16}, 17},
		{"view_only", "(s32[], f32[4,4], f32[16])", `  x = f32[4,4] get-tuple-element(s), index=1
  xr = f32[16] reshape(x)
  c = f32[] constant(0.5)
  cb = f32[16] broadcast(c), dimensions={}
  g0 = f32[16] tanh(xr)
  g = f32[16] multiply(g0, cb)
  gv = f32[4,4] reshape(g)
  rv = f32[16] reverse(xr), dimensions={0}
  ROOT t = (s32[], f32[4,4], f32[16]) tuple(i1, gv, rv)`,
			"  p0 = f32[16] parameter(0)\n  p1 = f32[16] parameter(1)\n  pq = f32[4,4] reshape(p1)",
			"pq, p0", []*tensor.Tensor{x16, y16}, 11},
		{"local_tuples_invariants", "(s32[], s32[], f32[16], f32[16])", `  j = s32[] get-tuple-element(s), index=1
  x = f32[16] get-tuple-element(s), index=2
  k = f32[16] get-tuple-element(s), index=3
  c = f32[] constant(2)
  cb = f32[16] broadcast(c), dimensions={}
  kk = f32[16] multiply(k, cb)
  kn = f32[16] negate(kk)
  seven = s32[] constant(7)
  three = s32[] constant(3)
  inv = s32[] multiply(seven, three)
  j1 = s32[] add(j, inv)
  jf = f32[] convert(j1)
  jb = f32[16] broadcast(jf), dimensions={}
  xs = f32[16] add(x, kn)
  xm = f32[16] multiply(xs, jb)
  x1 = f32[16] tanh(xm)
  tp = (s32[], f32[16]) tuple(j1, x1)
  g0 = s32[] get-tuple-element(tp), index=0
  g1 = f32[16] get-tuple-element(tp), index=1
  ROOT t = (s32[], s32[], f32[16], f32[16]) tuple(i1, g0, g1, k)`,
			"  p0 = f32[16] parameter(0)\n  p1 = f32[16] parameter(1)\n  z1 = s32[] constant(-40)", "z1, p0, p1",
			[]*tensor.Tensor{x16, y16}, 12},
		{"scan", "(s32[], f32[8,32], f32[32,32], f32[64,8,32], f32[64,8,32], f32[64])", `  h = f32[8,32] get-tuple-element(s), index=1
  wt = f32[32,32] get-tuple-element(s), index=2
  xs = f32[64,8,32] get-tuple-element(s), index=3
  ys = f32[64,8,32] get-tuple-element(s), index=4
  sums = f32[64] get-tuple-element(s), index=5
  zero = s32[] constant(0)
  sixtyfour = s32[] constant(64)
  neg = pred[] compare(i, zero), direction=LT
  iw = s32[] add(i, sixtyfour)
  ix = s32[] select(neg, iw, i)
  xt = f32[1,8,32] dynamic-slice(xs, ix, zero, zero), dynamic_slice_sizes={1,8,32}
  x = f32[8,32] reshape(xt)
  w = f32[32,32] transpose(wt), dimensions={1,0}
  hw = f32[8,32] dot(h, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  a = f32[8,32] add(hw, x)
  h1 = f32[8,32] tanh(a)
  h1r = f32[1,8,32] reshape(h1)
  ys1 = f32[64,8,32] dynamic-update-slice(ys, h1r, ix, zero, zero)
  c0 = f32[] constant(0)
  sm = f32[] reduce(h1, c0), dimensions={0,1}, to_apply=add
  smr = f32[1] reshape(sm)
  sums1 = f32[64] dynamic-update-slice(sums, smr, ix)
  ROOT t = (s32[], f32[8,32], f32[32,32], f32[64,8,32], f32[64,8,32], f32[64]) tuple(i1, h1, wt, xs, ys1, sums1)`,
			"  ph = f32[8,32] parameter(0)\n  pw = f32[32,32] parameter(1)\n  px = f32[64,8,32] parameter(2)\n  c0 = f32[] constant(0)\n" +
				"  pys = f32[64,8,32] broadcast(c0), dimensions={}\n  psum = f32[64] broadcast(c0), dimensions={}",
			"ph, pw, px, pys, psum", []*tensor.Tensor{randF32(r, 8, 32), randF32(r, 32, 32), randF32(r, 64, 8, 32)}, 64},
		{"narrow_pred_reduce_int", "(s32[], bf16[16], pred[16], f32[16], s32[16], f32[4])", `  y = bf16[16] get-tuple-element(s), index=1
  p = pred[16] get-tuple-element(s), index=2
  x = f32[16] get-tuple-element(s), index=3
  k = s32[16] get-tuple-element(s), index=4
  yw = f32[16] convert(y)
  yx = f32[16] multiply(yw, x)
  y1 = bf16[16] convert(yx)
  n = f32[16] negate(x)
  g = f32[16] select(p, x, n)
  c = f32[] constant(0.9)
  cb = f32[16] broadcast(c), dimensions={}
  x1 = f32[16] multiply(g, cb)
  z = f32[] constant(0)
  zb = f32[16] broadcast(z), dimensions={}
  p1 = pred[16] compare(x1, zb), direction=LT
  kc = s32[] constant(3)
  kb = s32[16] broadcast(kc), dimensions={}
  km = s32[16] multiply(k, kb)
  k1 = s32[16] xor(km, kb)
  x4 = f32[4,4] reshape(x1)
  e4 = f32[4,4] exponential(x4)
  r4 = f32[4] reduce(e4, z), dimensions={1}, to_apply=add
  ROOT t = (s32[], bf16[16], pred[16], f32[16], s32[16], f32[4]) tuple(i1, y1, p1, x1, k1, r4)`,
			"  p0 = f32[16] parameter(0)\n  p1 = f32[16] parameter(1)\n  yb = bf16[16] convert(p0)\n  zz = f32[16] broadcast(f32[] constant(0)), dimensions={}\n" +
				"  pp = pred[16] compare(p1, zz), direction=GT\n  ki = s32[16] iota(), iota_dimension=0\n  r0 = f32[4] broadcast(f32[] constant(0)), dimensions={}",
			"yb, pp, p1, ki, r0", []*tensor.Tensor{x16, y16}, 25},
		{"f64_and_large", "(s32[], f64[16], f32[40000], f32[40000])", `  d = f64[16] get-tuple-element(s), index=1
  x = f32[40000] get-tuple-element(s), index=2
  y = f32[40000] get-tuple-element(s), index=3
  c = f64[] constant(0.99)
  cb = f64[16] broadcast(c), dimensions={}
  ds = f64[16] sine(d)
  d1 = f64[16] multiply(ds, cb)
  h = f32[] constant(0.5)
  hb = f32[40000] broadcast(h), dimensions={}
  t1 = f32[40000] tanh(x)
  x1 = f32[40000] multiply(t1, hb)
  y1 = f32[40000] add(x1, y)
  ROOT t = (s32[], f64[16], f32[40000], f32[40000]) tuple(i1, d1, y1, t1)`,
			"  p0 = f32[16] parameter(0)\n  pd = f64[16] convert(p0)\n  px = f32[40000] parameter(1)", "pd, px, px",
			[]*tensor.Tensor{x16, randF32(r, 40000)}, 5},
		{"fixed_parallel", "(s32[], f32[16384], f32[16384])", `  x = f32[16384] get-tuple-element(s), index=1
  y = f32[16384] get-tuple-element(s), index=2
  c = f32[] constant(0.5)
  cb = f32[16384] broadcast(c), dimensions={}
  t1 = f32[16384] tanh(x)
  e1 = f32[16384] exponential(y)
  m1 = f32[16384] multiply(t1, cb)
  a1 = f32[16384] add(m1, e1)
  x1 = f32[16384] multiply(a1, cb)
  ROOT t = (s32[], f32[16384], f32[16384]) tuple(i1, x1, t1)`, "  p0 = f32[16384] parameter(0)\n  p1 = f32[16384] parameter(1)", "p0, p1",
			[]*tensor.Tensor{randF32(r, 16384), randF32(r, 16384)}, 6},
		{"extras", "(s32[], f32[16], f32[16])", `  x = f32[16] get-tuple-element(s), index=1
  y = f32[16] get-tuple-element(s), index=2
  c = f32[] constant(0.25)
  cb = f32[16] broadcast(c), dimensions={}
  a = f32[16] multiply(x, cb)
  b = f32[16] tanh(a)
  e = f32[16] add(b, y)
  f = f32[16] multiply(e, b)
  ROOT t = (s32[], f32[16], f32[16]) tuple(i1, f, b)`, vec, "p0, p1", []*tensor.Tensor{x16, y16, z16}, 14},
	}
	for _, c := range cases {
		src := loopModule(c.st, c.body, c.params, c.init, c.steps)
		src = strings.Replace(src, "HloModule m\n", "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n", 1)
		if n := programVsCall(t, src, c.args...); n == 0 {
			t.Errorf("%s: no loop ran as a program", c.name)
		}
		// No step at all: the initial state comes back.
		if n := programVsCall(t, strings.Replace(src, fmt.Sprintf("constant(%d)", c.steps), "constant(0)", 1), c.args...); n == 0 {
			t.Errorf("%s (no step): no loop ran as a program", c.name)
		}
	}
}

// A loop inside a loop body, and a condition that is not a counter's
// (called through Call every step), run as programs with Call's bits.
func TestLoopProgramNestedAndCalledCondition(t *testing.T) {
	src := `HloModule m
ibody {
  s = (s32[], f32[16]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[16] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  c = f32[] constant(0.9)
  cb = f32[16] broadcast(c), dimensions={}
  e = f32[16] exponential(x)
  x1 = f32[16] multiply(e, cb)
  x2 = f32[16] tanh(x1)
  ROOT t = (s32[], f32[16]) tuple(i1, x2)
}
icond {
  s = (s32[], f32[16]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
obody {
  s = (s32[], f32[16], f32[16]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[16] get-tuple-element(s), index=1
  y = f32[16] get-tuple-element(s), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  z = s32[] constant(0)
  in = (s32[], f32[16]) tuple(z, x)
  w = (s32[], f32[16]) while(in), condition=icond, body=ibody
  x1 = f32[16] get-tuple-element(w), index=1
  y1 = f32[16] add(y, x1)
  ROOT t = (s32[], f32[16], f32[16]) tuple(i1, y1, x1)
}
ocond {
  s = (s32[], f32[16], f32[16]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  y = f32[16] get-tuple-element(s), index=1
  z = f32[] constant(0)
  sq = f32[16] multiply(y, y)
  sm = f32[] reduce(sq, z), dimensions={0}, to_apply=add
  lim = f32[] constant(1e30)
  ok = pred[] compare(sm, lim), direction=LT
  two = s32[] constant(2)
  i2 = s32[] multiply(i, two)
  n = s32[] constant(20)
  lt = pred[] compare(i2, n), direction=LT
  ROOT c = pred[] and(ok, lt)
}
ENTRY e {
  p0 = f32[16] parameter(0)
  p1 = f32[16] parameter(1)
  z = s32[] constant(0)
  init = (s32[], f32[16], f32[16]) tuple(z, p0, p1)
  ROOT w = (s32[], f32[16], f32[16]) while(init), condition=ocond, body=obody
}
`
	r := rand.New(rand.NewSource(5))
	x, y := randF32(r, 16), randF32(r, 16)
	for i := range y.F32() {
		y.F32()[i] = float32(math.Abs(float64(y.F32()[i])))
	}
	// The outer body and condition once, the inner body at each of the
	// outer loop's 10 steps.
	if n := programVsCall(t, src, x, y); n != 12 {
		t.Fatalf("%d program runs, want 12", n)
	}
	// The inner loop's runs reuse one run's slices and buffers, which go
	// once the outer loop has ended.
	m, err := hlo.ParseText([]byte(src), "nested.hlo")
	if err != nil {
		t.Fatal(err)
	}
	ev := New(m, Options{})
	if _, err := ev.Run([]Value{ArrayValue(x), ArrayValue(y)}); err != nil {
		t.Fatal(err)
	}
	if len(ev.idleProgs) != 0 {
		t.Fatalf("%d programs keep a finished run after the loops ended", len(ev.idleProgs))
	}
	for _, p := range ev.inplace.plans {
		if p.prog != nil && (p.prog.idle != nil || p.prog.cond != nil && p.prog.cond.idle != nil) {
			t.Fatal("a program keeps a finished run after the loops ended")
		}
	}
}

// Random loop bodies of small elementwise work over a few carried arrays
// (groups, lone ops, views, local tuples, scalar counters, dots, slices),
// whose root mixes new values, passed-on elements and repeats, run as
// programs with Call's bits.
func TestLoopProgramRandomBodies(t *testing.T) {
	r := rand.New(rand.NewSource(29))
	for iter := range 60 {
		src, args := randomLoop(r, iter)
		if n := programVsCall(t, src, args...); n == 0 {
			t.Fatalf("no loop ran as a program\n%s", src)
		}
	}
}

// randomLoop makes a loop of state (s32[], f32[n] x k) with a random body.
func randomLoop(r *rand.Rand, iter int) (string, []*tensor.Tensor) {
	n := []int{1, 8, 16, 64, 300, 3000, 20000}[r.Intn(7)]
	if iter < 20 {
		n = []int{4, 16}[iter%2]
	}
	k := 1 + r.Intn(4)
	arr := fmt.Sprintf("f32[%d]", n)
	st := "(s32[]" + strings.Repeat(", "+arr, k) + ", s32[])"
	var b strings.Builder
	var vals []string // f32[n] values so far
	for j := range k {
		fmt.Fprintf(&b, "  x%d = %s get-tuple-element(s), index=%d\n", j, arr, j+1)
		vals = append(vals, fmt.Sprintf("x%d", j))
	}
	fmt.Fprintf(&b, "  jj = s32[] get-tuple-element(s), index=%d\n", k+1)
	fmt.Fprintf(&b, "  c0 = f32[] constant(0.75)\n  cb0 = %s broadcast(c0), dimensions={}\n", arr)
	vals = append(vals, "cb0")
	pick := func() string { return vals[r.Intn(len(vals))] }
	unary := []string{"tanh", "exponential", "negate", "abs", "sine", "cosine", "sqrt", "log-plus-one"}
	binary := []string{"add", "multiply", "subtract", "maximum", "minimum", "divide"}
	nops := 2 + r.Intn(10)
	for q := range nops {
		name := fmt.Sprintf("v%d", q)
		switch c := r.Intn(10); {
		case c < 3:
			fmt.Fprintf(&b, "  %s = %s %s(%s)\n", name, arr, unary[r.Intn(len(unary))], pick())
		case c < 7:
			fmt.Fprintf(&b, "  %s = %s %s(%s, %s)\n", name, arr, binary[r.Intn(len(binary))], pick(), pick())
		case c == 7:
			// A view: reshape there and back.
			fmt.Fprintf(&b, "  %s_r = f32[1,%d] reshape(%s)\n  %s = %s reshape(%s_r)\n", name, n, pick(), name, arr, name)
		case c == 8:
			// A local tuple taken apart.
			a, bb := pick(), pick()
			fmt.Fprintf(&b, "  %s_t = (%s, %s) tuple(%s, %s)\n  %s = %s get-tuple-element(%s_t), index=%d\n",
				name, arr, arr, a, bb, name, arr, name, r.Intn(2))
		default:
			// The counter into the arithmetic.
			fmt.Fprintf(&b, "  %s_f = f32[] convert(i)\n  %s_b = %s broadcast(%s_f), dimensions={}\n  %s = %s multiply(%s_b, %s)\n",
				name, name, arr, name, name, arr, name, pick())
		}
		vals = append(vals, name)
	}
	fmt.Fprintf(&b, "  j1 = s32[] multiply(jj, i1)\n")
	var outs []string
	for range k {
		switch c := r.Intn(6); {
		case c == 0:
			outs = append(outs, fmt.Sprintf("x%d", r.Intn(k))) // passed on, maybe to another slot
		default:
			outs = append(outs, vals[k+1+r.Intn(len(vals)-k-1)])
		}
	}
	fmt.Fprintf(&b, "  ROOT t = %s tuple(i1, %s, j1)", st, strings.Join(outs, ", "))
	var params []string
	var args []*tensor.Tensor
	var inits []string
	for j := range k {
		params = append(params, fmt.Sprintf("  p%d = %s parameter(%d)", j, arr, j))
		inits = append(inits, fmt.Sprintf("p%d", j))
		x := randF32(r, int64(n))
		for i, v := range x.F32() {
			x.F32()[i] = float32(math.Abs(float64(v))) * 0.5
		}
		args = append(args, x)
	}
	params = append(params, "  j0 = s32[] constant(3)")
	inits = append(inits, "j0")
	return loopModule(st, b.String(), strings.Join(params, "\n"), strings.Join(inits, ", "), 1+r.Intn(12)), args
}

// collatzLoop is jax's while_loop of the Collatz steps on s64 (legalized:
// remainder and floor_divide inlined): scalar steps, selects and
// remainders whose small boxes die and come back within a step, beside
// the counter's own buffer.
const collatzLoop = `HloModule collatz
body {
  s = (s64[], s64[], s64[]) parameter(0)
  n = s64[] get-tuple-element(s), index=0
  two = s64[] constant(2)
  zero = s64[] constant(0)
  eq = pred[] compare(two, zero), direction=EQ
  one = s64[] constant(1)
  d = s64[] select(eq, one, two)
  rem = s64[] remainder(n, d)
  lt = pred[] compare(rem, zero), direction=LT
  ltd = pred[] compare(d, zero), direction=LT
  ne = pred[] compare(lt, ltd), direction=NE
  nz = pred[] compare(rem, zero), direction=NE
  both = pred[] and(ne, nz)
  fix = s64[] add(rem, d)
  r = s64[] select(both, fix, rem)
  even = pred[] compare(r, zero), direction=EQ
  sn = s64[] sign(n)
  st = s64[] sign(two)
  sne = pred[] compare(sn, st), direction=NE
  r2 = s64[] remainder(n, two)
  r2nz = pred[] compare(r2, zero), direction=NE
  adj = pred[] and(sne, r2nz)
  q = s64[] divide(n, two)
  q1 = s64[] subtract(q, one)
  half = s64[] select(adj, q1, q)
  three = s64[] constant(3)
  m = s64[] multiply(n, three)
  m1 = s64[] add(m, one)
  next = s64[] select(even, half, m1)
  c = s64[] get-tuple-element(s), index=1
  c1 = s64[] add(c, one)
  k = s64[] select(eq, three, one)
  ROOT t = (s64[], s64[], s64[]) tuple(next, c1, k)
}
cond {
  s = (s64[], s64[], s64[]) parameter(0)
  n = s64[] get-tuple-element(s), index=0
  one = s64[] constant(1)
  ROOT ne = pred[] compare(n, one), direction=NE
}
ENTRY e {
  n = s64[] parameter(0)
  z = s64[] constant(0)
  init = (s64[], s64[], s64[]) tuple(n, z, z)
  ROOT w = (s64[], s64[], s64[]) while(init), condition=cond, body=body
}
`

// Scalar integer state computed through ops whose results are pooled
// boxes (recycled within the step) beside scalar steps writing into the
// loop's own buffers: every trip count comes out as with Call's steps.
func TestLoopProgramScalarCarries(t *testing.T) {
	for _, v := range []int64{27, 97, 871, 1, 2} {
		x := tensor.New(dtype.S64, nil)
		x.I64()[0] = v
		if n := programVsCall(t, collatzLoop, x); n == 0 {
			t.Fatal("the loop did not run as a program")
		}
	}
}

// A Trace or a MemoryStats sees every step's values through Call: loops
// then never run as programs, and give the same bits.
func TestLoopProgramLeavesTraceAndMemoryToCall(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	x := randF32(r, 16)
	src := loopModule("(s32[], f32[16])", `  x = f32[16] get-tuple-element(s), index=1
  c = f32[] constant(0.5)
  cb = f32[16] broadcast(c), dimensions={}
  e = f32[16] tanh(x)
  x1 = f32[16] add(e, cb)
  ROOT t = (s32[], f32[16]) tuple(i1, x1)`, "  p0 = f32[16] parameter(0)", "p0", 7)
	m, err := hlo.ParseText([]byte(src), "trace.hlo")
	if err != nil {
		t.Fatal(err)
	}
	want, err := New(m, Options{}).Run([]Value{ArrayValue(x)})
	if err != nil {
		t.Fatal(err)
	}
	traced := map[string]int{}
	for _, opts := range []Options{{Trace: func(in *hlo.Instruction, v Value) { traced[in.Name]++ }}, {Memory: &MemoryStats{}}} {
		ev := New(m, opts)
		got, err := ev.Run([]Value{ArrayValue(x)})
		if err != nil {
			t.Fatal(err)
		}
		if ev.progRuns != 0 {
			t.Fatalf("%d program runs with a Trace or MemoryStats", ev.progRuns)
		}
		if string(got.Leaves()[1].Data) != string(want.Leaves()[1].Data) {
			t.Fatal("the loop's result differs through Call")
		}
	}
	if traced["x1"] != 7 {
		t.Fatalf("the body's add traced %d times, want 7 (one per step)", traced["x1"])
	}
}

// BenchmarkLoopProgramForiSmall is fori_20000_small's loop (c*0.999 +
// sin(c)*0.001 on f32[16], legalized: an FMA), per step.
func BenchmarkLoopProgramForiSmall(bm *testing.B) {
	const steps = 20000
	src := loopModule("(s32[], f32[16])", `  x = f32[16] get-tuple-element(s), index=1
  a = f32[] constant(0.999)
  ab = f32[16] broadcast(a), dimensions={}
  b = f32[] constant(0.001)
  bb = f32[16] broadcast(b), dimensions={}
  sn = f32[16] sine(x)
  sb = f32[16] multiply(sn, bb)
  f = f32[16] custom-call(x, ab, sb), custom_call_target="__goldtrace$xla_fma"
  ROOT t = (s32[], f32[16]) tuple(i1, f)`, "  p0 = f32[16] parameter(0)", "p0", steps)
	m, err := hlo.ParseText([]byte(src), "fori.hlo")
	if err != nil {
		bm.Fatal(err)
	}
	x := randF32(rand.New(rand.NewSource(1)), 16)
	bm.ReportAllocs()
	bm.ResetTimer()
	for range bm.N {
		if _, err := Evaluate(m, []Value{ArrayValue(x)}, Options{}); err != nil {
			bm.Fatal(err)
		}
	}
	bm.ReportMetric(float64(bm.Elapsed().Nanoseconds())/float64(bm.N)/steps, "ns/step")
}

// keptStartLoop's outer body starts an inner scan from a broadcast of a
// constant, which the outer loop keeps from its first step (an invariant)
// and the inner loop would update in place (a fresh start): each outer
// step writes other elements, so an update left in the kept value shows.
const keptStartLoop = `HloModule m
ibody {
  s = (s32[], f32[8], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  b = f32[8] get-tuple-element(s), index=1
  off = s32[] get-tuple-element(s), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  v = f32[] convert(i1)
  vr = f32[1] reshape(v)
  at = s32[] add(i, off)
  b1 = f32[8] dynamic-update-slice(b, vr, at)
  ROOT t = (s32[], f32[8], s32[]) tuple(i1, b1, off)
}
icond {
  s = (s32[], f32[8], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(2)
  ROOT lt = pred[] compare(i, n), direction=LT
}
obody {
  s = (s32[], f32[8], f32[8]) parameter(0)
  pt = f32[8] get-tuple-element(s), index=2
  i = s32[] get-tuple-element(s), index=0
  acc = f32[8] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  c0 = f32[] constant(0)
  z = f32[8] broadcast(c0), dimensions={}
  zi = s32[] constant(0)
  off = s32[] multiply(i, s32[] constant(2))
  in = (s32[], f32[8], s32[]) tuple(zi, z, off)
  w = (s32[], f32[8], s32[]) while(in), condition=icond, body=ibody
  b = f32[8] get-tuple-element(w), index=1
  acc1 = f32[8] add(acc, b)
  ROOT t = (s32[], f32[8], f32[8]) tuple(i1, acc1, pt)
}
ocond {
  s = (s32[], f32[8], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  p = f32[8] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[8], f32[8]) tuple(z, p, p)
  ROOT w = (s32[], f32[8], f32[8]) while(init), condition=ocond, body=obody
}
`

// A value an enclosing loop keeps is never a start the inner loop updates
// in place: with keeping on (loop programs or Call's steps) the results
// are those of keeping nothing.
func TestLoopKeptStartNotUpdatedInPlace(t *testing.T) {
	x := tensor.New(dtype.F32, []int64{8})
	m, err := hlo.ParseText([]byte(keptStartLoop), "kept.hlo")
	if err != nil {
		t.Fatal(err)
	}
	defer func(old bool) { hoistDisabled = old }(hoistDisabled)
	hoistDisabled = true
	want, err := New(m, Options{}).Run([]Value{ArrayValue(x)})
	if err != nil {
		t.Fatal(err)
	}
	hoistDisabled = false
	got, err := New(m, Options{}).Run([]Value{ArrayValue(x)})
	if err != nil {
		t.Fatal(err)
	}
	wantF32(t, "kept start", got.Leaves()[1], want.Leaves()[1].F32())
	programVsCall(t, keptStartLoop, x)
}
