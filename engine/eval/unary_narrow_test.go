package eval

import (
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// unaryNarrowWhole is unary's narrow-float path as whole-array steps (widen,
// flush, op, flush, round through f16, store), the reference the blocked
// path must reproduce bit for bit.
func unaryNarrowWhole(op string, x *tensor.Tensor) *tensor.Tensor {
	keep := keepsSubnormals(op)
	xs := asF32(x)
	if !keep {
		xs = daz(xs)
	}
	o := make([]float32, len(xs))
	unaryFloat(op, xs, o)
	if !keep {
		ftz(o)
	}
	if throughF16(x.Type) {
		roundToF16(o)
	}
	return newFromF32(x.Type, x.Dims, o)
}

// TestUnaryNarrowBlockedMatchesWhole holds the blocked narrow unary path to
// the whole-array steps on random bit patterns (NaNs, infinities and
// subnormals among them) of every narrow float type, over lengths that end
// inside a block, on a block boundary, and past several blocks split across
// goroutines.
func TestUnaryNarrowBlockedMatchesWhole(t *testing.T) {
	types := []dtype.Type{dtype.BF16, dtype.F16, dtype.F8E4M3FN, dtype.F8E5M2, dtype.F8E4M3, dtype.F8E3M4,
		dtype.F8E4M3FNUZ, dtype.F8E5M2FNUZ, dtype.F8E4M3B11FNUZ, dtype.F8E8M0FNU}
	ops := []string{"exponential", "log", "tanh", "sqrt", "rsqrt", "floor", "ceil", "sign", "sine", "cosine",
		"round-nearest-even", "round-nearest-afz", "exponential-minus-one", "log-plus-one", "erf", "tan"}
	r := rand.New(rand.NewSource(3))
	for _, typ := range types {
		for _, n := range []int{1, 7, fuseBlock, fuseBlock + 3, 9*fuseBlock + 5, 70001} {
			x := tensor.New(typ, []int64{int64(n)})
			r.Read(x.Data)
			if typ == dtype.BF16 || typ == dtype.F16 {
				// Half the elements near the subnormal range and zero, where flushing decides.
				for i := 0; i+1 < len(x.Data); i += 4 {
					x.Data[i+1] &= 0x80
				}
			}
			for _, op := range ops {
				if !unaryFloat[float32](op, nil, nil) {
					continue
				}
				got, err := unary(op, x)
				if err != nil {
					t.Fatalf("%s %s: %v", op, typ, err)
				}
				want := unaryNarrowWhole(op, x)
				for i := range want.Data {
					if got.Data[i] != want.Data[i] {
						e := i / typ.Size()
						t.Fatalf("%s %s n=%d: element %d is %#x, want %#x (input %#x)", op, typ, n, e,
							got.Data[e*typ.Size():(e+1)*typ.Size()], want.Data[e*typ.Size():(e+1)*typ.Size()],
							x.Data[e*typ.Size():(e+1)*typ.Size()])
					}
				}
			}
		}
	}
}
