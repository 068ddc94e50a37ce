package eval

import (
	"math"
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// The bf16 row maximum and minimum on the bits against the widened fold
// they replace (foldFloat from the init, rounded back to bf16), at every
// vector width the CPU runs: rows of every length around the vector width,
// of random bits (NaNs of both signs, infinities, zeros of both signs,
// subnormals), rows of only zeros and of equal values, NaN inits.
func TestReduceBF16MinMaxRowsMatchesFold(t *testing.T) {
	defer func(l int) { subnormalLanes = l }(subnormalLanes)
	rng := rand.New(rand.NewSource(8))
	pick := func(kind int) uint16 {
		switch kind {
		case 0:
			return uint16(rng.Intn(1 << 16))
		case 1: // no NaN
			for {
				if b := uint16(rng.Intn(1 << 16)); b&0x7fff <= 0x7f80 {
					return b
				}
			}
		case 2:
			return []uint16{0, 0x8000}[rng.Intn(2)]
		}
		return []uint16{0, 0x8000, 0x0001, 0x8001, 0x7f80, 0xff80, 0x3f80, 0xbf80}[rng.Intn(8)]
	}
	for _, lanes := range subnormalLaneWidths() {
		subnormalLanes = lanes
		for _, op := range []string{"maximum", "minimum"} {
			for trial := range 400 {
				runLen := 16 + rng.Intn(70)
				if trial%10 == 0 {
					runLen = 1024 + rng.Intn(40)
				}
				rows := 1 + rng.Intn(9)
				x := tensor.New(dtype.BF16, []int64{int64(rows), int64(runLen)})
				xs := x.U16()
				for r := range rows {
					kind := rng.Intn(4)
					if rng.Intn(3) > 0 {
						kind = 1
					}
					for i := range runLen {
						xs[r*runLen+i] = pick(kind)
					}
				}
				init := tensor.New(dtype.BF16, nil)
				init.U16()[0] = []uint16{0xff80, 0x7f80, 0xff80, 0x7fc1, 0x0000, 0x8000}[trial%6]
				out := reduceBF16MinMaxRows(op, x, init, []int64{int64(rows)}, runLen)
				if out == nil {
					t.Fatal("no fast path")
				}
				i0 := math.Float32frombits(uint32(init.U16()[0]) << 16)
				for r := range rows {
					row := make([]float32, runLen)
					for i := range row {
						row[i] = math.Float32frombits(uint32(xs[r*runLen+i]) << 16)
					}
					want := uint16(dtype.FromF32(dtype.BF16, foldFloat(op, i0, row)))
					if got := out.U16()[r]; got != want {
						t.Fatalf("lanes %d %s trial %d row %d (len %d, init %#04x): %#04x, want %#04x", lanes, op, trial, r, runLen, init.U16()[0], got, want)
					}
				}
			}
		}
	}
}
