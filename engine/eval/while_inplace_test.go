package eval

import (
	"fmt"
	"slices"
	"strings"
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

// A fori_loop-shaped loop: the body calls a step computation that returns
// a tuple, and the stacked buffer reaches its dynamic-update-slice two calls
// deep. Variants that let another instruction see the buffer (or reuse the
// updating computation) must keep the copying path; every variant computes
// the same values.
func TestWhileInPlaceNestedCalls(t *testing.T) {
	const tmpl = `HloModule m
upd {
  b = f32[4,2] parameter(0)
  r = f32[2] parameter(1)
  r2 = f32[1,2] reshape(r)
  i = s32[] parameter(2)
  z = s32[] constant(0)
  ROOT d = f32[4,2] dynamic-update-slice(b, r2, i, z)
}
upd2 {
  b = f32[4,2] parameter(0)
  r = f32[2] parameter(1)
  r2 = f32[1,2] reshape(r)
  i = s32[] parameter(2)
  z = s32[] constant(0)
  ROOT d = f32[4,2] dynamic-update-slice(b, r2, i, z)
}
step {
  i = s32[] parameter(0)
  h = f32[2] parameter(1)
  b = f32[4,2] parameter(2)
  one = f32[] constant(1)
  ones = f32[2] broadcast(one), dimensions={}
  %READ%
  one_i = s32[] constant(1)
  i1 = s32[] add(i, one_i)
  d = f32[4,2] call(b, h1, i), to_apply=upd
  ROOT t = (s32[], f32[2], f32[4,2]) tuple(i1, h1, d)
}
body {
  s = (s32[], f32[2], f32[4,2], f32[4,2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  h = f32[2] get-tuple-element(s), index=1
  b = f32[4,2] get-tuple-element(s), index=2
  k = f32[4,2] get-tuple-element(s), index=3
  c = (s32[], f32[2], f32[4,2]) call(i, h, b), to_apply=step
  i1 = s32[] get-tuple-element(c), index=0
  h1 = f32[2] get-tuple-element(c), index=1
  d = f32[4,2] get-tuple-element(c), index=2
  %EXTRA%
  ROOT t = (s32[], f32[2], f32[4,2], f32[4,2]) tuple(i1, h1, d, %K%)
}
cond {
  s = (s32[], f32[2], f32[4,2], f32[4,2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  p = f32[4,2] parameter(0)
  z = s32[] constant(0)
  zf = f32[] constant(0)
  h0 = f32[2] broadcast(zf), dimensions={}
  w0 = (s32[], f32[2], f32[4,2], f32[4,2]) tuple(z, h0, p, p)
  w = (s32[], f32[2], f32[4,2], f32[4,2]) while(w0), condition=cond, body=body
  d = f32[4,2] get-tuple-element(w), index=2
  k = f32[4,2] get-tuple-element(w), index=3
  ROOT t = (f32[4,2], f32[4,2], f32[4,2]) tuple(d, k, p)
}`
	const plain = "h1 = f32[2] add(h, ones)"
	// The step reads row i of the buffer before updating it.
	const read = "zi = s32[] constant(0)\n  row = f32[1,2] dynamic-slice(b, i, zi), dynamic_slice_sizes={1,2}\n" +
		"  rv = f32[2] reshape(row)\n  h2 = f32[2] add(h, ones)\n  h1 = f32[2] add(h2, rv)"
	for _, tc := range []struct {
		name, read, extra, k string
		inPlace              bool
	}{
		{"in place", plain, "", "k", true},
		{"read in step", read, "", "k", false},
		{"result used twice", plain, "", "d", false},
		{"call tuple used whole", plain, "dup = (s32[], f32[2], f32[4,2]) copy(c)", "k", false},
		{"updater called twice", plain, "zz = s32[] constant(0)\n  k2 = f32[4,2] call(k, h1, zz), to_apply=upd", "k2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.NewReplacer("%READ%", tc.read, "%EXTRA%", tc.extra, "%K%", tc.k).Replace(tmpl)
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
			want := []int(nil)
			if tc.inPlace {
				want = []int{2}
			}
			if p := ev.inPlace().plan(m, w); !slices.Equal(p.slots, want) {
				t.Fatalf("in-place slots %v, want %v", p.slots, want)
			}
			orig := []float32{-1, -2, -3, -4, -5, -6, -7, -8}
			p := f32s(orig...)
			p.Dims = []int64{4, 2}
			v, err := ev.Run([]Value{ArrayValue(p)})
			if err != nil {
				t.Fatal(err)
			}
			// The loop by hand, with value semantics.
			buf, k := slices.Clone(orig), slices.Clone(orig)
			h := []float32{0, 0}
			for i := range 4 {
				for j := range h {
					h[j]++
					if tc.read == read {
						h[j] += buf[2*i+j]
					}
				}
				copy(buf[2*i:], h)
				switch tc.k {
				case "d":
					k = slices.Clone(buf)
				case "k2":
					copy(k[0:], h)
				}
			}
			for i, want := range [][]float32{buf, k, orig} {
				if got := v.Tuple[i].T.F32(); !slices.Equal(got, want) {
					t.Errorf("output %d = %v, want %v", i, got, want)
				}
			}
		})
	}
}

// The same loop after XLA's call inlining (as the golden driver legalizes
// it): the step's result is a tuple built in the body and taken apart by
// get-tuple-elements, the update itself in the body.
func TestWhileInPlaceInlinedTuple(t *testing.T) {
	const tmpl = `HloModule m
body {
  s = (s32[], f32[2], f32[4,2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  h = f32[2] get-tuple-element(s), index=1
  b = f32[4,2] get-tuple-element(s), index=2
  one = f32[] constant(1)
  ones = f32[2] broadcast(one), dimensions={}
  h1 = f32[2] add(h, ones)
  r2 = f32[1,2] reshape(h1)
  z = s32[] constant(0)
  d = f32[4,2] dynamic-update-slice(b, r2, i, z)
  one_i = s32[] constant(1)
  i1 = s32[] add(i, one_i)
  c = (s32[], f32[2], f32[4,2]) tuple(i1, h1, d)
  ci = s32[] get-tuple-element(c), index=0
  ch = f32[2] get-tuple-element(c), index=1
  cd = f32[4,2] get-tuple-element(c), index=2
  %EXTRA%
  ROOT t = (s32[], f32[2], f32[4,2]) tuple(ci, ch, cd)
}
cond {
  s = (s32[], f32[2], f32[4,2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  p = f32[4,2] parameter(0)
  z = s32[] constant(0)
  zf = f32[] constant(0)
  h0 = f32[2] broadcast(zf), dimensions={}
  w0 = (s32[], f32[2], f32[4,2]) tuple(z, h0, p)
  w = (s32[], f32[2], f32[4,2]) while(w0), condition=cond, body=body
  d = f32[4,2] get-tuple-element(w), index=2
  ROOT t = (f32[4,2], f32[4,2]) tuple(d, p)
}`
	for _, tc := range []struct {
		name, extra string
		inPlace     bool
	}{
		{"in place", "", true},
		{"element taken twice", "cd2 = f32[4,2] get-tuple-element(c), index=2", false},
		{"tuple used whole", "cc = (s32[], f32[2], f32[4,2]) copy(c)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := hlo.ParseText([]byte(strings.Replace(tmpl, "%EXTRA%", tc.extra, 1)), "test.hlo")
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
			want := []int(nil)
			if tc.inPlace {
				want = []int{2}
			}
			if p := ev.inPlace().plan(m, w); !slices.Equal(p.slots, want) {
				t.Fatalf("in-place slots %v, want %v", p.slots, want)
			}
			orig := []float32{-1, -2, -3, -4, -5, -6, -7, -8}
			p := f32s(orig...)
			p.Dims = []int64{4, 2}
			v, err := ev.Run([]Value{ArrayValue(p)})
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range [][]float32{{1, 1, 2, 2, 3, 3, 4, 4}, orig} {
				if got := v.Tuple[i].T.F32(); !slices.Equal(got, want) {
					t.Errorf("output %d = %v, want %v", i, got, want)
				}
			}
		})
	}
}

// A stacked output that starts as a broadcast made for the loop alone is
// updated in place without the copy on entry; one the entry also returns
// is copied first, so the entry's zeros stay zeros.
func TestWhileInPlaceFreshInit(t *testing.T) {
	const tmpl = `HloModule m
body {
  s = (s32[], f32[4,2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  b = f32[4,2] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  f = f32[] convert(i1)
  r = f32[1,2] broadcast(f), dimensions={}
  z = s32[] constant(0)
  d = f32[4,2] dynamic-update-slice(b, r, i, z)
  ROOT t = (s32[], f32[4,2]) tuple(i1, d)
}
cond {
  s = (s32[], f32[4,2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  z = s32[] constant(0)
  zf = f32[] constant(0)
  zeros = f32[4,2] broadcast(zf), dimensions={}
  w0 = (s32[], f32[4,2]) tuple(z, zeros)
  w = (s32[], f32[4,2]) while(w0), condition=cond, body=body
  d = f32[4,2] get-tuple-element(w), index=1
  ROOT t = (f32[4,2], f32[4,2]) tuple(d, %SECOND%)
}`
	for _, tc := range []struct {
		second string
		fresh  bool
	}{{"d", true}, {"zeros", false}} {
		m, err := hlo.ParseText([]byte(strings.Replace(tmpl, "%SECOND%", tc.second, 1)), "test.hlo")
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
		if p := ev.inPlace().plan(m, w); !slices.Equal(p.slots, []int{1}) || !slices.Equal(p.fresh, []bool{tc.fresh}) {
			t.Fatalf("second output %s: in-place slots %v fresh %v, want [1] [%v]", tc.second, p.slots, p.fresh, tc.fresh)
		}
		v, err := ev.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		upd := []float32{1, 1, 2, 2, 3, 3, 4, 4}
		second := upd
		if !tc.fresh {
			second = make([]float32, 8)
		}
		for i, want := range [][]float32{upd, second} {
			if got := v.Tuple[i].T.F32(); !slices.Equal(got, want) {
				t.Errorf("second output %s: output %d = %v, want %v", tc.second, i, got, want)
			}
		}
	}
}

// The XLA-optimized form of a scan: the stacked output is updated inside a
// loop fusion (the dynamic-update-slice is the fused computation's root).
// The plan follows the fusion as it does a call, the values are those of
// the copying path, the loop's operand keeps its contents, and a fusion
// computation also called from elsewhere keeps the copying path.
func TestWhileInPlaceThroughFusion(t *testing.T) {
	const tmpl = `HloModule m
fused {
  b = f32[4,2] parameter(0)
  i = s32[] parameter(1)
  f = f32[] convert(i)
  r = f32[1,2] broadcast(f), dimensions={}
  z = s32[] constant(0)
  ROOT d = f32[4,2] dynamic-update-slice(b, r, i, z)
}
body {
  s = (s32[], f32[4,2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  b = f32[4,2] get-tuple-element(s), index=1
  d = f32[4,2] fusion(b, i), kind=kLoop, calls=fused
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT t = (s32[], f32[4,2]) tuple(i1, d)
}
cond {
  s = (s32[], f32[4,2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  p = f32[4,2] parameter(0)
  z = s32[] constant(0)
  w0 = (s32[], f32[4,2]) tuple(z, p)
  w = (s32[], f32[4,2]) while(w0), condition=cond, body=body
  d = f32[4,2] get-tuple-element(w), index=1
  ROOT t = (f32[4,2], f32[4,2]%s) tuple(d, p%s)
}`
	for _, c := range []struct {
		name       string
		shape, use string
		slots      []int
	}{
		{"fusion", "", "", []int{1}},
		{"fusion called twice", ", f32[4,2]", ", x\n  x = f32[4,2] fusion(p, z), kind=kLoop, calls=fused", nil},
	} {
		src := fmt.Sprintf(tmpl, c.shape, c.use)
		if c.use != "" {
			// the second fusion must come before the root that uses it
			src = strings.Replace(src, "  ROOT t = (f32[4,2], f32[4,2], f32[4,2]) tuple(d, p, x\n  x = f32[4,2] fusion(p, z), kind=kLoop, calls=fused)",
				"  x = f32[4,2] fusion(p, z), kind=kLoop, calls=fused\n  ROOT t = (f32[4,2], f32[4,2], f32[4,2]) tuple(d, p, x)", 1)
		}
		m, err := hlo.ParseText([]byte(src), "test.hlo")
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, src)
		}
		var w *hlo.Instruction
		for _, in := range m.Entry.Instructions {
			if in.Opcode == "while" {
				w = in
			}
		}
		ev := New(m, Options{})
		if p := ev.inPlace().plan(m, w); !slices.Equal(p.slots, c.slots) {
			t.Fatalf("%s: in-place slots %v, want %v", c.name, p.slots, c.slots)
		}
		p := f32s(-1, -2, -3, -4, -5, -6, -7, -8)
		p.Dims = []int64{4, 2}
		v, err := ev.Run([]Value{ArrayValue(p)})
		if err != nil {
			t.Fatal(err)
		}
		orig := []float32{-1, -2, -3, -4, -5, -6, -7, -8}
		if got := v.Tuple[0].T.F32(); !slices.Equal(got, []float32{0, 0, 1, 1, 2, 2, 3, 3}) {
			t.Errorf("%s: stacked = %v", c.name, got)
		}
		if got := v.Tuple[1].T.F32(); !slices.Equal(got, orig) {
			t.Errorf("%s: the loop's operand returned = %v", c.name, got)
		}
		if got := p.F32(); !slices.Equal(got, orig) {
			t.Errorf("%s: the input changed: %v", c.name, got)
		}
	}
}

// A loop that reads a row of its buffer and writes a function of it back
// (x = x.at[i].set(x[(i+1)%4] + 1)) updates the buffer in place: the read
// runs first, as the update depends on it. A read the update does not
// depend on (its value leaves through the state) keeps the copies.
func TestWhileInPlaceAfterReads(t *testing.T) {
	const tmpl = `HloModule m
body {
  s = (s32[], f32[4,2], f32[1,2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  four = s32[] constant(4)
  z = s32[] constant(0)
  i1 = s32[] add(i, one)
  j = s32[] remainder(i1, four)
  b = f32[4,2] get-tuple-element(s), index=1
  r = f32[1,2] dynamic-slice(b, j, z), dynamic_slice_sizes={1,2}
  onef = f32[] constant(1)
  ones = f32[1,2] broadcast(onef), dimensions={}
  %s
  d = f32[4,2] dynamic-update-slice(b, u, i, z)
  ROOT t = (s32[], f32[4,2], f32[1,2]) tuple(i1, d, r)
}
cond {
  s = (s32[], f32[4,2], f32[1,2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  p = f32[4,2] parameter(0)
  z = s32[] constant(0)
  q = f32[1,2] slice(p), slice={[0:1], [0:2]}
  w0 = (s32[], f32[4,2], f32[1,2]) tuple(z, p, q)
  w = (s32[], f32[4,2], f32[1,2]) while(w0), condition=cond, body=body
  d = f32[4,2] get-tuple-element(w), index=1
  ROOT t = (f32[4,2], f32[4,2]) tuple(d, p)
}`
	for _, c := range []struct {
		update string
		slots  []int
		want   []float32
	}{
		// Rows 0..2 take the next row (not yet written) + 1; row 3 takes the new row 0 + 1.
		{"u = f32[1,2] add(r, ones)", []int{1}, []float32{-2, -3, -4, -5, -6, -7, -1, -2}},
		{"u = f32[1,2] add(ones, ones)", nil, []float32{2, 2, 2, 2, 2, 2, 2, 2}},
	} {
		m, err := hlo.ParseText([]byte(fmt.Sprintf(tmpl, c.update)), "test.hlo")
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
		if p := ev.inPlace().plan(m, w); !slices.Equal(p.slots, c.slots) {
			t.Fatalf("%s: in-place slots %v, want %v", c.update, p.slots, c.slots)
		}
		orig := []float32{-1, -2, -3, -4, -5, -6, -7, -8}
		p := f32s(orig...)
		p.Dims = []int64{4, 2}
		v, err := ev.Run([]Value{ArrayValue(p)})
		if err != nil {
			t.Fatal(err)
		}
		if got := v.Tuple[0].T.F32(); !slices.Equal(got, c.want) {
			t.Errorf("%s: result %v, want %v", c.update, got, c.want)
		}
		if got := v.Tuple[1].T.F32(); !slices.Equal(got, orig) {
			t.Errorf("%s: parameter became %v", c.update, got)
		}
	}
}
