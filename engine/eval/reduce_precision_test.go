package eval

import (
	"math"
	"math/rand"
	"testing"
)

// The f32 reduce-precision kernel against reducePrecisionBits (the general
// path, which the f16/bf16/f64 cases keep using) and against a naive
// reference of the rounding (nearest, ties to even, by exact arithmetic in
// f64), on random bits and on the boundary values of each format.
func TestReducePrecisionF32MatchesBits(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	xs := []uint32{0, 1 << 31, 1, 0x7fffff, 0x800000, 0x7f7fffff, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001,
		0xffffffff, 0x3f800000, 0x3f801000, 0x3f800fff, 0x3f8017ff, 0x477fe000, 0x477ff000, 0x38800000, 0x387fffff}
	for len(xs) < 20000 {
		xs = append(xs, rng.Uint32())
	}
	o := make([]uint32, len(xs))
	for eb := int64(1); eb <= 10; eb++ {
		for mb := int64(0); mb <= 25; mb++ {
			newReducePrecisionF32(eb, mb).apply(xs, o)
			for i, x := range xs {
				want := uint32(reducePrecisionBits(uint64(x), 8, 23, eb, mb))
				if x&0x7fffffff > 0x7f800000 {
					want = x
				}
				if o[i] != want {
					t.Fatalf("eb=%d mb=%d x=%#x: %#x, want %#x", eb, mb, x, o[i], want)
				}
				// Naive reference of the mantissa rounding alone (a normal
				// x whose rounding stays normal and finite in f32, eb=8).
				v := math.Float32frombits(x)
				if eb == 8 && mb < 23 && x&0x7f800000 != 0 && x&0x7f800000 != 0x7f800000 {
					e := math.Floor(math.Log2(math.Abs(float64(v))))
					ulp := math.Ldexp(1, int(e)-int(mb))
					q := float64(v) / ulp
					r := math.RoundToEven(q) * ulp
					if math.Abs(r) < math.MaxFloat32 && float32(r) != math.Float32frombits(o[i]) {
						t.Fatalf("mb=%d x=%v: %v, want %v", mb, v, math.Float32frombits(o[i]), r)
					}
				}
			}
		}
	}
}
