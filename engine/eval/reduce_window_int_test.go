package eval

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// Integer reduce-windows (random windows, and the cumulative windows
// jnp.cumsum lowers to) give the scalar machine's results for every fast
// reducer and integer width, wrapping included.
func TestReduceWindowIntMatchesScalar(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	types := []dtype.Type{dtype.S8, dtype.U8, dtype.S16, dtype.S32, dtype.U32, dtype.S64, dtype.U64, dtype.S4, dtype.U4}
	ops := []string{"add", "multiply", "maximum", "minimum", "and", "or"}
	for trial := 0; trial < 300; trial++ {
		typ, op := types[r.Intn(len(types))], ops[r.Intn(len(ops))]
		rank := 1 + r.Intn(3)
		dims := make([]int64, rank)
		win := make([]hlo.WindowDim, rank)
		var spec []string
		scan := trial%3 == 0 // a cumulative window along one dimension
		sd := r.Intn(rank)
		for d := range dims {
			dims[d] = int64(1 + r.Intn(9))
			if trial%6 == 0 && rank > 1 && d == rank-1 {
				// Rows wide enough for the native cumsum to split them into column chunks.
				dims[d] = int64(1024 + r.Intn(1500))
			}
			w := hlo.WindowDim{Size: 1, Stride: 1, BaseDilation: 1, WindowDilation: 1}
			switch {
			case scan && d == sd:
				w.Size, w.PadLow = dims[d], dims[d]-1
			case !scan && r.Intn(2) == 0:
				w.Size, w.Stride = int64(1+r.Intn(3)), int64(1+r.Intn(2))
				w.PadLow, w.PadHigh = int64(r.Intn(2)), int64(r.Intn(2))
			}
			win[d] = w
			spec = append(spec, fmt.Sprintf("%d,%d,%d_%d", w.Size, w.Stride, w.PadLow, w.PadHigh))
		}
		g, err := newWindowGeom(dims, win)
		if err != nil || tensor.NumElements(g.out) == 0 {
			continue
		}
		var size, stride, pad []string
		for _, s := range spec {
			f := strings.Split(s, ",")
			size, stride, pad = append(size, f[0]), append(stride, f[1]), append(pad, f[2])
		}
		shape := func(ds []int64) string {
			s := make([]string, len(ds))
			for i, v := range ds {
				s[i] = fmt.Sprint(v)
			}
			return fmt.Sprintf("%s[%s]", typ, strings.Join(s, ","))
		}
		init := []string{"0", "1", "-1", "7"}[r.Intn(4)]
		if typ.IsUnsigned() && init == "-1" {
			init = "3"
		}
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
		for i := range x.Data {
			x.Data[i] = byte(r.Intn(256))
		}
		args := []Value{ArrayValue(x)}
		got, err := Evaluate(m, args, Options{})
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		intWindowFastDisabled = true
		want, err := Evaluate(m, args, Options{})
		intWindowFastDisabled = false
		if err != nil {
			t.Fatal(err)
		}
		if string(got.T.Data) != string(want.T.Data) {
			t.Fatalf("results differ: got %v, want %v\n%s", asI64(got.T), asI64(want.T), src)
		}
	}
}
