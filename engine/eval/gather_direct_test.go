package eval

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// Gathers of single elements by one 32-bit index each (searchsorted's
// probes) read the index tensor directly (gatherScalarsDirect); the result
// is the general path's bit for bit, indices past either end (clamped),
// u32 indices from 2^31 up and every element size included, and the direct
// path takes exactly the forms it claims.
func TestGatherScalarsDirectMatchesGeneral(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	cases := []struct {
		op, idx, out, dims string
		direct             bool
	}{
		{"f32[65]", "u32[1000,1]", "f32[1000,1]", "offset_dims={1}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1", true},
		{"f32[65]", "s32[1000,1]", "f32[1000,1]", "offset_dims={1}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1", true},
		{"f32[65]", "s32[1000]", "f32[1000]", "offset_dims={}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1", true},
		{"f64[33]", "u32[7,9]", "f64[7,9]", "offset_dims={}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2", true},
		{"bf16[40,1]", "s32[5,6,1]", "bf16[5,6]", "offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={0}, index_vector_dim=2", true},
		{"s8[40,1]", "s32[5,6,1]", "s8[5,6,1]", "offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2", true},
		{"f32[3,17]", "u32[300]", "f32[300]", "offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={1}, index_vector_dim=1", true},
		{"f32[17,3]", "s32[300,1]", "f32[300]", "offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={0}, index_vector_dim=1", true},
		{"f32[40]", "s32[1,5]", "f32[5,1]", "offset_dims={1}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=0", true},
		// Not this path: index vectors of two, wider windows, 64-bit indices.
		{"f32[10,3]", "s32[5,2]", "f32[5]", "offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={0,1}, index_vector_dim=1", false},
		{"f32[40]", "s32[5,1]", "f32[5,2]", "offset_dims={1}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1, slice_sizes={2}", false},
		{"f32[40]", "s64[5,1]", "f32[5,1]", "offset_dims={1}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1", false},
	}
	for _, c := range cases {
		src := fmt.Sprintf("HloModule g\nENTRY e {\n  x = %s parameter(0)\n  i = %s parameter(1)\n  ROOT g = %s gather(x, i), %s\n}\n",
			c.op, c.idx, c.out, c.dims)
		if !strings.Contains(c.dims, "slice_sizes") {
			src = strings.Replace(src, "\n}", ", slice_sizes="+sliceOnes(c.op)+"\n}", 1)
		}
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
		it := tensor.New(is.Elem, is.Dims)
		for i := range it.Data {
			it.Data[i] = byte(rng.Intn(256))
		}
		if is.Elem.Size() == 4 {
			for i := range it.U32() {
				switch rng.Intn(3) {
				case 0:
					it.U32()[i] = uint32(rng.Intn(80)) // mostly in range, some past the end
				case 1:
					it.U32()[i] = uint32(-rng.Intn(5)) // negative, or from 2^32-4 unsigned
				}
			}
		}
		if got := gatherScalarsDirect(nil, m.Entry.Root, xt, it) != nil; got != c.direct {
			t.Fatalf("direct path %v, want %v\n%s", got, c.direct, src)
		}
		got, err := New(m, Options{}).Run([]Value{ArrayValue(xt), ArrayValue(it)})
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		gatherDirectDisabled = true
		want, err := New(m, Options{}).Run([]Value{ArrayValue(xt), ArrayValue(it)})
		gatherDirectDisabled = false
		if err != nil {
			t.Fatal(err)
		}
		if string(got.T.Data) != string(want.T.Data) {
			t.Fatalf("direct gather differs from the general path\n%s", src)
		}
	}
}

// sliceOnes is slice_sizes of ones for an operand type such as "f32[3,17]".
func sliceOnes(shape string) string {
	dims := shape[strings.Index(shape, "[")+1 : len(shape)-1]
	return "{" + strings.Repeat("1,", strings.Count(dims, ",")) + "1}"
}
