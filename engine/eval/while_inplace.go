package eval

// In-place loop-carried updates. A scan lowered to a while loop carries its
// stacked outputs in the loop state and writes one slice per step with a
// dynamic-update-slice; copying the whole buffer each step costs O(steps²).
// When the body's only use of a state element is one dynamic-update-slice
// (directly, or inside a call made only from there) whose result goes back
// to the same state element and nowhere else, nothing can observe the old
// contents: the loop copies that element once on entry and the update then
// writes into it. The values computed are the same; only the copies go.

import (
	"goldtrace/engine/hlo"
)

// whilePlan is the in-place analysis of one while instruction.
type whilePlan struct {
	slots []int              // state tuple indices updated in place
	dus   []*hlo.Instruction // their dynamic-update-slice instructions
}

// inPlaceState tracks which dynamic-update-slice instructions currently
// write into their operand (a count, for re-entrant loops).
type inPlaceState struct {
	plans  map[*hlo.Instruction]*whilePlan
	active map[*hlo.Instruction]int
	calls  map[*hlo.Computation]int // call sites per computation
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
	users := map[*hlo.Instruction][]*hlo.Instruction{}
	for _, in := range body.Instructions {
		for _, op := range in.Operands {
			users[op] = append(users[op], in)
		}
	}
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
		if len(g) != 1 || len(users[g[0]]) != 1 {
			continue
		}
		u := users[g[0]][0]
		if countOf(u.Operands, g[0]) != 1 || len(users[u]) != 1 || users[u][0] != body.Root ||
			countOf(body.Root.Operands, u) != 1 || body.Root.Operands[i] != u {
			continue
		}
		var dus *hlo.Instruction
		switch u.Opcode {
		case "dynamic-update-slice":
			if u.Operands[0] == g[0] {
				dus = u
			}
		case "call":
			dus = calleeDUS(st, m, u, g[0])
		}
		if dus != nil {
			p.slots = append(p.slots, i)
			p.dus = append(p.dus, dus)
		}
	}
	return p
}

// calleeDUS returns the root dynamic-update-slice of call u's callee when it
// updates the parameter that receives g, that parameter has no other use,
// and the callee is called from u alone.
func calleeDUS(st *inPlaceState, m *hlo.Module, u, g *hlo.Instruction) *hlo.Instruction {
	if len(u.Called) != 1 || u.Called[0] == nil || st.callSites(m, u.Called[0]) != 1 {
		return nil
	}
	c := u.Called[0]
	k := -1
	for j, op := range u.Operands {
		if op == g {
			k = j
		}
	}
	if k < 0 || k >= len(c.Params) || c.Root == nil || c.Root.Opcode != "dynamic-update-slice" {
		return nil
	}
	pk := c.Params[k]
	if c.Root.Operands[0] != pk {
		return nil
	}
	for _, in := range c.Instructions {
		if in != c.Root && countOf(in.Operands, pk) > 0 {
			return nil
		}
	}
	if countOf(c.Root.Operands, pk) != 1 {
		return nil
	}
	return c.Root
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
// switches their updates to in place; the returned func switches them back.
func (ev *Evaluator) beginInPlace(w *hlo.Instruction, state Value) (Value, func()) {
	if ev.Module == nil || ev.Options.Trace != nil || !state.IsTuple() {
		return state, func() {}
	}
	st := ev.inPlace()
	p := st.plan(ev.Module, w)
	if len(p.slots) == 0 {
		return state, func() {}
	}
	elems := append([]Value(nil), state.Tuple...)
	var on []*hlo.Instruction
	for j, i := range p.slots {
		if i >= len(elems) || elems[i].T == nil {
			continue
		}
		elems[i] = ArrayValue(elems[i].T.Clone())
		on = append(on, p.dus[j])
		st.active[p.dus[j]]++
	}
	return TupleValue(elems...), func() {
		for _, d := range on {
			st.active[d]--
		}
	}
}
