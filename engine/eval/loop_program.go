package eval

// Loop programs. A while loop of many small steps spends most of a step in
// Call's bookkeeping, not in its arithmetic: use counts, ownership tests,
// the frame's slices, every group's value allocated and given back. What
// that bookkeeping decides is the same at every step, so evalWhile works
// it out once per body (a loopProgram) and then runs the steps as a flat
// list:
//
//   - each step knows its kind (constant, get-tuple-element, blocked
//     group, direct scalar integer op, the root tuple, any other op), and
//     the values whose last use it is (Call's use counts, counted once);
//   - blocked groups (but f64 ones) and scalar integer ops write into the
//     loop's own buffers, allocated at the first step and reused at every
//     step after (groupInto). A buffer whose value the next state may hold
//     (the root tuple's element, or a view of it) has more than one: each
//     step writes into one that no element of the current state shares
//     storage with, so a step never overwrites the state it reads. Which
//     state elements may hold which buffer is worked out from the body
//     (through tuples, get-tuple-elements, the elements the body passes on
//     and any other op, taken as possibly returning a view of an operand),
//     so a step compares a few pointers;
//   - values computed from loop invariants alone (constants, the state
//     elements the body passes through unchanged) are computed at the
//     first step and kept, groups and scalar ops included (loop_hoist.go
//     keeps the others');
//   - every other op runs its registered function on a value slice, with
//     Call's ownership rules, so its storage goes back to the pool (or its
//     box to the free list) when the value dies, and a value the state
//     holds once the next step has replaced it (recycle.go).
//
// Values are those of Call: every op computes with the same kernels on the
// same operands (a group's run writes the same blocks, into other
// storage), and only where values live changes. Loops fall back to Call
// when a Trace or a MemoryStats watches values, when storage is not owned
// (no recycling, several devices), when the body's state escapes whole (the
// parameter read other than by get-tuple-elements, the root tuple read),
// or with GOLDTRACE_NO_LOOP_PROGRAM=1 (or GOLDTRACE_NO_STATE_REUSE=1).

import (
	"fmt"
	"math/bits"
	"os"
	"unsafe"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// loopProgramDisabled turns loop programs off (GOLDTRACE_NO_LOOP_PROGRAM=1),
// to compare with Call's steps.
var loopProgramDisabled = os.Getenv("GOLDTRACE_NO_LOOP_PROGRAM") == "1"

// progKind is what a program step does.
type progKind uint8

const (
	progParam    progKind = iota // the state tuple
	progConst                    // a constant's value (framePlan.consts)
	progGTE                      // an element of a tuple value
	progStateGTE                 // an element of the state
	progTuple                    // a tuple only get-tuple-elements read: the run's own slice
	progRoot                     // the root tuple: the next state
	progGroup                    // a blocked group
	progScalar                   // a direct scalar integer op (scalar_step.go)
	progOp                       // any other op: its function
)

// progStep is one instruction of the body as a program step.
type progStep struct {
	kind progKind
	pos  int32
	in   *hlo.Instruction
	ops  []int32 // operand positions
	// keep: loop-invariant, computed at the first step only.
	keep bool
	// fixed: the value (a group's extras too) lands in the run's buffers.
	fixed bool
	// free lists the positions whose last use is this step (this step's
	// own, when nothing reads it).
	free   []int32
	group  *fusedGroup
	extras []int32 // a group's extras' positions
	scalar *intScalarStep
	fn     OpFunc
	// ownArgs: the op may keep its argument slice (it gets its own).
	ownArgs bool
	fresh   bool // freshOp
	tuple   bool // a tuple instruction (its operands lose their ownership)
	index   int  // a get-tuple-element's
}

// loopProgram is a while body as steps (see the top of the file).
type loopProgram struct {
	body    *hlo.Computation
	fp      *framePlan
	steps   []progStep
	nstate  int
	rootOps []int32
	maxArgs int
	// Per position with a fixed buffer: its type and dims, and (watch) the
	// state elements that may hold it; nil when the state never does.
	bufType []dtype.Type
	bufDims [][]int64
	watch   [][]int32
	// live are the steps run after the first (the others are kept);
	// keptAt marks the positions whose values they keep.
	live   []int32
	keptAt []bool
	// idle is a finished run's slices and buffers, for the next run (a
	// loop inside another loop's body runs many times), until the
	// outermost loop ends; listed: p is in ev.idleProgs.
	idle   *progRun
	listed bool
	// isCond marks a condition's program; cond is the body program's
	// condition program (nil: the condition is a counter's or is called).
	isCond bool
	cond   *loopProgram
}

// Fixed buffers are for small values: larger groups allocate from the
// pool as in Call, which shares storage between values that do not live
// at once.
const (
	progFixedMaxBytes   = 64 << 10
	progFixedTotalBytes = 1 << 20
	progFixedMaxBuffers = 256
)

// loopProgramFor returns the program of while w (made once), or nil when
// the loop runs through Call.
func (ev *Evaluator) loopProgramFor(w *hlo.Instruction, state Value) *loopProgram {
	if loopProgramDisabled || stateSpareDisabled || ev.Options.Trace != nil || ev.Options.Memory != nil ||
		!ev.recycling() || ev.Module == nil || !state.IsTuple() || len(w.Called) < 2 || w.Called[1] == nil {
		return nil
	}
	wp := ev.inPlace().plan(ev.Module, w)
	if !wp.progPlanned {
		wp.progPlanned = true
		wp.prog = ev.compileLoopProgram(w.Called[1], wp, false)
		if wp.prog != nil && w.Called[0] != nil && ev.counterCond(w.Called[0]) == nil {
			// A condition of another form: a program too, when it can be.
			wp.prog.cond = ev.compileLoopProgram(w.Called[0], wp, true)
		}
	}
	if p := wp.prog; p != nil && len(state.Tuple) == p.nstate {
		return p
	}
	return nil
}

// compileLoopProgram makes body's program, or returns nil when the body
// is not of a form programs take. With isCond, body is the loop's
// condition: its root is a pred scalar, not the next state.
func (ev *Evaluator) compileLoopProgram(body *hlo.Computation, wp *whilePlan, isCond bool) *loopProgram {
	fp := ev.framePlanFor(body)
	if len(body.Params) != 1 || fp.root < 0 || fp.uses[fp.root] != 0 {
		return nil
	}
	root := body.Instructions[fp.root]
	if isCond && (fp.tuple[fp.root] || !isScalarOf(root.Shape, dtype.Pred)) || !isCond && !fp.tuple[fp.root] {
		return nil
	}
	param := body.Params[0]
	ppos, ok := fp.pos[param]
	if !ok || !param.Shape.IsTuple() {
		return nil
	}
	n := len(body.Instructions)
	p := &loopProgram{body: body, fp: fp, nstate: len(param.Shape.Tuple), isCond: isCond,
		bufType: make([]dtype.Type, n), bufDims: make([][]int64, n), watch: make([][]int32, n)}
	if !isCond {
		p.rootOps = fp.operands[fp.root]
		if len(p.rootOps) != p.nstate {
			return nil
		}
	}
	for i, in := range body.Instructions {
		for _, q := range fp.operands[i] {
			if q < 0 {
				return nil // Call reports it
			}
			if q == ppos && (!fp.gte[i] || in.Opcode != "get-tuple-element") {
				return nil // the state read whole
			}
		}
		if in.Opcode == "parameter" && int32(i) != ppos {
			return nil
		}
	}
	keep := p.invariantSteps(wp, ppos)
	uses := append([]int32(nil), fp.uses...)
	fixedBytes, fixedCount := 0, 0
	fits := func(t dtype.Type, dims []int64) bool {
		if tensor.CheckShape(t, dims) != nil {
			return false
		}
		b := int(tensor.NumElements(dims)) * t.Size()
		if b > progFixedMaxBytes || fixedBytes+b > progFixedTotalBytes || fixedCount == progFixedMaxBuffers {
			return false
		}
		fixedBytes += b
		fixedCount++
		return true
	}
	for idx, in := range body.Instructions {
		if fp.fusion != nil && fp.interior[idx] {
			continue // computed with its group
		}
		s := progStep{pos: int32(idx), in: in, ops: fp.operands[idx], keep: keep[idx]}
		consumed := s.ops
		switch {
		case fp.fusion != nil && fp.groups[idx] != nil:
			g := fp.groups[idx]
			s.kind, s.group, s.extras, consumed = progGroup, g, fp.gextras[idx], fp.gconsumes[idx]
			if t, dims, ok := groupOutShape(g, in); ok && len(s.extras) == len(g.extras) && fits(t, dims) {
				s.fixed = true
				p.bufType[idx], p.bufDims[idx] = t, dims
				for _, x := range s.extras {
					if !fits(g.elem, g.dims) {
						s.fixed = false
						break
					}
					p.bufType[x], p.bufDims[x] = g.elem, g.dims
				}
			}
		case in.Opcode == "parameter":
			s.kind, s.keep = progParam, true // read by its get-tuple-elements alone (progStateGTE)
		case fp.konst[idx]:
			s.kind, s.keep = progConst, true // the same value at every step
		case fp.gte[idx]:
			s.kind, s.index, s.fn = progGTE, int(in.TupleIndex), fp.fns[idx]
			if s.ops[0] == ppos {
				if s.index < 0 || s.index >= p.nstate {
					return nil // Call reports it
				}
				s.kind = progStateGTE
			}
		case int32(idx) == fp.root && !isCond:
			s.kind = progRoot
		case fp.localTuple[idx]:
			s.kind = progTuple
		case intScalarStepOf(in) != nil && ops[in.Opcode] != nil && fits(intScalarStepOf(in).outType(), nil):
			s.kind, s.scalar, s.fn = progScalar, intScalarStepOf(in), ops[in.Opcode]
			s.fixed = true
			p.bufType[idx], p.bufDims[idx] = s.scalar.outType(), nil
		default:
			if fp.fns[idx] == nil {
				return nil // Call reports it
			}
			s.kind, s.fn, s.ownArgs, s.fresh, s.tuple = progOp, fp.fns[idx], fp.ownArgs[idx], fp.fresh[idx], fp.tuple[idx]
			p.maxArgs = max(p.maxArgs, len(s.ops))
		}
		for _, q := range consumed {
			if q < 0 {
				continue
			}
			if uses[q]--; uses[q] == 0 && q != fp.root {
				s.free = append(s.free, q)
			}
		}
		if fp.uses[idx] == 0 && int32(idx) != fp.root {
			s.free = append(s.free, int32(idx)) // read by nothing
		}
		p.steps = append(p.steps, s)
	}
	p.keptAt = make([]bool, n)
	for i, s := range p.steps {
		if !s.keep {
			p.live = append(p.live, int32(i))
			continue
		}
		p.keptAt[s.pos] = true
		for _, x := range s.extras {
			p.keptAt[x] = true
		}
	}
	if !isCond {
		p.watchBuffers(ppos) // (a condition's values never reach the state)
	}
	return p
}

// groupOutShape is the type and dims of the value group g's run makes at
// instruction in (g's out()), when the run can write it into storage of
// that shape (not f64 groups).
func groupOutShape(g *fusedGroup, in *hlo.Instruction) (dtype.Type, []int64, bool) {
	if g.elem == dtype.F64 || !in.Shape.IsArray() || len(in.Shape.DynamicDims) > 0 || in != g.out() {
		return 0, nil, false
	}
	var t dtype.Type
	var dims []int64
	switch {
	case g.predOut != nil:
		t, dims = g.predOut.Shape.Elem, g.dims
	case g.predRoot:
		t, dims = dtype.Pred, g.dims
	case g.reduce != nil:
		t, dims = dtype.F32, g.reduce.Shape.Dims
	case g.narrowOut != nil:
		t, dims = g.narrowOut.Shape.Elem, g.dims
	default:
		t, dims = g.elem, g.dims
	}
	if t != in.Shape.Elem || !equalDims(dims, in.Shape.Dims) {
		return 0, nil, false
	}
	return t, dims, true
}

// invariantSteps marks the instructions whose value is the same at every
// step: made by deterministic ops (those loop_hoist.go keeps, elementwise
// ones, blocked groups' members, direct scalar ops) from constants, the
// state elements the body passes through unchanged (wp.invariant) and
// other such values; nil with GOLDTRACE_NO_HOIST=1.
func (p *loopProgram) invariantSteps(wp *whilePlan, ppos int32) []bool {
	fp := p.fp
	keep := make([]bool, len(p.body.Instructions))
	if hoistDisabled {
		return keep
	}
	slots := map[int64]bool{}
	for _, i := range wp.invariant {
		slots[int64(i)] = true
	}
	inv := make([]bool, len(keep))
	for idx, in := range p.body.Instructions {
		ops := fp.operands[idx]
		switch {
		case fp.konst[idx]:
			inv[idx] = true
			continue
		case in.Opcode == "parameter":
			continue
		case in.Opcode == "get-tuple-element" && len(ops) == 1 && ops[0] == ppos:
			inv[idx] = slots[in.TupleIndex]
			continue
		}
		grouped := fp.fusion != nil && (fp.interior[idx] || fp.groups[idx] != nil)
		pure := hoistOps[in.Opcode] || isElementwiseOp(in.Opcode) || grouped || intScalarStepOf(in) != nil
		if !pure || !in.Shape.IsArray() || len(ops) == 0 && in.Opcode != "iota" {
			continue
		}
		all := true
		for _, q := range ops {
			all = all && q >= 0 && inv[q]
		}
		if grouped && fp.groups[idx] != nil && all {
			for _, m := range fp.groups[idx].members { // every member, read or not by the out
				q, ok := fp.pos[m]
				all = all && ok && inv[q]
			}
		}
		inv[idx] = all
		keep[idx] = all && !(fp.fusion != nil && fp.interior[idx])
	}
	return keep
}

// watchBuffers works out, for each fixed buffer, the state elements that
// may hold it (p.watch): the root's elements whose value may be the
// buffer's or a view of it, and the elements that are passed on from
// those.
func (p *loopProgram) watchBuffers(ppos int32) {
	n := len(p.body.Instructions)
	// The fixed buffers by number (positions with a type: groups' values
	// and extras, scalar steps).
	var fixedPos []int32
	num := make([]int, n)
	for q := range n {
		if p.bufType[q] != 0 {
			num[q] = len(fixedPos)
			fixedPos = append(fixedPos, int32(q))
		}
	}
	words := (len(fixedPos) + 63) / 64
	// fixed[q]: the fixed buffers q's value may share storage with;
	// slot[q]: the state elements it may be (part of).
	fixed := make([][]uint64, n)
	slot := make([][]uint64, n)
	swords := (p.nstate + 63) / 64
	set := func(b []uint64, i int) { b[i/64] |= 1 << (i % 64) }
	union := func(dst, src []uint64) {
		for i := range src {
			dst[i] |= src[i]
		}
	}
	for _, s := range p.steps {
		q := s.pos
		fixed[q], slot[q] = make([]uint64, words), make([]uint64, swords)
		switch s.kind {
		case progParam, progConst:
		case progStateGTE:
			set(slot[q], s.index)
		case progGTE:
			union(fixed[q], fixed[s.ops[0]])
			union(slot[q], slot[s.ops[0]])
		case progGroup:
			if s.fixed {
				set(fixed[q], num[q])
				for _, x := range s.extras {
					fixed[x], slot[x] = make([]uint64, words), make([]uint64, swords)
					set(fixed[x], num[x])
				}
			} else {
				for _, x := range s.extras {
					fixed[x], slot[x] = make([]uint64, words), make([]uint64, swords)
				}
			}
		case progScalar:
			set(fixed[q], num[q])
		default: // tuples, the root, any other op: a view of any operand
			for _, o := range s.ops {
				if fixed[o] != nil {
					union(fixed[q], fixed[o])
					union(slot[q], slot[o])
				}
			}
		}
	}
	// reach[j]: the buffers state element j may hold, directly or passed
	// on from an element of an earlier step.
	reach := make([][]uint64, p.nstate)
	for j, q := range p.rootOps {
		reach[j] = make([]uint64, words)
		union(reach[j], fixed[q])
	}
	for changed := true; changed; {
		changed = false
		for j, q := range p.rootOps {
			for w, bitsW := range slot[q] {
				for bitsW != 0 {
					i := w*64 + bits.TrailingZeros64(bitsW)
					bitsW &= bitsW - 1
					for k, x := range reach[i] {
						if reach[j][k]|x != reach[j][k] {
							reach[j][k] |= x
							changed = true
						}
					}
				}
			}
		}
	}
	for j := range reach {
		for w, bitsW := range reach[j] {
			for bitsW != 0 {
				q := fixedPos[w*64+bits.TrailingZeros64(bitsW)]
				bitsW &= bitsW - 1
				p.watch[q] = append(p.watch[q], int32(j))
			}
		}
	}
}

// progRun is one run of a loop program: its values and buffers.
type progRun struct {
	p       *loopProgram
	vals    []Value
	have    []bool
	owned   []bool
	made    madeStorage
	bufs    [][]progBuf // per position, its fixed buffers
	args    []Value
	tuples  [][]Value
	states  [2][]Value
	lookup  frameValues
	valueOf func(*hlo.Instruction) (Value, bool) // lookup's value
	into    groupInto
	scs     []*fuseScratch // per group position, its tables
	extras  []Value
	// stateOwned: which elements of the state a step made (rootOwnedOf),
	// to recycle once the next state has replaced them.
	stateOwned, nextOwned []bool
}

// progBuf is a fixed buffer and the span of its storage.
type progBuf struct {
	t      *tensor.Tensor
	lo, hi uintptr
}

// run runs while w's loop from state (evalWhile's loop, the body as p's
// steps); direct is the condition's direct form, if any.
func (p *loopProgram) run(ev *Evaluator, cond *hlo.Computation, direct *counterCond, state Value) (Value, error) {
	r := p.newRun(ev)
	var rc *progRun // the condition's run
	if direct == nil && p.cond != nil {
		rc = p.cond.newRun(ev)
	}
	cur := state.Tuple
	arg := make([]Value, 1)
	defer func() {
		r.finish(ev, cur)
		if rc != nil {
			rc.finish(ev, nil)
		}
	}()
	for step := 0; ; step++ {
		if err := ev.Ctx.Err(); err != nil {
			return Value{}, err
		}
		if res, ok := direct.evalElems(cur); ok {
			if !res {
				return Value{Tuple: cur}, nil
			}
		} else if rc != nil {
			res, err := rc.test(ev, cur, step == 0)
			if err != nil {
				return Value{}, err
			}
			if !res {
				return Value{Tuple: cur}, nil
			}
		} else {
			arg[0] = Value{Tuple: cur}
			c, err := ev.Call(cond, arg)
			arg[0] = Value{}
			if err != nil {
				return Value{}, err
			}
			if c.T == nil || c.T.Type != dtype.Pred || len(c.T.Data) != 1 {
				return Value{}, fmt.Errorf("while condition %s must return a pred scalar", cond.Name)
			}
			stop := c.T.Data[0] == 0
			if ev.rootMine {
				ev.recycleBox(c.T) // the condition made it and nothing else holds it
			}
			if stop {
				return Value{Tuple: cur}, nil
			}
		}
		next, err := r.step(ev, cur, step == 0)
		if err != nil {
			return Value{}, err
		}
		for _, o := range r.stateOwned {
			if o {
				ev.recycleReplaced(Value{Tuple: cur}, r.stateOwned, Value{Tuple: next})
				break
			}
		}
		cur = next
		r.stateOwned, r.nextOwned = r.nextOwned, r.stateOwned
	}
}

// newRun returns a run of p: the last one's slices, or new ones (counted
// in ev.progRuns).
func (p *loopProgram) newRun(ev *Evaluator) *progRun {
	ev.progRuns++
	r := p.idle
	p.idle = nil
	if r == nil {
		n := len(p.body.Instructions)
		r = &progRun{p: p, vals: make([]Value, n), have: make([]bool, n), owned: make([]bool, n),
			bufs: make([][]progBuf, n), args: make([]Value, max(p.maxArgs, 1)),
			stateOwned: make([]bool, p.nstate), nextOwned: make([]bool, p.nstate)}
		r.lookup = frameValues{p.fp, r.vals, r.have}
		r.valueOf = r.lookup.value
	}
	if !p.isCond {
		// (The last run's final state is its caller's.)
		r.states[0], r.states[1] = make([]Value, p.nstate), make([]Value, p.nstate)
	}
	return r
}

// test runs a condition's program on state cur and returns its value.
func (r *progRun) test(ev *Evaluator, cur []Value, first bool) (bool, error) {
	if _, err := r.step(ev, cur, first); err != nil {
		return false, err
	}
	q := r.p.fp.root
	c := r.vals[q]
	if c.T == nil || c.T.Type != dtype.Pred || len(c.T.Data) != 1 {
		return false, fmt.Errorf("while condition %s must return a pred scalar", r.p.body.Name)
	}
	res := c.T.Data[0] != 0
	if r.owned[q] {
		if !ev.recycleBox(c.T) {
			ev.pool.put(c.T.Data)
		}
		r.owned[q] = false
	}
	return res, nil
}

// buf returns a fixed buffer of position q that no element of the state
// cur shares storage with.
func (r *progRun) buf(ev *Evaluator, q int32, cur []Value) *tensor.Tensor {
	ring := r.bufs[q]
	watch := r.p.watch[q]
	for i := range ring {
		b := &ring[i]
		if len(watch) == 0 {
			return b.t
		}
		held := false
		for _, j := range watch {
			if int(j) >= len(cur) {
				continue
			}
			if e := cur[j].T; e != nil {
				if len(e.Data) > 0 {
					p := uintptr(unsafe.Pointer(&e.Data[0]))
					held = p < b.hi && b.lo < p+uintptr(len(e.Data))
				}
			} else {
				held = sharesSpan(cur[j], b.lo, b.hi)
			}
			if held {
				break
			}
		}
		if !held {
			return b.t
		}
	}
	// Storage of its own, never the pool's: the step's record of the
	// storage it made (rootOwnedOf) may still name a pooled buffer an
	// owned value of this step left.
	t := tensor.New(r.p.bufType[q], r.p.bufDims[q])
	b := progBuf{t: t}
	if sp, ok := span(t); ok {
		b.lo, b.hi = sp.lo, sp.hi
	}
	r.bufs[q] = append(ring, b)
	return t
}

// step runs the body once on state cur and returns the next state.
func (r *progRun) step(ev *Evaluator, cur []Value, first bool) ([]Value, error) {
	p, fp := r.p, r.p.fp
	vals, have, owned := r.vals, r.have, r.owned
	made := &r.made
	made.reset()
	next := r.states[0]
	if len(cur) > 0 && len(next) > 0 && &next[0] == &cur[0] {
		next = r.states[1]
	}
	n := len(p.steps)
	if !first {
		n = len(p.live) // the others are kept from the first step
	}
	for i := range n {
		s := &p.steps[i]
		if !first {
			s = &p.steps[p.live[i]]
		}
		q := s.pos
		switch s.kind {
		case progParam:
			// Its get-tuple-elements read cur.
		case progStateGTE:
			vals[q] = cur[s.index]
		case progConst:
			vals[q] = fp.consts[q]
		case progGTE:
			t := vals[s.ops[0]]
			if !t.IsTuple() || s.index < 0 || s.index >= len(t.Tuple) {
				r.args[0] = t
				v, err := callOp(s.fn, ev, s.in, r.args[:1:1]) // its error
				if err != nil {
					return nil, r.locate(s, err)
				}
				vals[q] = v
				break
			}
			vals[q] = t.Tuple[s.index]
		case progTuple:
			tu := r.tuple(q, len(s.ops))
			for i, o := range s.ops {
				tu[i] = vals[o]
				owned[o] = false // the tuple holds its storage now
			}
			vals[q] = Value{Tuple: tu}
		case progRoot:
			for i, o := range s.ops {
				next[i] = vals[o]
			}
			r.nextOwned = rootOwnedOf(r.nextOwned, next, made)
			for _, o := range s.ops {
				owned[o] = false
			}
			vals[q] = Value{Tuple: next}
		case progScalar:
			out := r.buf(ev, q, cur)
			a, b := vals[s.ops[0]].T, vals[s.ops[1]].T
			if sz := s.scalar.t.Size(); a != nil && b != nil && a.Type == s.scalar.t && b.Type == s.scalar.t &&
				len(a.Dims) == 0 && len(b.Dims) == 0 && len(a.Data) == sz && len(b.Data) == sz {
				s.scalar.into(a, b, out.Data)
			} else if err := r.general(ev, s, out); err != nil {
				return nil, err
			}
			vals[q] = ArrayValue(out)
		case progGroup:
			into := &r.into
			into.out, into.extras, into.sc = nil, into.extras[:0], r.scratch(q, s.group)
			if s.fixed {
				into.out = r.buf(ev, q, cur)
				for _, x := range s.extras {
					into.extras = append(into.extras, r.buf(ev, x, cur))
				}
			}
			v, extras, err := runGroup(ev, s.group, r.valueOf, r.extras[:0], &r.lookup, int(q), into)
			into.out, into.sc = nil, nil
			if err != nil {
				return nil, r.locate(s, err)
			}
			r.extras = extras[:0]
			for i, x := range s.extras {
				vals[x], have[x] = extras[i], true
				if !s.fixed && !s.keep {
					owned[x] = true
					made.add(extras[i].T)
				}
			}
			vals[q] = v
			if !s.fixed && !s.keep && v.T != nil {
				owned[q] = true // a group's value is always new storage
				made.add(v.T)
			}
			if s.keep {
				r.keep(ev, v)
				for _, x := range s.extras {
					r.keep(ev, vals[x])
				}
			}
		default:
			if err := r.op(ev, s); err != nil {
				return nil, err
			}
		}
		have[q] = true
		for _, o := range s.free {
			if owned[o] {
				if !ev.recycleBox(vals[o].T) {
					ev.pool.put(vals[o].T.Data)
				}
				owned[o] = false
			}
			if !p.keptAt[o] {
				vals[o], have[o] = Value{}, false // dead: nothing holds it alive
			}
		}
	}
	return next, nil
}

// op runs a step of any other op, with Call's ownership rules.
func (r *progRun) op(ev *Evaluator, s *progStep) error {
	vals, owned := r.vals, r.owned
	var args []Value
	if s.ownArgs {
		args = make([]Value, len(s.ops))
	} else {
		args = r.args[:len(s.ops):len(s.ops)]
	}
	for i, o := range s.ops {
		args[i] = vals[o]
	}
	v, err := callOp(s.fn, ev, s.in, args)
	if err != nil {
		return r.locate(s, err)
	}
	q := s.pos
	vals[q] = v
	if s.keep {
		r.keep(ev, v)
		return nil
	}
	fresh := v.T != nil && s.fresh
	var heir bool
	for i, o := range s.ops {
		switch {
		case s.tuple:
			owned[o] = false // the tuple holds its storage now
		case (fresh || owned[o]) && sharesValue(v, args[i]):
			// A view or pass-through holds its storage now; at the
			// operand's last use, when it is the very same storage, it
			// inherits the ownership (as in Call).
			heir = !fresh && owned[o] && s.frees(o) && sameStorage(v.T, args[i].T)
			fresh = false
			owned[o] = false
		}
	}
	if fresh || heir {
		owned[q] = true
		r.made.add(v.T)
	}
	return nil
}

// frees reports whether o's last use is s.
func (s *progStep) frees(o int32) bool {
	for _, f := range s.free {
		if f == o {
			return true
		}
	}
	return false
}

// general computes a scalar step whose operands are not what its shape
// says through the op's function, into the step's buffer.
func (r *progRun) general(ev *Evaluator, s *progStep, out *tensor.Tensor) error {
	args := []Value{r.vals[s.ops[0]], r.vals[s.ops[1]]}
	v, err := callOp(s.fn, ev, s.in, args)
	if err != nil {
		return r.locate(s, err)
	}
	if v.T == nil || v.T.Type != out.Type || len(v.T.Data) != len(out.Data) || len(v.T.Dims) != 0 {
		return r.locate(s, fmt.Errorf("internal error: scalar result %v", v.T))
	}
	copy(out.Data, v.T.Data)
	return nil
}

// keep marks a kept value's storage frozen while the loop runs
// (loop_invariant.go), as loop_hoist.go's kept values are, and never the
// step's own (rootOwnedOf).
func (r *progRun) keep(ev *Evaluator, v Value) {
	r.made.drop(v)
	for _, t := range v.Leaves() {
		if s, ok := span(t); ok {
			ev.inv.spans = append(ev.inv.spans, s)
		}
	}
}

// scratch returns the tables of group g at position q, kept for the run.
func (r *progRun) scratch(q int32, g *fusedGroup) *fuseScratch {
	if r.scs == nil {
		r.scs = make([]*fuseScratch, len(r.vals))
	}
	if r.scs[q] == nil {
		r.scs[q] = g.newScratch()
	}
	return r.scs[q]
}

// tuple returns position q's element slice of n.
func (r *progRun) tuple(q int32, n int) []Value {
	if r.tuples == nil {
		r.tuples = make([][]Value, len(r.vals))
	}
	if len(r.tuples[q]) != n {
		r.tuples[q] = make([]Value, n)
	}
	return r.tuples[q]
}

func (r *progRun) locate(s *progStep, err error) error {
	if _, located := err.(*Error); located {
		return err
	}
	return &Error{r.p.body.Name, s.in.Name, s.in.Opcode, err}
}

// finish keeps the run's slices, holding no value, and the fixed buffers
// the final state does not hold, for the next run.
func (r *progRun) finish(ev *Evaluator, final []Value) {
	state := Value{Tuple: final}
	for q, ring := range r.bufs {
		kept := ring[:0]
		for _, b := range ring {
			if !shares(state, b.t) {
				kept = append(kept, b)
			}
		}
		clear(ring[len(kept):])
		r.bufs[q] = kept
	}
	clear(r.vals)
	clear(r.have)
	clear(r.owned)
	clear(r.args)
	clear(r.extras[:cap(r.extras)])
	clear(r.into.extras[:cap(r.into.extras)])
	r.into = groupInto{extras: r.into.extras[:0]}
	for _, t := range r.tuples {
		clear(t)
	}
	for _, sc := range r.scs {
		if sc != nil {
			sc.clear()
		}
	}
	r.made.reset()
	clear(r.stateOwned)
	clear(r.nextOwned)
	r.states = [2][]Value{}
	r.p.idle = r
	if !r.p.listed {
		r.p.listed = true
		ev.idleProgs = append(ev.idleProgs, r.p)
	}
}

// dropIdleRuns lets the finished runs (and their buffers) go: the last
// loop has ended (enterLoop).
func (ev *Evaluator) dropIdleRuns() {
	for _, p := range ev.idleProgs {
		p.idle, p.listed = nil, false
	}
	clear(ev.idleProgs)
	ev.idleProgs = ev.idleProgs[:0]
}
