package eval

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// TestGemmBF16PairsMatchesF32Chains holds the AVX512-BF16 kernel to the
// f32 kernels' sums (FMA chains over kc blocks of K) bit for bit: bf16 and
// f32 (bf16-valued) operands, row-major and transposed, ragged rows,
// columns and odd depths, several blocks, batches, values from 2^-40 to
// 2^40 of both signs whose sums cancel; and holds it to refusing what it
// cannot do exactly: NaNs, infinities, subnormals, magnitudes small enough
// for a partial sum to be denormal, f32 values that are not bf16, results
// that overflow.
func TestGemmBF16PairsMatchesF32Chains(t *testing.T) {
	r := rand.New(rand.NewSource(21))
	randBF16 := func(n, span int) []uint16 {
		s := make([]uint16, n)
		for i := range s {
			if r.Intn(20) == 0 {
				continue // zeros, +0 and -0
			}
			e := 127 + r.Intn(2*span+1) - span
			s[i] = uint16(r.Intn(2))<<15 | uint16(e)<<7 | uint16(r.Intn(128))
			if r.Intn(50) == 0 {
				s[i] = 0x8000
			}
		}
		return s
	}
	widen := func(s []uint16) []float32 {
		out := make([]float32, len(s))
		for i, v := range s {
			out[i] = math.Float32frombits(uint32(v) << 16)
		}
		return out
	}
	shapes := [][4]int{ // nb, m, n, k
		{1, 12, 32, 2}, {1, 13, 33, 3}, {1, 37, 70, 301}, {2, 25, 65, 600}, {1, 2, 2, 1},
		{1, 100, 40, 1025}, {3, 12, 96, 512},
		// Four or more batch elements on two workers take whole elements each.
		{5, 25, 65, 600}, {6, 12, 96, 64}, {4, 1, 33, 3},
	}
	for _, s := range shapes {
		nb, m, n, k := s[0], s[1], s[2], s[3]
		for _, kc := range []int{256, 512, 64} {
			for _, span := range []int{5, 40} {
				au, bu := randBF16(nb*m*k, span), randBF16(nb*k*n, span)
				af, bf := widen(au), widen(bu)
				want := make([]float32, nb*m*n)
				kernelFor[float32]().withKC(kc).runOver(2, nb, m, n, k, af, rowMajor(m, k), bf, rowMajor(k, n), want)
				cases := []struct {
					name string
					a, b bf16Src
				}{
					{"bf16", bf16Src{u16: au, l: rowMajor(m, k)}, bf16Src{u16: bu, l: rowMajor(k, n)}},
					{"f32", bf16Src{f32: af, l: rowMajor(m, k)}, bf16Src{f32: bf, l: rowMajor(k, n)}},
					{"transposed", bf16Src{u16: transposeBatch(au, nb, m, k), l: colMajor(m, k)},
						bf16Src{f32: transposeBatch(bf, nb, k, n), l: colMajor(k, n)}},
					{"transposed bf16", bf16Src{f32: transposeBatch(af, nb, m, k), l: colMajor(m, k)},
						bf16Src{u16: transposeBatch(bu, nb, k, n), l: colMajor(k, n)}},
				}
				for _, c := range cases {
					got := make([]float32, nb*m*n)
					for i := range got {
						got[i] = math.Float32frombits(r.Uint32())
					}
					name := fmt.Sprintf("%v kc %d span %d %s", s, kc, span, c.name)
					if !gemmBF16Pairs(2, nb, m, n, k, kc, c.a, c.b, got) {
						if !bf16PairsAvailable() {
							t.Skip("no AVX512-BF16 kernel here")
						}
						t.Fatalf("%s: refused", name)
					}
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s: element %d = %v (%#08x), the f32 chains give %v (%#08x)", name, i,
								got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
						}
					}
				}
			}
		}
	}
	if !bf16PairsAvailable() {
		return
	}
	// What it must refuse.
	m, n, k := 20, 40, 50
	base := func() ([]uint16, []uint16) { return randBF16(m*k, 5), randBF16(k*n, 5) }
	refuse := map[string]func(a, b []uint16) (bf16Src, bf16Src){
		"NaN":       func(a, b []uint16) (bf16Src, bf16Src) { a[7] = 0x7fc0; return src16(a, m, k), src16(b, k, n) },
		"infinity":  func(a, b []uint16) (bf16Src, bf16Src) { b[9] = 0xff80; return src16(a, m, k), src16(b, k, n) },
		"subnormal": func(a, b []uint16) (bf16Src, bf16Src) { a[3] = 0x0005; return src16(a, m, k), src16(b, k, n) },
		// 2^-60 · 2^-60: a product, and so maybe a partial sum, near 2^-120.
		"tiny": func(a, b []uint16) (bf16Src, bf16Src) {
			a[0], b[0] = (127-60)<<7, (127-60)<<7
			return src16(a, m, k), src16(b, k, n)
		},
		"not bf16": func(a, b []uint16) (bf16Src, bf16Src) {
			f := widen(b)
			f[11] = math.Nextafter32(f[11], 10)
			return src16(a, m, k), bf16Src{f32: f, l: rowMajor(k, n)}
		},
		"overflow": func(a, b []uint16) (bf16Src, bf16Src) {
			for i := range a {
				a[i] = (127 + 100) << 7
			}
			for i := range b {
				b[i] = (127 + 100) << 7
			}
			return src16(a, m, k), src16(b, k, n)
		},
	}
	for name, mk := range refuse {
		a, b := base()
		sa, sb := mk(a, b)
		if gemmBF16Pairs(2, 1, m, n, k, 256, sa, sb, make([]float32, m*n)) {
			t.Errorf("%s: not refused", name)
		}
	}
	// An overflow in one batch element of many (each worker takes whole
	// elements) is refused as well.
	const nb = 5
	ab, bb := randBF16(nb*m*k, 5), randBF16(nb*k*n, 5)
	for i := 3 * m * k; i < 4*m*k; i++ {
		ab[i] = (127 + 100) << 7
	}
	for i := 3 * k * n; i < 4*k*n; i++ {
		bb[i] = (127 + 100) << 7
	}
	if gemmBF16Pairs(2, nb, m, n, k, 256, src16(ab, m, k), src16(bb, k, n), make([]float32, nb*m*n)) {
		t.Errorf("overflow in batch element 3 of %d: not refused", nb)
	}
	// 2^-50 · 2^-60 is still fine: partial sums stay multiples of 2^-124.
	a, b := base()
	a[0], b[0] = (127-50)<<7, (127-60)<<7
	if !gemmBF16Pairs(2, 1, m, n, k, 256, src16(a, m, k), src16(b, k, n), make([]float32, m*n)) {
		t.Errorf("2^-50 and 2^-60 refused")
	}
}

func src16(s []uint16, rows, cols int) bf16Src { return bf16Src{u16: s, l: rowMajor(rows, cols)} }

// TestGemmBF16PairsOddFirstMatchesSwappedChains: with YNNPACK's pair order
// (k+1 first), the kernel gives the f32 chains over operands whose adjacent
// K indices are swapped (dot_bf16_ynn.go's emulation), odd depths included.
func TestGemmBF16PairsOddFirstMatchesSwappedChains(t *testing.T) {
	if !bf16PairsAvailable() {
		t.Skip("no AVX512-BF16 kernel here")
	}
	r := rand.New(rand.NewSource(23))
	for _, s := range [][4]int{{1, 13, 33, 7}, {2, 40, 70, 300}, {1, 12, 32, 1024}, {5, 13, 33, 301}} {
		nb, m, n, k := s[0], s[1], s[2], s[3]
		au, bu := make([]uint16, nb*m*k), make([]uint16, nb*k*n)
		for _, x := range [][]uint16{au, bu} {
			for i := range x {
				x[i] = uint16(r.Intn(2))<<15 | uint16(127+r.Intn(21)-10)<<7 | uint16(r.Intn(128))
			}
		}
		af, bf := make([]float32, len(au)), make([]float32, len(bu))
		for i, v := range au {
			af[i] = math.Float32frombits(uint32(v) << 16)
		}
		for i, v := range bu {
			bf[i] = math.Float32frombits(uint32(v) << 16)
		}
		sa, sb := append([]float32(nil), af...), append([]float32(nil), bf...)
		swapAdjacentK(sa, nb*m, k, 1, k)
		swapAdjacentK(sb, nb, k, n, k*n)
		for _, kc := range []int{64, 256} {
			want := make([]float32, nb*m*n)
			kernelFor[float32]().withKC(kc).runOver(2, nb, m, n, k, sa, rowMajor(m, k), sb, rowMajor(k, n), want)
			got := make([]float32, nb*m*n)
			if !gemmBF16PairsOddFirst(2, nb, m, n, k, kc, src16(au, m, k), bf16Src{f32: bf, l: rowMajor(k, n)}, got) {
				t.Fatalf("%v: refused", s)
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%v kc %d: element %d = %v, the swapped chains give %v", s, kc, i, got[i], want[i])
				}
			}
		}
	}
}
