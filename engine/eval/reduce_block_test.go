package eval

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// Reduces over leading, middle and trailing blocks of dimensions, in place,
// against the transposing path (reduceFast's int64 and row folds): floats
// with NaNs, signed zeros, infinities and subnormals; integers wrapping in
// their own width.
func TestReduceBlockMatchesTransposed(t *testing.T) {
	rng := rand.New(rand.NewSource(21))
	types := []dtype.Type{dtype.F32, dtype.F64, dtype.BF16, dtype.S32, dtype.S64, dtype.U32, dtype.U8, dtype.S8}
	ops := map[string]string{"add": "add", "multiply": "multiply", "maximum": "maximum", "minimum": "minimum", "and": "and", "or": "or"}
	opNames := []string{"add", "multiply", "maximum", "minimum", "and", "or"}
	shapes := []struct{ dims, red []int64 }{
		{[]int64{300, 40}, []int64{0}}, {[]int64{40, 300}, []int64{1}}, {[]int64{6, 50, 30}, []int64{1}},
		{[]int64{6, 50, 30}, []int64{0, 1}}, {[]int64{70, 3, 2500}, []int64{0}}, {[]int64{5, 6, 7, 8}, []int64{1, 2}},
		{[]int64{8, 9}, []int64{0}}, {[]int64{50, 6, 30}, []int64{0, 2}},
	}
	for trial := 0; trial < 120; trial++ {
		typ := types[trial%len(types)]
		s := shapes[rng.Intn(len(shapes))]
		op := opNames[rng.Intn(len(opNames))]
		if (op == "and" || op == "or") && typ.IsFloat() {
			op = "add"
		}
		var out []int64
		for d, n := range s.dims {
			keep := true
			for _, r := range s.red {
				keep = keep && r != int64(d)
			}
			if keep {
				out = append(out, n)
			}
		}
		shape := func(ds []int64) string {
			return fmt.Sprintf("%v[%s]", typ, strings.Trim(strings.ReplaceAll(fmt.Sprint(ds), " ", ","), "[]"))
		}
		red := strings.Trim(strings.ReplaceAll(fmt.Sprint(s.red), " ", ","), "[]")
		src := fmt.Sprintf("HloModule m\nr {\n  a = %[1]v[] parameter(0)\n  b = %[1]v[] parameter(1)\n  ROOT c = %[1]v[] %[2]s(a, b)\n}\n"+
			"ENTRY e {\n  x = %[3]s parameter(0)\n  i = %[1]v[] parameter(1)\n  ROOT y = %[4]s reduce(x, i), dimensions={%[5]s}, to_apply=r\n}\n",
			typ, ops[op], shape(s.dims), shape(out), red)
		m, err := hlo.ParseText([]byte(src), "red.hlo")
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		n := tensor.NumElements(s.dims)
		var x, i0 *tensor.Tensor
		if typ.IsFloat() {
			f := randomF32(rng, []int64{n})
			if op == "multiply" {
				for k, v := range f.F32() {
					f.F32()[k] = 1 + v*1e-3
				}
			}
			x, i0 = convertTo(f, typ), convertTo(randomF32(rng, nil), typ)
		} else {
			x, i0 = tensor.New(typ, []int64{n}), tensor.New(typ, nil)
			rng.Read(x.Data)
			rng.Read(i0.Data)
		}
		x.Dims = s.dims
		args := []Value{ArrayValue(x), ArrayValue(i0)}
		run := func(block, scalar bool) *tensor.Tensor {
			reduceBlockDisabled, scalarOff = !block, !scalar
			defer func() { reduceBlockDisabled, scalarOff = false, false }()
			v, err := Evaluate(m, args, Options{})
			if err != nil {
				t.Fatalf("%v\n%s", err, src)
			}
			return v.T
		}
		got, want := run(true, true), run(false, true)
		if !bytes.Equal(got.Data, want.Data) || !equalDims(got.Dims, want.Dims) {
			t.Fatalf("%s %v %v over %v: in place %x\ntransposed %x", op, typ, s.dims, s.red, got.Data, want.Data)
		}
	}
}

// convertTo is x (f32) converted to typ as the engine's convert does.
func convertTo(x *tensor.Tensor, typ dtype.Type) *tensor.Tensor {
	if typ == dtype.F32 {
		return x
	}
	return newFromF32(typ, x.Dims, x.F32())
}
