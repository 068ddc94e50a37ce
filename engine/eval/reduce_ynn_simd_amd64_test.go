//go:build goexperiment.simd && amd64

package eval

import (
	"math"
	"math/rand"
	"testing"
)

// TestYNNVectorMatchesScalar holds the vector loops of reduce_ynn to the
// scalar ones bit for bit (NaNs as NaNs), rows and columns, on values that
// round differently under any other association, with infinities, NaNs,
// signed zeros and subnormals mixed in.
func TestYNNVectorMatchesScalar(t *testing.T) {
	if !ynnVector {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewSource(3))
	val := func() float32 {
		switch r.Intn(50) {
		case 0:
			return float32(math.Inf(1 - 2*r.Intn(2)))
		case 1:
			return float32(math.NaN())
		case 2:
			return float32(math.Copysign(0, -1))
		case 3:
			return 1e-40
		}
		return float32(r.NormFloat64() * math.Pow(10, 3*r.Float64()))
	}
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b }
	defer func() { ynnVector = true }()
	for _, n := range []int{255, 256, 257, 511, 1024, 1100, 2047, 4096, 5000, 32768} {
		for trial := 0; trial < 3; trial++ {
			xs := make([]float32, n)
			for i := range xs {
				xs[i] = val()
			}
			if trial == 0 {
				for i := range xs {
					if xs[i] != xs[i] || math.IsInf(float64(xs[i]), 0) {
						xs[i] = 1
					}
				}
			}
			ynnVector = true
			v := ynnRowKernel(xs)
			ynnVector = false
			s := ynnRowKernel(xs)
			if !same(v, s) {
				t.Errorf("row of %d (trial %d): vector %v, scalar %v", n, trial, v, s)
			}
		}
	}
	for _, kn := range [][2]int{{5, 9}, {16, 8}, {17, 23}, {64, 64}, {300, 100}, {1000, 33}, {257, 1024}} {
		k, n := kn[0], kn[1]
		xs := make([]float32, k*n)
		for i := range xs {
			xs[i] = val()
		}
		var s ynnColScratch
		ov, os := make([]float32, min(n, 1024)), make([]float32, min(n, 1024))
		ynnVector = true
		ynnSumColumns(xs, k, n, 0, ov, &s)
		ynnVector = false
		ynnSumColumns(xs, k, n, 0, os, &s)
		for c := range ov {
			if !same(ov[c], os[c]) {
				t.Fatalf("columns %dx%d, column %d: vector %v, scalar %v", k, n, c, ov[c], os[c])
			}
		}
	}
}

// TestYNNVectorMatchesScalar64 is TestYNNVectorMatchesScalar for the f64
// kernels (sum_k1_fp64's blocks of 128, sum_kn_fp64's groups of rows).
func TestYNNVectorMatchesScalar64(t *testing.T) {
	if !ynnVector {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewSource(4))
	val := func() float64 {
		switch r.Intn(50) {
		case 0:
			return math.Inf(1 - 2*r.Intn(2))
		case 1:
			return math.NaN()
		case 2:
			return math.Copysign(0, -1)
		case 3:
			return 1e-310
		}
		return r.NormFloat64() * math.Pow(10, 6*r.Float64())
	}
	same := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) || a != a && b != b }
	defer func() { ynnVector = true }()
	for _, n := range []int{127, 128, 129, 255, 1024, 1100, 2047, 4096, 5000, 16384} {
		for trial := 0; trial < 3; trial++ {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = val()
				if trial == 0 && (xs[i] != xs[i] || math.IsInf(xs[i], 0)) {
					xs[i] = 1
				}
			}
			ynnVector = true
			v := ynnRowKernel64(xs)
			ynnVector = false
			s := ynnRowKernel64(xs)
			if !same(v, s) {
				t.Errorf("f64 row of %d (trial %d): vector %v, scalar %v", n, trial, v, s)
			}
		}
	}
	for _, kn := range [][2]int{{5, 9}, {16, 8}, {17, 23}, {64, 64}, {300, 100}, {1000, 33}, {257, 1024}} {
		k, n := kn[0], kn[1]
		xs := make([]float64, k*n)
		for i := range xs {
			xs[i] = val()
		}
		var s ynnColScratchT[float64]
		ov, os := make([]float64, min(n, 1024)), make([]float64, min(n, 1024))
		ynnVector = true
		ynnColKernelT(ynnColGroups64, xs, k, n, 0, 0, ov, &s)
		ynnVector = false
		ynnColKernelT(ynnColGroups64, xs, k, n, 0, 0, os, &s)
		for c := range ov {
			if !same(ov[c], os[c]) {
				t.Fatalf("f64 columns %dx%d, column %d: vector %v, scalar %v", k, n, c, ov[c], os[c])
			}
		}
	}
}
