package eval

import (
	"math"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// A loop whose body multiplies by a weight passed through the state
// unchanged scans that weight for subnormals once (operandHasSubnormal),
// not at every step; the bits are those of the same loop with the weight
// copied every step (scanned every time), with and without a subnormal in
// the weight that the flush must turn into zero (it meets 1e30 in h).
func TestWhileFrozenOperandScannedOnce(t *testing.T) {
	const tmpl = `HloModule m
body {
  st = (s32[], f32[8,64], f32[8,64], f32[64,64]) parameter(0)
  i = s32[] get-tuple-element(st), index=0
  acc = f32[8,64] get-tuple-element(st), index=1
  xin = f32[8,64] get-tuple-element(st), index=2
  w = f32[64,64] get-tuple-element(st), index=3
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  f = f32[] convert(i1)
  fb = f32[8,64] broadcast(f), dimensions={}
  x = f32[8,64] multiply(xin, fb)
  xw = f32[8,64] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  acc1 = f32[8,64] add(acc, xw)
  %PASS%
  ROOT r = (s32[], f32[8,64], f32[8,64], f32[64,64]) tuple(i1, acc1, xin, w1)
}
cond {
  st = (s32[], f32[8,64], f32[8,64], f32[64,64]) parameter(0)
  i = s32[] get-tuple-element(st), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  x = f32[8,64] parameter(0)
  w = f32[64,64] parameter(1)
  z = s32[] constant(0)
  c = f32[] constant(0)
  acc = f32[8,64] broadcast(c), dimensions={}
  s0 = (s32[], f32[8,64], f32[8,64], f32[64,64]) tuple(z, acc, x, w)
  wl = (s32[], f32[8,64], f32[8,64], f32[64,64]) while(s0), condition=cond, body=body
  ROOT accN = f32[8,64] get-tuple-element(wl), index=1
}`
	for _, subnormal := range []bool{false, true} {
		h := tensor.New(dtype.F32, []int64{8, 64})
		w := tensor.New(dtype.F32, []int64{64, 64})
		for i := range h.F32() {
			h.F32()[i] = float32(i%7) * 1e-3
		}
		h.F32()[3] = 1e30 // x[0][3], times the step number, meets w[3][2]
		for i := range w.F32() {
			w.F32()[i] = float32(i%5) * 1e-3
		}
		if subnormal {
			w.F32()[3*64+2] = math.Float32frombits(0x00400000) // w[3][2], 5.9e-39
		}
		var got [2][]float32
		for v, pass := range []string{"w1 = f32[64,64] get-tuple-element(st), index=3", "w1 = f32[64,64] copy(w)"} {
			mod, err := hlo.ParseText([]byte(strings.Replace(tmpl, "%PASS%", pass, 1)), "test.hlo")
			if err != nil {
				t.Fatal(err)
			}
			ev := New(mod, Options{})
			out, err := ev.Run([]Value{ArrayValue(h.Clone()), ArrayValue(w.Clone())})
			if err != nil {
				t.Fatal(err)
			}
			got[v] = out.T.F32()
			want := 0
			if v == 0 {
				want = 1 // w, once for the whole loop (x changes every step)
			}
			if ev.inv.scanned != want || len(ev.inv.scans) != 0 {
				t.Errorf("subnormal=%v variant %d: %d scans kept (want %d), %d left after the loop",
					subnormal, v, ev.inv.scanned, want, len(ev.inv.scans))
			}
		}
		for i := range got[0] {
			if math.Float32bits(got[0][i]) != math.Float32bits(got[1][i]) {
				t.Fatalf("subnormal=%v: h[%d] = %v with the scan kept, %v scanned every step", subnormal, i, got[0][i], got[1][i])
			}
		}
	}
}
