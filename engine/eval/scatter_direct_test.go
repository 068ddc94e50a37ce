package eval

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// Scatters of single elements (bincounts, `x.at[i].add(w)`) read the index
// tensor in place (scatterScalarsDirect); the result is bit for bit the
// element path's (scatterRuns off too) and a naive sequential loop's:
// duplicates (float adds round in update order), indices past the end,
// negative ones, u32/u64 indices from 2^31/2^63 up, NaN updates, index
// vectors of two, size-1 window dims, several batch dims, updates large
// enough for the parallel target pass; and the path takes exactly the forms
// it claims.
func TestScatterScalarsDirectMatchesGeneral(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	type form struct {
		name, op, idx, upd, dims string
		direct                   bool
	}
	forms := []form{
		{"bincount", "[1000]", "s32[70000,1]", "[70000]",
			"update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1", true},
		{"implicit-vector", "[37]", "s32[999]", "[999]",
			"update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1", true},
		{"u32", "[37]", "u32[999]", "[999]",
			"update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1", true},
		{"s64", "[37]", "s64[999,1]", "[999]",
			"update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1", true},
		{"u64", "[37]", "u64[999,1]", "[999]",
			"update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1", true},
		{"batch-dims", "[41]", "s32[7,9,1]", "[7,9]",
			"update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=2", true},
		{"vector-dim-first", "[41]", "s32[1,333]", "[333]",
			"update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=0", true},
		{"pairs", "[30,40]", "s32[5000,2]", "[5000]",
			"update_window_dims={}, inserted_window_dims={0,1}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1", true},
		{"pairs-swapped-large", "[30,40]", "u32[300000,2]", "[300000]",
			"update_window_dims={}, inserted_window_dims={0,1}, scatter_dims_to_operand_dims={1,0}, index_vector_dim=1", true},
		{"column", "[30,40]", "s32[2000,1]", "[2000]",
			"update_window_dims={}, inserted_window_dims={0,1}, scatter_dims_to_operand_dims={1}, index_vector_dim=1", true},
		{"row-of-strided", "[30,40]", "s32[2000,1]", "[2000]",
			"update_window_dims={}, inserted_window_dims={0,1}, scatter_dims_to_operand_dims={0}, index_vector_dim=1", true},
		{"unit-window", "[50,1]", "s32[3000,1]", "[3000,1]",
			"update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1", true},
		{"unit-window-first", "[1,50]", "s32[3000,1]", "[1,3000]",
			"update_window_dims={0}, inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, index_vector_dim=1", true},
		// Not this path: wider windows, vectors of two across a leading dim.
		{"rows", "[50,3]", "s32[300,1]", "[300,3]",
			"update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1", false},
		{"vector-dim-leading", "[30,40]", "s32[2,500]", "[500]",
			"update_window_dims={}, inserted_window_dims={0,1}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=0", false},
	}
	kinds := []struct{ typ, op string }{
		{"f32", "add"}, {"f32", "multiply"}, {"f32", "maximum"}, {"f32", "minimum"}, {"f32", "replace"},
		{"f64", "add"}, {"f64", "maximum"}, {"s32", "add"}, {"s32", "maximum"}, {"s32", "multiply"}, {"u32", "minimum"},
		{"u32", "or"}, {"s64", "add"}, {"u64", "and"}, {"u64", "replace"},
	}
	types := map[string]dtype.Type{"f32": dtype.F32, "f64": dtype.F64, "s32": dtype.S32, "u32": dtype.U32,
		"s64": dtype.S64, "u64": dtype.U64}
	for _, f := range forms {
		for _, k := range kinds {
			if f.name != "bincount" && f.name != "pairs" && k.op != "add" && k.op != "maximum" {
				continue
			}
			t.Run(f.name+"/"+k.typ+"/"+k.op, func(t *testing.T) {
				src := "HloModule m\n" + scatterCombiner(k.typ, k.op) + fmt.Sprintf(
					"ENTRY e {\n  x = %s%s parameter(0)\n  i = %s parameter(1)\n  u = %s%s parameter(2)\n"+
						"  ROOT s = %s%s scatter(x, i, u), %s, to_apply=c\n}\n",
					k.typ, f.op, f.idx, k.typ, f.upd, k.typ, f.op, f.dims)
				m, err := hlo.ParseText([]byte(src), "s.hlo")
				if err != nil {
					t.Fatalf("%v\n%s", err, src)
				}
				typ := types[k.typ]
				ps := m.Entry.Params
				x := scatterValues(r, typ, ps[0].Shape.Dims)
				u := scatterValues(r, typ, ps[2].Shape.Dims)
				idx := scatterIndices(r, ps[1].Shape.Elem, ps[1].Shape.Dims, 45)
				direct := scatterScalarsDirect(nil, m.Entry.Root, x, idx, u, combinerKind(m.Entry.Root.ToApply())) != nil
				if direct != f.direct {
					t.Fatalf("direct path %v, want %v\n%s", direct, f.direct, src)
				}
				run := func() *tensor.Tensor {
					v, err := New(m, Options{}).Run([]Value{ArrayValue(x.Clone()), ArrayValue(idx.Clone()), ArrayValue(u.Clone())})
					if err != nil {
						t.Fatal(err)
					}
					return v.T
				}
				got := run()
				scatterDirectDisabled, scatterByRuns = true, false
				want := run()
				scatterDirectDisabled, scatterByRuns = false, true
				if string(got.Data) != string(want.Data) {
					for e := int64(0); e < got.NumElements(); e++ {
						if g, w := scalarAt(got, e).Data, scalarAt(want, e).Data; string(g) != string(w) {
							t.Errorf("element %d: direct %x, element path %x", e, g, w)
						}
					}
					t.Fatalf("direct scatter differs from the element path\n%s", src)
				}
				if typ == dtype.F32 && k.op == "add" && f.direct {
					naive := naiveScatterAddF32(m.Entry.Root, x, idx, u)
					if string(got.Data) != string(naive.Data) {
						t.Fatalf("direct scatter differs from the naive loop\n%s", src)
					}
				}
			})
		}
	}
}

func scatterCombiner(typ, op string) string {
	if op == "replace" {
		return fmt.Sprintf("c {\n  a = %s[] parameter(0)\n  ROOT b = %s[] parameter(1)\n}\n", typ, typ)
	}
	return fmt.Sprintf("c {\n  a = %s[] parameter(0)\n  b = %s[] parameter(1)\n  ROOT r = %s[] %s(a, b)\n}\n", typ, typ, typ, op)
}

// scatterValues are values whose sums round differently in different
// orders, with NaNs of several payloads, infinities and signed zeros among
// the floats, and random bits for the integers.
func scatterValues(r *rand.Rand, typ dtype.Type, dims []int64) *tensor.Tensor {
	x := tensor.New(typ, dims)
	r.Read(x.Data)
	special := func() float64 {
		return []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1)}[r.Intn(5)]
	}
	switch typ {
	case dtype.F32:
		for i := range x.F32() {
			v := float32(r.NormFloat64() * math.Pow(2, float64(r.Intn(40)-20)))
			switch r.Intn(300) {
			case 0:
				v = float32(special())
			case 1:
				v = math.Float32frombits(0x7fc00000 | uint32(r.Intn(1<<22)) | uint32(r.Intn(2))<<31)
			}
			x.F32()[i] = v
		}
	case dtype.F64:
		for i := range x.F64() {
			v := r.NormFloat64() * math.Pow(2, float64(r.Intn(80)-40))
			switch r.Intn(300) {
			case 0:
				v = special()
			case 1:
				v = math.Float64frombits(0x7ff8000000000000 | uint64(r.Int63n(1<<51)) | uint64(r.Intn(2))<<63)
			}
			x.F64()[i] = v
		}
	}
	return x
}

// scatterIndices are mostly in [0, hi), with some past hi, negative (huge
// when unsigned) and past the sign bit.
func scatterIndices(r *rand.Rand, typ dtype.Type, dims []int64, hi int) *tensor.Tensor {
	x := tensor.New(typ, dims)
	vals := make([]int64, x.NumElements())
	for i := range vals {
		switch r.Intn(40) {
		case 0:
			vals[i] = -int64(r.Intn(50)) - 1
		case 1:
			vals[i] = math.MinInt32 + int64(r.Intn(3))
		case 2:
			vals[i] = math.MinInt64 + int64(r.Intn(3))
		default:
			vals[i] = int64(r.Intn(hi + 3))
		}
	}
	copy(x.Data, newFromI64(typ, dims, vals).Data)
	return x
}

// naiveScatterAddF32 applies every in-bounds update in update order, one
// f32 add each, reading each index vector component by component.
func naiveScatterAddF32(in *hlo.Instruction, x, idx, u *tensor.Tensor) *tensor.Tensor {
	s := in.ScatterDims
	out := x.Clone()
	o := out.F32()
	ix := asI64(idx)
	if idx.Type.IsUnsigned() {
		for i, v := range asU64(idx) {
			ix[i] = int64(min(v, math.MaxInt64))
		}
	}
	vl := len(s.ScatterDimsToOperandDims)
	strides := tensor.Strides(x.Dims)
	for b, w := range u.F32() {
		off := int64(0)
		for k, d := range s.ScatterDimsToOperandDims {
			v := ix[b*vl+k]
			if v < 0 || v >= x.Dims[d] {
				off = -1
				break
			}
			off += v * strides[d]
		}
		if off >= 0 {
			o[off] += w
		}
	}
	return out
}
