package sim

import (
	"math"
	"math/rand/v2"
	"testing"
)

// expF32 rounds to the same float32 as math.Exp (float64, ~1 ulp) on a
// dense sweep, except at most a handful of boundary cases.
func TestExpF32MatchesMath(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	diff := 0
	for i := 0; i < 2000000; i++ {
		x := float64(float32(-110 + 200*r.Float64()))
		if i%2 == 0 {
			x = float64(float32(-3 + 6*r.Float64()))
		}
		got, want := float32(expF32(x)), float32(math.Exp(x))
		if got != want {
			if math.Abs(float64(got-want)) > math.Abs(float64(want))*1.2e-7 {
				t.Fatalf("expF32(%v) = %v, math.Exp gives %v", x, got, want)
			}
			diff++
		}
	}
	if diff > 20 {
		t.Fatalf("%d of 2e6 inputs round differently from math.Exp", diff)
	}
	for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 88.72283, 88.7229, -103.9, -200, 0} {
		got, want := float32(expF32(x)), float32(math.Exp(x))
		if got != want && !(got != got && want != want) {
			t.Fatalf("expF32(%v) = %v, want %v", x, got, want)
		}
	}
}
