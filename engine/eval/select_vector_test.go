package eval

import (
	"math/rand"
	"slices"
	"testing"
)

// TestSelectNarrowVectorsMatchScalar holds the 1- and 2-byte select vectors
// (and the scalar rest after them) to the scalar loop, with predicate bytes
// other than 0 and 1 among them, over lengths and start offsets that leave
// tails.
func TestSelectNarrowVectorsMatchScalar(t *testing.T) {
	r := rand.New(rand.NewSource(6))
	for _, n := range []int{0, 1, 15, 16, 17, 31, 32, 33, 100, 1029} {
		for _, off := range []int{0, 1, 3, 16} {
			p := make([]byte, n+off)
			for i := range p {
				p[i] = []byte{0, 1, 0, 1, 2, 0x80}[r.Intn(6)]
			}
			a8, b8 := make([]byte, n+off), make([]byte, n+off)
			a16, b16 := make([]uint16, n+off), make([]uint16, n+off)
			for i := range a8 {
				a8[i], b8[i] = byte(r.Uint32()), byte(r.Uint32())
				a16[i], b16[i] = uint16(r.Uint32()), uint16(r.Uint32())
			}
			got8, want8 := make([]byte, n+off), make([]byte, n+off)
			k := off + selectBytesVector(p[off:], a8[off:], b8[off:], got8[off:])
			selectRange(p, a8, b8, got8, k, n+off)
			selectRange(p, a8, b8, want8, off, n+off)
			if !slices.Equal(got8, want8) {
				t.Fatalf("bytes n=%d off=%d: %v, want %v", n, off, got8, want8)
			}
			got16, want16 := make([]uint16, n+off), make([]uint16, n+off)
			k = off + selectHalvesVector(p[off:], a16[off:], b16[off:], got16[off:])
			selectRange(p, a16, b16, got16, k, n+off)
			selectRange(p, a16, b16, want16, off, n+off)
			if !slices.Equal(got16, want16) {
				t.Fatalf("halves n=%d off=%d: %v, want %v", n, off, got16, want16)
			}
		}
	}
}
