package eval

import (
	"math/rand"
	"testing"

	"goldtrace/engine/hlo"
)

// TestFusionCleanBroadcasts: a broadcast whose source holds no subnormal is
// known clean in every block (cleanBroadcasts), one whose source holds one
// is scanned as before; both give the op-by-op bits, flushed operands
// included.
func TestFusionCleanBroadcasts(t *testing.T) {
	const src = `HloModule m
ENTRY e {
  x = f32[16,3000] parameter(0)
  a = f32[16] parameter(1)
  b = f32[3000] parameter(2)
  ab = f32[16,3000] broadcast(a), dimensions={0}
  bb = f32[16,3000] broadcast(b), dimensions={1}
  m = f32[16,3000] multiply(x, ab)
  ROOT y = f32[16,3000] divide(m, bb)
}
`
	rng := rand.New(rand.NewSource(3))
	for _, dirtyA := range []bool{false, true} {
		x := randomF32(rng, []int64{16, 3000})
		a := randomF32(rng, []int64{16})
		b := randomF32(rng, []int64{3000})
		xs, as, bs := x.F32(), a.F32(), b.F32()
		for i := range as {
			as[i] = 1 + float32(i)/8 // normal, no subnormal
		}
		for i := range bs {
			bs[i] = 1 + float32(i)*1e-3
		}
		xs[7], xs[5000] = 1e-39, -3e-39
		bs[11] = 2e-39 // b's broadcast holds a subnormal
		if dirtyA {
			as[3] = 1e-40
		}
		if !fusedVsOpByOp(t, src, x, a, b) {
			t.Fatal("nothing was fused")
		}
	}
}

// TestResultFlushedHolds: the values resultFlushed calls clean hold no
// subnormal whichever way they are computed (alone, as a group's root, as
// an extra read by a later group), on operands whose exact results are
// subnormal; and a group reading them gives the op-by-op bits.
func TestResultFlushedHolds(t *testing.T) {
	const src = `HloModule m
ENTRY e {
  x = f32[4,3000] parameter(0)
  y = f32[4,3000] parameter(1)
  m = f32[4,3000] multiply(x, y)
  a = f32[4,3000] add(m, y)
  s = f32[4,3000] subtract(a, y)
  d = f32[4,3000] divide(s, x)
  e = f32[4,3000] custom-call(d), custom_call_target="__goldtrace$ynn", backend_config="op=exp;in=3f800000;c0=0;c1=3f800000"
  q = f32[4,3000] divide(y, d)
  ROOT t = (f32[4,3000], f32[4,3000], f32[4,3000], f32[4,3000], f32[4,3000]) tuple(m, s, d, e, q)
}
`
	rng := rand.New(rand.NewSource(11))
	x, y := randomF32(rng, []int64{4, 3000}), randomF32(rng, []int64{4, 3000})
	xs, ys := x.F32(), y.F32()
	for i := range xs {
		if i%3 == 0 {
			xs[i], ys[i] = 1e-20*(1+float32(i%7)), -1e-20*(1+float32(i%5)) // subnormal products
		}
		if i%11 == 0 {
			ys[i] = 1e-39
		}
	}
	if !fusedVsOpByOp(t, src, x, y) {
		t.Fatal("nothing was fused")
	}
	m, err := hlo.ParseText([]byte(src), "t.hlo")
	if err != nil {
		t.Fatal(err)
	}
	got, err := New(m, Options{}).Run([]Value{ArrayValue(x), ArrayValue(y)})
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range got.Leaves() {
		if k := firstSubnormal(l.F32()); k >= 0 {
			t.Errorf("output %d holds a subnormal at %d: %g", i, k, l.F32()[k])
		}
	}
}
