package dtype

// Scalar and bulk conversions between every float/int element type and
// float32/float64, bit-exact with ml_dtypes (round-to-nearest-even, each
// format's own overflow rule: Inf, NaN or saturation).
//
// Bits are the element's raw storage bits, zero-extended into a uint64 (for
// sub-byte types, the low Bits() bits of the stored byte; higher bits ignored).

// ToF32 decodes one element of type t to float32 (exact for every type narrower than f32).
func ToF32(t Type, bits uint64) float32 { panic("dtype.ToF32: not implemented yet") }

// FromF32 encodes f into type t with t's rounding and overflow rules.
func FromF32(t Type, f float32) uint64 { panic("dtype.FromF32: not implemented yet") }

// ToF64 decodes one element of type t to float64.
func ToF64(t Type, bits uint64) float64 { panic("dtype.ToF64: not implemented yet") }

// FromF64 encodes f into type t, rounding once directly from float64 (as ml_dtypes does).
func FromF64(t Type, f float64) uint64 { panic("dtype.FromF64: not implemented yet") }

// DecodeF32 decodes len(dst) elements of float type t stored in src.
func DecodeF32(t Type, src []byte, dst []float32) { panic("dtype.DecodeF32: not implemented yet") }

// EncodeF32 encodes src into len(src) elements of float type t stored in dst.
func EncodeF32(t Type, src []float32, dst []byte) { panic("dtype.EncodeF32: not implemented yet") }
