package eval

import (
	"bytes"
	"math"
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// The typed f32-to-integer loops give dtype.FromF32's bits for every whole-
// byte integer type: NaNs, infinities, values at and beyond each range's
// ends, halves and signed zeros, and random bit patterns.
func TestStoreF32IntMatchesFromF32(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	var xs []float32
	for _, b := range []int{8, 16, 32, 64} {
		for _, e := range []float64{math.Ldexp(1, b-1), math.Ldexp(1, b)} {
			for _, d := range []float64{-1, -0.5, 0, 0.5, 1} {
				xs = append(xs, float32(e+d), float32(-e+d), float32(e)*(1-0x1p-24), -float32(e)*(1+0x1p-23))
			}
		}
	}
	xs = append(xs, float32(math.NaN()), -float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
		0, float32(math.Copysign(0, -1)), 0.5, -0.5, 0.99999994, -0.99999994, 1e-45, -1e-45)
	for len(xs) < 200000 {
		switch rng.Intn(3) {
		case 0:
			xs = append(xs, math.Float32frombits(rng.Uint32()))
		default:
			xs = append(xs, float32(rng.NormFloat64()*math.Pow(10, float64(rng.Intn(12)))))
		}
	}
	for _, typ := range []dtype.Type{dtype.S8, dtype.S16, dtype.S32, dtype.S64, dtype.U8, dtype.U16, dtype.U32, dtype.U64} {
		got, want := tensor.New(typ, []int64{int64(len(xs))}), tensor.New(typ, []int64{int64(len(xs))})
		if !storeF32Int(got, xs) {
			t.Fatalf("%v: no typed loop", typ)
		}
		dtype.EncodeF32(typ, xs, want.Data)
		if !bytes.Equal(got.Data, want.Data) {
			s := typ.Size()
			for i := range xs {
				if !bytes.Equal(got.Data[i*s:(i+1)*s], want.Data[i*s:(i+1)*s]) {
					t.Fatalf("%v from %v (%#x): got %x, want %x", typ, xs[i], math.Float32bits(xs[i]), got.Data[i*s:(i+1)*s], want.Data[i*s:(i+1)*s])
				}
			}
		}
	}
}

// Integer and pred conversions by typed loop give the widen-and-store
// path's bits for every pair of whole-byte integer and pred types, and to f32.
func TestConvertIntFastMatchesWidening(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	types := []dtype.Type{dtype.Pred, dtype.S8, dtype.U8, dtype.S16, dtype.U16, dtype.S32, dtype.U32, dtype.S64, dtype.U64}
	const n = 5000
	for _, from := range types {
		x := tensor.New(from, []int64{n})
		rng.Read(x.Data)
		if from == dtype.Pred {
			for i := range x.Data {
				x.Data[i] &= 1
			}
		}
		for _, to := range append(types, dtype.F32) {
			if to == from {
				continue
			}
			got, want := tensor.New(to, x.Dims), tensor.New(to, x.Dims)
			if !convertIntFast(x, got) {
				t.Fatalf("%v to %v: no typed loop", from, to)
			}
			if classOf(from) == classUnsigned {
				storeInts(want, asU64(x), newFromU64)
			} else {
				storeInts(want, asI64(x), newFromI64)
			}
			if !bytes.Equal(got.Data, want.Data) {
				t.Fatalf("%v to %v differs", from, to)
			}
		}
	}
}
