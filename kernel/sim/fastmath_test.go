package sim

import (
	"math"
	"math/rand/v2"
	"testing"

	"goldtrace/engine/dtype"
)

// expF32 rounds to the same float32 as math.Exp (float64, ~1 ulp) on a
// dense sweep, except at most a handful of boundary cases.
func TestExpF32MatchesMath(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	diff := 0
	for i := 0; i < 2000000; i++ {
		x := float64(float32(-110 + 200*r.Float64()))
		if i%2 == 0 {
			x = float64(float32(-3 + 6*r.Float64()))
		}
		got, want := float32(expF32(x)), float32(math.Exp(x))
		if got != want {
			if math.Abs(float64(got-want)) > math.Abs(float64(want))*1.2e-7 {
				t.Fatalf("expF32(%v) = %v, math.Exp gives %v", x, got, want)
			}
			diff++
		}
	}
	if diff > 20 {
		t.Fatalf("%d of 2e6 inputs round differently from math.Exp", diff)
	}
	for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 88.72283, 88.7229, -103.9, -200, 0} {
		got, want := float32(expF32(x)), float32(math.Exp(x))
		if got != want && !(got != got && want != want) {
			t.Fatalf("expF32(%v) = %v, want %v", x, got, want)
		}
	}
}

// The vector exp (simd builds) rounds like expF32 but for rare boundary
// cases, and handles NaN, ±Inf, overflow and underflow the same way.
func TestExpRowVecMatchesScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	n := 1 << 16
	x := make([]float64, n)
	for i := range x {
		x[i] = float64(float32(-120 + 220*r.Float64()))
		if i%3 == 0 {
			x[i] = float64(float32(-4 + 8*r.Float64()))
		}
	}
	x[0], x[1], x[2], x[3] = math.NaN(), math.Inf(1), math.Inf(-1), 88.72284
	for _, sb := range [][2]float64{{1, 0}, {0.75, -0.5}} {
		out := make([]float64, n)
		done := expRowVec(out, x, sb[0], sb[1])
		diff := 0
		for i := 0; i < done; i++ {
			z := float64(float32(x[i])*float32(sb[0]) + float32(sb[1]))
			want := float64(float32(expF32(z)))
			if out[i] != want && !(math.IsNaN(out[i]) && math.IsNaN(want)) {
				if math.Abs(out[i]-want) > 1.2e-7*math.Abs(want) || math.IsNaN(out[i]) || math.IsNaN(want) {
					t.Fatalf("exp(%v*%v+%v): vector %v, scalar %v", x[i], sb[0], sb[1], out[i], want)
				}
				diff++
			}
		}
		if diff > 5 {
			t.Fatalf("%d of %d vector results round differently", diff, done)
		}
		t.Logf("vector path handled %d of %d, %d rounding differences", done, n, diff)
	}
}

// The inline bf16 rounding equals engine/dtype's (ml_dtypes-exact) on
// random bit patterns, ties, overflow and specials.
func TestRoundBF16MatchesDtype(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	xs := []float64{math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), math.MaxFloat32, -math.MaxFloat32, 3.3895313892515355e38, 1.00390625, 1.01171875}
	for i := 0; i < 200000; i++ {
		xs = append(xs, float64(math.Float32frombits(uint32(r.Uint64()))))
	}
	got := append([]float64{}, xs...)
	roundSlice(dtype.BF16, got)
	for i, x := range xs {
		want := dtype.ToF64(dtype.BF16, dtype.FromF64(dtype.BF16, x))
		if math.IsNaN(want) != math.IsNaN(got[i]) || (!math.IsNaN(want) && math.Float64bits(want) != math.Float64bits(got[i])) {
			t.Fatalf("bf16(%v) = %v, dtype gives %v", x, got[i], want)
		}
	}
}

// The fused PSUM→bf16 copy rounds exactly as roundSlice does (ties, carries
// into the exponent, overflow to Inf, NaN, subnormals, signed zeros).
func TestRoundF32ToBF16MatchesRoundSlice(t *testing.T) {
	src := []float32{0, float32(math.Copysign(0, -1)), 1, 1.00390625, 1.01171875, 1.0078125, -3.3e38, 3.39e38, float32(math.Inf(1)), float32(math.NaN()), 1e-40, -1e-45, 65504.5}
	r := rand.New(rand.NewPCG(3, 3))
	for i := 0; i < 10000; i++ {
		src = append(src, math.Float32frombits(r.Uint32()))
	}
	got := make([]float64, len(src))
	roundF32ToBF16(got, src)
	want := make([]float64, len(src))
	for i, x := range src {
		want[i] = float64(x)
	}
	roundSlice(dtype.BF16, want)
	for i := range src {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Fatalf("%g (%#x): got %#x, want %#x", src[i], math.Float32bits(src[i]), math.Float64bits(got[i]), math.Float64bits(want[i]))
		}
	}
}

// The chunked bf16 decode/encode equal dtype's conversions bit for bit.
func TestBF16CodecMatchesDtype(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	n := 300000
	raw := make([]byte, 2*n)
	for i := range raw {
		raw[i] = byte(r.Uint32())
	}
	got, want := make([]float32, n), make([]float32, n)
	decodeF32Par(2, dtype.BF16, raw, got)
	dtype.DecodeF32(dtype.BF16, raw, want)
	vals := make([]float32, n)
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("decode %d: %#x vs %#x", i, math.Float32bits(got[i]), math.Float32bits(want[i]))
		}
		vals[i] = math.Float32frombits(r.Uint32()) // not bf16-exact: rounding, NaN payloads
	}
	eg, ew := make([]byte, 2*n), make([]byte, 2*n)
	encodeF32Par(2, dtype.BF16, vals, eg)
	dtype.EncodeF32(dtype.BF16, vals, ew)
	if string(eg) != string(ew) {
		t.Fatal("bf16 encode differs from dtype.EncodeF32")
	}
}
