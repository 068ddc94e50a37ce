package eval

import (
	"math"
	"math/rand"
	"testing"
)

// xlaF64Inputs are edge cases of every branch of the f64 kernels (the
// clamps and overflow/underflow bounds of exp and logistic, tanh's 20 and
// clamp, expm1's ±0.5 and flushed x/2, log1p's ±(sqrt(2)-1), subnormals,
// zeros, infinities, NaN payloads of both kinds and signs), each with its
// neighbours, and random values over the whole range.
func xlaF64Inputs() []float64 {
	edges := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(),
		math.Float64frombits(0x7ff0000000000123), math.Float64frombits(0xfff8000000000456),
		math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, 0x1p-1022, -0x1p-1022, 0x1p-1021, 0x1p-1020, -0x1p-1021,
		math.MaxFloat64, -math.MaxFloat64, exp64Lo, exp64Hi, -exp64Lo, -exp64Hi, -709.08956571282405, -745.1332191019411,
		709.78, 709.79, 710, -708.39, -708.4, -746, 1e5, -1e5, tanh64Clamp, -tanh64Clamp, 20, -20, 19.999, 0.5, -0.5,
		log1p64Small, -log1p64Small, 1, -1, -0.999999, 2, 1e-8, -1e-300, 1e-300, 1e-160, 1e-154, 30, -17.3, 1e300, 1e10}
	var xs []float64
	for _, e := range edges {
		xs = append(xs, e, math.Nextafter(e, math.Inf(1)), math.Nextafter(e, math.Inf(-1)))
	}
	rng := rand.New(rand.NewSource(64))
	for range 30000 {
		var v float64
		switch rng.Intn(5) {
		case 0:
			v = math.Float64frombits(rng.Uint64())
		case 1:
			v = (rng.Float64()*2 - 1) * 800
		case 2:
			v = rng.NormFloat64() * 2
		case 3:
			v = rng.NormFloat64() * 0.3
		default:
			v = math.Ldexp(rng.Float64(), -rng.Intn(1100))
		}
		xs = append(xs, v)
	}
	return xs
}

// Each vector width the CPU runs gives the scalar kernels' bits (the
// vector kernels do the same operations lane by lane), at lengths with and
// without tails.
func TestXLAMathF64VectorMatchesScalar(t *testing.T) {
	saved := xlaF64Lanes
	defer func() { xlaF64Lanes = saved }()
	xs := xlaF64Inputs()
	for _, op := range []string{"exponential", "tanh", "exponential-minus-one", "logistic", "log-plus-one"} {
		scalar := xlaScalarF64(op)
		want := make([]float64, len(xs))
		scalar(xs, want)
		for _, lanes := range xlaF64LaneWidths() {
			xlaF64Lanes = lanes
			for _, n := range []int{len(xs), len(xs) - 3, 7, 1} {
				o := make([]float64, n)
				if !unaryFloat(op, xs[:n], o) {
					t.Fatalf("%s unsupported", op)
				}
				for i, v := range xs[:n] {
					if math.Float64bits(want[i]) != math.Float64bits(o[i]) {
						t.Fatalf("lanes %d %s(%v = %#x) = %v (%#x), scalar kernel %v (%#x)", lanes, op, v, math.Float64bits(v),
							o[i], math.Float64bits(o[i]), want[i], math.Float64bits(want[i]))
					}
				}
			}
		}
	}
}

// The scalar kernels' special values, which follow from XLA's selects:
// clamped ranges, NaN quieted (logistic's negated), tiny expm1 and log1p
// arguments returned as they are.
func TestXLAMathF64Specials(t *testing.T) {
	inf, nan := math.Inf(1), math.Float64frombits(0x7ff0000000000123)
	cases := []struct {
		f    func(float64) float64
		x, y float64
	}{
		{exp64, -709, 0}, {exp64, 710, inf}, {exp64, inf, inf}, {exp64, -inf, 0}, {exp64, 0, 1},
		{tanh64, 20, 1}, {tanh64, -inf, -1}, {tanh64, 1e-300, 1e-300}, {tanh64, math.Copysign(0, -1), math.Copysign(0, -1)},
		{expm1_64, 0x1p-1022, 0x1p-1022}, {expm1_64, -inf, -1}, {expm1_64, inf, inf},
		{logistic64, 709, 1}, {logistic64, -710, 0}, {logistic64, 0, 0.5},
		{log1pSmall64, 1e-300, 1e-300}, {log1pSmall64, math.Copysign(0, -1), math.Copysign(0, -1)},
	}
	for _, c := range cases {
		if got := c.f(c.x); math.Float64bits(got) != math.Float64bits(c.y) {
			t.Errorf("f(%v) = %v, want %v", c.x, got, c.y)
		}
	}
	for _, f := range []func(float64) float64{exp64, tanh64, expm1_64} {
		if got := f(nan); math.Float64bits(got) != 0x7ff8000000000123 {
			t.Errorf("NaN in: %#x", math.Float64bits(got))
		}
	}
	if got := logistic64(nan); math.Float64bits(got) != 0xfff8000000000123 {
		t.Errorf("logistic(NaN) = %#x, want the negated NaN quieted", math.Float64bits(got))
	}
	// exp's last product lands below the smallest normal just above exp64Lo
	// and is flushed (FTZ).
	for x := exp64Lo; x < exp64Lo+1e-12; x = math.Nextafter(x, 0) {
		if r := exp64(x); r != 0 && r < f64MinNormal {
			t.Fatalf("exp(%v) = %v is subnormal", x, r)
		}
	}
}
