package eval

import (
	"math"
	"math/rand"
	"testing"
)

func isSub64(b uint64) bool { return b&(1<<63-1) != 0 && b&(1<<63-1) < 1<<52 }

// The f64 subnormal scans and flushing arithmetic at every width against
// one-element-at-a-time references: subnormals at every position (and
// none), NaN payloads on both sides, results that round into the
// subnormal range, tails of every length.
func TestF64VectorKernelsMatchScalar(t *testing.T) {
	saved := f64BitLanes
	defer func() { f64BitLanes = saved }()
	rng := rand.New(rand.NewSource(65))
	val := func() float64 {
		switch rng.Intn(8) {
		case 0:
			return math.Float64frombits(uint64(rng.Int63n(1<<52-1)+1) | uint64(rng.Intn(2))<<63)
		case 1:
			return math.Float64frombits(rng.Uint64()) // NaN payloads, infinities, anything
		case 2:
			return rng.NormFloat64() * 1e-300
		case 3:
			return []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), 0x1p-1022, -0x1p-1022}[rng.Intn(6)]
		}
		return rng.NormFloat64() * 1e3
	}
	for _, lanes := range f64BitLaneWidths() {
		f64BitLanes = lanes
		for n := 0; n < 90; n++ {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = rng.NormFloat64()
			}
			for pos := -1; pos < n; pos++ {
				ys := append([]float64(nil), xs...)
				want := -1
				if pos >= 0 {
					ys[pos] = math.Float64frombits(uint64(rng.Int63n(1<<52-1)+1) | uint64(rng.Intn(2))<<63)
					want = pos
					if pos+1 < n && rng.Intn(2) == 0 {
						ys[pos+1] = -5e-324
					}
				}
				if got := firstSubnormal(ys); got != want {
					t.Fatalf("lanes %d n %d: firstSubnormal %d, want %d", lanes, n, got, want)
				}
				zs := append([]float64(nil), ys...)
				ftz(zs)
				for i, v := range ys {
					w := math.Float64bits(v)
					if isSub64(w) {
						w &= 1 << 63
					}
					if math.Float64bits(zs[i]) != w {
						t.Fatalf("lanes %d n %d: ftz element %d: %#x, want %#x", lanes, n, i, math.Float64bits(zs[i]), w)
					}
				}
			}
			a, b := make([]float64, n), make([]float64, n)
			for i := range a {
				a[i], b[i] = val(), val()
			}
			for _, op := range []string{"add", "subtract", "multiply", "divide"} {
				o := make([]float64, n)
				k := binaryFTZF64Vector(op, a, b, o)
				if lanes > 0 && k != n&^(lanes-1) {
					t.Fatalf("lanes %d %s: %d of %d elements", lanes, op, k, n)
				}
				for i := range o[:k] {
					var r float64
					switch op {
					case "add":
						r = a[i] + b[i]
					case "subtract":
						r = a[i] - b[i]
					case "multiply":
						r = a[i] * b[i]
					default:
						r = a[i] / b[i]
					}
					w := math.Float64bits(r)
					if isSub64(w) {
						w &= 1 << 63
					}
					if g := math.Float64bits(o[i]); g != w {
						t.Fatalf("lanes %d %s(%#x, %#x) = %#x, want %#x", lanes, op, math.Float64bits(a[i]), math.Float64bits(b[i]), g, w)
					}
				}
			}
		}
	}
}
