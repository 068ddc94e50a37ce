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
				if !unaryFloat[float32](op, nil, nil) || narrowRoundsInside(op, typ) {
					continue // f16 expm1 rounds between its steps (f16Expm1, held to XLA by TestXLAMathSweep)
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

// binaryNarrowWhole is binaryFlushing's narrow-float path as whole-array
// steps, the reference for the blocked path.
func binaryNarrowWhole(op string, a, b *tensor.Tensor, flush bool) *tensor.Tensor {
	as, bs := asF32(a), asF32(b)
	if flush {
		as, bs = daz(as), daz(bs)
	}
	o := make([]float32, len(as))
	binaryFloat(op, as, bs, o)
	if flush {
		ftz(o)
	}
	if throughF16(a.Type) {
		roundToF16(o)
	}
	return newFromF32(a.Type, a.Dims, o)
}

// TestBinaryNarrowBlockedMatchesWhole is TestUnaryNarrowBlockedMatchesWhole
// for the binary ops, flushing and not.
func TestBinaryNarrowBlockedMatchesWhole(t *testing.T) {
	types := []dtype.Type{dtype.BF16, dtype.F16, dtype.F8E4M3FN, dtype.F8E5M2, dtype.F8E4M3FNUZ, dtype.F8E8M0FNU}
	r := rand.New(rand.NewSource(4))
	for _, typ := range types {
		for _, n := range []int{1, 9, fuseBlock + 1, 5*fuseBlock + 7, 40003} {
			a, b := tensor.New(typ, []int64{int64(n)}), tensor.New(typ, []int64{int64(n)})
			r.Read(a.Data)
			r.Read(b.Data)
			if typ == dtype.BF16 || typ == dtype.F16 {
				for i := 0; i+1 < len(a.Data); i += 6 {
					a.Data[i+1] &= 0x80
				}
			}
			for _, op := range []string{"add", "subtract", "multiply", "divide", "maximum", "minimum"} {
				for _, flush := range []bool{true, false} {
					got, err := binaryFlushing(op, a, b, flush)
					if err != nil {
						t.Fatalf("%s %s: %v", op, typ, err)
					}
					want := binaryNarrowWhole(op, a, b, flush)
					s := typ.Size()
					for e := 0; e < n; e++ {
						if string(got.Data[e*s:(e+1)*s]) != string(want.Data[e*s:(e+1)*s]) {
							t.Fatalf("%s %s flush=%v n=%d: element %d is %#x, want %#x (operands %#x, %#x)", op, typ, flush, n, e,
								got.Data[e*s:(e+1)*s], want.Data[e*s:(e+1)*s], a.Data[e*s:(e+1)*s], b.Data[e*s:(e+1)*s])
						}
					}
				}
			}
		}
	}
}
