package eval

import (
	"math"
	"math/rand"
	"testing"
)

// totalOrderKeysInto's vector loop (totalorder_simd_amd64.go) gives the
// scalar loop's keys, at every lane width the CPU runs and every length
// around the vector sizes: NaNs of both signs with payloads, infinities,
// signed zeros, subnormals and random bits.
func TestTotalOrderKeysVectorMatchesScalar(t *testing.T) {
	rng := rand.New(rand.NewSource(31))
	specials := []uint32{0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00001, 0xffc00000, 0x7f800001, 0xff812345, 1, 0x80000001, 0x7fffffff, 0xffffffff}
	saved := binaryLanes
	defer func() { binaryLanes = saved }()
	for _, lanes := range binaryLaneWidths() {
		binaryLanes = lanes
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 33, 1000, 2048} {
			xs := make([]float32, n)
			for i := range xs {
				if rng.Intn(4) == 0 {
					xs[i] = math.Float32frombits(specials[rng.Intn(len(specials))])
				} else {
					xs[i] = math.Float32frombits(rng.Uint32())
				}
			}
			got := totalOrderKeysInto(xs, make([]int32, n))
			totalOrderVectorDisabled = true
			want := totalOrderKeysInto(xs, make([]int32, n))
			totalOrderVectorDisabled = false
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("lanes %d n=%d element %d (%#x): key %#x, scalar %#x", lanes, n, i, math.Float32bits(xs[i]), got[i], want[i])
				}
			}
		}
	}
}
