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
	for i := 0; ; i++ {
		switch tag, v := d.event(); tag {
		case 0:
			tensorIDs = append(tensorIDs, v)
		case 2:
			loopVars = append(loopVars, v)
		case 3:
			if err := b.closeLoop(i); err != nil {
				return tensorIDs, loopVars, err
			}
		}
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

	cur *instAlloc // the instruction being read (its storage serves its operands)

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

// event reads one event and applies it, except a loop end (tag 3), which
// the caller applies; it returns the event's tag and the tensor id (0) or
// loop variable (2) it created.
func (d *tapeDecoder) event() (tag int64, id int32) {
	d.expect('[')
	switch tag = d.int64(); tag {
	case 0:
		return tag, d.b.addTensor(d.tensor())
	case 1:
		a := &instAlloc{}
		d.inst(a)
		a.kind.Inst = &a.in
		a.stmt.Kind = &a.kind
		d.b.add(&a.stmt)
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
		l.Loc = &irpb.Loc{}
		d.locInto(l.Loc)
		d.expect(']')
		return tag, d.b.openLoop(l)
	case 3:
		d.expect(']')
	default:
		d.fail("unknown event tag %d", tag)
	}
	return tag, 0
}

// locInto reads ",file,line".
func (d *tapeDecoder) locInto(l *irpb.Loc) {
	d.expect(',')
	l.File = d.int32()
	d.expect(',')
	l.Line = d.int32()
}

// Messages an event needs, allocated together (the decoder's allocations are
// most of a dump_config miss's garbage).
type tensorAlloc struct {
	t   irpb.Tensor
	loc irpb.Loc
}

type instAlloc struct {
	in       irpb.Instruction
	loc      irpb.Loc
	stmt     irpb.Stmt
	kind     irpb.Stmt_Inst
	dst      [1]*irpb.Access
	src      [2]*irpb.Access
	accesses [2]irpb.Access // whole-tensor operands
	nAccess  int
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
	ta := &tensorAlloc{}
	t := &ta.t
	t.Id = int32(len(d.b.k.Tensors))
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
	t.Loc = &ta.loc
	d.locInto(t.Loc)
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

// inst reads an instruction into a.in.
func (d *tapeDecoder) inst(a *instAlloc) {
	in := &a.in
	d.expect(',')
	in.Op = d.symbol()
	in.Loc = &a.loc
	d.locInto(in.Loc)
	d.expect(',')
	d.cur = a
	in.Dst = d.accessesInto(a.dst[:0])
	d.expect(',')
	in.Src = d.accessesInto(a.src[:0])
	d.cur = nil
	if !d.more() {
		return
	}
	in.Attrs = d.attrs()
	if !d.more() {
		return
	}
	in.Mask = d.preds()
	if !d.more() {
		return
	}
	in.Exprs = nullableList(d, d.affine)
	if !d.more() {
		return
	}
	in.Preds = d.preds()
	if !d.more() {
		return
	}
	if !d.null() {
		in.Engine = d.symbol()
	}
	d.expect(']')
}

func (d *tapeDecoder) accesses() []*irpb.Access { return nullableList(d, d.access) }

// accessesInto is accesses appending to buf (an instruction's own storage).
func (d *tapeDecoder) accessesInto(buf []*irpb.Access) []*irpb.Access {
	if d.null() {
		return nil
	}
	d.expect('[')
	if d.peekAfterWS() == ']' {
		d.closeAfterPeek(']')
		return nil
	}
	for {
		buf = append(buf, d.access())
		if !d.more() {
			return buf
		}
	}
}

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
	b := d.b
	if id < 0 || int(id) >= len(b.k.Tensors) {
		d.fail("access of tensor %d, which is not declared (%d tensors)", id, len(b.k.Tensors))
	}
	for len(b.whole) < len(b.k.Tensors) {
		b.whole = append(b.whole, wholeAccess{})
	}
	w := &b.whole[id]
	if w.index == nil {
		*w = newWholeAccess(b.k.Tensors[id].Shape)
	}
	var a *irpb.Access
	if in := d.cur; in != nil && in.nAccess < len(in.accesses) {
		a = &in.accesses[in.nAccess]
		in.nAccess++
	} else {
		a = &irpb.Access{}
	}
	a.Tensor, a.Shape, a.Index = id, w.shape, w.index
	return a
}

// wholeIndex4 is the storage of a whole-tensor access of rank <= 4, in one
// allocation.
type wholeIndex4 struct {
	shape    [4]int64
	index    [4]*irpb.Affine
	affs     [4]irpb.Affine
	terms    [4]irpb.Term
	termPtrs [4]*irpb.Term
}

func newWholeAccess(shape []int64) wholeAccess {
	r := len(shape)
	var w wholeAccess
	var affs []irpb.Affine
	var terms []irpb.Term
	var termPtrs []*irpb.Term
	if r <= 4 {
		s := &wholeIndex4{}
		w.shape, w.index, affs, terms, termPtrs = s.shape[:r:r], s.index[:r:r], s.affs[:r], s.terms[:r], s.termPtrs[:r]
	} else {
		w.shape, w.index = make([]int64, r), make([]*irpb.Affine, r)
		affs, terms, termPtrs = make([]irpb.Affine, r), make([]irpb.Term, r), make([]*irpb.Term, r)
	}
	copy(w.shape, shape)
	for k, n := range shape {
		w.index[k] = &affs[k]
		if n > 1 {
			terms[k] = irpb.Term{Kind: irpb.TermKind_TILE_AXIS, Id: int32(k), Coef: 1}
			termPtrs[k] = &terms[k]
			affs[k].Terms = termPtrs[k : k+1 : k+1]
		}
	}
	return w
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
		name := d.symbol()
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
		return newAttrS(d.symbol())
	case c == 't':
		d.literal("true")
		return newAttrB(true)
	case c == 'f':
		d.literal("false")
		return newAttrB(false)
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
			return newAttrF(f)
		}
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			d.fail("integer %s: %v", text, err)
		}
		return newAttrI(n)
	}
}

// attrAlloc holds an attribute and its oneof wrapper in one allocation.
type attrAlloc struct {
	a irpb.Attr
	i irpb.Attr_I
	f irpb.Attr_F
	s irpb.Attr_S
	b irpb.Attr_B
}

func newAttrI(v int64) *irpb.Attr {
	x := &attrAlloc{i: irpb.Attr_I{I: v}}
	x.a.Value = &x.i
	return &x.a
}
func newAttrF(v float64) *irpb.Attr {
	x := &attrAlloc{f: irpb.Attr_F{F: v}}
	x.a.Value = &x.f
	return &x.a
}
func newAttrS(v string) *irpb.Attr {
	x := &attrAlloc{s: irpb.Attr_S{S: v}}
	x.a.Value = &x.s
	return &x.a
}
func newAttrB(v bool) *irpb.Attr {
	x := &attrAlloc{b: irpb.Attr_B{B: v}}
	x.a.Value = &x.b
	return &x.a
}

// symbol reads a string that recurs (an op name, an attribute name or
// value, an engine): one copy per builder.
func (d *tapeDecoder) symbol() string {
	var raw []byte
	if d.mar {
		raw = d.mStringBytes()
	} else {
		d.expect('"')
		start := d.pos
		for d.pos < len(d.buf) && d.buf[d.pos] != '"' && d.buf[d.pos] != '\\' && d.buf[d.pos] >= 0x20 {
			d.pos++
		}
		if d.pos >= len(d.buf) || d.buf[d.pos] != '"' {
			d.pos = start - 1
			return d.string() // escapes, or an error to report
		}
		raw = d.buf[start:d.pos]
		d.pos++
	}
	if s, ok := d.b.symbols[string(raw)]; ok {
		return s
	}
	if d.b.symbols == nil {
		d.b.symbols = map[string]string{}
	}
	s := string(raw)
	d.b.symbols[s] = s
	return s
}
