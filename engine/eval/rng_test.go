package eval

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"

	"goldtrace/internal/pyref"
)

// TestRngBitGeneratorAgainstJax checks every algorithm, width and several
// shapes (odd dims included) bit for bit against jax.lax.rng_bit_generator.
func TestRngBitGeneratorAgainstJax(t *testing.T) {
	pyref.Require(t, "jax")
	raw, err := pyref.Command(filepath.Join("testdata", "rng_ref.py")).Output()
	if err != nil {
		t.Fatalf("rng_ref.py: %v", err)
	}
	var cases []struct {
		Alg, Dtype string
		Key, State []uint64
		Shape      []int64
		Bits       []uint64
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	requireCases(t, cases, 168) // 3 algorithms x 2 keys x 4 widths x 7 shapes
	for _, c := range cases {
		typ, _ := dtype.FromNumpy(c.Dtype)
		st := tensor.New(dtype.U64, []int64{int64(len(c.Key))})
		copy(st.U64(), c.Key)
		in := &hlo.Instruction{Opcode: "rng-bit-generator", RngAlgorithm: c.Alg, Shape: hlo.Shape{Elem: dtype.Tuple, Tuple: []hlo.Shape{
			{Elem: dtype.U64, Dims: st.Dims}, {Elem: typ, Dims: c.Shape}}}}
		v, err := evalRngBitGenerator(nil, in, []Value{ArrayValue(st)})
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if got := v.Tuple[0].T.U64(); !slices.Equal(got, c.State) {
			t.Errorf("%s %v %v key %x: state %x, want %x", c.Alg, c.Dtype, c.Shape, c.Key, got, c.State)
		}
		got := asU64(v.Tuple[1].T)
		if !slices.Equal(got, c.Bits) {
			t.Errorf("%s %v %v key %x: bits %x, want %x", c.Alg, c.Dtype, c.Shape, c.Key, got, c.Bits)
		}
	}
}
