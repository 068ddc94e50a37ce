package eval

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// TestGemmRunOverMatchesRun holds runOver (the first kc slice on the storing
// kernels, C never read) to run on a zeroed C, bit for bit, on C full of
// garbage: every f32 kernel (and its YNNPACK-block copies), the serial,
// shared and few-row paths, ragged edges, chains that end at -0 (stored as
// +0, as a zeroed C's add gives), NaN payloads and infinities.
func TestGemmRunOverMatchesRun(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	kernels := gemmKernelsF32()
	for _, kn := range gemmKernelsF32() {
		kernels = append(kernels, kn.withKC(64), kn.withKC(512))
	}
	checkRunOver(t, r, kernels, func(s []float32) {
		for i := range s {
			switch r.Intn(40) {
			case 0:
				s[i] = math.Float32frombits(0x7fc00000 | uint32(r.Intn(1<<22)) | uint32(r.Intn(2))<<31) // NaN
			case 1:
				s[i] = float32(math.Inf(1 - 2*r.Intn(2)))
			case 2, 3, 4:
				s[i] = -1e-30 // with a +1e-30 partner: products round to -0
			default:
				s[i] = float32(r.NormFloat64())
			}
		}
	}, func(v float32) uint64 { return uint64(math.Float32bits(v)) }, func() float32 { return math.Float32frombits(r.Uint32()) })
	// f64 (YNNPACK's f64 dots run on runOver, dot_ynn_f64.go).
	kernels64 := gemmKernelsF64()
	for _, kn := range gemmKernelsF64() {
		kernels64 = append(kernels64, kn.withKC(64), kn.withKC(512))
	}
	checkRunOver(t, r, kernels64, func(s []float64) {
		for i := range s {
			switch r.Intn(40) {
			case 0:
				s[i] = math.Float64frombits(0x7ff8000000000000 | uint64(r.Int63n(1<<51)) | uint64(r.Intn(2))<<63) // NaN
			case 1:
				s[i] = math.Inf(1 - 2*r.Intn(2))
			case 2, 3, 4:
				s[i] = -1e-200 // with a +1e-200 partner: products round to -0
			default:
				s[i] = r.NormFloat64()
			}
		}
	}, math.Float64bits, func() float64 { return math.Float64frombits(r.Uint64()) })

	// The chains of -0 are there: a storing kernel adds +0 to one, which
	// the chain alone would leave at -0.
	kn := gemmKernelsF32()[0]
	if kn.store == nil {
		t.Skip("no storing kernels on this CPU")
	}
	a := make([]float32, kn.mr*4)
	b := make([]float32, 4*kn.nr)
	for p := 0; p < 4; p++ {
		for i := 0; i < kn.mr; i++ {
			a[p*kn.mr+i] = -1e-30
		}
		b[p*kn.nr] = 1e-30
	}
	c := make([]float32, kn.mr*kn.nr)
	kn.store.micro(4, a, b, c, kn.nr)
	if math.Float32bits(c[0]) != 0 {
		t.Fatalf("stored chain of -0 products = %#08x, want +0", math.Float32bits(c[0]))
	}
	if kn.chain != nil {
		clear(c)
		kn.chain.micro(4, a, b, c, kn.nr) // continues from +0: the chain alone
		if math.Float32bits(c[0]) != 0x80000000 {
			t.Fatalf("chain of -0 products from +0 = %#08x, want -0 (the case the +0 is for)", math.Float32bits(c[0]))
		}
	}
}

// checkRunOver holds runOver on garbage to run on zeros, bit for bit, for
// every kernel, shape and goroutine count (see TestGemmRunOverMatchesRun).
func checkRunOver[T float32 | float64](t *testing.T, r *rand.Rand, kernels []*gemmKernel[T], fill func([]T), bits func(T) uint64, garbage func() T) {
	t.Helper()
	tiny := T(-1e-30)
	if bits(1) > 1<<32 {
		tiny = T(-1e-200)
	}
	shapes := [][4]int{ // nb, m, n, k
		{1, 37, 45, 300}, {1, 12, 32, 256}, {1, 5, 70, 40}, {1, 31, 17, 513}, {3, 50, 33, 260},
		{1, 200, 130, 600}, {2, 7, 16, 9}, {1, 1, 1, 1}, {1, 64, 40, 1},
	}
	for _, kn := range kernels {
		for _, s := range shapes {
			nb, m, n, k := s[0], s[1], s[2], s[3]
			a, b := make([]T, nb*m*k), make([]T, nb*k*n)
			fill(a)
			fill(b)
			// Whole rows of A and columns of B at -tiny and +tiny: chains
			// of -0 products only.
			for bi := 0; bi < nb; bi++ {
				for p := 0; p < k; p++ {
					a[bi*m*k+p] = tiny
					b[bi*k*n+p*n] = -tiny
				}
			}
			for _, par := range []int{1, 2} {
				want := make([]T, nb*m*n)
				kn.run(par, nb, m, n, k, a, rowMajor(m, k), b, rowMajor(k, n), want)
				got := make([]T, nb*m*n)
				for i := range got {
					got[i] = garbage()
				}
				kn.runOver(par, nb, m, n, k, a, rowMajor(m, k), b, rowMajor(k, n), got)
				name := fmt.Sprintf("%s %v par %d", kn.name, s, par)
				negZero := 0
				for i := range want {
					if bits(got[i]) != bits(want[i]) {
						t.Fatalf("%s: element %d = %#x, run on zeros gives %#x", name, i, bits(got[i]), bits(want[i]))
					}
					if want[i] == 0 && math.Signbit(float64(want[i])) {
						negZero++
					}
				}
				if negZero > 0 {
					t.Fatalf("%s: %d elements -0 after a zeroed C's add", name, negZero)
				}
				// The transposed-B layout takes the packing path.
				kn.runOver(par, nb, m, n, k, a, rowMajor(m, k), transposeBatch(b, nb, k, n), colMajor(k, n), got)
				clear(want)
				kn.run(par, nb, m, n, k, a, rowMajor(m, k), transposeBatch(b, nb, k, n), colMajor(k, n), want)
				for i := range want {
					if bits(got[i]) != bits(want[i]) {
						t.Fatalf("%s, B transposed: element %d differs", name, i)
					}
				}
			}
		}
	}
}
