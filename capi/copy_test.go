package main

import (
	"bytes"
	"math/rand"
	"testing"
)

// TestCopyParallel: copyParallel copies every byte, at sizes below, at and
// past its parallel threshold, lengths not multiples of the split.
func TestCopyParallel(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, n := range []int{0, 1, 63, 4<<20 - 1, 8 << 20, 8<<20 + 13, 21<<20 + 4097} {
		src := make([]byte, n)
		rng.Read(src)
		dst := make([]byte, n)
		copyParallel(dst, src)
		if !bytes.Equal(dst, src) {
			t.Fatalf("n=%d: copy differs", n)
		}
	}
}
