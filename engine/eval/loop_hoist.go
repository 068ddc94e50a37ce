package eval

// Loop-invariant values. An instruction of a while body whose operands are
// all invariant (constants, iotas, the state elements the body passes
// through unchanged, other invariant values) computes the same value at
// every step: the bias broadcast of a recurrent cell, a constant's
// broadcast, the transpose of a weight read as x·Wᵀ. Such values are
// computed at the first step and kept until the loop ends (their storage
// then counts as frozen for the kept packings, loop_invariant.go). Only
// deterministic ops that read nothing but their operands qualify, and only
// values the body evaluates on their own (not inside a blocked group).

import (
	"os"

	"goldtrace/engine/hlo"
)

// hoistDisabled turns the keeping of invariant values off
// (GOLDTRACE_NO_HOIST=1), to compare.
var hoistDisabled = os.Getenv("GOLDTRACE_NO_HOIST") == "1"

// hoistOps are the opcodes whose value depends on their operands alone
// (and attributes), besides the elementwise ones.
var hoistOps = map[string]bool{"broadcast": true, "reshape": true, "bitcast": true, "transpose": true,
	"slice": true, "concatenate": true, "convert": true, "compare": true, "select": true, "clamp": true,
	"copy": true, "pad": true, "reverse": true, "dot": true, "iota": true, "dynamic-slice": true,
	"bitcast-convert": true, "reduce-precision": true}

// hoistedState holds the kept values of one running loop body.
type hoistedState struct {
	members map[*hlo.Instruction]bool
	vals    map[*hlo.Instruction]Value
}

// value returns in's kept value, if any (hs may be nil).
func (hs *hoistedState) value(in *hlo.Instruction) (Value, bool) {
	if hs == nil {
		return Value{}, false
	}
	v, ok := hs.vals[in]
	return v, ok
}

// member reports whether in's value is kept (hs may be nil).
func (hs *hoistedState) member(in *hlo.Instruction) bool { return hs != nil && hs.members[in] }

// keep stores the first step's value of hoisted instruction in; its
// storage stays frozen while the loop runs.
func (hs *hoistedState) keep(ev *Evaluator, in *hlo.Instruction, v Value) {
	hs.vals[in] = v
	for _, t := range v.Leaves() {
		if s, ok := span(t); ok {
			ev.inv.spans = append(ev.inv.spans, s)
		}
	}
}

// hoistable returns the instructions of body worth keeping across steps
// given the invariant state elements (nil when none).
func hoistable(body *hlo.Computation, invariant []int, plan *fusionPlan) map[*hlo.Instruction]bool {
	if len(body.Params) != 1 {
		return nil
	}
	param := body.Params[0]
	slots := map[int64]bool{}
	for _, i := range invariant {
		slots[int64(i)] = true
	}
	inv := map[*hlo.Instruction]bool{}
	var keep map[*hlo.Instruction]bool
	for _, in := range body.Instructions {
		switch {
		case in.Opcode == "constant":
			inv[in] = true
			continue
		case in.Opcode == "get-tuple-element" && len(in.Operands) == 1 && in.Operands[0] == param:
			inv[in] = slots[in.TupleIndex]
			continue
		case in.Opcode == "parameter" || len(in.Operands) == 0 && in.Opcode != "iota":
			continue
		case !hoistOps[in.Opcode] && !isElementwiseOp(in.Opcode):
			continue
		}
		all := true
		for _, op := range in.Operands {
			all = all && inv[op]
		}
		if !all || !in.Shape.IsArray() {
			continue
		}
		inv[in] = true
		if plan != nil && (plan.interior[in] || plan.groups[in] != nil) {
			continue // evaluated with a group
		}
		if keep == nil {
			keep = map[*hlo.Instruction]bool{}
		}
		keep[in] = true
	}
	return keep
}

// beginHoisting starts keeping the invariant values of while w's body; the
// returned func drops them.
func (ev *Evaluator) beginHoisting(w *hlo.Instruction, p *whilePlan) func() {
	if hoistDisabled || len(p.invariant) == 0 || len(w.Called) < 2 || w.Called[1] == nil {
		return func() {}
	}
	body := w.Called[1]
	if !p.hoistPlanned {
		p.hoistPlanned = true
		p.hoist = hoistable(body, p.invariant, ev.fusionPlanFor(body))
	}
	if len(p.hoist) == 0 {
		return func() {}
	}
	if ev.hoisting == nil {
		ev.hoisting = map[*hlo.Computation]*hoistedState{}
	}
	if _, running := ev.hoisting[body]; running {
		return func() {} // a body running inside itself
	}
	ev.hoisting[body] = &hoistedState{members: p.hoist, vals: map[*hlo.Instruction]Value{}}
	return func() { delete(ev.hoisting, body) }
}
