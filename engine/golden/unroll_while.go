package golden

import (
	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
)

// Short integer while loops unrolled.
//
// jax.random's threefry2x32 is a fori_loop of 5 steps whose carried state
// is two full-size u32 arrays: run as a loop, every step reads both from
// memory and writes both back, and the blocked fusion sees one step at a
// time. Unrolled, the twenty rounds (and the counter setup before them and
// the bits-to-float work after them) are one elementwise DAG that runs
// block by block in cache. Only loops whose trip count is known exactly
// and small are unrolled: the state's step counter k starts at a constant
// c0, the condition is exactly counter < N (N a constant) and the body
// adds the constant 1 to it. Only integer work is unrolled (every array in
// the body and the state is integer or pred, and the body holds only
// movement and integer elementwise ops, no calls): integer results do not
// depend on evaluation order, and no float rewrite (xla_rewrites.go) can
// see across the unrolled steps, so the loop computes exactly what it did.

// maxUnrollTrips and maxUnrollInstrs bound the loops unrolled.
const (
	maxUnrollTrips  = 8
	maxUnrollInstrs = 4096
)

var unrollOps = map[string]bool{
	"parameter": true, "get-tuple-element": true, "tuple": true, "constant": true, "iota": true,
	"broadcast": true, "reshape": true, "slice": true, "convert": true, "bitcast-convert": true,
	"add": true, "subtract": true, "multiply": true, "divide": true, "remainder": true,
	"and": true, "or": true, "xor": true, "not": true, "negate": true, "abs": true, "sign": true,
	"shift-left": true, "shift-right-logical": true, "shift-right-arithmetic": true,
	"maximum": true, "minimum": true, "compare": true, "select": true, "clamp": true,
	"popcnt": true, "count-leading-zeros": true,
}

// intShape reports whether every array in s is integer or pred.
func intShape(s hlo.Shape) bool {
	if s.Elem == dtype.Tuple {
		for _, e := range s.Tuple {
			if !intShape(e) {
				return false
			}
		}
		return true
	}
	return s.IsArray() && (s.Elem == dtype.Pred || s.Elem.IsInteger()) && len(s.DynamicDims) == 0
}

// scalarInt is the value of a scalar s32/s64/u32/u64 constant.
func scalarInt(x *hlo.Instruction) (int64, bool) {
	if x.Opcode != "constant" || x.Literal == nil || x.Literal.Tensor == nil || len(x.Shape.Dims) != 0 {
		return 0, false
	}
	v := x.Literal.Tensor
	switch v.Type {
	case dtype.S32:
		return int64(v.I32()[0]), true
	case dtype.S64:
		return v.I64()[0], true
	case dtype.U32:
		return int64(v.U32()[0]), true
	}
	return 0, false
}

// tripCount returns the number of steps of while w with init tuple t, or
// false when it is not a counted loop unrollOps can unroll.
func tripCount(w, t *hlo.Instruction) (int, bool) {
	if len(w.Called) != 2 || t.Opcode != "tuple" || !intShape(w.Shape) {
		return 0, false
	}
	cond, body := w.Called[0], w.Called[1]
	if cond.Root == nil || body.Root == nil || len(cond.Params) != 1 || len(body.Params) != 1 {
		return 0, false
	}
	for _, in := range cond.Instructions {
		switch in.Opcode {
		case "parameter", "get-tuple-element", "constant", "compare":
		default:
			return 0, false
		}
	}
	r := cond.Root
	if r.Opcode != "compare" || len(r.Operands) != 2 {
		return 0, false
	}
	g, lim := r.Operands[0], r.Operands[1]
	switch r.ComparisonDirection {
	case "LT":
	case "GT":
		g, lim = lim, g
	default:
		return 0, false
	}
	if ct, err := r.EffectiveComparisonType(); err != nil || (ct != "" && ct != "SIGNED" && ct != "UNSIGNED") {
		return 0, false
	}
	n, ok := scalarInt(lim)
	if !ok || g.Opcode != "get-tuple-element" || len(g.Operands) != 1 || g.Operands[0] != cond.Params[0] {
		return 0, false
	}
	k := int(g.TupleIndex)
	if k < 0 || k >= len(t.Operands) {
		return 0, false
	}
	c0, ok := scalarInt(t.Operands[k])
	if !ok || c0 >= n || n-c0 > maxUnrollTrips || t.Operands[k].Shape.Elem != lim.Shape.Elem {
		return 0, false
	}
	// The body: integer movement and elementwise ops only, the counter
	// incremented by exactly 1.
	if body.Root.Opcode != "tuple" || len(body.Root.Operands) != len(t.Operands) ||
		int(n-c0)*len(body.Instructions) > maxUnrollInstrs {
		return 0, false
	}
	for _, in := range body.Instructions {
		if !unrollOps[in.Opcode] || len(in.Called) > 0 || !intShape(in.Shape) {
			return 0, false
		}
	}
	inc := body.Root.Operands[k]
	if inc.Opcode != "add" || len(inc.Operands) != 2 {
		return 0, false
	}
	a, b := inc.Operands[0], inc.Operands[1]
	if a.Opcode == "constant" {
		a, b = b, a
	}
	if one, ok := scalarInt(b); !ok || one != 1 || a.Opcode != "get-tuple-element" || a.Operands[0] != body.Params[0] || int(a.TupleIndex) != k {
		return 0, false
	}
	return int(n - c0), true
}

// unrollWhile replaces a counted integer while loop by its steps (nil when
// it does not apply); get-tuple-elements of an unrolled loop read the
// step's values directly.
func (r *xlaRewriter) unrollWhile(in *hlo.Instruction) (*hlo.Instruction, error) {
	if in.Opcode == "get-tuple-element" && len(in.Operands) == 1 && r.unrolled[in.Operands[0]] {
		if i := int(in.TupleIndex); i >= 0 && i < len(in.Operands[0].Operands) {
			return in.Operands[0].Operands[i], nil
		}
	}
	if in.Opcode != "while" || len(in.Operands) != 1 {
		return nil, nil
	}
	t := in.Operands[0]
	trips, ok := tripCount(in, t)
	if !ok {
		return nil, nil
	}
	body := in.Called[1]
	state := append([]*hlo.Instruction(nil), t.Operands...)
	var cur *hlo.Instruction = t
	for range trips {
		local := map[*hlo.Instruction]*hlo.Instruction{}
		for _, ci := range body.Instructions {
			switch {
			case ci.Opcode == "parameter":
				local[ci] = cur
				continue
			case ci.Opcode == "get-tuple-element" && ci.Operands[0] == body.Params[0]:
				local[ci] = state[ci.TupleIndex]
				continue
			case ci.Opcode == "get-tuple-element" && local[ci.Operands[0]] != nil && local[ci.Operands[0]].Opcode == "tuple":
				// an element of a tuple the step itself built (an inlined call's result)
				local[ci] = local[ci.Operands[0]].Operands[ci.TupleIndex]
				continue
			}
			ni := *ci
			ni.Parent = r.c
			ni.Name = r.newName(ci.Name)
			ni.Operands = append([]*hlo.Instruction(nil), ci.Operands...)
			remap(ni.Operands, local)
			ni.ControlPredecessors = append([]*hlo.Instruction(nil), ci.ControlPredecessors...)
			remap(ni.ControlPredecessors, local)
			local[ci] = &ni
			r.out = append(r.out, &ni)
		}
		cur = local[body.Root]
		state = cur.Operands
	}
	r.unrolled[cur] = true
	return cur, nil
}

// forwardTuples makes get-tuple-elements of tuple instructions read the
// element itself, in a computation whose while loops were all unrolled (no
// loop is left whose in-place analysis follows tuples; while_inplace.go),
// so that the unrolled steps and their neighbours fuse as one DAG.
func (r *xlaRewriter) forwardTuples(c *hlo.Computation) {
	if len(r.unrolled) == 0 {
		return
	}
	for _, in := range c.Instructions {
		if in.Opcode == "while" {
			return
		}
	}
	fwd := func(x *hlo.Instruction) *hlo.Instruction {
		for x.Opcode == "get-tuple-element" && len(x.Operands) == 1 && x.Operands[0].Opcode == "tuple" &&
			int(x.TupleIndex) < len(x.Operands[0].Operands) {
			x = x.Operands[0].Operands[x.TupleIndex]
		}
		return x
	}
	for _, in := range c.Instructions {
		for i, op := range in.Operands {
			in.Operands[i] = fwd(op)
		}
	}
	c.Root = fwd(c.Root)
}
