package eval

import (
	"math"
	"math/rand"
	"testing"
)

// TestFoldRowsMinMaxMatchesSequential holds foldRows' maximum and minimum
// (vector lanes where the build has them) to the sequential fold of every
// row, bit for bit: rows of signed zeros only, of infinities, with NaNs of
// distinct payloads (the first one must win), with the init value winning,
// over row lengths around the vector widths.
func TestFoldRowsMinMaxMatchesSequential(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	negZero := float32(math.Copysign(0, -1))
	pick := func(kind int) float32 {
		switch kind {
		case 0:
			return []float32{0, negZero}[r.Intn(2)]
		case 1:
			return []float32{float32(math.Inf(1)), float32(math.Inf(-1)), 0, negZero, 1}[r.Intn(5)]
		case 2:
			if r.Intn(40) == 0 {
				return math.Float32frombits(0x7fc00000 | uint32(r.Intn(1<<22)) | uint32(r.Intn(2))<<31)
			}
		}
		return float32(r.NormFloat64())
	}
	for _, runLen := range []int{1, 15, 16, 17, 23, 24, 31, 32, 33, 100, 1000} {
		for kind := range 6 {
			const rows = 9
			xs := make([]float32, rows*runLen)
			for i := range xs {
				xs[i] = pick(kind)
			}
			if kind >= 4 {
				// One zero of the other sign per row, anywhere in it (the
				// answer of maximum for -0 rows, of minimum for +0 rows).
				zero, odd := negZero, float32(0)
				if kind == 5 {
					zero, odd = 0, negZero
				}
				for row := range rows {
					for i := range runLen {
						xs[row*runLen+i] = zero
					}
					xs[row*runLen+r.Intn(runLen)] = odd
				}
			}
			for _, op := range []string{"maximum", "minimum"} {
				for _, i0 := range []float32{float32(math.Inf(-1)), float32(math.Inf(1)), 0, negZero, 0.5} {
					got := make([]float32, rows)
					foldRows(op, i0, xs, runLen, got)
					for row := range rows {
						want := foldFloat(op, i0, xs[row*runLen:(row+1)*runLen])
						if math.Float32bits(got[row]) != math.Float32bits(want) {
							t.Fatalf("%s init %v, rows of %d (kind %d), row %d: got %#x, want %#x", op, i0, runLen, kind, row,
								math.Float32bits(got[row]), math.Float32bits(want))
						}
					}
				}
			}
		}
	}
}
