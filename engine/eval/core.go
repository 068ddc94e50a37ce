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
	"sync"
	"sync/atomic"
	"unsafe"

	"goldtrace/engine/dtype"

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
	// Finished, when set, is called after each instruction (or fused group,
	// under the group's root) is computed. Unlike Trace it changes no plan,
	// so it can time a run as it normally goes (GOLDTRACE_OP_PROFILE).
	Finished func(in *hlo.Instruction)
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
	// stateSpare, when set, is the element slice of a running loop's dead
	// state, which the root tuple of stateBody (the loop's body) fills
	// instead of allocating one (evalWhile).
	stateSpare []Value
	stateBody  *hlo.Computation
	boxes      boxes                             // dead small tensors' boxes, in loops (small_box.go)
	conds      map[*hlo.Computation]*counterCond // while conditions computed directly (nil: not of that form)
	progRuns   int                               // runs of loop programs, bodies and conditions (loop_program.go; tests)
	idleProgs  []*loopProgram                    // loop programs keeping a finished run (loop_program.go)
	// donation, while an update-like op runs (donatingOps), is its operand
	// 0 when the frame alone holds that storage and this is its last use:
	// the op may write its result there instead of into a copy (the frame
	// then hands the ownership on, as to any result sharing a dying
	// operand's storage).
	donation donation
	// flushFree is, after an op flushingArithmetic wraps, the start of its
	// result's storage when the path that computed it guarantees no
	// subnormal in it (the bf16-pairs GEMM): the wrapper skips its scan.
	flushFree unsafe.Pointer
	// rootTuple is, after a call whose root is a tuple instruction, the
	// element slice that instruction made (nil otherwise).
	rootTuple []Value
	// rootMine is, after a call, whether the frame alone held its root
	// value's storage (a condition's fresh pred).
	rootMine bool
	frames   map[*hlo.Computation]*framePlan // Call's plan of each computation
	// lastC and lastFrame are the last computation framePlanFor found and
	// its plan (frames are never dropped): a loop's body, step after step.
	lastC     *hlo.Computation
	lastFrame *framePlan
	// ynnUses is the operand-use count of each widening of bf16 and of its
	// operand, as framePlanFor counts them (reduce_ynn.go).
	ynnUses sync.Map
	// ynnProducer caches ynnFusedProducer for each YNNPACK-sized reduce.
	ynnProducer sync.Map

	// dotEpi, while Call evaluates a dot whose blocked-group consumer is to
	// run on its tiles, is that run (dot_epilogue.go); dotInF32 takes it.
	dotEpi *dotEpilogue
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

// framePlan is what Call works out once per computation: each
// instruction's position, its operands' positions, the use counts, its op
// and the computation's blocked groups by position, so that a call (a loop
// body's step) keeps its values in slices and re-plans nothing: no map
// lookup, no allocation of its own at a step.
type framePlan struct {
	pos      map[*hlo.Instruction]int32
	operands [][]int32 // per instruction, its operands' positions (-1: not in the computation)
	uses     []int32   // per instruction, its uses as an operand
	root     int32     // the root's position, -1 if none
	nargs    int       // operands of all instructions
	free     []*frameBuf

	fns []OpFunc // per instruction, its op (nil: a parameter, or no evaluator)
	// fresh: the op always allocates its result (freshOp); tuple: the op
	// is a tuple; ownArgs: the op may keep its argument slice (in a value
	// or past the op), so it gets a slice of its own, not the frame's.
	fresh, tuple, ownArgs []bool
	// localTuple: a tuple (not the root) whose every user is a
	// get-tuple-element of this computation: its value never leaves the
	// frame, so its element slice is the frame's, reused.
	localTuple []bool
	// konst: the instruction is a constant whose value is consts[i]; gte:
	// a get-tuple-element, taken without calling an op.
	konst, gte         []bool
	consts             []Value
	fusion             *fusionPlan   // nil: no blocked group
	interior           []bool        // evaluated inside a group, never stored
	groups             []*fusedGroup // by the position of the group's value
	gconsumes, gextras [][]int32     // per group position: consumed operands', extras' positions
	// ginplace is, per group position, the frame positions of the
	// group's inPlace operands.
	ginplace [][]int32
	// dotEpi is, per position of a dot, the position of the group that
	// may run on the dot's result tile by tile (planDotEpilogues), -1 for
	// none; nil when no dot has one.
	dotEpi []int32
	// gops is, per group position, per member, per operand, the frame
	// position of an operand from outside the group (-1: a member's, or
	// not in the computation), so a step's group finds its operands
	// without looking them up.
	gops [][][]int32
}

// frameBuf is one call's per-instruction state, reused by the next call of
// the same computation.
type frameBuf struct {
	vals      []Value
	have      []bool
	uses      []int32
	owned     []bool
	args      []Value     // the operands of ops that keep no argument slice
	made      madeStorage // see Call
	rootOwned []bool      // see Evaluator.rootOwned
	lookup    frameValues // the frame's values, as its blocked groups read them
	valueOf   func(*hlo.Instruction) (Value, bool)
	tuples    [][]Value // per position, a local tuple's elements (localTuple)
	// epiDone is, per group position, the position of the dot whose tiles
	// the group has already run on (dot_epilogue.go), -1 for none; nil
	// until a dot ran one.
	epiDone []int32
	extras  []Value // a group's extras, as runGroup returns them (reused)
}

func (fp *framePlan) get() *frameBuf {
	if k := len(fp.free); k > 0 {
		fb := fp.free[k-1]
		fp.free = fp.free[:k-1]
		return fb
	}
	n := len(fp.uses)
	fb := &frameBuf{vals: make([]Value, n), have: make([]bool, n), uses: make([]int32, n), owned: make([]bool, n),
		args: make([]Value, fp.nargs)}
	fb.lookup = frameValues{fp, fb.vals, fb.have}
	fb.valueOf = fb.lookup.value
	return fb
}

// put returns fb cleared, holding no values.
func (fp *framePlan) put(fb *frameBuf) {
	clear(fb.vals)
	clear(fb.have)
	clear(fb.owned)
	clear(fb.args)
	clear(fb.extras[:cap(fb.extras)])
	fb.made.reset()
	for _, t := range fb.tuples {
		clear(t)
	}
	for i := range fb.epiDone {
		fb.epiDone[i] = -1
	}
	fp.free = append(fp.free, fb)
}

// argFreeOps keep no reference to their argument slice once they return
// (what they return holds values, never the slice), so their operands can
// live in a frame's reused slice; any other op gets a slice of its own.
var argFreeOps = map[string]bool{"tuple": true, "get-tuple-element": true, "broadcast": true, "reshape": true,
	"bitcast": true, "transpose": true, "slice": true, "dynamic-slice": true, "dynamic-update-slice": true,
	"concatenate": true, "constant": true, "iota": true, "convert": true, "compare": true, "select": true,
	"clamp": true, "dot": true, "while": true, "call": true, "fusion": true, "conditional": true,
	"reduce": true, "copy": true, "pad": true, "reverse": true}

func (ev *Evaluator) framePlanFor(c *hlo.Computation) *framePlan {
	if c == ev.lastC {
		return ev.lastFrame
	}
	if fp, ok := ev.frames[c]; ok {
		ev.lastC, ev.lastFrame = c, fp
		return fp
	}
	n := len(c.Instructions)
	fp := &framePlan{pos: make(map[*hlo.Instruction]int32, n), operands: make([][]int32, n), uses: make([]int32, n), root: -1,
		fns: make([]OpFunc, n), fresh: make([]bool, n), tuple: make([]bool, n), ownArgs: make([]bool, n)}
	for i, in := range c.Instructions {
		fp.pos[in] = int32(i)
	}
	flat := make([]int32, 0, n*2)
	for i, in := range c.Instructions {
		start := len(flat)
		for _, op := range in.Operands {
			p, ok := fp.pos[op]
			if !ok {
				p = -1
			} else {
				fp.uses[p]++
			}
			flat = append(flat, p)
		}
		fp.operands[i] = flat[start:len(flat):len(flat)]
		if in.Opcode != "parameter" {
			f, ok := ops[in.Opcode]
			if !ok {
				f, _ = asyncWrapper(in.Opcode)
			}
			if s := scalarStepOp(in, f); s != nil {
				f = s // a loop's counter arithmetic, without the general kernels' bookkeeping
			}
			fp.fns[i] = f
		}
		fp.fresh[i] = freshOp(in)
		fp.tuple[i] = in.Opcode == "tuple"
		fp.ownArgs[i] = !argFreeOps[in.Opcode] && !isElementwiseOp(in.Opcode)
	}
	fp.nargs = len(flat)
	if p, ok := fp.pos[c.Root]; ok {
		fp.root = p
	}
	fp.konst, fp.gte, fp.consts = make([]bool, n), make([]bool, n), make([]Value, n)
	for i, in := range c.Instructions {
		switch in.Opcode {
		case "constant":
			if v, err := evalConstant(ev, in, nil); err == nil && registeredAs("constant", evalConstant) {
				fp.konst[i], fp.consts[i] = true, v
			}
		case "get-tuple-element":
			fp.gte[i] = len(in.Operands) == 1 && registeredAs("get-tuple-element", evalGetTupleElement)
		}
	}
	fp.localTuple = make([]bool, n)
	for i := range c.Instructions {
		fp.localTuple[i] = fp.tuple[i] && int32(i) != fp.root
	}
	for i, in := range c.Instructions {
		for _, p := range fp.operands[i] {
			if p >= 0 && (in.Opcode != "get-tuple-element" || len(in.Operands) != 1) {
				fp.localTuple[p] = false
			}
		}
	}
	for i := range fp.localTuple {
		if fp.uses[i] == 0 {
			fp.localTuple[i] = false
		}
	}
	for i, in := range c.Instructions {
		if in.Opcode == "convert" && len(fp.operands[i]) == 1 && fp.operands[i][0] >= 0 && in.Operands[0].Shape.Elem == dtype.BF16 {
			ev.ynnUses.Store(in, fp.uses[i])
			ev.ynnUses.Store(in.Operands[0], fp.uses[fp.operands[i][0]])
		}
	}
	if plan := ev.fusionPlanFor(c); plan != nil {
		fp.fusion = plan
		fp.interior = make([]bool, n)
		fp.groups = make([]*fusedGroup, n)
		fp.gconsumes = make([][]int32, n)
		fp.gextras = make([][]int32, n)
		fp.gops = make([][][]int32, n)
		fp.ginplace = make([][]int32, n)
		posOf := func(x *hlo.Instruction) int32 {
			if p, ok := fp.pos[x]; ok {
				return p
			}
			return -1
		}
		for i, in := range c.Instructions {
			fp.interior[i] = plan.interior[in]
			g := plan.group(in)
			if g == nil {
				continue
			}
			fp.groups[i] = g
			for _, op := range g.consumes {
				fp.gconsumes[i] = append(fp.gconsumes[i], posOf(op))
			}
			for _, x := range g.extras {
				fp.gextras[i] = append(fp.gextras[i], fp.pos[x])
			}
			for _, x := range g.inPlace {
				if p := posOf(x); p >= 0 {
					fp.ginplace[i] = append(fp.ginplace[i], p)
				}
			}
			fp.gops[i] = make([][]int32, len(g.members))
			for j, m := range g.members {
				fp.gops[i][j] = make([]int32, len(m.Operands))
				for k, op := range m.Operands {
					fp.gops[i][j][k] = -1
					if _, in := g.pos[op]; !in {
						fp.gops[i][j][k] = posOf(op)
					}
				}
			}
		}
	}
	if fp.fusion != nil {
		fp.dotEpi = planDotEpilogues(c, fp)
	}
	if ev.frames == nil {
		ev.frames = map[*hlo.Computation]*framePlan{}
	}
	ev.frames[c] = fp
	return fp
}

// frameValues is the lookup a blocked group reads its outside operands
// through: the values of one running frame.
type frameValues struct {
	fp   *framePlan
	vals []Value
	have []bool
}

// operand is the value of outside operand k of member j of the group at
// position idx (as value(op) finds it, by position).
func (f *frameValues) operand(idx, j, k int) (Value, bool) {
	p := f.fp.gops[idx][j][k]
	if p < 0 || !f.have[p] {
		return Value{}, false
	}
	return f.vals[p], true
}

// operandT is operand's array (nil for a tuple or token).
func (f *frameValues) operandT(idx, j, k int) (*tensor.Tensor, bool) {
	p := f.fp.gops[idx][j][k]
	if p < 0 || !f.have[p] {
		return nil, false
	}
	return f.vals[p].T, true
}

func (f *frameValues) value(op *hlo.Instruction) (Value, bool) {
	if p, ok := f.fp.pos[op]; ok && f.have[p] {
		return f.vals[p], true
	}
	return Value{}, false
}

// Call evaluates computation c on args.
func (ev *Evaluator) Call(c *hlo.Computation, args []Value) (Value, error) {
	if len(args) != len(c.Params) {
		return Value{}, fmt.Errorf("computation %s takes %d parameters, got %d", c.Name, len(c.Params), len(args))
	}
	fp := ev.framePlanFor(c)
	// Count uses so values can be dropped after their last use; big modules
	// otherwise hold every intermediate in memory.
	fb := fp.get()
	defer fp.put(fb)
	uses, vals, have := fb.uses, fb.vals, fb.have
	copy(uses, fp.uses)
	// Every instruction's operand values, in the frame's slice (an op that
	// may keep its argument slice gets one of its own).
	argVals := fb.args
	// owned: values whose storage this frame alone holds (recycle.go).
	var owned []bool
	var made *madeStorage // storage this frame allocated (recycle.go); in loops only, as it holds the storage
	if ev.ownsStorage() {
		owned = fb.owned
	}
	recycling := ev.recycling()
	if recycling {
		made = &fb.made
	}
	var rootOwned []bool      // see Evaluator.rootOwned
	var rootTuple []Value     // see Evaluator.rootTuple
	hoisted := ev.hoisting[c] // nil unless c is a running loop's body
	consume := ev.Options.ConsumeArgs && c == ev.Module.Entry
	mem := ev.Options.Memory
	release := func(p int32) {
		if consume {
			if in := c.Instructions[p]; in.Opcode == "parameter" && int(in.ParameterNumber) < len(args) {
				args[in.ParameterNumber] = Value{}
			}
		}
		if owned != nil && owned[p] {
			if recycling {
				if !ev.recycleBox(vals[p].T) {
					ev.pool.put(vals[p].T.Data)
				}
			} else {
				tensor.Release(vals[p].T.Data)
			}
			owned[p] = false
		}
		if have[p] {
			if mem != nil {
				mem.drop(vals[p])
			}
			vals[p], have[p] = Value{}, false
			if fb.tuples != nil && fb.tuples[p] != nil {
				clear(fb.tuples[p]) // a local tuple's elements: not kept alive by the frame's slice
			}
		}
	}
	// done counts one use of the operand at p gone.
	done := func(p int32) {
		if p < 0 {
			return
		}
		if uses[p]--; uses[p] == 0 && p != fp.root {
			release(p)
		}
	}
	for idx, in := range c.Instructions {
		if err := ev.Ctx.Err(); err != nil {
			return Value{}, err
		}
		var v Value
		if fp.fusion != nil && fp.interior[idx] {
			continue // computed block by block with its group
		}
		if g := (*fusedGroup)(nil); fp.fusion != nil {
			g = fp.groups[idx]
			if g != nil && fb.epiDone != nil && fb.epiDone[idx] >= 0 {
				// Run already, on its dot's tiles as the GEMM made them
				// (dot_epilogue.go): its value is the dot's storage.
				p := fb.epiDone[idx]
				fb.epiDone[idx] = -1
				v = vals[p]
				owned[p] = false // the group's value holds it now
				if mem != nil {
					mem.add(v)
				}
				for _, q := range fp.gconsumes[idx] {
					done(q)
				}
				owned[idx] = true
				if ev.Options.Trace != nil {
					ev.Options.Trace(in, v)
				}
				if ev.Options.Finished != nil {
					ev.Options.Finished(in)
				}
				vals[idx], have[idx] = v, true
				continue
			}
			if g != nil {
				var err error
				var extras []Value
				var into *groupInto
				if owned != nil && !inPlaceDisabled {
					// An operand whose storage this frame alone holds and
					// whose last use this run is: the group's value is
					// written into it (planInPlace).
					if p := inPlaceOperand(fp, idx, owned, have, vals, uses); p >= 0 {
						into = &groupInto{out: vals[p].T}
						owned[p] = false // the group's value holds it now
					}
				}
				if v, extras, err = runGroup(ev, g, fb.valueOf, fb.extras, &fb.lookup, idx, into); err != nil {
					return Value{}, &Error{c.Name, in.Name, in.Opcode, err}
				}
				fb.extras = extras[:0] // its storage, for the next group
				// Before its operands may die: both existed at once.
				if mem != nil {
					mem.add(v)
				}
				// Members also read outside the group: their values are set
				// here, ahead of their positions (skipped as interior), and
				// before the group's consumed operands count down.
				for i, p := range fp.gextras[idx] {
					if mem != nil {
						mem.add(extras[i])
					}
					vals[p], have[p] = extras[i], true
					if owned != nil {
						owned[p] = true
						made.add(extras[i].T)
					}
				}
				clear(extras) // in vals now; the reused slice must not keep them alive past their last use
				for _, p := range fp.gconsumes[idx] {
					done(p)
				}
				if owned != nil && v.T != nil {
					owned[idx] = true // a group's value is always new storage, or an operand's it took over
					made.add(v.T)
				}
				if ev.Options.Trace != nil {
					ev.Options.Trace(in, v)
				}
				if ev.Options.Finished != nil {
					ev.Options.Finished(in)
				}
				vals[idx], have[idx] = v, true
				continue
			}
		}
		if in.Opcode == "parameter" {
			v = args[in.ParameterNumber]
			if mem != nil {
				mem.add(v)
			}
		} else if fp.konst[idx] {
			v = fp.consts[idx] // as evalConstant returns it, every time
			if mem != nil {
				mem.add(v)
			}
		} else if p := fp.operands[idx]; fp.gte[idx] && p[0] >= 0 && have[p[0]] && vals[p[0]].IsTuple() &&
			in.TupleIndex >= 0 && int(in.TupleIndex) < len(vals[p[0]].Tuple) && !hoisted.member(in) {
			// get-tuple-element, as evalGetTupleElement takes it (its
			// errors are left to it); a tuple is never owned.
			v = vals[p[0]].Tuple[in.TupleIndex]
			if mem != nil {
				mem.add(v)
			}
			done(p[0])
		} else if kept, ok := hoisted.value(in); ok {
			v = kept // loop-invariant, computed at an earlier step (loop_hoist.go)
			if mem != nil {
				mem.add(v)
			}
			for _, p := range fp.operands[idx] {
				done(p)
			}
		} else {
			opPos := fp.operands[idx]
			var opArgs []Value
			if fp.ownArgs[idx] {
				opArgs = make([]Value, len(opPos))
			} else {
				opArgs = argVals[:len(opPos):len(opPos)]
				argVals = argVals[len(opPos):]
			}
			for i, p := range opPos {
				if p < 0 || !have[p] {
					return Value{}, &Error{c.Name, in.Name, in.Opcode, fmt.Errorf("operand %%%s has no value", in.Operands[i].Name)}
				}
				opArgs[i] = vals[p]
			}
			f := fp.fns[idx]
			if f == nil {
				return Value{}, &Error{c.Name, in.Name, in.Opcode, Unsupported("opcode %q", in.Opcode)}
			}
			var err error
			if spare := ev.stateSpare; spare != nil && int32(idx) == fp.root && fp.tuple[idx] && c == ev.stateBody && len(spare) == len(opArgs) {
				// The loop's state of two steps ago, dead now (evalWhile).
				ev.stateSpare = nil
				copy(spare, opArgs)
				v = Value{Tuple: spare}
			} else if fp.localTuple[idx] && ev.Options.Trace == nil {
				// Taken apart by get-tuple-elements only, here: the frame's slice.
				if fb.tuples == nil {
					fb.tuples = make([][]Value, len(fp.uses))
				}
				if len(fb.tuples[idx]) != len(opArgs) {
					fb.tuples[idx] = make([]Value, len(opArgs))
				}
				copy(fb.tuples[idx], opArgs)
				v = Value{Tuple: fb.tuples[idx]}
			} else if fp.dotEpi != nil && fp.dotEpi[idx] >= 0 && owned != nil && !inPlaceDisabled && !hoisted.member(in) {
				v, err = ev.dotWithEpilogue(fp, fb, idx, f, in, opArgs)
			} else {
				if owned != nil && donatingOps[in.Opcode] && len(opPos) > 0 && !inPlaceDisabled && !hoisted.member(in) {
					if p := opPos[0]; p >= 0 && p != fp.root && owned[p] && uses[p] == 1 && opArgs[0].T != nil {
						ev.donation = donation{in, opArgs[0].T}
					}
				}
				v, err = callOp(f, ev, in, opArgs)
				ev.donation = donation{}
			}
			if err != nil {
				if _, located := err.(*Error); located {
					return Value{}, err
				}
				return Value{}, &Error{c.Name, in.Name, in.Opcode, err}
			}
			if int32(idx) == fp.root && fp.tuple[idx] {
				rootTuple = v.Tuple
			}
			if mem != nil {
				mem.add(v)
			}
			tuple := fp.tuple[idx]
			if owned != nil {
				if int32(idx) == fp.root && tuple {
					fb.rootOwned = rootOwnedOf(fb.rootOwned, opArgs, made)
					rootOwned = fb.rootOwned
				}
				fresh := v.T != nil && fp.fresh[idx]
				var heir bool
				for i, p := range opPos {
					switch {
					case tuple:
						owned[p] = false // the tuple holds its storage now
					case (fresh || owned[p]) && sharesValue(v, opArgs[i]):
						// This view or pass-through holds its storage now;
						// when it is the operand's last use and the very same
						// storage, it inherits the ownership (a reshape of a
						// dying intermediate).
						heir = !fresh && owned[p] && uses[p] == 1 && p != fp.root && sameStorage(v.T, opArgs[i].T)
						fresh = false
						owned[p] = false
					}
				}
				if (fresh || heir) && !hoisted.member(in) {
					owned[idx] = true
					made.add(v.T)
				}
			}
			if hoisted.member(in) {
				hoisted.keep(ev, in, v)
				made.drop(v) // kept past this frame
			}
			for _, p := range opPos {
				done(p)
			}
			if !fp.ownArgs[idx] {
				// The frame's argument slice would otherwise keep these
				// operands reachable until the call returns, dead or not: a
				// module's every intermediate, as far as the collector knows.
				clear(opArgs)
			}
		}
		if ev.Options.Trace != nil {
			ev.Options.Trace(in, v)
		}
		if ev.Options.Finished != nil {
			ev.Options.Finished(in)
		}
		vals[idx], have[idx] = v, true
	}
	ev.rootOwned = rootOwned
	ev.rootTuple = rootTuple
	ev.rootMine = fp.root >= 0 && owned != nil && owned[fp.root] && have[fp.root]
	if mem != nil {
		// What is left dies with this call; the caller counts the result again.
		for p, v := range vals {
			if have[p] {
				mem.drop(v)
			}
		}
	}
	if fp.root < 0 || !have[fp.root] {
		return Value{}, nil
	}
	return vals[fp.root], nil
}

func (ev *Evaluator) noteLive(v Value) {
	if mem := ev.Options.Memory; mem != nil {
		mem.add(v)
	}
}

// donation is Evaluator.donation: the instruction and its operand's tensor.
type donation struct {
	in *hlo.Instruction
	t  *tensor.Tensor
}

// donatingOps write their result over a copy of operand 0, which they may
// take instead when it is donated (takeDonation).
var donatingOps = map[string]bool{"scatter": true, "dynamic-update-slice": true}

// takeDonation reports whether in, running now, may write its result into
// t, its operand 0 (Evaluator.donation).
func (ev *Evaluator) takeDonation(in *hlo.Instruction, t *tensor.Tensor) bool {
	ok := ev != nil && ev.donation.in == in && ev.donation.t == t && t != nil
	if ok {
		donationsTaken.Add(1)
	}
	return ok
}

// donationsTaken counts the donations taken (for the tests).
var donationsTaken atomic.Int64

// UnsupportedError marks an opcode, custom-call target, type or attribute value
// the evaluator does not implement, so callers can tell "not supported" from
// "failed" (the C ABI maps it to GT_ERR_UNSUPPORTED).
type UnsupportedError struct{ What string }

func (e *UnsupportedError) Error() string { return e.What + " is not supported" }

// Unsupported returns an *UnsupportedError describing what is missing.
func Unsupported(format string, args ...any) error {
	return &UnsupportedError{What: fmt.Sprintf(format, args...)}
}

// inPlaceOperand returns the frame position of an inPlace operand of the
// group at idx that the frame owns (no other value shares its storage), is
// not the computation's result, and has no use left but this group's run
// (every remaining use is among the run's consumed operands); -1 if none.
func inPlaceOperand(fp *framePlan, idx int, owned, have []bool, vals []Value, uses []int32) int32 {
	for _, p := range fp.ginplace[idx] {
		if p == fp.root || !owned[p] || !have[p] {
			continue
		}
		t := vals[p].T
		g := fp.groups[idx]
		if t == nil || t.Type != dtype.F32 || !equalDims(t.Dims, g.dims) || len(t.Data) != 4*int(tensor.NumElements(g.dims)) {
			continue
		}
		n := int32(0)
		for _, q := range fp.gconsumes[idx] {
			if q == p {
				n++
			}
		}
		if uses[p] == n {
			return p
		}
	}
	return -1
}
