package eval

import (
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
