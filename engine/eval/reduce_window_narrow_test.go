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

// bf16/f16 sum and product reduce-windows (random windows with padding and
// strides, channel runs, cumulative windows) round after every step exactly
// as the scalar machine does, with NaNs, infinities, signed zeros and
// subnormals in the inputs and the init.
func TestReduceWindowNarrowMatchesScalar(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	for trial := 0; trial < 300; trial++ {
		typ := []dtype.Type{dtype.BF16, dtype.F16}[r.Intn(2)]
		op := []string{"add", "multiply"}[r.Intn(2)]
		rank := 1 + r.Intn(4)
		dims := make([]int64, rank)
		var size, stride, pad []string
		win := make([]hlo.WindowDim, rank)
		scan, sd := trial%3 == 0, r.Intn(rank)
		for d := range dims {
			dims[d] = int64(1 + r.Intn(8))
			w := hlo.WindowDim{Size: 1, Stride: 1, BaseDilation: 1, WindowDilation: 1}
			switch {
			case scan && d == sd:
				w.Size, w.PadLow = dims[d], dims[d]-1
			case !scan && d < rank-1 && r.Intn(2) == 0:
				w.Size, w.Stride = int64(1+r.Intn(3)), int64(1+r.Intn(2))
				w.PadLow, w.PadHigh = int64(r.Intn(2)), int64(r.Intn(2))
			}
			win[d] = w
			size, stride = append(size, fmt.Sprint(w.Size)), append(stride, fmt.Sprint(w.Stride))
			pad = append(pad, fmt.Sprintf("%d_%d", w.PadLow, w.PadHigh))
		}
		g, err := newWindowGeom(dims, win)
		if err != nil || tensor.NumElements(g.out) == 0 {
			continue
		}
		shape := func(ds []int64) string {
			s := make([]string, len(ds))
			for i, v := range ds {
				s[i] = fmt.Sprint(v)
			}
			return fmt.Sprintf("%s[%s]", typ, strings.Join(s, ","))
		}
		init := []string{"0", "-0", "1", "1e-39", "inf"}[r.Intn(5)]
		src := fmt.Sprintf(`HloModule m
f {
  a = %[1]s[] parameter(0)
  b = %[1]s[] parameter(1)
  ROOT c = %[1]s[] %[2]s(a, b)
}
ENTRY e {
  x = %[3]s parameter(0)
  z = %[1]s[] constant(%[4]s)
  ROOT r = %[5]s reduce-window(x, z), window={size=%[6]s stride=%[7]s pad=%[8]s}, to_apply=f
}
`, typ, op, shape(dims), init, shape(g.out), strings.Join(size, "x"), strings.Join(stride, "x"), strings.Join(pad, "x"))
		m, err := hlo.ParseText([]byte(src), "rw.hlo")
		if err != nil {
			t.Fatalf("parse: %v\n%s", err, src)
		}
		x := tensor.New(typ, dims)
		vals := make([]float32, x.NumElements())
		for i := range vals {
			switch r.Intn(14) {
			case 0:
				vals[i] = float32(math.NaN())
			case 1:
				vals[i] = 1e-39 // a bf16 subnormal; 0 in f16
			case 2:
				vals[i] = 6e-6 // an f16 subnormal
			case 3:
				vals[i] = -0.0
			default:
				vals[i] = float32(r.NormFloat64() * 3)
			}
		}
		dtype.EncodeF32(typ, vals, x.Data)
		args := []Value{ArrayValue(x)}
		got, err := Evaluate(m, args, Options{})
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		narrowWindowFastDisabled = true
		want, err := Evaluate(m, args, Options{})
		narrowWindowFastDisabled = false
		if err != nil {
			t.Fatal(err)
		}
		gf, wf := asF32(got.T), asF32(want.T)
		for i := range gf {
			if gf[i] != wf[i] && !(gf[i] != gf[i] && wf[i] != wf[i]) || (gf[i] == 0 && wf[i] == 0 && (1/gf[i] > 0) != (1/wf[i] > 0)) {
				t.Fatalf("element %d: got %v, want %v\n%s", i, gf[i], wf[i], src)
			}
		}
	}
}
