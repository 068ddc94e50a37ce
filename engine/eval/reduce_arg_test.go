package eval

import (
	"bytes"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// argModule is a reduce of (values, indices) over dims with JAX's argmax
// (dir GT) or argmin (LT) reducer; swap writes or's and and's operands the
// other way round.
func argModule(vt, it dtype.Type, dims []int64, red []int64, dir string, swap bool) string {
	var out []int64
	for d, n := range dims {
		kept := true
		for _, r := range red {
			kept = kept && int64(d) != r
		}
		if kept {
			out = append(out, n)
		}
	}
	sh := func(t dtype.Type, ds []int64) string {
		s := make([]string, len(ds))
		for i, d := range ds {
			s[i] = fmt.Sprint(d)
		}
		return fmt.Sprintf("%v[%s]", t, strings.Join(s, ","))
	}
	rs := make([]string, len(red))
	for i, r := range red {
		rs[i] = fmt.Sprint(r)
	}
	or1, or2, and1 := "gt, ne", "p, tie", "eq, lt"
	if swap {
		or1, or2, and1 = "ne, gt", "tie, p", "lt, eq"
	}
	return fmt.Sprintf(`HloModule m
r {
  v0 = %[1]v[] parameter(0)
  v1 = %[1]v[] parameter(2)
  gt = pred[] compare(v0, v1), direction=%[3]s
  ne = pred[] compare(v0, v0), direction=NE
  p = pred[] or(%[6]s)
  v = %[1]v[] select(p, v0, v1)
  eq = pred[] compare(v0, v1), direction=EQ
  i0 = %[2]v[] parameter(1)
  i1 = %[2]v[] parameter(3)
  lt = pred[] compare(i0, i1), direction=LT
  tie = pred[] and(%[8]s)
  q = pred[] or(%[7]s)
  i = %[2]v[] select(q, i0, i1)
  ROOT t = (%[1]v[], %[2]v[]) tuple(v, i)
}
ENTRY e {
  x = %[4]s parameter(0)
  ix = %[5]s parameter(1)
  c0 = %[1]v[] parameter(2)
  c1 = %[2]v[] parameter(3)
  ROOT red = (%[9]s, %[10]s) reduce(x, ix, c0, c1), dimensions={%[11]s}, to_apply=r
}
`, vt, it, dir, sh(vt, dims), sh(it, dims), or1, or2, and1, sh(vt, out), sh(it, out), strings.Join(rs, ","))
}

func argValues(rng *rand.Rand, t dtype.Type, n int64) *tensor.Tensor {
	x := tensor.New(t, []int64{n})
	for i := range n {
		var v float64
		switch rng.Intn(12) {
		case 0:
			v = math.NaN()
		case 1:
			v = math.Copysign(0, float64(rng.Intn(2)*2-1))
		case 2:
			v = math.Inf(rng.Intn(2)*2 - 1)
		case 3:
			v = float64(rng.Intn(3)) * 1e-40 // f32 subnormals, equal to ±0 in compares
		case 4:
			v = float64(rng.Intn(3)) * 1e-310
		default:
			v = float64(rng.Intn(5)) // ties
		}
		if t == dtype.F32 {
			x.F32()[i] = float32(v)
		} else {
			x.F64()[i] = v
		}
	}
	return x
}

// The direct argmax/argmin loop gives the scalar machine's and the
// interpreter's results bit for bit: NaNs first, the lower index on ties,
// subnormals equal to zeros, over rows, columns and middle blocks, with
// indices in and out of order.
func TestArgReduceMatchesScalarAndInterpreter(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	shapes := []struct{ dims, red []int64 }{
		{[]int64{7, 33}, []int64{1}}, {[]int64{33, 7}, []int64{0}}, {[]int64{3, 5, 4, 6}, []int64{1, 2}},
		{[]int64{2, 9, 1500}, []int64{1}}, {[]int64{4, 6}, []int64{0, 1}}, {[]int64{5, 6, 3}, []int64{0, 2}},
		{[]int64{4, 6}, []int64{}},
	}
	for trial := 0; trial < 40; trial++ {
		s := shapes[trial%len(shapes)]
		vt, it := []dtype.Type{dtype.F32, dtype.F64}[rng.Intn(2)], []dtype.Type{dtype.S32, dtype.S64}[rng.Intn(2)]
		dir := []string{"GT", "LT"}[rng.Intn(2)]
		src := argModule(vt, it, s.dims, s.red, dir, trial%3 == 1)
		m, err := hlo.ParseText([]byte(src), "arg.hlo")
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		if d, ok := argReducer(m.Entry.Root.ToApply()); !ok || d != dir {
			t.Fatalf("reducer not recognized (%q, %v)\n%s", d, ok, src)
		}
		n := tensor.NumElements(s.dims)
		x := argValues(rng, vt, n)
		x.Dims = s.dims
		ix := tensor.New(it, s.dims)
		for i := range n {
			k := i
			if trial%2 == 1 {
				k = int64(rng.Intn(7)) - 2
			}
			if it == dtype.S32 {
				ix.I32()[i] = int32(k)
			} else {
				ix.I64()[i] = k
			}
		}
		c0 := argValues(rng, vt, 1)
		c0.Dims = nil
		c1 := tensor.New(it, nil)
		args := []Value{ArrayValue(x), ArrayValue(ix), ArrayValue(c0), ArrayValue(c1)}
		run := func(scalar, fast bool) []*tensor.Tensor {
			scalarOff, argReduceDisabled = !scalar, !fast
			defer func() { scalarOff, argReduceDisabled = false, false }()
			v, err := Evaluate(m, args, Options{})
			if err != nil {
				t.Fatalf("%v\n%s", err, src)
			}
			return v.Leaves()
		}
		got, machine := run(true, true), run(true, false)
		refs := [][]*tensor.Tensor{machine}
		if n <= 1000 {
			refs = append(refs, run(false, false))
		}
		for r, want := range refs {
			for i := range want {
				if !bytes.Equal(got[i].Data, want[i].Data) || !equalDims(got[i].Dims, want[i].Dims) {
					t.Fatalf("reference %d result %d: got %v %x, want %v %x\n%s", r, i, got[i].Dims, got[i].Data, want[i].Dims, want[i].Data, src)
				}
			}
		}
	}
}
