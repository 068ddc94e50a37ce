package eval

// Scalar integer steps. Every while loop jax emits counts with scalar
// integers: the counter's add, the condition's compare, a scan's index
// arithmetic (select(i < 0, i + n, i)). Through the general elementwise
// kernels each such op costs a closure, a result tensor in two
// allocations, the kernel's dispatch and a parallelFor's bookkeeping, for
// one element. Call plans these ops (rank-0 s32/u32/s64/u64 operands of
// the result's type) onto the direct forms below, which compute the same
// wrapping two's-complement results in one allocation; an operand that is
// not what the instruction's shape says falls back to the general op.

import (
	"os"
	"unsafe"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// isScalarOf reports whether s is a rank-0 array of type t.
func isScalarOf(s hlo.Shape, t dtype.Type) bool {
	return s.IsArray() && s.Elem == t && len(s.Dims) == 0
}

// scalarIntType reports whether t is one of the integer types the direct
// scalar ops compute.
func scalarIntType(t dtype.Type) bool {
	return t == dtype.S32 || t == dtype.U32 || t == dtype.S64 || t == dtype.U64
}

// scalarStepOp returns the direct form of in, or nil when in is not a
// scalar integer op it covers; general is in's registered evaluator.
func scalarStepOp(in *hlo.Instruction, general OpFunc) OpFunc {
	if general == nil {
		return nil
	}
	st := intScalarStepOf(in)
	if st == nil {
		return nil
	}
	return func(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
		a, b, ok := scalarOperands(args, st.t)
		if !ok {
			return general(ev, in, args)
		}
		out := ev.newScalar(st.outType())
		st.into(a, b, out.Data)
		return ArrayValue(out), nil
	}
}

// intScalarStep is one direct scalar integer op: a wrapping binary op (op
// set) or a compare (op empty, dir its direction) of two rank-0 arrays of
// type t.
type intScalarStep struct {
	t   dtype.Type
	op  string
	dir string
}

// intScalarStepOf returns in's direct step, or nil when in is not a scalar
// integer op of that form.
func intScalarStepOf(in *hlo.Instruction) *intScalarStep {
	if len(in.Operands) == 0 {
		return nil
	}
	t := in.Operands[0].Shape.Elem
	if !scalarIntType(t) {
		return nil
	}
	for _, op := range in.Operands {
		if !isScalarOf(op.Shape, t) {
			return nil
		}
	}
	switch in.Opcode {
	case "add", "subtract", "multiply", "and", "or", "xor", "maximum", "minimum":
		if len(in.Operands) != 2 || !isScalarOf(in.Shape, t) {
			return nil
		}
		return &intScalarStep{t: t, op: in.Opcode}
	case "compare":
		if len(in.Operands) != 2 || !isScalarOf(in.Shape, dtype.Pred) {
			return nil
		}
		ctype, err := in.EffectiveComparisonType()
		if err != nil || ctype != "" && ctype != defaultComparison(t) {
			return nil
		}
		switch in.ComparisonDirection {
		case "EQ", "NE", "LT", "LE", "GT", "GE":
			return &intScalarStep{t: t, dir: in.ComparisonDirection}
		}
	}
	return nil
}

// outType is the type of the step's result.
func (st *intScalarStep) outType() dtype.Type {
	if st.op == "" {
		return dtype.Pred
	}
	return st.t
}

// into computes the step on a and b (rank-0 arrays of type t) into out,
// the result's storage.
func (st *intScalarStep) into(a, b *tensor.Tensor, out []byte) {
	if st.op == "" {
		var r bool
		switch st.t {
		case dtype.S32:
			r = cmpStep(st.dir, load[int32](a), load[int32](b))
		case dtype.U32:
			r = cmpStep(st.dir, load[uint32](a), load[uint32](b))
		case dtype.S64:
			r = cmpStep(st.dir, load[int64](a), load[int64](b))
		default:
			r = cmpStep(st.dir, load[uint64](a), load[uint64](b))
		}
		out[0] = b2u(r)
		return
	}
	switch st.t {
	case dtype.S32:
		*(*int32)(unsafe.Pointer(&out[0])) = intStep(st.op, load[int32](a), load[int32](b))
	case dtype.U32:
		*(*uint32)(unsafe.Pointer(&out[0])) = intStep(st.op, load[uint32](a), load[uint32](b))
	case dtype.S64:
		*(*int64)(unsafe.Pointer(&out[0])) = intStep(st.op, load[int64](a), load[int64](b))
	default:
		*(*uint64)(unsafe.Pointer(&out[0])) = intStep(st.op, load[uint64](a), load[uint64](b))
	}
}

// scalarOperands returns the two operands when both are rank-0 arrays of
// type t.
func scalarOperands(args []Value, t dtype.Type) (a, b *tensor.Tensor, ok bool) {
	if len(args) != 2 {
		return nil, nil, false
	}
	a, b = args[0].T, args[1].T
	sz := t.Size()
	if a == nil || b == nil || a.Type != t || b.Type != t || len(a.Dims) != 0 || len(b.Dims) != 0 ||
		len(a.Data) != sz || len(b.Data) != sz {
		return nil, nil, false
	}
	return a, b, true
}

func load[T int32 | uint32 | int64 | uint64](t *tensor.Tensor) T {
	return *(*T)(unsafe.Pointer(&t.Data[0]))
}

// intStep is one wrapping integer op, as binaryInt computes it.
func intStep[T int32 | uint32 | int64 | uint64](op string, a, b T) T {
	switch op {
	case "add":
		return a + b
	case "subtract":
		return a - b
	case "multiply":
		return a * b
	case "and":
		return a & b
	case "or":
		return a | b
	case "xor":
		return a ^ b
	case "maximum":
		return max(a, b)
	default: // minimum
		return min(a, b)
	}
}

func cmpStep[T int32 | uint32 | int64 | uint64](dir string, a, b T) bool {
	switch dir {
	case "EQ":
		return a == b
	case "NE":
		return a != b
	case "LT":
		return a < b
	case "LE":
		return a <= b
	case "GT":
		return a > b
	default: // GE
		return a >= b
	}
}

// stateSpareDisabled turns off the reuse of a loop's dead state slices
// and the direct counter conditions (GOLDTRACE_NO_STATE_REUSE=1), to
// compare.
var stateSpareDisabled = os.Getenv("GOLDTRACE_NO_STATE_REUSE") == "1"

// counterCond is a while condition of the form jax emits for fori_loop
// and scan, compare(get-tuple-element(state, k), constant) on a scalar
// integer (other instructions only unused get-tuple-elements and
// constants): evalWhile computes it from the state directly, as the direct
// compare does, instead of calling the condition.
type counterCond struct {
	slot    int
	konst   *tensor.Tensor
	t       dtype.Type
	dir     string
	swapped bool // the constant is the left operand
}

// counterCondOf returns cond's direct form, or nil.
func counterCondOf(cond *hlo.Computation) *counterCond {
	if len(cond.Params) != 1 || cond.Root == nil || cond.Root.Opcode != "compare" || len(cond.Root.Operands) != 2 {
		return nil
	}
	param, root := cond.Params[0], cond.Root
	if !registeredAs("compare", evalCompare) {
		return nil
	}
	for _, in := range cond.Instructions {
		switch {
		case in == root || in == param || in.Opcode == "constant":
		case in.Opcode == "get-tuple-element" && len(in.Operands) == 1 && in.Operands[0] == param:
		default:
			return nil
		}
	}
	a, b := root.Operands[0], root.Operands[1]
	swapped := false
	if a.Opcode == "constant" {
		a, b, swapped = b, a, true
	}
	if a.Opcode != "get-tuple-element" || a.Operands[0] != param || b.Opcode != "constant" || b.Literal == nil || b.Literal.Tensor == nil {
		return nil
	}
	t := a.Shape.Elem
	if scalarStepOp(root, evalCompare) == nil || !scalarIntType(t) {
		return nil
	}
	k := b.Literal.Tensor
	if k.Type != t || len(k.Dims) != 0 || len(k.Data) != t.Size() {
		return nil
	}
	return &counterCond{slot: int(a.TupleIndex), konst: k, t: t, dir: root.ComparisonDirection, swapped: swapped}
}

// eval returns the condition's value on state; ok is false when cc is nil
// or state is not what the condition's shapes say (the caller then calls
// the condition).
func (cc *counterCond) eval(state Value) (result, ok bool) {
	if !state.IsTuple() {
		return false, false
	}
	return cc.evalElems(state.Tuple)
}

// evalElems is eval on a state tuple's elements.
func (cc *counterCond) evalElems(state []Value) (result, ok bool) {
	if cc == nil || cc.slot < 0 || cc.slot >= len(state) {
		return false, false
	}
	x := state[cc.slot].T
	if x == nil || x.Type != cc.t || len(x.Dims) != 0 || len(x.Data) != cc.t.Size() {
		return false, false
	}
	a, b := x, cc.konst
	if cc.swapped {
		a, b = b, a
	}
	switch cc.t {
	case dtype.S32:
		return cmpStep(cc.dir, load[int32](a), load[int32](b)), true
	case dtype.U32:
		return cmpStep(cc.dir, load[uint32](a), load[uint32](b)), true
	case dtype.S64:
		return cmpStep(cc.dir, load[int64](a), load[int64](b)), true
	default:
		return cmpStep(cc.dir, load[uint64](a), load[uint64](b)), true
	}
}

// counterCond returns cond's direct form (cached), or nil.
func (ev *Evaluator) counterCond(cond *hlo.Computation) *counterCond {
	cc, ok := ev.conds[cond]
	if !ok {
		cc = counterCondOf(cond)
		if ev.conds == nil {
			ev.conds = map[*hlo.Computation]*counterCond{}
		}
		ev.conds[cond] = cc
	}
	return cc
}
