package eval

import (
	"math"
	"math/rand"
	"testing"
)

// unaryFloat's f32 sqrt, floor, ceil, roundings, abs, negate and sign with the vector forms
// (every width this CPU runs) against its loop alone (binaryLanes 0), over
// NaNs (quiet, signaling, either sign, with payloads), infinities, signed
// zeros, subnormals, halfway cases (k + 1/2 near 0, near 2^23 and beyond,
// where every f32 is an integer), huge values and random bits, at every
// length up to a few vectors.
func TestUnaryF32VectorMatchesScalar(t *testing.T) {
	saved := binaryLanes
	defer func() { binaryLanes = saved }()
	rng := rand.New(rand.NewSource(11))
	specials := []float32{0, float32(math.Copysign(0, -1)), 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997, -0.49999997,
		1, -1, 8388607.5, -8388607.5, 8388608, 4194303.5, 16777217, 1e30, -1e30, math.MaxFloat32, -math.MaxFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
		0x1p-126, 1e-40, -1e-40, 4, 2, 0.25}
	nans := []uint32{0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001, 0x7fc12345, 0x7f812345, 0xffffffff}
	val := func() float32 {
		switch rng.Intn(6) {
		case 0:
			return specials[rng.Intn(len(specials))]
		case 1:
			return math.Float32frombits(nans[rng.Intn(len(nans))])
		case 2:
			return float32(rng.Intn(40)-20) + 0.5
		case 3:
			return float32(rng.NormFloat64() * 10)
		}
		return math.Float32frombits(rng.Uint32())
	}
	ops := []string{"sqrt", "floor", "ceil", "round-nearest-even", "round-nearest-afz", "abs", "negate", "sign"}
	for _, lanes := range binaryLaneWidths() {
		for n := 0; n < 80; n++ {
			x := make([]float32, n)
			for i := range x {
				x[i] = val()
			}
			for _, op := range ops {
				got, want := make([]float32, n), make([]float32, n)
				binaryLanes = lanes
				unaryFloat(op, x, got)
				binaryLanes = 0
				unaryFloat(op, x, want)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("lanes %d %s n=%d [%d]: %v (%#x): vector %v (%#x), loop %v (%#x)", lanes, op, n, i,
							x[i], math.Float32bits(x[i]), got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
					}
				}
			}
		}
	}
}
