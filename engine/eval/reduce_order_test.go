package eval

import (
	"math"
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// TestReduceOrderAgainstJax compares add-reductions bit for bit with jax.jit
// on CPU (cases in testdata/gen_reduce_order.py).
func TestReduceOrderAgainstJax(t *testing.T) {
	dir, cases := jaxCases(t, "gen_reduce_order.py")
	requireCases(t, cases, 31)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) { runJaxCase(t, dir, c) })
	}
}

// TestTreeSumShape checks the window structure on inputs whose sum reveals
// the grouping: 2^60 swallows every count of ones in f32, so the result counts the
// ones that were added before the big value was cancelled.
func TestTreeSumShape(t *testing.T) {
	const big = float32(1 << 60)
	for _, tc := range []struct {
		n, bigAt, negAt int
		want            float32
	}{
		// 33 elements: windows [0,17) and [17,33) (padding 15 low, 16 high).
		{33, 0, 16, 33 - 17},
		{33, 0, 17, 0},
		{33, 17, 32, 33 - 16},
		// 300: ten windows of 32 with 10 elements of padding at each end.
		{300, 0, 21, 300 - 22},
		{300, 22, 53, 300 - 32},
		// Up to 32 elements fold one by one: everything after the pair counts.
		{32, 3, 5, 32 - 6},
	} {
		xs := make([]float32, tc.n)
		for i := range xs {
			xs[i] = 1
		}
		xs[tc.bigAt], xs[tc.negAt] = big, -big
		got := treeFold(0, xs, make([]float32, (tc.n+31)/32), foldSum[float32])
		if got != tc.want {
			t.Errorf("n=%d big at %d, -big at %d: got %v, want %v", tc.n, tc.bigAt, tc.negAt, got, tc.want)
		}
	}
}

// TestReduceAddXLAOrderScope checks which reductions take the XLA:CPU order.
func TestReduceAddXLAOrderScope(t *testing.T) {
	if singleReducedDim([]int64{4, 5}, []int64{0, 1}) {
		t.Error("two non-trivial reduced dimensions must not count as one")
	}
	if !singleReducedDim([]int64{4, 1, 5}, []int64{1, 2}) {
		t.Error("a size-1 reduced dimension must not count")
	}
	x := tensor.New(dtype.F32, []int64{4096})
	init := tensor.New(dtype.F32, []int64{})
	if reduceAddXLAOrder(nil, x, init, x.Dims, []int64{0}, nil, 4096) != nil {
		t.Error("a nil reducer must fall back")
	}
}

// The fast reduce of contiguous runs folds each run left to right from the
// init value, four runs side by side, for any run count and length, and
// splits large reduces across goroutines without changing a bit.
func TestReduceFastRunsFoldInOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	for _, shape := range [][2]int{{1, 5}, {3, 7}, {4, 1}, {9, 768}, {4096, 33}, {2, 0}} {
		groups, rl := shape[0], shape[1]
		x := tensor.New(dtype.F32, []int64{int64(groups), int64(rl)})
		for i := range x.F32() {
			x.F32()[i] = float32(rng.NormFloat64() * math.Pow(2, float64(rng.Intn(40)-20)))
			if rng.Intn(50) == 0 {
				x.F32()[i] = float32(math.NaN())
			}
		}
		init := tensor.New(dtype.F32, nil)
		init.F32()[0] = 0.5
		for _, op := range []string{"add", "multiply", "maximum", "minimum"} {
			got := reduceFast(op, x, init, []int64{int64(groups)}, int64(rl)).F32()
			for g := 0; g < groups; g++ {
				want := foldFloat(op, float32(0.5), x.F32()[g*rl:(g+1)*rl])
				if math.Float32bits(got[g]) != math.Float32bits(want) {
					t.Fatalf("%s %dx%d run %d: %v, want %v", op, groups, rl, g, got[g], want)
				}
			}
		}
	}
}
