package eval

import (
	"math"
	"math/rand"
	"testing"
)

// scalarBinaryF32 is binaryFloat's scalar loop, kept here as the reference.
func scalarBinaryF32(op string, a, b, o []float32) {
	for i := range o {
		switch op {
		case "add":
			o[i] = a[i] + b[i]
		case "subtract":
			o[i] = a[i] - b[i]
		case "multiply":
			o[i] = a[i] * b[i]
		case "divide":
			o[i] = a[i] / b[i]
		}
	}
}

// The vector f32 arithmetic (GOEXPERIMENT=simd) gives the scalar loop's bits,
// NaN payloads included when both operands are NaN, at every length, with
// every vector width this CPU runs.
func TestBinaryF32VectorMatchesScalar(t *testing.T) {
	saved := binaryLanes
	defer func() { binaryLanes = saved }()
	for _, lanes := range binaryLaneWidths() {
		binaryLanes = lanes
		testBinaryF32VectorMatchesScalar(t)
	}
}

func testBinaryF32VectorMatchesScalar(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	val := func() float32 {
		switch rng.Intn(8) {
		case 0:
			return math.Float32frombits(0x7f800001 | rng.Uint32()&0x803fffff) // NaN, random payload and sign
		case 1:
			return math.Float32frombits(rng.Uint32() & 0x807fffff) // subnormal or zero
		case 2:
			return float32(math.Inf(rng.Intn(2)*2 - 1))
		}
		return float32(rng.NormFloat64() * math.Pow(10, float64(rng.Intn(60)-30)))
	}
	for _, op := range []string{"add", "subtract", "multiply", "divide"} {
		for n := 0; n < 70; n++ {
			a, b := make([]float32, n), make([]float32, n)
			for i := range a {
				a[i], b[i] = val(), val()
			}
			want, got := make([]float32, n), make([]float32, n)
			scalarBinaryF32(op, a, b, want)
			if !binaryFloat(op, a, b, got) {
				t.Fatal(op)
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s(%#x, %#x) = %#x, scalar %#x", op, math.Float32bits(a[i]), math.Float32bits(b[i]),
						math.Float32bits(got[i]), math.Float32bits(want[i]))
				}
			}
		}
	}
}

// The vector maximum/minimum folds give maxFloat/minFloat's bits on NaNs of
// either side, ±0 ties in every order, infinities and equal values.
func TestFoldRunMinMaxMatchesScalar(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	pool := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 2.5, float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(0x7fc00001), math.Float32frombits(0xffc12345), math.Float32frombits(0x00000003)}
	for _, op := range []string{"maximum", "minimum"} {
		for n := 0; n < 70; n++ {
			acc, xs := make([]float32, n), make([]float32, n)
			for i := range acc {
				acc[i], xs[i] = pool[rng.Intn(len(pool))], pool[rng.Intn(len(pool))]
			}
			want := append([]float32(nil), acc...)
			for i := range want {
				if op == "maximum" {
					want[i] = maxFloat(want[i], xs[i])
				} else {
					want[i] = minFloat(want[i], xs[i])
				}
			}
			foldRun(op, acc, xs)
			for i := range want {
				if math.Float32bits(acc[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s element %d of %d: got %#x, want %#x", op, i, n, math.Float32bits(acc[i]), math.Float32bits(want[i]))
				}
			}
		}
	}
}

// The vector abs and negate of the blocked evaluation flip or clear the
// sign bit alone, NaN payloads included, with every vector width.
func TestSignBitF32Vector(t *testing.T) {
	saved := binaryLanes
	defer func() { binaryLanes = saved }()
	rng := rand.New(rand.NewSource(12))
	for _, lanes := range binaryLaneWidths() {
		binaryLanes = lanes
		for n := 0; n < 70; n++ {
			x := make([]float32, n)
			for i := range x {
				x[i] = math.Float32frombits(rng.Uint32())
			}
			for _, abs := range []bool{false, true} {
				o := make([]float32, n)
				k := signBitF32Vector(abs, x, o)
				if lanes != 0 && k != n/lanes*lanes || lanes == 0 && k != 0 {
					t.Fatalf("lanes %d n %d: %d elements", lanes, n, k)
				}
				for i := range k {
					want := math.Float32bits(x[i]) ^ 1<<31
					if abs {
						want = math.Float32bits(x[i]) &^ (1 << 31)
					}
					if math.Float32bits(o[i]) != want {
						t.Fatalf("lanes %d abs %v: %#x -> %#x, want %#x", lanes, abs, math.Float32bits(x[i]), math.Float32bits(o[i]), want)
					}
				}
			}
		}
	}
}

// The vector f32 fused multiply-add gives fma32's bits, NaN payloads
// included, with every vector width: ties, subnormals, infinities, NaNs.
func TestFMAF32VectorMatchesFMA32(t *testing.T) {
	saved := binaryLanes
	defer func() { binaryLanes = saved }()
	rng := rand.New(rand.NewSource(12))
	val := func() float32 {
		switch rng.Intn(10) {
		case 0:
			return math.Float32frombits(0x7f800001 | rng.Uint32()&0x803fffff) // NaN
		case 1:
			return math.Float32frombits(rng.Uint32() & 0x807fffff) // subnormal or zero
		case 2:
			return float32(math.Inf(rng.Intn(2)*2 - 1))
		case 3:
			return float32(rng.Intn(64) - 32) // small integers: exact products, ties
		}
		return float32(rng.NormFloat64() * math.Pow(2, float64(rng.Intn(60)-30)))
	}
	for _, lanes := range binaryLaneWidths() {
		binaryLanes = lanes
		for n := 0; n < 200; n++ {
			a, b, c, o := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
			for i := range a {
				a[i], b[i], c[i] = val(), val(), val()
				if rng.Intn(4) == 0 { // c near -a*b: cancellation
					c[i] = -float32(float64(a[i]) * float64(b[i]))
				}
			}
			k := fmaF32Vector(a, b, c, o)
			for i := range k {
				if got, want := math.Float32bits(o[i]), math.Float32bits(fma32(a[i], b[i], c[i])); got != want {
					t.Fatalf("lanes %d: fma(%#x, %#x, %#x) = %#x, fma32 %#x", lanes, math.Float32bits(a[i]),
						math.Float32bits(b[i]), math.Float32bits(c[i]), got, want)
				}
			}
		}
	}
}

// The one-pass compute-and-flush of the blocked binary ops gives binaryFloat
// then ftz, bit for bit, with every vector width: results that land in the
// subnormal range (both signs), at its edges, NaNs and infinities.
func TestBinaryFTZF32VectorMatchesFlushAfter(t *testing.T) {
	saved := binaryLanes
	defer func() { binaryLanes = saved }()
	rng := rand.New(rand.NewSource(12))
	val := func() float32 {
		switch rng.Intn(10) {
		case 0:
			return math.Float32frombits(0x7f800001 | rng.Uint32()&0x803fffff)
		case 1:
			return math.Float32frombits(rng.Uint32()&0x80ffffff | 0x00800000) // near the smallest normal
		case 2:
			return float32(math.Inf(rng.Intn(2)*2 - 1))
		case 3:
			// Scales that move a value near the smallest normal just across
			// it, either way.
			return []float32{1, -1, 0.5, -0.5, 2, 0.75, 1.5}[rng.Intn(7)]
		case 4:
			return math.Float32frombits(rng.Uint32() & 0x807fffff) // subnormal or zero
		}
		return float32(rng.NormFloat64() * math.Pow(2, float64(rng.Intn(140)-70)))
	}
	for _, lanes := range binaryLaneWidths() {
		binaryLanes = lanes
		for _, op := range []string{"add", "subtract", "multiply", "divide"} {
			for n := 0; n < 100; n++ {
				a, b := make([]float32, n), make([]float32, n)
				for i := range a {
					a[i], b[i] = val(), val()
				}
				want, got := make([]float32, n), make([]float32, n)
				binaryFloat(op, a, b, want)
				ftz(want)
				k := binaryFTZF32Vector(op, a, b, got)
				for i := range k {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("lanes %d: %s(%#x, %#x) = %#x, want %#x", lanes, op, math.Float32bits(a[i]),
							math.Float32bits(b[i]), math.Float32bits(got[i]), math.Float32bits(want[i]))
					}
				}
			}
		}
	}
}

// Vector maximum and minimum of two operands give the scalar loop's bits
// (binaryFloat with no vector width; also maxFloat/minFloat), with and
// without the flush of subnormal results: NaNs of either side and payload,
// ±0 ties in every order, subnormals, infinities, every length and width.
func TestMinMaxF32VectorMatchesScalar(t *testing.T) {
	saved := binaryLanes
	defer func() { binaryLanes = saved }()
	rng := rand.New(rand.NewSource(13))
	pool := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 2.5, float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(0x7fc00001), math.Float32frombits(0xffc12345), math.Float32frombits(0x00000003),
		math.Float32frombits(0x80400000), math.Float32frombits(0x00800000)}
	for _, lanes := range binaryLaneWidths() {
		for _, op := range []string{"maximum", "minimum"} {
			for n := 0; n < 70; n++ {
				a, b := make([]float32, n), make([]float32, n)
				for i := range a {
					a[i], b[i] = pool[rng.Intn(len(pool))], pool[rng.Intn(len(pool))]
				}
				want := make([]float32, n)
				binaryLanes = 0
				if !binaryFloat(op, a, b, want) {
					t.Fatal(op)
				}
				for i := range want {
					ref := maxFloat(a[i], b[i])
					if op == "minimum" {
						ref = minFloat(a[i], b[i])
					}
					if math.Float32bits(ref) != math.Float32bits(want[i]) {
						t.Fatalf("%s(%#x, %#x): scalar loop %#x, %sFloat %#x", op, math.Float32bits(a[i]), math.Float32bits(b[i]),
							math.Float32bits(want[i]), op[:3], math.Float32bits(ref))
					}
				}
				flushed := append([]float32(nil), want...)
				ftz(flushed)
				binaryLanes = lanes
				for _, flush := range []bool{false, true} {
					got := make([]float32, n)
					k := minMaxF32Vector(op, a, b, got, flush)
					if lanes > 0 && k != n&^(lanes-1) {
						t.Fatalf("lanes %d: %d of %d elements done", lanes, k, n)
					}
					w := want
					if flush {
						w = flushed
					}
					for i := range k {
						if math.Float32bits(got[i]) != math.Float32bits(w[i]) {
							t.Fatalf("lanes %d flush %v: %s(%#x, %#x) = %#x, want %#x", lanes, flush, op, math.Float32bits(a[i]),
								math.Float32bits(b[i]), math.Float32bits(got[i]), math.Float32bits(w[i]))
						}
					}
				}
			}
		}
	}
}
