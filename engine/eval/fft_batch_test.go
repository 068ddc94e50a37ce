package eval

import (
	"math"
	"math/rand"
	"testing"

	"gonum.org/v1/gonum/dsp/fourier"
)

// The batched FFTPACK passes give gonum's FFTPACK results bit for bit, lane
// by lane, forward and backward, on every power-of-two length to 8192 (the
// factorizations 2·4^k and 4^k) and on values spanning many magnitudes; a
// batch holding a non-finite value reports it (its lines are redone by
// gonum); lengths with other factors have no batched plan.
func TestFFTBatchMatchesGonum(t *testing.T) {
	if !fftBatchAvailable() {
		t.Skip("batched FFT passes not built or no AVX2")
	}
	rng := rand.New(rand.NewSource(9))
	for n := 2; n <= 8192; n *= 2 {
		b := newFFTBatchPlan(n)
		if b == nil {
			t.Fatalf("n=%d: no batched plan", n)
		}
		plan := fourier.NewCmplxFFT(n)
		for _, inverse := range []bool{false, true} {
			lines := make([]complex128, fftBatchWidth*n)
			for i := range lines {
				s := math.Ldexp(1, rng.Intn(40)-20)
				lines[i] = complex(rng.NormFloat64()*s, rng.NormFloat64()*s)
			}
			if n >= 16 {
				lines[3] = complex(0, math.Copysign(0, -1))
			}
			want := make([]complex128, len(lines))
			for l := 0; l < fftBatchWidth; l++ {
				if inverse {
					plan.Sequence(want[l*n:(l+1)*n], lines[l*n:(l+1)*n])
				} else {
					plan.Coefficients(want[l*n:(l+1)*n], lines[l*n:(l+1)*n])
				}
			}
			if !b.transform(lines, inverse) {
				t.Fatalf("n=%d: finite batch reported non-finite", n)
			}
			for i := range want {
				g, w := lines[i], want[i]
				if math.Float64bits(real(g)) != math.Float64bits(real(w)) || math.Float64bits(imag(g)) != math.Float64bits(imag(w)) {
					t.Fatalf("n=%d inverse=%v: value %d = %v, gonum %v", n, inverse, i, g, w)
				}
			}
		}
		lines := make([]complex128, fftBatchWidth*n)
		lines[n+1] = complex(math.Inf(1), 0)
		if b.transform(lines, false) {
			t.Fatalf("n=%d: a batch with +Inf was transformed", n)
		}
	}
	for _, n := range []int{3, 6, 12, 20, 48, 1000, 1536} {
		if newFFTBatchPlan(n) != nil {
			t.Errorf("n=%d has a batched plan", n)
		}
	}
}

// fftpackFactors follows FFTPACK's trial order (4 before 2, a 2 first).
func TestFFTPackFactors(t *testing.T) {
	cases := map[int][]int{2: {2}, 4: {4}, 8: {2, 4}, 32: {2, 4, 4}, 64: {4, 4, 4}, 12: {3, 4}, 24: {2, 3, 4}, 1000: {2, 4, 5, 5, 5}, 7 * 11: {7, 11}}
	for n, want := range cases {
		got := fftpackFactors(n)
		if len(got) != len(want) {
			t.Fatalf("factors(%d) = %v, want %v", n, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("factors(%d) = %v, want %v", n, got, want)
			}
		}
	}
}

// Inverse transforms scale by 1/n keeping the NaN of each part when that
// part is one (the real part's from the real part, the imaginary part's
// from the imaginary part), and the other part's NaN otherwise.
func TestFFTScaleNaNs(t *testing.T) {
	pos, neg := math.NaN(), math.Copysign(math.NaN(), -1)
	sign := func(x float64) bool { return math.Signbit(x) }
	for _, c := range []struct {
		v            complex128
		reNeg, imNeg bool
		reNaN, imNaN bool
	}{
		{complex(pos, neg), false, true, true, true},
		{complex(neg, pos), true, false, true, true},
		{complex(neg, 2), true, true, true, true},
		{complex(3, neg), true, true, true, true},
		{complex(1.5, -2), false, true, false, false},
	} {
		got := fftScale(c.v, 0.25)
		re, im := real(got), imag(got)
		if (re != re) != c.reNaN || (im != im) != c.imNaN || sign(re) != c.reNeg || sign(im) != c.imNeg {
			t.Errorf("fftScale(%v) = %v (sign bits %v %v)", c.v, got, sign(re), sign(im))
		}
	}
	if got := fftScale(complex(1.5, -2), 0.25); got != complex(0.375, -0.5) {
		t.Errorf("fftScale(1.5-2i, 0.25) = %v", got)
	}
}
