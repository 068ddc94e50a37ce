package eval

import (
	"math"
	"math/rand"
	"testing"
)

// compareF32Vector and compareInt32Vector (at every vector width this CPU
// runs) followed by compareKernel's loop on the rest, against
// compareKernel's loop alone, and selectBits against selectBitsLoop, at
// every length up to a few vectors, over values with NaNs (quiet, signaling,
// either sign), infinities, signed zeros, subnormals and extremes, many of
// them equal to their partner so EQ, LE and GE see ties. In the portable
// build the vector forms do nothing and the comparison is with the loop.
func TestCompareSelectVectorMatchesScalar(t *testing.T) {
	saved := binaryLanes
	defer func() { binaryLanes = saved }()
	rng := rand.New(rand.NewSource(7))
	specials := []uint32{0, 0x80000000, 1, 0x80000001, 0x007fffff, 0x807fffff, 0x00800000, 0x7f7fffff, 0xff7fffff,
		0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001, 0x3f800000, 0xbf800000,
		0x7fffffff, 0xffffffff, 0x80000000 - 1, 31, 32}
	val := func() uint32 {
		if rng.Intn(3) == 0 {
			return specials[rng.Intn(len(specials))]
		}
		return rng.Uint32()
	}
	dirs := []string{"EQ", "NE", "LT", "LE", "GT", "GE"}
	for _, lanes := range binaryLaneWidths() {
		binaryLanes = lanes
		for n := 0; n < 80; n++ {
			a, b := make([]uint32, n), make([]uint32, n)
			for i := range a {
				a[i], b[i] = val(), val()
				switch rng.Intn(4) {
				case 0:
					b[i] = a[i]
				case 1:
					b[i] = a[i] ^ 0x80000000 // +-0 and sign pairs
				}
			}
			fa, fb := make([]float32, n), make([]float32, n)
			for i := range a {
				fa[i], fb[i] = math.Float32frombits(a[i]), math.Float32frombits(b[i])
			}
			for _, dir := range dirs {
				got, want := make([]byte, n), make([]byte, n)
				k := compareF32Vector(dir, fa, fb, got)
				compareKernel(dir, fa[k:], fb[k:], got[k:])
				compareKernel(dir, fa, fb, want)
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("lanes %d f32 %s n=%d [%d]: %#x vs %#x: vector %d, loop %d", lanes, dir, n, i, a[i], b[i], got[i], want[i])
					}
				}
				for _, signed := range []bool{false, true} {
					clear(got)
					k := compareInt32Vector(dir, signed, a, b, got)
					if signed {
						compareKernel(dir, asSigned32(a[k:]), asSigned32(b[k:]), got[k:])
						compareKernel(dir, asSigned32(a), asSigned32(b), want)
					} else {
						compareKernel(dir, a[k:], b[k:], got[k:])
						compareKernel(dir, a, b, want)
					}
					for i := range got {
						if got[i] != want[i] {
							t.Fatalf("lanes %d int signed=%v %s n=%d [%d]: %#x vs %#x: vector %d, loop %d", lanes, signed, dir, n, i, a[i], b[i], got[i], want[i])
						}
					}
				}
			}
			p := make([]byte, n)
			for i := range p {
				p[i] = []byte{0, 1, 0, 1, 2, 0x80, 0xff}[rng.Intn(7)]
			}
			got, want := make([]uint32, n), make([]uint32, n)
			selectBits(p, a, b, got)
			selectBitsLoop(p, a, b, want)
			for i := range got {
				if got[i] != want[i] || (p[i] != 0 && got[i] != a[i]) || (p[i] == 0 && got[i] != b[i]) {
					t.Fatalf("lanes %d select n=%d [%d]: pred %d %#x/%#x: vector %#x, loop %#x", lanes, n, i, p[i], a[i], b[i], got[i], want[i])
				}
			}
		}
	}
}
