package eval

import (
	"math"
	"testing"
)

// TestComplexCleanAllChunks checks the chunked, all-core scan on operands
// past one chunk: clean ones are returned as they are, and a subnormal or
// signaling-NaN part anywhere (the first chunk, a middle one, the last
// element) is flushed as the per-element loop does.
func TestComplexCleanAllChunks(t *testing.T) {
	const n = 3<<17 + 5
	clean := make([]complex64, n)
	for i := range clean {
		clean[i] = complex(float32(i%97)+0.5, -float32(i%13))
	}
	if got := dazComplex(clean); &got[0] != &clean[0] {
		t.Fatal("a clean operand was copied")
	}
	sub := math.Float32frombits(0x00000003)
	snan := math.Float32frombits(0x7f800001)
	for _, at := range []int{0, 1<<17 + 7, n - 1} {
		for _, bad := range []complex64{complex(sub, 1), complex(1, snan)} {
			xs := append([]complex64(nil), clean...)
			xs[at] = bad
			if complexCleanAll(xs) {
				t.Fatalf("element %d = %v: reported clean", at, bad)
			}
			got, want := dazComplex(xs), oldDazComplex(xs)
			if bitsOf(got) != bitsOf(want) {
				t.Fatalf("element %d = %v: dazComplex differs from the per-element loop", at, bad)
			}
		}
	}
}
