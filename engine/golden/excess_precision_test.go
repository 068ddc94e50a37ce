package golden

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

// TestExcessPrecisionNarrowMatchesOp: a bf16 dot or convolution that a
// convert to f32 reads and something else reads too is computed once, in
// f32, and its bf16 value is that rounded (excessPrecision's narrow
// replacement). Here its bf16 value is held, bit for bit, to the op
// evaluated in bf16 as before (the rewrite off), and the convert to the
// unrounded f32 value, for a dot and a convolution and, where the op keeps
// being computed in bf16 beside its f32 value, for every elementwise op of
// excessPrecisionOps, on operands with subnormals, NaNs, infinities, signed
// zeros and values whose results overflow or land near the subnormal
// boundary.
func TestExcessPrecisionNarrowMatchesOp(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	const n = 4096
	special := 16 // one in special/16 values of each kind below
	bf16 := func(dims ...int64) *tensor.Tensor {
		x := tensor.New(dtype.BF16, dims)
		v := make([]float32, x.NumElements())
		for i := range v {
			switch r.Intn(special) {
			case 0:
				v[i] = math.Float32frombits(uint32(r.Intn(1 << 23))) // subnormal
			case 1:
				v[i] = float32(math.NaN())
			case 2:
				v[i] = float32(math.Inf(1 - 2*r.Intn(2)))
			case 3:
				v[i] = float32(math.Copysign(0, float64(1-2*r.Intn(2))))
			case 4:
				v[i] = float32(r.NormFloat64()) * 0x1p-63 // products near 2^-126
			case 5:
				v[i] = float32(r.NormFloat64()) * 0x1p100
			default:
				v[i] = float32(r.NormFloat64() * 3)
			}
		}
		dtype.EncodeF32(dtype.BF16, v, x.Data)
		return x
	}
	type tc struct {
		name, body string
		args       []*tensor.Tensor
	}
	var cases []tc
	var unary, binary []string
	for op := range excessPrecisionOps {
		switch op {
		case "dot", "convolution":
		case "add", "subtract", "multiply", "divide", "power", "atan2":
			binary = append(binary, op)
		default:
			unary = append(unary, op)
		}
	}
	for _, op := range unary {
		cases = append(cases, tc{op, fmt.Sprintf("  op = bf16[%d] %s(a)\n", n, op), []*tensor.Tensor{bf16(n)}})
	}
	for _, op := range binary {
		cases = append(cases, tc{op, fmt.Sprintf("  b = bf16[%d] parameter(1)\n  op = bf16[%d] %s(a, b)\n", n, n, op),
			[]*tensor.Tensor{bf16(n), bf16(n)}})
	}
	special = 2000 // contractions: a few specials, most sums finite
	cases = append(cases,
		tc{"dot", "  b = bf16[64,64] parameter(1)\n  op = bf16[64,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n",
			[]*tensor.Tensor{bf16(64, 64), bf16(64, 64)}},
		tc{"convolution", "  b = bf16[3,3,8,16] parameter(1)\n  op = bf16[2,8,8,16] convolution(a, b), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n",
			[]*tensor.Tensor{bf16(2, 8, 8, 8), bf16(3, 3, 8, 16)}})
	for _, c := range cases {
		a := c.args[0]
		shape := func(x *tensor.Tensor) string { return tensor.ShapeString(x.Type, x.Dims) }
		opShape := "bf16[" + fmt.Sprint(n) + "]"
		if c.name == "dot" {
			opShape = "bf16[64,64]"
		} else if c.name == "convolution" {
			opShape = "bf16[2,8,8,16]"
		}
		wide := strings.Replace(opShape, "bf16", "f32", 1)
		src := "HloModule m\n\nENTRY main {\n  a = " + shape(a) + " parameter(0)\n" + c.body +
			"  w = " + wide + " convert(op)\n  neg = " + opShape + " negate(op)\n" +
			"  ROOT t = (" + opShape + ", " + wide + ", " + opShape + ") tuple(op, w, neg)\n}\n"
		run := func(off bool) []*tensor.Tensor {
			defer func(v bool) { excessPrecisionOff = v }(excessPrecisionOff)
			excessPrecisionOff = off
			m, err := hlo.ParseText([]byte(src), c.name+".hlo")
			if err != nil {
				t.Fatalf("%s: %v\n%s", c.name, err, src)
			}
			res, err := Run(m, c.args, Options{})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			return res.Outputs
		}
		got, want := run(false), run(true)
		for _, i := range []int{0, 2} {
			if !tensorBitsEqual(got[i], want[i]) {
				t.Errorf("%s: output %d (the bf16 op's value) differs from the op computed in bf16", c.name, i)
			}
		}
		// The f32 value rounds to the bf16 one, and is not always it.
		rounded := tensor.New(dtype.BF16, got[1].Dims)
		dtype.EncodeF32(dtype.BF16, got[1].F32(), rounded.Data)
		if !tensorBitsEqual(rounded, got[0]) {
			t.Errorf("%s: the f32 value rounded is not the bf16 value", c.name)
		}
		if tensorBitsEqual(got[1], want[1]) {
			t.Errorf("%s: the convert's value equals the rounded one everywhere", c.name)
		}
	}
}

func tensorBitsEqual(a, b *tensor.Tensor) bool {
	if a.Type != b.Type || len(a.Data) != len(b.Data) {
		return false
	}
	for i := range a.Data {
		if a.Data[i] != b.Data[i] {
			return false
		}
	}
	return true
}
