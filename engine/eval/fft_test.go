package eval

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// fftExactDFT is the DFT of x along one axis (dims, ax) by its definition,
// in float64, each twiddle from its own angle: an independent reference.
func fftExactDFT(x []complex128, dims []int, ax int, inverse bool) []complex128 {
	n := dims[ax]
	stride := 1
	for d := ax + 1; d < len(dims); d++ {
		stride *= dims[d]
	}
	out := make([]complex128, len(x))
	sg := -1.0
	if inverse {
		sg = 1
	}
	tw := make([]complex128, n)
	for j := range tw {
		s, c := math.Sincos(2 * math.Pi * float64(j) / float64(n))
		tw[j] = complex(c, sg*s)
	}
	for base := 0; base < len(x); base += n * stride {
		for i := 0; i < stride; i++ {
			for k := 0; k < n; k++ {
				var acc complex128
				for t := 0; t < n; t++ {
					acc += x[base+t*stride+i] * tw[k*t%n]
				}
				if inverse {
					acc /= complex(float64(n), 0)
				}
				out[base+k*stride+i] = acc
			}
		}
	}
	return out
}

// fftCase builds the module and its exact result: typ on an operand of
// batch rows and transformed dims lens, in the given precision.
type fftCase struct {
	typ  string
	lens []int
	rows int
	f64  bool
}

func (c fftCase) run(t *testing.T, rng *rand.Rand) (got, want []float64, bound func(i int) float64) {
	t.Helper()
	k := len(c.lens)
	n := c.lens[k-1]
	inLast, outLast := n, n
	switch c.typ {
	case "RFFT":
		outLast = n/2 + 1
	case "IRFFT":
		inLast = n/2 + 1
	}
	inDims := append([]int{c.rows}, c.lens...)
	inDims[k] = inLast
	outDims := append([]int{c.rows}, c.lens...)
	outDims[k] = outLast
	ct, rt := "c64", "f32"
	if c.f64 {
		ct, rt = "c128", "f64"
	}
	inT, outT := ct, ct
	switch c.typ {
	case "RFFT":
		inT = rt
	case "IRFFT":
		outT = rt
	}
	shape := func(ty string, d []int) string {
		s := make([]string, len(d))
		for i, v := range d {
			s[i] = fmt.Sprint(v)
		}
		return ty + "[" + strings.Join(s, ",") + "]"
	}
	ls := make([]string, k)
	for i, v := range c.lens {
		ls[i] = fmt.Sprint(v)
	}
	src := "HloModule m\nENTRY e {\n  x = " + shape(inT, inDims) + " parameter(0)\n  ROOT f = " + shape(outT, outDims) +
		" fft(x), fft_type=" + c.typ + ", fft_length={" + strings.Join(ls, ",") + "}\n}\n"
	m, err := hlo.ParseText([]byte(src), "fft.hlo")
	if err != nil {
		t.Fatal(err)
	}
	in64 := make([]int64, len(inDims))
	for i, v := range inDims {
		in64[i] = int64(v)
	}
	elemOf := map[string]dtype.Type{"c64": dtype.C64, "c128": dtype.C128, "f32": dtype.F32, "f64": dtype.F64}
	x := tensor.New(elemOf[inT], in64)
	vals := make([]complex128, tensor.NumElements(in64))
	for i := range vals {
		re, im := rng.NormFloat64(), rng.NormFloat64()
		switch inT {
		case "c64":
			v := complex(float32(re), float32(im))
			x.C64()[i], vals[i] = v, complex128(v)
		case "c128":
			x.C128()[i], vals[i] = complex(re, im), complex(re, im)
		case "f32":
			x.F32()[i], vals[i] = float32(re), complex(float64(float32(re)), 0)
		case "f64":
			x.F64()[i], vals[i] = re, complex(re, 0)
		}
	}
	res, err := Evaluate(m, []Value{ArrayValue(x)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The exact result.
	full := append([]int{c.rows}, c.lens...)
	var ref []complex128
	switch c.typ {
	case "FFT", "IFFT", "RFFT":
		ref = vals
		for ax := 1; ax <= k; ax++ {
			ref = fftExactDFT(ref, full, ax, c.typ == "IFFT")
		}
		if c.typ == "RFFT" {
			cut := make([]complex128, 0, len(ref)/n*outLast)
			for i := 0; i < len(ref); i += n {
				cut = append(cut, ref[i:i+outLast]...)
			}
			ref = cut
		}
	case "IRFFT":
		ref = vals
		for ax := 1; ax < k; ax++ {
			ref = fftExactDFT(ref, inDims, ax, true)
		}
		// The Hermitian line of each half spectrum, inverse, real part.
		ext := make([]complex128, 0, len(ref)/inLast*n)
		for i := 0; i < len(ref); i += inLast {
			h := ref[i : i+inLast]
			for j := 0; j < n; j++ {
				if j < inLast {
					ext = append(ext, h[j])
				} else {
					ext = append(ext, complex(real(h[n-j]), -imag(h[n-j])))
				}
			}
		}
		ref = fftExactDFT(ext, full, k, true)
		for i := range ref {
			ref[i] = complex(real(ref[i]), 0)
		}
	}
	isReal := outT == "f32" || outT == "f64"
	for _, v := range ref {
		want = append(want, real(v))
		if !isReal {
			want = append(want, imag(v))
		}
	}
	o := res.T
	switch outT {
	case "c64":
		for _, v := range o.C64() {
			got = append(got, float64(real(v)), float64(imag(v)))
		}
	case "c128":
		for _, v := range o.C128() {
			got = append(got, real(v), imag(v))
		}
	case "f32":
		for _, v := range o.F32() {
			got = append(got, float64(v))
		}
	case "f64":
		got = append(got, o.F64()...)
	}
	norm := 0.0
	for _, v := range want {
		norm = max(norm, math.Abs(v))
	}
	// 32-bit results: the exact value rounded once (half an ulp, 2^-24
	// relative) plus float64 noise far below it; 64-bit: float64 noise.
	rel, abs := math.Ldexp(1, -24), math.Ldexp(norm, -36)
	if c.f64 {
		rel, abs = 0, math.Ldexp(norm, -40)
	}
	return got, want, func(i int) float64 { return rel*math.Abs(want[i]) + abs }
}

func fftCheck(got, want []float64, bound func(int) float64) (int, bool) {
	if len(got) != len(want) {
		return -1, false
	}
	for i := range got {
		if !(math.Abs(got[i]-want[i]) <= bound(i)) {
			return i, false
		}
	}
	return 0, true
}

// Every fft type, 1-D to 3-D, on lengths that are powers of two, odd,
// prime and composite (1 and 2 too), in both precisions, with the vector
// passes, with the plain Go ones, and with long lines as matrices: each
// value is the exact DFT rounded once to the result type (within float64
// noise).
func TestFFTMatchesExactDFT(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	lens := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 16, 17, 25, 27, 30, 31, 32, 48, 49, 60, 64, 97, 100,
		121, 125, 127, 128, 210, 256, 262, 343, 360, 512, 1000, 1024, 2048, 2053, 4096}
	var cases []fftCase
	for _, n := range lens {
		rows := 11
		if n >= 1000 {
			rows = 5
		}
		for _, typ := range []string{"FFT", "IFFT", "RFFT", "IRFFT"} {
			for _, f64 := range []bool{false, true} {
				cases = append(cases, fftCase{typ, []int{n}, rows, f64})
			}
		}
	}
	for _, ls := range [][]int{{4, 8}, {6, 5}, {3, 16}, {16, 12}, {2, 4, 6}, {5, 3, 8}, {8, 1, 9}, {1, 1}} {
		for _, typ := range []string{"FFT", "IFFT", "RFFT", "IRFFT"} {
			for _, f64 := range []bool{false, true} {
				cases = append(cases, fftCase{typ, ls, 3, f64})
			}
		}
	}
	defer func(m int) { fftForceGo, fftFourStepMin = false, m }(fftFourStepMin)
	for _, mode := range []string{"vector", "go", "four-step"} {
		fftForceGo = mode == "go"
		if mode == "four-step" {
			fftFourStepMin = 256 // lines from 256 on as matrices
		}
		for _, c := range cases {
			if mode == "four-step" && c.lens[len(c.lens)-1] < 256 {
				continue
			}
			got, want, bound := c.run(t, rng)
			if i, ok := fftCheck(got, want, bound); !ok {
				if i < 0 {
					t.Fatalf("%+v %s: %d values, want %d", c, mode, len(got), len(want))
				}
				t.Fatalf("%+v %s: value %d = %v, exact %v (bound %g)", c, mode, i, got[i], want[i], bound(i))
			}
		}
	}
}

// The check above fails on a transform with one twiddle off by 1e-7
// relative, or a wrong packing twiddle, vector passes or Go.
func TestFFTCheckCatchesPlantedTwiddle(t *testing.T) {
	defer func() { fftForceGo = false }()
	for _, goPasses := range []bool{false, true} {
		fftForceGo = goPasses
		for _, c := range []fftCase{{"FFT", []int{64}, 8, false}, {"RFFT", []int{96}, 8, false}, {"FFT", []int{60}, 8, true}} {
			rng := rand.New(rand.NewSource(3))
			lc := c.lens[0]
			if c.typ == "RFFT" {
				lc /= 2
			}
			pl := fftCPlanFor(lc, fftLanes())
			st := &pl.stages[len(pl.stages)-2]
			i := 3 * (st.p - 1) * (st.m - 1) // a twiddle of the last pp
			old := st.tw[i]
			st.tw[i] *= 1 + 1e-7
			got, want, bound := c.run(t, rng)
			st.tw[i] = old
			if _, ok := fftCheck(got, want, bound); ok {
				t.Errorf("%+v go=%v: planted twiddle error not caught", c, goPasses)
			}
			rng = rand.New(rand.NewSource(3))
			got, want, bound = c.run(t, rng)
			if i, ok := fftCheck(got, want, bound); !ok {
				t.Fatalf("%+v go=%v: restored plan fails at %d", c, goPasses, i)
			}
		}
	}
}
