package dtype

import (
	"math"
	"math/bits"
)

// special says how a small float format spends its top encodings. The names
// follow ml_dtypes: "fn" = finite (no Inf), "uz" = unsigned zero (no -0).
type special uint8

const (
	// specIEEE: the all-ones exponent holds ±Inf (mantissa 0) and NaNs.
	specIEEE special = iota
	// specFN: no Inf; only S.1111.111 (all exponent and mantissa bits) is NaN;
	// overflow gives NaN with the input's sign.
	specFN
	// specFNUZ: no Inf, no -0; 0x80 is the only NaN; overflow gives NaN.
	specFNUZ
	// specSat: no Inf, no NaN (f4e2m1fn); overflow saturates to ±max, and a NaN
	// input becomes ml_dtypes' quiet_NaN stand-in 0b1000 (-0), negated for -NaN.
	specSat
	// specE8M0: unsigned power of two, no zero; 0xFF is NaN. Zero, negative
	// and overflowing inputs all give NaN; values up to 2^-127 give 2^-127.
	specE8M0
)

// format parametrizes one small binary float format.
type format struct {
	ebits, mbits uint
	bias         int
	spec         special

	signBit   uint64 // 0 for unsigned formats
	magMask   uint64 // exponent and mantissa bits
	maxFinite uint64 // magnitude bits of the largest finite value
	nanBits   uint64 // encoding of +NaN (a NaN with sign clear)
	infBits   uint64 // magnitude bits of Inf (specIEEE only)
	emin      int    // unbiased exponent of the smallest normal value (1 - bias)
}

func newFormat(ebits, mbits uint, bias int, spec special) *format {
	f := &format{ebits: ebits, mbits: mbits, bias: bias, spec: spec}
	f.magMask = 1<<(ebits+mbits) - 1
	if spec != specE8M0 {
		f.signBit = 1 << (ebits + mbits)
	}
	emax := uint64(1)<<ebits - 1
	f.emin = 1 - bias
	switch spec {
	case specIEEE:
		f.infBits = emax << mbits
		f.maxFinite = f.infBits - 1
		f.nanBits = f.infBits | 1<<(mbits-1)
	case specFN:
		f.maxFinite = f.magMask - 1
		f.nanBits = f.magMask
	case specFNUZ:
		f.maxFinite = f.magMask
		f.nanBits = f.signBit
	case specSat:
		f.maxFinite = f.magMask
		f.nanBits = f.signBit
	case specE8M0:
		f.maxFinite = f.magMask - 1
		f.nanBits = f.magMask
	}
	return f
}

// The small float formats, by type. f16 is here for its f64 path; its f32
// paths and bf16 have dedicated code below.
var (
	fmtF16           = newFormat(5, 10, 15, specIEEE)
	fmtF8E5M2        = newFormat(5, 2, 15, specIEEE)
	fmtF8E4M3        = newFormat(4, 3, 7, specIEEE)
	fmtF8E3M4        = newFormat(3, 4, 3, specIEEE)
	fmtF8E4M3FN      = newFormat(4, 3, 7, specFN)
	fmtF8E4M3B11FNUZ = newFormat(4, 3, 11, specFNUZ)
	fmtF8E5M2FNUZ    = newFormat(5, 2, 16, specFNUZ)
	fmtF8E4M3FNUZ    = newFormat(4, 3, 8, specFNUZ)
	fmtF8E8M0FNU     = newFormat(8, 0, 127, specE8M0)
	fmtF4E2M1FN      = newFormat(2, 1, 1, specSat)
)

// smallFormat returns the format of an 8-bit or 4-bit float type, or nil.
func smallFormat(t Type) *format {
	switch t {
	case F8E5M2:
		return fmtF8E5M2
	case F8E4M3:
		return fmtF8E4M3
	case F8E3M4:
		return fmtF8E3M4
	case F8E4M3FN:
		return fmtF8E4M3FN
	case F8E4M3B11FNUZ:
		return fmtF8E4M3B11FNUZ
	case F8E5M2FNUZ:
		return fmtF8E5M2FNUZ
	case F8E4M3FNUZ:
		return fmtF8E4M3FNUZ
	case F8E8M0FNU:
		return fmtF8E8M0FNU
	case F4E2M1FN:
		return fmtF4E2M1FN
	}
	return nil
}

// nan returns the encoding a NaN input converts to.
func (f *format) nan(neg bool) uint64 {
	switch f.spec {
	case specIEEE, specFN:
		if neg {
			return f.nanBits | f.signBit
		}
	case specSat:
		if neg {
			return f.nanBits ^ f.signBit
		}
	}
	return f.nanBits
}

// overflow returns the encoding of a value too large for the format.
func (f *format) overflow(neg bool) uint64 {
	var sign uint64
	if neg {
		sign = f.signBit
	}
	switch f.spec {
	case specIEEE:
		return f.infBits | sign
	case specFN:
		return f.nanBits | sign
	case specSat:
		return f.maxFinite | sign
	}
	return f.nanBits // fnuz, e8m0: the only NaN
}

// roundShift returns x >> s rounded to nearest, ties to even (1 <= s < 64).
func roundShift(x uint64, s uint) uint64 {
	q := x >> s
	rem := x & (1<<s - 1)
	half := uint64(1) << (s - 1)
	if rem > half || (rem == half && q&1 != 0) {
		q++
	}
	return q
}

// fromF64 encodes x with a single rounding (round to nearest even), the way
// ml_dtypes' C++ static_cast from double does.
func (f *format) fromF64(x float64) uint64 {
	b := math.Float64bits(x)
	neg := b>>63 != 0
	abs := b &^ (1 << 63)
	if abs > 0x7ff0000000000000 {
		return f.nan(neg)
	}
	if f.spec == specE8M0 && (neg || abs == 0) {
		return f.nanBits
	}
	if abs == 0x7ff0000000000000 {
		return f.overflow(neg)
	}
	var sign uint64
	if neg {
		sign = f.signBit
	}
	if abs == 0 {
		if f.spec == specFNUZ {
			return 0
		}
		return sign
	}
	// value = sig * 2^(e-52), sig in [2^52, 2^53).
	exp := int(abs >> 52)
	sig := abs & (1<<52 - 1)
	if exp == 0 {
		lz := bits.LeadingZeros64(sig) - 11
		sig <<= uint(lz)
		exp = 1 - lz
	} else {
		sig |= 1 << 52
	}
	e := exp - 1023
	shift := 52 - int(f.mbits)
	normal := e >= f.emin
	if !normal {
		// e8m0 has no subnormals, yet ml_dtypes rounds its lowest binade
		// [2^-127, 2^-126) as if it were one: in units of 2^-126, so
		// everything above 2^-127 goes up to 2^-126 and the rest gives
		// encoding 0 (2^-127, as there is no zero). The generic path does
		// exactly that with emin = 1 - bias.
		shift += f.emin - e
		if shift > 54 {
			shift = 54 // below half the smallest subnormal: rounds to 0
		}
	}
	q := roundShift(sig, uint(shift))
	var mag uint64
	if normal {
		// q holds the implicit bit; a rounding carry (q == 2^(mbits+1))
		// flows into the exponent through the addition.
		mag = uint64(e+f.bias)<<f.mbits + q - 1<<f.mbits
	} else {
		mag = q // q == 2^mbits is exactly the smallest normal's encoding
	}
	if mag > f.maxFinite {
		return f.overflow(neg)
	}
	if mag == 0 && f.spec == specFNUZ {
		return 0
	}
	return sign | mag
}

// decode classifies an encoding: its value (exact in float64), or NaN.
func (f *format) decode(b uint64) (v float64, isNaN bool) {
	b &= f.signBit | f.magMask
	mag := b & f.magMask
	neg := b&f.signBit != 0
	e := int(mag >> f.mbits)
	m := mag & (1<<f.mbits - 1)
	switch f.spec {
	case specIEEE:
		if mag >= f.infBits {
			if mag == f.infBits {
				return math.Inf(sign1(neg)), false
			}
			return 0, true
		}
	case specFN:
		if mag == f.magMask {
			return 0, true
		}
	case specFNUZ:
		if b == f.signBit {
			return 0, true
		}
	case specE8M0:
		if mag == f.magMask {
			return 0, true
		}
		return math.Ldexp(1, e-f.bias), false
	}
	if e == 0 {
		v = math.Ldexp(float64(m), f.emin-int(f.mbits))
	} else {
		v = math.Ldexp(float64(m|1<<f.mbits), e-f.bias-int(f.mbits))
	}
	if neg {
		v = -v
	}
	return v, false
}

// nanNegative reports the sign ml_dtypes gives a decoded NaN encoding: the
// encoding's sign bit, except that the fnuz NaN 0x80 decodes as -NaN and
// e8m0's as +NaN.
func (f *format) nanNegative(b uint64) bool {
	switch f.spec {
	case specFNUZ:
		return true
	case specE8M0:
		return false
	}
	return b&f.signBit != 0
}

func sign1(neg bool) int {
	if neg {
		return -1
	}
	return 1
}

// Canonical quiet NaNs, as C++ produces them (std::numeric_limits quiet_NaN).
const (
	qnan32 = 0x7fc00000
	qnan64 = 0x7ff8000000000000
)

func (f *format) toF32(b uint64) float32 {
	v, isNaN := f.decode(b)
	if isNaN {
		if f.nanNegative(b) {
			return math.Float32frombits(qnan32 | 1<<31)
		}
		return math.Float32frombits(qnan32)
	}
	return float32(v)
}

func (f *format) toF64(b uint64) float64 {
	v, isNaN := f.decode(b)
	if isNaN {
		if f.nanNegative(b) {
			return math.Float64frombits(qnan64 | 1<<63)
		}
		return math.Float64frombits(qnan64)
	}
	return v
}

// ---- bf16: the top half of an f32 (Eigen / ml_dtypes semantics) ----

func bf16ToF32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// f32ToBF16 rounds to nearest even, keeps subnormals, and turns every NaN into
// the canonical quiet NaN with the input's sign, as ml_dtypes does.
func f32ToBF16(x float32) uint16 {
	b := math.Float32bits(x)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16)&0x8000 | 0x7fc0
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// f32ToF64 widens like x86 CVTSS2SD (what C++ and numpy do): NaNs keep their
// sign and payload and become quiet.
func f32ToF64(x float32) float64 {
	b := math.Float32bits(x)
	if b&0x7fffffff > 0x7f800000 {
		return math.Float64frombits(uint64(b>>31)<<63 | 0x7ff8000000000000 | uint64(b&0x7fffff)<<29)
	}
	return float64(x)
}

// ---- f16: IEEE binary16 with numpy's NaN rules (payloads kept, never quietened) ----

func f16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	e := uint32(h>>10) & 0x1f
	m := uint32(h & 0x3ff)
	switch {
	case e == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | m<<13)
	case e != 0:
		return math.Float32frombits(sign | (e+112)<<23 | m<<13)
	}
	v := float32(m) * (1.0 / (1 << 24)) // subnormal: m * 2^-24, exact
	if sign != 0 {
		v = -v
	}
	return v
}

func f16ToF64(h uint16) float64 {
	if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
		return math.Float64frombits(uint64(h&0x8000)<<48 | 0x7ff0000000000000 | uint64(h&0x3ff)<<42)
	}
	return float64(f16ToF32(h))
}

// f16NaN keeps the top payload bits, forcing a nonzero payload so the result
// stays a NaN (numpy's npy_floatbits_to_halfbits rule).
func f16NaN(neg bool, payload uint64) uint16 {
	p := uint16(payload & 0x3ff)
	if p == 0 {
		p = 1
	}
	if neg {
		return 0xfc00 | p
	}
	return 0x7c00 | p
}

func f32ToF16(x float32) uint16 {
	b := math.Float32bits(x)
	sign := uint16(b>>16) & 0x8000
	abs := b & 0x7fffffff
	switch {
	case abs > 0x7f800000:
		return f16NaN(sign != 0, uint64(abs&0x7fffff)>>13)
	case abs >= 0x477ff000: // >= 65520, the midpoint above the largest f16 (odd mantissa): Inf
		return sign | 0x7c00
	case abs >= 0x38800000: // >= 2^-14: normal; rebias the exponent and round
		r := abs - 112<<23
		r += 0xfff + (r>>13)&1
		return sign | uint16(r>>13)
	case abs <= 0x33000000: // <= 2^-25: rounds to zero (2^-25 is a tie, to even 0)
		return sign
	}
	e := abs >> 23
	m := abs&0x7fffff | 0x800000
	return sign | uint16(roundShift(uint64(m), uint(126-e)))
}

func f64ToF16(x float64) uint16 {
	b := math.Float64bits(x)
	if b&(1<<63-1) > 0x7ff0000000000000 {
		return f16NaN(b>>63 != 0, (b&(1<<52-1))>>42)
	}
	// Rounding to f32 to odd (toward zero, the last bit set when inexact)
	// keeps enough of x that f32ToF16's rounding to nearest even is x's own:
	// f32 has 13 more bits than f16, two are enough.
	r := float32(x)
	if float64(r) != x && b&(1<<63-1) != 0x7ff0000000000000 {
		rb := math.Float32bits(r)
		if math.Abs(float64(r)) > math.Abs(x) {
			rb-- // the f32 next toward zero (sign-magnitude bits)
		}
		r = math.Float32frombits(rb | 1)
	}
	return f32ToF16(r)
}
