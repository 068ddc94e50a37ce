package eval

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// The direct scalar integer ops (scalar_step.go) give the general kernels'
// bits for every type, op and direction they cover, on edge values and
// random ones.
func TestScalarStepMatchesGeneral(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	edges := []uint64{0, 1, 2, 3, 0x7f, 0x80, 0xffffffff, 0x7fffffff, 0x80000000, 0xfffffffe,
		1 << 63, 1<<63 - 1, math.MaxUint64, math.MaxUint64 - 1, 12345678901234567}
	for range 20 {
		edges = append(edges, r.Uint64(), uint64(r.Int31n(9))-4)
	}
	types := []dtype.Type{dtype.S32, dtype.U32, dtype.S64, dtype.U64}
	ops := []string{"add", "subtract", "multiply", "and", "or", "xor", "maximum", "minimum"}
	dirs := []string{"EQ", "NE", "LT", "LE", "GT", "GE"}
	for _, ty := range types {
		var cases []string
		for _, op := range ops {
			cases = append(cases, fmt.Sprintf("ROOT r = %v[] %s(a, b)", ty, op))
		}
		for _, d := range dirs {
			cases = append(cases, fmt.Sprintf("ROOT r = pred[] compare(a, b), direction=%s", d))
		}
		for _, body := range cases {
			src := fmt.Sprintf("HloModule m\nENTRY e {\n  a = %v[] parameter(0)\n  b = %v[] parameter(1)\n  %s\n}\n", ty, ty, body)
			m, err := hlo.ParseText([]byte(src), "step.hlo")
			if err != nil {
				t.Fatal(err)
			}
			root := m.Entry.Root
			general := opsFor(root.Opcode)
			if scalarStepOp(root, general) == nil {
				t.Fatalf("%v %s: no direct form", ty, body)
			}
			for _, x := range edges {
				for _, y := range edges[:12] {
					a, b := scalarOf(ty, x), scalarOf(ty, y)
					got, err := Evaluate(m, []Value{ArrayValue(a), ArrayValue(b)}, Options{})
					if err != nil {
						t.Fatal(err)
					}
					want, err := general(New(m, Options{}), root, []Value{ArrayValue(a), ArrayValue(b)})
					if err != nil {
						t.Fatal(err)
					}
					if got.T.Type != want.T.Type || !bytes.Equal(got.T.Data, want.T.Data) || len(got.T.Dims) != 0 {
						t.Fatalf("%v %s on %#x, %#x: direct %v %x, general %v %x", ty, body, x, y, got.T.Type, got.T.Data, want.T.Type, want.T.Data)
					}
				}
			}
		}
	}
}

func opsFor(opcode string) OpFunc { return ops[opcode] }

func scalarOf(t dtype.Type, v uint64) *tensor.Tensor {
	x := tensor.New(t, nil)
	for i := range x.Data {
		x.Data[i] = byte(v >> (8 * i))
	}
	return x
}

func f32Tensor(vals ...float32) *tensor.Tensor {
	x := tensor.New(dtype.F32, []int64{int64(len(vals))})
	copy(x.F32(), vals)
	return x
}

func runLoopText(t *testing.T, src string, args ...*tensor.Tensor) Value {
	t.Helper()
	m, err := hlo.ParseText([]byte(src), "loop.hlo")
	if err != nil {
		t.Fatal(err)
	}
	vs := make([]Value, len(args))
	for i, a := range args {
		vs[i] = ArrayValue(a)
	}
	v, err := Evaluate(m, vs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func wantF32(t *testing.T, what string, got *tensor.Tensor, want []float32) {
	t.Helper()
	g := got.F32()
	if len(g) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(g), len(want))
	}
	for i := range want {
		if math.Float32bits(g[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v, want %v (all: %v, want %v)", what, i, g[i], want[i], g, want)
		}
	}
}

// Loops whose state holds one array twice, whose body passes an element
// through or reads a carried buffer after updating it, nested loops
// sharing one body computation, and loops of other types one after the
// other: the frames, operand slices and storage reused from step to step
// must never let one value show through another. Expected values are
// computed here step by step in plain Go.
func TestLoopStepReuseSemantics(t *testing.T) {
	const n = 2048 // f32[2048] is 8 KiB: recycled storage, not just the small-buffer path
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i%97) * 0.25
	}
	// One array twice in the state; each element updated its own way, a
	// third passed through untouched; the body also reads the old value of
	// element 1 after element 1's new value exists.
	aliased := fmt.Sprintf(`HloModule m
body {
  s = (s32[], f32[%[1]d], f32[%[1]d], f32[%[1]d], f32[%[1]d]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = f32[%[1]d] get-tuple-element(s), index=1
  b = f32[%[1]d] get-tuple-element(s), index=2
  k = f32[%[1]d] get-tuple-element(s), index=3
  two = f32[] constant(2)
  tb = f32[%[1]d] broadcast(two), dimensions={}
  a1 = f32[%[1]d] multiply(a, tb)
  one = f32[] constant(1)
  ob = f32[%[1]d] broadcast(one), dimensions={}
  b1 = f32[%[1]d] add(b, ob)
  old = f32[%[1]d] subtract(a1, a)
  i1 = s32[] add(i, s32[] constant(1))
  ROOT t = (s32[], f32[%[1]d], f32[%[1]d], f32[%[1]d], f32[%[1]d]) tuple(i1, a1, b1, k, old)
}
cond {
  s = (s32[], f32[%[1]d], f32[%[1]d], f32[%[1]d], f32[%[1]d]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  ROOT lt = pred[] compare(i, s32[] constant(9)), direction=LT
}
ENTRY e {
  x = f32[%[1]d] parameter(0)
  z = s32[] constant(0)
  w0 = (s32[], f32[%[1]d], f32[%[1]d], f32[%[1]d], f32[%[1]d]) tuple(z, x, x, x, x)
  w = (s32[], f32[%[1]d], f32[%[1]d], f32[%[1]d], f32[%[1]d]) while(w0), condition=cond, body=body
  a = f32[%[1]d] get-tuple-element(w), index=1
  b = f32[%[1]d] get-tuple-element(w), index=2
  k = f32[%[1]d] get-tuple-element(w), index=3
  old = f32[%[1]d] get-tuple-element(w), index=4
  ROOT r = (f32[%[1]d], f32[%[1]d], f32[%[1]d], f32[%[1]d], f32[%[1]d]) tuple(a, b, k, old, x)
}`, n)
	in := f32Tensor(x...)
	keep := append([]float32(nil), x...)
	v := runLoopText(t, aliased, in)
	wa, wb, wold := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		a, b, old := x[i], x[i], x[i]
		for range 9 {
			a1 := float32(a * 2)
			old = float32(a1 - a)
			a, b = a1, float32(b+1)
		}
		wa[i], wb[i], wold[i] = a, b, old
	}
	wantF32(t, "doubled", v.Tuple[0].T, wa)
	wantF32(t, "incremented", v.Tuple[1].T, wb)
	wantF32(t, "passed through", v.Tuple[2].T, keep)
	wantF32(t, "old value read after the new", v.Tuple[3].T, wold)
	wantF32(t, "input", v.Tuple[4].T, keep)
	wantF32(t, "caller's input", in, keep)

	// Elements swapped at every step: the storage the body made for one
	// slot at a step lives on in the other slot after the next, so it must
	// not be handed out again when the first slot is replaced.
	swap := fmt.Sprintf(`HloModule m
body {
  s = (s32[], f32[%[1]d], f32[%[1]d], f32[%[1]d]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = f32[%[1]d] get-tuple-element(s), index=1
  b = f32[%[1]d] get-tuple-element(s), index=2
  three = f32[] constant(3)
  tb = f32[%[1]d] broadcast(three), dimensions={}
  a3 = f32[%[1]d] add(a, tb)
  a1 = f32[%[1]d] multiply(a3, tb)
  ra = f32[%[1]d] reverse(a), dimensions={0}
  i1 = s32[] add(i, s32[] constant(1))
  ROOT t = (s32[], f32[%[1]d], f32[%[1]d], f32[%[1]d]) tuple(i1, b, a1, ra)
}
cond {
  s = (s32[], f32[%[1]d], f32[%[1]d], f32[%[1]d]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  ROOT lt = pred[] compare(i, s32[] constant(7)), direction=LT
}
ENTRY e {
  x = f32[%[1]d] parameter(0)
  y = f32[%[1]d] negate(x)
  z = s32[] constant(0)
  w0 = (s32[], f32[%[1]d], f32[%[1]d], f32[%[1]d]) tuple(z, x, y, x)
  w = (s32[], f32[%[1]d], f32[%[1]d], f32[%[1]d]) while(w0), condition=cond, body=body
  a = f32[%[1]d] get-tuple-element(w), index=1
  b = f32[%[1]d] get-tuple-element(w), index=2
  ra = f32[%[1]d] get-tuple-element(w), index=3
  ROOT r = (f32[%[1]d], f32[%[1]d], f32[%[1]d]) tuple(a, b, ra)
}`, n)
	v = runLoopText(t, swap, f32Tensor(x...))
	sa, sb, sr := append([]float32(nil), x...), make([]float32, n), make([]float32, n)
	for i := range x {
		sb[i] = -x[i]
	}
	for range 7 {
		for i := range sr {
			sr[i] = sa[n-1-i]
		}
		a1 := make([]float32, n)
		for i := range a1 {
			a1[i] = float32(float32(sa[i]+3) * 3)
		}
		sa, sb = sb, a1
	}
	wantF32(t, "swapped a", v.Tuple[0].T, sa)
	wantF32(t, "swapped b", v.Tuple[1].T, sb)
	wantF32(t, "read after the update", v.Tuple[2].T, sr)

	// A scan-style buffer: row i written at step i, and the body reads the
	// row it is about to overwrite (still the initial zeros) and the row
	// written one step before, after the update.
	const rows, cols = 64, 40
	dus := fmt.Sprintf(`HloModule m
body {
  s = (s32[], f32[%[1]d,%[2]d], f32[%[2]d], f32[%[2]d]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  buf = f32[%[1]d,%[2]d] get-tuple-element(s), index=1
  acc = f32[%[2]d] get-tuple-element(s), index=2
  fi = f32[] convert(i)
  row = f32[1,%[2]d] broadcast(fi), dimensions={}
  z = s32[] constant(0)
  nb = f32[%[1]d,%[2]d] dynamic-update-slice(buf, row, i, z)
  before = f32[1,%[2]d] dynamic-slice(buf, i, z), dynamic_slice_sizes={1,%[2]d}
  one = s32[] constant(1)
  im = s32[] subtract(i, one)
  prev = f32[1,%[2]d] dynamic-slice(nb, im, z), dynamic_slice_sizes={1,%[2]d}
  pv = f32[%[2]d] reshape(prev)
  bv = f32[%[2]d] reshape(before)
  acc1 = f32[%[2]d] add(acc, pv)
  i1 = s32[] add(i, one)
  ROOT t = (s32[], f32[%[1]d,%[2]d], f32[%[2]d], f32[%[2]d]) tuple(i1, nb, acc1, bv)
}
cond {
  s = (s32[], f32[%[1]d,%[2]d], f32[%[2]d], f32[%[2]d]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  ROOT lt = pred[] compare(i, s32[] constant(%[1]d)), direction=LT
}
ENTRY e {
  c = f32[] constant(0)
  b0 = f32[%[1]d,%[2]d] broadcast(c), dimensions={}
  a0 = f32[%[2]d] broadcast(c), dimensions={}
  z = s32[] constant(0)
  w0 = (s32[], f32[%[1]d,%[2]d], f32[%[2]d], f32[%[2]d]) tuple(z, b0, a0, a0)
  w = (s32[], f32[%[1]d,%[2]d], f32[%[2]d], f32[%[2]d]) while(w0), condition=cond, body=body
  buf = f32[%[1]d,%[2]d] get-tuple-element(w), index=1
  acc = f32[%[2]d] get-tuple-element(w), index=2
  bv = f32[%[2]d] get-tuple-element(w), index=3
  ROOT r = (f32[%[1]d,%[2]d], f32[%[2]d], f32[%[2]d], f32[%[2]d]) tuple(buf, acc, bv, a0)
}`, rows, cols)
	v = runLoopText(t, dus)
	wbuf := make([]float32, rows*cols)
	for i := range rows {
		for j := range cols {
			wbuf[i*cols+j] = float32(i)
		}
	}
	// prev at step i is row max(i-1, 0) (dynamic-slice clamps), after row i
	// is written: row 0 at step 0 is 0, row i-1 = i-1 otherwise.
	var sum float32
	for i := range rows {
		sum = float32(sum + float32(max(i-1, 0)))
	}
	wantF32(t, "stacked rows", v.Tuple[0].T, wbuf)
	wantF32(t, "rows read back", v.Tuple[1].T, repeatF32(sum, cols))
	wantF32(t, "row before its update", v.Tuple[2].T, repeatF32(0, cols))
	wantF32(t, "initial zeros", v.Tuple[3].T, repeatF32(0, cols))

	// Nested loops: one inner body computation run by two while loops of
	// the outer body (its frame reused within a step and across steps), a
	// second loop of other types after the first.
	nested := `HloModule m
ibody {
  s = (s32[], f32[4]) parameter(0)
  j = s32[] get-tuple-element(s), index=0
  x = f32[4] get-tuple-element(s), index=1
  h = f32[] constant(0.5)
  hb = f32[4] broadcast(h), dimensions={}
  fj = f32[] convert(j)
  jb = f32[4] broadcast(fj), dimensions={}
  m = f32[4] multiply(x, hb)
  x1 = f32[4] add(m, jb)
  j1 = s32[] add(j, s32[] constant(1))
  ROOT t = (s32[], f32[4]) tuple(j1, x1)
}
icond {
  s = (s32[], f32[4]) parameter(0)
  j = s32[] get-tuple-element(s), index=0
  ROOT lt = pred[] compare(j, s32[] constant(3)), direction=LT
}
obody {
  s = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[4] get-tuple-element(s), index=1
  y = f32[4] get-tuple-element(s), index=2
  z = s32[] constant(0)
  a0 = (s32[], f32[4]) tuple(z, x)
  a = (s32[], f32[4]) while(a0), condition=icond, body=ibody
  ax = f32[4] get-tuple-element(a), index=1
  b0 = (s32[], f32[4]) tuple(i, y)
  b = (s32[], f32[4]) while(b0), condition=icond, body=ibody
  bx = f32[4] get-tuple-element(b), index=1
  s1 = f32[4] add(ax, bx)
  i1 = s32[] add(i, s32[] constant(1))
  ROOT t = (s32[], f32[4], f32[4]) tuple(i1, s1, bx)
}
ocond {
  s = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  ROOT lt = pred[] compare(i, s32[] constant(5)), direction=LT
}
ubody {
  s = (u32[], s64[3]) parameter(0)
  i = u32[] get-tuple-element(s), index=0
  v = s64[3] get-tuple-element(s), index=1
  iv = s64[] convert(i)
  ib = s64[3] broadcast(iv), dimensions={}
  k = s64[] constant(-7)
  kb = s64[3] broadcast(k), dimensions={}
  m = s64[3] multiply(v, kb)
  v1 = s64[3] add(m, ib)
  i1 = u32[] add(i, u32[] constant(4294967295))
  ROOT t = (u32[], s64[3]) tuple(i1, v1)
}
ucond {
  s = (u32[], s64[3]) parameter(0)
  i = u32[] get-tuple-element(s), index=0
  ROOT gt = pred[] compare(i, u32[] constant(4294967280)), direction=GT
}
ENTRY e {
  x = f32[4] parameter(0)
  z = s32[] constant(0)
  w0 = (s32[], f32[4], f32[4]) tuple(z, x, x)
  w = (s32[], f32[4], f32[4]) while(w0), condition=ocond, body=obody
  wx = f32[4] get-tuple-element(w), index=1
  wy = f32[4] get-tuple-element(w), index=2
  u = u32[] constant(4294967295)
  vv = s64[3] constant({1, -2, 3})
  q0 = (u32[], s64[3]) tuple(u, vv)
  q = (u32[], s64[3]) while(q0), condition=ucond, body=ubody
  qi = u32[] get-tuple-element(q), index=0
  qv = s64[3] get-tuple-element(q), index=1
  ROOT r = (f32[4], f32[4], u32[], s64[3]) tuple(wx, wy, qi, qv)
}`
	x4 := []float32{1.5, -2, 0.125, 7}
	v = runLoopText(t, nested, f32Tensor(x4...))
	inner := func(j0 int32, x []float32) []float32 {
		out := append([]float32(nil), x...)
		for j := j0; j < 3; j++ {
			for k := range out {
				out[k] = float32(float32(out[k]*0.5) + float32(j))
			}
		}
		return out
	}
	wx, wy := append([]float32(nil), x4...), append([]float32(nil), x4...)
	for i := int32(0); i < 5; i++ {
		ax, bx := inner(0, wx), inner(i, wy)
		for k := range wx {
			wx[k] = float32(ax[k] + bx[k])
		}
		wy = bx
	}
	wantF32(t, "nested x", v.Tuple[0].T, wx)
	wantF32(t, "nested y", v.Tuple[1].T, wy)
	ui, uv := uint32(4294967295), []int64{1, -2, 3}
	for ui > 4294967280 {
		for k := range uv {
			uv[k] = uv[k]*-7 + int64(ui)
		}
		ui += 4294967295
	}
	if got := v.Tuple[2].T.Data; uint32(got[0])|uint32(got[1])<<8|uint32(got[2])<<16|uint32(got[3])<<24 != ui {
		t.Fatalf("u32 counter %x, want %d", got, ui)
	}
	for k, w := range uv {
		if g := v.Tuple[3].T.I64()[k]; g != w {
			t.Fatalf("s64 state[%d] = %d, want %d", k, g, w)
		}
	}
}

func repeatF32(v float32, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// Only a box's own tensor is taken back as a box: not a view of its
// storage and dims, not an ordinary tensor of the same size, not a
// scalar view into a larger array.
func TestBoxRecognition(t *testing.T) {
	ev := New(nil, Options{})
	s := ev.newScalar(dtype.S32)
	view := &tensor.Tensor{Type: dtype.F32, Dims: s.Dims, Data: s.Data}
	small := ev.newSmall(dtype.F32, []int64{4, 4}, true)
	if small == nil || len(small.Data) != 64 || len(small.Dims) != 2 || small.Dims[0] != 4 {
		t.Fatalf("newSmall f32[4,4] = %+v", small)
	}
	sview := &tensor.Tensor{Type: dtype.S32, Dims: small.Dims, Data: small.Data}
	big := tensor.New(dtype.F32, []int64{16})
	for _, c := range []struct {
		name string
		t    *tensor.Tensor
		box  bool
	}{
		{"scalar view", view, false}, {"small view", sview, false}, {"tensor.New scalar", tensor.New(dtype.S32, nil), false},
		{"tensor.New f32[16]", big, false}, {"scalar view of an array", scalarView(big, 0), false},
		{"scalar box", s, true}, {"small box", small, true},
	} {
		if got := ev.recycleBox(c.t); got != c.box {
			t.Errorf("%s: recycleBox = %v, want %v", c.name, got, c.box)
		}
	}
	if len(ev.boxes.scalars) != 1 || len(ev.boxes.small) != 1 {
		t.Fatalf("kept %d scalar and %d small boxes, want 1 and 1", len(ev.boxes.scalars), len(ev.boxes.small))
	}
	// Reused boxes come back zeroed (newScalar always, newSmall when asked).
	s.Data[0] = 7
	small.Data[63] = 9
	if r := ev.newScalar(dtype.S64); &r.Data[0] != &s.Data[0] || len(r.Data) != 8 || r.Data[0] != 0 {
		t.Fatalf("reused scalar box: %p %x", &r.Data[0], r.Data)
	}
	if r := ev.newSmall(dtype.U8, []int64{64}, true); &r.Data[0] != &small.Data[0] || r.Data[63] != 0 || len(r.Dims) != 1 {
		t.Fatalf("reused small box: %x", r.Data)
	}
	if ev.newSmall(dtype.F32, []int64{65}, false) != nil || ev.newSmall(dtype.F32, []int64{1, 1, 1, 1, 2}, false) != nil {
		t.Fatal("newSmall took a tensor that does not fit a box")
	}
}

// Tuples taken apart inside the body (an inlined call's result) live in
// the frame's reused slices; a tuple that leaves the frame inside another
// (here a pair carried in the state) must keep its own.
func TestLoopLocalTuples(t *testing.T) {
	const src = `HloModule m
body {
  s = (s32[], (f32[3], f32[3])) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  pr = (f32[3], f32[3]) get-tuple-element(s), index=1
  a = f32[3] get-tuple-element(pr), index=0
  b = f32[3] get-tuple-element(pr), index=1
  two = f32[] constant(2)
  tb = f32[3] broadcast(two), dimensions={}
  a1 = f32[3] multiply(a, tb)
  b1 = f32[3] add(b, tb)
  loc = (f32[3], f32[3]) tuple(a1, b1)
  x = f32[3] get-tuple-element(loc), index=1
  y = f32[3] get-tuple-element(loc), index=0
  pair = (f32[3], f32[3]) tuple(x, y)
  outer = ((f32[3], f32[3]), s32[]) tuple(pair, i)
  p2 = (f32[3], f32[3]) get-tuple-element(outer), index=0
  i1 = s32[] add(i, s32[] constant(1))
  ROOT t = (s32[], (f32[3], f32[3])) tuple(i1, p2)
}
cond {
  s = (s32[], (f32[3], f32[3])) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  ROOT lt = pred[] compare(i, s32[] constant(6)), direction=LT
}
ENTRY e {
  x = f32[3] parameter(0)
  y = f32[3] negate(x)
  z = s32[] constant(0)
  pr = (f32[3], f32[3]) tuple(x, y)
  w0 = (s32[], (f32[3], f32[3])) tuple(z, pr)
  w = (s32[], (f32[3], f32[3])) while(w0), condition=cond, body=body
  ROOT r = (f32[3], f32[3]) get-tuple-element(w), index=1
}`
	m, err := hlo.ParseText([]byte(src), "local.hlo")
	if err != nil {
		t.Fatal(err)
	}
	ev := New(m, Options{})
	v, err := ev.Run([]Value{ArrayValue(f32Tensor(1, -0.5, 3))})
	if err != nil {
		t.Fatal(err)
	}
	fp := ev.frames[m.Computation("body")]
	var local []string
	for i, in := range m.Computation("body").Instructions {
		if fp.localTuple[i] {
			local = append(local, in.Name)
		}
	}
	if fmt.Sprint(local) != "[loc outer]" {
		t.Fatalf("local tuples %v, want [loc outer]", local)
	}
	a, b := []float32{1, -0.5, 3}, []float32{-1, 0.5, -3}
	for range 6 {
		na, nb := make([]float32, 3), make([]float32, 3)
		for k := range a {
			na[k], nb[k] = float32(b[k]+2), float32(a[k]*2)
		}
		a, b = na, nb
	}
	wantF32(t, "pair[0]", v.Tuple[0].T, a)
	wantF32(t, "pair[1]", v.Tuple[1].T, b)
}

// Counter conditions computed by evalWhile directly give the called
// condition's trip counts: both operand orders, every direction, signed
// and unsigned counters near their wrap, and a condition of another form
// (left to Call).
func TestCounterConditionMatchesCall(t *testing.T) {
	const tmpl = `HloModule m
body {
  s = (%[1]s[], f32[2]) parameter(0)
  i = %[1]s[] get-tuple-element(s), index=0
  x = f32[2] get-tuple-element(s), index=1
  one = f32[] constant(1)
  ob = f32[2] broadcast(one), dimensions={}
  x1 = f32[2] add(x, ob)
  st = %[1]s[] constant(%[2]s)
  i1 = %[1]s[] add(i, st)
  ROOT t = (%[1]s[], f32[2]) tuple(i1, x1)
}
cond {
  s = (%[1]s[], f32[2]) parameter(0)
  x = f32[2] get-tuple-element(s), index=1
  i = %[1]s[] get-tuple-element(s), index=0
  n = %[1]s[] constant(%[3]s)
  ROOT c = pred[] compare(%[4]s), direction=%[5]s
}
ENTRY e {
  z = %[1]s[] constant(%[6]s)
  x = f32[2] parameter(0)
  w0 = (%[1]s[], f32[2]) tuple(z, x)
  w = (%[1]s[], f32[2]) while(w0), condition=cond, body=body
  ROOT r = f32[2] get-tuple-element(w), index=1
}`
	type loop struct{ ty, step, bound, init string }
	loops := []loop{{"s32", "1", "17", "0"}, {"s32", "-3", "-2147483630", "-2147483600"}, {"u32", "4294967295", "4294967280", "4294967295"},
		{"u32", "5", "40", "3"}, {"s64", "7", "100", "-9"}, {"u64", "1", "18446744073709551614", "18446744073709551600"}}
	var direct int
	for _, l := range loops {
		for _, dir := range []string{"LT", "LE", "GT", "GE", "NE"} {
			for _, ops := range []string{"i, n", "n, i"} {
				src := fmt.Sprintf(tmpl, l.ty, l.step, l.bound, ops, dir, l.init)
				m, err := hlo.ParseText([]byte(src), "cond.hlo")
				if err != nil {
					t.Fatal(err)
				}
				if counterCondOf(m.Computation("cond")) != nil {
					direct++
				}
				run := func(off bool) (Value, error) {
					defer func(old bool) { stateSpareDisabled = old }(stateSpareDisabled)
					stateSpareDisabled = off
					ev := New(m, Options{})
					ev.Ctx = &budgetCtx{Context: context.Background(), left: 4000}
					return ev.Run([]Value{ArrayValue(f32Tensor(0, 0.5))})
				}
				want, werr := run(true)
				got, gerr := run(false)
				if (werr == nil) != (gerr == nil) || werr == nil && !bytes.Equal(got.T.Data, want.T.Data) {
					t.Fatalf("%v %s %s: direct %v (%v), called %v (%v)", l, dir, ops, got.T, gerr, want.T, werr)
				}
			}
		}
	}
	if direct != len(loops)*10 {
		t.Fatalf("%d of %d conditions computed directly", direct, len(loops)*10)
	}
	other := `HloModule m
c {
  s = (s32[], f32[2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] add(i, i)
  ROOT c = pred[] compare(i, n), direction=LT
}
ENTRY e {
  ROOT z = s32[] constant(0)
}`
	m, err := hlo.ParseText([]byte(other), "other.hlo")
	if err != nil {
		t.Fatal(err)
	}
	if counterCondOf(m.Computation("c")) != nil {
		t.Fatal("a condition computing more than a compare was taken as a counter's")
	}
}

// budgetCtx is a context that reports itself canceled after a number of
// Err calls: loops that would not end stop with an error.
type budgetCtx struct {
	context.Context
	left int
}

func (c *budgetCtx) Err() error {
	if c.left--; c.left < 0 {
		return context.Canceled
	}
	return nil
}
