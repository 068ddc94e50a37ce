package dtype

import (
	"math"
	"math/rand"
	"testing"
)

// f64ToF16's round-to-odd path gives fromF64's direct rounding on every
// kind of input: random bits, halfway points between f16 values and their
// f64 neighbours, the overflow and underflow edges, zeros and infinities.
func TestF64ToF16MatchesDirectRounding(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	check := func(x float64) {
		t.Helper()
		if math.IsNaN(x) {
			return
		}
		if got, want := f64ToF16(x), uint16(fmtF16.fromF64(x)); got != want {
			t.Fatalf("f64ToF16(%v = %#x) = %#04x, want %#04x", x, math.Float64bits(x), got, want)
		}
	}
	for _, x := range []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), 65504, 65519.99999999, 65520,
		65536, 1e300, 0x1p-24, 0x1p-25, 0x1.0000000000001p-25, 0x1p-26, 1e-300, math.SmallestNonzeroFloat64} {
		check(x)
		check(-x)
	}
	for i := 0; i < 2_000_000; i++ {
		check(math.Float64frombits(r.Uint64()))
		// Around every kind of f16 value: the value, the midpoint to its
		// neighbour, and the f64s next to that midpoint.
		h := uint16(r.Intn(0x7c00))
		lo, hi := f16ToF64(h), f16ToF64(h+1)
		mid := (lo + hi) / 2
		for _, x := range []float64{lo, mid, math.Nextafter(mid, 0), math.Nextafter(mid, math.Inf(1)),
			lo + (hi-lo)*r.Float64()} {
			check(x)
			check(-x)
		}
	}
}
