package eval

import (
	"math"
	"math/rand"
	"testing"
)

// scalarBinaryF32 is binaryFloat's scalar loop, kept here as the reference.
func scalarBinaryF32(op string, a, b, o []float32) {
	for i := range o {
		switch op {
		case "add":
			o[i] = a[i] + b[i]
		case "subtract":
			o[i] = a[i] - b[i]
		case "multiply":
			o[i] = a[i] * b[i]
		case "divide":
			o[i] = a[i] / b[i]
		}
	}
}

// The vector f32 arithmetic (GOEXPERIMENT=simd) gives the scalar loop's bits,
// NaN payloads included when both operands are NaN, at every length.
func TestBinaryF32VectorMatchesScalar(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	val := func() float32 {
		switch rng.Intn(8) {
		case 0:
			return math.Float32frombits(0x7f800001 | rng.Uint32()&0x803fffff) // NaN, random payload and sign
		case 1:
			return math.Float32frombits(rng.Uint32() & 0x807fffff) // subnormal or zero
		case 2:
			return float32(math.Inf(rng.Intn(2)*2 - 1))
		}
		return float32(rng.NormFloat64() * math.Pow(10, float64(rng.Intn(60)-30)))
	}
	for _, op := range []string{"add", "subtract", "multiply", "divide"} {
		for n := 0; n < 70; n++ {
			a, b := make([]float32, n), make([]float32, n)
			for i := range a {
				a[i], b[i] = val(), val()
			}
			want, got := make([]float32, n), make([]float32, n)
			scalarBinaryF32(op, a, b, want)
			if !binaryFloat(op, a, b, got) {
				t.Fatal(op)
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s(%#x, %#x) = %#x, scalar %#x", op, math.Float32bits(a[i]), math.Float32bits(b[i]),
						math.Float32bits(got[i]), math.Float32bits(want[i]))
				}
			}
		}
	}
}
