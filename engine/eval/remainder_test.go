package eval

import (
	"math"
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// The f32 and f64 remainder, now made from the raw operands only, against
// the sequence it replaced (the flushed operands' fmod, flushed, then every
// element redone by fixSubnormalPaths) and against math.Mod where no
// operand is subnormal: subnormals, zeros, infinities and NaNs included,
// large enough to run on several cores.
func TestRemainderMatchesOldPath(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	const n = 100000
	a32, b32 := randomF32(rng, []int64{n}), randomF32(rng, []int64{n})
	got, err := binary("remainder", a32, b32)
	if err != nil {
		t.Fatal(err)
	}
	as, bs := a32.F32(), b32.F32()
	want := make([]float32, n)
	binaryFloat("remainder", daz(as), daz(bs), want)
	ftz(want)
	fixSubnormalPaths("remainder", as, bs, want)
	for i, w := range want {
		g := got.F32()[i]
		if math.Float32bits(g) != math.Float32bits(w) {
			t.Fatalf("f32 remainder(%v, %v) = %v, want %v", as[i], bs[i], g, w)
		}
		sub := func(v float32) bool { return v != 0 && math.Abs(float64(v)) < 0x1p-126 }
		if !sub(bs[i]) && !sub(as[i]) {
			if m := float32(math.Mod(float64(as[i]), float64(bs[i]))); math.Float32bits(m) != math.Float32bits(g) && !(m != m && g != g) {
				t.Fatalf("f32 remainder(%v, %v) = %v, math.Mod %v", as[i], bs[i], g, m)
			}
		}
	}
	a64, b64 := tensor.New(dtype.F64, []int64{n}), tensor.New(dtype.F64, []int64{n})
	for i := range a64.F64() {
		a64.F64()[i], b64.F64()[i] = float64(as[i])*1e-280, float64(bs[i])
		if i%7 == 0 {
			b64.F64()[i] = math.Float64frombits(rng.Uint64() & 0x800fffffffffffff) // subnormal or zero
		}
	}
	got64, err := binary("remainder", a64, b64)
	if err != nil {
		t.Fatal(err)
	}
	w64 := make([]float64, n)
	binaryFloat("remainder", daz(a64.F64()), daz(b64.F64()), w64)
	ftz(w64)
	fixSubnormalPaths("remainder", a64.F64(), b64.F64(), w64)
	for i, w := range w64 {
		if g := got64.F64()[i]; math.Float64bits(g) != math.Float64bits(w) {
			t.Fatalf("f64 remainder(%v, %v) = %v, want %v", a64.F64()[i], b64.F64()[i], g, w)
		}
	}
}

// fmodF32 against math.Mod, bit for bit, over f32 pairs of every magnitude
// (subnormal to max, so exponent differences up to 276), equal and
// near-equal magnitudes, exact multiples, both signs, zeros, infinities and
// NaNs.
func TestFmodF32MatchesMathMod(t *testing.T) {
	rng := rand.New(rand.NewSource(21))
	specials := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 3, 0.1, math.MaxFloat32, -math.MaxFloat32,
		math.SmallestNonzeroFloat32, 0x1p-126, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-40}
	val := func() float32 {
		switch rng.Intn(5) {
		case 0:
			return specials[rng.Intn(len(specials))]
		case 1:
			return float32(rng.Intn(200) - 100)
		case 2:
			return float32(rng.NormFloat64())
		}
		for {
			if v := math.Float32frombits(rng.Uint32()); !math.IsNaN(float64(v)) {
				return v
			}
		}
	}
	for i := 0; i < 2000000; i++ {
		a, b := val(), val()
		switch rng.Intn(6) {
		case 0:
			b = a * float32(rng.Intn(5)+1) / float32(rng.Intn(7)+1)
		case 1:
			a = b * float32(rng.Intn(1<<20))
		case 2:
			b = math.Nextafter32(a, 0)
		}
		got := float32(fmodF32(float64(a), float64(b)))
		want := float32(math.Mod(float64(a), float64(b)))
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("fmod(%v (%#x), %v (%#x)) = %v (%#x), math.Mod %v (%#x)", a, math.Float32bits(a), b,
				math.Float32bits(b), got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
}

// remainderRawF32 (vector groups and the inline scalar case) against
// subnormalPath's remainder, one element at a time, bit for bit: pairs of
// close magnitude (the inline case: exponents 0 to 23 apart, quotients just
// under and at integers, both signs, subnormal dividends), groups of eight
// with one lane off the inline case (far exponents, zero, subnormal,
// infinite or NaN operands), and ragged tails.
func TestRemainderRawF32MatchesScalarPath(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	const n = 1 << 16
	a, b := make([]float32, n+5), make([]float32, n+5)
	odd := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.NaN()), 1e-40, -3e-39,
		math.MaxFloat32, math.SmallestNonzeroFloat32}
	for i := range a {
		y := float32(math.Ldexp(1+rng.Float64(), rng.Intn(200)-100))
		var x float32
		switch rng.Intn(4) {
		case 0:
			x = y * float32(rng.Intn(1<<24)) // exact multiples and their rounding
		case 1:
			x = math.Nextafter32(y*float32(rng.Intn(1000)+1), 0)
		case 2:
			x = float32(math.Ldexp(rng.Float64(), rng.Intn(24)+int(math.Ilogb(float64(y)))))
		default:
			x = float32(math.Ldexp(rng.Float64(), -126-rng.Intn(20))) // subnormal or tiny
		}
		if rng.Intn(2) == 0 {
			x = -x
		}
		if rng.Intn(2) == 0 {
			y = -y
		}
		a[i], b[i] = x, y
		if i%64 == 7 {
			if rng.Intn(2) == 0 {
				a[i] = odd[rng.Intn(len(odd))]
			} else {
				b[i] = odd[rng.Intn(len(odd))]
			}
		}
		if i%64 == 9 {
			a[i] = y * 0x1p30 // quotient past 2^24
		}
	}
	for _, m := range []int{n + 5, n, 13, 8, 3} {
		got := make([]float32, m)
		remainderRawF32(a[:m], b[:m], got)
		for i := range got {
			r, ok := subnormalPath("remainder", float64(a[i]), float64(b[i]), true)
			if want := float32(r); !ok || math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Fatalf("len %d: remainder(%v (%#x), %v (%#x)) = %#x, scalar path %#x", m, a[i], math.Float32bits(a[i]),
					b[i], math.Float32bits(b[i]), math.Float32bits(got[i]), math.Float32bits(want))
			}
		}
	}
}
