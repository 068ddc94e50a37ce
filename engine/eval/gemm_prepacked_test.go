package eval

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// paddedKernel is kn without its in-place and short forms: every operand
// packed, a ragged row panel zero-padded to mr rows (the plain packed path).
func paddedKernel[T number](kn *gemmKernel[T]) *gemmKernel[T] {
	return &gemmKernel[T]{name: kn.name + "_padded", mr: kn.mr, nr: kn.nr, kc: kn.kc, mc: kn.mc, nc: kn.nc, micro: kn.micro}
}

// Products on a kept packing of B, and the short-row kernels, give the
// plain packed path's bits: row counts around every kernel's height, ragged
// column panels, contractions deeper than kc, every operand layout,
// non-finite values, one and two goroutines.
func TestGemmPrepackedMatchesPacked(t *testing.T) {
	rng := rand.New(rand.NewSource(21))
	for _, kn := range gemmKernelsF32() {
		ref := paddedKernel(kn)
		ms := []int{1, 2, 3, 4, 5, 7, 8, 9, 11, 12, 13, 16, 17, 20, 24, 31, 32, 33, 64, 100, 128}
		for trial := 0; trial < 50; trial++ {
			m := ms[trial%len(ms)]
			n, k := 1+rng.Intn(200), 1+rng.Intn(600)
			if trial%7 == 0 {
				n = 1024
			}
			av, bv := make([]float64, m*k), make([]float64, k*n)
			for _, s := range [][]float64{av, bv} {
				for i := range s {
					s[i] = rng.NormFloat64()
					switch rng.Intn(3000) {
					case 0:
						s[i] = math.Inf(1 - 2*rng.Intn(2))
					case 1:
						s[i] = math.NaN()
					}
				}
			}
			for an, la := range gemmTestLayouts(m, k) {
				for bn, lb := range gemmTestLayouts(k, n) {
					a, b := storeLayout[float32](av, 1, m, k, la), storeLayout[float32](bv, 1, k, n, lb)
					want := make([]float32, m*n)
					ref.run(1, 1, m, n, k, a, la, b, lb, want)
					bp := kn.packWhole(b, lb, k, n)
					for _, par := range []int{1, 2} {
						for _, run := range []string{"prepacked", "run"} {
							got := make([]float32, m*n)
							if run == "run" {
								kn.run(par, 1, m, n, k, a, la, b, lb, got)
							} else {
								kn.runPrepacked(par, m, n, k, a, la, bp, got)
							}
							for i := range want {
								if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
									t.Fatalf("%s %s m=%d n=%d k=%d A %s B %s par=%d: c[%d] = %v, padded packed %v",
										kn.name, run, m, n, k, an, bn, par, i, got[i], want[i])
								}
							}
						}
					}
				}
			}
		}
	}
}

// BenchmarkGemmPrepacked is a scan step's product (16×256 by 256×1024) on
// one goroutine, on a kept packing of B and on the unpacked-B path.
func BenchmarkGemmPrepacked(bm *testing.B) {
	for _, sz := range [][3]int{{16, 256, 1024}, {16, 128, 1024}, {64, 512, 512}, {32, 192, 576}} {
		m, k, n := sz[0], sz[1], sz[2]
		r := rand.New(rand.NewSource(1))
		a, b := make([]float32, m*k), make([]float32, k*n)
		for i := range a {
			a[i] = r.Float32()
		}
		for i := range b {
			b[i] = r.Float32()
		}
		c := make([]float32, m*n)
		kn := f32Kernel
		bp := kn.packWhole(b, rowMajor(k, n), k, n)
		bm.Run(fmt.Sprintf("%dx%dx%d/prepacked", m, k, n), func(bm *testing.B) {
			cpu := oneThread(bm)
			for range bm.N {
				kn.runPrepacked(1, m, n, k, a, rowMajor(m, k), bp, c)
			}
			reportFlops(bm, cpu, 2*float64(m*n*k))
		})
		bm.Run(fmt.Sprintf("%dx%dx%d/run", m, k, n), func(bm *testing.B) {
			cpu := oneThread(bm)
			for range bm.N {
				kn.run(1, 1, m, n, k, a, rowMajor(m, k), b, rowMajor(k, n), c)
			}
			reportFlops(bm, cpu, 2*float64(m*n*k))
		})
	}
}
