package eval

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// scatterRuns must give, bit for bit, what the element-by-element path gives:
// duplicate indices (float adds are order-sensitive), overlapping and
// out-of-bounds windows, partial and multi-dimensional windows, NaNs under
// max/min, and updates large enough to be split between the cores.
func TestScatterRunsMatchTheElementPath(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	combiner := func(typ, op string) string {
		if op == "replace" {
			return fmt.Sprintf("c {\n  a = %s[] parameter(0)\n  ROOT b = %s[] parameter(1)\n}\n", typ, typ)
		}
		return fmt.Sprintf("c {\n  a = %s[] parameter(0)\n  b = %s[] parameter(1)\n  ROOT r = %s[] %s(a, b)\n}\n", typ, typ, typ, op)
	}
	type layout struct {
		name                   string
		operand, indices, upds string
		dims                   string
		opDims, idxDims, uDims []int64
		idxHi                  int64
	}
	layouts := []layout{
		{"rows", "[512,64]", "[70000,1]", "[70000,64]",
			"update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1",
			[]int64{512, 64}, []int64{70000, 1}, []int64{70000, 64}, 600},
		{"partial-overlapping-windows", "[40,50]", "[3000,2]", "[3000,7,9]",
			"update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1",
			[]int64{40, 50}, []int64{3000, 2}, []int64{3000, 7, 9}, 48},
		{"3d-window", "[30,6,8]", "[5,4,1]", "[5,4,6,8]",
			"update_window_dims={2,3}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=2",
			[]int64{30, 6, 8}, []int64{5, 4, 1}, []int64{5, 4, 6, 8}, 34},
	}
	kinds := []struct{ typ, op string }{
		{"f32", "add"}, {"f32", "multiply"}, {"f32", "maximum"}, {"f32", "minimum"}, {"f32", "replace"},
		{"f64", "add"}, {"s32", "add"}, {"s32", "maximum"}, {"u32", "minimum"}, {"u32", "or"}, {"s64", "multiply"},
		{"u64", "and"},
	}
	for _, l := range layouts {
		for _, k := range kinds {
			t.Run(l.name+"/"+k.typ+"/"+k.op, func(t *testing.T) {
				typ := map[string]dtype.Type{"f32": dtype.F32, "f64": dtype.F64, "s32": dtype.S32, "u32": dtype.U32,
					"s64": dtype.S64, "u64": dtype.U64}[k.typ]
				src := "HloModule m\n" + combiner(k.typ, k.op) + fmt.Sprintf(
					"ENTRY e {\n  x = %s%s parameter(0)\n  i = s32%s parameter(1)\n  u = %s%s parameter(2)\n"+
						"  ROOT s = %s%s scatter(x, i, u), %s, to_apply=c\n}\n",
					k.typ, l.operand, l.indices, k.typ, l.upds, k.typ, l.operand, l.dims)
				x := randomShaped(r, typ, l.opDims...)
				u := randomShaped(r, typ, l.uDims...)
				if typ == dtype.F32 {
					// Values whose sums round differently in different orders,
					// and NaNs with payloads of their own in both, some meeting:
					// of two NaNs the update's wins (updateNaNOr, applyFloat).
					for j, v := range u.F32() {
						u.F32()[j] = v * float32(math.Pow(2, float64(r.Intn(40)-20)))
						if r.Intn(50) == 0 {
							u.F32()[j] = math.Float32frombits(0x7fc00abc + uint32(r.Intn(16)))
						}
					}
					for j := range x.F32() {
						if r.Intn(10) == 0 {
							x.F32()[j] = math.Float32frombits(0x7fc00001 + uint32(r.Intn(16)))
						}
					}
				}
				idx := tensor.New(dtype.S32, l.idxDims)
				for j := range idx.I32() {
					idx.I32()[j] = int32(r.Int63n(l.idxHi+4) - 2) // some out of bounds
				}
				scatterByRuns = true
				runs, err := runText(t, src, x.Clone(), idx.Clone(), u.Clone())
				if err != nil {
					t.Fatal(err)
				}
				scatterByRuns = false
				defer func() { scatterByRuns = true }()
				elems, err := runText(t, src, x.Clone(), idx.Clone(), u.Clone())
				if err != nil {
					t.Fatal(err)
				}
				// Bit for bit, NaN payloads included.
				a, b := runs.T.Data, elems.T.Data
				size := typ.Size()
				for j := range a {
					if a[j] != b[j] {
						e := int64(j / size)
						at := make([]int64, len(runs.T.Dims))
						unravel(e, runs.T.Dims, at)
						t.Fatalf("element %d (index %v) differs: runs %v, element path %v", e, at,
							scalarAt(runs.T, e).Data, scalarAt(elems.T, e).Data)
					}
				}
			})
		}
	}
}

func isNaNAt(t *tensor.Tensor, i int64) bool {
	switch t.Type {
	case dtype.F32:
		v := t.F32()[i]
		return v != v
	case dtype.F64:
		v := t.F64()[i]
		return v != v
	}
	return false
}
