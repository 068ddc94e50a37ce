package eval

import (
	"math"
	"math/rand"
	"testing"

	"goldtrace/engine/tensor"
)

// TestYNNOrderAgainstJax compares the f32 sums XLA:CPU hands to YNNPACK bit
// for bit with jax.jit on CPU (cases in testdata/gen_ynn_order.py). Before
// reduce_ynn.go (GOLDTRACE_NO_YNN_ORDER=1) most of them differ.
func TestYNNOrderAgainstJax(t *testing.T) {
	dir, cases := jaxCases(t, "gen_ynn_order.py")
	requireCases(t, cases, 50)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) { runJaxCase(t, dir, c) })
	}
}

// TestYNNRowKernelStructure checks the row kernel's grouping on inputs whose
// sum reveals it: 2^60 swallows every count of ones in f32, so the result
// counts the ones added after the big value was cancelled in the same lane
// chain.
func TestYNNRowKernelStructure(t *testing.T) {
	const big = float32(1 << 60)
	ones := func(n int) []float32 {
		xs := make([]float32, n)
		for i := range xs {
			xs[i] = 1
		}
		return xs
	}
	// Elements 0 and 16 both go to lane 0 and meet first in its partial,
	// before the ones at 32 and 48: every one counts (a left-to-right fold
	// would lose the 15 between them).
	xs := ones(100)
	xs[0], xs[16] = big, -big
	if got := ynnRowKernel(xs); got != 98 {
		t.Errorf("cancelling pair in one lane: got %v, want 98", got)
	}
	// Elements 0 and 8 go to lanes 0 and 8, which swallow their other three
	// ones each and meet in the tree's first step (lane i + lane i+8); the
	// other 14 lanes hold 4 ones each.
	xs = ones(64)
	xs[0], xs[8] = big, -big
	if got := ynnRowKernel(xs); got != 56 {
		t.Errorf("pair in lanes 0 and 8: got %v, want 56", got)
	}
}

// TestYNNOrderMatchesPlainSumWhenExact: on integers below 2^24 every order
// gives the exact sum, so the kernels must too (catches a dropped or
// doubled element in any path: rows, chunks, columns, remainders).
func TestYNNOrderMatchesPlainSumWhenExact(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, n := range []int{1, 3, 15, 16, 17, 63, 64, 65, 255, 256, 257, 1023, 1024, 1025, 4096, 32768, 32769, 70001} {
		xs := make([]float32, n)
		want := float32(1)
		for i := range xs {
			xs[i] = float32(r.Intn(200) - 100)
			want += xs[i]
		}
		if got := ynnSumRow(ynnF32, 1, xs, n%2 == 1); got != want {
			t.Errorf("row of %d: got %v, want %v", n, got, want)
		}
		if n <= ynnChunk {
			if got := ynnSumRow(ynnBF16, 1, xs, false); got != want {
				t.Errorf("bf16 row of %d: got %v, want %v", n, got, want)
			}
		}
	}
	for _, kn := range [][2]int{{1, 7}, {2, 7}, {3, 7}, {4, 7}, {5, 7}, {17, 33}, {300, 9}, {5000, 40}} {
		k, n := kn[0], kn[1]
		xs := make([]float32, k*n)
		want := make([]float64, n)
		for i := range xs {
			xs[i] = float32(r.Intn(200) - 100)
			want[i%n] += float64(xs[i])
		}
		o := make([]float32, n)
		var s ynnColScratch
		ynnSumColumns(xs, k, n, 0, o, &s)
		for c := range o {
			if float64(o[c]) != want[c] {
				t.Fatalf("columns %dx%d: column %d got %v, want %v", k, n, c, o[c], want[c])
			}
		}
	}
}

// TestYNNRowShortMatchesKernel: the short-row path is the general kernel's
// arithmetic for rows of up to 64 (signed zeros, NaN and infinities too).
func TestYNNRowShortMatchesKernel(t *testing.T) {
	long := func(xs []float32) float32 { // ynnRowKernel's steps for k <= 64
		var acc0, acc1, err [ynnLanes]float32
		p := ynnPartial(xs)
		for l := range acc0 {
			acc0[l] += p[l]
		}
		return ynnFinish(&acc0, &acc1, &err)
	}
	r := rand.New(rand.NewSource(2))
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e30, -1e30}
	for n := 0; n <= 64; n++ {
		for trial := 0; trial < 50; trial++ {
			xs := make([]float32, n)
			for i := range xs {
				if r.Intn(5) == 0 {
					xs[i] = specials[r.Intn(len(specials))]
				} else {
					xs[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.Intn(7)-3)))
				}
			}
			got, want := ynnRowShort(xs), long(xs)
			if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
				t.Fatalf("row of %d %v: got %x, want %x", n, xs, math.Float32bits(got), math.Float32bits(want))
			}
		}
	}
}

// TestYNNSumGeneralExact: on small integers every order gives the exact
// sum, so the general reduce must too, whatever its splits, partials and
// tiles (catches an element dropped or counted twice).
func TestYNNSumGeneralExact(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	shapes := []struct {
		dims    []int64
		reduced []bool
	}{
		{[]int64{8, 32, 32, 32, 4}, []bool{false, true, true, false, true}},
		{[]int64{64, 128, 64}, []bool{true, false, true}},
		{[]int64{2, 40, 8, 2000}, []bool{false, true, false, true}},
		{[]int64{22, 7, 90, 6, 14}, []bool{true, true, true, true, false}},
		{[]int64{25, 40000}, []bool{true, false}},
		{[]int64{4, 8, 40000}, []bool{true, true, false}},
		{[]int64{3, 1, 70000}, []bool{false, true, true}},
		{[]int64{100000}, []bool{true}},
		{[]int64{5, 1, 7, 3000}, []bool{true, false, true, false}},
	}
	for _, sh := range shapes {
		n := tensor.NumElements(sh.dims)
		xs := make([]float32, n)
		for i := range xs {
			xs[i] = float32(r.Intn(200) - 100)
		}
		var outDims []int64
		for d, e := range sh.dims {
			if !sh.reduced[d] {
				outDims = append(outDims, e)
			}
		}
		want := make([]float64, tensor.NumElements(outDims))
		idx := make([]int64, len(sh.dims))
		for i := range xs {
			o := int64(0)
			for d, e := range sh.dims {
				if !sh.reduced[d] {
					o = o*e + idx[d]
				}
			}
			want[o] += float64(xs[i])
			for d := len(idx) - 1; d >= 0; d-- {
				if idx[d]++; idx[d] < sh.dims[d] {
					break
				}
				idx[d] = 0
			}
		}
		got := make([]float32, len(want))
		ynnSumGeneral(xs, sh.dims, sh.reduced, 1, got, len(want)%2 == 0)
		for i := range got {
			if float64(got[i]) != want[i]+1 {
				t.Fatalf("%v over %v: output %d got %v, want %v", sh.dims, sh.reduced, i, got[i], want[i]+1)
			}
		}
		// The f64 kernels and tile (16384 elements: other splits).
		xs64 := make([]float64, len(xs))
		for i, v := range xs {
			xs64[i] = float64(v)
		}
		got64 := make([]float64, len(want))
		ynnSumGeneralT(ynnSum64, xs64, sh.dims, sh.reduced, 1, got64, len(want)%2 == 0)
		for i := range got64 {
			if got64[i] != want[i]+1 {
				t.Fatalf("f64 %v over %v: output %d got %v, want %v", sh.dims, sh.reduced, i, got64[i], want[i]+1)
			}
		}
	}
}
