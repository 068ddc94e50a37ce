package eval

// In-place loop-carried updates. A scan lowered to a while loop carries its
// stacked outputs in the loop state and writes one slice per step with a
// dynamic-update-slice; copying the whole buffer each step costs O(steps²).
// When the body's only use of a state element is one dynamic-update-slice
// (directly, or inside calls or fusions made only from there, however deep;
// dynamic-slices of it the update depends on may read it first) whose
// result goes back to the same state element and nowhere else (out of those
// calls as their value or one element of their tuple), nothing can observe
// the old contents: the loop copies that element once on entry and the update then
// writes into it. The values computed are the same; only the copies go.

import (
	"slices"

	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// whilePlan is the in-place analysis of one while instruction.
type whilePlan struct {
	slots []int              // state tuple indices updated in place
	dus   []*hlo.Instruction // their dynamic-update-slice instructions
	// fresh marks the slots whose initial value is made for the loop alone
	// (freshInit): updated in place without the copy on entry.
	fresh []bool
	// invariant lists the state elements the body passes through unchanged
	// (loop_invariant.go).
	invariant []int
	// hoist is the body's instructions whose values are kept across steps
	// (loop_hoist.go), once hoistPlanned.
	hoist        map[*hlo.Instruction]bool
	hoistPlanned bool
	// prog is the body as a loop program (loop_program.go), once
	// progPlanned; nil when the body is not of its form.
	prog        *loopProgram
	progPlanned bool
}

// inPlaceState tracks which dynamic-update-slice instructions currently
// write into their operand (a count, for re-entrant loops).
type inPlaceState struct {
	plans  map[*hlo.Instruction]*whilePlan
	active map[*hlo.Instruction]int
	calls  map[*hlo.Computation]int // call sites per computation
	users  map[*hlo.Computation]map[*hlo.Instruction][]*hlo.Instruction
}

func (ev *Evaluator) inPlace() *inPlaceState {
	if ev.inplace == nil {
		ev.inplace = &inPlaceState{plans: map[*hlo.Instruction]*whilePlan{}, active: map[*hlo.Instruction]int{}}
	}
	return ev.inplace
}

// dusInPlace reports whether a dynamic-update-slice may write into its operand.
func (ev *Evaluator) dusInPlace(in *hlo.Instruction) bool {
	return ev.inplace != nil && ev.inplace.active[in] > 0
}

func (st *inPlaceState) callSites(m *hlo.Module, c *hlo.Computation) int {
	if st.calls == nil {
		st.calls = map[*hlo.Computation]int{}
		if m != nil {
			for _, comp := range m.Computations {
				for _, in := range comp.Instructions {
					for _, cc := range in.Called {
						st.calls[cc]++
					}
				}
			}
		}
	}
	return st.calls[c]
}

// plan analyses while instruction w (cached).
func (st *inPlaceState) plan(m *hlo.Module, w *hlo.Instruction) *whilePlan {
	if p, ok := st.plans[w]; ok {
		return p
	}
	p := &whilePlan{}
	st.plans[w] = p
	if len(w.Called) < 2 || w.Called[1] == nil {
		return p
	}
	body := w.Called[1]
	if len(body.Params) != 1 || body.Root == nil || body.Root.Opcode != "tuple" {
		return p
	}
	param := body.Params[0]
	for i, op := range body.Root.Operands {
		if op.Opcode == "get-tuple-element" && len(op.Operands) == 1 && op.Operands[0] == param && op.TupleIndex == int64(i) {
			p.invariant = append(p.invariant, i)
		}
	}
	users := st.usersOf(body)
	if len(users[body.Root]) != 0 {
		return p
	}
	gtes := map[int64][]*hlo.Instruction{}
	for _, u := range users[param] {
		if u.Opcode != "get-tuple-element" {
			return p // the whole state escapes somewhere
		}
		gtes[u.TupleIndex] = append(gtes[u.TupleIndex], u)
	}
	for i := range body.Root.Operands {
		g := gtes[int64(i)]
		if len(g) != 1 {
			continue
		}
		dus, c, frames := st.sinkDUS(m, body, g[0])
		if dus != nil && st.reachesSlot(body, c, dus, frames, i) {
			p.slots = append(p.slots, i)
			p.dus = append(p.dus, dus)
			p.fresh = append(p.fresh, st.freshInit(w, i))
		}
	}
	return p
}

// freshInit reports whether element slot of while w's initial state is a
// broadcast of a single element (jnp.zeros of a scan's stacked outputs)
// whose only use is the tuple that is the while's operand, itself used by
// the while alone: storage nothing else can see, which the loop may update
// in place without copying it first.
func (st *inPlaceState) freshInit(w *hlo.Instruction, slot int) bool {
	caller := w.Parent
	if caller == nil || len(w.Operands) != 1 {
		return false
	}
	t := w.Operands[0]
	users := st.usersOf(caller)
	if t.Opcode != "tuple" || t == caller.Root || len(users[t]) != 1 || slot >= len(t.Operands) {
		return false
	}
	x := t.Operands[slot]
	if x.Opcode != "broadcast" || x == caller.Root || len(users[x]) != 1 || countOf(t.Operands, x) != 1 ||
		len(x.Operands) != 1 || !x.Operands[0].Shape.IsArray() || tensor.NumElements(x.Operands[0].Shape.Dims) != 1 ||
		tensor.NumElements(x.Shape.Dims) < 2 {
		return false
	}
	return true
}

// maxCallDepth bounds how deep the analysis follows a value into calls.
const maxCallDepth = 16

// callFrame is a call the analysis followed a value into.
type callFrame struct {
	comp *hlo.Computation // the caller
	call *hlo.Instruction // the call instruction in it
}

// usersOf returns the users of each instruction of c (cached).
func (st *inPlaceState) usersOf(c *hlo.Computation) map[*hlo.Instruction][]*hlo.Instruction {
	if u, ok := st.users[c]; ok {
		return u
	}
	users := map[*hlo.Instruction][]*hlo.Instruction{}
	for _, in := range c.Instructions {
		for _, op := range in.Operands {
			users[op] = append(users[op], in)
		}
	}
	if st.users == nil {
		st.users = map[*hlo.Computation]map[*hlo.Instruction][]*hlo.Instruction{}
	}
	st.users[c] = users
	return users
}

// soleUser returns the one instruction of c that uses v, when v has exactly
// one use (one operand of one instruction) and is not c's root; else nil.
func (st *inPlaceState) soleUser(c *hlo.Computation, v *hlo.Instruction) *hlo.Instruction {
	us := st.usersOf(c)[v]
	if v == c.Root || len(us) != 1 || countOf(us[0].Operands, v) != 1 {
		return nil
	}
	return us[0]
}

// sinkDUS follows value v of computation c along its only use, into calls
// whose callee is called from there alone and through tuples taken apart
// by one get-tuple-element, to a dynamic-update-slice that
// takes it as the operand updated. It returns that instruction, its
// computation and the calls entered on the way; nil when the value has
// another use or goes anywhere else.
func (st *inPlaceState) sinkDUS(m *hlo.Module, c *hlo.Computation, v *hlo.Instruction) (*hlo.Instruction, *hlo.Computation, []callFrame) {
	var frames []callFrame
	for len(frames) <= maxCallDepth {
		u := st.soleUser(c, v)
		if u == nil {
			u = st.updateAfterReads(c, v)
		}
		if u == nil {
			return nil, nil, nil
		}
		switch u.Opcode {
		case "dynamic-update-slice":
			if u.Operands[0] != v {
				return nil, nil, nil
			}
			return u, c, frames
		case "tuple":
			// Taken apart again by one get-tuple-element (an inlined call).
			next := st.elementOf(c, u, slices.Index(u.Operands, v))
			if next == nil {
				return nil, nil, nil
			}
			v = next
		case "call", "fusion":
			// (A fusion runs its computation as a call does: XLA-optimized
			// bodies update their stacked outputs in a loop fusion.)
			if len(u.Called) != 1 || u.Called[0] == nil || st.callSites(m, u.Called[0]) != 1 {
				return nil, nil, nil
			}
			k := slices.Index(u.Operands, v)
			callee := u.Called[0]
			if k >= len(callee.Params) || callee.Params[k] == nil {
				return nil, nil, nil
			}
			frames = append(frames, callFrame{c, u})
			c, v = callee, callee.Params[k]
		default:
			return nil, nil, nil
		}
	}
	return nil, nil, nil
}

// updateAfterReads returns the dynamic-update-slice of value v of c when v's
// other uses are dynamic-slices of it that the update depends on (a loop
// that reads part of its buffer and writes a function of it back, as
// x = x.at[i].set(f(x[j])) does): they copy out what they read before the
// update can run, so the update may still write into v. nil otherwise.
func (st *inPlaceState) updateAfterReads(c *hlo.Computation, v *hlo.Instruction) *hlo.Instruction {
	if v == c.Root {
		return nil
	}
	var dus *hlo.Instruction
	reads := map[*hlo.Instruction]bool{}
	for _, u := range st.usersOf(c)[v] {
		if countOf(u.Operands, v) != 1 || u.Operands[0] != v {
			return nil
		}
		switch u.Opcode {
		case "dynamic-update-slice":
			if dus != nil {
				return nil
			}
			dus = u
		case "dynamic-slice":
			reads[u] = true
		default:
			return nil
		}
	}
	if dus == nil || len(reads) == 0 {
		return nil
	}
	// Walk the update's operands back within c, to every read.
	seen := map[*hlo.Instruction]bool{}
	stack := slices.Clone(dus.Operands)
	for len(stack) > 0 && len(reads) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[x] {
			continue
		}
		seen[x] = true
		delete(reads, x)
		stack = append(stack, x.Operands...)
	}
	if len(reads) != 0 {
		return nil
	}
	return dus
}

// reachesSlot reports whether value v of computation c (entered through
// frames from the loop body) goes, along its only use at every step, out
// through the roots of those calls (as the call's value, or one element of
// its tuple taken by one get-tuple-element; tuples built and taken apart
// within a computation likewise) to element slot of the body's root tuple.
func (st *inPlaceState) reachesSlot(body, c *hlo.Computation, v *hlo.Instruction, frames []callFrame, slot int) bool {
	for range 4 * maxCallDepth {
		if v == c.Root {
			if len(frames) == 0 {
				return false
			}
			f := frames[len(frames)-1]
			frames = frames[:len(frames)-1]
			c, v = f.comp, f.call
			continue
		}
		u := st.soleUser(c, v)
		if u == nil || u.Opcode != "tuple" {
			return false
		}
		j := slices.Index(u.Operands, v)
		if u != c.Root {
			// A tuple taken apart again (an inlined call's result).
			if v = st.elementOf(c, u, j); v == nil {
				return false
			}
			continue
		}
		if len(frames) == 0 {
			return c == body && j == slot
		}
		f := frames[len(frames)-1]
		frames = frames[:len(frames)-1]
		if v = st.elementOf(f.comp, f.call, j); v == nil {
			return false
		}
		c = f.comp
	}
	return false
}

// elementOf returns the one get-tuple-element of index j that takes apart
// tuple value t of computation c, when every use of t is a
// get-tuple-element; else nil.
func (st *inPlaceState) elementOf(c *hlo.Computation, t *hlo.Instruction, j int) *hlo.Instruction {
	var next *hlo.Instruction
	for _, g := range st.usersOf(c)[t] {
		if g.Opcode != "get-tuple-element" {
			return nil // the tuple is used whole
		}
		if g.TupleIndex == int64(j) {
			if next != nil {
				return nil
			}
			next = g
		}
	}
	return next
}

func countOf(xs []*hlo.Instruction, x *hlo.Instruction) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

// beginInPlace privatizes the planned slots of a while's initial state and
// switches their updates to in place, and freezes the storage of the state
// elements the body passes through (loop_invariant.go); the returned func
// undoes both.
func (ev *Evaluator) beginInPlace(w *hlo.Instruction, state Value) (Value, func()) {
	if ev.Module == nil || !state.IsTuple() {
		return state, func() {}
	}
	st := ev.inPlace()
	p := st.plan(ev.Module, w)
	thaw := ev.freezeInvariants(p, state)
	unhoist := ev.beginHoisting(w, p)
	if len(p.slots) == 0 || ev.Options.Trace != nil {
		return state, func() {
			unhoist()
			thaw()
		}
	}
	elems := append([]Value(nil), state.Tuple...)
	var on []*hlo.Instruction
	for j, i := range p.slots {
		if i >= len(elems) || elems[i].T == nil {
			continue
		}
		// A fresh start is written in place, unless an enclosing loop
		// keeps it for its next steps (a broadcast of constants, hoisted:
		// its storage is frozen).
		if !p.fresh[j] || ev.frozenValue(elems[i].T) {
			elems[i] = ArrayValue(elems[i].T.Clone())
		}
		on = append(on, p.dus[j])
		st.active[p.dus[j]]++
	}
	return TupleValue(elems...), func() {
		for _, d := range on {
			st.active[d]--
		}
		unhoist()
		thaw()
	}
}
