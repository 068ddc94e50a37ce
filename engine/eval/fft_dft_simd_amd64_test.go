//go:build goexperiment.simd && amd64

package eval

import (
	"math"
	"math/rand"
	"testing"
)

// The vector direct-DFT passes give fftPassDFTGo's bits on every lane
// (radices 7 to 61, several m and s, with and without the stage's table).
func TestFFTPassDFTSIMDMatchesGo(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	for _, p := range []int{3, 7, 11, 13, 17, 31, 61} {
		for _, ms := range [][2]int{{1, 1}, {3, 2}, {5, 4}} {
			m, s := ms[0], ms[1]
			st := &fftStage{p: p, m: m, s: s, tw: make([]float64, 3*(p-1)*m)}
			for i := range st.tw {
				st.tw[i] = rng.NormFloat64()
			}
			if p%2 == 1 && p > 10 {
				st.dft = make([]float64, 2*p)
				for j := 0; j < p; j++ {
					st.dft[2*j], st.dft[2*j+1] = fftRoot(j, p)
				}
			}
			for _, w := range []int{4, 8} {
				if w == 8 && !fftSIMD8 || w == 4 && !fftSIMD4 {
					continue
				}
				n := p * m * s * 2 * w
				x := make([]float64, n)
				for i := range x {
					x[i] = rng.NormFloat64() * math.Pow(2, float64(rng.Intn(20)-10))
				}
				want, got := make([]float64, n), make([]float64, n)
				fftPassDFTGo(w, st, x, want)
				if w == 8 {
					fftPassDFTx8(st, x, got)
				} else {
					fftPassDFTx4(st, x, got)
				}
				for i := range want {
					if math.Float64bits(want[i]) != math.Float64bits(got[i]) {
						t.Fatalf("p %d m %d s %d lanes %d: element %d = %v, want %v", p, m, s, w, i, got[i], want[i])
					}
				}
			}
		}
	}
}
