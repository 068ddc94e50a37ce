package dtype

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bulkInputs mixes random bit patterns with special values.
func bulkInputs(n int) []float32 {
	r := rand.New(rand.NewPCG(1, 2))
	xs := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.Float32frombits(0xff800001), 1, -1, 0.5, 448, 65504, 1e-40}
	for len(xs) < n {
		if r.IntN(2) == 0 {
			xs = append(xs, math.Float32frombits(r.Uint32()))
		} else {
			xs = append(xs, float32(r.NormFloat64()*math.Exp2(float64(r.IntN(40)-20))))
		}
	}
	return xs
}

func sameBits32(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }

// TestBulkMatchesScalar checks that the table-driven and specialized bulk
// paths agree with the scalar conversions for every real type.
func TestBulkMatchesScalar(t *testing.T) {
	xs := bulkInputs(20000)
	xs64 := make([]float64, len(xs))
	for i, x := range xs {
		xs64[i] = float64(x) * (1 + 0x1p-30) // off the f32 grid
	}
	for _, ty := range All() {
		if ty.IsComplex() {
			continue
		}
		size := ty.Size()
		enc := make([]byte, len(xs)*size)
		EncodeF32(ty, xs, enc)
		dec := make([]float32, len(xs))
		DecodeF32(ty, enc, dec)
		dec64 := make([]float64, len(xs))
		DecodeF64(ty, enc, dec64)
		for i, x := range xs {
			var bits uint64
			for k := size - 1; k >= 0; k-- {
				bits = bits<<8 | uint64(enc[i*size+k])
			}
			if want := FromF32(ty, x); bits != want {
				t.Fatalf("%v: EncodeF32[%d] (%g) = %#x, FromF32 %#x", ty, i, x, bits, want)
			}
			if want := ToF32(ty, bits); !sameBits32(dec[i], want) {
				t.Fatalf("%v: DecodeF32[%d] (%#x) = %g, ToF32 %g", ty, i, bits, dec[i], want)
			}
			if want := ToF64(ty, bits); math.Float64bits(dec64[i]) != math.Float64bits(want) {
				t.Fatalf("%v: DecodeF64[%d] (%#x) = %g, ToF64 %g", ty, i, bits, dec64[i], want)
			}
		}
		EncodeF64(ty, xs64, enc)
		for i, x := range xs64 {
			var bits uint64
			for k := size - 1; k >= 0; k-- {
				bits = bits<<8 | uint64(enc[i*size+k])
			}
			if want := FromF64(ty, x); bits != want {
				t.Fatalf("%v: EncodeF64[%d] (%g) = %#x, FromF64 %#x", ty, i, x, bits, want)
			}
		}
	}
}

// TestSubByteHighBitsIgnored: sub-byte elements live in the low bits of a
// byte; whatever sits above them must not change the value.
func TestSubByteHighBitsIgnored(t *testing.T) {
	for _, ty := range All() {
		if !ty.IsSubByte() {
			continue
		}
		low := uint64(1)<<ty.Bits() - 1
		for b := range uint64(256) {
			if !sameBits32(ToF32(ty, b), ToF32(ty, b&low)) {
				t.Errorf("%v: byte %#x decodes unlike %#x", ty, b, b&low)
			}
		}
		for _, x := range bulkInputs(2000) {
			if got := FromF32(ty, x); got&^low != 0 {
				t.Errorf("%v: FromF32(%g) = %#x sets bits above the low %d", ty, x, got, ty.Bits())
			}
		}
	}
}

func benchEncode(b *testing.B, ty Type) {
	xs := bulkInputs(1 << 16)
	dst := make([]byte, len(xs)*ty.Size())
	b.SetBytes(int64(len(xs) * 4))
	for b.Loop() {
		EncodeF32(ty, xs, dst)
	}
}

func benchDecode(b *testing.B, ty Type) {
	xs := bulkInputs(1 << 16)
	src := make([]byte, len(xs)*ty.Size())
	EncodeF32(ty, xs, src)
	dst := make([]float32, len(xs))
	b.SetBytes(int64(len(xs) * 4))
	for b.Loop() {
		DecodeF32(ty, src, dst)
	}
}

func BenchmarkEncodeF32BF16(b *testing.B)     { benchEncode(b, BF16) }
func BenchmarkEncodeF32F16(b *testing.B)      { benchEncode(b, F16) }
func BenchmarkEncodeF32F8E4M3FN(b *testing.B) { benchEncode(b, F8E4M3FN) }
func BenchmarkDecodeF32BF16(b *testing.B)     { benchDecode(b, BF16) }
func BenchmarkDecodeF32F16(b *testing.B)      { benchDecode(b, F16) }
func BenchmarkDecodeF32F8E4M3FN(b *testing.B) { benchDecode(b, F8E4M3FN) }
