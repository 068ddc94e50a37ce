package hlo

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"goldtrace/engine/dtype"
)

// ParseText parses an HLO module in the text form XLA prints (HloModule::ToString)
// and JAX emits (lowered.as_text(dialect="hlo"), compiled.as_text()). Shapes that
// the text omits are inferred. On failure the error is an ErrorList whose entries
// give file:line:column and the offending text.
func ParseText(src []byte, filename string) (m *Module, err error) {
	p := &parser{filename: filename, comps: map[string]*Computation{}}
	p.sc = scanner{src: src, err: p.errorAt}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(bailout); !ok {
				panic(r)
			}
		}
		if len(p.errs) > 0 {
			p.errs.Sort()
			m, err = nil, p.errs
		}
	}()
	p.next()
	return p.parseModule(), nil
}

// bailout unwinds the parser after the first error: HLO has no statement
// separators to resynchronize on, so later errors would only be noise.
type bailout struct{}

type parser struct {
	sc       scanner
	filename string

	tok     token
	pos     int
	lit     string
	prevEnd int // end offset of the previous token

	errs ErrorList

	m      *Module
	comps  map[string]*Computation
	comp   *Computation
	instrs map[string]*Instruction
	nested int // counter for names of nested (inline) instructions

	lineStarts []int     // offsets where lines begin, built on first use
	attrPos    []AttrPos // backing store of the instructions' AttrPos
}

// position is position(src, filename, off) in O(log n) after one scan of
// the source, so recording every attribute's place stays linear.
func (p *parser) position(off int) Position {
	if p.lineStarts == nil {
		p.lineStarts = []int{0}
		for i, c := range p.sc.src {
			if c == '\n' {
				p.lineStarts = append(p.lineStarts, i+1)
			}
		}
	}
	off = min(off, len(p.sc.src))
	i := sort.SearchInts(p.lineStarts, off+1) - 1
	return Position{Filename: p.filename, Offset: off, Line: i + 1, Column: off - p.lineStarts[i] + 1}
}

func (p *parser) errorAt(off int, msg string) {
	near := p.sc.src[min(off, len(p.sc.src)):]
	if i := strings.IndexByte(string(near[:min(len(near), 60)]), '\n'); i >= 0 {
		near = near[:i]
	}
	if len(near) > 40 {
		near = near[:40]
	}
	p.errs = append(p.errs, &SyntaxError{Pos: position(p.sc.src, p.filename, off), Msg: msg, Near: string(near)})
	panic(bailout{})
}

func (p *parser) errorf(off int, format string, args ...any) {
	p.errorAt(off, fmt.Sprintf(format, args...))
}

func (p *parser) next() {
	p.prevEnd = p.sc.off
	p.tok, p.pos, p.lit = p.sc.scan()
	if p.tok == tIllegal {
		p.errorf(p.pos, "unexpected character %q", p.lit)
	}
}

// peek returns the token after the current one without consuming anything.
func (p *parser) peek() (token, string) {
	s := p.sc
	s.err = func(int, string) {}
	t, _, lit := s.scan()
	return t, lit
}

func (p *parser) describe() string {
	switch p.tok {
	case tWord:
		return fmt.Sprintf("%q", p.lit)
	case tString:
		return "string " + quote(p.lit)
	}
	return p.tok.String()
}

func (p *parser) expect(t token, what string) int {
	pos := p.pos
	if p.tok != t {
		p.errorf(p.pos, "expected %s, found %s", what, p.describe())
	}
	p.next()
	return pos
}

func (p *parser) got(t token) bool {
	if p.tok == t {
		p.next()
		return true
	}
	return false
}

func (p *parser) isWord(w string) bool { return p.tok == tWord && p.lit == w }

func (p *parser) word(what string) string {
	if p.tok != tWord {
		p.errorf(p.pos, "expected %s, found %s", what, p.describe())
	}
	s := p.lit
	p.next()
	return s
}

func (p *parser) str(what string) string {
	if p.tok != tString {
		p.errorf(p.pos, "expected %s (a quoted string), found %s", what, p.describe())
	}
	s := p.lit
	p.next()
	return s
}

func (p *parser) int64() int64 {
	if p.tok != tWord {
		p.errorf(p.pos, "expected integer, found %s", p.describe())
	}
	v, err := strconv.ParseInt(p.lit, 10, 64)
	if err != nil {
		p.errorf(p.pos, "expected integer, found %q", p.lit)
	}
	p.next()
	return v
}

func (p *parser) bool() bool {
	switch {
	case p.isWord("true"):
		p.next()
		return true
	case p.isWord("false"):
		p.next()
		return false
	}
	p.errorf(p.pos, "expected true or false, found %s", p.describe())
	return false
}

// list parses '{' item {',' item} '}' (possibly empty).
func (p *parser) list(item func()) {
	p.expect(tLBrace, "'{'")
	for p.tok != tRBrace {
		item()
		if !p.got(tComma) {
			break
		}
	}
	p.expect(tRBrace, "'}'")
}

// ints parses {1,2,3}; the result is non-nil even when empty.
func (p *parser) ints() []int64 {
	out := []int64{}
	p.list(func() { out = append(out, p.int64()) })
	return out
}

// rawValue returns the source text of an attribute value we keep uninterpreted:
// a balanced {...} group, a string, or the tokens up to the next top-level ','.
func (p *parser) rawValue() string {
	start := p.pos
	if p.tok == tLBrace {
		text, ok := p.sc.rawBraces(start)
		if !ok {
			p.errorf(start, "unbalanced '{'")
		}
		p.next()
		return text
	}
	depth := 0
	for p.tok != tEOF {
		switch p.tok {
		case tLBrace, tLBrack, tLParen:
			depth++
		case tRBrace, tRBrack, tRParen:
			if depth == 0 {
				goto done
			}
			depth--
		case tComma:
			if depth == 0 {
				goto done
			}
		}
		if depth == 0 && p.pos > start && bytes.IndexByte(p.sc.src[p.prevEnd:p.pos], '\n') >= 0 {
			break
		}
		p.next()
	}
done:
	if p.prevEnd <= start {
		p.errorf(p.pos, "expected attribute value, found %s", p.describe())
	}
	return string(p.sc.src[start:p.prevEnd])
}

// ---- module ----

var stackFrameTables = map[string]bool{"FileNames": true, "FunctionNames": true, "FileLocations": true, "StackFrames": true}

func (p *parser) parseModule() *Module {
	if !p.isWord("HloModule") {
		p.errorf(p.pos, "expected 'HloModule', found %s", p.describe())
	}
	p.next()
	p.m = &Module{Name: p.word("module name")}
	seen := map[string]bool{}
	for p.got(tComma) {
		p.moduleAttr(seen)
	}
	var entry *Computation
	for p.tok != tEOF {
		if p.tok == tWord && stackFrameTables[p.lit] {
			if t, lit := p.peek(); t == tWord && lit != "" && lit[0] >= '0' && lit[0] <= '9' {
				p.skipStackFrameTable()
				continue
			}
		}
		pos := p.pos
		c := p.parseComputation()
		if c.IsEntry {
			if entry != nil {
				p.errorf(pos, "second ENTRY computation %q (the first was %q)", c.Name, entry.Name)
			}
			entry = c
		}
	}
	if len(p.m.Computations) == 0 {
		p.errorf(p.pos, "module %q has no computations", p.m.Name)
	}
	if entry == nil {
		entry = p.m.Computations[len(p.m.Computations)-1]
		entry.IsEntry = true
	}
	p.m.Entry = entry
	return p.m
}

// skipStackFrameTable skips one of the tables newer XLA prints between the
// header and the computations (ids and strings or {…} records); the model
// keeps stack frames out, as metadata keeps only stack_frame_id raw.
func (p *parser) skipStackFrameTable() {
	p.next()
	for p.tok == tWord && p.lit != "" && p.lit[0] >= '0' && p.lit[0] <= '9' {
		p.int64()
		switch p.tok {
		case tString:
			p.next()
		case tLBrace:
			p.rawValue()
		default:
			p.errorf(p.pos, "expected string or '{' in stack frame table, found %s", p.describe())
		}
	}
}

func (p *parser) moduleAttr(seen map[string]bool) {
	pos := p.pos
	name := p.word("module attribute name")
	if seen[name] {
		p.errorf(pos, "duplicate module attribute %q", name)
	}
	seen[name] = true
	p.expect(tEqual, "'='")
	m := p.m
	switch name {
	case "is_scheduled":
		m.IsScheduled = p.bool()
	case "replica_count":
		m.ReplicaCount = p.int64()
	case "num_partitions":
		m.NumPartitions = p.int64()
	case "entry_computation_layout":
		p.expect(tLBrace, "'{'")
		l := &ComputationLayout{Params: []Shape{}}
		p.expect(tLParen, "'('")
		for p.tok != tRParen {
			l.Params = append(l.Params, p.parseShape())
			if !p.got(tComma) {
				break
			}
		}
		p.expect(tRParen, "')'")
		p.expect(tArrow, "'->'")
		l.Result = p.parseShape()
		p.expect(tRBrace, "'}'")
		m.EntryLayout = l
	case "input_output_alias":
		m.InputOutputAlias = []IOAlias{}
		p.list(func() {
			var a IOAlias
			a.OutputIndex = p.ints()
			p.expect(tColon, "':'")
			p.expect(tLParen, "'('")
			a.Param = p.int64()
			p.expect(tComma, "','")
			a.ParamIndex = p.ints()
			if p.got(tComma) {
				kpos := p.pos
				a.Kind = p.word("alias kind")
				if a.Kind != "may-alias" && a.Kind != "must-alias" {
					p.errorf(kpos, "alias kind must be may-alias or must-alias, found %q", a.Kind)
				}
			}
			p.expect(tRParen, "')'")
			m.InputOutputAlias = append(m.InputOutputAlias, a)
		})
	case "buffer_donor":
		m.BufferDonors = []BufferDonor{}
		p.list(func() {
			var d BufferDonor
			p.expect(tLParen, "'('")
			d.Param = p.int64()
			p.expect(tComma, "','")
			d.ParamIndex = p.ints()
			p.expect(tRParen, "')'")
			m.BufferDonors = append(m.BufferDonors, d)
		})
	case "frontend_attributes":
		m.FrontendAttrs = p.frontendAttrs()
	default:
		m.ExtraAttrs = append(m.ExtraAttrs, RawAttr{Name: name, Value: p.rawValue()})
	}
}

// ---- computations ----

func (p *parser) parseComputation() *Computation {
	c := &Computation{}
	if p.isWord("ENTRY") {
		c.IsEntry = true
		p.next()
	}
	pos := p.pos
	c.Name = p.word("computation name")
	if _, dup := p.comps[c.Name]; dup {
		p.errorf(pos, "computation %q is already defined", c.Name)
	}
	var sig []Shape
	sigPos := p.pos
	hasSig := p.tok == tLParen
	if hasSig {
		p.next()
		for p.tok != tRParen {
			p.word("parameter name")
			p.expect(tColon, "':'")
			sig = append(sig, p.parseShape())
			if !p.got(tComma) {
				break
			}
		}
		p.expect(tRParen, "')'")
		p.expect(tArrow, "'->'")
		p.parseShape()
	}
	p.expect(tLBrace, "'{'")
	p.comp, p.instrs = c, map[string]*Instruction{}
	var root *Instruction
	for p.tok != tRBrace {
		if p.tok == tEOF {
			p.errorf(p.pos, "computation %q is not closed with '}'", c.Name)
		}
		ipos := p.pos
		in, isRoot := p.parseInstruction()
		if isRoot {
			if root != nil {
				p.errorf(ipos, "second ROOT %q in computation %q (the first was %q)", in.Name, c.Name, root.Name)
			}
			root = in
		}
	}
	end := p.pos
	p.next()
	if len(c.Instructions) == 0 {
		p.errorf(end, "computation %q has no instructions", c.Name)
	}
	if root == nil {
		root = c.Instructions[len(c.Instructions)-1]
	}
	c.Root = root
	for _, in := range c.Instructions {
		if in.Opcode != "parameter" {
			continue
		}
		n := in.ParameterNumber
		if n < 0 || n >= int64(len(c.Instructions)) {
			p.errorf(pos, "computation %q: parameter %q has number %d out of range", c.Name, in.Name, n)
		}
		for int64(len(c.Params)) <= n {
			c.Params = append(c.Params, nil)
		}
		if c.Params[n] != nil {
			p.errorf(pos, "computation %q: parameters %q and %q both have number %d", c.Name, c.Params[n].Name, in.Name, n)
		}
		c.Params[n] = in
	}
	for i, prm := range c.Params {
		if prm == nil {
			p.errorf(pos, "computation %q has no parameter number %d", c.Name, i)
		}
	}
	if hasSig {
		if len(sig) != len(c.Params) {
			p.errorf(sigPos, "computation %q: signature has %d parameters, body has %d", c.Name, len(sig), len(c.Params))
		}
		for i, s := range sig {
			if !Compatible(s, c.Params[i].Shape) {
				p.errorf(sigPos, "computation %q: signature gives parameter %d shape %v, body declares %v", c.Name, i, s, c.Params[i].Shape)
			}
		}
	}
	if p.tok == tComma {
		if t, lit := p.peek(); t == tWord && lit == "execution_thread" {
			p.next()
			p.next()
			p.expect(tEqual, "'='")
			c.ExecutionThread = p.str("execution thread")
		}
	}
	p.comps[c.Name] = c
	p.m.Computations = append(p.m.Computations, c)
	p.comp = nil
	return c
}

// ---- instructions ----

func (p *parser) startsShape() bool {
	if p.tok == tLParen {
		return true
	}
	if p.tok != tWord {
		return false
	}
	// Opcodes are followed by '(', element types by '['; parseShape
	// reports unknown element types.
	t, _ := p.peek()
	return t == tLBrack
}

func (p *parser) parseInstruction() (*Instruction, bool) {
	isRoot := false
	if p.isWord("ROOT") {
		if t, _ := p.peek(); t == tWord {
			isRoot = true
			p.next()
		}
	}
	pos := p.pos
	name := p.word("instruction name")
	if _, dup := p.instrs[name]; dup {
		p.errorf(pos, "instruction %q is already defined in computation %q", name, p.comp.Name)
	}
	p.expect(tEqual, "'='")
	var shape *Shape
	if p.startsShape() {
		s := p.parseShape()
		shape = &s
	}
	return p.parseInstructionRhs(name, shape, true), isRoot
}

// parseInstructionRhs parses "opcode(operands), attributes" for an
// instruction whose name and optional shape are already read.
func (p *parser) parseInstructionRhs(name string, shape *Shape, allowAttrs bool) *Instruction {
	in := &Instruction{Name: name, Parent: p.comp}
	opPos := p.pos
	in.SourcePos = p.position(opPos)
	in.Opcode = p.word("opcode")
	if !KnownOpcode(in.Opcode) {
		p.errorf(opPos, "unknown opcode %q", in.Opcode)
	}
	switch in.Opcode {
	case "constant":
		if shape == nil {
			p.errorf(opPos, "constant %q needs a shape", name)
		}
		p.expect(tLParen, "'('")
		in.Literal = p.parseLiteral(*shape)
		p.expect(tRParen, "')'")
	case "parameter":
		if shape == nil {
			p.errorf(opPos, "parameter %q needs a shape", name)
		}
		p.expect(tLParen, "'('")
		in.ParameterNumber = p.int64()
		p.expect(tRParen, "')'")
	default:
		p.parseOperands(in)
	}
	if allowAttrs {
		seen := map[string]bool{}
		// Attribute positions go to one growing slice shared by all
		// instructions (one allocation per many instructions).
		start := len(p.attrPos)
		for p.tok == tComma {
			if t, _ := p.peek(); t != tWord {
				break
			}
			p.next()
			p.parseAttr(in, seen)
		}
		if n := len(p.attrPos); n > start {
			in.AttrPos = p.attrPos[start:n:n]
		}
	}
	p.finishInstruction(in, opPos)
	if shape != nil {
		in.Shape = *shape
	} else {
		s, err := InferShape(in)
		if err != nil {
			p.errorf(opPos, "instruction %q has no shape and it cannot be inferred: %v", name, err)
		}
		in.Shape = s
	}
	p.comp.Instructions = append(p.comp.Instructions, in)
	p.instrs[name] = in
	return in
}

func (p *parser) parseOperands(in *Instruction) {
	p.expect(tLParen, "'('")
	in.Operands = []*Instruction{}
	for p.tok != tRParen {
		var shape *Shape
		shapePos := p.pos
		if p.startsShape() {
			s := p.parseShape()
			shape = &s
		}
		pos := p.pos
		name := p.word("operand name")
		var op *Instruction
		if p.tok == tLParen {
			// A nested instruction "shape opcode(operands)" used as an operand.
			p.nested++
			p.pos, p.tok, p.lit = pos, tWord, name
			p.sc.off = pos + len(name)
			op = p.parseInstructionRhs(fmt.Sprintf("%s.nested.%d", in.Name, p.nested), shape, false)
		} else {
			op = p.instrs[name]
			if op == nil {
				p.errorf(pos, "operand %q of %q is not defined earlier in computation %q", name, in.Name, p.comp.Name)
			}
			if shape != nil && !Compatible(*shape, op.Shape) {
				p.errorf(shapePos, "operand %q is written with shape %v but has shape %v", name, *shape, op.Shape)
			}
		}
		in.Operands = append(in.Operands, op)
		if !p.got(tComma) {
			break
		}
	}
	p.expect(tRParen, "')'")
}

// finishInstruction applies defaults and checks attributes that must come together.
func (p *parser) finishInstruction(in *Instruction, pos int) {
	switch in.Opcode {
	case "dot", "ragged-dot", "scaled-dot":
		if in.DotDims == nil {
			in.DotDims = &DotDimensionNumbers{}
		}
	}
	for i, c := range in.Called {
		if c == nil {
			p.errorf(pos, "%s %q is missing its %s computation", in.Opcode, in.Name, calledSlotNames(in.Opcode)[i])
		}
	}
}

// calledSlotNames names the fixed called-computation slots of an opcode.
func calledSlotNames(op string) []string {
	switch op {
	case "while":
		return []string{"condition", "body"}
	case "conditional":
		return []string{"true_computation", "false_computation"}
	case "select-and-scatter":
		return []string{"select", "scatter"}
	}
	return nil
}

func (p *parser) computationRef() *Computation {
	pos := p.pos
	name := p.word("computation name")
	c := p.comps[name]
	if c == nil {
		p.errorf(pos, "computation %q is not defined (callees must come before their callers)", name)
	}
	return c
}

func (p *parser) setCalledSlot(in *Instruction, slot int) {
	c := p.computationRef()
	for len(in.Called) <= slot {
		in.Called = append(in.Called, nil)
	}
	in.Called[slot] = c
}

func (p *parser) parseAttr(in *Instruction, seen map[string]bool) {
	pos := p.pos
	name := p.word("attribute name")
	if seen[name] {
		p.errorf(pos, "duplicate attribute %q", name)
	}
	seen[name] = true
	at := p.position(pos)
	p.attrPos = append(p.attrPos, AttrPos{Name: name, Line: int32(at.Line), Column: int32(at.Column)})
	p.expect(tEqual, "'='")
	gather := func() *GatherDimensionNumbers {
		if in.GatherDims == nil {
			in.GatherDims = &GatherDimensionNumbers{}
		}
		return in.GatherDims
	}
	scatter := func() *ScatterDimensionNumbers {
		if in.ScatterDims == nil {
			in.ScatterDims = &ScatterDimensionNumbers{}
		}
		return in.ScatterDims
	}
	dot := func() *DotDimensionNumbers {
		if in.DotDims == nil {
			in.DotDims = &DotDimensionNumbers{}
		}
		return in.DotDims
	}
	ragged := func() *RaggedDotDimensionNumbers {
		if in.RaggedDims == nil {
			in.RaggedDims = &RaggedDotDimensionNumbers{}
		}
		return in.RaggedDims
	}
	switch name {
	case "metadata":
		in.Metadata = p.metadata()
	case "sharding":
		in.Sharding = p.rawValue()
	case "frontend_attributes":
		in.FrontendAttrs = p.frontendAttrs()
	case "backend_config":
		if p.tok == tString {
			in.BackendConfig = p.lit
			p.next()
		} else {
			in.BackendConfig = p.rawValue()
		}
	case "control-predecessors":
		in.ControlPredecessors = []*Instruction{}
		p.list(func() {
			ppos := p.pos
			n := p.word("instruction name")
			c := p.instrs[n]
			if c == nil {
				p.errorf(ppos, "control predecessor %q of %q is not defined earlier in computation %q", n, in.Name, p.comp.Name)
			}
			in.ControlPredecessors = append(in.ControlPredecessors, c)
		})
	case "dimensions":
		in.Dimensions = p.ints()
	case "slice":
		in.Slice = []SliceDim{}
		p.list(func() {
			p.expect(tLBrack, "'['")
			d := SliceDim{Stride: 1}
			d.Start = p.int64()
			p.expect(tColon, "':'")
			d.Limit = p.int64()
			if p.got(tColon) {
				d.Stride = p.int64()
			}
			p.expect(tRBrack, "']'")
			in.Slice = append(in.Slice, d)
		})
	case "padding":
		in.Padding = p.padding()
	case "dynamic_slice_sizes":
		in.DynamicSliceSizes = p.ints()
	case "window":
		in.Window = p.window()
	case "dim_labels":
		in.ConvDims = p.dimLabels()
	case "feature_group_count":
		in.FeatureGroupCount = p.int64()
	case "batch_group_count":
		in.BatchGroupCount = p.int64()
	case "lhs_batch_dims":
		dot().LhsBatch = p.ints()
	case "rhs_batch_dims":
		dot().RhsBatch = p.ints()
	case "lhs_contracting_dims":
		dot().LhsContracting = p.ints()
	case "rhs_contracting_dims":
		dot().RhsContracting = p.ints()
	case "lhs_ragged_dims":
		ragged().LhsRaggedDims = p.ints()
	case "rhs_group_dims":
		ragged().RhsGroupDims = p.ints()
	case "operand_precision":
		in.OperandPrecision = []string{}
		p.list(func() { in.OperandPrecision = append(in.OperandPrecision, p.word("precision")) })
	case "algorithm":
		if in.Opcode == "rng-bit-generator" {
			in.RngAlgorithm = p.word("rng algorithm")
		} else {
			in.Algorithm = p.word("algorithm")
		}
	case "offset_dims":
		gather().OffsetDims = p.ints()
	case "collapsed_slice_dims":
		gather().CollapsedSliceDims = p.ints()
	case "start_index_map":
		gather().StartIndexMap = p.ints()
	case "operand_batching_dims":
		gather().OperandBatchingDims = p.ints()
	case "start_indices_batching_dims":
		gather().StartIndicesBatchingDims = p.ints()
	case "slice_sizes":
		in.GatherSliceSizes = p.ints()
	case "index_vector_dim":
		if in.Opcode == "scatter" {
			scatter().IndexVectorDim = p.int64()
		} else {
			gather().IndexVectorDim = p.int64()
		}
	case "update_window_dims":
		scatter().UpdateWindowDims = p.ints()
	case "inserted_window_dims":
		scatter().InsertedWindowDims = p.ints()
	case "scatter_dims_to_operand_dims":
		scatter().ScatterDimsToOperandDims = p.ints()
	case "input_batching_dims":
		scatter().InputBatchingDims = p.ints()
	case "scatter_indices_batching_dims":
		scatter().ScatterIndicesBatchingDims = p.ints()
	case "indices_are_sorted":
		in.IndicesAreSorted = p.bool()
	case "unique_indices":
		in.UniqueIndices = p.bool()
	case "direction":
		dpos := p.pos
		in.ComparisonDirection = p.word("comparison direction")
		switch in.ComparisonDirection {
		case "EQ", "NE", "LT", "LE", "GT", "GE":
		default:
			p.errorf(dpos, "unknown comparison direction %q", in.ComparisonDirection)
		}
	case "type":
		in.ComparisonType = p.word("comparison type")
	case "order":
		opos := p.pos
		in.ComparisonOrder = p.word("comparison order")
		switch in.ComparisonOrder {
		case "TOTAL", "WEAK", "PARTIAL":
		default:
			p.errorf(opos, "unknown comparison order %q (want TOTAL, WEAK or PARTIAL)", in.ComparisonOrder)
		}
	case "is_stable":
		in.IsStable = p.bool()
	case "k":
		in.K = p.int64()
	case "largest":
		in.Largest = p.bool()
	case "exponent_bits":
		in.ExponentBits = p.int64()
	case "mantissa_bits":
		in.MantissaBits = p.int64()
	case "fft_type":
		in.FFTType = p.word("fft type")
	case "fft_length":
		in.FFTLength = p.ints()
	case "distribution":
		in.RngDistribution = p.word("distribution")
	case "left_side":
		in.LeftSide = p.bool()
	case "lower":
		in.Lower = p.bool()
	case "unit_diagonal":
		in.UnitDiagonal = p.bool()
	case "transpose_a":
		in.TransposeA = p.word("transpose_a")
	case "epsilon":
		epos := p.pos
		v, err := strconv.ParseFloat(p.word("epsilon"), 32)
		if err != nil {
			p.errorf(epos, "invalid epsilon: %v", err)
		}
		in.Epsilon = float32(v)
	case "feature_index":
		in.FeatureIndex = p.int64()
	case "replica_groups":
		in.ReplicaGroups = p.replicaGroups()
	case "channel_id":
		in.ChannelID = p.int64()
	case "use_global_device_ids":
		in.UseGlobalDeviceIDs = p.bool()
	case "constrain_layout":
		in.ConstrainLayout = p.bool()
	case "source_target_pairs":
		in.SourceTargetPairs = [][2]int64{}
		p.list(func() {
			ppos := p.pos
			v := p.ints()
			if len(v) != 2 {
				p.errorf(ppos, "source_target_pairs entries must have 2 elements, found %d", len(v))
			}
			in.SourceTargetPairs = append(in.SourceTargetPairs, [2]int64{v[0], v[1]})
		})
	case "custom_call_target":
		in.CustomCallTarget = p.str("custom_call_target")
	case "api_version":
		in.APIVersion = p.word("api_version")
	case "custom_call_has_side_effect":
		in.CustomCallHasSideEffect = p.bool()
	case "output_to_operand_aliasing":
		in.OutputOperandAliasing = []OutputOperandAlias{}
		p.list(func() {
			var a OutputOperandAlias
			a.OutputIndex = p.ints()
			p.expect(tColon, "':'")
			p.expect(tLParen, "'('")
			a.Operand = p.int64()
			p.expect(tComma, "','")
			a.OperandIndex = p.ints()
			p.expect(tRParen, "')'")
			in.OutputOperandAliasing = append(in.OutputOperandAliasing, a)
		})
	case "operand_layout_constraints":
		in.OperandLayoutConstraints = []Shape{}
		p.list(func() { in.OperandLayoutConstraints = append(in.OperandLayoutConstraints, p.parseShape()) })
	case "kind":
		in.FusionKind = p.word("fusion kind")
	case "is_composite":
		in.IsComposite = p.bool()
	case "index":
		in.TupleIndex = p.int64()
	case "iota_dimension":
		in.IotaDimension = p.int64()
	case "to_apply", "calls":
		in.Called = append(in.Called, p.computationRef())
	case "called_computations", "branch_computations":
		p.list(func() { in.Called = append(in.Called, p.computationRef()) })
	case "condition", "true_computation", "select":
		p.setCalledSlot(in, 0)
	case "body", "false_computation", "scatter":
		p.setCalledSlot(in, 1)
	default:
		in.ExtraAttrs = append(in.ExtraAttrs, RawAttr{Name: name, Value: p.rawValue()})
	}
}

func (p *parser) metadata() *Metadata {
	md := &Metadata{}
	p.expect(tLBrace, "'{'")
	for p.tok != tRBrace {
		key := p.word("metadata field")
		p.expect(tEqual, "'='")
		switch key {
		case "op_type":
			md.OpType = p.str(key)
		case "op_name":
			md.OpName = p.str(key)
		case "source_file":
			md.SourceFile = p.str(key)
		case "source_line":
			md.SourceLine = p.int64()
		default:
			start := p.pos
			if p.tok == tLBrace {
				p.rawValue()
			} else if p.tok == tString || p.tok == tWord {
				p.next()
			} else {
				p.errorf(p.pos, "expected metadata value, found %s", p.describe())
			}
			md.Extra = append(md.Extra, RawAttr{Name: key, Value: string(p.sc.src[start:p.prevEnd])})
		}
		p.got(tComma)
	}
	p.expect(tRBrace, "'}'")
	return md
}

func (p *parser) frontendAttrs() map[string]string {
	out := map[string]string{}
	p.list(func() {
		var k string
		if p.tok == tString {
			k = p.str("key")
		} else {
			k = p.word("frontend attribute name")
		}
		p.expect(tEqual, "'='")
		switch p.tok {
		case tString:
			out[k] = p.str("value")
		case tLBrace:
			out[k] = p.rawValue()
		default:
			out[k] = p.word("frontend attribute value")
		}
	})
	return out
}

// dimsWord splits a dimension string like "3x3" or "1_1x0_2" into per-dimension parts.
func (p *parser) dimsWord(what string, parts int) ([][]int64, int) {
	pos := p.pos
	w := p.word(what)
	var out [][]int64
	for _, d := range strings.Split(w, "x") {
		fs := strings.Split(d, "_")
		if parts > 0 && len(fs) != parts && !(parts == 3 && len(fs) == 2) {
			p.errorf(pos, "invalid %s %q", what, w)
		}
		var vals []int64
		for _, f := range fs {
			v, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				p.errorf(pos, "invalid %s %q", what, w)
			}
			vals = append(vals, v)
		}
		out = append(out, vals)
	}
	return out, pos
}

func (p *parser) padding() []PadDim {
	dims, _ := p.dimsWord("padding", 3)
	out := make([]PadDim, len(dims))
	for i, d := range dims {
		out[i] = PadDim{Low: d[0], High: d[1]}
		if len(d) == 3 {
			out[i].Interior = d[2]
		}
	}
	return out
}

func (p *parser) window() []WindowDim {
	p.expect(tLBrace, "'{'")
	var out []WindowDim
	fields := map[string][][]int64{}
	var order []string
	for p.tok != tRBrace {
		kpos := p.pos
		key := p.word("window field")
		p.expect(tEqual, "'='")
		parts := 1
		if key == "pad" {
			parts = 2
		}
		switch key {
		case "size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal":
		default:
			p.errorf(kpos, "unknown window field %q", key)
		}
		if _, dup := fields[key]; dup {
			p.errorf(kpos, "duplicate window field %q", key)
		}
		v, vpos := p.dimsWord(key, parts)
		if len(order) > 0 && len(v) != len(fields[order[0]]) {
			p.errorf(vpos, "window field %s has %d dimensions, %s has %d", key, len(v), order[0], len(fields[order[0]]))
		}
		fields[key] = v
		order = append(order, key)
	}
	p.expect(tRBrace, "'}'")
	n := 0
	if len(order) > 0 {
		n = len(fields[order[0]])
	}
	out = make([]WindowDim, n)
	for i := range out {
		w := WindowDim{Size: 1, Stride: 1, BaseDilation: 1, WindowDilation: 1}
		if v, ok := fields["size"]; ok {
			w.Size = v[i][0]
		}
		if v, ok := fields["stride"]; ok {
			w.Stride = v[i][0]
		}
		if v, ok := fields["pad"]; ok {
			w.PadLow, w.PadHigh = v[i][0], v[i][1]
		}
		if v, ok := fields["lhs_dilate"]; ok {
			w.BaseDilation = v[i][0]
		}
		if v, ok := fields["rhs_dilate"]; ok {
			w.WindowDilation = v[i][0]
		}
		if v, ok := fields["rhs_reversal"]; ok {
			w.WindowReversal = v[i][0] != 0
		}
		out[i] = w
	}
	return out
}

// dimLabels parses "b01f_01io->b01f": each letter names the role of the
// dimension at its position; digits are spatial dimensions in order.
func (p *parser) dimLabels() *ConvDimensionNumbers {
	pos := p.pos
	lhsKernel := p.word("dim_labels")
	p.expect(tArrow, "'->'")
	out := p.word("dim_labels output")
	halves := strings.Split(lhsKernel, "_")
	if len(halves) != 2 {
		p.errorf(pos, "dim_labels must look like b01f_01io->b01f")
	}
	cd, err := parseDimLabels(halves[0], halves[1], out)
	if err != nil {
		p.errorf(pos, "invalid dim_labels: %v", err)
	}
	return cd
}

func parseDimLabels(in, kernel, out string) (*ConvDimensionNumbers, error) {
	if len(in) != len(kernel) || len(in) != len(out) || len(in) < 2 {
		return nil, fmt.Errorf("input, kernel and output labels must have the same rank ≥ 2: %q %q %q", in, kernel, out)
	}
	nsp := len(in) - 2
	role := func(labels, a, b string) (int64, int64, []int64, error) {
		ia, ib := int64(-1), int64(-1)
		sp := make([]int64, nsp)
		for i := range sp {
			sp[i] = -1
		}
		for i := 0; i < len(labels); i++ {
			c := labels[i]
			switch {
			case c == a[0] && ia < 0:
				ia = int64(i)
			case c == b[0] && ib < 0:
				ib = int64(i)
			case c >= '0' && c <= '9' && int(c-'0') < nsp && sp[c-'0'] < 0:
				sp[c-'0'] = int64(i)
			default:
				return 0, 0, nil, fmt.Errorf("unexpected or repeated label %q in %q", c, labels)
			}
		}
		return ia, ib, sp, nil
	}
	cd := &ConvDimensionNumbers{}
	var err error
	if cd.InputBatch, cd.InputFeature, cd.InputSpatial, err = role(in, "b", "f"); err != nil {
		return nil, err
	}
	if cd.KernelInputFeature, cd.KernelOutputFeature, cd.KernelSpatial, err = role(kernel, "i", "o"); err != nil {
		return nil, err
	}
	if cd.OutputBatch, cd.OutputFeature, cd.OutputSpatial, err = role(out, "b", "f"); err != nil {
		return nil, err
	}
	return cd, nil
}

func (p *parser) replicaGroups() *ReplicaGroups {
	rg := &ReplicaGroups{}
	if p.isWord("mesh") || p.isWord("maximal_mesh") {
		rg.Mesh = p.meshAxesGroups()
		return rg
	}
	if p.tok == tLBrack {
		io := &IotaReplicaGroups{}
		pos := p.pos
		p.next()
		g := p.int64()
		p.expect(tComma, "','")
		s := p.int64()
		p.expect(tRBrack, "']'")
		io.GroupShape = [2]int64{g, s}
		p.expect(tLeq, "'<='")
		p.expect(tLBrack, "'['")
		for p.tok != tRBrack {
			io.ReshapeDims = append(io.ReshapeDims, p.int64())
			if !p.got(tComma) {
				break
			}
		}
		p.expect(tRBrack, "']'")
		if p.isWord("T") {
			p.next()
			p.expect(tLParen, "'('")
			for p.tok != tRParen {
				io.Transpose = append(io.Transpose, p.int64())
				if !p.got(tComma) {
					break
				}
			}
			p.expect(tRParen, "')'")
		}
		n := tensorNumElements(io.ReshapeDims)
		if n < 0 || g < 0 || s < 0 || n != g*s {
			p.errorf(pos, "iota replica groups [%d,%d] do not match reshape dims %v", g, s, io.ReshapeDims)
		}
		if io.Transpose != nil && !isPermutation(io.Transpose, len(io.ReshapeDims)) {
			p.errorf(pos, "iota replica groups transpose %v is not a permutation of %d dims", io.Transpose, len(io.ReshapeDims))
		}
		rg.Iota = io
		return rg
	}
	rg.Groups = [][]int64{}
	p.list(func() { rg.Groups = append(rg.Groups, p.ints()) })
	return rg
}

// ---- shapes ----

func (p *parser) parseShape() Shape {
	if p.got(tLParen) {
		s := Shape{Elem: dtype.Tuple, Tuple: []Shape{}}
		for p.tok != tRParen {
			s.Tuple = append(s.Tuple, p.parseShape())
			if !p.got(tComma) {
				break
			}
		}
		p.expect(tRParen, "')'")
		return s
	}
	pos := p.pos
	name := p.word("shape")
	t, ok := dtype.FromHLO(name)
	if !ok || t == dtype.Tuple {
		p.errorf(pos, "unknown element type %q", name)
	}
	s := Shape{Elem: t, Dims: []int64{}}
	p.expect(tLBrack, "'['")
	for p.tok != tRBrack {
		dyn := false
		var d int64
		switch {
		case p.got(tLeq):
			dyn = true
			d = p.int64()
		case p.got(tQuestion):
			dyn = true
			d = UnboundedDim
		default:
			dpos := p.pos
			d = p.int64()
			if d < 0 {
				p.errorf(dpos, "negative dimension %d", d)
			}
		}
		if dyn && s.DynamicDims == nil {
			s.DynamicDims = make([]bool, len(s.Dims))
		}
		s.Dims = append(s.Dims, d)
		if s.DynamicDims != nil {
			s.DynamicDims = append(s.DynamicDims, dyn)
		}
		if !p.got(tComma) {
			break
		}
	}
	p.expect(tRBrack, "']'")
	if !t.IsArray() && len(s.Dims) > 0 {
		p.errorf(pos, "%s shape cannot have dimensions", name)
	}
	if p.tok == tLBrace && p.layoutFollows() {
		s.Layout = p.parseLayout(len(s.Dims))
	}
	return s
}

// layoutFollows tells a layout "{1,0}" after a shape from the '{' that opens
// a computation body after its signature.
func (p *parser) layoutFollows() bool {
	t, lit := p.peek()
	return t == tRBrace || t == tColon || t == tWord && lit != "" && lit[0] >= '0' && lit[0] <= '9'
}

func (p *parser) parseLayout(rank int) *Layout {
	pos := p.pos
	p.expect(tLBrace, "'{'")
	l := &Layout{MinorToMajor: []int64{}}
	for p.tok == tWord {
		l.MinorToMajor = append(l.MinorToMajor, p.int64())
		if !p.got(tComma) {
			break
		}
	}
	if len(l.MinorToMajor) != 0 && !isPermutation(l.MinorToMajor, rank) {
		p.errorf(pos, "layout %v is not a permutation of %d dimensions", l.MinorToMajor, rank)
	}
	if p.got(tColon) {
		for p.tok != tRBrace && p.tok != tEOF {
			ipos := p.pos
			switch {
			case p.isWord("T"):
				p.next()
				for p.tok == tLParen {
					p.next()
					var t Tile
					for p.tok != tRParen {
						if p.got(tStar) {
							t.Dims = append(t.Dims, TileCombineDim)
						} else {
							t.Dims = append(t.Dims, p.int64())
						}
						if !p.got(tComma) {
							break
						}
					}
					p.expect(tRParen, "')'")
					l.Tiles = append(l.Tiles, t)
				}
			case p.isWord("E"):
				p.next()
				p.expect(tLParen, "'('")
				l.ElementSizeBits = p.int64()
				p.expect(tRParen, "')'")
			case p.isWord("S"):
				p.next()
				p.expect(tLParen, "'('")
				l.MemorySpace = p.int64()
				p.expect(tRParen, "')'")
			case p.tok == tWord || p.tok == tStar:
				p.next()
				if p.tok != tLParen {
					p.errorf(ipos, "expected '(' after layout item")
				}
				depth := 0
				for {
					if p.tok == tLParen {
						depth++
					} else if p.tok == tRParen {
						depth--
					} else if p.tok == tEOF {
						p.errorf(ipos, "unterminated layout item")
					}
					p.next()
					if depth == 0 && p.tok != tLParen {
						break
					}
				}
				l.Extra = append(l.Extra, string(p.sc.src[ipos:p.prevEnd]))
			default:
				p.errorf(p.pos, "unexpected %s in layout", p.describe())
			}
		}
	}
	p.expect(tRBrace, "'}'")
	return l
}

func isPermutation(v []int64, n int) bool {
	if len(v) != n {
		return false
	}
	seen := make([]bool, n)
	for _, x := range v {
		if x < 0 || x >= int64(n) || seen[x] {
			return false
		}
		seen[x] = true
	}
	return true
}
