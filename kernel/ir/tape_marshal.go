package ir

import (
	"encoding/binary"
	"math"

	"goldtrace/kernel/ir/irpb"
)

// The event tape in Python's marshal format. Python's C encoder writes
// marshal several times faster than JSON (no number formatting, no string
// escaping), and the tape is most of a dump_config miss's encoding work, so
// the tracer sends its batches this way (AppendTapeMarshal). The events are
// the ones of the JSON tape (tape.go), value for value: a list or tuple for
// each JSON array, a dict for the attribute object, and the primitives of
// tape.go read either form. The decoder accepts the codes of marshal
// versions 2 to 4 for these types:
//
//	N None   T True   F False   i int32   l arbitrary int (15-bit digits)   g binary float64
//	u t a A (uint32 length) z Z (uint8 length) str    [ ( (uint32 count) ) (uint8 count) list, tuple
//	{ dict, ended by 0    r back-reference (uint32) to an earlier flagged object
//
// A type byte with bit 0x80 set flags its object for later back-references,
// numbered in the order the flagged type bytes appear. A back-reference is
// read by re-reading the referenced object's bytes.

// AppendTapeMarshal decodes an event tape written by Python's
// marshal.dumps (versions 2-4) and applies its events, like AppendTape.
func (b *Builder) AppendTapeMarshal(tape []byte) (tensorIDs, loopVars []int32, err error) {
	return b.appendTape(tapeDecoder{buf: tape, b: b, mar: true})
}

const marFlagRef = 0x80

// marFrame is an open list, tuple or dict.
type marFrame struct {
	remain int  // elements not read yet (lists and tuples)
	dict   bool // a dict: ends at its '0' byte
	ref    int  // the back-reference number of this container, or -1
}

// marRef is a flagged object's bytes, from its type byte; end is -1 until
// the object has been read.
type marRef struct{ start, end int }

// marJump is a back-reference being read: at end, reading continues at ret.
type marJump struct{ ret, end int }

func (d *tapeDecoder) mU8() int {
	if d.pos >= len(d.buf) {
		d.fail("unexpected end of input")
	}
	d.pos++
	return int(d.buf[d.pos-1])
}

func (d *tapeDecoder) mU32() uint32 {
	if len(d.buf)-d.pos < 4 {
		d.fail("unexpected end of input")
	}
	v := binary.LittleEndian.Uint32(d.buf[d.pos:])
	d.pos += 4
	return v
}

// mCount reads a container's element count or a string's length (uint32, or
// uint8 when short) and checks that many could fit in what is left.
func (d *tapeDecoder) mCount(short bool) int {
	var n int
	if short {
		n = d.mU8()
	} else {
		n = int(d.mU32())
	}
	if n > len(d.buf)-d.pos {
		d.fail("length %d runs past the end of the batch", n)
	}
	return n
}

// mTake counts the next value as an element of the innermost list or tuple.
func (d *tapeDecoder) mTake() {
	if n := len(d.frames); n > 0 && !d.frames[n-1].dict {
		f := &d.frames[n-1]
		if f.remain == 0 {
			d.fail("more elements than the container holds")
		}
		f.remain--
	}
}

// mCode reads the next value's type code. A back-reference continues in the
// bytes of the object it names; a flagged object read for the first time
// gets the next back-reference number (returned; -1 when none).
func (d *tapeDecoder) mCode() (code byte, ref int) {
	at := d.pos
	c := byte(d.mU8())
	if c&^marFlagRef == 'r' {
		idx := d.mU32()
		if uint64(idx) >= uint64(len(d.refs)) || d.refs[idx].end < 0 {
			d.fail("back-reference %d to an object not read yet", idx)
		}
		r := d.refs[idx]
		d.jumps = append(d.jumps, marJump{ret: d.pos, end: r.end})
		d.pos = r.start
		return byte(d.mU8()) &^ marFlagRef, -1 // registered when first read
	}
	if c&marFlagRef != 0 && len(d.jumps) == 0 {
		d.refs = append(d.refs, marRef{start: at, end: -1})
		return c &^ marFlagRef, len(d.refs) - 1
	}
	return c &^ marFlagRef, -1
}

// mEnd closes a value: a flagged object's extent is now known, and a
// back-reference whose object is fully read returns to where it was.
func (d *tapeDecoder) mEnd(ref int) {
	if ref >= 0 {
		d.refs[ref].end = d.pos
	}
	for n := len(d.jumps); n > 0 && d.pos == d.jumps[n-1].end; n = len(d.jumps) {
		d.pos = d.jumps[n-1].ret
		d.jumps = d.jumps[:n-1]
	}
}

// mPeek is the JSON byte that would start the next value ('[', '{', '"',
// 'n', 't', 'f', '0' for a number), ']' at the end of a list, '}' at the end
// of a dict.
func (d *tapeDecoder) mPeek() byte {
	if n := len(d.frames); n > 0 && !d.frames[n-1].dict && d.frames[n-1].remain == 0 {
		return ']'
	}
	if d.pos >= len(d.buf) {
		d.fail("unexpected end of input")
	}
	c := d.buf[d.pos] &^ marFlagRef
	if c == 'r' && len(d.buf)-d.pos >= 5 {
		idx := binary.LittleEndian.Uint32(d.buf[d.pos+1:])
		if uint64(idx) < uint64(len(d.refs)) && d.refs[idx].end >= 0 {
			c = d.buf[d.refs[idx].start] &^ marFlagRef
		}
	}
	switch c {
	case '[', '(', ')':
		return '['
	case '{':
		return '{'
	case '0':
		return '}'
	case 'N':
		return 'n'
	case 'T':
		return 't'
	case 'F':
		return 'f'
	case 'u', 't', 'a', 'A', 'z', 'Z':
		return '"'
	case 'i', 'l', 'g':
		return '0'
	}
	return c
}

func marName(c byte) string {
	switch c {
	case '[':
		return "a list"
	case '(', ')':
		return "a tuple"
	case '{':
		return "a dict"
	case '0':
		return "the end of a dict"
	case 'N':
		return "None"
	case 'T', 'F':
		return "a bool"
	case 'u', 't', 'a', 'A', 'z', 'Z':
		return "a string"
	case 'i', 'l':
		return "an integer"
	case 'g':
		return "a float"
	}
	return "marshal type code " + string(rune(c))
}

// mOpen reads the header of a list or tuple ('[') or a dict ('{').
func (d *tapeDecoder) mOpen(want byte) {
	d.mTake()
	code, ref := d.mCode()
	switch {
	case want == '[' && (code == '[' || code == '('):
		d.frames = append(d.frames, marFrame{remain: d.mCount(false), ref: ref})
	case want == '[' && code == ')':
		d.frames = append(d.frames, marFrame{remain: d.mCount(true), ref: ref})
	case want == '{' && code == '{':
		d.frames = append(d.frames, marFrame{dict: true, ref: ref})
	default:
		d.fail("expected %s, found %s", marName(want), marName(code))
	}
	d.mEnd(-1)
}

// mClose ends the innermost container, which must be fully read; for a dict
// it reads the terminating '0'.
func (d *tapeDecoder) mClose(want byte) {
	n := len(d.frames)
	if n == 0 {
		d.fail("unbalanced end of a container")
	}
	f := d.frames[n-1]
	if f.dict != (want == '}') {
		d.fail("expected the end of %s", marName(want))
	}
	if f.dict {
		if code, _ := d.mCode(); code != '0' {
			d.fail("expected the end of a dict, found %s", marName(code))
		}
	} else if f.remain != 0 {
		d.fail("%d more elements than expected", f.remain)
	}
	d.frames = d.frames[:n-1]
	d.mEnd(f.ref)
}

// mSep is sep for marshal: true (and the container closed) at its end.
func (d *tapeDecoder) mSep(closing byte) bool {
	if d.mPeek() != closing {
		return false
	}
	d.mClose(closing)
	return true
}

// mNumber reads an int or a float.
func (d *tapeDecoder) mNumber() (i int64, f float64, isFloat bool) {
	d.mTake()
	code, ref := d.mCode()
	switch code {
	case 'i':
		i = int64(int32(d.mU32()))
		f = float64(i)
	case 'l':
		i = d.mLong()
		f = float64(i)
	case 'g':
		if len(d.buf)-d.pos < 8 {
			d.fail("unexpected end of input")
		}
		f = math.Float64frombits(binary.LittleEndian.Uint64(d.buf[d.pos:]))
		d.pos += 8
		isFloat = true
	default:
		d.fail("expected a number, found %s", marName(code))
	}
	d.mEnd(ref)
	return i, f, isFloat
}

// mLong reads an int of 15-bit digits, least significant first; the size's
// sign is the number's.
func (d *tapeDecoder) mLong() int64 {
	size := int64(int32(d.mU32()))
	neg := size < 0
	if neg {
		size = -size
	}
	if 2*size > int64(len(d.buf)-d.pos) {
		d.fail("integer of %d digits runs past the end of the batch", size)
	}
	var mag uint64
	for k := int64(0); k < size; k++ {
		digit := uint64(binary.LittleEndian.Uint16(d.buf[d.pos:]))
		d.pos += 2
		if digit >= 1<<15 {
			d.fail("integer digit %d out of range", digit)
		}
		if digit != 0 && (15*k >= 64 || digit > math.MaxUint64>>(15*k)) {
			d.fail("integer does not fit in 64 bits")
		}
		mag |= digit << (15 * k)
	}
	switch {
	case neg && mag <= 1<<63:
		return int64(-mag)
	case !neg && mag <= math.MaxInt64:
		return int64(mag)
	}
	d.fail("integer does not fit in 64 bits")
	return 0
}

func (d *tapeDecoder) mInt64() int64 {
	i, f, isFloat := d.mNumber()
	if isFloat {
		d.fail("expected an integer, found %v", f)
	}
	return i
}

func (d *tapeDecoder) mString() string { return string(d.mStringBytes()) }

// mStringBytes is the next string's UTF-8 bytes (in the batch).
func (d *tapeDecoder) mStringBytes() []byte {
	d.mTake()
	code, ref := d.mCode()
	var n int
	switch code {
	case 'u', 't', 'a', 'A':
		n = d.mCount(false)
	case 'z', 'Z':
		n = d.mCount(true)
	default:
		d.fail("expected a string, found %s", marName(code))
	}
	s := d.buf[d.pos : d.pos+n]
	d.pos += n
	d.mEnd(ref)
	return s
}

// mLiteral reads None, True or False (the JSON words null, true, false).
func (d *tapeDecoder) mLiteral(word string) {
	want := map[string]byte{"null": 'N', "true": 'T', "false": 'F'}[word]
	d.mTake()
	code, ref := d.mCode()
	if code != want {
		d.fail("expected %s, found %s", word, marName(code))
	}
	d.mEnd(ref)
}

// mAttrValue is attrValue for marshal, where the type code tells an int
// from a float.
func (d *tapeDecoder) mAttrValue() *irpb.Attr {
	switch d.mPeek() {
	case '"':
		return newAttrS(d.symbol())
	case 't':
		d.mLiteral("true")
		return newAttrB(true)
	case 'f':
		d.mLiteral("false")
		return newAttrB(false)
	case '[':
		d.mOpen('[')
		var ints []int64
		var floats []float64
		anyFloat := false
		for d.mPeek() != ']' {
			i, f, isFloat := d.mNumber()
			ints, floats = append(ints, i), append(floats, f)
			anyFloat = anyFloat || isFloat
		}
		d.mClose(']')
		if anyFloat {
			return &irpb.Attr{Value: &irpb.Attr_Floats{Floats: &irpb.FloatList{V: floats}}}
		}
		return &irpb.Attr{Value: &irpb.Attr_Ints{Ints: &irpb.IntList{V: ints}}}
	}
	i, f, isFloat := d.mNumber()
	if isFloat {
		return newAttrF(f)
	}
	return newAttrI(i)
}
