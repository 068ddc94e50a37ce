package eval

// Scalar programs: small computations over scalars (reducers, sort
// comparators, map and scatter computations, select-and-scatter's select and
// scatter) compiled once into a flat list of register steps, so callers that
// apply them per element skip the interpreter (its maps, one tensor per value).
//
// A register is a uint64 holding one value:
//   - floats: their storage bits (so NaN payloads survive select and copies
//     as they do in tensors); f32 and narrower types decode to float32 for
//     arithmetic and encode the result, rounding once per op as the tensor
//     path does;
//   - signed integers: sign-extended to 64 bits; unsigned and pred: the
//     stored value zero-extended (normalized to the width after every op);
//   - c64/c128 take two consecutive registers, real then imaginary part.
//
// Each step reproduces the tensor kernels' per-op semantics — flushing
// subnormal inputs and results, NaN-propagating maximum/minimum, TOTALORDER
// keys, integer wrap — mostly by calling the same kernels on one-element
// slices; ops without a dedicated step (converts to and from f64 or
// integers, complex unary math, reduce-precision, clamp, ...) run the registered tensor op on one-element
// tensors, which is slower but still far cheaper than Evaluator.Call.
// Anything else (calls, tuple-shaped parameters, non-scalar values) makes
// compileScalar return nil and the caller keeps its interpreter path.

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"weak"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// scalarStep executes one instruction on a machine's registers.
type scalarStep func(m *scalarMachine)

// sreg is a value's first register and its element type.
type sreg struct {
	reg int
	typ dtype.Type
}

// scalarProgram is a compiled scalar computation. It is immutable and shared:
// every evaluation runs on its own scalarMachine.
type scalarProgram struct {
	params  []sreg
	results []sreg
	init    []uint64 // the register file's initial contents: constants, zeros elsewhere
	steps   []scalarStep
	// lanes[i], when set, is steps[i] as runLanes computes it.
	lanes []*laneStep
	// stepIO[i] is the destination and the operands of steps[i], for
	// callers that partition the program (sort's per-side precompute).
	stepIO []stepIO
	// resultsAliasParams is set when a result reads a parameter's register, so
	// feeding results back into parameters (a reducer's accumulators) must go
	// through a copy.
	resultsAliasParams bool
}

// stepIO is what one step writes and reads.
type stepIO struct {
	dst  sreg
	srcs []sreg
}

// scalarMachine is one evaluation context of a program: its registers and the
// first error a step reported.
type scalarMachine struct {
	p   *scalarProgram
	r   []uint64
	tmp []uint64
	err error
	// in and out are a one-element operand and result for the f32 kernels,
	// the machine's own so that a step allocates nothing.
	in, out [1]float32
}

// slots is the number of registers a value of type t occupies.
func slots(t dtype.Type) int {
	if t.IsComplex() {
		return 2
	}
	return 1
}

// scalarCache maps weak.Pointer[hlo.Computation] to its *scalarProgram (nil
// when the computation is not compilable). Entries go away with their
// computation, so long-running embedders loading many modules do not leak.
var scalarCache sync.Map

// scalarOff disables scalar programs, so tests and benchmarks can run the
// interpreter path as the reference.
var scalarOff bool

// compileScalar returns the compiled form of c, or nil when c uses anything
// scalar programs do not support.
func compileScalar(c *hlo.Computation) *scalarProgram {
	if c == nil || scalarOff {
		return nil
	}
	key := weak.Make(c)
	if v, ok := scalarCache.Load(key); ok {
		return v.(*scalarProgram)
	}
	p, _ := buildScalar(c)
	if _, loaded := scalarCache.LoadOrStore(key, p); !loaded {
		runtime.AddCleanup(c, func(k weak.Pointer[hlo.Computation]) { scalarCache.Delete(k) }, key)
	}
	return p
}

// takes reports whether the program's parameters have exactly these types.
func (p *scalarProgram) takes(types ...dtype.Type) bool {
	if len(p.params) != len(types) {
		return false
	}
	for i, t := range types {
		if p.params[i].typ != t {
			return false
		}
	}
	return true
}

// returns reports whether the program's results have exactly these types.
func (p *scalarProgram) returns(types ...dtype.Type) bool {
	if len(p.results) != len(types) {
		return false
	}
	for i, t := range types {
		if p.results[i].typ != t {
			return false
		}
	}
	return true
}

func (p *scalarProgram) machine() *scalarMachine {
	m := &scalarMachine{p: p, r: append([]uint64(nil), p.init...)}
	if p.resultsAliasParams {
		for _, r := range p.results {
			m.tmp = append(m.tmp, make([]uint64, slots(r.typ))...)
		}
	}
	return m
}

func (m *scalarMachine) run() {
	for _, s := range m.p.steps {
		s(m)
	}
}

// set loads element i of a into parameter k.
func (m *scalarMachine) set(k int, a regArray, i int64) {
	reg := m.p.params[k].reg
	if a.ns == 1 {
		m.r[reg] = a.w[i]
		return
	}
	m.r[reg], m.r[reg+1] = a.w[2*i], a.w[2*i+1]
}

// result returns the registers of result k.
func (m *scalarMachine) result(k int) []uint64 {
	r := m.p.results[k]
	return m.r[r.reg : r.reg+slots(r.typ)]
}

// feedBack copies results 0..n-1 into parameters 0..n-1 (a reducer's
// accumulators).
func (m *scalarMachine) feedBack(n int) {
	if !m.p.resultsAliasParams {
		for k := 0; k < n; k++ {
			m.copyReg(m.p.params[k], m.p.results[k])
		}
		return
	}
	off := 0
	for k := 0; k < n; k++ {
		off += copy(m.tmp[off:], m.result(k))
	}
	off = 0
	for k := 0; k < n; k++ {
		p := m.p.params[k]
		off += copy(m.r[p.reg:p.reg+slots(p.typ)], m.tmp[off:])
	}
}

func (m *scalarMachine) copyReg(dst, src sreg) {
	m.r[dst.reg] = m.r[src.reg]
	if slots(dst.typ) == 2 {
		m.r[dst.reg+1] = m.r[src.reg+1]
	}
}

// fail records the first error of an evaluation.
func (m *scalarMachine) fail(err error) {
	if m.err == nil {
		m.err = err
	}
}

// regArray holds a tensor's elements in register form, ns registers each.
type regArray struct {
	typ dtype.Type
	ns  int
	w   []uint64
}

// toRegs converts every element of t to register form.
func toRegs(t *tensor.Tensor) regArray {
	n := int(t.NumElements())
	a := regArray{typ: t.Type, ns: slots(t.Type)}
	a.w = make([]uint64, n*a.ns)
	switch classOf(t.Type) {
	case classF32:
		switch t.Type.Size() {
		case 4:
			for i, v := range t.U32() {
				a.w[i] = uint64(v)
			}
		case 2:
			for i, v := range t.U16() {
				a.w[i] = uint64(v)
			}
		default:
			for i, v := range t.Data {
				a.w[i] = uint64(v)
			}
		}
	case classF64:
		copy(a.w, t.U64())
	case classSigned:
		for i, v := range asI64(t) {
			a.w[i] = uint64(v)
		}
	case classUnsigned, classPred:
		copy(a.w, asU64(t))
	case classC64:
		for i, v := range t.C64() {
			a.w[2*i], a.w[2*i+1] = uint64(math.Float32bits(real(v))), uint64(math.Float32bits(imag(v)))
		}
	case classC128:
		for i, v := range t.C128() {
			a.w[2*i], a.w[2*i+1] = math.Float64bits(real(v)), math.Float64bits(imag(v))
		}
	}
	return a
}

// at returns the registers of element i.
func (a regArray) at(i int64) []uint64 { return a.w[int(i)*a.ns : int(i+1)*a.ns] }

// storeReg writes a value in register form as element i of t (t.Type must
// be the value's type).
func storeReg(t *tensor.Tensor, i int64, r []uint64) {
	size := t.Type.Size()
	d := t.Data[int(i)*size : int(i+1)*size]
	switch classOf(t.Type) {
	case classSigned, classUnsigned, classPred:
		if t.Type.IsSubByte() {
			d[0] = byte(r[0]) & (1<<uint(t.Type.Bits()) - 1)
			return
		}
		putBits(d, size, r[0])
	case classC64, classC128:
		putBits(d, size/2, r[0])
		putBits(d[size/2:], size/2, r[1])
	default: // floats
		putBits(d, size, r[0])
	}
}

// loadReg reads element i of t into register form (one element of toRegs).
func loadReg(t *tensor.Tensor, i int64, dst []uint64) {
	size := t.Type.Size()
	d := t.Data[int(i)*size : int(i+1)*size]
	switch classOf(t.Type) {
	case classSigned:
		dst[0] = uint64(dtype.DecodeInt(t.Type, readBits(d)))
	case classUnsigned:
		dst[0] = readBits(d) & widthMask(t.Type.Bits())
	case classC64, classC128:
		dst[0], dst[1] = readBits(d[:size/2]), readBits(d[size/2:])
	default: // floats, pred (its raw byte, as asU64 reads it)
		dst[0] = readBits(d)
	}
}

// readBits reads len(d) bytes little-endian.
func readBits(d []byte) uint64 {
	var v uint64
	for i := len(d) - 1; i >= 0; i-- {
		v = v<<8 | uint64(d[i])
	}
	return v
}

// scalarTensor builds a rank-0 tensor of type t from registers.
func scalarTensor(t dtype.Type, r []uint64) *tensor.Tensor {
	out := tensor.New(t, nil)
	storeReg(out, 0, r)
	return out
}

// scalarValue is what an instruction of a scalar program evaluates to: a
// register, or a tuple of them.
type scalarValue struct {
	sreg
	tuple []scalarValue
	isTup bool
}

type scalarBuilder struct {
	p    *scalarProgram
	vals map[*hlo.Instruction]scalarValue
}

func isScalarShape(s hlo.Shape) bool {
	return s.IsArray() && len(s.Dims) == 0
}

func (b *scalarBuilder) alloc(t dtype.Type) sreg {
	r := sreg{reg: len(b.p.init), typ: t}
	b.p.init = append(b.p.init, make([]uint64, slots(t))...)
	return r
}

// buildScalar compiles c, or says why it cannot.
func buildScalar(c *hlo.Computation) (*scalarProgram, error) {
	if c.Root == nil {
		return nil, fmt.Errorf("computation %s has no root", c.Name)
	}
	b := &scalarBuilder{p: &scalarProgram{}, vals: map[*hlo.Instruction]scalarValue{}}
	for i, p := range c.Params {
		if p == nil || !isScalarShape(p.Shape) {
			return nil, fmt.Errorf("parameter %d is not a scalar", i)
		}
		r := b.alloc(p.Shape.Elem)
		b.p.params = append(b.p.params, r)
		b.vals[p] = scalarValue{sreg: r}
	}
	live := map[*hlo.Instruction]bool{}
	var mark func(in *hlo.Instruction)
	mark = func(in *hlo.Instruction) {
		if live[in] {
			return
		}
		live[in] = true
		for _, op := range in.Operands {
			mark(op)
		}
	}
	mark(c.Root)
	for _, in := range c.Instructions {
		if !live[in] || in.Opcode == "parameter" {
			continue
		}
		if err := b.emit(in); err != nil {
			return nil, fmt.Errorf("%s: %w", in.Name, err)
		}
	}
	root, ok := b.vals[c.Root]
	if !ok {
		return nil, fmt.Errorf("root %s has no value", c.Root.Name)
	}
	if !root.isTup {
		b.p.results = []sreg{root.sreg}
	}
	for _, e := range root.tuple {
		if e.isTup {
			return nil, fmt.Errorf("root is a nested tuple")
		}
		b.p.results = append(b.p.results, e.sreg)
	}
	for _, r := range b.p.results {
		for _, p := range b.p.params {
			if r.reg == p.reg {
				b.p.resultsAliasParams = true
			}
		}
	}
	return b.p, nil
}

// scalarOperands returns the register of each operand, all of which must be
// scalars.
func (b *scalarBuilder) scalarOperands(in *hlo.Instruction) ([]sreg, error) {
	out := make([]sreg, len(in.Operands))
	for i, op := range in.Operands {
		v, ok := b.vals[op]
		if !ok || v.isTup {
			return nil, fmt.Errorf("operand %d is not a scalar", i)
		}
		out[i] = v.sreg
	}
	return out, nil
}

// scalarGenericOps are the pure elementwise opcodes a program may run through
// their tensor evaluator (which ignores the *Evaluator argument).
var scalarGenericOps = func() map[string]bool {
	m := map[string]bool{"compare": true, "select": true, "clamp": true, "convert": true,
		"bitcast-convert": true, "reduce-precision": true, "complex": true}
	for _, op := range unaryOpcodes {
		m[op] = true
	}
	for _, op := range binaryOpcodes {
		m[op] = true
	}
	return m
}()

func (b *scalarBuilder) emit(in *hlo.Instruction) error {
	switch in.Opcode {
	case "tuple":
		v := scalarValue{isTup: true}
		for _, op := range in.Operands {
			e, ok := b.vals[op]
			if !ok {
				return fmt.Errorf("operand %s has no value", op.Name)
			}
			v.tuple = append(v.tuple, e)
		}
		b.vals[in] = v
		return nil
	case "get-tuple-element":
		if len(in.Operands) != 1 {
			return fmt.Errorf("get-tuple-element needs one operand")
		}
		t := b.vals[in.Operands[0]]
		if !t.isTup || in.TupleIndex < 0 || int(in.TupleIndex) >= len(t.tuple) {
			return fmt.Errorf("bad get-tuple-element")
		}
		b.vals[in] = t.tuple[in.TupleIndex]
		return nil
	}
	if !isScalarShape(in.Shape) {
		return fmt.Errorf("result is not a scalar")
	}
	args, err := b.scalarOperands(in)
	if err != nil {
		return err
	}
	res := in.Shape.Elem
	switch in.Opcode {
	case "constant":
		if in.Literal == nil || in.Literal.Tensor == nil || in.Literal.Tensor.NumElements() != 1 || in.Literal.Tensor.Type != res {
			return fmt.Errorf("constant is not a %v scalar", res)
		}
		r := b.alloc(res)
		copy(b.p.init[r.reg:], toRegs(in.Literal.Tensor).w)
		b.vals[in] = scalarValue{sreg: r}
		return nil
	case "copy", "reshape", "bitcast", "broadcast", "transpose", "convert":
		// Scalar-to-scalar forms of these move no bits when the type stays.
		if len(args) == 1 && args[0].typ == res {
			b.vals[in] = scalarValue{sreg: args[0]}
			return nil
		}
	}
	if !scalarGenericOps[in.Opcode] {
		return Unsupported("opcode %q in a scalar program", in.Opcode)
	}
	dst := b.alloc(res)
	b.vals[in] = scalarValue{sreg: dst}
	s := fastStep(in, args, dst)
	fast := s != nil
	if s == nil {
		if s, err = genericStep(in, args, dst); err != nil {
			return err
		}
	}
	var ls *laneStep
	if fast && len(args) == 1 && unaryOpcodeSet[in.Opcode] {
		ls = laneStepFor(in.Opcode, args[0], dst)
	}
	b.p.steps = append(b.p.steps, s)
	b.p.lanes = append(b.p.lanes, ls)
	b.p.stepIO = append(b.p.stepIO, stepIO{dst: dst, srcs: args})
	return nil
}

// scalarEvaluator is the evaluator generic steps hand their op functions:
// the allowed ops are pure and do not use it, but must not get nil.
var scalarEvaluator = &Evaluator{Ctx: context.Background()}

// genericStep runs in's tensor evaluator on one-element tensors. It is tried
// once on zero operands at compile time, so a combination the evaluator
// rejects makes the whole computation fall back instead of failing later.
func genericStep(in *hlo.Instruction, args []sreg, dst sreg) (scalarStep, error) {
	f := ops[in.Opcode]
	// A detached copy: the step must not keep the computation reachable
	// (the program cache holds computations weakly).
	shell := *in
	shell.Called, shell.ControlPredecessors, shell.Parent, shell.Literal = nil, nil, nil, nil
	// Evaluators may look at what an operand is (compare treats constants
	// specially); stubs keep that without the operand's graph.
	shell.Operands = make([]*hlo.Instruction, len(in.Operands))
	for i, op := range in.Operands {
		stub := &hlo.Instruction{Name: op.Name, Opcode: "parameter", Shape: op.Shape}
		if isConstantLike(op) {
			stub.Opcode = "constant"
		}
		shell.Operands[i] = stub
	}
	step := func(m *scalarMachine) {
		vals := make([]Value, len(args))
		for i, a := range args {
			vals[i] = ArrayValue(scalarTensor(a.typ, m.r[a.reg:a.reg+slots(a.typ)]))
		}
		v, err := f(scalarEvaluator, &shell, vals)
		if err == nil && (v.T == nil || v.T.Type != dst.typ || v.T.NumElements() != 1) {
			err = fmt.Errorf("%s did not return a %v scalar", shell.Opcode, dst.typ)
		}
		if err != nil {
			m.fail(fmt.Errorf("%s (%s): %w", shell.Name, shell.Opcode, err))
			return
		}
		copy(m.r[dst.reg:], toRegs(v.T).w)
	}
	probe := &scalarMachine{r: make([]uint64, dst.reg+2)}
	func() {
		defer func() {
			if r := recover(); r != nil {
				probe.err = fmt.Errorf("internal error: %v", r)
			}
		}()
		step(probe)
	}()
	if probe.err != nil {
		return nil, probe.err
	}
	return step, nil
}

// fastStep returns a dedicated step for in, or nil to use genericStep.
func fastStep(in *hlo.Instruction, args []sreg, dst sreg) scalarStep {
	switch {
	case in.Opcode == "select" && len(args) == 3:
		return selectStep(args, dst)
	case in.Opcode == "compare" && len(args) == 2:
		ctype, err := in.EffectiveComparisonType()
		if err != nil {
			return nil
		}
		return compareStep(in.ComparisonDirection, ctype, bf16CompareFlushes(in), args[0], args[1], dst)
	case in.Opcode == "convert" && len(args) == 1:
		return convertStep(args[0], dst)
	case len(args) == 1 && unaryOpcodeSet[in.Opcode]:
		return unaryStep(in.Opcode, args[0], dst)
	case len(args) == 2 && binaryOpcodeSet[in.Opcode]:
		if args[0].typ != dst.typ || args[1].typ != dst.typ {
			return nil
		}
		return binaryStep(in.Opcode, args[0].reg, args[1].reg, dst)
	}
	return nil
}

var unaryOpcodeSet, binaryOpcodeSet = setOf(unaryOpcodes), setOf(binaryOpcodes)

func setOf(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func selectStep(args []sreg, dst sreg) scalarStep {
	p, a, b := args[0], args[1], args[2]
	if p.typ != dtype.Pred || a.typ != dst.typ || b.typ != dst.typ {
		return nil
	}
	d, pr, ar, br := dst.reg, p.reg, a.reg, b.reg
	if slots(dst.typ) == 2 {
		return func(m *scalarMachine) {
			r := m.r
			s := br
			if r[pr] != 0 {
				s = ar
			}
			r[d], r[d+1] = r[s], r[s+1]
		}
	}
	return func(m *scalarMachine) {
		r := m.r
		if r[pr] != 0 {
			r[d] = r[ar]
		} else {
			r[d] = r[br]
		}
	}
}

// f32of reads an f32 register.
func f32of(r uint64) float32 { return math.Float32frombits(uint32(r)) }

// decoder returns how a classF32 type's register decodes to float32.
func decoder(t dtype.Type) func(uint64) float32 {
	if t == dtype.F32 {
		return f32of
	}
	return func(r uint64) float32 { return dtype.ToF32(t, r) }
}

// flush is ftz/daz for one value.
func flush[F float](v F) F {
	m := F(minNormal[F]())
	if v != 0 && v < m && v > -m {
		return v * 0
	}
	return v
}

// encoder returns how a classF32 type's float32 result is flushed and
// rounded into its register, as the tensor path's ftz and encode do.
func encoder(t dtype.Type) func(float32) uint64 {
	if t == dtype.F32 {
		return func(v float32) uint64 { return uint64(math.Float32bits(flush(v))) }
	}
	return func(v float32) uint64 { return dtype.FromF32(t, flush(v)) }
}

// compareStep mirrors compare(): which operands are flushed depends on the
// type, the comparison type and (bf16) the instruction's operands.
func compareStep(dir, ctype string, flushBF16 bool, a, b sreg, dst sreg) scalarStep {
	if a.typ != b.typ || dst.typ != dtype.Pred {
		return nil
	}
	if ctype == "" {
		ctype = defaultComparison(a.typ)
	}
	x, y, d := a.reg, b.reg, dst.reg
	total := ctype == "TOTALORDER"
	switch classOf(a.typ) {
	case classF32:
		daz := (a.typ == dtype.F32 || a.typ == dtype.BF16) && flushBF16 && !total
		dec := decoder(a.typ)
		key := func(r uint64) float32 {
			v := dec(r)
			if daz {
				v = flush(v)
			}
			return v
		}
		if total {
			c := cmpFunc[int32](dir)
			if c == nil {
				return nil
			}
			if a.typ == dtype.F32 {
				return func(m *scalarMachine) {
					r := m.r
					r[d] = b2u64(c(totalOrderKey32(f32of(r[x])), totalOrderKey32(f32of(r[y]))))
				}
			}
			return func(m *scalarMachine) {
				r := m.r
				r[d] = b2u64(c(totalOrderKey32(key(r[x])), totalOrderKey32(key(r[y]))))
			}
		}
		c := cmpFunc[float32](dir)
		if c == nil {
			return nil
		}
		if a.typ == dtype.F32 {
			return func(m *scalarMachine) {
				r := m.r
				r[d] = b2u64(c(flush(f32of(r[x])), flush(f32of(r[y]))))
			}
		}
		return func(m *scalarMachine) { r := m.r; r[d] = b2u64(c(key(r[x]), key(r[y]))) }
	case classF64:
		f := func(r uint64) float64 { return flush(math.Float64frombits(r)) }
		if total {
			c := cmpFunc[int64](dir)
			if c == nil {
				return nil
			}
			return func(m *scalarMachine) { r := m.r; r[d] = b2u64(c(totalOrderKey(f(r[x])), totalOrderKey(f(r[y])))) }
		}
		c := cmpFunc[float64](dir)
		if c == nil {
			return nil
		}
		return func(m *scalarMachine) { r := m.r; r[d] = b2u64(c(f(r[x]), f(r[y]))) }
	case classSigned, classUnsigned, classPred:
		if ctype == "SIGNED" {
			c := cmpFunc[int64](dir)
			if c == nil {
				return nil
			}
			return func(m *scalarMachine) { r := m.r; r[d] = b2u64(c(int64(r[x]), int64(r[y]))) }
		}
		// UNSIGNED (and anything else) compares the bit patterns of the width.
		c := cmpFunc[uint64](dir)
		if c == nil {
			return nil
		}
		mask := widthMask(intBits(a.typ))
		if a.typ == dtype.Pred {
			mask = math.MaxUint64
		}
		return func(m *scalarMachine) { r := m.r; r[d] = b2u64(c(r[x]&mask, r[y]&mask)) }
	}
	return nil
}

func totalOrderKey32(v float32) int32 {
	k := int32(math.Float32bits(v))
	if k < 0 {
		k ^= math.MaxInt32
	}
	return k
}

func cmpFunc[T cmp.Ordered](dir string) func(a, b T) bool {
	switch dir {
	case "EQ":
		return func(a, b T) bool { return a == b }
	case "NE":
		return func(a, b T) bool { return a != b }
	case "LT":
		return func(a, b T) bool { return a < b }
	case "LE":
		return func(a, b T) bool { return a <= b }
	case "GT":
		return func(a, b T) bool { return a > b }
	case "GE":
		return func(a, b T) bool { return a >= b }
	}
	return nil
}

func b2u64(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// widthMask is the mask of the low bits bits.
func widthMask(bits int) uint64 {
	if bits >= 64 {
		return math.MaxUint64
	}
	return 1<<uint(bits) - 1
}

// normalizer returns how an integer type's register is brought back to its
// width after an op: sign-extension for signed types, masking otherwise.
func normalizer(t dtype.Type) func(uint64) uint64 {
	w := intBits(t)
	if w >= 64 {
		return func(v uint64) uint64 { return v }
	}
	if t.IsSigned() {
		return func(v uint64) uint64 { return uint64(signExtend(v, w)) }
	}
	mask := widthMask(w)
	return func(v uint64) uint64 { return v & mask }
}

// convertStep handles the integer-to-integer converts, which only wrap
// (or test != 0 for pred), like newFromI64, and converts from f32-class
// floats to f32, bf16, f16 and f64, which round once (convert).
func convertStep(a, dst sreg) scalarStep {
	x, d := a.reg, dst.reg
	switch dst.typ {
	case dtype.F32, dtype.BF16, dtype.F16, dtype.F64:
	default:
		if !isIntClass(a.typ) || !isIntClass(dst.typ) {
			return nil // f8/f4 targets have NaN quirks (convert's markNaN): generic
		}
	}
	if classOf(a.typ) == classF32 && dst.typ.IsFloat() {
		dec := decoder(a.typ)
		// As convert: f32 and bf16 -> f64 go through a real f32 instruction
		// (flushing); narrowing is bit arithmetic that keeps subnormals.
		daz := (a.typ == dtype.F32 || a.typ == dtype.BF16) && dst.typ == dtype.F64
		to := dst.typ
		return func(m *scalarMachine) {
			v := dec(m.r[x])
			if daz {
				v = flush(v)
			}
			if to == dtype.F64 {
				m.r[d] = math.Float64bits(float64(v))
			} else {
				m.r[d] = dtype.FromF32(to, v)
			}
		}
	}
	if !isIntClass(a.typ) || !isIntClass(dst.typ) {
		return nil
	}
	if dst.typ == dtype.Pred {
		return func(m *scalarMachine) { m.r[d] = b2u64(m.r[x] != 0) }
	}
	norm := normalizer(dst.typ)
	return func(m *scalarMachine) { m.r[d] = norm(m.r[x]) }
}

func isIntClass(t dtype.Type) bool {
	switch classOf(t) {
	case classSigned, classUnsigned, classPred:
		return true
	}
	return false
}

func unaryStep(op string, a, dst sreg) scalarStep {
	x, d := a.reg, dst.reg
	switch classOf(a.typ) {
	case classF32:
		if op == "is-finite" && dst.typ == dtype.Pred {
			dec := decoder(a.typ)
			return func(m *scalarMachine) { v := dec(m.r[x]); m.r[d] = b2u64(v-v == 0) }
		}
		if dst.typ != a.typ {
			return nil
		}
		// The sign-bit ops work on the encoding, unflushed (signBitOp); only
		// f32's is its register.
		switch {
		case op == "negate" && a.typ == dtype.F32:
			return func(m *scalarMachine) { m.r[d] = m.r[x] ^ 1<<31 }
		case op == "abs" && a.typ == dtype.F32:
			return func(m *scalarMachine) { m.r[d] = m.r[x] &^ (1 << 31) }
		case signOnly[op]:
			return nil
		}
		if a.typ == dtype.F32 {
			// One machine's run of the step runLanes takes on vector
			// lanes: both are built here, so they cannot disagree.
			if ls := laneStepFor(op, a, dst); ls != nil {
				return ls.one()
			}
			return nil
		}
		if !unaryFloat[float32](op, nil, nil) || op == "cbrt" || throughF16(a.typ) {
			return nil // cbrt's subnormal result is unary's (cbrtOfSubnormalF32)
		}
		dec, enc := decoder(a.typ), encoder(a.typ)
		if a.typ != dtype.F32 && narrowRoundsInside(op, a.typ) {
			f := narrowLogistic(a.typ)
			if op == "exponential-minus-one" {
				f = f16Expm1
			}
			return func(m *scalarMachine) { m.r[d] = enc(f(flush(dec(m.r[x])))) }
		}
		kernel := f32UnaryKernel(op)
		if keepsSubnormals(op) {
			return func(m *scalarMachine) {
				m.in[0] = dec(m.r[x])
				kernel(m.in[:], m.out[:])
				m.r[d] = dtype.FromF32(a.typ, m.out[0])
			}
		}
		return func(m *scalarMachine) {
			m.in[0] = flush(dec(m.r[x]))
			kernel(m.in[:], m.out[:])
			m.r[d] = enc(m.out[0])
		}
	case classF64:
		if op == "is-finite" && dst.typ == dtype.Pred {
			return func(m *scalarMachine) { v := math.Float64frombits(m.r[x]); m.r[d] = b2u64(v-v == 0) }
		}
		if dst.typ != a.typ {
			return nil
		}
		switch op {
		case "negate":
			return func(m *scalarMachine) { m.r[d] = m.r[x] ^ 1<<63 }
		case "abs":
			return func(m *scalarMachine) { m.r[d] = m.r[x] &^ (1 << 63) }
		case "real", "imag":
			return nil
		}
		if !unaryFloat[float64](op, nil, nil) || keepsSubnormals64(op) {
			return nil // sin, tan (glibc) and expm1 (XLA) keep subnormals: unary's path
		}
		return func(m *scalarMachine) {
			in := [1]float64{flush(math.Float64frombits(m.r[x]))}
			var o [1]float64
			unaryFloat(op, in[:], o[:])
			m.r[d] = math.Float64bits(flush(o[0]))
		}
	case classSigned, classUnsigned, classPred:
		if dst.typ != a.typ {
			return nil
		}
		f := intUnaryKernel(a.typ, op)
		if f == nil {
			return nil
		}
		norm := normalizer(a.typ)
		return func(m *scalarMachine) { m.r[d] = norm(f(m.r[x])) }
	}
	return nil
}

// f32UnaryKernel is unaryFloat's f32 kernel for op, looked up once (XLA's
// own math for the ops it has), not per step.
func f32UnaryKernel(op string) func(x, o []float32) {
	if f := xlaUnaryF32(op); f != nil {
		return func(x, o []float32) {
			sseAfterAVX()
			f(x, o)
		}
	}
	return func(x, o []float32) { unaryFloat(op, x, o) }
}

// laneStep is an f32 unary step that runLanes computes for many machines in
// one kernel call: the kernels work element by element, so a slice of
// machines' operands gives each the bits its own one-element call would
// (NaN payloads aside, which runLanes keeps to one-element calls).
type laneStep struct {
	src, dst int
	kernel   func(x, o []float32)
	keepSub  bool // keepsSubnormals: the operand and result unflushed
}

// laneStepFor returns the f32 kernel call unaryStep(op, a, dst) makes (its
// step is that call's one() form), or nil when the step is another (a sign
// bit op, is-finite, cbrt, whose subnormal result is unary's:
// cbrtOfSubnormalF32) or not an f32 op.
func laneStepFor(op string, a, dst sreg) *laneStep {
	if a.typ != dtype.F32 || dst.typ != dtype.F32 || op == "is-finite" || op == "negate" || op == "abs" ||
		signOnly[op] || op == "cbrt" || !unaryFloat[float32](op, nil, nil) {
		return nil
	}
	return &laneStep{src: a.reg, dst: dst.reg, kernel: f32UnaryKernel(op), keepSub: keepsSubnormals(op)}
}

// one is the step running ls on one machine: the operand flushed unless
// the op keeps subnormals, the kernel on one element, the result likewise.
func (ls *laneStep) one() scalarStep {
	x, d, kernel := ls.src, ls.dst, ls.kernel
	if ls.keepSub {
		return func(m *scalarMachine) {
			m.in[0] = f32of(m.r[x])
			kernel(m.in[:], m.out[:])
			m.r[d] = uint64(math.Float32bits(m.out[0]))
		}
	}
	return func(m *scalarMachine) {
		m.in[0] = flush(f32of(m.r[x]))
		kernel(m.in[:], m.out[:])
		m.r[d] = uint64(math.Float32bits(flush(m.out[0])))
	}
}

// runLanes runs the program once on each of ms (machines of p) in
// lockstep, step by step: the f32 kernel steps (laneStep) take all the
// machines' operands in one call, on the kernels' vector lanes, instead of
// one call per machine; the other steps run machine by machine. xs and os
// are scratch of at least len(ms) elements.
func (p *scalarProgram) runLanes(ms []*scalarMachine, xs, os []float32) {
	xs, os = xs[:len(ms)], os[:len(ms)]
	for i, step := range p.steps {
		ls := p.lanes[i]
		if ls == nil {
			for _, m := range ms {
				step(m)
			}
			continue
		}
		nan := false
		for j, m := range ms {
			v := math.Float32frombits(uint32(m.r[ls.src]))
			if !ls.keepSub {
				v = flush(v)
			}
			xs[j] = v
			nan = nan || v != v
		}
		if nan {
			// A NaN's payload may come out of a kernel's vector lanes
			// other than out of its one-element path: one call each.
			for j := range xs {
				ls.kernel(xs[j:j+1], os[j:j+1])
			}
		} else {
			ls.kernel(xs, os)
		}
		for j, m := range ms {
			v := os[j]
			if !ls.keepSub {
				v = flush(v)
			}
			m.r[ls.dst] = uint64(math.Float32bits(v))
		}
	}
}

func binaryStep(op string, x, y int, dst sreg) scalarStep {
	d := dst.reg
	if c := classOf(dst.typ); glibcSubnormalOps[op] && (c == classF32 || c == classF64) || throughF16(dst.typ) {
		return nil // subnormal operands take glibc's paths (atan2_daz.go): binary's
	}
	switch classOf(dst.typ) {
	case classF32:
		f := floatBinary[float32](op)
		if f == nil {
			return nil
		}
		if dst.typ == dtype.F32 {
			return func(m *scalarMachine) {
				r := m.r
				r[d] = uint64(math.Float32bits(flush(f(flush(f32of(r[x])), flush(f32of(r[y]))))))
			}
		}
		dec, enc := decoder(dst.typ), encoder(dst.typ)
		if bf16NativeMinMax(op, dst.typ) {
			return func(m *scalarMachine) {
				r := m.r
				r[d] = uint64(dtype.FromF32(dst.typ, f(dec(r[x]), dec(r[y]))))
			}
		}
		return func(m *scalarMachine) {
			r := m.r
			r[d] = enc(f(flush(dec(r[x])), flush(dec(r[y]))))
		}
	case classF64:
		f := floatBinary[float64](op)
		if f == nil {
			return nil
		}
		return func(m *scalarMachine) {
			r := m.r
			v := f(flush(math.Float64frombits(r[x])), flush(math.Float64frombits(r[y])))
			r[d] = math.Float64bits(flush(v))
		}
	case classC64:
		return complexBinaryStep[complex64](op, x, y, d)
	case classC128:
		return complexBinaryStep[complex128](op, x, y, d)
	case classSigned, classUnsigned, classPred:
		f := intBinary(dst.typ, op)
		if f == nil {
			return nil
		}
		norm := normalizer(dst.typ)
		return func(m *scalarMachine) { r := m.r; r[d] = norm(f(r[x], r[y])) }
	}
	return nil
}

// floatBinary returns op on two (flushed) floats, computed as binaryFloat does.
func floatBinary[F float](op string) func(x, y F) F {
	switch op {
	case "add":
		return func(x, y F) F { return x + y }
	case "subtract":
		return func(x, y F) F { return x - y }
	case "multiply":
		return func(x, y F) F { return x * y }
	case "divide":
		return func(x, y F) F { return x / y }
	case "maximum":
		return maxFloat[F]
	case "minimum":
		return minFloat[F]
	}
	if !binaryFloat[F](op, nil, nil, nil) {
		return nil
	}
	return func(x, y F) F {
		a, b := [1]F{x}, [1]F{y}
		var o [1]F
		binaryFloat(op, a[:], b[:], o[:])
		return o[0]
	}
}

// intBinary returns op on two integer registers of type t, before
// normalization. The wrap-around ops compute in 64 bits (the low bits agree
// with any narrower storage type); the rest run binaryInt in t's storage type.
func intBinary(t dtype.Type, op string) func(a, b uint64) uint64 {
	signed := t.IsSigned()
	switch op {
	case "add":
		return func(a, b uint64) uint64 { return a + b }
	case "subtract":
		return func(a, b uint64) uint64 { return a - b }
	case "multiply":
		return func(a, b uint64) uint64 { return a * b }
	case "and":
		return func(a, b uint64) uint64 { return a & b }
	case "or":
		return func(a, b uint64) uint64 { return a | b }
	case "xor":
		return func(a, b uint64) uint64 { return a ^ b }
	case "maximum":
		if signed {
			return func(a, b uint64) uint64 { return uint64(max(int64(a), int64(b))) }
		}
		return func(a, b uint64) uint64 { return max(a, b) }
	case "minimum":
		if signed {
			return func(a, b uint64) uint64 { return uint64(min(int64(a), int64(b))) }
		}
		return func(a, b uint64) uint64 { return min(a, b) }
	}
	switch t {
	case dtype.S8, dtype.S4, dtype.S2, dtype.S1:
		return intBinaryT[int8](op, intBits(t))
	case dtype.S16:
		return intBinaryT[int16](op, 16)
	case dtype.S32:
		return intBinaryT[int32](op, 32)
	case dtype.S64:
		return intBinaryT[int64](op, 64)
	case dtype.U8, dtype.U4, dtype.U2, dtype.U1, dtype.Pred:
		return intBinaryT[uint8](op, intBits(t))
	case dtype.U16:
		return intBinaryT[uint16](op, 16)
	case dtype.U32:
		return intBinaryT[uint32](op, 32)
	case dtype.U64:
		return intBinaryT[uint64](op, 64)
	}
	return nil
}

func intBinaryT[T integer](op string, width int) func(a, b uint64) uint64 {
	if !binaryInt[T](op, nil, nil, nil, width) {
		return nil
	}
	return func(a, b uint64) uint64 {
		x, y := [1]T{T(a)}, [1]T{T(b)}
		var o [1]T
		binaryInt(op, x[:], y[:], o[:], width)
		return uint64(o[0]) // sign-extends signed T
	}
}

// intUnaryKernel returns op on an integer register of type t, computed by
// unaryInt in t's storage type, before normalization.
func intUnaryKernel(t dtype.Type, op string) func(a uint64) uint64 {
	switch t {
	case dtype.S8, dtype.S4, dtype.S2, dtype.S1:
		return intUnaryT[int8](op, intBits(t))
	case dtype.S16:
		return intUnaryT[int16](op, 16)
	case dtype.S32:
		return intUnaryT[int32](op, 32)
	case dtype.S64:
		return intUnaryT[int64](op, 64)
	case dtype.U8, dtype.U4, dtype.U2, dtype.U1, dtype.Pred:
		return intUnaryT[uint8](op, intBits(t))
	case dtype.U16:
		return intUnaryT[uint16](op, 16)
	case dtype.U32:
		return intUnaryT[uint32](op, 32)
	case dtype.U64:
		return intUnaryT[uint64](op, 64)
	}
	return nil
}

func intUnaryT[T integer](op string, width int) func(a uint64) uint64 {
	if !unaryInt[T](op, nil, nil, width) {
		return nil
	}
	return func(a uint64) uint64 {
		x := [1]T{T(a)}
		var o [1]T
		unaryInt(op, x[:], o[:], width)
		return uint64(o[0])
	}
}

// complexBinaryStep runs binaryCplx on one element: parts flushed on the way
// in and out (dazComplex, ftzComplex), registers holding each part's bits.
func complexBinaryStep[C cplx](op string, x, y, d int) scalarStep {
	if !binaryCplx[C](op, nil, nil, nil) {
		return nil
	}
	var z C
	c64 := isC64(z)
	get := func(r []uint64, i int) C {
		if c64 {
			return C(complex(flush(f32of(r[i])), flush(f32of(r[i+1]))))
		}
		return C(complex(flush(math.Float64frombits(r[i])), flush(math.Float64frombits(r[i+1]))))
	}
	return func(m *scalarMachine) {
		r := m.r
		a, b := [1]C{get(r, x)}, [1]C{get(r, y)}
		var o [1]C
		binaryCplx(op, a[:], b[:], o[:])
		v := complex128(o[0])
		if c64 {
			r[d], r[d+1] = uint64(math.Float32bits(flush(float32(real(v))))), uint64(math.Float32bits(flush(float32(imag(v)))))
		} else {
			r[d], r[d+1] = math.Float64bits(flush(real(v))), math.Float64bits(flush(imag(v)))
		}
	}
}
