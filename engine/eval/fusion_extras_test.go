package eval

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// Two threefry rounds whose values are read by two groups and a tuple: the
// two groups merge into one that writes the tuple's values (its root and two
// extras), and the results are those of the op-by-op evaluation and of the
// rounds written out.
func TestFusionBlockedExtraOutputs(t *testing.T) {
	const src = `HloModule m
ENTRY e {
  x0 = u32[3,5000] parameter(0)
  x1 = u32[3,5000] parameter(1)
  k = u32[] parameter(2)
  r1 = u32[] constant(13)
  r1b = u32[3,5000] broadcast(r1), dimensions={}
  r2 = u32[] constant(19)
  r2b = u32[3,5000] broadcast(r2), dimensions={}
  a1 = u32[3,5000] add(x0, x1)
  s1 = u32[3,5000] shift-left(x1, r1b)
  t1 = u32[3,5000] shift-right-logical(x1, r2b)
  o1 = u32[3,5000] or(s1, t1)
  y1 = u32[3,5000] xor(a1, o1)
  a2 = u32[3,5000] add(a1, y1)
  kb = u32[3,5000] broadcast(k), dimensions={}
  out0 = u32[3,5000] add(a2, kb)
  s2 = u32[3,5000] shift-left(y1, r2b)
  t2 = u32[3,5000] shift-right-logical(y1, r1b)
  o2 = u32[3,5000] or(s2, t2)
  y2 = u32[3,5000] xor(a2, o2)
  out1 = u32[3,5000] add(y2, kb)
  ROOT t = (u32[3,5000], u32[3,5000], u32[3,5000]) tuple(out0, out1, y1)
}
`
	m, err := hlo.ParseText([]byte(src), "t.hlo")
	if err != nil {
		t.Fatal(err)
	}
	p := planFusion(m.Entry)
	extras := 0
	for _, g := range p.groups {
		extras += len(g.extras)
	}
	if extras == 0 {
		t.Fatal("no group writes an extra output")
	}
	if len(p.groups) != 1 {
		t.Fatalf("%d groups, want the two rounds merged into one", len(p.groups))
	}
	rng := rand.New(rand.NewSource(9))
	x0, x1 := randomInt32(rng, dtype.U32, []int64{3, 5000}), randomInt32(rng, dtype.U32, []int64{3, 5000})
	k := tensor.New(dtype.U32, nil)
	rawView[uint32](k.Data)[0] = 0x9e3779b9
	fusedVsOpByOp(t, src, x0, x1, k)
	out, err := New(m, Options{}).Run([]Value{ArrayValue(x0), ArrayValue(x1), ArrayValue(k)})
	if err != nil {
		t.Fatal(err)
	}
	l := out.Leaves()
	a, b := rawView[uint32](x0.Data), rawView[uint32](x1.Data)
	g0, g1, gy := rawView[uint32](l[0].Data), rawView[uint32](l[1].Data), rawView[uint32](l[2].Data)
	rot := func(v uint32, r uint) uint32 { return v<<r | v>>(32-r) }
	for i := range a {
		a1 := a[i] + b[i]
		y1 := a1 ^ rot(b[i], 13) // 13 left, 19 right: a rotation by 13
		a2 := a1 + y1
		y2 := a2 ^ rot(y1, 19)
		if g0[i] != a2+0x9e3779b9 || g1[i] != y2+0x9e3779b9 || gy[i] != y1 {
			t.Fatalf("element %d: %#x %#x %#x, want %#x %#x %#x", i, g0[i], g1[i], gy[i], a2+0x9e3779b9, y2+0x9e3779b9, y1)
		}
	}
}

// A value read inside a group and, before that group runs, by an
// instruction outside it (a transpose feeding the group's root) cannot be
// that group's extra output: it is computed where it stands, and the results
// are the op-by-op evaluation's.
func TestFusionBlockedExtraNeedsLaterReaders(t *testing.T) {
	const src = `HloModule m
ENTRY e {
  x = f32[64,64] parameter(0)
  y = f32[64,64] parameter(1)
  e0 = f32[64,64] exponential(x)
  m0 = f32[64,64] multiply(e0, y)
  tr = f32[64,64] transpose(m0), dimensions={1,0}
  a0 = f32[64,64] add(m0, tr)
  t0 = f32[64,64] tanh(a0)
  ROOT r = f32[64,64] multiply(t0, m0)
}
`
	m, err := hlo.ParseText([]byte(src), "t.hlo")
	if err != nil {
		t.Fatal(err)
	}
	p := planFusion(m.Entry)
	for _, g := range p.groups {
		for _, x := range g.extras {
			if x.Name == "m0" {
				t.Fatalf("m0 is an extra output of the group of %s, but the transpose reads it before that group runs", g.out().Name)
			}
		}
	}
	rng := rand.New(rand.NewSource(3))
	fusedVsOpByOp(t, src, randomF32(rng, []int64{64, 64}), randomF32(rng, []int64{64, 64}))
}

// Softmax's exp, summed and then multiplied by the row's reciprocal: the
// exp is the root of the sum's group and written whole as its extra (rows
// of whole blocks, and rows longer than a block), and the results are the
// op-by-op evaluation's, subnormals and specials included.
func TestFusionReduceRootExtra(t *testing.T) {
	for _, cols := range []int64{1000, 20000} {
		src := fmt.Sprintf(`HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[8,%[1]d] parameter(0)
  m = f32[8] parameter(1)
  mb = f32[8,%[1]d] broadcast(m), dimensions={0}
  d = f32[8,%[1]d] subtract(x, mb)
  ex = f32[8,%[1]d] custom-call(d), custom_call_target="__goldtrace$ynn", backend_config="op=exp;in=3f800000;c0=0;c1=3f800000"
  z = f32[] constant(0)
  s = f32[8] reduce(ex, z), dimensions={1}, to_apply=add
  c1 = f32[] constant(1)
  one = f32[8] broadcast(c1), dimensions={}
  r = f32[8] divide(one, s)
  rb = f32[8,%[1]d] broadcast(r), dimensions={0}
  ROOT y = f32[8,%[1]d] multiply(ex, rb)
}
`, cols)
		m, err := hlo.ParseText([]byte(src), "t.hlo")
		if err != nil {
			t.Fatal(err)
		}
		var g *fusedGroup
		for _, x := range planFusion(m.Entry).groups {
			if x.reduce != nil {
				g = x
			}
		}
		if g == nil || len(g.extras) != 1 || g.extras[0].Name != "ex" {
			t.Fatalf("cols %d: the sum's group does not write the exp as its extra", cols)
		}
		rng := rand.New(rand.NewSource(cols))
		x := randomF32(rng, []int64{8, cols})
		xs := x.F32()
		xs[3], xs[5], xs[7], xs[11] = 1e-40, float32(math.Inf(1)), float32(math.NaN()), -1e-39
		mx := randomF32(rng, []int64{8})
		if !fusedVsOpByOp(t, src, x, mx) {
			t.Fatal("nothing was fused")
		}
	}
}

// A member of a reduce's group that is not its root, read after the
// reduce (cross-entropy's one_hot select, negated and summed, then added
// to the gradient): written whole as the group's extra, with the op-by-op
// evaluation's bits.
func TestFusionReduceGroupExtraMember(t *testing.T) {
	const src = `HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = pred[64,1000] parameter(0)
  x = f32[64,1000] parameter(1)
  c = f32[] constant(-0.00012207031)
  cb = f32[64,1000] broadcast(c), dimensions={}
  z = f32[] constant(0)
  zb = f32[64,1000] broadcast(z), dimensions={}
  sel = f32[64,1000] select(p, cb, zb)
  ng = f32[64,1000] custom-call(sel), custom_call_target="__goldtrace$ynn", backend_config="op=negate;in=3f800000;c0=0;c1=3f800000"
  s = f32[64] reduce(ng, z), dimensions={1}, to_apply=add
  sb = f32[64,1000] broadcast(s), dimensions={0}
  m = f32[64,1000] multiply(sb, x)
  ROOT y = f32[64,1000] add(sel, m)
}
`
	m, err := hlo.ParseText([]byte(src), "t.hlo")
	if err != nil {
		t.Fatal(err)
	}
	var g *fusedGroup
	for _, x := range planFusion(m.Entry).groups {
		if x.reduce != nil {
			g = x
		}
	}
	if g == nil || len(g.extras) != 1 || g.extras[0].Name != "sel" {
		t.Fatal("the sum's group does not write the select as its extra")
	}
	rng := rand.New(rand.NewSource(5))
	p := tensor.New(dtype.Pred, []int64{64, 1000})
	for i := range p.Data {
		if rng.Intn(100) == 0 {
			p.Data[i] = 1
		}
	}
	if !fusedVsOpByOp(t, src, p, randomF32(rng, []int64{64, 1000})) {
		t.Fatal("nothing was fused")
	}
}
