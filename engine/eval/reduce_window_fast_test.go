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
// order as the per-window enumeration (for sums, XLA:CPU's order:
// xlaOrderFold), and fold to the same bits.
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
					if op == "add" {
						w = xlaOrderFold(g, i0, xs, k)
					}
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

// Prefix-scan geometries (cumsum, cumprod, cummax, cummin as JAX lowers them,
// and wider or shifted windows of the same kind): the running fold gives
// every result the per-window fold's bits, over rows of one element and rows
// wider than a chunk.
func TestReduceWindowPrefixScanMatchesPerWindow(t *testing.T) {
	rng := rand.New(rand.NewSource(33))
	for trial := 0; trial < 120; trial++ {
		r := 1 + rng.Intn(3)
		dims := make([]int64, r)
		win := make([]hlo.WindowDim, r)
		d := rng.Intn(r)
		for i := range dims {
			dims[i] = int64(1 + rng.Intn(5))
			win[i] = hlo.WindowDim{Size: 1, Stride: 1}
		}
		dims[d] = int64(2 + rng.Intn(40))
		if trial%10 == 0 && d == 0 && r > 1 {
			dims[r-1] = 2048 + int64(rng.Intn(300)) // several chunks per row
		}
		n := dims[d]
		high := int64(rng.Intn(2))
		size := n + high + int64(rng.Intn(3))
		win[d] = hlo.WindowDim{Size: size, Stride: 1, PadLow: size - 1 - int64(rng.Intn(2)), PadHigh: high}
		g, err := newWindowGeom(dims, win)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := g.prefixScan(); !ok && g.out[d] < 2 {
			continue
		} else if !ok {
			t.Fatalf("dims %v window %+v: not recognized as a prefix scan", dims, win)
		}
		xs := make([]float64, tensor.NumElements(dims))
		for i := range xs {
			switch rng.Intn(12) {
			case 0:
				xs[i] = math.NaN()
			case 1:
				xs[i] = math.Copysign(0, float64(rng.Intn(2)*2-1))
			case 2:
				xs[i] = math.Inf(rng.Intn(2)*2 - 1)
			case 3:
				xs[i] = 1e-40 // a float32 subnormal
			default:
				xs[i] = rng.NormFloat64()
			}
		}
		x32 := make([]float32, len(xs))
		for i, v := range xs {
			x32[i] = float32(v)
		}
		nOut := tensor.NumElements(g.out)
		for _, op := range []string{"add", "multiply", "maximum", "minimum"} {
			for _, i0 := range []float64{0, math.Inf(-1), math.Copysign(0, -1), 1.5} {
				o32, o64 := make([]float32, nOut), make([]float64, nOut)
				reduceWindowFloat(op, float32(i0), x32, g, o32)
				reduceWindowFloat(op, i0, xs, g, o64)
				for k := int64(0); k < nOut; k++ {
					pos := g.positions(k, nil)
					w32, w64 := foldFloatAt(op, float32(i0), x32, pos), foldFloatAt(op, i0, xs, pos)
					if math.Float32bits(w32) != math.Float32bits(o32[k]) && !(w32 != w32 && o32[k] != o32[k]) {
						t.Fatalf("f32 %s init %v dims %v window %+v output %d: got %v, want %v", op, i0, dims, win, k, o32[k], w32)
					}
					if math.Float64bits(w64) != math.Float64bits(o64[k]) && !(w64 != w64 && o64[k] != o64[k]) {
						t.Fatalf("f64 %s init %v dims %v window %+v output %d: got %v, want %v", op, i0, dims, win, k, o64[k], w64)
					}
				}
			}
		}
	}
}

// Windows along the last dimension only (the reverse scans of 16 XLA's
// cumulative-scan tree makes, and any padding, size and length): the line
// loop gives every result the per-window fold's bits.
func TestReduceWindowLineMatchesPerWindow(t *testing.T) {
	rng := rand.New(rand.NewSource(34))
	for trial := 0; trial < 150; trial++ {
		r := 1 + rng.Intn(3)
		dims := make([]int64, r)
		win := make([]hlo.WindowDim, r)
		for i := range dims {
			dims[i] = int64(1 + rng.Intn(4))
			win[i] = hlo.WindowDim{Size: 1, Stride: 1, BaseDilation: 1, WindowDilation: 1}
		}
		n := int64(1 + rng.Intn(40))
		dims[r-1] = n
		size := int64(1 + rng.Intn(int(n)+2))
		win[r-1] = hlo.WindowDim{Size: size, Stride: 1, PadLow: int64(rng.Intn(int(size))), PadHigh: int64(rng.Intn(int(size) + 1)), BaseDilation: 1, WindowDilation: 1}
		g, err := newWindowGeom(dims, win)
		if err != nil {
			t.Fatal(err)
		}
		if !g.lastDimWindow() {
			t.Fatalf("dims %v window %+v: not recognized as a last-dimension window", dims, win)
		}
		xs := make([]float64, tensor.NumElements(dims))
		for i := range xs {
			switch rng.Intn(12) {
			case 0:
				xs[i] = math.NaN()
			case 1:
				xs[i] = math.Copysign(0, float64(rng.Intn(2)*2-1))
			case 2:
				xs[i] = math.Inf(rng.Intn(2)*2 - 1)
			case 3:
				xs[i] = 1e-40
			default:
				xs[i] = rng.NormFloat64()
			}
		}
		x32 := make([]float32, len(xs))
		for i, v := range xs {
			x32[i] = float32(v)
		}
		nOut := tensor.NumElements(g.out)
		for _, op := range []string{"add", "multiply", "maximum", "minimum"} {
			for _, i0 := range []float64{0, math.Inf(-1), math.Copysign(0, -1), 1.5} {
				o32, o64 := make([]float32, nOut), make([]float64, nOut)
				reduceWindowFloat(op, float32(i0), x32, g, o32)
				reduceWindowFloat(op, i0, xs, g, o64)
				for k := int64(0); k < nOut; k++ {
					pos := g.positions(k, nil)
					w32, w64 := foldFloatAt(op, float32(i0), x32, pos), foldFloatAt(op, i0, xs, pos)
					if math.Float32bits(w32) != math.Float32bits(o32[k]) && !(w32 != w32 && o32[k] != o32[k]) {
						t.Fatalf("f32 %s init %v dims %v window %+v output %d: got %v, want %v", op, i0, dims, win, k, o32[k], w32)
					}
					if math.Float64bits(w64) != math.Float64bits(o64[k]) && !(w64 != w64 && o64[k] != o64[k]) {
						t.Fatalf("f64 %s init %v dims %v window %+v output %d: got %v, want %v", op, i0, dims, win, k, o64[k], w64)
					}
				}
			}
		}
	}
}

// xlaOrderFold is result k of an f32 sum reduce-window folded one window
// offset at a time in XLA:CPU's loop nests (reduce_window_xla_order.go): each
// box's offsets in row-major order, or for a lanes box one partial sum per
// offset of the lane dimension, added by halving after each pass over the
// dims outside it.
func xlaOrderFold(g *windowGeom, i0 float32, xs []float32, k int64) float32 {
	boxes := g.xlaBoxes("add", true)
	if boxes == nil {
		return foldFloatAt("add", i0, xs, g.positions(k, nil))
	}
	r := len(g.in)
	oi := make([]int64, r)
	for d, o := r-1, k; d >= 0; d-- {
		oi[d] = o % g.out[d]
		o /= g.out[d]
	}
	strides := tensor.Strides(g.in)
	// at returns the operand index of window offset wi, or -1 in padding.
	at := func(wi []int64) int64 {
		lin := int64(0)
		for d, w := range g.win {
			p := oi[d]*w.Stride + wi[d] - w.PadLow
			if p < 0 || p >= g.in[d] {
				return -1
			}
			lin += p * strides[d]
		}
		return lin
	}
	acc := i0
	for _, b := range boxes {
		wi := slices.Clone(b.lo)
		var lanes []float32
		for {
			if p := at(wi); p >= 0 {
				switch {
				case !b.lanes:
					acc += xs[p]
				case wi[b.lane] == b.lo[b.lane] && lanes == nil:
					lanes = []float32{acc + xs[p]}
				default:
					l := int(wi[b.lane] - b.lo[b.lane])
					if l == len(lanes) {
						lanes = append(lanes, xs[p])
					} else {
						lanes[l] += xs[p]
					}
				}
			}
			d := r - 1
			for ; d >= 0; d-- {
				if wi[d]++; wi[d] <= b.hi[d] {
					break
				}
				wi[d] = b.lo[d]
				if b.lanes && d == b.lane && lanes != nil {
					for h := len(lanes) / 2; h >= 1; h /= 2 {
						for i := 0; i < h; i++ {
							lanes[i] += lanes[i+h]
						}
					}
					acc, lanes = lanes[0], nil
				}
			}
			if d < 0 {
				break
			}
		}
	}
	return acc
}
