package eval

import (
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// recycleLoop is a scan whose body makes owned intermediates and also lets
// them escape: a reshape viewing a dot's result outlives the dot's last
// direct use, a tuple carries a value out, an update writes in place.
const recycleLoop = `HloModule recycle

body {
  s = (s32[], f32[8,64], f32[10,8,64]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  h = f32[8,64] get-tuple-element(s), index=1
  acc = f32[10,8,64] get-tuple-element(s), index=2
  wi = s32[64,128] iota(), iota_dimension=1
  wf = f32[64,128] convert(wi)
  c = f32[] constant(0.001)
  cb = f32[64,128] broadcast(c), dimensions={}
  w = f32[64,128] multiply(wf, cb)
  z = f32[8,128] dot(h, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  zr = f32[8,2,64] reshape(z)
  z1 = f32[8,64] slice(z), slice={[0:8], [0:64]}
  z2 = f32[8,64] slice(z), slice={[0:8], [64:128]}
  t1 = f32[8,64] tanh(z1)
  n2 = f32[8,64] negate(z2)
  e2 = f32[8,64] exponential(n2)
  one = f32[] constant(1)
  ob = f32[8,64] broadcast(one), dimensions={}
  d2 = f32[8,64] add(e2, ob)
  g2 = f32[8,64] divide(ob, d2)
  hn = f32[8,64] multiply(t1, g2)
  y = f32[8,128] dot(hn, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ys = f32[8,64] slice(y), slice={[0:8], [32:96]}
  zs = f32[8,1,64] slice(zr), slice={[0:8], [1:2], [0:64]}
  zt = f32[8,64] reshape(zs)
  k = f32[8,64] sine(zt)
  hk = f32[8,64] add(hn, k)
  h2 = f32[8,64] subtract(hk, ys)
  up = f32[1,8,64] reshape(h2)
  zero = s32[] constant(0)
  acc2 = f32[10,8,64] dynamic-update-slice(acc, up, i, zero, zero)
  i1 = s32[] add(i, s32[] constant(1))
  ROOT t = (s32[], f32[8,64], f32[10,8,64]) tuple(i1, h2, acc2)
}

cond {
  s = (s32[], f32[8,64], f32[10,8,64]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  ROOT lt = pred[] compare(i, s32[] constant(10)), direction=LT
}

ENTRY e {
  h0 = f32[8,64] parameter(0)
  z = f32[] constant(0)
  a0 = f32[10,8,64] broadcast(z), dimensions={}
  i0 = s32[] constant(0)
  init = (s32[], f32[8,64], f32[10,8,64]) tuple(i0, h0, a0)
  w = (s32[], f32[8,64], f32[10,8,64]) while(init), condition=cond, body=body
  hl = f32[8,64] get-tuple-element(w), index=1
  al = f32[10,8,64] get-tuple-element(w), index=2
  hr = f32[512] reshape(hl)
  ROOT out = (f32[8,64], f32[10,8,64], f32[512]) tuple(hl, al, hr)
}
`

// Recycling the storage of dead intermediates changes no bit of a loop's
// results (values that escape into views, tuples and in-place updates are
// never reused while alive), and storage is in fact reused.
func TestRecycledStorageMatchesFresh(t *testing.T) {
	m, err := hlo.ParseText([]byte(recycleLoop), "recycle.hlo")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(12))
	for trial := 0; trial < 4; trial++ {
		h0 := tensor.New(dtype.F32, []int64{8, 64}) // finite: a NaN would reach every element
		for i := range h0.F32() {
			h0.F32()[i] = float32(rng.NormFloat64())
		}
		for _, fused := range []bool{true, false} {
			fusionDisabled = !fused
			ev := New(m, Options{})
			got, err := ev.Run([]Value{ArrayValue(h0.Clone())})
			if err != nil {
				t.Fatal(err)
			}
			if ev.pool.reuse == 0 {
				t.Fatalf("fused=%v: no storage was reused", fused)
			}
			recycleDisabled = true
			want, err := New(m, Options{}).Run([]Value{ArrayValue(h0.Clone())})
			recycleDisabled, fusionDisabled = false, false
			if err != nil {
				t.Fatal(err)
			}
			gl, wl := got.Leaves(), want.Leaves()
			for i := range wl {
				if string(gl[i].Data) != string(wl[i].Data) {
					t.Fatalf("fused=%v: output %d differs with recycling", fused, i)
				}
			}
			if !tensorsShareNothing(gl) {
				t.Fatalf("fused=%v: outputs 0 and 2 should share storage only as a reshape", fused)
			}
		}
	}
}

// tensorsShareNothing reports whether the loop's outputs overlap only where
// the module makes them (output 2 is a reshape of output 0).
func tensorsShareNothing(ts []*tensor.Tensor) bool {
	return !shares(ArrayValue(ts[1]), ts[0]) && !shares(ArrayValue(ts[1]), ts[2])
}

// recycleCarry is a loop whose carried state the body remakes every step
// (storage worth recycling once the step after replaced it), swaps
// between slots (old storage the new state still holds), views in two
// slots at once, and takes through a tuple of one value twice (an inlined
// call's result).
const recycleCarry = `HloModule carry

body {
  s = (s32[], f32[32,64], f32[32,64], f32[2048], f32[32,64]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = f32[32,64] get-tuple-element(s), index=1
  b = f32[32,64] get-tuple-element(s), index=2
  e = f32[32,64] get-tuple-element(s), index=4
  ta = f32[32,64] tanh(a)
  a1 = f32[32,64] add(ta, b)
  r1 = f32[2048] reshape(a1)
  ne = f32[32,64] negate(e)
  ee = f32[32,64] exponential(ne)
  h = f32[] constant(0.5)
  hb = f32[32,64] broadcast(h), dimensions={}
  e1 = f32[32,64] multiply(ee, hb)
  e2 = f32[32,64] add(e1, a)
  tp = (f32[32,64], f32[32,64]) tuple(e2, e2)
  g0 = f32[32,64] get-tuple-element(tp), index=0
  g1 = f32[32,64] get-tuple-element(tp), index=1
  a2 = f32[32,64] add(a1, g1)
  r2 = f32[2048] reshape(a2)
  i1 = s32[] add(i, s32[] constant(1))
  ROOT t = (s32[], f32[32,64], f32[32,64], f32[2048], f32[32,64]) tuple(i1, a2, a, r2, g0)
}

cond {
  s = (s32[], f32[32,64], f32[32,64], f32[2048], f32[32,64]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  ROOT lt = pred[] compare(i, s32[] constant(7)), direction=LT
}

ENTRY e {
  a0 = f32[32,64] parameter(0)
  z = f32[] constant(0)
  r0 = f32[2048] broadcast(z), dimensions={}
  i0 = s32[] constant(0)
  init = (s32[], f32[32,64], f32[32,64], f32[2048], f32[32,64]) tuple(i0, a0, a0, r0, a0)
  ROOT w = (s32[], f32[32,64], f32[32,64], f32[2048], f32[32,64]) while(init), condition=cond, body=body
}
`

// The storage of carried state that the body made is reused once the next
// step has replaced it, and no bit of the results changes; state the new
// step still holds (swapped into another slot, or viewed) is left alone,
// and so are the inputs.
func TestRecycledCarryMatchesFresh(t *testing.T) {
	m, err := hlo.ParseText([]byte(recycleCarry), "carry.hlo")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(3))
	a0 := tensor.New(dtype.F32, []int64{32, 64})
	for i := range a0.F32() {
		a0.F32()[i] = float32(rng.NormFloat64())
	}
	orig := a0.Clone()
	defer func(old bool) { loopProgramDisabled = old }(loopProgramDisabled)
	for _, c := range []struct{ fused, program bool }{{true, false}, {false, false}, {true, true}, {false, true}} {
		fused := c.fused
		fusionDisabled, loopProgramDisabled = !fused, !c.program
		ev := New(m, Options{})
		got, err := ev.Run([]Value{ArrayValue(a0)})
		if err != nil {
			t.Fatal(err)
		}
		reused := ev.pool.reuse
		recycleDisabled = true
		want, err := New(m, Options{}).Run([]Value{ArrayValue(a0)})
		recycleDisabled, fusionDisabled = false, false
		if err != nil {
			t.Fatal(err)
		}
		// (A loop program's groups write into the loop's own buffers
		// instead: reused without the pool.)
		if reused == 0 && !(c.program && fused) {
			t.Errorf("fused=%v program=%v: no storage was reused", fused, c.program)
		}
		gl, wl := got.Leaves(), want.Leaves()
		for i := range wl {
			if string(gl[i].Data) != string(wl[i].Data) {
				t.Fatalf("fused=%v: output %d differs with recycling", fused, i)
			}
		}
		if string(a0.Data) != string(orig.Data) {
			t.Fatalf("fused=%v: the input changed", fused)
		}
	}
}
