//go:build goexperiment.simd && amd64

package eval

import (
	"math"
	"math/rand"
	"testing"
)

// sinCosF32x8 computing both functions in one pass gives each function's
// results as it computes them alone, and the memo of the other function
// (sinCosF32x8Memo) hands them out only for the very block they were
// computed from: a cosine then a sine of one block, of blocks differing in
// one element, the same function twice, every length around the vector
// size, bit for bit against the memo turned off.
func TestSinCosMemoMatchesFresh(t *testing.T) {
	withoutLibm(t) // the Go vector kernels, which stand in where libm is out of reach
	if binaryLanes != 16 {
		t.Skip("no AVX-512 vector path on this CPU or build")
	}
	rng := rand.New(rand.NewSource(10))
	sample := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			switch rng.Intn(8) {
			case 0:
				x[i] = []float32{0, float32(math.Copysign(0, -1)), 0x1p20, -0x1p21, 1e30, float32(math.Inf(-1)), float32(math.NaN()), 1e-40}[rng.Intn(8)]
			case 1:
				x[i] = float32(float64(rng.Intn(40)) * math.Pi / 2)
			default:
				x[i] = float32(rng.NormFloat64() * 3)
			}
		}
		return x
	}
	fresh := func(op string, x []float32) []float32 {
		o := make([]float32, len(x))
		k := sinCosF32x8(op, x, o, nil)
		unaryFloat(op, x[k:], o[k:])
		return o
	}
	other := map[string]string{"sine": "cosine", "cosine": "sine"}
	for _, n := range []int{8, 9, 15, 16, 100, 2048, 4095, 4096} {
		x := sample(n)
		for _, op := range []string{"sine", "cosine"} {
			o, oo := make([]float32, n), make([]float32, sseBlock)
			k := sinCosF32x8(op, x, o, oo)
			same(t, "one pass "+op, o[:k], fresh(op, x)[:k])
			same(t, "one pass other of "+op, oo[:k], fresh(other[op], x)[:k])
		}
		y := append([]float32(nil), x...)
		y[rng.Intn(n&^7)] += 1
		for _, seq := range [][2]string{{"cosine", "sine"}, {"sine", "cosine"}, {"sine", "sine"}} {
			for _, second := range [][]float32{x, y} {
				for step, in := range [][]float32{x, second} {
					got, op := make([]float32, n), seq[step]
					unaryFloat(op, in, got)
					sinCosMemoDisabled = true
					want := fresh(op, in)
					sinCosMemoDisabled = false
					same(t, op, got, want)
				}
			}
		}
	}
}

func same(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: element %d of %d: %#x, want %#x", what, i, len(got), math.Float32bits(got[i]), math.Float32bits(want[i]))
		}
	}
}
