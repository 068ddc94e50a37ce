// Package eval computes the values of an HLO module the way XLA:CPU does.
//
// Each opcode is an OpFunc registered by name (see Register); files group the
// opcodes by family (elementwise.go, dot.go, conv.go, ...). The interpreter
// walks a computation's instructions in order, keeping each value until its last
// use.
package eval

import (
	"context"
	"fmt"

	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// Value is a runtime value: an array, a tuple of values, or a token.
type Value struct {
	T     *tensor.Tensor // set for arrays
	Tuple []Value        // elements when the value is a tuple
	Token bool           // true for token values
}

// ArrayValue wraps a tensor.
func ArrayValue(t *tensor.Tensor) Value { return Value{T: t} }

// TupleValue builds a tuple.
func TupleValue(elems ...Value) Value {
	if elems == nil {
		elems = []Value{}
	}
	return Value{Tuple: elems}
}

// IsTuple reports whether v is a tuple.
func (v Value) IsTuple() bool { return v.T == nil && !v.Token }

// Leaves returns the array leaves of v depth-first.
func (v Value) Leaves() []*tensor.Tensor {
	if v.T != nil {
		return []*tensor.Tensor{v.T}
	}
	var out []*tensor.Tensor
	for _, e := range v.Tuple {
		out = append(out, e.Leaves()...)
	}
	return out
}

// OpFunc evaluates one instruction given its operand values. It must not modify
// its arguments' storage: values may be shared.
type OpFunc func(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error)

var ops = map[string]OpFunc{}

// Register installs the evaluator of an opcode; files call it from init.
func Register(opcode string, f OpFunc) {
	if _, dup := ops[opcode]; dup {
		panic("eval: opcode registered twice: " + opcode)
	}
	ops[opcode] = f
}

// Supported reports whether opcode has an evaluator.
// The async forms <op>-start/-update/-done of a registered op count too.
func Supported(opcode string) bool {
	if _, ok := ops[opcode]; ok {
		return true
	}
	_, ok := asyncWrapper(opcode)
	return ok
}

// CustomCallFunc evaluates a custom-call with a given target.
type CustomCallFunc func(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error)

var customCalls = map[string]CustomCallFunc{}

// RegisterCustomCall installs a handler for custom_call_target == target.
// Later registrations replace earlier ones, so embedders can override built-ins.
func RegisterCustomCall(target string, f CustomCallFunc) { customCalls[target] = f }

// LookupCustomCall returns the handler for a target.
func LookupCustomCall(target string) (CustomCallFunc, bool) {
	f, ok := customCalls[target]
	return f, ok
}

// Options select XLA:CPU behaviours that the original tool exposes as flags.
type Options struct {
	// ReplicaID and PartitionID are what replica-id / partition-id return.
	ReplicaID, PartitionID int64
	// ReplicaCount and NumPartitions are the device grid of a multi-device
	// run; 0 takes the module's replica_count / num_partitions.
	ReplicaCount, NumPartitions int64
	// Exchange, set by a multi-device driver, contributes this device's value
	// v at one execution of collective in and returns the values of the
	// devices in group (flattened ids replica*NumPartitions+partition, in that
	// order, this device included), blocking until all have contributed.
	// Without it only collectives whose group is this device alone run.
	Exchange func(in *hlo.Instruction, group []int64, v Value) ([]Value, error)
	// Running, when set, lists the devices (flattened ids, ascending) that
	// run with this one, when not every device of the grid does (a partially
	// manual region under -S); nil: every device runs.
	Running []int64
	// Trace, when set, receives every instruction's value after it is computed
	// (used for --save-intermediates and progress).
	Trace func(in *hlo.Instruction, v Value)
	// Parallelism bounds the goroutines a single op may use; 0 means GOMAXPROCS.
	Parallelism int
	// Memory, when set, records the peak size of the values live at once
	// (memstats.go).
	Memory *MemoryStats
	// ConsumeArgs hands Run's args over to the evaluator: once a parameter
	// of the entry computation has no user left, its slot in args is
	// cleared, so an input the caller holds nowhere else can be collected
	// while the module runs on.
	ConsumeArgs bool
}

// Evaluator runs one module.
type Evaluator struct {
	Module  *hlo.Module
	Options Options
	Ctx     context.Context

	inplace *inPlaceState // loop-carried updates done in place (while_inplace.go)
	fusion  fusionCache   // blocked elementwise groups per computation (fusion_blocked.go)
	pool    recycler      // dead intermediates' storage (recycle.go)
	loops   int           // while loops running (recycle.go)
	inv     invariants    // loop-invariant storage and its packings (loop_invariant.go)
	// rootOwned is, after a call whose root is a tuple, which of its
	// elements the frame alone held (recycle.go).
	rootOwned []bool
	hoisting  map[*hlo.Computation]*hoistedState // running loop bodies' kept values (loop_hoist.go)
}

// New returns an evaluator of m.
func New(m *hlo.Module, opts Options) *Evaluator {
	return &Evaluator{Module: m, Options: opts, Ctx: context.Background()}
}

// Error is an evaluation failure located at an instruction.
type Error struct {
	Computation string
	Instruction string
	Opcode      string
	Err         error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: instruction %%%s (%s): %v", e.Computation, e.Instruction, e.Opcode, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Run evaluates the entry computation on args (one per parameter).
func (ev *Evaluator) Run(args []Value) (Value, error) {
	return ev.Call(ev.Module.Entry, args)
}

// callOp runs one op function, turning a Go panic (an out-of-range index in a
// kernel, a malformed instruction) into an error so it never escapes the
// evaluator.
func callOp(f OpFunc, ev *Evaluator, in *hlo.Instruction, args []Value) (v Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = Value{}, fmt.Errorf("internal error: %v", r)
		}
	}()
	return f(ev, in, args)
}

// Evaluate runs the entry computation of m on args with opts; it is the
// one-call form of New(m, opts).Run(args).
func Evaluate(m *hlo.Module, args []Value, opts Options) (Value, error) {
	if m == nil || m.Entry == nil {
		return Value{}, fmt.Errorf("module has no entry computation")
	}
	return New(m, opts).Run(args)
}

// Call evaluates computation c on args.
func (ev *Evaluator) Call(c *hlo.Computation, args []Value) (Value, error) {
	if len(args) != len(c.Params) {
		return Value{}, fmt.Errorf("computation %s takes %d parameters, got %d", c.Name, len(c.Params), len(args))
	}
	// Count uses so values can be dropped after their last use; big modules
	// otherwise hold every intermediate in memory.
	uses := make(map[*hlo.Instruction]int, len(c.Instructions))
	for _, in := range c.Instructions {
		for _, op := range in.Operands {
			uses[op]++
		}
	}
	vals := make(map[*hlo.Instruction]Value, len(c.Instructions))
	plan := ev.fusionPlanFor(c)
	// owned: values whose storage this frame alone holds (recycle.go).
	var owned map[*hlo.Instruction]bool
	var made madeStorage // storage this frame allocated (recycle.go); in loops only, as it holds the storage
	if ev.ownsStorage() {
		owned = map[*hlo.Instruction]bool{}
	}
	if ev.recycling() {
		made = madeStorage{}
	}
	var rootOwned []bool      // see Evaluator.rootOwned
	hoisted := ev.hoisting[c] // nil unless c is a running loop's body
	consume := ev.Options.ConsumeArgs && c == ev.Module.Entry
	release := func(op *hlo.Instruction) {
		if consume && op.Opcode == "parameter" && int(op.ParameterNumber) < len(args) {
			args[op.ParameterNumber] = Value{}
		}
		if owned[op] {
			if ev.recycling() {
				ev.pool.put(vals[op].T.Data)
			} else {
				tensor.Release(vals[op].T.Data)
			}
			delete(owned, op)
		}
		ev.forget(vals, op)
	}
	for _, in := range c.Instructions {
		if err := ev.Ctx.Err(); err != nil {
			return Value{}, err
		}
		var v Value
		if plan != nil && plan.interior[in] {
			continue // computed block by block with its group
		}
		if g := plan.group(in); g != nil {
			var err error
			if v, err = runGroup(ev, g, vals); err != nil {
				return Value{}, &Error{c.Name, in.Name, in.Opcode, err}
			}
			ev.noteLive(v) // before its operands may die: both existed at once
			for _, op := range g.consumes {
				uses[op]--
				if uses[op] == 0 && op != c.Root {
					release(op)
				}
			}
			if owned != nil && v.T != nil {
				owned[in] = true // a group's value is always new storage
				made.add(v.T)
			}
		} else if in.Opcode == "parameter" {
			v = args[in.ParameterNumber]
			ev.noteLive(v)
		} else if kept, ok := hoisted.value(in); ok {
			v = kept // loop-invariant, computed at an earlier step (loop_hoist.go)
			ev.noteLive(v)
			for _, op := range in.Operands {
				uses[op]--
				if uses[op] == 0 && op != c.Root {
					release(op)
				}
			}
		} else {
			opArgs := make([]Value, len(in.Operands))
			for i, op := range in.Operands {
				a, ok := vals[op]
				if !ok {
					return Value{}, &Error{c.Name, in.Name, in.Opcode, fmt.Errorf("operand %%%s has no value", op.Name)}
				}
				opArgs[i] = a
			}
			f, ok := ops[in.Opcode]
			if !ok {
				f, ok = asyncWrapper(in.Opcode)
			}
			if !ok {
				return Value{}, &Error{c.Name, in.Name, in.Opcode, Unsupported("opcode %q", in.Opcode)}
			}
			var err error
			v, err = callOp(f, ev, in, opArgs)
			if err != nil {
				if _, located := err.(*Error); located {
					return Value{}, err
				}
				return Value{}, &Error{c.Name, in.Name, in.Opcode, err}
			}
			ev.noteLive(v)
			if owned != nil {
				if in == c.Root && in.Opcode == "tuple" {
					rootOwned = rootOwnedOf(opArgs, made)
				}
				fresh := v.T != nil && freshOp(in)
				var heir bool
				for i, op := range in.Operands {
					switch {
					case in.Opcode == "tuple":
						delete(owned, op) // the tuple holds its storage now
					case (fresh || owned[op]) && sharesValue(v, opArgs[i]):
						// This view or pass-through holds its storage now;
						// when it is the operand's last use and the very same
						// storage, it inherits the ownership (a reshape of a
						// dying intermediate).
						heir = !fresh && owned[op] && uses[op] == 1 && op != c.Root && sameStorage(v.T, opArgs[i].T)
						fresh = false
						delete(owned, op)
					}
				}
				if (fresh || heir) && !hoisted.member(in) {
					owned[in] = true
					made.add(v.T)
				}
			}
			if hoisted.member(in) {
				hoisted.keep(ev, in, v)
				made.drop(v) // kept past this frame
			}
			for _, op := range in.Operands {
				uses[op]--
				if uses[op] == 0 && op != c.Root {
					release(op)
				}
			}
		}
		if ev.Options.Trace != nil {
			ev.Options.Trace(in, v)
		}
		vals[in] = v
	}
	ev.rootOwned = rootOwned
	if mem := ev.Options.Memory; mem != nil {
		// What is left dies with this call; the caller counts the result again.
		for _, v := range vals {
			mem.drop(v)
		}
	}
	return vals[c.Root], nil
}

func (ev *Evaluator) noteLive(v Value) {
	if mem := ev.Options.Memory; mem != nil {
		mem.add(v)
	}
}

// forget drops the value of op after its last use.
func (ev *Evaluator) forget(vals map[*hlo.Instruction]Value, op *hlo.Instruction) {
	if mem := ev.Options.Memory; mem != nil {
		if v, ok := vals[op]; ok {
			mem.drop(v)
		}
	}
	delete(vals, op)
}

// UnsupportedError marks an opcode, custom-call target, type or attribute value
// the evaluator does not implement, so callers can tell "not supported" from
// "failed" (the C ABI maps it to GT_ERR_UNSUPPORTED).
type UnsupportedError struct{ What string }

func (e *UnsupportedError) Error() string { return e.What + " is not supported" }

// Unsupported returns an *UnsupportedError describing what is missing.
func Unsupported(format string, args ...any) error {
	return &UnsupportedError{What: fmt.Sprintf(format, args...)}
}
