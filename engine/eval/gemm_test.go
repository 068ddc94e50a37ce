package eval

import (
	"fmt"
	"math"
	"math/cmplx"
	"math/rand"
	"slices"
	"testing"

	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// gemmTestLayouts are the operand layouts the GEMM must read: row-major,
// transposed (as dot hands over x·Wᵀ operands), rows padded to a wider
// stride, and a fully strided one that only the generic packing path takes.
func gemmTestLayouts(rows, cols int) map[string]gemmLayout {
	return map[string]gemmLayout{
		"row":     rowMajor(rows, cols),
		"col":     colMajor(rows, cols),
		"padded":  {bs: rows*(cols+3) + 5, rs: cols + 3, cs: 1},
		"strided": {bs: 2*rows*cols + 1, rs: 2, cs: 2 * rows},
	}
}

// storeLayout writes logical [nb][rows][cols] values v into a new slice laid
// out as l; the gaps hold NaN so that reading a wrong element shows.
func storeLayout[T float32 | float64](v []float64, nb, rows, cols int, l gemmLayout) []T {
	out := make([]T, max(nb*l.bs, 1))
	for i := range out {
		out[i] = T(math.NaN())
	}
	for b := 0; b < nb; b++ {
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				out[b*l.bs+i*l.rs+j*l.cs] = T(v[(b*rows+i)*cols+j])
			}
		}
	}
	return out
}

type gemmSize struct{ nb, m, n, k int }

// gemmSizes covers a kernel's edges: 1, tile sizes ±1, K of 0, 1 and around
// the cache block, sizes that are not multiples of any block, tall and wide
// products, and batches.
func gemmSizes(r *rand.Rand, mr, nr, kc, mc, nc int) []gemmSize {
	ms := []int{1, 2, mr - 1, mr, mr + 1, 2*mc + mr + 1}
	ns := []int{1, nr - 1, nr, nr + 1, 3*nr + 5}
	ks := []int{0, 1, 2, 7, kc - 1, kc + 1, 2*kc + 7}
	sizes := []gemmSize{
		{1, 1, 1, 1}, {1, 0, 3, 2}, {1, 3, 0, 2}, {1, 3, 3, 0},
		{1, 3000, 3, 20}, {1, 2, 5000, 7}, {1, 3, 3000, 64}, {1, 2*mc + 1, 2*nc + 1, 3}, {1, 5, nc + nr + 3, 3}, {1, 1, 1, 2000},
		{3, mr + 1, nr - 1, 33}, {5, 17, 9, 300}, {2, 70, 65, 260},
	}
	for i := 0; i < 40; i++ {
		sizes = append(sizes, gemmSize{1 + r.Intn(2), ms[r.Intn(len(ms))], ns[r.Intn(len(ns))], ks[r.Intn(len(ks))]})
	}
	return sizes
}

// testKernel checks one float kernel against a float64 reference.
func testKernel[T float32 | float64](t *testing.T, kn *gemmKernel[T], eps float64) {
	r := rand.New(rand.NewSource(7))
	testGemm(t, kn.name, gemmSizes(r, kn.mr, kn.nr, kn.kc, kn.mc, kn.nc), eps, kn.run)
}

// testGemm checks a float GEMM on every size, layout and parallelism against
// a float64 reference, with an error bound of (K+1) rounding errors of the
// sum of the products' magnitudes.
func testGemm[T float32 | float64](t *testing.T, name string, sizes []gemmSize, eps float64,
	run func(par, nb, m, n, k int, a []T, la gemmLayout, b []T, lb gemmLayout, c []T)) {
	r := rand.New(rand.NewSource(7))
	for _, sz := range sizes {
		nb, m, n, k := sz.nb, sz.m, sz.n, sz.k
		av, bv := make([]float64, nb*m*k), make([]float64, nb*k*n)
		for i := range av {
			av[i] = float64(T(r.Float64()*2 - 1))
		}
		for i := range bv {
			bv[i] = float64(T(r.Float64()*2 - 1))
		}
		want, bound := make([]float64, nb*m*n), make([]float64, nb*m*n)
		for b := 0; b < nb; b++ {
			for i := 0; i < m; i++ {
				for p := 0; p < k; p++ {
					x := av[(b*m+i)*k+p]
					for j := 0; j < n; j++ {
						y := bv[(b*k+p)*n+j]
						want[(b*m+i)*n+j] += x * y
						bound[(b*m+i)*n+j] += math.Abs(x * y)
					}
				}
			}
		}
		for an, la := range gemmTestLayouts(m, k) {
			for bn, lb := range gemmTestLayouts(k, n) {
				a, b := storeLayout[T](av, nb, m, k, la), storeLayout[T](bv, nb, k, n, lb)
				for _, par := range []int{1, 2, 3} {
					c := make([]T, nb*m*n)
					run(par, nb, m, n, k, a, la, b, lb, c)
					for i, v := range c {
						if d := math.Abs(float64(v) - want[i]); !(d <= float64(k+1)*eps*bound[i]) {
							t.Fatalf("%s %v A %s B %s par %d: c[%d] = %g, want %g (bound %g)",
								name, sz, an, bn, par, i, v, want[i], float64(k+1)*eps*bound[i])
						}
					}
				}
			}
		}
	}
}

func TestGemmF32Kernels(t *testing.T) {
	for _, kn := range gemmKernelsF32() {
		t.Run(kn.name, func(t *testing.T) { testKernel(t, kn, 0x1p-24) })
	}
}

func TestGemmF64Kernels(t *testing.T) {
	for _, kn := range gemmKernelsF64() {
		t.Run(kn.name, func(t *testing.T) { testKernel(t, kn, 0x1p-53) })
	}
}

// TestGemmStrided checks the float entry point, whichever of BLAS and the
// packed kernels it picks for a layout.
func TestGemmStrided(t *testing.T) {
	sizes := []gemmSize{{1, 1, 1, 1}, {1, 1, 9, 5}, {1, 9, 1, 5}, {3, 17, 33, 65}, {2, 130, 70, 300}, {1, 3, 3, 0}}
	testGemm(t, "gemmStrided", sizes, 0x1p-24, gemmStrided[float32])
	testGemm(t, "gemmStrided", sizes, 0x1p-53, gemmStrided[float64])
}

// TestGemmDispatch checks the entry point the evaluator calls, for every
// compute type, including complex (BLAS) and integer (exact) products.
func TestGemmDispatch(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, sz := range []gemmSize{{1, 1, 1, 1}, {1, 5, 7, 3}, {3, 17, 9, 300}, {2, 70, 65, 260}, {1, 130, 2100, 5}, {1, 0, 3, 2}, {1, 3, 3, 0}} {
		nb, m, n, k := sz.nb, sz.m, sz.n, sz.k
		ai, bi := make([]int64, nb*m*k), make([]int64, nb*k*n)
		for i := range ai {
			ai[i] = r.Int63n(200) - 100
		}
		for i := range bi {
			bi[i] = r.Int63n(200) - 100
		}
		ac, bc := make([]complex128, len(ai)), make([]complex128, len(bi))
		for i, v := range ai {
			ac[i] = complex(float64(v), float64(v%7))
		}
		for i, v := range bi {
			bc[i] = complex(float64(v%5), float64(v))
		}
		for _, par := range []int{1, 2, 3} {
			ci := make([]int64, nb*m*n)
			gemm(par, nb, m, n, k, ai, bi, ci)
			if want := naiveGemm(nb, m, n, k, ai, bi); fmt.Sprint(ci) != fmt.Sprint(want) {
				t.Fatalf("int64 size %v par %d: got %v, want %v", sz, par, ci, want)
			}
			// Small integers times small integers: every float type is exact.
			cc := make([]complex128, nb*m*n)
			gemm(par, nb, m, n, k, ac, bc, cc)
			if want := naiveGemm(nb, m, n, k, ac, bc); fmt.Sprint(cc) != fmt.Sprint(want) {
				t.Fatalf("complex128 size %v par %d: got %v, want %v", sz, par, cc, want)
			}
			af, bf := make([]float32, len(ai)), make([]float32, len(bi))
			for i, v := range ai {
				af[i] = float32(v)
			}
			for i, v := range bi {
				bf[i] = float32(v)
			}
			cf := make([]float32, nb*m*n)
			gemm(par, nb, m, n, k, af, bf, cf)
			for i, v := range naiveGemm(nb, m, n, k, ai, bi) {
				if cf[i] != float32(v) {
					t.Fatalf("float32 size %v par %d: c[%d] = %g, want %d", sz, par, i, cf[i], v)
				}
			}
		}
	}
}

// TestDotOperandLayouts checks dot over operand layouts the GEMM reads in
// place (row-major, transposed, multi-dim groups) and ones that need a
// permuting copy first, against a float64 sum over the dimension numbers.
func TestDotOperandLayouts(t *testing.T) {
	cases := []struct {
		l, r []int64
		dn   hlo.DotDimensionNumbers
	}{
		{[]int64{37, 50}, []int64{50, 41}, hlo.DotDimensionNumbers{LhsContracting: []int64{1}, RhsContracting: []int64{0}}},
		{[]int64{50, 37}, []int64{50, 41}, hlo.DotDimensionNumbers{LhsContracting: []int64{0}, RhsContracting: []int64{0}}},
		{[]int64{37, 50}, []int64{41, 50}, hlo.DotDimensionNumbers{LhsContracting: []int64{1}, RhsContracting: []int64{1}}},
		{[]int64{50, 37}, []int64{41, 50}, hlo.DotDimensionNumbers{LhsContracting: []int64{0}, RhsContracting: []int64{1}}},
		{[]int64{3, 5, 7, 6}, []int64{3, 6, 4, 2}, hlo.DotDimensionNumbers{LhsBatch: []int64{0}, RhsBatch: []int64{0}, LhsContracting: []int64{3}, RhsContracting: []int64{1}}},
		{[]int64{3, 6, 5, 7}, []int64{3, 4, 2, 6}, hlo.DotDimensionNumbers{LhsBatch: []int64{0}, RhsBatch: []int64{0}, LhsContracting: []int64{1}, RhsContracting: []int64{3}}},
		{[]int64{2, 3, 4, 5}, []int64{2, 3, 5, 4, 6}, hlo.DotDimensionNumbers{LhsBatch: []int64{0}, RhsBatch: []int64{0}, LhsContracting: []int64{1, 3}, RhsContracting: []int64{1, 2}}},
		{[]int64{2, 5, 3, 4}, []int64{3, 4, 2, 6}, hlo.DotDimensionNumbers{LhsBatch: []int64{2}, RhsBatch: []int64{0}, LhsContracting: []int64{0, 3}, RhsContracting: []int64{2, 1}}},
		{[]int64{8, 9}, []int64{9}, hlo.DotDimensionNumbers{LhsContracting: []int64{1}, RhsContracting: []int64{0}}},
		{[]int64{9}, []int64{8, 9}, hlo.DotDimensionNumbers{LhsContracting: []int64{0}, RhsContracting: []int64{1}}},
		{[]int64{4, 5}, []int64{6}, hlo.DotDimensionNumbers{}},
	}
	r := rand.New(rand.NewSource(3))
	for ci, tc := range cases {
		p, err := planDot(tc.l, tc.r, &tc.dn)
		if err != nil {
			t.Fatalf("case %d: %v", ci, err)
		}
		lhs, rhs := make([]float64, tensor.NumElements(tc.l)), make([]float64, tensor.NumElements(tc.r))
		for i := range lhs {
			lhs[i] = float64(r.Intn(17) - 8)
		}
		for i := range rhs {
			rhs[i] = float64(r.Intn(17) - 8)
		}
		want := naiveDot(tc.l, tc.r, &tc.dn, lhs, rhs)
		for _, par := range []int{1, 2} {
			got := dotIn(par, p, tc.l, tc.r, lhs, rhs)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("case %d par %d: got %v, want %v", ci, par, got, want)
			}
		}
	}
}

// naiveDot sums lhs·rhs over the contracting dims for every (batch, lhs
// free, rhs free) index, in XLA's result order.
func naiveDot(ld, rd []int64, dn *hlo.DotDimensionNumbers, lhs, rhs []float64) []float64 {
	free := func(dims, batch, contract []int64) []int64 {
		var f []int64
		for d := range dims {
			if !slices.Contains(batch, int64(d)) && !slices.Contains(contract, int64(d)) {
				f = append(f, int64(d))
			}
		}
		return f
	}
	lf, rf := free(ld, dn.LhsBatch, dn.LhsContracting), free(rd, dn.RhsBatch, dn.RhsContracting)
	sizes := func(dims, which []int64) []int64 {
		s := []int64{}
		for _, d := range which {
			s = append(s, dims[d])
		}
		return s
	}
	bs, ks := sizes(ld, dn.LhsBatch), sizes(ld, dn.LhsContracting)
	ls, rs := sizes(ld, lf), sizes(rd, rf)
	lstr, rstr := tensor.Strides(ld), tensor.Strides(rd)
	offset := func(str []int64, groups ...[2][]int64) int64 {
		var o int64
		for _, g := range groups {
			for i, d := range g[0] {
				o += str[d] * g[1][i]
			}
		}
		return o
	}
	var out []float64
	walkIndex(bs, func(_ int64, bi []int64) {
		bi = slices.Clone(bi)
		walkIndex(ls, func(_ int64, li []int64) {
			li = slices.Clone(li)
			walkIndex(rs, func(_ int64, ri []int64) {
				ri = slices.Clone(ri)
				s := 0.0
				walkIndex(ks, func(_ int64, ki []int64) {
					s += lhs[offset(lstr, [2][]int64{dn.LhsBatch, bi}, [2][]int64{lf, li}, [2][]int64{dn.LhsContracting, ki})] *
						rhs[offset(rstr, [2][]int64{dn.RhsBatch, bi}, [2][]int64{rf, ri}, [2][]int64{dn.RhsContracting, ki})]
				})
				out = append(out, s)
			})
		})
	})
	return out
}

// Complex products on the real GEMM, in every layout the dot code passes
// (row- and column-major operands, batches), agree with the complex
// multiply-add loop to rounding.
func TestComplexGemmViaRealLayouts(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for _, sz := range []gemmSize{{1, 40, 33, 17}, {3, 17, 29, 40}, {2, 64, 64, 64}} {
		nb, m, n, k := sz.nb, sz.m, sz.n, sz.k
		a, b := make([]complex128, nb*m*k), make([]complex128, nb*k*n)
		for i := range a {
			a[i] = complex(r.NormFloat64(), r.NormFloat64())
		}
		for i := range b {
			b[i] = complex(r.NormFloat64(), r.NormFloat64())
		}
		want := naiveGemm(nb, m, n, k, a, b)
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			la, lb, aa, bb := rowMajor(m, k), rowMajor(k, n), a, b
			if tr[0] { // A stored transposed
				la, aa = colMajor(m, k), transposeBatch(a, nb, m, k)
			}
			if tr[1] {
				lb, bb = colMajor(k, n), transposeBatch(b, nb, k, n)
			}
			c := make([]complex128, nb*m*n)
			if !complexGemmViaReal(2, nb, m, n, k, aa, la, bb, lb, c) {
				t.Fatalf("size %v: the real form did not run", sz)
			}
			for i := range c {
				if d := cmplx.Abs(c[i] - want[i]); d > 1e-12*float64(k) {
					t.Fatalf("size %v transposed %v element %d: got %v, want %v", sz, tr, i, c[i], want[i])
				}
			}
		}
	}
}

// transposeBatch stores each rows×cols matrix of x transposed.
func transposeBatch[T any](x []T, nb, rows, cols int) []T {
	out := make([]T, len(x))
	for b := 0; b < nb; b++ {
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				out[b*rows*cols+j*rows+i] = x[b*rows*cols+i*cols+j]
			}
		}
	}
	return out
}

// TestGemmBitsIndependentOfSplit: however a product is split among
// goroutines (row and column chunks of every kc slice, or whole products),
// each element of C is the same K-ordered sum, bit for bit the one-goroutine
// result. Shapes are tall enough for the many-chunk split and ragged in
// every dimension.
func TestGemmBitsIndependentOfSplit(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	for _, kn := range gemmKernelsF32() {
		for _, sz := range []gemmSize{{1, 1000, 70, 300}, {1, 2053, 37, 520}, {1, 97, 600, 260}, {2, 301, 45, 257}} {
			nb, m, n, k := sz.nb, sz.m, sz.n, sz.k
			a, b := make([]float32, nb*m*k), make([]float32, nb*k*n)
			for i := range a {
				a[i] = float32(r.NormFloat64())
			}
			for i := range b {
				b[i] = float32(r.NormFloat64())
			}
			want := make([]float32, nb*m*n)
			kn.run(1, nb, m, n, k, a, rowMajor(m, k), b, rowMajor(k, n), want)
			for _, par := range []int{2, 3, 5, 16} {
				got := make([]float32, nb*m*n)
				kn.run(par, nb, m, n, k, a, rowMajor(m, k), b, rowMajor(k, n), got)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s %v par %d: c[%d] = %g, one goroutine %g", kn.name, sz, par, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestGemmPipelinedMatchesShared: the barrier-free schedule (pipelined)
// gives every element the bits of the barrier one (shared), storing first
// slices or adding to C, with B row- or column-major, YNNPACK's kc, and
// blocks narrow enough that the rotating buffers of B are reused.
func TestGemmPipelinedMatchesShared(t *testing.T) {
	r := rand.New(rand.NewSource(12))
	defer func(v int) { pipelineMaxB, gemmPipelined = v, true }(pipelineMaxB)
	for _, kn0 := range gemmKernelsF32() {
		for _, sz := range []gemmSize{{1, 2053, 300, 1030}, {1, 301, 257, 700}, {1, 97, 1000, 33}, {1, 13, 5000, 600}} {
			m, n, k := sz.m, sz.n, sz.k
			a, b := make([]float32, m*k), make([]float32, k*n)
			for i := range a {
				a[i] = float32(r.NormFloat64())
			}
			for i := range b {
				b[i] = float32(r.NormFloat64())
			}
			for _, kn := range []*gemmKernel[float32]{kn0, kn0.withKC(512)} {
				for _, maxB := range []int{1 << 19, 1 << 15} {
					pipelineMaxB = maxB
					for _, lb := range []gemmLayout{rowMajor(k, n), colMajor(k, n)} {
						for _, ov := range []bool{false, true} {
							var want, got []float32
							for _, pl := range []bool{false, true} {
								gemmPipelined = pl
								c := make([]float32, m*n)
								for i := range c {
									c[i] = float32(i%7) - 3
								}
								kn.runMode(ov && kn.store != nil, 2, 1, m, n, k, a, rowMajor(m, k), b, lb, c)
								want, got = got, c
							}
							for i := range got {
								if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
									t.Fatalf("%s %v maxB %d %v over %v: c[%d] = %g, shared %g", kn.name, sz, maxB, lb, ov, i, got[i], want[i])
								}
							}
						}
					}
				}
			}
		}
	}
}
