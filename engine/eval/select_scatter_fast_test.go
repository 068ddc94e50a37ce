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

// selectScatterValues are operands with what a max-pool gradient meets:
// ties (GE and GT pick differently), NaNs, signed zeros, infinities and
// subnormals (which the compare and the add flush).
func selectScatterValues(r *rand.Rand, typ dtype.Type, n int64) *tensor.Tensor {
	vs := make([]float64, n)
	tiny := 1e-40
	if typ == dtype.F64 {
		tiny = 1e-310
	}
	for i := range vs {
		switch r.Intn(12) {
		case 0:
			vs[i] = math.NaN()
		case 1:
			vs[i] = math.Copysign(0, float64(r.Intn(2)*2-1))
		case 2:
			vs[i] = tiny * float64(r.Intn(3)-1)
		case 3:
			vs[i] = math.Inf(r.Intn(2)*2 - 1)
		case 4, 5:
			vs[i] = float64(r.Intn(3)) // ties
		default:
			vs[i] = r.NormFloat64()
		}
	}
	t := tensor.New(typ, []int64{n})
	for i, v := range vs {
		if typ == dtype.F32 {
			t.F32()[i] = float32(v)
		} else {
			t.F64()[i] = v
		}
	}
	return t
}

// The typed select-and-scatter loop gives the scalar machine's and the
// interpreter's bits on random windows (padding, strides, overlaps, NHWC
// channel runs and batch splits), for every compare direction, both operand
// orders of the compare and the add, f32 and f64.
func TestSelectAndScatterFastMatchesScalar(t *testing.T) {
	r := rand.New(rand.NewSource(21))
	dirs := []string{"GE", "GT", "LE", "LT", "EQ", "NE"}
	fast := 0
	for trial := 0; trial < 400; trial++ {
		typ := []dtype.Type{dtype.F32, dtype.F64}[r.Intn(2)]
		rank := 1 + r.Intn(4)
		// Some pools big enough to split over the batch (NHWC, NCHW) or the
		// channel lanes across cores.
		big := [][]int64{{4, 20, 20, 33}, {1, 21, 20, 40}, {2, 3, 20, 20}}
		if trial < 3*len(big) {
			rank = 4
		}
		dims := make([]int64, rank)
		win := make([]hlo.WindowDim, rank)
		var size, stride, pad []string
		for d := range dims {
			dims[d] = int64(1 + r.Intn(7))
			w := hlo.WindowDim{Size: 1, Stride: 1, BaseDilation: 1, WindowDilation: 1}
			if trial < 3*len(big) {
				dims[d] = big[trial%len(big)][d]
				if spatial := trial%len(big) == 2 && d >= 2 || trial%len(big) != 2 && (d == 1 || d == 2); spatial {
					w.Size, w.Stride, w.PadHigh = 3, 2, int64(trial%2)
				}
			} else if r.Intn(3) != 0 {
				w.Size, w.Stride = int64(1+r.Intn(4)), int64(1+r.Intn(3))
				w.PadLow, w.PadHigh = int64(r.Intn(2)), int64(r.Intn(2))
			}
			win[d] = w
			size = append(size, fmt.Sprint(w.Size))
			stride = append(stride, fmt.Sprint(w.Stride))
			pad = append(pad, fmt.Sprintf("%d_%d", w.PadLow, w.PadHigh))
		}
		g, err := newWindowGeom(dims, win)
		if err != nil || tensor.NumElements(g.out) == 0 {
			continue
		}
		a, b := "p", "q"
		if r.Intn(2) == 0 {
			a, b = b, a
		}
		c, d := "u", "v"
		if r.Intn(2) == 0 {
			c, d = d, c
		}
		shape := func(ds []int64) string {
			s := make([]string, len(ds))
			for i, v := range ds {
				s[i] = fmt.Sprint(v)
			}
			return fmt.Sprintf("%s[%s]", typ, strings.Join(s, ","))
		}
		init := []string{"0", "-inf", "-0", "1.5", "1e-40", "-1e-40"}[r.Intn(6)]
		src := fmt.Sprintf(`HloModule m
sel {
  p = %[1]s[] parameter(0)
  q = %[1]s[] parameter(1)
  ROOT c = pred[] compare(%[2]s, %[3]s), direction=%[4]s
}
scat {
  u = %[1]s[] parameter(0)
  v = %[1]s[] parameter(1)
  ROOT s = %[1]s[] add(%[5]s, %[6]s)
}
ENTRY e {
  x = %[7]s parameter(0)
  s = %[8]s parameter(1)
  z = %[1]s[] constant(%[9]s)
  ROOT r = %[7]s select-and-scatter(x, s, z), window={size=%[10]s stride=%[11]s pad=%[12]s}, select=sel, scatter=scat
}
`, typ, a, b, dirs[r.Intn(len(dirs))], c, d, shape(dims), shape(g.out), init,
			strings.Join(size, "x"), strings.Join(stride, "x"), strings.Join(pad, "x"))
		m, err := hlo.ParseText([]byte(src), "sas.hlo")
		if err != nil {
			t.Fatalf("parse: %v\n%s", err, src)
		}
		x := selectScatterValues(r, typ, tensor.NumElements(dims))
		x.Dims = dims
		s := selectScatterValues(r, typ, tensor.NumElements(g.out))
		s.Dims = g.out
		args := []Value{ArrayValue(x), ArrayValue(s)}
		run := func(fastOff, scalarMachineOff bool) *tensor.Tensor {
			selectScatterFastDisabled, scalarOff = fastOff, scalarMachineOff
			defer func() { selectScatterFastDisabled, scalarOff = false, false }()
			v, err := Evaluate(m, args, Options{})
			if err != nil {
				t.Fatalf("%v\n%s", err, src)
			}
			return v.T
		}
		got, machine, interp := run(false, false), run(true, false), run(true, true)
		if sel := m.Entry.Root; selectScatterFastPlanOK(sel) {
			fast++
		}
		for _, want := range []*tensor.Tensor{machine, interp} {
			for e := range tensor.NumElements(dims) {
				gv, wv := sasElem(got, e), sasElem(want, e)
				if math.Float64bits(gv) != math.Float64bits(wv) && !(gv != gv && wv != wv) {
					t.Fatalf("element %d: fast %v, reference %v\n%s", e, gv, wv, src)
				}
			}
		}
	}
	if fast < 300 {
		t.Fatalf("only %d of the cases took the typed loop", fast)
	}
}

// selectScatterFastPlanOK reports whether the typed loop applies to in.
func selectScatterFastPlanOK(in *hlo.Instruction) bool {
	_, ok := selectScatterFastPlan(in.Called[0], in.Called[1], in.Shape.Elem)
	return ok
}

func sasElem(t *tensor.Tensor, i int64) float64 {
	if t.Type == dtype.F32 {
		return float64(t.F32()[i])
	}
	return t.F64()[i]
}
