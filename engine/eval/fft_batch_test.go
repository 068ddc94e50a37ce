package eval

import (
	"math"
	"math/rand"
	"testing"

	"gonum.org/v1/gonum/dsp/fourier"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
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

// The evaluator's transforms (rows straight from the operand to the
// result, strided columns four at a time) are gonum's line by line, bit
// for bit, with rows and columns holding NaN and ±Inf among finite ones
// (those batches redone by gonum): fft and ifft over the last axis, fft2.
func TestFFTEvalMatchesGonumLines(t *testing.T) {
	rng := rand.New(rand.NewSource(10))
	const r, c = 12, 64
	x := tensor.New(dtype.C64, []int64{r, c})
	xs := x.C64()
	for i := range xs {
		xs[i] = complex(float32(rng.NormFloat64()), float32(rng.NormFloat64()))
	}
	xs[1*c+5] = complex(float32(math.NaN()), 1)
	xs[6*c+0] = complex(float32(math.Inf(1)), 0)
	xs[9*c+63] = complex(2, float32(math.Copysign(math.NaN(), -1)))
	plan := fourier.NewCmplxFFT(c)
	colPlan := fourier.NewCmplxFFT(r)
	ref := func(kind string) []complex64 {
		buf := make([]complex128, r*c)
		for i, v := range xs {
			buf[i] = complex128(v)
		}
		for i := 0; i < r; i++ {
			if kind == "fft2" {
				break
			}
			line := buf[i*c : (i+1)*c]
			if kind == "ifft" {
				plan.Sequence(line, line)
				for j := range line {
					line[j] = fftScale(line[j], 1/float64(c))
				}
			} else {
				plan.Coefficients(line, line)
			}
		}
		if kind == "fft2" {
			col := make([]complex128, r)
			for j := 0; j < c; j++ {
				for i := range col {
					col[i] = buf[i*c+j]
				}
				colPlan.Coefficients(col, col)
				for i := range col {
					buf[i*c+j] = col[i]
				}
			}
			for i := 0; i < r; i++ {
				plan.Coefficients(buf[i*c:(i+1)*c], buf[i*c:(i+1)*c])
			}
		}
		out := make([]complex64, len(buf))
		for i, v := range buf {
			out[i] = complex64(v)
		}
		return out
	}
	for _, kind := range []string{"fft", "ifft", "fft2"} {
		typ, lens := "FFT", "{64}"
		switch kind {
		case "ifft":
			typ = "IFFT"
		case "fft2":
			lens = "{12,64}"
		}
		src := "HloModule m\nENTRY e {\n  x = c64[12,64] parameter(0)\n  ROOT f = c64[12,64] fft(x), fft_type=" + typ + ", fft_length=" + lens + "\n}\n"
		m, err := hlo.ParseText([]byte(src), "fft.hlo")
		if err != nil {
			t.Fatal(err)
		}
		got, err := Evaluate(m, []Value{ArrayValue(x)}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := ref(kind)
		for i, g := range got.T.C64() {
			w := want[i]
			if math.Float32bits(real(g)) != math.Float32bits(real(w)) || math.Float32bits(imag(g)) != math.Float32bits(imag(w)) {
				t.Fatalf("%s: value %d = %v, gonum %v", kind, i, g, w)
			}
		}
	}
}
