package eval

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// c64EigenNaive is the order of dot_c64_eigen.go written out element by
// element: for each K block, the four real sums of C[i,j] in the column's
// accumulator arrangement, combined and added to C[i,j].
func c64EigenNaive(m, n, k int, a, b []complex64, kc int, kinds []int) []complex64 {
	c := make([]complex64, m*n)
	mul := func(x, y float32) float32 { return float32(x * y) }
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var cr, ci float32
			for k0 := 0; k0 < k; k0 += kc {
				kl := min(kc, k-k0)
				kind := kinds[j]
				if i >= m-m%4 { // Eigen's trailing single columns
					kind = map[int]int{c64KindSeq: c64KindSeq, c64KindPairs: c64KindSeq, c64KindQuad: c64KindCplx}[kind]
				}
				if kind == c64KindCplx {
					var xr, xi float32
					for q := 0; q < kl; q++ {
						x, y := a[i*k+k0+q], b[(k0+q)*n+j]
						xr = xr + (mul(real(x), real(y)) - mul(imag(x), imag(y)))
						xi = xi + (mul(real(x), imag(y)) + mul(imag(x), real(y)))
					}
					re := xr - mul(xi, 0)
					im := mul(xr, 0) + xi
					cr, ci = re+cr, im+ci
					continue
				}
				lanes := 1
				peeled := 0
				switch kind {
				case c64KindPairs:
					lanes, peeled = 2, kl/8*8
				case c64KindQuad:
					lanes, peeled = 4, kl/4*4
				}
				var fr, fi, sr, si [4]float32
				var tr, ti, ur, ui float32 // the sum after the lanes
				for q := 0; q < kl; q++ {
					x, y := a[i*k+k0+q], b[(k0+q)*n+j]
					ar, ai, br, bi := real(x), imag(x), real(y), imag(y)
					if q < peeled {
						l := q % lanes
						fr[l] = mul(ar, br) + fr[l]
						fi[l] = mul(ai, br) + fi[l]
						sr[l] = mul(ar, bi) + sr[l]
						si[l] = mul(ai, bi) + si[l]
						if q == peeled-1 {
							if lanes == 2 {
								tr, ti, ur, ui = fr[0]+fr[1], fi[0]+fi[1], sr[0]+sr[1], si[0]+si[1]
							} else {
								tr = (fr[0] + fr[1]) + (fr[2] + fr[3])
								ti = (fi[0] + fi[1]) + (fi[2] + fi[3])
								ur = (sr[0] + sr[1]) + (sr[2] + sr[3])
								ui = (si[0] + si[1]) + (si[2] + si[3])
							}
						}
						continue
					}
					tr = mul(ar, br) + tr
					ti = mul(ai, br) + ti
					ur = mul(ar, bi) + ur
					ui = mul(ai, bi) + ui
				}
				tre, tim := tr+(-ui), ti+ur
				re := tre - mul(tim, 0)
				im := mul(tre, 0) + tim
				cr, ci = re+cr, im+ci
			}
			c[i*n+j] = complex(cr, ci)
		}
	}
	return c
}

// c64EigenNaivePlan is c64EigenNaive over the plan's K slices, their
// products added in order (plans here have at most three slices).
func c64EigenNaivePlan(m, n, k int, a, b []complex64, p c64EigenPlan) []complex64 {
	var c []complex64
	for _, s := range p.segs {
		kl := s.k1 - s.k0
		as := make([]complex64, m*kl)
		for i := 0; i < m; i++ {
			copy(as[i*kl:(i+1)*kl], a[i*k+s.k0:i*k+s.k1])
		}
		part := c64EigenNaive(m, n, kl, as, b[s.k0*n:s.k1*n], s.kc, c64Kinds(s, n))
		if c == nil {
			c = part
			continue
		}
		for i := range c {
			c[i] = complex(real(c[i])+real(part[i]), imag(c[i])+imag(part[i]))
		}
	}
	return c
}

func c64Random(r *rand.Rand, n int) []complex64 {
	v := make([]complex64, n)
	for i := range v {
		v[i] = complex(float32(r.NormFloat64()), float32(r.NormFloat64()))
	}
	return v
}

func c64Kinds(p c64Seg, n int) []int {
	kinds := make([]int, n)
	for _, g := range p.groups(n) {
		for j := g.j; j < g.j+g.w; j++ {
			kinds[j] = g.kind
		}
	}
	return kinds
}

// TestComplexDotEigenMatchesNaive compares dotC64Eigen (vector path when
// the CPU has one, and the scalar path) with the element-by-element order.
func TestComplexDotEigenMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	shapes := [][3]int{
		{2, 2, 2}, {5, 3, 7}, {64, 9, 40}, {64, 15, 37}, {33, 16, 40}, {65, 20, 8},
		{12, 12, 500}, {64, 64, 400}, {70, 300, 700}, {61, 2052, 100}, {130, 67, 1000},
		{4, 64, 9}, {256, 256, 641},
		{64, 4, 1000}, {39, 29, 918}, {6, 305, 1452}, // sharded over K
		{7, 1, 37}, {1000, 1, 300}, // one column
	}
	for _, s := range shapes {
		m, n, k := s[0], s[1], s[2]
		a, b := c64Random(r, m*k), c64Random(r, k*n)
		p := planC64Eigen(m, n, k, 2)
		want := c64EigenNaivePlan(m, n, k, a, b, p)
		for _, vec := range append(c64VectorWidths(), 0) {
			old := c64VectorTestSet(vec)
			got := make([]complex64, m*n)
			for i := range got { // the dot overwrites whatever its storage holds
				got[i] = complex(float32(math.NaN()), 7)
			}
			oldT := xlaCPUThreads
			xlaCPUThreads = 2
			dotC64Eigen(2, 1, m, n, k, a, rowMajor(m, k), b, rowMajor(k, n), got)
			xlaCPUThreads = oldT
			c64VectorTestSet(old)
			if i := c64FirstDiff(got, want); i >= 0 {
				t.Errorf("%dx%dx%d vector width %d: element %d = %v, want %v", m, n, k, vec, i, got[i], want[i])
			}
		}
	}
}

// TestComplexDotEigenBatchLayouts runs batched and transposed operands
// against the same order on copies in row-major order.
func TestComplexDotEigenBatchLayouts(t *testing.T) {
	r := rand.New(rand.NewSource(6))
	nb, m, n, k := 3, 37, 45, 333
	a, b := c64Random(r, nb*m*k), c64Random(r, nb*k*n)
	// a stored transposed (each batch element k×m), b row-major.
	at := make([]complex64, len(a))
	for e := 0; e < nb; e++ {
		for i := 0; i < m; i++ {
			for q := 0; q < k; q++ {
				at[e*m*k+q*m+i] = a[e*m*k+i*k+q]
			}
		}
	}
	got := make([]complex64, nb*m*n)
	dotC64Eigen(2, nb, m, n, k, at, colMajor(m, k), b, rowMajor(k, n), got)
	p := planC64Eigen(m, n, k, xlaCPUThreads)
	for e := 0; e < nb; e++ {
		want := c64EigenNaivePlan(m, n, k, a[e*m*k:(e+1)*m*k], b[e*k*n:(e+1)*k*n], p)
		if i := c64FirstDiff(got[e*m*n:(e+1)*m*n], want); i >= 0 {
			t.Fatalf("batch %d element %d = %v, want %v", e, i, got[e*m*n+i], want[i])
		}
	}
}

// TestComplexDotEigenNonFinite checks infinities and NaNs go through the
// same steps (the alpha step turns an infinite part's partner into NaN).
func TestComplexDotEigenNonFinite(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	m, n, k := 20, 24, 50
	a, b := c64Random(r, m*k), c64Random(r, k*n)
	inf := float32(math.Inf(1))
	a[3] = complex(inf, 0)
	a[5*k+7] = complex(0, -inf)
	b[2*n+9] = complex(float32(math.NaN()), 1)
	p := planC64Eigen(m, n, k, 2)
	want := c64EigenNaivePlan(m, n, k, a, b, p)
	for _, vec := range append(c64VectorWidths(), 0) {
		old := c64VectorTestSet(vec)
		got := make([]complex64, m*n)
		oldT := xlaCPUThreads
		xlaCPUThreads = 2
		dotC64Eigen(1, 1, m, n, k, a, rowMajor(m, k), b, rowMajor(k, n), got)
		xlaCPUThreads = oldT
		c64VectorTestSet(old)
		if i := c64FirstDiff(got, want); i >= 0 {
			t.Errorf("vector width %d: element %d = %v, want %v", vec, i, got[i], want[i])
		}
	}
}

// c64FirstDiff is the first index whose bits differ (NaNs compare by
// being NaN), or -1.
func c64FirstDiff(got, want []complex64) int {
	same := func(x, y float32) bool {
		if x != x || y != y {
			return x != x && y != y
		}
		return math.Float32bits(x) == math.Float32bits(y)
	}
	for i := range got {
		if !same(real(got[i]), real(want[i])) || !same(imag(got[i]), imag(want[i])) {
			return i
		}
	}
	return -1
}

// TestComplexDotEigenPlan pins the blocking measured against jax 0.10.2
// (XLA:CPU, 2 threads): K slices, K block, column block and threads.
func TestComplexDotEigenPlan(t *testing.T) {
	for _, c := range []struct {
		m, n, k int
		want    string
	}{
		{1024, 1024, 1024, "threads=2 [0,1024):320/512"},
		{64, 2052, 100, "threads=2 [0,100):100/316"},
		{12, 12, 500, "threads=1 [0,500):256/12"},
		{16, 16, 1000, "threads=1 [0,1000):336/16"},
		{64, 64, 400, "threads=2 [0,400):320/32"},
		{512, 300, 700, "threads=2 [0,700):320/152"},
		{300, 1028, 700, "threads=2 [0,700):320/520"},
		{64, 4, 1000, "threads=2 [0,504):320/4 [504,1000):320/4"},
		{6, 235, 1403, "threads=2 [0,704):320/120 [704,1403):320/120"},
		{25, 15, 1098, "threads=1 [0,1098):280/15"},
		{327, 4, 82, "threads=1 [0,82):82/4"},
		{2, 276, 550, "threads=2 [0,550):320/96"},
		{7, 5, 7450, "threads=2 [0,3728):320/5 [3728,7450):320/5"},
	} {
		p := planC64Eigen(c.m, c.n, c.k, 2)
		got := fmt.Sprintf("threads=%d", p.threads)
		for _, s := range p.segs {
			got += fmt.Sprintf(" [%d,%d):%d/%d", s.k0, s.k1, s.kc, s.cb)
		}
		if got != c.want {
			t.Errorf("%dx%dx%d: %s, want %s", c.m, c.n, c.k, got, c.want)
		}
	}
}

// TestComplexDotGemvMatchesNaive checks single-row products against whole
// complex products summed in order in K blocks of 16 (4 for wide B rows,
// all of K below 128).
func TestComplexDotGemvMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	mul := func(x, y float32) float32 { return float32(x * y) }
	for _, s := range [][2]int{{7, 33}, {300, 1000}, {4001, 300}, {13, 129}} {
		n, k := s[0], s[1]
		kb := 16
		if k < 128 {
			kb = k
		} else if n*8 >= 32000 {
			kb = 4
		}
		a, b := c64Random(r, k), c64Random(r, k*n)
		want := make([]complex64, n)
		for j := range want {
			var cr, ci float32
			for k0 := 0; k0 < k; k0 += kb {
				var xr, xi float32
				for p := k0; p < min(k, k0+kb); p++ {
					x, y := a[p], b[p*n+j]
					xr = xr + (mul(real(x), real(y)) - mul(imag(x), imag(y)))
					xi = xi + (mul(real(x), imag(y)) + mul(imag(x), real(y)))
				}
				cr, ci = (xr-mul(xi, 0))+cr, (mul(xr, 0)+xi)+ci
			}
			want[j] = complex(cr, ci)
		}
		got := make([]complex64, n)
		for i := range got {
			got[i] = 3
		}
		dotC64Gemv(1, n, k, a, rowMajor(1, k), b, rowMajor(k, n), got)
		if i := c64FirstDiff(got, want); i >= 0 {
			t.Errorf("1x%dx%d: element %d = %v, want %v", n, k, i, got[i], want[i])
		}
	}
}
