package eval

import (
	"math"
	"math/rand"
	"testing"
	"unsafe"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// cplxSample is an f32 part for the c64 tests: mostly ordinary values, with
// zeros of both signs, infinities, quiet NaNs with payloads, and magnitudes
// whose products overflow or fall below the smallest normal (flushed
// results); subnormal parts only when sub is set.
func cplxSample(rng *rand.Rand, sub bool) float32 {
	switch rng.Intn(40) {
	case 0:
		return float32(math.Copysign(0, rng.NormFloat64()))
	case 1:
		return float32(math.Inf(1 - 2*rng.Intn(2)))
	case 2:
		return math.Float32frombits(0x7fc00000 | uint32(rng.Intn(1<<22)) | uint32(rng.Intn(2))<<31)
	case 3, 4:
		return float32(rng.NormFloat64() * 1e-20)
	case 5:
		return float32(rng.NormFloat64() * 1e20)
	case 6:
		if sub {
			return math.Float32frombits(uint32(1+rng.Intn(1<<23-1)) | uint32(rng.Intn(2))<<31)
		}
	}
	return float32(rng.NormFloat64())
}

func cplxTensor(rng *rand.Rand, n int, sub bool) *tensor.Tensor {
	t := tensor.New(dtype.C64, []int64{int64(n)})
	for i := range floatsOfC64(t.C64()) {
		floatsOfC64(t.C64())[i] = cplxSample(rng, sub)
	}
	return t
}

func floatsOfC64(xs []complex64) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(xs))), 2*len(xs))
}

// The c64 product on all cores (complex_fast.go, vectors under the simd
// experiment) is binary's, bit for bit: NaN payloads, infinities, signed
// zeros, overflow and flushed subnormal results included, at every length
// around the vector and block sizes; operands with subnormal parts are left
// to binary.
func TestMultiplyC64FastMatchesBinary(t *testing.T) {
	rng := rand.New(rand.NewSource(64))
	for _, n := range []int{1, 15, 16, 17, 33, 100, 2047, 2048, 2049, 5000, 70001} {
		for _, sub := range []bool{false, true} {
			a, b := cplxTensor(rng, n, sub), cplxTensor(rng, n, false)
			got := multiplyC64Fast(nil, a, b)
			dirty := !complexCleanAll(a.C64())
			if (got == nil) != dirty {
				t.Fatalf("n=%d: fast path taken %v with subnormal operands %v", n, got != nil, dirty)
			}
			if got == nil {
				continue
			}
			want, err := binary("multiply", a, b)
			if err != nil {
				t.Fatal(err)
			}
			g, w := floatsOfC64(got.C64()), floatsOfC64(want.C64())
			for i := range g {
				if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
					t.Fatalf("n=%d element %d part %d: %#x, binary %#x (a=%v b=%v)", n, i/2, i%2,
						math.Float32bits(g[i]), math.Float32bits(w[i]), a.C64()[i/2], b.C64()[i/2])
				}
			}
		}
	}
}

// complex(re, im) on all cores is the old loop's, bit for bit.
func TestComplexF32FastMatchesLoop(t *testing.T) {
	rng := rand.New(rand.NewSource(65))
	in := &hlo.Instruction{Opcode: "complex"}
	for _, n := range []int{1, 15, 16, 17, 100, 4099, 70001} {
		re, im := tensor.New(dtype.F32, []int64{int64(n)}), tensor.New(dtype.F32, []int64{int64(n)})
		for i := range re.F32() {
			re.F32()[i], im.F32()[i] = cplxSample(rng, true), cplxSample(rng, true)
		}
		got, err := evalComplex(nil, in, []Value{ArrayValue(re), ArrayValue(im)})
		if err != nil {
			t.Fatal(err)
		}
		complexFastDisabled = true
		want, err := evalComplex(nil, in, []Value{ArrayValue(re), ArrayValue(im)})
		complexFastDisabled = false
		if err != nil {
			t.Fatal(err)
		}
		if string(got.T.Data) != string(want.T.Data) {
			t.Fatalf("n=%d: complex() differs from the loop", n)
		}
	}
}
