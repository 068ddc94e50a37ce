package ir

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"goldtrace/kernel/ir/irpb"
)

// The tracer's event tape: the compact form in which Python streams a kernel
// to the builder. A dump_config miss traces the kernel, so its cost is per
// event; the protobuf JSON mapping of BuildBatch (decodeEventBatch) spends
// most of that in field names, nested objects and reflection. The tape is
// positional JSON arrays that Python's C encoder writes quickly and this
// hand-written scanner reads without reflection:
//
//	batch   = "[" [event {"," event}] "]"
//	tensor  = "[0," name "," memory "," role "," shape "," dtype "," flags "," file "," line
//	          ["," alloc ["," data]] "]"        flags: 1 tf32, 2 mutable; alloc null or
//	          [partition_offset, byte_offset, loop_var, num_free_tiles, bytes_per_tile, kind];
//	          data null or base64
//	inst    = "[1," op "," file "," line "," accesses "," accesses
//	          ["," attrs ["," preds ["," affines ["," preds ["," engine]]]]] "]"   dst, src, attrs,
//	          mask, exprs, preds; null for an absent part
//	loop    = "[2," start "," stop "," step "," kind "," file "," line "]"
//	end     = "[3]"
//	access  = tensor_id                          the whole tensor, identity index
//	        | "[" tensor "," shape "," affines ["," dynamic_dims "," accesses] "]"
//	affine  = "[" constant {"," kind "," id "," coef} "]"
//	pred    = "[" cmp "," constant {"," kind "," id "," coef} "]"
//	attrs   = "{" [name ":" value {"," name ":" value}] "}"   value: an integer (no '.', 'e'),
//	          a float (NaN, Infinity and -Infinity as Python writes them), true/false,
//	          a string, or a list of integers or of floats
//
// Memory and role are the proto's enum names. Tensor ids are implicit
// (declaration order), as in Append.

// AppendTape decodes an event tape and applies its events in order, like
// AppendJSON.
func (b *Builder) AppendTape(tape []byte) (tensorIDs, loopVars []int32, err error) {
	return b.appendTape(tapeDecoder{buf: tape, b: b})
}

func (b *Builder) appendTape(d tapeDecoder) (tensorIDs, loopVars []int32, err error) {
	if b.done {
		return nil, nil, fmt.Errorf("kernel builder: kernel %q is already finished", b.k.Name)
	}
	defer func() {
		if r := recover(); r != nil {
			te, ok := r.(tapeError)
			if !ok {
				panic(r)
			}
			tensorIDs, loopVars, err = nil, nil, fmt.Errorf("kernel builder: malformed event tape at byte %d: %s", te.pos, te.msg)
		}
	}()
	d.ws()
	d.expect('[')
	if d.peekAfterWS() == ']' {
		d.closeAfterPeek(']')
		d.end()
		return nil, nil, nil
	}
	for {
		ev := d.event()
		tid, lv, err := b.Append(&irpb.BuildBatch{Events: []*irpb.BuildEvent{ev}})
		if err != nil {
			return tensorIDs, loopVars, err
		}
		tensorIDs = append(tensorIDs, tid...)
		loopVars = append(loopVars, lv...)
		if d.sep(']') {
			break
		}
	}
	d.end()
	return tensorIDs, loopVars, nil
}

type tapeError struct {
	pos int
	msg string
}

type tapeDecoder struct {
	buf []byte
	pos int
	b   *Builder

	// Python's marshal form (tape_marshal.go) instead of JSON.
	mar    bool
	frames []marFrame
	refs   []marRef
	jumps  []marJump
}

func (d *tapeDecoder) fail(format string, args ...any) {
	panic(tapeError{d.pos, fmt.Sprintf(format, args...)})
}

func (d *tapeDecoder) ws() {
	if d.mar {
		return
	}
	for d.pos < len(d.buf) {
		switch d.buf[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *tapeDecoder) peekAfterWS() byte {
	if d.mar {
		return d.mPeek()
	}
	d.ws()
	if d.pos >= len(d.buf) {
		d.fail("unexpected end of input")
	}
	return d.buf[d.pos]
}

func (d *tapeDecoder) expect(c byte) {
	if d.mar {
		switch c {
		case '[', '{':
			d.mOpen(c)
		case ']', '}':
			d.mClose(c)
		}
		return // ',' and ':' are JSON's alone
	}
	if d.peekAfterWS() != c {
		d.fail("expected %q, found %q", c, d.buf[d.pos])
	}
	d.pos++
}

// sep consumes either "," (false) or the closing byte (true).
func (d *tapeDecoder) sep(closing byte) bool {
	if d.mar {
		return d.mSep(closing)
	}
	switch d.peekAfterWS() {
	case ',':
		d.pos++
		return false
	case closing:
		d.pos++
		return true
	}
	d.fail("expected ',' or %q, found %q", closing, d.buf[d.pos])
	return false
}

// more reports whether another element follows in an array whose opening
// bracket and first element (when any) were read: it consumes "," and
// returns true, or consumes "]" and returns false.
func (d *tapeDecoder) more() bool { return !d.sep(']') }

// closeAfterPeek consumes the closing bracket peekAfterWS just returned.
func (d *tapeDecoder) closeAfterPeek(closing byte) {
	if d.mar {
		d.mClose(closing)
		return
	}
	d.pos++
}

func (d *tapeDecoder) end() {
	if d.mar && (len(d.frames) != 0 || len(d.jumps) != 0) {
		d.fail("the batch ends inside a container")
	}
	d.ws()
	if d.pos != len(d.buf) {
		d.fail("trailing data after the batch")
	}
}

// null consumes a JSON null when one is next.
func (d *tapeDecoder) null() bool {
	if d.peekAfterWS() == 'n' {
		d.literal("null")
		return true
	}
	return false
}

func (d *tapeDecoder) literal(word string) {
	if d.mar {
		d.mLiteral(word)
		return
	}
	if len(d.buf)-d.pos < len(word) || string(d.buf[d.pos:d.pos+len(word)]) != word {
		d.fail("expected %s", word)
	}
	d.pos += len(word)
}

// number returns the next number's text and whether it is written as a
// float (a '.', an exponent, or one of NaN, Infinity, -Infinity).
func (d *tapeDecoder) number() (string, bool) {
	d.ws()
	start := d.pos
	for _, w := range []string{"NaN", "Infinity", "-Infinity"} {
		if len(d.buf)-d.pos >= len(w) && string(d.buf[d.pos:d.pos+len(w)]) == w {
			d.pos += len(w)
			return w, true
		}
	}
	isFloat := false
	for d.pos < len(d.buf) {
		c := d.buf[d.pos]
		if c >= '0' && c <= '9' || c == '-' || c == '+' {
			d.pos++
			continue
		}
		if c == '.' || c == 'e' || c == 'E' {
			isFloat = true
			d.pos++
			continue
		}
		break
	}
	if d.pos == start {
		d.fail("expected a number")
	}
	return string(d.buf[start:d.pos]), isFloat
}

func (d *tapeDecoder) int64() int64 {
	if d.mar {
		return d.mInt64()
	}
	d.ws()
	// The common case, a small non-negative or negative integer, without
	// allocating the number's text.
	neg, p := false, d.pos
	if p < len(d.buf) && d.buf[p] == '-' {
		neg, p = true, p+1
	}
	var v int64
	digits := 0
	for p < len(d.buf) && d.buf[p] >= '0' && d.buf[p] <= '9' && digits < 18 {
		v = v*10 + int64(d.buf[p]-'0')
		p, digits = p+1, digits+1
	}
	if digits > 0 && (p == len(d.buf) || !isNumberByte(d.buf[p])) {
		d.pos = p
		if neg {
			return -v
		}
		return v
	}
	text, isFloat := d.number()
	if isFloat {
		d.fail("expected an integer, found %s", text)
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		d.fail("integer %s: %v", text, err)
	}
	return n
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+'
}

func (d *tapeDecoder) int32() int32 {
	v := d.int64()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail("%d does not fit in 32 bits", v)
	}
	return int32(v)
}

func parseTapeFloat(text string) (float64, error) {
	switch text {
	case "NaN":
		// Python's float("nan") (what it writes as NaN); Go's math.NaN()
		// has another payload, and the marshal tape carries Python's bits.
		return math.Float64frombits(0x7ff8000000000000), nil
	case "Infinity":
		return math.Inf(1), nil
	case "-Infinity":
		return math.Inf(-1), nil
	}
	return strconv.ParseFloat(text, 64)
}

func (d *tapeDecoder) float() float64 {
	if d.mar {
		_, f, _ := d.mNumber()
		return f
	}
	text, _ := d.number()
	f, err := parseTapeFloat(text)
	if err != nil {
		d.fail("number %s: %v", text, err)
	}
	return f
}

func (d *tapeDecoder) string() string {
	if d.mar {
		return d.mString()
	}
	d.expect('"')
	start := d.pos
	for d.pos < len(d.buf) {
		switch c := d.buf[d.pos]; {
		case c == '"':
			s := string(d.buf[start:d.pos])
			d.pos++
			return s
		case c == '\\':
			return d.escapedString(start - 1)
		case c < 0x20:
			d.fail("control character in a string")
		}
		d.pos++
	}
	d.fail("unterminated string")
	return ""
}

// escapedString decodes a string with escapes (rare: non-ASCII file or
// tensor names) with encoding/json, from its opening quote at start.
func (d *tapeDecoder) escapedString(start int) string {
	p := start + 1
	for p < len(d.buf) && d.buf[p] != '"' {
		if d.buf[p] == '\\' {
			p++
		}
		p++
	}
	if p >= len(d.buf) {
		d.fail("unterminated string")
	}
	var s string
	if err := json.Unmarshal(d.buf[start:p+1], &s); err != nil {
		d.fail("string: %v", err)
	}
	d.pos = p + 1
	return s
}

// list reads a JSON array of items ("[]" is nil).
func list[T any](d *tapeDecoder, item func() T) []T {
	d.expect('[')
	if d.peekAfterWS() == ']' {
		d.closeAfterPeek(']')
		return nil
	}
	var out []T
	for {
		out = append(out, item())
		if !d.more() {
			return out
		}
	}
}

// nullableList is list, or nil for a JSON null.
func nullableList[T any](d *tapeDecoder, item func() T) []T {
	if d.null() {
		return nil
	}
	return list(d, item)
}

func (d *tapeDecoder) ints() []int64 { return nullableList(d, d.int64) }

func (d *tapeDecoder) event() *irpb.BuildEvent {
	d.expect('[')
	switch tag := d.int64(); tag {
	case 0:
		return &irpb.BuildEvent{Kind: &irpb.BuildEvent_Tensor{Tensor: d.tensor()}}
	case 1:
		return &irpb.BuildEvent{Kind: &irpb.BuildEvent_Inst{Inst: d.inst()}}
	case 2:
		l := &irpb.Loop{}
		d.expect(',')
		l.Start = d.int64()
		d.expect(',')
		l.Stop = d.int64()
		d.expect(',')
		l.Step = d.int64()
		d.expect(',')
		l.Kind = irpb.LoopKind(d.int32())
		l.Loc = d.loc()
		d.expect(']')
		return &irpb.BuildEvent{Kind: &irpb.BuildEvent_LoopBegin{LoopBegin: l}}
	case 3:
		d.expect(']')
		return &irpb.BuildEvent{Kind: &irpb.BuildEvent_LoopEnd{LoopEnd: true}}
	default:
		d.fail("unknown event tag %d", tag)
	}
	return nil
}

// loc reads ",file,line".
func (d *tapeDecoder) loc() *irpb.Loc {
	d.expect(',')
	f := d.int32()
	d.expect(',')
	return &irpb.Loc{File: f, Line: d.int32()}
}

func (d *tapeDecoder) enum(names map[string]int32, what string) int32 {
	s := d.string()
	v, ok := names[s]
	if !ok {
		d.fail("unknown %s %q", what, s)
	}
	return v
}

func (d *tapeDecoder) tensor() *irpb.Tensor {
	t := &irpb.Tensor{Id: int32(len(d.b.k.Tensors))}
	d.expect(',')
	t.Name = d.string()
	d.expect(',')
	t.Memory = irpb.Memory(d.enum(irpb.Memory_value, "memory"))
	d.expect(',')
	t.Role = irpb.TensorRole(d.enum(irpb.TensorRole_value, "tensor role"))
	d.expect(',')
	t.Shape = d.ints()
	d.expect(',')
	t.Dtype = d.int32()
	d.expect(',')
	flags := d.int64()
	if flags&^3 != 0 {
		d.fail("unknown tensor flags %d", flags)
	}
	t.Tf32, t.Mutable = flags&1 != 0, flags&2 != 0
	t.Loc = d.loc()
	if !d.more() {
		return t
	}
	if !d.null() {
		d.expect('[')
		a := &irpb.Allocation{}
		a.PartitionOffset = d.int64()
		d.expect(',')
		a.ByteOffset = d.int64()
		d.expect(',')
		a.LoopVar = d.int32()
		d.expect(',')
		a.NumFreeTiles = d.int64()
		d.expect(',')
		a.BytesPerTile = d.int64()
		d.expect(',')
		a.Kind = d.string()
		d.expect(']')
		t.Allocation = a
	}
	if !d.more() {
		return t
	}
	if !d.null() {
		data, err := base64.StdEncoding.DecodeString(d.string())
		if err != nil {
			d.fail("tensor %q data: %v", t.Name, err)
		}
		t.Data = data
	}
	d.expect(']')
	return t
}

func (d *tapeDecoder) inst() *irpb.Instruction {
	in := &irpb.Instruction{}
	d.expect(',')
	in.Op = d.string()
	in.Loc = d.loc()
	d.expect(',')
	in.Dst = d.accesses()
	d.expect(',')
	in.Src = d.accesses()
	if !d.more() {
		return in
	}
	in.Attrs = d.attrs()
	if !d.more() {
		return in
	}
	in.Mask = d.preds()
	if !d.more() {
		return in
	}
	in.Exprs = nullableList(d, d.affine)
	if !d.more() {
		return in
	}
	in.Preds = d.preds()
	if !d.more() {
		return in
	}
	if !d.null() {
		in.Engine = d.string()
	}
	d.expect(']')
	return in
}

func (d *tapeDecoder) accesses() []*irpb.Access { return nullableList(d, d.access) }

func (d *tapeDecoder) access() *irpb.Access {
	if d.peekAfterWS() != '[' {
		return d.wholeTensor(d.int32())
	}
	d.expect('[')
	a := &irpb.Access{Tensor: d.int32()}
	d.expect(',')
	a.Shape = d.ints()
	d.expect(',')
	a.Index = list(d, d.affine)
	if !d.more() {
		return a
	}
	for _, v := range d.ints() {
		if v < math.MinInt32 || v > math.MaxInt32 {
			d.fail("dynamic dimension %d out of range", v)
		}
		a.DynamicDim = append(a.DynamicDim, int32(v))
	}
	d.expect(',')
	a.Dynamic = d.accesses()
	d.expect(']')
	return a
}

// wholeTensor is the access of every element of tensor id in order: tile axis
// k indexes dimension k (a size-1 dimension is the constant 0), as the
// tracer's KTensor.tile() writes it.
func (d *tapeDecoder) wholeTensor(id int32) *irpb.Access {
	if id < 0 || int(id) >= len(d.b.k.Tensors) {
		d.fail("access of tensor %d, which is not declared (%d tensors)", id, len(d.b.k.Tensors))
	}
	shape := d.b.k.Tensors[id].Shape
	a := &irpb.Access{Tensor: id, Shape: append([]int64(nil), shape...), Index: make([]*irpb.Affine, len(shape))}
	// One allocation each for the index's messages (most operands are whole
	// tensors, so this is most of the decoder's allocation).
	affs := make([]irpb.Affine, len(shape))
	terms := make([]irpb.Term, len(shape))
	termPtrs := make([]*irpb.Term, len(shape))
	for k, n := range shape {
		a.Index[k] = &affs[k]
		if n > 1 {
			terms[k] = irpb.Term{Kind: irpb.TermKind_TILE_AXIS, Id: int32(k), Coef: 1}
			termPtrs[k] = &terms[k]
			affs[k].Terms = termPtrs[k : k+1 : k+1]
		}
	}
	return a
}

func (d *tapeDecoder) affine() *irpb.Affine {
	d.expect('[')
	a := &irpb.Affine{Constant: d.int64()}
	a.Terms = d.terms()
	return a
}

// terms reads ",kind,id,coef" triples up to the closing bracket.
func (d *tapeDecoder) terms() []*irpb.Term {
	var out []*irpb.Term
	for d.more() {
		t := &irpb.Term{Kind: irpb.TermKind(d.int32())}
		d.expect(',')
		t.Id = d.int32()
		d.expect(',')
		t.Coef = d.int64()
		out = append(out, t)
	}
	return out
}

func (d *tapeDecoder) preds() []*irpb.Predicate { return nullableList(d, d.pred) }

func (d *tapeDecoder) pred() *irpb.Predicate {
	d.expect('[')
	p := &irpb.Predicate{Cmp: irpb.Cmp(d.int32())}
	d.expect(',')
	p.Expr = &irpb.Affine{Constant: d.int64()}
	p.Expr.Terms = d.terms()
	return p
}

func (d *tapeDecoder) attrs() map[string]*irpb.Attr {
	if d.null() {
		return nil
	}
	d.expect('{')
	if d.peekAfterWS() == '}' {
		d.closeAfterPeek('}')
		return nil
	}
	out := map[string]*irpb.Attr{}
	for {
		name := d.string()
		d.expect(':')
		if _, dup := out[name]; dup {
			d.fail("attribute %q given twice", name)
		}
		out[name] = d.attrValue()
		if d.sep('}') {
			return out
		}
	}
}

func (d *tapeDecoder) attrValue() *irpb.Attr {
	if d.mar {
		return d.mAttrValue()
	}
	switch c := d.peekAfterWS(); {
	case c == '"':
		return &irpb.Attr{Value: &irpb.Attr_S{S: d.string()}}
	case c == 't':
		d.literal("true")
		return &irpb.Attr{Value: &irpb.Attr_B{B: true}}
	case c == 'f':
		d.literal("false")
		return &irpb.Attr{Value: &irpb.Attr_B{B: false}}
	case c == '[':
		d.pos++
		if d.peekAfterWS() == ']' {
			d.pos++
			return &irpb.Attr{Value: &irpb.Attr_Ints{Ints: &irpb.IntList{}}}
		}
		var texts []string
		anyFloat := false
		for {
			text, isFloat := d.number()
			texts = append(texts, text)
			anyFloat = anyFloat || isFloat
			if !d.more() {
				break
			}
		}
		if anyFloat {
			v := make([]float64, len(texts))
			for i, t := range texts {
				f, err := parseTapeFloat(t)
				if err != nil {
					d.fail("number %s: %v", t, err)
				}
				v[i] = f
			}
			return &irpb.Attr{Value: &irpb.Attr_Floats{Floats: &irpb.FloatList{V: v}}}
		}
		v := make([]int64, len(texts))
		for i, t := range texts {
			n, err := strconv.ParseInt(t, 10, 64)
			if err != nil {
				d.fail("integer %s: %v", t, err)
			}
			v[i] = n
		}
		return &irpb.Attr{Value: &irpb.Attr_Ints{Ints: &irpb.IntList{V: v}}}
	default:
		text, isFloat := d.number()
		if isFloat {
			f, err := parseTapeFloat(text)
			if err != nil {
				d.fail("number %s: %v", text, err)
			}
			return &irpb.Attr{Value: &irpb.Attr_F{F: f}}
		}
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			d.fail("integer %s: %v", text, err)
		}
		return &irpb.Attr{Value: &irpb.Attr_I{I: n}}
	}
}
