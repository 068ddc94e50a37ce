package eval

import (
	"math"
	"math/rand"
	"reflect"
	"testing"
)

// The blockings measured against jax on the 2-core host (rows, cols, k).
func TestPlanF32EigenMeasured(t *testing.T) {
	for _, tc := range []struct {
		rows, cols, k int
		want          []f32EigenSeg
	}{
		{200, 100, 300, []f32EigenSeg{{0, 300, 300, 96, 120}}},
		{64, 64, 1000, []f32EigenSeg{{0, 504, 256, 48, 48}, {504, 1000, 248, 48, 48}}},
		{40, 30, 800, []f32EigenSeg{{0, 800, 400, 30, 40}}},
		{17, 33, 5000, []f32EigenSeg{{0, 2504, 320, 33, 17}, {2504, 5000, 312, 33, 17}}},
		{300, 200, 2000, []f32EigenSeg{{0, 2000, 288, 192, 168}}},
		{2000, 100, 64, []f32EigenSeg{{0, 64, 64, 96, 1008}}},
		{50, 60, 401, []f32EigenSeg{{0, 401, 200, 60, 50}}},
		{1024, 1024, 4096, []f32EigenSeg{{0, 4096, 320, 768, 216}}},
		{40, 193, 2552, []f32EigenSeg{{0, 2552, 320, 192, 24}}},
		{49, 2, 641, []f32EigenSeg{{0, 641, 320, 2, 24}}},
		{30, 2, 5847, []f32EigenSeg{{0, 2928, 296, 2, 24}, {2928, 5847, 296, 2, 24}}},
	} {
		got := planF32Eigen(tc.rows, tc.cols, tc.k, 2)
		if got.naive || !reflect.DeepEqual(got.segs, tc.want) {
			t.Errorf("%dx%dx%d: plan %+v, want segs %+v", tc.rows, tc.cols, tc.k, got, tc.want)
		}
	}
	for _, s := range [][3]int{{2, 2, 424}, {3, 3, 1000}, {25, 49, 2}, {2, 3, 100}} {
		if !planF32Eigen(s[0], s[1], s[2], 2).naive {
			t.Errorf("%v: not XLA's naive loop", s)
		}
	}
	for _, s := range [][3]int{{2, 40, 1000}, {40, 3, 1000}, {5, 6, 7}} {
		if planF32Eigen(s[0], s[1], s[2], 2).naive {
			t.Errorf("%v: taken for XLA's naive loop", s)
		}
	}
}

func TestF32EigenRuns(t *testing.T) {
	for _, tc := range []struct {
		seg  f32EigenSeg
		ends []int
		runs []kRun
	}{
		{f32EigenSeg{k0: 0, k1: 1000, kc: 256}, []int{256, 512, 768, 1000}, []kRun{{0, 1000, 256}}},
		{f32EigenSeg{k0: 0, k1: 800, kc: 400}, []int{200, 400, 600, 800}, []kRun{{0, 800, 200}}},
		{f32EigenSeg{k0: 100, k1: 1100, kc: 392}, []int{196, 392, 588, 784, 1000}, []kRun{{0, 784, 196}, {784, 1000, 216}}},
		{f32EigenSeg{k0: 0, k1: 401, kc: 401}, []int{201, 401}, []kRun{{0, 401, 201}}},
		{f32EigenSeg{k0: 0, k1: 900, kc: 400}, []int{200, 400, 600, 800, 900}, []kRun{{0, 900, 200}}},
		{f32EigenSeg{k0: 0, k1: 1190, kc: 400}, []int{200, 400, 600, 800, 995, 1190}, []kRun{{0, 995, 200}, {995, 1190, 195}}},
	} {
		if got := tc.seg.blocks(); !reflect.DeepEqual(got, tc.ends) {
			t.Errorf("%+v: blocks %v, want %v", tc.seg, got, tc.ends)
		}
		if got := tc.seg.runs(); !reflect.DeepEqual(got, tc.runs) {
			t.Errorf("%+v: runs %v, want %v", tc.seg, got, tc.runs)
		}
	}
}

// oneDNN's gemv_t on x_i = 1/(i+1.5), y_i = 1/(2i-7.3) added to 0.25, as
// dnnl_sgemm (m = 1) returned it.
func TestF32GemvTMatchesOneDNN(t *testing.T) {
	want := map[int]uint32{1: 1042447336, 2: 1034577640, 3: 3143450592, 5: 1034875604, 7: 1043259162,
		8: 1044437544, 9: 1045249508, 15: 1047425862, 16: 1047605034, 17: 1047760289, 23: 1048381915,
		31: 1048694107, 32: 1048712981, 33: 1048730646, 47: 1048895962, 100: 1049095186, 333: 1049215054}
	for l, bits := range want {
		x, y := make([]float32, l), make([]float32, l)
		for i := range x {
			x[i] = float32(1.0 / (float64(i) + 1.5))
			y[i] = float32(1.0 / (2.0*float64(i) - 7.3))
		}
		if got := f32GemvT(x, y, 0.25); math.Float32bits(got) != bits {
			t.Errorf("length %d: %#x, want %#x", l, math.Float32bits(got), bits)
		}
	}
}

// f32EigenScalar is plan pl written out element by element.
func f32EigenScalar(m, n, k int, a, b []float32, pl f32EigenPlan) []float32 {
	chain := func(i, j, k0, k1 int, v float32) float32 {
		for q := k0; q < k1; q++ {
			v = fma32(a[i*k+q], b[q*n+j], v)
		}
		return v
	}
	if pl.naive {
		c := make([]float32, m*n)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				c[i*n+j] = chain(i, j, 0, k, 0)
			}
		}
		return c
	}
	var parts [][]float32
	for _, s := range pl.segs {
		c := make([]float32, m*n)
		lastCol := (n-1)/s.cb*s.cb == n-1
		lastRow := (m-1)/s.rb*s.rb == m-1
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var v float32
				switch {
				case i == m-1 && lastRow:
					v = chain(i, j, s.k0, s.k1, 0)
				case j == n-1 && lastCol:
					for b0 := s.k0; b0 < s.k1; b0 += s.kc {
						b1 := min(s.k1, b0+s.kc)
						x, y := make([]float32, b1-b0), make([]float32, b1-b0)
						for q := range x {
							x[q], y[q] = a[i*k+b0+q], b[(b0+q)*n+j]
						}
						v = f32GemvT(x, y, v)
					}
				default:
					lo := s.k0
					for bi, e := range s.blocks() {
						blk := chain(i, j, lo, s.k0+e, 0)
						if bi == 0 {
							v = blk
						} else {
							v = blk + v
						}
						lo = s.k0 + e
					}
				}
				c[i*n+j] = v
			}
		}
		parts = append(parts, c)
	}
	if len(parts) > 1 {
		addSlicesF32(1, parts)
	}
	return parts[0]
}

func TestDotF32EigenMatchesScalarOrder(t *testing.T) {
	if ynnISA == 0 {
		t.Skip("the Eigen order runs on the assembly FMA kernels")
	}
	rng := rand.New(rand.NewSource(5))
	for _, s := range [][3]int{{200, 100, 300}, {64, 64, 1000}, {40, 30, 800}, {17, 33, 5000}, {40, 193, 2552},
		{49, 2, 641}, {51, 145, 5}, {2, 2, 424}, {50, 60, 401}, {70, 80, 399}, {7, 500, 3000}, {129, 131, 130}, {25, 97, 1190}} {
		m, n, k := s[0], s[1], s[2]
		a, b := make([]float32, m*k), make([]float32, k*n)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
		}
		for i := range b {
			b[i] = float32(rng.NormFloat64())
		}
		pl := planF32Eigen(m, n, k, 2)
		want := f32EigenScalar(m, n, k, a, b, pl)
		// A column-major lhs (a.T @ b reads its lhs that way).
		at := make([]float32, m*k)
		for i := 0; i < m; i++ {
			for q := 0; q < k; q++ {
				at[q*m+i] = a[i*k+q]
			}
		}
		for _, par := range []int{1, 3} {
			c := make([]float32, m*n)
			for i := range c {
				c[i] = float32(math.NaN())
			}
			dotF32Eigen(par, 1, m, n, k, at, colMajor(m, k), b, rowMajor(k, n), c, &pl)
			for i := range c {
				if math.Float32bits(c[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%v par %d: element %d = %v, want %v", s, par, i, c[i], want[i])
				}
			}
		}
	}
}

func TestAddSlicesF32Order(t *testing.T) {
	parts := make([][]float32, 9)
	for i := range parts {
		parts[i] = []float32{float32(math.Pow(2, float64(3*i))) + float32(i)*1e-3}
	}
	v := func(i int) float32 { return parts[i][0] }
	r0 := (v(0) + v(1)) + (v(2) + v(3))
	r1 := (v(4) + v(5)) + (v(6) + v(7))
	r2 := v(8)
	want := (r0 + r1) + r2
	addSlicesF32(1, parts)
	if parts[0][0] != want {
		t.Errorf("got %v, want %v", parts[0][0], want)
	}
}
