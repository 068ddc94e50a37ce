package eval

import (
	"math"
	"math/rand"
	"slices"
	"testing"

	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// The blocked reduce-window loop must visit the same positions in the same
// order as the per-window enumeration, and fold to the same bits.
func TestReduceWindowBlockedMatchesPerWindow(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	for trial := 0; trial < 300; trial++ {
		r := 1 + rng.Intn(4)
		dims := make([]int64, r)
		win := make([]hlo.WindowDim, r)
		for d := range dims {
			dims[d] = int64(1 + rng.Intn(7))
			if rng.Intn(3) == 0 {
				win[d] = hlo.WindowDim{Size: 1, Stride: 1}
				continue
			}
			win[d] = hlo.WindowDim{Size: int64(1 + rng.Intn(4)), Stride: int64(1 + rng.Intn(3)),
				PadLow: int64(rng.Intn(3)), PadHigh: int64(rng.Intn(3)),
				BaseDilation: int64(1 + rng.Intn(2)), WindowDilation: int64(1 + rng.Intn(2))}
		}
		g, err := newWindowGeom(dims, win)
		if err != nil {
			t.Fatal(err)
		}
		n := tensor.NumElements(g.out)
		sc := g.scratch()
		var want, got []int64
		for k := int64(0); k < n; k++ {
			want = g.positions(k, want)
			got = g.walk(k, len(dims), got, sc)
			if !slices.Equal(want, got) {
				t.Fatalf("dims %v window %+v output %d: walk %v, positions %v", dims, win, k, got, want)
			}
		}
		xs := make([]float32, tensor.NumElements(dims))
		for i := range xs {
			switch rng.Intn(10) {
			case 0:
				xs[i] = float32(math.NaN())
			case 1:
				xs[i] = float32(math.Copysign(0, float64(rng.Intn(2)*2-1)))
			default:
				xs[i] = float32(rng.NormFloat64())
			}
		}
		for _, op := range []string{"add", "multiply", "maximum", "minimum"} {
			for _, i0 := range []float32{0, float32(math.Inf(-1)), float32(math.Copysign(0, -1)), 1.5} {
				o := make([]float32, n)
				reduceWindowFloat(op, i0, xs, g, o)
				for k := int64(0); k < n; k++ {
					w := foldFloatAt(op, i0, xs, g.positions(k, nil))
					// Where two NaNs meet in an add or multiply, which payload
					// survives is the compiler's operand order (in XLA's code
					// and here alike; the race detector's build differs):
					// NaN matches NaN, every other value bit for bit.
					if math.Float32bits(w) != math.Float32bits(o[k]) && !(w != w && o[k] != o[k]) {
						t.Fatalf("%s dims %v window %+v output %d: got %v, want %v", op, dims, win, k, o[k], w)
					}
				}
			}
		}
	}
}

// NHWC pools whose channel run spans whole vectors and a tail: the
// register-resident window fold gives the per-window fold's bits at every
// vector width this CPU runs, with NaNs, signed zeros and infinities.
func TestReduceWindowChannelRunsEveryWidth(t *testing.T) {
	saved := binaryLanes
	defer func() { binaryLanes = saved }()
	rng := rand.New(rand.NewSource(12))
	for _, lanes := range binaryLaneWidths() {
		binaryLanes = lanes
		for _, ch := range []int64{8, 16, 17, 33, 64, 70} {
			dims := []int64{2, 9, 8, ch}
			win := []hlo.WindowDim{{Size: 1, Stride: 1}, {Size: 3, Stride: 2, PadHigh: 1}, {Size: 3, Stride: 2, PadLow: 1, PadHigh: 1},
				{Size: 1, Stride: 1}}
			g, err := newWindowGeom(dims, win)
			if err != nil {
				t.Fatal(err)
			}
			xs := make([]float32, tensor.NumElements(dims))
			for i := range xs {
				switch rng.Intn(12) {
				case 0:
					xs[i] = float32(math.NaN())
				case 1:
					xs[i] = float32(math.Copysign(0, float64(rng.Intn(2)*2-1)))
				case 2:
					xs[i] = float32(math.Inf(rng.Intn(2)*2 - 1))
				default:
					xs[i] = float32(rng.NormFloat64())
				}
			}
			n := tensor.NumElements(g.out)
			for _, op := range []string{"maximum", "minimum"} {
				for _, i0 := range []float32{float32(math.Inf(-1)), float32(math.Inf(1)), float32(math.Copysign(0, -1)), 0.25} {
					o := make([]float32, n)
					reduceWindowFloat(op, i0, xs, g, o)
					for k := int64(0); k < n; k++ {
						if w := foldFloatAt(op, i0, xs, g.positions(k, nil)); math.Float32bits(w) != math.Float32bits(o[k]) {
							t.Fatalf("lanes %d %s channels %d init %v output %d: got %v, want %v", lanes, op, ch, i0, k, o[k], w)
						}
					}
				}
			}
		}
	}
}
