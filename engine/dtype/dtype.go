// Package dtype describes XLA's element types (PrimitiveType in xla_data.proto):
// their proto numbers, HLO text names, numpy/ml_dtypes names and storage sizes,
// and converts every one of them to and from float32/float64 bit-exactly with
// ml_dtypes (see convert.go).
package dtype

import "fmt"

// Type is an XLA PrimitiveType; its value is the proto enum number.
type Type int32

// The numbers are XLA's (xla_data.proto), so a Type can be written into a proto as is.
const (
	Invalid       Type = 0
	Pred          Type = 1
	S8            Type = 2
	S16           Type = 3
	S32           Type = 4
	S64           Type = 5
	U8            Type = 6
	U16           Type = 7
	U32           Type = 8
	U64           Type = 9
	F16           Type = 10
	F32           Type = 11
	F64           Type = 12
	Tuple         Type = 13
	OpaqueType    Type = 14
	C64           Type = 15
	BF16          Type = 16
	Token         Type = 17
	C128          Type = 18
	F8E5M2        Type = 19
	F8E4M3FN      Type = 20
	S4            Type = 21
	U4            Type = 22
	F8E4M3B11FNUZ Type = 23
	F8E5M2FNUZ    Type = 24
	F8E4M3FNUZ    Type = 25
	S2            Type = 26
	U2            Type = 27
	F8E4M3        Type = 28
	F8E3M4        Type = 29
	S1            Type = 30
	U1            Type = 31
	F4E2M1FN      Type = 32
	F8E8M0FNU     Type = 33
	Buffer        Type = 34
)

// Kind groups types by how arithmetic treats them.
type Kind uint8

const (
	KindNone     Kind = iota // tuple, token, opaque
	KindBool                 // pred
	KindSigned               // s1..s64
	KindUnsigned             // u1..u64
	KindFloat                // every real floating-point format
	KindComplex              // c64, c128
)

// Info is the static description of one element type.
type Info struct {
	Type      Type
	HLOName   string // name in HLO text: "f32", "bf16", "f8e4m3fn"
	NumpyName string // numpy or ml_dtypes dtype name: "float32", "bfloat16", "int4"
	Kind      Kind
	Bits      int // logical bit width: 4 for s4, 8 for f8*, 64 for c64 (two f32)
	Size      int // bytes one element occupies in memory (sub-byte types: one per byte)
}

var infos = []Info{
	{Pred, "pred", "bool", KindBool, 8, 1},
	{S1, "s1", "int1", KindSigned, 1, 1},
	{S2, "s2", "int2", KindSigned, 2, 1},
	{S4, "s4", "int4", KindSigned, 4, 1},
	{S8, "s8", "int8", KindSigned, 8, 1},
	{S16, "s16", "int16", KindSigned, 16, 2},
	{S32, "s32", "int32", KindSigned, 32, 4},
	{S64, "s64", "int64", KindSigned, 64, 8},
	{U1, "u1", "uint1", KindUnsigned, 1, 1},
	{U2, "u2", "uint2", KindUnsigned, 2, 1},
	{U4, "u4", "uint4", KindUnsigned, 4, 1},
	{U8, "u8", "uint8", KindUnsigned, 8, 1},
	{U16, "u16", "uint16", KindUnsigned, 16, 2},
	{U32, "u32", "uint32", KindUnsigned, 32, 4},
	{U64, "u64", "uint64", KindUnsigned, 64, 8},
	{F16, "f16", "float16", KindFloat, 16, 2},
	{BF16, "bf16", "bfloat16", KindFloat, 16, 2},
	{F32, "f32", "float32", KindFloat, 32, 4},
	{F64, "f64", "float64", KindFloat, 64, 8},
	{C64, "c64", "complex64", KindComplex, 64, 8},
	{C128, "c128", "complex128", KindComplex, 128, 16},
	{F8E5M2, "f8e5m2", "float8_e5m2", KindFloat, 8, 1},
	{F8E4M3, "f8e4m3", "float8_e4m3", KindFloat, 8, 1},
	{F8E4M3FN, "f8e4m3fn", "float8_e4m3fn", KindFloat, 8, 1},
	{F8E4M3B11FNUZ, "f8e4m3b11fnuz", "float8_e4m3b11fnuz", KindFloat, 8, 1},
	{F8E3M4, "f8e3m4", "float8_e3m4", KindFloat, 8, 1},
	{F8E5M2FNUZ, "f8e5m2fnuz", "float8_e5m2fnuz", KindFloat, 8, 1},
	{F8E4M3FNUZ, "f8e4m3fnuz", "float8_e4m3fnuz", KindFloat, 8, 1},
	{F8E8M0FNU, "f8e8m0fnu", "float8_e8m0fnu", KindFloat, 8, 1},
	{F4E2M1FN, "f4e2m1fn", "float4_e2m1fn", KindFloat, 4, 1},
	{Tuple, "tuple", "", KindNone, 0, 0},
	{Token, "token", "", KindNone, 0, 0},
	{OpaqueType, "opaque", "", KindNone, 0, 0},
}

// maxType bounds the proto numbers byNumber holds.
const maxType = 64

var (
	byNumber [maxType]*Info // by proto number, for the lookups every kernel makes
	byType   = map[Type]*Info{}
	byHLO    = map[string]Type{}
	byNumpy  = map[string]Type{}
)

func init() {
	for i := range infos {
		in := &infos[i]
		byType[in.Type] = in
		byNumber[in.Type] = in
		byHLO[in.HLOName] = in.Type
		if in.NumpyName != "" {
			byNumpy[in.NumpyName] = in.Type
		}
	}
	byHLO["opaque_type"] = OpaqueType
}

// All returns the array element types (everything but tuple, token and opaque), in a stable order.
func All() []Type {
	var out []Type
	for _, in := range infos {
		if in.Kind != KindNone {
			out = append(out, in.Type)
		}
	}
	return out
}

// Lookup returns the description of t, or false if t is not a known type.
func Lookup(t Type) (*Info, bool) {
	in, ok := byType[t]
	return in, ok
}

func (t Type) info() *Info {
	if uint32(t) < maxType {
		if in := byNumber[t]; in != nil {
			return in
		}
	}
	return &Info{Type: t, HLOName: fmt.Sprintf("type%d", int32(t))}
}

// String returns the HLO text name ("f32").
func (t Type) String() string { return t.info().HLOName }

// NumpyName returns the numpy or ml_dtypes dtype name, "" for non-array types.
func (t Type) NumpyName() string { return t.info().NumpyName }

// Size is the number of bytes one element occupies in memory.
func (t Type) Size() int { return t.info().Size }

// Bits is the logical bit width.
func (t Type) Bits() int { return t.info().Bits }

// Kind classifies t.
func (t Type) Kind() Kind { return t.info().Kind }

// Valid reports whether t is a known type.
func (t Type) Valid() bool { _, ok := byType[t]; return ok }

// IsArray reports whether t can be an array element type.
func (t Type) IsArray() bool { return t.Kind() != KindNone }

// IsFloat reports whether t is a real floating-point type.
func (t Type) IsFloat() bool { return t.Kind() == KindFloat }

// IsComplex reports whether t is c64 or c128.
func (t Type) IsComplex() bool { return t.Kind() == KindComplex }

// IsInteger reports whether t is a signed or unsigned integer type (not pred).
func (t Type) IsInteger() bool { k := t.Kind(); return k == KindSigned || k == KindUnsigned }

// IsSigned reports whether t is a signed integer type.
func (t Type) IsSigned() bool { return t.Kind() == KindSigned }

// IsUnsigned reports whether t is an unsigned integer type.
func (t Type) IsUnsigned() bool { return t.Kind() == KindUnsigned }

// IsSubByte reports whether t's logical width is under 8 bits (stored one per byte).
func (t Type) IsSubByte() bool { return t.IsArray() && t.Bits() < 8 && t != Pred }

// FromHLO parses an HLO text type name ("bf16").
func FromHLO(name string) (Type, bool) { t, ok := byHLO[name]; return t, ok }

// FromNumpy parses a numpy or ml_dtypes dtype name ("bfloat16", "float8_e4m3fn").
func FromNumpy(name string) (Type, bool) { t, ok := byNumpy[name]; return t, ok }
