package dtype

// Scalar and bulk conversions between every real element type and
// float32/float64, bit-exact with ml_dtypes 0.6.0 (and numpy for f16):
// round to nearest even, and each format's own rule for overflow (Inf, NaN or
// saturation), NaN inputs and negative zero (see convert_float.go).
//
// Bits are the element's raw storage bits, zero-extended into a uint64 (for
// sub-byte types, the low Bits() bits of the stored byte; higher bits ignored).
//
// Integer targets follow XLA's float->int convert: truncate toward zero,
// saturate out-of-range values, NaN -> 0. pred decodes as 0/1 and encodes any
// nonzero (or NaN) value as 1.
//
// Complex and non-array types are not real types: passing one is a programming
// error and panics.

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
)

// ToF32 decodes one element of type t to float32 (exact for every type narrower than f32).
func ToF32(t Type, bits uint64) float32 {
	switch t {
	case F32:
		return math.Float32frombits(uint32(bits))
	case F64:
		return float32(math.Float64frombits(bits))
	case BF16:
		return bf16ToF32(uint16(bits))
	case F16:
		return f16ToF32(uint16(bits))
	}
	if f := smallFormat(t); f != nil {
		return f.toF32(bits)
	}
	return intToF32(t, bits)
}

// ToF64 decodes one element of type t to float64 (exact for every real type).
func ToF64(t Type, bits uint64) float64 {
	switch t {
	case F32:
		return f32ToF64(math.Float32frombits(uint32(bits)))
	case F64:
		return math.Float64frombits(bits)
	case BF16:
		// ml_dtypes widens bf16 through f32; NaNs are quietened on the way.
		return f32ToF64(bf16ToF32(uint16(bits)))
	case F16:
		return f16ToF64(uint16(bits))
	}
	if f := smallFormat(t); f != nil {
		return f.toF64(bits)
	}
	return intToF64(t, bits)
}

// FromF32 encodes f into type t with t's rounding and overflow rules.
func FromF32(t Type, f float32) uint64 {
	switch t {
	case F32:
		return uint64(math.Float32bits(f))
	case F64:
		return math.Float64bits(f32ToF64(f))
	case BF16:
		return uint64(f32ToBF16(f))
	case F16:
		return uint64(f32ToF16(f))
	}
	if sf := smallFormat(t); sf != nil {
		// Every f32 is exact in f64, so this is a single rounding.
		return sf.fromF64(float64(f))
	}
	return floatToInt(t, float64(f))
}

// FromF64 encodes f into type t, rounding once directly from float64, as
// ml_dtypes' scalar constructors (C++ static_cast<T>(double)) and numpy's
// float64->float16 cast do. Two exceptions follow the reference:
//   - bf16 rounds through f32 (Eigen's bfloat16(double) does), so it can round twice;
//   - numpy's array cast float64 -> ml_dtypes float8/float4 (arr.astype) also
//     goes through f32; callers who want that use FromF32(t, float32(f)).
func FromF64(t Type, f float64) uint64 {
	switch t {
	case F32:
		return uint64(math.Float32bits(float32(f)))
	case F64:
		return math.Float64bits(f)
	case BF16:
		return uint64(f32ToBF16(float32(f)))
	case F16:
		return uint64(f64ToF16(f))
	}
	if sf := smallFormat(t); sf != nil {
		return sf.fromF64(f)
	}
	return floatToInt(t, f)
}

// DecodeInt returns the integer value of one element of an integer or pred
// type: signed types sign-extend from their logical width (s4 0x0F is -1),
// unsigned types are masked to it (u64 values above MaxInt64 wrap).
func DecodeInt(t Type, bits uint64) int64 {
	switch t.Kind() {
	case KindBool:
		if bits&0xff != 0 {
			return 1
		}
		return 0
	case KindSigned:
		s := 64 - uint(t.Bits())
		return int64(bits<<s) >> s
	case KindUnsigned:
		return int64(bits & widthMask(t))
	}
	panic(fmt.Sprintf("dtype.DecodeInt: %v is not an integer type", t))
}

// EncodeInt stores v in an integer type's storage bits, keeping the low
// Bits() bits (two's complement wrap; s4 -1 is 0x0F). pred stores v != 0.
func EncodeInt(t Type, v int64) uint64 {
	switch t.Kind() {
	case KindBool:
		if v != 0 {
			return 1
		}
		return 0
	case KindSigned, KindUnsigned:
		return uint64(v) & widthMask(t)
	}
	panic(fmt.Sprintf("dtype.EncodeInt: %v is not an integer type", t))
}

func widthMask(t Type) uint64 {
	if t.Bits() >= 64 {
		return math.MaxUint64
	}
	return 1<<uint(t.Bits()) - 1
}

func mustInteger(op string, t Type) {
	switch t.Kind() {
	case KindBool, KindSigned, KindUnsigned:
		return
	}
	panic(fmt.Sprintf("dtype.%s: %v is not a real element type", op, t))
}

func intToF32(t Type, bits uint64) float32 {
	mustInteger("ToF32", t)
	if t == U64 {
		return float32(bits)
	}
	return float32(DecodeInt(t, bits))
}

func intToF64(t Type, bits uint64) float64 {
	mustInteger("ToF64", t)
	if t == U64 {
		return float64(bits)
	}
	return float64(DecodeInt(t, bits))
}

// floatToInt is XLA's float->integer convert: truncate, saturate, NaN -> 0.
func floatToInt(t Type, x float64) uint64 {
	mustInteger("FromF32/FromF64", t)
	if t == Pred {
		if x != 0 || math.IsNaN(x) {
			return 1
		}
		return 0
	}
	if math.IsNaN(x) {
		return 0
	}
	x = math.Trunc(x)
	n := uint(t.Bits())
	if t.IsSigned() {
		lim := math.Ldexp(1, int(n)-1) // 2^(n-1), exact
		switch {
		case x >= lim:
			return EncodeInt(t, int64(1)<<(n-1)-1)
		case x < -lim:
			return EncodeInt(t, -1<<(n-1))
		}
		return EncodeInt(t, int64(x))
	}
	switch {
	case x <= 0:
		return 0
	case x >= math.Ldexp(1, int(n)):
		return widthMask(t)
	}
	return uint64(x)
}

// tables are the decode tables of every one-byte type, indexed by the stored
// byte (high bits of sub-byte types are ignored by construction). They are
// built on first use: package init order would otherwise run before the type
// table in dtype.go is filled.
type tables struct {
	f32 map[Type]*[256]float32
	f64 map[Type]*[256]float64
	f16 *[1 << 16]float32 // f16 decodes branch-free from 256 KiB, which stays in L2
}

var luts = sync.OnceValue(func() *tables {
	tb := &tables{f32: map[Type]*[256]float32{}, f64: map[Type]*[256]float64{}}
	for _, t := range All() {
		if t.Size() != 1 {
			continue
		}
		var a [256]float32
		var b [256]float64
		for i := range 256 {
			a[i] = ToF32(t, uint64(i))
			b[i] = ToF64(t, uint64(i))
		}
		tb.f32[t], tb.f64[t] = &a, &b
	}
	tb.f16 = new([1 << 16]float32)
	for i := range tb.f16 {
		tb.f16[i] = f16ToF32(uint16(i))
	}
	return tb
})

// DecodeF32 decodes len(dst) elements of real type t stored little-endian in
// src (which must hold at least len(dst)*t.Size() bytes).
func DecodeF32(t Type, src []byte, dst []float32) {
	switch t {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case BF16:
		for i := range dst {
			dst[i] = bf16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case F16:
		lut := luts().f16
		for i := range dst {
			dst[i] = lut[binary.LittleEndian.Uint16(src[2*i:])]
		}
	default:
		if lut := luts().f32[t]; lut != nil {
			src = src[:len(dst)]
			for i, b := range src {
				dst[i] = lut[b]
			}
			return
		}
		decodeWide(t, src, len(dst), func(i int, bits uint64) { dst[i] = ToF32(t, bits) })
	}
}

// DecodeF64 decodes len(dst) elements of real type t stored little-endian in src.
func DecodeF64(t Type, src []byte, dst []float64) {
	switch t {
	case F64:
		for i := range dst {
			dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:]))
		}
	case F16:
		src = src[:2*len(dst)]
		for i := range dst {
			dst[i] = f16ToF64(binary.LittleEndian.Uint16(src[2*i:]))
		}
	default:
		if lut := luts().f64[t]; lut != nil {
			src = src[:len(dst)]
			for i, b := range src {
				dst[i] = lut[b]
			}
			return
		}
		decodeWide(t, src, len(dst), func(i int, bits uint64) { dst[i] = ToF64(t, bits) })
	}
}

// decodeWide reads n elements of a 2-, 4- or 8-byte type and hands their bits to put.
func decodeWide(t Type, src []byte, n int, put func(i int, bits uint64)) {
	switch t.Size() {
	case 2:
		for i := range n {
			put(i, uint64(binary.LittleEndian.Uint16(src[2*i:])))
		}
	case 4:
		for i := range n {
			put(i, uint64(binary.LittleEndian.Uint32(src[4*i:])))
		}
	case 8:
		for i := range n {
			put(i, binary.LittleEndian.Uint64(src[8*i:]))
		}
	default:
		panic(fmt.Sprintf("dtype: %v is not a real element type", t))
	}
}

// storeBits writes the low t.Size() bytes of bits little-endian at dst[i*size:].
func storeBits(dst []byte, size, i int, bits uint64) {
	switch size {
	case 1:
		dst[i] = byte(bits)
	case 2:
		binary.LittleEndian.PutUint16(dst[2*i:], uint16(bits))
	case 4:
		binary.LittleEndian.PutUint32(dst[4*i:], uint32(bits))
	case 8:
		binary.LittleEndian.PutUint64(dst[8*i:], bits)
	}
}

// EncodeF32 encodes src into len(src) elements of real type t stored
// little-endian in dst (which must hold at least len(src)*t.Size() bytes).
func EncodeF32(t Type, src []float32, dst []byte) {
	switch t {
	case F32:
		for i, x := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(x))
		}
	case BF16:
		for i, x := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], f32ToBF16(x))
		}
	case F16:
		for i, x := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], f32ToF16(x))
		}
	default:
		if sf := smallFormat(t); sf != nil {
			dst = dst[:len(src)]
			for i, x := range src {
				dst[i] = byte(sf.fromF64(float64(x)))
			}
			return
		}
		size := t.Size()
		for i, x := range src {
			storeBits(dst, size, i, FromF32(t, x))
		}
	}
}

// EncodeF64 encodes src into len(src) elements of real type t stored
// little-endian in dst, with FromF64's rounding.
func EncodeF64(t Type, src []float64, dst []byte) {
	if t == F16 {
		dst = dst[:2*len(src)]
		for i, x := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], f64ToF16(x))
		}
		return
	}
	if sf := smallFormat(t); sf != nil {
		dst = dst[:len(src)]
		for i, x := range src {
			dst[i] = byte(sf.fromF64(x))
		}
		return
	}
	size := t.Size()
	for i, x := range src {
		storeBits(dst, size, i, FromF64(t, x))
	}
}
