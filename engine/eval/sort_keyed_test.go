package eval

import (
	"bytes"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// jnpSortComparator is jnp.sort's comparator on operand k of a sort of
// types ts: each side canonicalizes (-0 to 0, NaN to one NaN), then a
// TOTALORDER LT.
func jnpSortComparator(ts []dtype.Type, k int, root string, negated bool) string {
	s := "cmp {\n"
	for i, t := range ts {
		s += fmt.Sprintf("  p%d = %v[] parameter(%d)\n  q%d = %v[] parameter(%d)\n", i, t, 2*i, i, t, 2*i+1)
	}
	t := ts[k]
	if !t.IsFloat() || negated { // each side negated instead
		for _, side := range []string{"p", "q"} {
			s += fmt.Sprintf("  c%[1]s%[2]d = %[3]v[] negate(%[1]s%[2]d)\n", side, k, t)
		}
		return s + fmt.Sprintf(root, fmt.Sprintf("cp%d", k), fmt.Sprintf("cq%d", k)) + "\n}\n"
	}
	s += fmt.Sprintf("  nan = %[1]v[] constant(nan)\n  zero = %[1]v[] constant(0)\n", t)
	for _, side := range []string{"p", "q"} {
		x := fmt.Sprintf("%s%d", side, k)
		s += fmt.Sprintf("  ne%[1]s = pred[] compare(%[1]s, %[1]s), direction=NE\n  eq%[1]s = pred[] compare(%[1]s, zero), direction=EQ\n"+
			"  z%[1]s = %[2]v[] select(eq%[1]s, zero, %[1]s)\n  c%[1]s = %[2]v[] select(ne%[1]s, nan, z%[1]s)\n", x, t)
	}
	return s + fmt.Sprintf(root, fmt.Sprintf("cp%d", k), fmt.Sprintf("cq%d", k)) + "\n}\n"
}

// Sorts whose comparator canonicalizes or transforms each side before one
// compare of the two: the precomputed keys make the same comparisons as the
// compiled comparator (and, on short lines, the interpreter), so the sorted
// operands agree bit for bit -- NaNs of both signs and several payloads,
// signed zeros, subnormals, ties, FLOAT and TOTALORDER, either operand order,
// f32, f64, s32, bf16 and f16 keys.
func TestKeyedSortMatchesComparator(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	roots := []string{
		"  ROOT r = pred[] compare(%s, %s), direction=LT, type=TOTALORDER",
		"  ROOT r = pred[] compare(%[2]s, %[1]s), direction=GT, type=TOTALORDER",
		"  ROOT r = pred[] compare(%s, %s), direction=GT",
		"  ROOT r = pred[] compare(%[2]s, %[1]s), direction=LT",
	}
	for trial := 0; trial < 80; trial++ {
		kt := []dtype.Type{dtype.F32, dtype.F64, dtype.S32, dtype.BF16, dtype.F16}[trial%5]
		root := roots[rng.Intn(len(roots))]
		if kt == dtype.S32 {
			root = "  ROOT r = pred[] compare(%s, %s), direction=LT"
		}
		ts, k := []dtype.Type{kt}, 0
		if trial%2 == 1 {
			ts, k = []dtype.Type{dtype.S32, kt}, 1 // argsort-like: key second
		}
		dims := []int64{int64(3 + rng.Intn(4)), int64(50 + rng.Intn(400))}
		if trial%8 == 0 {
			dims = []int64{1, 20000}
		}
		sortDim := trial % 2
		var b string
		b = "HloModule m\n" + jnpSortComparator(ts, k, root, trial%4 == 3) + "ENTRY e {\n"
		var shs, names []string
		var args []Value
		for i, typ := range ts {
			sh := fmt.Sprintf("%v[%d,%d]", typ, dims[0], dims[1])
			b += fmt.Sprintf("  a%d = %s parameter(%d)\n", i, sh, i)
			shs, names = append(shs, sh), append(names, fmt.Sprintf("a%d", i))
			args = append(args, ArrayValue(sortValues(rng, typ, dims)))
		}
		b += fmt.Sprintf("  ROOT s = (%s) sort(%s), dimensions={%d}, is_stable=true, to_apply=cmp\n}\n",
			join(shs), join(names), sortDim)
		m, err := hlo.ParseText([]byte(b), "sort.hlo")
		if err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		run := func(keyed, compiled bool) []*tensor.Tensor {
			keyedSortDisabled, scalarOff = !keyed, !compiled
			defer func() { keyedSortDisabled, scalarOff = false, false }()
			v, err := Evaluate(m, args, Options{})
			if err != nil {
				t.Fatalf("%v\n%s", err, b)
			}
			return v.Leaves()
		}
		got := run(true, true)
		refs := [][]*tensor.Tensor{run(false, true)}
		if dims[0]*dims[1] <= 2000 {
			refs = append(refs, run(false, false))
		}
		for r, want := range refs {
			for i := range want {
				if !bytes.Equal(got[i].Data, want[i].Data) {
					t.Fatalf("reference %d operand %d differs\n%s", r, i, b)
				}
			}
		}
	}
}

func join(xs []string) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ", "
		}
		s += x
	}
	return s
}

func sortValues(rng *rand.Rand, typ dtype.Type, dims []int64) *tensor.Tensor {
	x := tensor.New(typ, dims)
	n := int(x.NumElements())
	for i := 0; i < n; i++ {
		var v float64
		switch rng.Intn(12) {
		case 0:
			v = math.NaN()
		case 1:
			v = math.Copysign(0, float64(rng.Intn(2)*2-1))
		case 2:
			v = math.Inf(rng.Intn(2)*2 - 1)
		case 3:
			v = float64(rng.Intn(3)-1) * 1e-40
		case 4:
			v = float64(rng.Intn(3)-1) * 1e-310
		default:
			v = float64(rng.Intn(9) - 4)
		}
		switch typ {
		case dtype.F32:
			x.F32()[i] = float32(v)
			if v != v {
				x.F32()[i] = math.Float32frombits(0x7fc00000 | uint32(rng.Intn(4)) | uint32(rng.Intn(2))<<31)
			}
		case dtype.F64:
			x.F64()[i] = v
			if v != v {
				x.F64()[i] = math.Float64frombits(0x7ff8000000000000 | uint64(rng.Intn(4)) | uint64(rng.Intn(2))<<63)
			}
		case dtype.S32:
			x.I32()[i] = int32(rng.Intn(7) - 3)
		case dtype.BF16, dtype.F16:
			b := dtype.FromF64(typ, v)
			if v != v {
				b = dtype.FromF64(typ, v) | uint64(rng.Intn(4)) | uint64(rng.Intn(2))<<15
			}
			x.Data[2*i], x.Data[2*i+1] = byte(b), byte(b>>8)
		}
	}
	return x
}
