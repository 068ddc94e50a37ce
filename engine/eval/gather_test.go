package eval

import (
	"fmt"
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// Gathers whose windows are contiguous runs of the operand (embedding
// lookups: rows, blocks of rows, a row's tail) are copied run by run; the
// result is the element-wise path's, out-of-range and negative indices
// (clamped) included; gathers whose windows are not runs go row by row
// (gatherRows), also the element-wise path's result.
func TestGatherRunsMatchElementWise(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	cases := []struct {
		op, idx, out, dims, sizes string
		runs                      bool
	}{
		{"f32[50,16]", "s32[7,3,1]", "f32[7,3,16]", "offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2", "{1,16}", true},
		{"f32[50,16]", "s32[9]", "f32[9,16]", "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1", "{1,16}", true},
		{"s8[20,3,5]", "s32[4,1]", "s8[4,2,3,5]", "offset_dims={1,2,3}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1", "{2,3,5}", true},
		{"f64[20,6]", "s32[5,2]", "f64[5,4]", "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0,1}, index_vector_dim=1", "{1,4}", true},
		{"f32[20,6]", "s32[5,1]", "f32[5,3,6]", "offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1", "{3,6}", true},
		{"f32[20,6]", "s32[5,1]", "f32[5,3,4]", "offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1", "{3,4}", false},
		{"f32[20,6]", "s32[5,1]", "f32[6,5]", "offset_dims={0}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1", "{1,6}", false},
		// Not runs: gatherRows, row by row (columns, a window dim last, batching dims, sizes 1, 2 and 8, a scalar).
		{"f32[20,6]", "s32[5]", "f32[20,5]", "offset_dims={0}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=1", "{20,1}", false},
		{"bf16[9,7,4]", "s32[3,5,1]", "bf16[3,5,9,4]", "offset_dims={2,3}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=2", "{9,1,4}", false},
		{"s8[9,7]", "s32[6,2]", "s8[2,6,3]", "offset_dims={0,2}, collapsed_slice_dims={}, start_index_map={1,0}, index_vector_dim=1", "{2,3}", false},
		{"f64[4,10,3]", "s32[4,2,1]", "f64[4,2,3]", "offset_dims={2}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=2, operand_batching_dims={0}, start_indices_batching_dims={0}", "{1,1,3}", true},
		{"f64[4,10,3]", "s32[2,4,1]", "f64[2,4,2]", "offset_dims={2}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=2, operand_batching_dims={0}, start_indices_batching_dims={1}", "{1,1,2}", true},
		{"f32[4,10,3]", "s32[3,4,1]", "f32[3,4]", "offset_dims={}, collapsed_slice_dims={1,2}, start_index_map={1}, index_vector_dim=2, operand_batching_dims={0}, start_indices_batching_dims={1}", "{1,1,1}", true},
		{"f32[20,6]", "s32[5]", "f32[5,20]", "offset_dims={1}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=1", "{20,1}", false},
		{"f32[10,3]", "s32[2]", "f32[]", "offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={0,1}, index_vector_dim=0", "{1,1}", true},
	}
	for _, c := range cases {
		src := fmt.Sprintf("HloModule g\nENTRY e {\n  x = %s parameter(0)\n  i = %s parameter(1)\n  ROOT g = %s gather(x, i), %s, slice_sizes=%s\n}\n",
			c.op, c.idx, c.out, c.dims, c.sizes)
		m, err := hlo.ParseText([]byte(src), "g.hlo")
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		x := m.Entry.Params[0].Shape
		xt := tensor.New(x.Elem, x.Dims)
		for i := range xt.Data {
			xt.Data[i] = byte(rng.Intn(256))
		}
		is := m.Entry.Params[1].Shape
		it := tensor.New(dtype.S32, is.Dims)
		for i := range it.I32() {
			it.I32()[i] = int32(rng.Intn(30) - 5) // some past either end
		}
		got, err := New(m, Options{}).Run([]Value{ArrayValue(xt), ArrayValue(it)})
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		gatherRunsDisabled = true
		want, err := New(m, Options{}).Run([]Value{ArrayValue(xt), ArrayValue(it)})
		gatherRunsDisabled = false
		if err != nil {
			t.Fatal(err)
		}
		if string(got.T.Data) != string(want.T.Data) {
			t.Fatalf("run copy differs from the element-wise gather\n%s", src)
		}
		g := m.Entry.Root
		var ws, wst []int64
		st := tensor.Strides(x.Dims)
		for d, sz := range g.GatherSliceSizes {
			if !contains(g.GatherDims.CollapsedSliceDims, int64(d)) && !contains(g.GatherDims.OperandBatchingDims, int64(d)) {
				ws, wst = append(ws, sz), append(wst, st[d])
			}
		}
		if _, ok := contiguousWindows(g.GatherDims.OffsetDims, len(g.Shape.Dims), ws, wst); ok != c.runs {
			t.Fatalf("contiguous windows %v, want %v\n%s", ok, c.runs, src)
		}
	}
}
