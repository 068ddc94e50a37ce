//go:build goexperiment.simd && amd64

package eval

import (
	"math"
	"math/rand"
	"testing"
)

// TestYNNMath64VectorMatchesScalar holds the vector kernels of
// ynn_math64 to the scalar ones bit for bit (NaNs as NaNs), with and
// without folded scalars, on values across the range and special ones.
func TestYNNMath64VectorMatchesScalar(t *testing.T) {
	if !ynnVectorOK {
		t.Skip("no AVX2+FMA")
	}
	r := rand.New(rand.NewSource(5))
	specials := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 1e-310, -1e-310,
		0x1p-1022, 709.78, 709.79, -709.09, -709.08, -745.2, 1e-300, 1, -1, 300, 150, -150, 1e300, -1e300,
		0.9, -0.9, 0.8999999999999999, 5.93, -5.93, 3, -3, 1e-160, 1.5e-154, math.Sqrt2, 0.7071067811865476,
		-0.5, -1 + 1e-16, math.MaxFloat64, 0x1p-1021}
	xs := make([]float64, 4099)
	for i := range xs {
		if i < len(specials) {
			xs[i] = specials[i]
			continue
		}
		xs[i] = r.NormFloat64() * math.Pow(10, 3*r.Float64()-1)
		if i%3 == 0 {
			xs[i] = math.Abs(xs[i]) * math.Pow(10, 600*r.Float64()-300) // log's range
		}
	}
	same := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) || a != a && b != b }
	for _, o := range []YNNOp{
		{Op: "exp", In64: 1, C164: 1}, {Op: "exp", In64: -1.0 / 3, C164: 0.3},
		{Op: "expm1", In64: 1, C164: 1}, {Op: "expm1", In64: 2, C164: -0.5},
		{Op: "tanh", In64: 1, C164: 1}, {Op: "tanh", In64: 1, C064: 0.5, C164: 0.5},
		{Op: "log", In64: 1, C164: 1}, {Op: "log", In64: 3, C164: -0.25},
		{Op: "log1p", In64: 1, C164: 1}, {Op: "log1p", In64: -0.5, C164: 2},
		{Op: "erf", In64: 1, C164: 1}, {Op: "erf", In64: 0.7, C064: 0.5, C164: 0.5},
	} {
		o.F64 = true
		got := make([]float64, len(xs))
		n := ynnVectorF64(o, xs, got)
		if n != len(xs)&^3 {
			t.Fatalf("%+v: vector form covered %d of %d", o, n, len(xs))
		}
		f := o.unary64()
		for i := 0; i < n; i++ {
			if want := f(xs[i]); !same(got[i], want) {
				t.Errorf("%+v of %v: vector %v (%#x), scalar %v (%#x)", o, xs[i], got[i], math.Float64bits(got[i]), want, math.Float64bits(want))
			}
		}
	}
}
