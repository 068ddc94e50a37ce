package hlo

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// floatFormat describes the bit layout of the IEEE-like float types whose NaNs
// carry a payload that HLO text spells nan(0x…). The other float types (fn,
// fnuz, e8m0) have fixed NaN encodings.
type floatFormat struct{ bits, mant int }

var nanPayloadFormats = map[dtype.Type]floatFormat{
	dtype.F16: {16, 10}, dtype.BF16: {16, 7}, dtype.F32: {32, 23}, dtype.F64: {64, 52},
	dtype.F8E5M2: {8, 2}, dtype.F8E4M3: {8, 3}, dtype.F8E3M4: {8, 4},
}

// maxFinite is each float type's largest finite value; literals beyond it are
// errors, as in XLA's parser.
var maxFinite = map[dtype.Type]float64{
	dtype.F16: 65504, dtype.BF16: 3.3895313892515355e38, dtype.F32: math.MaxFloat32, dtype.F64: math.MaxFloat64,
	dtype.F8E5M2: 57344, dtype.F8E4M3: 240, dtype.F8E4M3FN: 448, dtype.F8E4M3B11FNUZ: 30, dtype.F8E3M4: 15.5,
	dtype.F8E5M2FNUZ: 57344, dtype.F8E4M3FNUZ: 240, dtype.F8E8M0FNU: 0x1p127, dtype.F4E2M1FN: 6,
}

// maxLiteralElements caps the elements of one constant so hostile input cannot
// make the parser allocate without bound; the text itself bounds what we collect.
const maxLiteralElements = 1 << 28

// literalBuilder accumulates little-endian element bytes in row-major order.
type literalBuilder struct {
	t    dtype.Type
	data []byte
	n    int64
}

func (p *parser) parseLiteral(s Shape) *Literal {
	if s.IsTuple() {
		p.expect(tLParen, "'(' of a tuple constant")
		l := &Literal{Tuple: []*Literal{}}
		for i, e := range s.Tuple {
			if i > 0 {
				p.expect(tComma, "','")
			}
			l.Tuple = append(l.Tuple, p.parseLiteral(e))
		}
		p.expect(tRParen, "')'")
		return l
	}
	if !s.IsArray() {
		p.errorf(p.pos, "a constant cannot have shape %v", s)
	}
	for _, d := range s.Dims {
		if d < 0 {
			p.errorf(p.pos, "a constant cannot have dynamic shape %v", s)
		}
	}
	n := tensor.NumElements(s.Dims)
	if n < 0 || n > maxLiteralElements {
		p.errorf(p.pos, "constant of shape %v is too large", s)
	}
	b := &literalBuilder{t: s.Elem}
	pos := p.pos
	if len(s.Dims) == 0 {
		p.element(b)
	} else {
		p.array(b, s.Dims)
	}
	if b.n != n {
		p.errorf(pos, "constant has %d elements, shape %v needs %d", b.n, s, n)
	}
	t, err := tensor.FromBytes(s.Elem, s.Dims, b.data)
	if err != nil {
		p.errorf(pos, "constant: %v", err)
	}
	return &Literal{Tensor: t}
}

// array parses one brace level of a row-major nested literal.
func (p *parser) array(b *literalBuilder, dims []int64) {
	if p.isWord("...") {
		p.errorf(p.pos, "constant data elided as {...}: the module was printed without large constants; re-dump it with print_large_constants")
	}
	pos := p.expect(tLBrace, "'{'")
	if p.isWord("...") {
		p.errorf(p.pos, "constant data elided as {...}: the module was printed without large constants; re-dump it with print_large_constants")
	}
	var count int64
	for p.tok != tRBrace {
		if count >= dims[0] {
			p.errorf(p.pos, "too many elements: dimension has size %d", dims[0])
		}
		if len(dims) == 1 {
			p.element(b)
		} else {
			p.array(b, dims[1:])
		}
		count++
		if !p.got(tComma) {
			break
		}
	}
	p.expect(tRBrace, "'}'")
	// An empty {} stands for any array with a zero dimension below this level.
	if count == 0 && tensor.NumElements(dims) == 0 {
		return
	}
	if count != dims[0] {
		p.errorf(pos, "expected %d elements in this dimension, found %d", dims[0], count)
	}
}

func (b *literalBuilder) put(bits uint64) {
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], bits)
	b.data = append(b.data, buf[:b.t.Size()]...)
	b.n++
}

// element parses one scalar value of b's type and appends it.
func (p *parser) element(b *literalBuilder) {
	t := b.t
	switch t.Kind() {
	case dtype.KindBool:
		switch {
		case p.isWord("true") || p.isWord("1"):
			b.put(1)
		case p.isWord("false") || p.isWord("0"):
			b.put(0)
		default:
			p.errorf(p.pos, "expected pred value true or false, found %s", p.describe())
		}
		p.next()
	case dtype.KindSigned, dtype.KindUnsigned:
		pos := p.pos
		w := p.word("integer")
		bits := t.Bits()
		if t.IsSigned() {
			v, err := strconv.ParseInt(w, 10, 64)
			if err != nil || bits < 64 && (v < -(1<<(bits-1)) || v >= 1<<(bits-1)) {
				p.errorf(pos, "%q is not a valid %v value", w, t)
			}
			b.put(uint64(v) & mask(bits, t))
		} else {
			v, err := strconv.ParseUint(w, 10, 64)
			if err != nil || bits < 64 && v >= 1<<bits {
				p.errorf(pos, "%q is not a valid %v value", w, t)
			}
			b.put(v)
		}
	case dtype.KindFloat:
		b.put(p.floatBits(t))
	case dtype.KindComplex:
		part := dtype.F32
		if t == dtype.C128 {
			part = dtype.F64
		}
		var re, im uint64
		if p.got(tLParen) {
			re = p.floatBits(part)
			p.expect(tComma, "','")
			im = p.floatBits(part)
			p.expect(tRParen, "')'")
		} else {
			re = p.floatBits(part)
		}
		if t == dtype.C64 {
			b.put(re | im<<32)
		} else {
			b.data = binary.LittleEndian.AppendUint64(b.data, re)
			b.data = binary.LittleEndian.AppendUint64(b.data, im)
			b.n++
		}
	default:
		p.errorf(p.pos, "constants of type %v are not supported", t)
	}
}

// mask keeps the low bits of sub-byte values (stored one per byte, as ml_dtypes does).
func mask(bits int, t dtype.Type) uint64 {
	if t.IsSubByte() {
		return 1<<bits - 1
	}
	return math.MaxUint64
}

// floatBits parses a float literal (decimal, inf, nan, nan(0xpayload), with
// optional sign) as a double, checks its range and rounds it to t.
func (p *parser) floatBits(t dtype.Type) uint64 {
	pos := p.pos
	w := p.word("number")
	neg := strings.HasPrefix(w, "-")
	body := strings.TrimPrefix(strings.TrimPrefix(w, "-"), "+")
	switch body {
	case "inf":
		if neg {
			return p.fromF64(t, math.Inf(-1))
		}
		return p.fromF64(t, math.Inf(1))
	case "nan":
		var payload uint64
		if p.tok == tLParen {
			p.next()
			ppos := p.pos
			pw := p.word("NaN payload")
			v, err := strconv.ParseUint(strings.TrimPrefix(pw, "0x"), 16, 64)
			if err != nil || !strings.HasPrefix(pw, "0x") || v == 0 {
				p.errorf(ppos, "invalid NaN payload %q", pw)
			}
			payload = v
			p.expect(tRParen, "')'")
		}
		f, ok := nanPayloadFormats[t]
		if !ok {
			if payload != 0 {
				p.errorf(pos, "type %v has no NaN payload", t)
			}
			nan := math.NaN()
			if neg {
				nan = math.Copysign(nan, -1)
			}
			return p.fromF64(t, nan)
		}
		if payload == 0 {
			payload = 1 << (f.mant - 1) // quiet NaN without payload
		}
		if payload >= 1<<f.mant {
			p.errorf(pos, "NaN payload 0x%x does not fit the %d mantissa bits of %v", payload, f.mant, t)
		}
		bits := (uint64(1)<<(f.bits-1-f.mant)-1)<<f.mant | payload
		if neg {
			bits |= 1 << (f.bits - 1)
		}
		return bits
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			p.errorf(pos, "%q is not a valid %v value", w, t)
		}
	}
	v, err := strconv.ParseFloat(w, 64)
	if err != nil || math.Abs(v) > maxFinite[t] {
		p.errorf(pos, "%q is out of range for %v", w, t)
	}
	return p.fromF64(t, v)
}

// fromF64 rounds v to t with t's rounding and overflow rules.
func (p *parser) fromF64(t dtype.Type, v float64) uint64 { return dtype.FromF64(t, v) }

// formatFloat prints an element of float type t so that parsing it gives the same bits.
func formatFloat(t dtype.Type, bits uint64) string {
	if f, ok := nanPayloadFormats[t]; ok {
		expMask := (uint64(1)<<(f.bits-1-f.mant) - 1) << f.mant
		payload := bits & (1<<f.mant - 1)
		if bits&expMask == expMask && payload != 0 {
			s := "nan"
			if bits>>(f.bits-1)&1 == 1 {
				s = "-nan"
			}
			if payload != 1<<(f.mant-1) {
				s += fmt.Sprintf("(0x%x)", payload)
			}
			return s
		}
	}
	v := dtype.ToF64(t, bits)
	switch {
	case math.IsNaN(v):
		if math.Signbit(v) {
			return "-nan"
		}
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	if t == dtype.F32 {
		// The shortest f32 spelling of the largest floats reads back as a
		// double beyond the f32 range, which the parser rejects as XLA does.
		s := strconv.FormatFloat(v, 'g', -1, 32)
		if d, err := strconv.ParseFloat(s, 64); err == nil && math.Abs(d) <= math.MaxFloat32 {
			return s
		}
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// formatElement prints element i of a tensor.
func formatElement(tn *tensor.Tensor, i int) string {
	t := tn.Type
	size := t.Size()
	var buf [8]byte
	raw := tn.Data[i*size : (i+1)*size]
	switch t.Kind() {
	case dtype.KindBool:
		if raw[0] != 0 {
			return "true"
		}
		return "false"
	case dtype.KindSigned:
		copy(buf[:], raw)
		v := binary.LittleEndian.Uint64(buf[:])
		bits := uint(t.Bits())
		return strconv.FormatInt(int64(v<<(64-bits))>>(64-bits), 10)
	case dtype.KindUnsigned:
		copy(buf[:], raw)
		v := binary.LittleEndian.Uint64(buf[:])
		if t.IsSubByte() {
			v &= 1<<t.Bits() - 1
		}
		return strconv.FormatUint(v, 10)
	case dtype.KindFloat:
		copy(buf[:], raw)
		return formatFloat(t, binary.LittleEndian.Uint64(buf[:]))
	case dtype.KindComplex:
		if t == dtype.C64 {
			return "(" + formatFloat(dtype.F32, uint64(binary.LittleEndian.Uint32(raw))) + ", " +
				formatFloat(dtype.F32, uint64(binary.LittleEndian.Uint32(raw[4:]))) + ")"
		}
		return "(" + formatFloat(dtype.F64, binary.LittleEndian.Uint64(raw)) + ", " +
			formatFloat(dtype.F64, binary.LittleEndian.Uint64(raw[8:])) + ")"
	}
	return "?"
}

// writeLiteral prints a literal in HLO's nested row-major form.
func writeLiteral(b *strings.Builder, l *Literal) {
	if l == nil {
		b.WriteString("()")
		return
	}
	if l.Tensor == nil {
		b.WriteByte('(')
		for i, e := range l.Tuple {
			if i > 0 {
				b.WriteString(", ")
			}
			writeLiteral(b, e)
		}
		b.WriteByte(')')
		return
	}
	tn := l.Tensor
	if len(tn.Dims) == 0 {
		b.WriteString(formatElement(tn, 0))
		return
	}
	if tn.NumElements() == 0 {
		// Nested empty braces could be huge (f32[1000000000,0]); the
		// parser accepts a single {} for any empty array.
		b.WriteString("{}")
		return
	}
	idx := 0
	var rec func(level int)
	rec = func(level int) {
		b.WriteByte('{')
		for i := int64(0); i < tn.Dims[level]; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			if level == len(tn.Dims)-1 {
				b.WriteString(formatElement(tn, idx))
				idx++
			} else {
				rec(level + 1)
			}
		}
		b.WriteByte('}')
	}
	rec(0)
}
