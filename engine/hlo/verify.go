package hlo

import (
	"errors"
	"fmt"
	"strings"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// VerifyError is one problem Verify found, located by computation and instruction.
type VerifyError struct {
	Computation string
	Instruction string // "" for computation-level problems
	Opcode      string
	Msg         string
}

func (e *VerifyError) Error() string {
	if e.Instruction == "" {
		return fmt.Sprintf("computation %q: %s", e.Computation, e.Msg)
	}
	return fmt.Sprintf("computation %q, instruction %q (%s): %s", e.Computation, e.Instruction, e.Opcode, e.Msg)
}

// VerifyErrors is the list of problems Verify returns.
type VerifyErrors []*VerifyError

func (l VerifyErrors) Error() string {
	msgs := make([]string, 0, min(len(l), 10))
	for i, e := range l {
		if i == 10 {
			msgs = append(msgs, fmt.Sprintf("... and %d more", len(l)-10))
			break
		}
		msgs = append(msgs, e.Error())
	}
	return strings.Join(msgs, "\n")
}

// Verify checks m's structure and every instruction's declared shape against
// the shape inferred from its operands, attributes and called computations
// (layouts ignored). It returns VerifyErrors listing every problem found.
func Verify(m *Module) error {
	var errs VerifyErrors
	if m.Entry == nil {
		errs = append(errs, &VerifyError{Computation: "", Msg: "module has no entry computation"})
		return errs
	}
	defined := map[*Computation]bool{}
	for _, c := range m.Computations {
		cerr := func(format string, args ...any) {
			errs = append(errs, &VerifyError{Computation: c.Name, Msg: fmt.Sprintf(format, args...)})
		}
		if c.Root == nil || len(c.Instructions) == 0 {
			cerr("computation has no root")
			defined[c] = true
			continue
		}
		seen := map[*Instruction]bool{}
		for _, in := range c.Instructions {
			ierr := func(format string, args ...any) {
				errs = append(errs, &VerifyError{Computation: c.Name, Instruction: in.Name, Opcode: in.Opcode, Msg: fmt.Sprintf(format, args...)})
			}
			for i, op := range in.Operands {
				if op == nil || !seen[op] {
					ierr("operand %d is not defined earlier in the computation", i)
				}
			}
			for _, cp := range in.ControlPredecessors {
				if cp == nil || !seen[cp] {
					ierr("control predecessor is not defined earlier in the computation")
				}
			}
			for _, cc := range in.Called {
				if cc == nil || !defined[cc] {
					ierr("called computation is not defined earlier in the module")
				}
			}
			seen[in] = true
			if len(errs) > 0 && errs[len(errs)-1].Instruction == in.Name {
				continue
			}
			if msg := checkInstruction(in); msg != "" {
				ierr("%s", msg)
			}
		}
		if !seen[c.Root] {
			cerr("root %q is not an instruction of the computation", c.Root.Name)
		}
		for i, p := range c.Params {
			if p == nil || p.Opcode != "parameter" || p.ParameterNumber != int64(i) {
				cerr("parameter %d is missing or misnumbered", i)
			}
		}
		defined[c] = true
	}
	if l := m.EntryLayout; l != nil {
		e := m.Entry
		if len(l.Params) != len(e.Params) {
			errs = append(errs, &VerifyError{Computation: e.Name, Msg: fmt.Sprintf("entry_computation_layout has %d parameters, the entry has %d", len(l.Params), len(e.Params))})
		} else {
			for i, s := range l.Params {
				if !sameShape(s, e.Params[i].Shape) {
					errs = append(errs, &VerifyError{Computation: e.Name, Msg: fmt.Sprintf("entry_computation_layout parameter %d is %v, parameter declares %v", i, s, e.Params[i].Shape)})
				}
			}
		}
		if e.Root != nil && !sameShape(l.Result, e.Root.Shape) {
			errs = append(errs, &VerifyError{Computation: e.Name, Msg: fmt.Sprintf("entry_computation_layout result is %v, root is %v", l.Result, e.Root.Shape)})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// checkInstruction returns "" or what is wrong with in.
func checkInstruction(in *Instruction) string {
	if err := checkShapeValid(in.Shape); err != nil {
		return fmt.Sprintf("invalid shape %v: %v", in.Shape, err)
	}
	if in.Opcode == "constant" {
		return checkLiteral(in.Literal, in.Shape)
	}
	if err := checkArity(in); err != nil {
		return err.Error()
	}
	if err := checkCalled(in); err != nil {
		return err.Error()
	}
	s, err := InferShape(in)
	if errors.Is(err, errNotInferable) {
		return checkDeclaredOnly(in)
	}
	if err != nil {
		return err.Error()
	}
	if !sameShape(s, in.Shape) {
		return fmt.Sprintf("inferred shape %v, declared %v", s, stripLayout(in.Shape))
	}
	return ""
}

func checkShapeValid(s Shape) error {
	if s.IsTuple() {
		for _, e := range s.Tuple {
			if err := checkShapeValid(e); err != nil {
				return err
			}
		}
		return nil
	}
	if !s.Elem.Valid() {
		return fmt.Errorf("unknown element type %d", s.Elem)
	}
	for i, d := range s.Dims {
		if d < 0 && !(d == UnboundedDim && s.isDynamic(i)) {
			return fmt.Errorf("dimension %d is negative", i)
		}
	}
	return nil
}

func checkLiteral(l *Literal, s Shape) string {
	if l == nil {
		return "constant has no value"
	}
	if s.IsTuple() {
		if l.Tensor != nil || len(l.Tuple) != len(s.Tuple) {
			return fmt.Sprintf("constant value does not match tuple shape %v", s)
		}
		for i, e := range l.Tuple {
			if msg := checkLiteral(e, s.Tuple[i]); msg != "" {
				return msg
			}
		}
		return ""
	}
	if l.Tensor == nil || l.Tensor.Type != s.Elem || !sameDims(arrayShape(l.Tensor.Type, l.Tensor.Dims...), s) {
		return fmt.Sprintf("constant value %v does not match shape %v", l.Tensor, s)
	}
	return ""
}

// checkDeclaredOnly checks what can be checked for opcodes whose shape comes
// from the declaration.
func checkDeclaredOnly(in *Instruction) string {
	s := in.Shape
	op := func(i int) Shape { return in.Operands[i].Shape }
	switch in.Opcode {
	case "broadcast":
		if len(in.Operands) != 1 || len(in.Dimensions) != len(op(0).Dims) {
			return fmt.Sprintf("dimensions %v do not match operand %v", in.Dimensions, op(0))
		}
		for i, d := range in.Dimensions {
			if d < 0 || d >= int64(len(s.Dims)) || s.Dims[d] != op(0).Dims[i] {
				return fmt.Sprintf("operand %v cannot broadcast into %v with dimensions %v", op(0), s, in.Dimensions)
			}
		}
		if s.Elem != op(0).Elem {
			return fmt.Sprintf("broadcast changes element type %v to %v", op(0).Elem, s.Elem)
		}
	case "reshape":
		if s.Elem != op(0).Elem || s.NumElements() != op(0).NumElements() {
			return fmt.Sprintf("cannot reshape %v into %v", op(0), s)
		}
	case "convert":
		if !sameDims(s, op(0)) {
			return fmt.Sprintf("convert changes dimensions %v to %v", op(0), s)
		}
	case "bitcast-convert":
		return checkBitcastConvert(op(0), s)
	case "iota":
		if !s.IsArray() || in.IotaDimension < 0 || in.IotaDimension >= int64(len(s.Dims)) {
			return fmt.Sprintf("iota_dimension %d out of range for %v", in.IotaDimension, s)
		}
	case "parameter":
		if in.ParameterNumber < 0 {
			return "negative parameter number"
		}
	}
	return ""
}

func checkBitcastConvert(from, to Shape) string {
	fb, tb := from.Elem.Bits(), to.Elem.Bits()
	if from.Elem == dtype.Pred || to.Elem == dtype.Pred {
		fb, tb = 8, 8
	}
	want := append([]int64{}, from.Dims...)
	switch {
	case fb == tb:
	case fb > tb:
		if fb%tb != 0 {
			return fmt.Sprintf("cannot bitcast-convert %v to %v", from, to)
		}
		want = append(want, int64(fb/tb))
	default:
		if tb%fb != 0 || len(want) == 0 || want[len(want)-1] != int64(tb/fb) {
			return fmt.Sprintf("cannot bitcast-convert %v to %v: the minor dimension must be %d", from, to, tb/fb)
		}
		want = want[:len(want)-1]
	}
	if !sameDims(arrayShape(to.Elem, want...), to) {
		return fmt.Sprintf("bitcast-convert of %v gives %v, declared %v", from, tensor.ShapeString(to.Elem, want), to)
	}
	return ""
}

// checkCalled checks called computations against the operands and result.
func checkCalled(in *Instruction) error {
	ops := in.Operands
	scalar := func(t dtype.Type) Shape { return arrayShape(t) }
	params := func(c *Computation, want []Shape) error {
		if len(c.Params) != len(want) {
			return fmt.Errorf("computation %q takes %d parameters, %s passes %d", c.Name, len(c.Params), in.Opcode, len(want))
		}
		for i, w := range want {
			if !sameShape(c.Params[i].Shape, w) {
				return fmt.Errorf("computation %q parameter %d is %v, %s passes %v", c.Name, i, c.Params[i].Shape, in.Opcode, w)
			}
		}
		return nil
	}
	result := func(c *Computation, want Shape) error {
		if !sameShape(c.Root.Shape, want) {
			return fmt.Errorf("computation %q returns %v, %s needs %v", c.Name, c.Root.Shape, in.Opcode, want)
		}
		return nil
	}
	operandShapes := func(from, to int) []Shape {
		var out []Shape
		for _, o := range ops[from:to] {
			out = append(out, o.Shape)
		}
		return out
	}
	// reducer checks a computation (acc..., x...) -> acc of N scalars of the given types.
	reducer := func(c *Computation, types []dtype.Type) error {
		var want []Shape
		for range 2 {
			for _, t := range types {
				want = append(want, scalar(t))
			}
		}
		if err := params(c, want); err != nil {
			return err
		}
		return result(c, reducerResult(nil, want[:len(types)]))
	}
	elemTypes := func(shapes []Shape) []dtype.Type {
		out := make([]dtype.Type, len(shapes))
		for i, s := range shapes {
			out[i] = s.Elem
		}
		return out
	}
	need := func(n int) error {
		if len(in.Called) != n {
			return fmt.Errorf("%s needs %d called computations, has %d", in.Opcode, n, len(in.Called))
		}
		return nil
	}
	switch in.Opcode {
	case "reduce", "reduce-window":
		if err := need(1); err != nil {
			return err
		}
		n := len(ops) / 2
		return reducer(in.Called[0], elemTypes(operandShapes(n, len(ops))))
	case "all-reduce", "reduce-scatter", "all-reduce-start":
		if err := need(1); err != nil {
			return err
		}
		var ts []dtype.Type
		for _, o := range ops {
			for _, l := range o.Shape.Leaves() {
				ts = append(ts, l.Elem)
			}
		}
		if len(ts) > 0 {
			return reducer(in.Called[0], ts[:1])
		}
	case "scatter":
		if err := need(1); err != nil {
			return err
		}
		return reducer(in.Called[0], elemTypes(operandShapes(0, len(ops)/2)))
	case "sort":
		if err := need(1); err != nil {
			return err
		}
		var want []Shape
		for _, o := range ops {
			want = append(want, scalar(o.Shape.Elem), scalar(o.Shape.Elem))
		}
		if err := params(in.Called[0], want); err != nil {
			return err
		}
		return result(in.Called[0], scalar(dtype.Pred))
	case "map":
		if err := need(1); err != nil {
			return err
		}
		var want []Shape
		for _, o := range ops {
			want = append(want, scalar(o.Shape.Elem))
		}
		return params(in.Called[0], want)
	case "select-and-scatter":
		if err := need(2); err != nil {
			return err
		}
		t := ops[0].Shape.Elem
		if err := params(in.Called[0], []Shape{scalar(t), scalar(t)}); err != nil {
			return err
		}
		if err := result(in.Called[0], scalar(dtype.Pred)); err != nil {
			return err
		}
		st := ops[1].Shape.Elem
		if err := params(in.Called[1], []Shape{scalar(st), scalar(st)}); err != nil {
			return err
		}
		return result(in.Called[1], scalar(st))
	case "while":
		if err := need(2); err != nil {
			return err
		}
		st := ops[0].Shape
		if err := params(in.Called[0], []Shape{st}); err != nil {
			return err
		}
		if err := result(in.Called[0], scalar(dtype.Pred)); err != nil {
			return err
		}
		if err := params(in.Called[1], []Shape{st}); err != nil {
			return err
		}
		return result(in.Called[1], st)
	case "conditional":
		if len(in.Called) == 0 || len(in.Called) != len(ops)-1 {
			return fmt.Errorf("conditional has %d branches and %d branch operands", len(in.Called), len(ops)-1)
		}
		idx := ops[0].Shape
		if len(idx.Dims) != 0 || idx.Elem != dtype.Pred && idx.Elem != dtype.S32 {
			return fmt.Errorf("branch index must be pred[] or s32[], is %v", idx)
		}
		if idx.Elem == dtype.Pred && len(in.Called) != 2 {
			return fmt.Errorf("a pred-indexed conditional needs 2 branches, has %d", len(in.Called))
		}
		for i, c := range in.Called {
			if err := params(c, []Shape{ops[i+1].Shape}); err != nil {
				return err
			}
			if err := result(c, in.Called[0].Root.Shape); err != nil {
				return err
			}
		}
	case "call", "fusion":
		if err := need(1); err != nil {
			return err
		}
		return params(in.Called[0], operandShapes(0, len(ops)))
	}
	return nil
}
