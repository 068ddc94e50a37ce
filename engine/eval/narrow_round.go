package eval

// Rounding f32 values to bf16 or f16 and back, in place on their bits, as
// dtype.EncodeF32 then dtype.DecodeF32 do (a narrow fused group's step after
// each op): bf16 rounds to nearest even and turns a NaN into the quiet NaN
// 0x7fc0 of its sign; f16 rounds to nearest even (subnormals at 2^-24
// steps, 65520 and up to Inf) and keeps a NaN's top ten payload bits (one
// forced when they are zero). The vector forms (narrow_round_simd_amd64.go)
// compute the same bits a vector at a time; the tests compare them with
// these and with the dtype converters.

import "math"

// roundBF16Bits rounds xs (f32 bits) to bf16 values, in place.
func roundBF16Bits(xs []uint32) {
	for i := roundBF16Vector(xs); i < len(xs); i++ {
		xs[i] = roundBF16One(xs[i])
	}
}

// roundF16Bits rounds xs (f32 bits) to f16 values, in place.
func roundF16Bits(xs []uint32) {
	for i := roundF16Vector(xs); i < len(xs); i++ {
		xs[i] = roundF16One(xs[i])
	}
}

func roundBF16One(b uint32) uint32 {
	if b&0x7fffffff > 0x7f800000 {
		return b&0x80000000 | 0x7fc00000
	}
	return (b + 0x7fff + (b>>16)&1) &^ 0xffff
}

func roundF16One(b uint32) uint32 {
	sign, abs := b&0x80000000, b&0x7fffffff
	switch {
	case abs > 0x7f800000:
		return sign | 0x7f800000 | max(abs&0x7fe000, 0x2000)
	case abs >= 0x477ff000:
		return sign | 0x7f800000
	case abs >= 0x38800000:
		// The f16 normals are the f32 values with 10 mantissa bits.
		return sign | (abs+0xfff+(abs>>13)&1)&^0x1fff
	}
	// Below 2^-14: multiples of 2^-24, the spacing of f32 in [0.5, 1), so
	// adding 0.5 rounds to one (to nearest even) and subtracting it is exact.
	v := math.Float32frombits(abs) + 0.5
	return sign | math.Float32bits(v-0.5)
}
