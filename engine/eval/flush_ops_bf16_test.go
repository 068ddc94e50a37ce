package eval

import (
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// firstSubnormalBF16's four-words-at-a-time test finds the same first
// subnormal as the word-by-word definition at every length and lane
// position, and ftzTensor flushes bf16 subnormals to their signed zeros and
// nothing else.
func TestSubnormalScanBF16(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	isSub := func(b uint16) bool { return b&0x7f80 == 0 && b&0x007f != 0 }
	specials := []uint16{0, 0x8000, 1, 0x8001, 0x007f, 0x807f, 0x0080, 0x8080, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0x3f80, 0xffff, 0x00ff, 0x0100}
	for n := 0; n < 40; n++ {
		for trial := 0; trial < 300; trial++ {
			xs := make([]uint16, n)
			for i := range xs {
				switch rng.Intn(6) {
				case 0:
					xs[i] = specials[rng.Intn(len(specials))]
				case 1:
					xs[i] = uint16(rng.Intn(0x80)) | uint16(rng.Intn(2))<<15 // subnormal or zero
				default:
					xs[i] = uint16(rng.Intn(0x10000))
				}
			}
			want := -1
			for i, b := range xs {
				if isSub(b) {
					want = i
					break
				}
			}
			if got := firstSubnormalBF16(xs); got != want {
				t.Fatalf("%#x: first subnormal %d, want %d", xs, got, want)
			}
			// Every start alignment of the uint64 view.
			for s := 1; s < min(4, n); s++ {
				w := want - s
				if want >= 0 && want < s {
					w = -1
					for i, b := range xs[s:] {
						if isSub(b) {
							w = i
							break
						}
					}
				}
				if want < 0 {
					w = -1
				}
				if got := firstSubnormalBF16(xs[s:]); got != w {
					t.Fatalf("%#x[%d:]: first subnormal %d, want %d", xs, s, got, w)
				}
			}
			tt := tensor.New(dtype.BF16, []int64{int64(n)})
			copy(tt.U16(), xs)
			if hasSubnormal(tt) != (want >= 0) {
				t.Fatalf("%#x: hasSubnormal %v", xs, want < 0)
			}
			ftzTensor(tt)
			for i, b := range tt.U16() {
				w := xs[i]
				if isSub(w) {
					w &= 0x8000
				}
				if b != w {
					t.Fatalf("%#x: ftz [%d] = %#x, want %#x", xs, i, b, w)
				}
			}
		}
	}
}
