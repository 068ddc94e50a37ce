package eval

import (
	"math/rand"
	"testing"
)

// The f32 subnormal scans (vector ones under GOEXPERIMENT=simd) agree with
// the definition: exponent bits 0, mantissa bits not, at every position and
// length around the vector width.
// Every vector width this CPU runs is tested, with subnormals dense and
// sparse (so that whole runs of vectors are free of them).
func TestSubnormalScansF32(t *testing.T) {
	saved := subnormalLanes
	defer func() { subnormalLanes = saved }()
	for _, lanes := range subnormalLaneWidths() {
		subnormalLanes = lanes
		testSubnormalScansF32(t)
	}
}

func testSubnormalScansF32(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	isSub := func(b uint32) bool { return b&0x7f800000 == 0 && b&0x007fffff != 0 }
	for n := 0; n < 300; n += 1 + n/40 {
		for trial := 0; trial < 50; trial++ {
			xs := make([]uint32, n)
			odds := 4 + trial%3*100 // one element in 4 special, or in 104 or 204
			for i := range xs {
				switch k := rng.Intn(odds); {
				case k == 0 && trial%7 == 6:
					xs[i] = 1 + uint32(rng.Intn(2))*0x007ffffe | uint32(rng.Intn(2))<<31 // the extreme subnormals
				case k == 0:
					xs[i] = uint32(rng.Intn(0x800000)) | uint32(rng.Intn(2))<<31 // subnormal or zero
				case k == 1:
					xs[i] = 0x7f800000 | uint32(rng.Intn(0x800000)) // inf or NaN
				default:
					xs[i] = rng.Uint32()&0x807fffff | uint32(1+rng.Intn(254))<<23
				}
			}
			want := -1
			for i, b := range xs {
				if isSub(b) {
					want = i
					break
				}
			}
			if got := firstSubnormalBits32(xs); got != want {
				t.Fatalf("%x: first subnormal %d, want %d", xs, got, want)
			}
			ys := append([]uint32(nil), xs...)
			ftzBits32(ys)
			for i, b := range xs {
				w := b
				if isSub(b) {
					w = b & 0x80000000
				}
				if ys[i] != w {
					t.Fatalf("%x: ftz element %d = %#x, want %#x", xs, i, ys[i], w)
				}
			}
		}
	}
}
