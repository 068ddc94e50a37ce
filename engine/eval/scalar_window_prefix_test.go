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

// TestScalarPrefixWindowMatchesFolds holds prefix-scan reduce-windows with a
// reducer of their own (logaddexp as jax's cumlogsumexp lowers it, a
// non-associative a*0.5+b) to the
// per-window folds, bit for bit, scanning each dimension of rank-1 to 3
// inputs, with and without windows reaching past the input's end.
func TestScalarPrefixWindowMatchesFolds(t *testing.T) {
	reducers := map[string]string{
		"logaddexp": `r {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  s = f32[] subtract(a, b)
  nan = pred[] compare(s, s), direction=NE
  sum = f32[] add(a, b)
  mx = f32[] maximum(a, b)
  ab = f32[] abs(s)
  ng = f32[] negate(ab)
  e = f32[] exponential(ng)
  l = f32[] log-plus-one(e)
  ml = f32[] add(mx, l)
  ROOT o = f32[] select(nan, sum, ml)
}`,
		"halfsum": `r {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  h = f32[] constant(0.5)
  ah = f32[] multiply(a, h)
  ROOT o = f32[] add(ah, b)
}`,
	}
	r := rand.New(rand.NewSource(11))
	for name, red := range reducers {
		for _, dims := range [][]int64{{37}, {5, 300}, {300, 4}, {3, 70, 5}} {
			for d := range dims {
				for _, extra := range []int64{0, 3} {
					win := make([]string, len(dims))
					pad := make([]string, len(dims))
					for i := range dims {
						win[i], pad[i] = "1", "0_0"
					}
					win[d] = fmt.Sprint(dims[d] + extra)
					pad[d] = fmt.Sprintf("%d_0", dims[d]-1)
					in := fmt.Sprintf("f32%v", dims)
					out := append([]int64{}, dims...)
					out[d] -= extra
					outShape := fmt.Sprintf("f32%v", out)
					src := fmt.Sprintf("HloModule m\n%s\nENTRY e {\n  x = %s parameter(0)\n  z = f32[] constant(-inf)\n"+
						"  ROOT w = %s reduce-window(x, z), window={size=%s pad=%s}, to_apply=r\n}\n",
						red, shapeText(in), shapeText(outShape), strings.Join(win, "x"), strings.Join(pad, "x"))
					m, err := hlo.ParseText([]byte(src), "w.hlo")
					if err != nil {
						t.Fatalf("%v\n%s", err, src)
					}
					x := tensor.New(dtype.F32, dims)
					for i := range x.F32() {
						x.F32()[i] = float32(r.NormFloat64() * 3)
						if r.Intn(50) == 0 {
							x.F32()[i] = float32(math.Inf(1 - 2*r.Intn(2)))
						}
					}
					got, err := Evaluate(m, []Value{ArrayValue(x)}, Options{})
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					windowFastDisabled = true
					want, err := Evaluate(m, []Value{ArrayValue(x)}, Options{})
					windowFastDisabled = false
					if err != nil {
						t.Fatal(err)
					}
					if string(got.T.Data) != string(want.T.Data) {
						t.Fatalf("%s dims %v scan %d (+%d): prefix folds differ from the window folds\n%s", name, dims, d, extra, src)
					}
				}
			}
		}
	}
}

// shapeText turns fmt's f32[5 300] into HLO's f32[5,300].
func shapeText(s string) string { return strings.ReplaceAll(s, " ", ",") }
