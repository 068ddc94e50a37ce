package eval

import (
	"math"
	"math/rand"
	"testing"
)

// The f64 vector log, sine, cosine and sqrt against the math package, bit
// for bit, at every vector width this CPU runs: edge cases (zeros,
// infinities, NaN payloads, subnormals, the trigonometric range limit) and
// values spread over the whole exponent range, at lengths with tails.
func TestUnaryF64VectorMatchesMath(t *testing.T) {
	withoutLibm(t) // the Go vector kernels, which stand in where libm is out of reach
	if f64MathLanes != f64MathLaneWidths()[0] {
		t.Fatalf("the vector forms turned themselves off (lanes %d, want %d): they differ from math here", f64MathLanes, f64MathLaneWidths()[0])
	}
	saved := f64MathLanes
	defer func() { f64MathLanes = saved }()
	rng := rand.New(rand.NewSource(64))
	edges := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(),
		math.Float64frombits(0x7ff0000000000001), math.Float64frombits(0xfff8000000000123),
		math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, 0x1p-1022, math.MaxFloat64, -math.MaxFloat64,
		7.09782712893384e+02, 709.782712893384, 709.7827128933841, 709.78, 709.79, 710,
		-708.39, -708.4, -709.08956571282405, -744.44, -745.1332191019411, -745.1332191019412, -745.2, -746, -1e5,
		0.625, math.Nextafter(0.625, 0), -0.625, 44.014845965556525, math.Nextafter(44.014845965556525, 100), -44.02,
		1, -1, 0.5, 1e-8, -1e-300, 2e-308, 30, -17.3, 0.7071067811865476, 0.7071067811865475, 1.4142135623730951,
		2, 4, 0.25, 5e-324, 1e-310, -5e-324, 1e308, math.Pi, -math.Pi / 2, math.Pi / 4, 3 * math.Pi / 4, 1 << 29, -(1 << 29),
		536870911.9, 1e10, -7.5, 100, -1000.25}
	var xs []float64
	for _, e := range edges {
		xs = append(xs, e, math.Nextafter(e, math.Inf(1)), math.Nextafter(e, math.Inf(-1)))
	}
	for range 20000 {
		var v float64
		switch rng.Intn(5) {
		case 0:
			v = math.Float64frombits(rng.Uint64())
		case 1:
			v = (rng.Float64()*2 - 1) * 800
		case 2:
			v = rng.NormFloat64() * 2
		case 3:
			v = (rng.Float64()*2 - 1) * 1e9
		default:
			v = math.Ldexp(rng.Float64(), -rng.Intn(1100))
		}
		xs = append(xs, v)
	}
	want := map[string]func(float64) float64{"sqrt": math.Sqrt, "log": math.Log, "sine": math.Sin, "cosine": math.Cos}
	for _, lanes := range f64MathLaneWidths() {
		f64MathLanes = lanes
		for op, f := range want {
			for _, n := range []int{len(xs), len(xs) - 3, 7, 1} {
				o := make([]float64, n)
				if !unaryFloat(op, xs[:n], o) {
					t.Fatalf("%s unsupported", op)
				}
				for i, v := range xs[:n] {
					if w := f(v); math.Float64bits(w) != math.Float64bits(o[i]) {
						t.Fatalf("lanes %d %s(%v = %#x) = %v (%#x), math %v (%#x)", lanes, op, v, math.Float64bits(v), o[i], math.Float64bits(o[i]), w, math.Float64bits(w))
					}
				}
			}
		}
	}
}
