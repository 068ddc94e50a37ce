package eval

import (
	"math"
	"math/rand"
	"testing"
)

// The unpacked-B path for few-row products gives the packed path's bits:
// every row count up to smallMRows, ragged column panels, contractions
// deeper than kc, batches, non-finite values, one and two goroutines.
func TestGemmSmallMMatchesPacked(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	for _, kn := range gemmKernelsF32() {
		if kn.microB == nil {
			continue
		}
		packed := &gemmKernel[float32]{name: kn.name, mr: kn.mr, nr: kn.nr, kc: kn.kc, mc: kn.mc, nc: kn.nc, micro: kn.micro}
		for trial := 0; trial < 60; trial++ {
			nb, m := 1+rng.Intn(3), 1+rng.Intn(smallMRows)
			n, k := 1+rng.Intn(300), 1+rng.Intn(700)
			a := make([]float32, nb*m*k)
			b := make([]float32, nb*k*n)
			for _, s := range [][]float32{a, b} {
				for i := range s {
					s[i] = float32(rng.NormFloat64())
					if rng.Intn(5000) == 0 {
						s[i] = float32(math.Inf(1))
					}
				}
			}
			for _, par := range []int{1, 2} {
				got, want := make([]float32, nb*m*n), make([]float32, nb*m*n)
				kn.run(par, nb, m, n, k, a, rowMajor(m, k), b, rowMajor(k, n), got)
				packed.run(par, nb, m, n, k, a, rowMajor(m, k), b, rowMajor(k, n), want)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s nb=%d m=%d n=%d k=%d par=%d: c[%d] = %v, packed %v", kn.name, nb, m, n, k, par, i, got[i], want[i])
					}
				}
			}
		}
	}
}
