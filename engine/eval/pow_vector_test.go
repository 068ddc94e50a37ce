package eval

import (
	"math"
	"math/rand"
	"testing"
)

// The vector f32 power against math.Pow rounded to f32: equal, or (an f64
// result next to an f32 rounding boundary) one ulp apart, over bases and
// exponents of every size, integers and halves, x = 1, results near the fast
// lanes' limits, and the lanes math.Pow keeps (x ≤ 0, zeros, infinities,
// NaNs, overflow and underflow).
func TestPowF32VectorMatchesMath(t *testing.T) {
	if powF32Vector(make([]float32, 8), make([]float32, 8), make([]float32, 8)) == 0 {
		t.Skip("no vector path on this CPU or build")
	}
	r := rand.New(rand.NewSource(13))
	specials := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 2, 0.5, 1e-30, 1e30, 3.4e38, 1e-45,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), -2.5, 7, 1.0000001, 0.99999994}
	var x, y []float32
	for len(x) < 400000 {
		var a, b float32
		switch r.Intn(5) {
		case 0:
			a, b = specials[r.Intn(len(specials))], specials[r.Intn(len(specials))]
		case 1:
			a, b = float32(math.Abs(r.NormFloat64())*10), float32(r.Intn(21)-10)/2
		case 2:
			a, b = float32(math.Exp(r.NormFloat64()*20)), float32(r.NormFloat64()*3)
		case 3:
			a, b = float32(math.Abs(r.NormFloat64())), float32(r.NormFloat64()*60) // |y log x| near 80
		default:
			a, b = math.Float32frombits(r.Uint32()), math.Float32frombits(r.Uint32())
		}
		x, y = append(x, a), append(y, b)
	}
	o := make([]float32, len(x))
	if n := powF32Vector(x, y, o); n != len(x) {
		t.Fatalf("did %d of %d", n, len(x))
	}
	off := 0
	for i := range x {
		want := float32(math.Pow(float64(x[i]), float64(y[i])))
		got := o[i]
		if want != want {
			if got == got {
				t.Fatalf("pow(%v, %v) = %v, want NaN", x[i], y[i], got)
			}
			continue
		}
		if math.Float32bits(got) == math.Float32bits(want) {
			continue
		}
		d := int64(math.Float32bits(got)) - int64(math.Float32bits(want))
		if d != 1 && d != -1 {
			t.Fatalf("pow(%v, %v) = %v (%#x), math.Pow gives %v (%#x)", x[i], y[i], got, math.Float32bits(got), want, math.Float32bits(want))
		}
		off++
	}
	t.Logf("%d of %d one ulp from math.Pow", off, len(x))
	if off > len(x)/10000 {
		t.Errorf("%d of %d results one ulp from math.Pow", off, len(x))
	}
}
