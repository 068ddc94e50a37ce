package eval

import (
	"sort"
	"strings"
	"testing"

	"goldtrace/engine/hlo"
)

// TestPredictYNNFusions checks the fusion rules of ynn_fusion.go on small
// modules whose XLA:CPU placement was measured with jaxlib 0.10.2
// (jax.jit(f).lower(...).compile().as_text()).
func TestPredictYNNFusions(t *testing.T) {
	const sum = `
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] maximum(a, b)
}
`
	cases := []struct {
		name, entry string
		want        string // members, sorted, space-separated
	}{
		{"op after a big row sum joins", `
  x = f32[8192,2] parameter(0)
  z = f32[] constant(0)
  r = f32[8192] reduce(x, z), dimensions={1}, to_apply=add
  ROOT e = f32[8192] exponential(r)`, "e r z"},
		{"op on 64 row sums is not preferred", `
  x = f32[64,1024] parameter(0)
  z = f32[] constant(0)
  r = f32[64] reduce(x, z), dimensions={1}, to_apply=add
  ROOT e = f32[64] exponential(r)`, "r z"},
		{"sine is not YNNPACK's", `
  x = f32[8192,2] parameter(0)
  z = f32[] constant(0)
  r = f32[8192] reduce(x, z), dimensions={1}, to_apply=add
  ROOT e = f32[8192] sine(r)`, "r z"},
		{"a reduction with two users grows no further", `
  x = f32[8192,2] parameter(0)
  z = f32[] constant(0)
  r = f32[8192] reduce(x, z), dimensions={1}, to_apply=add
  e = f32[8192] exponential(r)
  t = f32[8192] tanh(r)
  ROOT o = (f32[8192], f32[8192]) tuple(e, t)`, "r z"},
		{"an operand joins when all its users are in", `
  x = f32[64,1024] parameter(0)
  e = f32[64,1024] exponential(x)
  z = f32[] constant(0)
  ROOT r = f32[64] reduce(e, z), dimensions={1}, to_apply=add`, "e r z"},
		{"an operand with a user outside stays out", `
  x = f32[64,1024] parameter(0)
  e = f32[64,1024] exponential(x)
  z = f32[] constant(0)
  r = f32[64] reduce(e, z), dimensions={1}, to_apply=add
  two = f32[] constant(2)
  b = f32[64,1024] broadcast(two), dimensions={}
  m = f32[64,1024] multiply(e, b)
  ROOT o = (f32[64], f32[64,1024]) tuple(r, m)`, "r z"},
		{"maximum with -inf is dropped, the max and sum merge", `
  x = f32[4096,512] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[4096] reduce(x, ninf), dimensions={1}, to_apply=max
  nb = f32[4096] broadcast(ninf), dimensions={}
  m = f32[4096] maximum(mx, nb)
  mb = f32[4096,512] broadcast(m), dimensions={0}
  d = f32[4096,512] subtract(x, mb)
  e = f32[4096,512] exponential(d)
  z = f32[] constant(0)
  s = f32[4096] reduce(e, z), dimensions={1}, to_apply=add
  sb = f32[4096,512] broadcast(s), dimensions={0}
  ROOT q = f32[4096,512] divide(e, sb)`, "d e m mb mx q s sb z"},
		{"duplicate expressions count once (CSE)", `
  x = f32[8192,4] parameter(0)
  z = f32[] constant(0)
  r = f32[8192] reduce(x, z), dimensions={1}, to_apply=add
  e1 = f32[8192] exponential(r)
  e2 = f32[8192] exponential(r)
  ROOT a = f32[8192] add(e1, e2)`, "a e1 e2 r z"},
		{"a tuple element read back is forwarded (the rest is dead)", `
  x = f32[8192,2] parameter(0)
  z = f32[] constant(0)
  r = f32[8192] reduce(x, z), dimensions={1}, to_apply=add
  e = f32[8192] exponential(r)
  n = f32[8192] negate(r)
  t = (f32[8192], f32[8192]) tuple(e, n)
  ROOT g = f32[8192] get-tuple-element(t), index=0`, "e g r z"},
		{"small reductions are XLA's", `
  x = f32[16,100] parameter(0)
  z = f32[] constant(0)
  r = f32[16] reduce(x, z), dimensions={1}, to_apply=add
  ROOT e = f32[16] exponential(r)`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := "HloModule m\n" + sum + "ENTRY main {" + c.entry + "\n}\n"
			m, err := hlo.ParseText([]byte(src), c.name)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for in := range PredictYNNFusions(m.Entry) {
				got = append(got, in.Name)
			}
			sort.Strings(got)
			if g := strings.Join(got, " "); g != c.want {
				t.Errorf("members %q, want %q", g, c.want)
			}
		})
	}
}
