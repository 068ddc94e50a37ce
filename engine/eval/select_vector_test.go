package eval

import (
	"math/rand"
	"slices"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
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

// compareWhole is compare's f32-class path as whole-array steps (the
// reference for the blocked one).
func compareWhole(dir string, totalOrder, flush bool, a, b *tensor.Tensor) []byte {
	as, bs := asF32(a), asF32(b)
	if flush {
		as, bs = daz(as), daz(bs)
	}
	o := make([]byte, len(as))
	if totalOrder {
		compareKernel(dir, totalOrderKeysInto(as, make([]int32, len(as))), totalOrderKeysInto(bs, make([]int32, len(bs))), o)
	} else {
		compareKernel(dir, as, bs, o)
	}
	return o
}

// TestCompareF32BlockedMatchesWhole holds the blocked f32-class compare to
// the whole-array steps, FLOAT and TOTALORDER, flushing and not, on random
// bits (NaNs, signed zeros, subnormals) of f32, bf16, f16 and an f8 type,
// over several blocks and a tail.
func TestCompareF32BlockedMatchesWhole(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for _, typ := range []dtype.Type{dtype.F32, dtype.BF16, dtype.F16, dtype.F8E4M3FN} {
		for _, n := range []int{5, 3*fuseBlock + 17, 20011} {
			a, b := tensor.New(typ, []int64{int64(n)}), tensor.New(typ, []int64{int64(n)})
			r.Read(a.Data)
			copy(b.Data, a.Data)
			// A third of b equal to a, a third of a's subnormal-exponent bytes, the rest random.
			for i := 0; i < len(b.Data); i++ {
				switch r.Intn(3) {
				case 1:
					b.Data[i] = byte(r.Uint32())
				case 2:
					a.Data[i] &= 0x80
				}
			}
			for _, dir := range []string{"EQ", "NE", "LT", "LE", "GT", "GE"} {
				for _, mode := range []struct{ total, flush bool }{{false, true}, {false, false}, {true, false}} {
					out := make([]byte, n)
					compareF32Blocked(dir, mode.total, mode.flush, a, b, out)
					if want := compareWhole(dir, mode.total, mode.flush, a, b); !slices.Equal(out, want) {
						for i := range out {
							if out[i] != want[i] {
								t.Fatalf("%s %v total=%v flush=%v n=%d: element %d is %d, want %d", dir, typ, mode.total, mode.flush, n, i, out[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}
