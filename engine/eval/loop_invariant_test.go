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

// A recurrent step h = tanh(h·W + x·U) over a loop: with W and U passed
// through the state unchanged their packings are kept (once each, for the
// whole loop); with the body returning copies of them instead, every step
// takes the plain path. Both give the same bits, for row counts on and off
// the kernels' heights, a contraction deeper than kc, ragged column panels,
// and W read transposed.
func TestWhileInvariantProductsKeepPacking(t *testing.T) {
	const tmpl = `HloModule m
step {
  h = f32[%M%,%K%] parameter(0)
  w = f32[%WD%] parameter(1)
  x = f32[%M%,40] parameter(2)
  u = f32[40,%K%] parameter(3)
  hw = f32[%M%,%K%] dot(h, w), lhs_contracting_dims={1}, rhs_contracting_dims={%WC%}
  xu = f32[%M%,%K%] dot(x, u), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s = f32[%M%,%K%] add(hw, xu)
  ROOT t = f32[%M%,%K%] tanh(s)
}
body {
  st = (s32[], f32[%M%,%K%], f32[%WD%], f32[%M%,40], f32[40,%K%]) parameter(0)
  i = s32[] get-tuple-element(st), index=0
  h = f32[%M%,%K%] get-tuple-element(st), index=1
  w = f32[%WD%] get-tuple-element(st), index=2
  x = f32[%M%,40] get-tuple-element(st), index=3
  u = f32[40,%K%] get-tuple-element(st), index=4
  h1 = f32[%M%,%K%] call(h, w, x, u), to_apply=step
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  %PASS%
  ROOT r = (s32[], f32[%M%,%K%], f32[%WD%], f32[%M%,40], f32[40,%K%]) tuple(i1, h1, w1, x, u1)
}
cond {
  st = (s32[], f32[%M%,%K%], f32[%WD%], f32[%M%,40], f32[40,%K%]) parameter(0)
  i = s32[] get-tuple-element(st), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  h0 = f32[%M%,%K%] parameter(0)
  w = f32[%WD%] parameter(1)
  x = f32[%M%,40] parameter(2)
  u = f32[40,%K%] parameter(3)
  z = s32[] constant(0)
  s0 = (s32[], f32[%M%,%K%], f32[%WD%], f32[%M%,40], f32[40,%K%]) tuple(z, h0, w, x, u)
  w8 = (s32[], f32[%M%,%K%], f32[%WD%], f32[%M%,40], f32[40,%K%]) while(s0), condition=cond, body=body
  ROOT hN = f32[%M%,%K%] get-tuple-element(w8), index=1
}`
	rng := rand.New(rand.NewSource(5))
	for _, m := range []int{1, 4, 13, 16, 33} {
		for _, transposed := range []bool{false, true} {
			const k = 300
			wd, wc := fmt.Sprintf("%d,%d", k, k), "0"
			if transposed {
				wc = "1"
			}
			args := []Value{}
			for _, dims := range [][]int64{{int64(m), k}, {k, k}, {int64(m), 40}, {40, k}} {
				x := tensor.New(dtype.F32, dims)
				for i := range x.F32() {
					x.F32()[i] = float32(rng.NormFloat64() * 0.1)
				}
				args = append(args, ArrayValue(x))
			}
			var got [2][]float32
			for v, pass := range []string{"w1 = f32[%WD%] get-tuple-element(st), index=2\n  u1 = f32[40,%K%] get-tuple-element(st), index=4",
				"w1 = f32[%WD%] copy(w)\n  u1 = f32[40,%K%] copy(u)"} {
				src := strings.NewReplacer("%PASS%", pass).Replace(tmpl)
				src = strings.NewReplacer("%M%", fmt.Sprint(m), "%K%", fmt.Sprint(k), "%WD%", wd, "%WC%", wc).Replace(src)
				mod, err := hlo.ParseText([]byte(src), "test.hlo")
				if err != nil {
					t.Fatal(err)
				}
				ev := New(mod, Options{})
				out, err := ev.Run(args)
				if err != nil {
					t.Fatal(err)
				}
				got[v] = out.T.F32()
				wantPacked := 0
				if v == 0 && !floatsOnBLAS {
					// h·W (or h·Wᵀ) and x·u: one packing each in today's
					// order; in YNNPACK's, one per run of columns with
					// their own K blocks, none for lane (tile_k 2/4) plans.
					wantPacked = keptPackings(t, m, k, k, transposed) + keptPackings(t, m, 40, k, false)
					if m == 1 && transposed {
						wantPacked-- // h·Wᵀ is a matrix-vector product in XLA's order (dot_order.go)
					}
				}
				if ev.inv.packed != wantPacked || len(ev.inv.packs) != 0 || ev.inv.bytes != 0 || len(ev.inv.spans) != 0 {
					t.Errorf("m=%d transposed=%v variant %d: %d packings made (want %d), %d kept after the loop",
						m, transposed, v, ev.inv.packed, wantPacked, len(ev.inv.packs))
				}
			}
			for i := range got[0] {
				if math.Float32bits(got[0][i]) != math.Float32bits(got[1][i]) {
					t.Fatalf("m=%d transposed=%v: h[%d] = %v with kept packings, %v without", m, transposed, i, got[0][i], got[1][i])
				}
			}
		}
	}
}
