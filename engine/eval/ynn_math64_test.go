package eval

import (
	"math"
	"testing"
)

// TestYNNOp64ConfigRoundTrip: an f64 op's backend_config (16-digit f64
// scalars) is the op the evaluator reads.
func TestYNNOp64ConfigRoundTrip(t *testing.T) {
	o := YNNOp{Op: "erf", In: 1, C1: 1, F64: true, In64: 0.7071067811865476, C064: 0.5, C164: -0.3}
	got, err := ParseYNNOp(o.Config())
	if err != nil || got != o {
		t.Fatalf("ParseYNNOp(%q) = %+v, %v; want %+v", o.Config(), got, err, o)
	}
}

// TestYNNMath64Specials: the f64 kernels' special values, as the machine
// code gives them (tests/test_ynn_f64.py holds every value to jax).
func TestYNNMath64Specials(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	bits := math.Float64bits
	cases := []struct {
		name string
		f    func(float64) float64
		x    float64
		want float64
	}{
		{"exp(0)", func(x float64) float64 { return ynnExp64(x, 1, 1) }, 0, 1},
		{"exp(-inf)", func(x float64) float64 { return ynnExp64(x, 1, 1) }, -inf, 0},
		{"exp(inf)", func(x float64) float64 { return ynnExp64(x, 1, 1) }, inf, inf},
		{"exp(709.79)", func(x float64) float64 { return ynnExp64(x, 1, 1) }, 709.79, inf},
		{"exp(-709.09)", func(x float64) float64 { return ynnExp64(x, 1, 1) }, -709.09, 0}, // 2^-1023 as 0
		{"exp(subnormal)", func(x float64) float64 { return ynnExp64(x, 1, 1) }, 1e-310, 1},
		{"expm1(-inf)", func(x float64) float64 { return ynnExpm164(x, 1, 1) }, -inf, -1},
		{"log(0)", func(x float64) float64 { return ynnLog64(x, 1, 1) }, 0, -inf},
		{"log(1)", func(x float64) float64 { return ynnLog64(x, 1, 1) }, 1, 0},
		{"log(inf)", func(x float64) float64 { return ynnLog64(x, 1, 1) }, inf, inf},
		{"log(-1)", func(x float64) float64 { return ynnLog64(x, 1, 1) }, -1, ynnNaN64},
		{"log1p(-1)", func(x float64) float64 { return ynnLog1p64(x, 1, 1) }, -1, -inf},
		{"log1p(1e-300)", func(x float64) float64 { return ynnLog1p64(x, 1, 1) }, 1e-300, 1e-300},
		{"tanh(inf)", func(x float64) float64 { return ynnTanh64(x, 0, 1) }, inf, 1},
		{"tanh(-inf)", func(x float64) float64 { return ynnTanh64(x, 0, 1) }, -inf, -1},
		{"erf(inf)", func(x float64) float64 { return ynnErf64(x, 1, 0, 1) }, inf, 1},
		// -0 copied onto 0, then the kernel's FMA -0*1 + 0 is +0.
		{"erf(-0)", func(x float64) float64 { return ynnErf64(x, 1, 0, 1) }, math.Copysign(0, -1), 0},
	}
	for _, c := range cases {
		if got := c.f(c.x); bits(got) != bits(c.want) {
			t.Errorf("%s = %v (%#x), want %v (%#x)", c.name, got, bits(got), c.want, bits(c.want))
		}
	}
	if v := ynnExp64(nan, 1, 1); v == v {
		t.Errorf("exp(NaN) = %v", v)
	}
	// exp(1) within an ulp of e; the kernel's polynomial is accurate.
	if d := math.Abs(ynnExp64(1, 1, 1)-math.E) / math.E; d > 2.3e-16 {
		t.Errorf("exp(1) off by %g", d)
	}
	if d := math.Abs(ynnErf64(0.5, 1, 0, 1)-math.Erf(0.5)) / math.Erf(0.5); d > 4.5e-16 {
		t.Errorf("erf(0.5) off by %g", d)
	}
}
