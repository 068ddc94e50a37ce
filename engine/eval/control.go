package eval

// Control flow: while, conditional, call, fusion, map, and the async
// wrappers (async-start/-update/-done and the `<op>-start`/`-done` forms).

import (
	"fmt"
	"strings"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func init() {
	Register("while", evalWhile)
	Register("conditional", evalConditional)
	Register("call", evalCall)
	Register("fusion", evalCall)
	Register("map", evalMap)
	Register("async-start", evalAsyncStart)
	Register("async-update", passThrough)
	Register("async-done", evalAsyncDone)
}

func called(in *hlo.Instruction, n int) error {
	if len(in.Called) < n {
		return fmt.Errorf("expected %d called computations, got %d", n, len(in.Called))
	}
	for i, c := range in.Called[:n] {
		if c == nil {
			return fmt.Errorf("called computation %d is missing", i)
		}
	}
	return nil
}

func evalWhile(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if err := called(in, 2); err != nil {
		return Value{}, err
	}
	if len(args) != 1 {
		return Value{}, fmt.Errorf("while takes one operand, got %d", len(args))
	}
	cond, body := in.Called[0], in.Called[1]
	state, done := ev.beginInPlace(in, args[0])
	defer done()
	defer ev.enterLoop()()
	// owned: which elements of state the body made and its frame alone
	// held; the step after next may reuse their storage (recycle.go).
	var owned, nextOwned []bool
	arg := make([]Value, 1) // the state, as the condition's and the body's argument
	var spare []Value       // a dead state's elements, for the body's root tuple
	stateMade := false      // state's elements are a slice the body's root tuple made
	reuseState := ev.ownsStorage() && !stateSpareDisabled
	// A counter's compare is computed here (nothing of it to trace or count).
	var direct *counterCond
	if ev.Options.Trace == nil && ev.Options.Memory == nil && !stateSpareDisabled {
		direct = ev.counterCond(cond)
	}
	if prog := ev.loopProgramFor(in, state); prog != nil {
		return prog.run(ev, cond, direct, state) // the body's steps worked out once (loop_program.go)
	}
	for {
		if err := ev.Ctx.Err(); err != nil {
			return Value{}, err
		}
		if r, ok := direct.eval(state); ok {
			if !r {
				return state, nil
			}
		} else {
			arg[0] = state
			c, err := ev.Call(cond, arg)
			if err != nil {
				return Value{}, err
			}
			if c.T == nil || c.T.Type != dtype.Pred || len(c.T.Data) != 1 {
				return Value{}, fmt.Errorf("while condition %s must return a pred scalar", cond.Name)
			}
			stop := c.T.Data[0] == 0
			if ev.rootMine && ev.recycling() {
				ev.recycleBox(c.T) // the condition made it and nothing else holds it
			}
			if stop {
				return state, nil
			}
		}
		arg[0] = state
		ev.stateSpare, ev.stateBody = spare, body
		next, err := ev.Call(body, arg)
		ev.stateSpare, ev.stateBody = nil, nil
		if err != nil {
			return Value{}, err
		}
		nextOwned = append(nextOwned[:0], ev.rootOwned...)
		if ev.recycling() && next.IsTuple() && len(nextOwned) == len(next.Tuple) {
			ev.recycleReplaced(state, owned, next)
		} else {
			nextOwned = nextOwned[:0]
		}
		// The old state's element slice is dead once the new state is not
		// that very slice, when the body's root tuple made it (nothing
		// else holds it: not the operand's, a constant's or a parameter's).
		spare = nil
		if reuseState && stateMade && next.IsTuple() && (len(next.Tuple) == 0 || &next.Tuple[0] != &state.Tuple[0]) {
			spare = state.Tuple
			clear(spare)
		}
		// stateMade: next's slice is the one the body's root tuple made
		// (not a constant's, a parameter's or the loop operand's).
		stateMade = len(next.Tuple) > 0 && len(ev.rootTuple) == len(next.Tuple) && &ev.rootTuple[0] == &next.Tuple[0]
		state, arg[0] = next, Value{}
		owned, nextOwned = nextOwned, owned
	}
}

// evalConditional picks branch 0 for a true pred index; an integer index out
// of range picks the last branch.
func evalConditional(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if len(args) < 1 || args[0].T == nil || args[0].T.NumElements() != 1 {
		return Value{}, fmt.Errorf("conditional needs a scalar branch index")
	}
	nb := len(in.Called)
	if nb == 0 || len(args) != nb+1 {
		return Value{}, fmt.Errorf("conditional has %d branches and %d branch operands", nb, len(args)-1)
	}
	idx := args[0].T
	var b int
	switch {
	case idx.Type == dtype.Pred:
		if idx.Data[0] != 0 {
			b = 0
		} else {
			b = 1
		}
	case idx.Type.IsInteger():
		v := asI64(idx)[0]
		if v < 0 || v >= int64(nb) {
			v = int64(nb - 1)
		}
		b = int(v)
	default:
		return Value{}, fmt.Errorf("conditional index must be pred or integer, got %v", idx.Type)
	}
	if b >= nb || in.Called[b] == nil {
		return Value{}, fmt.Errorf("conditional branch %d is missing", b)
	}
	return ev.Call(in.Called[b], []Value{args[b+1]})
}

func evalCall(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if err := called(in, 1); err != nil {
		return Value{}, err
	}
	return ev.Call(in.Called[0], args)
}

// evalMap applies a scalar computation elementwise, one call per element.
func evalMap(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if err := called(in, 1); err != nil {
		return Value{}, err
	}
	ts, err := arrayArgs(args, len(args))
	if err != nil {
		return Value{}, err
	}
	to, dims, err := arrayResult(in)
	if err != nil {
		return Value{}, err
	}
	for _, t := range ts {
		if !equalDims(t.Dims, dims) {
			return Value{}, fmt.Errorf("map operand %v does not match result dims %v", t, dims)
		}
	}
	out := tensor.New(to, dims)
	if prog := compileScalar(in.Called[0]); prog != nil {
		if ok, err := scalarMap(prog, ts, out); ok {
			if err != nil {
				return Value{}, err
			}
			return ArrayValue(out), nil
		}
	}
	scalars := make([]Value, len(ts))
	for i := int64(0); i < out.NumElements(); i++ {
		for k, t := range ts {
			scalars[k] = ArrayValue(scalarView(t, i))
		}
		r, err := ev.Call(in.Called[0], scalars)
		if err != nil {
			return Value{}, err
		}
		if r.T == nil || r.T.Type != to || r.T.NumElements() != 1 {
			return Value{}, fmt.Errorf("map computation must return a %v scalar", to)
		}
		storeElem(out, i, r.T)
	}
	return ArrayValue(out), nil
}

// asyncStartValue shapes the value of an async start: XLA's
// ((operands...), result, contexts...) when the start's shape is a tuple of
// that form, else just the result (all-reduce-start).
func asyncStartValue(in *hlo.Instruction, args []Value, result Value) Value {
	s := in.Shape
	if !s.IsTuple() || len(s.Tuple) < 2 || shapeMatches(s, result) {
		return result
	}
	var ops Value
	if len(args) == 1 && !s.Tuple[0].IsTuple() {
		ops = args[0]
	} else {
		ops = TupleValue(append([]Value{}, args...)...)
	}
	elems := []Value{ops, result}
	for _, c := range s.Tuple[2:] {
		elems = append(elems, zeroValue(c))
	}
	return TupleValue(elems...)
}

// shapeMatches reports whether v has the structure and dims of s.
func shapeMatches(s hlo.Shape, v Value) bool {
	switch {
	case s.IsTuple():
		if !v.IsTuple() || len(v.Tuple) != len(s.Tuple) {
			return false
		}
		for i, e := range s.Tuple {
			if !shapeMatches(e, v.Tuple[i]) {
				return false
			}
		}
		return true
	case s.Elem == dtype.Token:
		return v.Token
	}
	return v.T != nil && v.T.Type == s.Elem && equalDims(v.T.Dims, s.Dims)
}

// zeroValue is a value of shape s filled with zeros.
func zeroValue(s hlo.Shape) Value {
	switch {
	case s.IsTuple():
		elems := make([]Value, len(s.Tuple))
		for i, e := range s.Tuple {
			elems[i] = zeroValue(e)
		}
		return TupleValue(elems...)
	case s.Elem == dtype.Token:
		return Value{Token: true}
	}
	return ArrayValue(tensor.New(s.Elem, s.Dims))
}

func evalAsyncStart(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if err := called(in, 1); err != nil {
		return Value{}, err
	}
	r, err := ev.Call(in.Called[0], args)
	if err != nil {
		return Value{}, err
	}
	return asyncStartValue(in, args, r), nil
}

// evalAsyncDone returns the result held by its start's value.
func evalAsyncDone(_ *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if len(args) != 1 {
		return Value{}, fmt.Errorf("expected 1 operand, got %d", len(args))
	}
	v := args[0]
	if shapeMatches(in.Shape, v) {
		return v, nil
	}
	if v.IsTuple() && len(v.Tuple) >= 2 {
		return v.Tuple[1], nil
	}
	return Value{}, fmt.Errorf("operand is not the value of an async start")
}

// asyncWrapper returns the evaluator of `<op>-start`, `<op>-update` and
// `<op>-done` for any registered op that has no dedicated one: start runs
// the op synchronously.
func asyncWrapper(opcode string) (OpFunc, bool) {
	for _, suf := range []string{"-start", "-update", "-done"} {
		base, ok := strings.CutSuffix(opcode, suf)
		if !ok {
			continue
		}
		f, ok := ops[base]
		if !ok {
			return nil, false
		}
		switch suf {
		case "-start":
			return func(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
				r, err := f(ev, in, args)
				if err != nil {
					return Value{}, err
				}
				return asyncStartValue(in, args, r), nil
			}, true
		case "-update":
			return passThrough, true
		default:
			return evalAsyncDone, true
		}
	}
	return nil, false
}
