package eval

// Blocked evaluation of elementwise f32 work (and of s32/u32 work: the
// integer arithmetic, bitwise ops and shifts of jax.random's threefry).
// Within one computation (the entry of an unoptimized module, or an XLA
// `fusion` computation), a DAG of elementwise instructions of one shape and
// one element type (compares read it, selects write it) whose interior values have no
// user outside it (plus broadcasts feeding it, and a fast reduce over its
// trailing dimensions consuming it) is evaluated block by block: each block
// of a few thousand elements goes through every instruction while it is in
// cache, the blocks run on all cores, and no full-size intermediate is ever
// allocated. Each instruction's block is computed by the same kernel, with
// the same subnormal flushing, as the instruction alone would compute it on
// the whole array (the kernels are elementwise and position-independent), and
// the reduce folds each row in the same left-to-right order, so the results
// are bit for bit those of the op-by-op evaluation.

import (
	bin "encoding/binary"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// fuseBlock is the block length in elements: a few blocks of every member
// stay in L1/L2.
const fuseBlock = 2048

// fusionDisabled turns the blocked evaluation off (GOLDTRACE_NO_FUSION=1), to
// compare against the op-by-op evaluation.
var fusionDisabled = os.Getenv("GOLDTRACE_NO_FUSION") == "1"

type fuseKind uint8

const (
	fuseNone fuseKind = iota
	fuseUnary
	fuseSignBit // abs, negate: bit operations, no flushing
	fuseBinary
	fuseFMA
	fuseBroadcast
	fuseSlice   // a strided window of an outside operand, read in place
	fuseCompare // a compare of the group's type: a pred block, read only by selects of the group
	fuseSelect  // select(pred, x, y) of the group's type, the pred a member's or an outside value's
	// 32-bit integer (s32, u32) members: the kernels of unaryInt and
	// binaryInt on the block, as the op-by-op evaluation runs them on the
	// whole array (integer ops know no subnormals).
	fuseIntUnary
	fuseIntBinary
	// fuseWiden is a convert of an outside bf16 or f16 array to f32 (exact,
	// subnormals kept), widened a block at a time.
	fuseWiden
	// fuseWidenMember is the convert to f32 of a narrow group's root that
	// a fused reduce folds (the group's last member): the identity on the
	// block, which holds the narrow values exactly as f32.
	fuseWidenMember
	// fusePred is pred logic on pred blocks (and, or, xor, not, and
	// compares of two preds), its operands compares or pred members of the
	// group or outside pred arrays, read only by selects and pred members of
	// the group (floor_divide's and remainder's sign fix-ups). Like a
	// compare, it is never a group's root: its block is pred bytes.
	fusePred
	// fuseYNN is an f32 op computed as YNNPACK computes it (YNNTarget,
	// ynn_elementwise.go) on one or two operands of its shape.
	fuseYNN
)

// gathers reports whether k reads its outside operand at positions of its
// own (broadcast, slice), so its operand has another shape than it.
func (k fuseKind) gathers() bool { return k == fuseBroadcast || k == fuseSlice }

// fusedGroup is one blocked DAG. members are in computation order; the last
// one is the DAG's root. When reduce is set the group's value is the reduce
// of the root, else the root's value.
type fusedGroup struct {
	elem       dtype.Type // f32, s32 or u32: every member's (a compare's operands') type
	members    []*hlo.Instruction
	kinds      []fuseKind
	pos        map[*hlo.Instruction]int
	dims       []int64
	reduce     *hlo.Instruction
	op         string  // the reduce's fast reducer
	ynn        ynnKind // the reduce sums in YNNPACK's order (reduce_ynn.go)
	ynnChunked bool    // its rows past ynnChunk are summed in chunks (ynnRowChunking)
	// narrowOut, when set, is a convert of an f32 group's root to bf16 or
	// f16 (the root's only use): the group's value is the convert's,
	// each block rounded and stored as convert stores it (encodeF32).
	narrowOut *hlo.Instruction
	// predOut, when set, is a convert of the group's root, a compare, from
	// pred to a numeric type (its only use: jax's one_hot, (x > 0) masks):
	// the group's value is the convert's, each block's pred bytes written as
	// zeros and ones of that type.
	predOut *hlo.Instruction
	// predRoot marks a group whose value is its root compare's pred array
	// itself (read by instructions outside any group of its type: a select
	// of another type, a reduce, an output), so that its operands'
	// broadcasts are never made whole.
	predRoot bool
	// Gather geometry per broadcast or slice member (nil for the others):
	// the source stride of each result dimension (0 where broadcast) and
	// the source offset of the first element.
	bstrides [][]int64
	boffs    []int64
	// flushed marks members whose op flushes its result's subnormals.
	flushed []bool
	// consumes lists the operands of members (and the reduce) whose use
	// this group's run ends, once per use.
	consumes []*hlo.Instruction
	// extID numbers each member operand from outside the group (the same
	// outside value has one number), -1 for a member's; nExt counts them.
	extID [][]int
	nExt  int
	// opPos is each member operand's member position (-1 from outside):
	// g.pos read once at planning, not per operand per block.
	opPos [][]int
	// outside lists the member operands from outside the group (member,
	// operand), in member order; slots counts every member's operands.
	outside []fuseOperand
	slots   int
	// keepSub, cbrt and glibcFix are, per member, keepsSubnormals of its
	// opcode, whether it is a cbrt, and glibcSubnormalOps of its opcode,
	// looked up once at planning.
	keepSub, cbrt, glibcFix []bool
	// estate0 is what every block knows of the outside operands before it
	// runs (nil: nothing): results that never hold a subnormal
	// (resultFlushed) are clean.
	estate0 []uint8
	// ynnOps is each fuseYNN member's parsed backend_config (per block,
	// parsing it had cost more than a block of exp).
	ynnOps []YNNOp
	// preserves marks members whose result is subnormal exactly where
	// their operand is: abs and negate (sign bit only), and tanh, which
	// returns x itself for |x| < 4e-4 and a normal number for every other
	// x. opRef is that operand's block (a member's position, or ^extID).
	preserves []bool
	opRef     []int
	// cmpFlush marks compares that see subnormals as zeros
	// (bf16CompareFlushes), as the op-by-op compare does.
	cmpFlush []bool
	// extras are members whose value is also read outside the group (after
	// the group has run: planFusion checks), written whole as the blocks
	// pass; extraPos are their member positions.
	extras   []*hlo.Instruction
	extraPos []int
	isExtra  map[*hlo.Instruction]bool
	// splat marks broadcasts of one element: their block is the same in
	// every block, so a worker fills its buffer once per run.
	splat []bool
	// slot is each member's block buffer (the root has none): a buffer is
	// reused once the last member reading its value has run, so a long
	// chain keeps a few blocks in cache rather than one per member; a splat
	// keeps its own. nSlots counts them.
	slot   []int
	nSlots int
	// inPlace lists the outside operands whose storage the group's value
	// may take over when the group's run is their last use
	// (planInPlace).
	inPlace []*hlo.Instruction
	// scratch holds the per-run operand slices of one run at a time
	// (fuseScratch): a loop body's group runs every step without making
	// them again.
	scratch atomic.Pointer[fuseScratch]
}

// fuseOperand is operand k of member j.
type fuseOperand struct{ j, k int32 }

// fuseScratch is a group run's operand tables (fuseInputs' f, pred, raw and
// predArgs, and the operand slots f points into), kept by the group between
// runs and cleared after each so that they hold no storage alive.
type fuseScratch struct {
	f        [][][]float32
	pred     [][]byte
	raw      [][]byte
	predArgs [][][]byte
	flat     [][]float32
	out      [][]float32 // groups with extras
	outN     [][]byte
	w        *fuseWorker // a small group's worker (worker)
	mstate   []uint8     // cleanBroadcasts' states
}

// takeScratch returns the group's tables, or new ones while another run
// holds them.
func (g *fusedGroup) takeScratch() *fuseScratch {
	if s := g.scratch.Swap(nil); s != nil && len(s.flat) == g.slots {
		return s
	}
	return g.newScratch()
}

// newScratch makes tables for g's runs: f[j] is member j's operand slots
// (in flat).
func (g *fusedGroup) newScratch() *fuseScratch {
	n := len(g.members)
	s := &fuseScratch{f: make([][][]float32, n), pred: make([][]byte, n), raw: make([][]byte, n),
		flat: make([][]float32, g.slots)}
	flat := s.flat
	for j, m := range g.members {
		s.f[j], flat = flat[:len(m.Operands):len(m.Operands)], flat[len(m.Operands):]
	}
	if len(g.extras) > 0 {
		s.out, s.outN = make([][]float32, n), make([][]byte, n)
	}
	return s
}

// putScratch clears s and gives it back to the group.
func (g *fusedGroup) putScratch(s *fuseScratch) {
	s.clear()
	g.scratch.Store(s)
}

// clear drops the storage s's tables hold.
func (s *fuseScratch) clear() {
	clear(s.flat)
	clear(s.pred)
	clear(s.raw)
	clear(s.out)
	clear(s.outN)
	for _, a := range s.predArgs {
		clear(a)
	}
}

// fuseInputs are a group's outside operand values for one run: per member,
// per operand, the f32 data (nil for members' blocks), and per member the
// pred data of a select whose predicate is an outside value.
type fuseInputs struct {
	f    [][][]float32
	pred [][]byte
	// predArgs is, per fusePred member, per operand, an outside pred
	// array's bytes (nil for members' blocks).
	predArgs [][][]byte
	out      [][]float32 // per member, an extra's whole output (else nil)
	// outN is out for a narrow group: the extra's bytes, stored from the
	// member's block exactly (storeNarrow).
	outN [][]byte
	// raw is, per fuseWiden member, its narrow operand's bytes.
	raw [][]byte
	// nraw is, per outside operand (extID) of a narrow group read in
	// place (not gathered), its bytes, widened a block at a time.
	nraw [][]byte
	// mstate, when set, is what every block knows of each member's block
	// before it runs: a broadcast of a source found free of subnormals
	// (one scan of the source per run, where each block's copy of it had
	// been scanned again) is clean in every block.
	mstate []uint8
}

// Per-block knowledge of whether a member's (or outside operand's) block
// holds a subnormal, so that a block several ops read with subnormals
// flushed is scanned once.
const (
	blockUnknown uint8 = iota
	blockClean         // no subnormal
	blockDirty         // a subnormal somewhere
)

// out is the instruction whose value the group produces.
func (g *fusedGroup) out() *hlo.Instruction {
	if g.reduce != nil {
		return g.reduce
	}
	if g.narrowOut != nil {
		return g.narrowOut
	}
	if g.predOut != nil {
		return g.predOut
	}
	return g.members[len(g.members)-1]
}

// fusionPlan is the grouping of one computation.
type fusionPlan struct {
	interior map[*hlo.Instruction]bool        // evaluated inside a group, never stored
	groups   map[*hlo.Instruction]*fusedGroup // by the instruction that produces the group's value
}

type fusionCache struct {
	mu    sync.Mutex
	plans map[*hlo.Computation]*fusionPlan
}

// fusionPlanFor returns c's plan (cached), or nil when c has no group.
func (ev *Evaluator) fusionPlanFor(c *hlo.Computation) *fusionPlan {
	if fusionDisabled || ev.Options.Trace != nil || len(c.Instructions) < 2 {
		return nil
	}
	ev.fusion.mu.Lock()
	defer ev.fusion.mu.Unlock()
	if p, ok := ev.fusion.plans[c]; ok {
		return p
	}
	if ev.fusion.plans == nil {
		ev.fusion.plans = map[*hlo.Computation]*fusionPlan{}
	}
	p := planFusion(c)
	ev.fusion.plans[c] = p
	if fusionLog {
		logFusionPlan(c, p)
	}
	return p
}

// fusionLog (GOLDTRACE_FUSION_LOG=1) prints every computation's plan to
// stderr when it is made: each group's members and every array-valued
// instruction left to run alone, which is where full-size intermediates are
// made (a development aid for finding what fusion misses).
var fusionLog = os.Getenv("GOLDTRACE_FUSION_LOG") == "1"

func logFusionPlan(c *hlo.Computation, p *fusionPlan) {
	var b strings.Builder
	fmt.Fprintf(&b, "fusion plan of %s:\n", c.Name)
	fused := map[*hlo.Instruction]bool{}
	if p != nil {
		for _, g := range p.groups {
			for _, m := range g.all() {
				fused[m] = true
			}
		}
	}
	for _, in := range c.Instructions {
		g := p.group(in)
		switch {
		case g != nil && g.out() == in:
			names := make([]string, 0, len(g.members))
			for _, m := range g.all() {
				names = append(names, m.Opcode+" "+m.Name)
			}
			fmt.Fprintf(&b, "  group %s %v -> %s: %s\n", g.elem, g.dims, in.Name, strings.Join(names, ", "))
		case !fused[in] && in.Shape.IsArray() && tensor.NumElements(in.Shape.Dims) >= fuseBlock &&
			in.Opcode != "parameter" && in.Opcode != "constant":
			fmt.Fprintf(&b, "  alone %s %s %s\n", in.Opcode, in.Name, in.Shape)
		}
	}
	fmt.Fprint(os.Stderr, b.String())
}

func isF32Array(s hlo.Shape) bool { return s.IsArray() && s.Elem == dtype.F32 }

// isInt32Elem reports whether t is a 32-bit integer type the blocked
// evaluation runs (its storage is the f32 blocks' four bytes an element).
func isInt32Elem(t dtype.Type) bool { return t == dtype.S32 || t == dtype.U32 }

// isNarrowElem reports whether t is a float type blocks hold widened to f32
// (bf16, f16): a member's block holds its values exactly, each unary or
// binary op's result rounded to t as the op-by-op evaluation rounds it.
func isNarrowElem(t dtype.Type) bool { return t == dtype.BF16 || t == dtype.F16 }

// isFusedArray reports whether s is an array of a type blocks hold.
func isFusedArray(s hlo.Shape) bool {
	return s.IsArray() && (s.Elem == dtype.F32 || s.Elem == dtype.F64 || isInt32Elem(s.Elem) || isNarrowElem(s.Elem))
}

// memberElem is the type of the group a member belongs to: its own, or a
// compare's operands'.
func memberElem(in *hlo.Instruction) dtype.Type {
	if in.Opcode == "compare" && len(in.Operands) == 2 {
		return in.Operands[0].Shape.Elem
	}
	return in.Shape.Elem
}

// joinsElem reports whether member in may belong to a group of type elem:
// a pred op (its bytes are the same in groups of every type) joins any.
func joinsElem(in *hlo.Instruction, elem dtype.Type) bool {
	return memberElem(in) == elem || fusiblePred(in) == fusePred
}

// fusiblePred classifies pred logic: and, or, xor and not of pred arrays
// of its shape (as binaryInt and unaryInt compute them on uint8 at width 1,
// the result masked to its low bit), and compares of two such arrays with
// the default UNSIGNED comparison (compare() compares the stored bytes).
func fusiblePred(in *hlo.Instruction) fuseKind {
	if !in.Shape.IsArray() || in.Shape.Elem != dtype.Pred || len(in.Shape.DynamicDims) > 0 {
		return fuseNone
	}
	for _, op := range in.Operands {
		if !op.Shape.IsArray() || op.Shape.Elem != dtype.Pred || len(op.Shape.DynamicDims) > 0 || !equalDims(op.Shape.Dims, in.Shape.Dims) {
			return fuseNone
		}
	}
	switch in.Opcode {
	case "and", "or", "xor":
		if len(in.Operands) == 2 && registeredAs(in.Opcode, evalBinary) {
			return fusePred
		}
	case "not":
		if len(in.Operands) == 1 && registeredAs(in.Opcode, evalUnary) {
			return fusePred
		}
	case "compare":
		ct, err := in.EffectiveComparisonType()
		if len(in.Operands) != 2 || err != nil || (ct != "" && ct != "UNSIGNED") || !registeredAs("compare", evalCompare) {
			return fuseNone
		}
		switch in.ComparisonDirection {
		case "EQ", "NE", "LT", "LE", "GT", "GE":
			return fusePred
		}
	}
	return fuseNone
}

// fusibleKind classifies an instruction for blocked evaluation.
func fusibleKind(in *hlo.Instruction) fuseKind {
	if k := fusiblePred(in); k != fuseNone {
		return k
	}
	switch in.Opcode {
	case "compare":
		return fusibleCompare(in)
	case "select":
		return fusibleSelect(in)
	}
	et := in.Shape.Elem
	if !isFusedArray(in.Shape) || len(in.Shape.DynamicDims) > 0 {
		return fuseNone
	}
	if in.Opcode == "convert" && et == dtype.F32 && len(in.Operands) == 1 && registeredAs("convert", evalConvert) {
		if op := in.Operands[0]; op.Shape.IsArray() && isNarrowElem(op.Shape.Elem) && equalDims(op.Shape.Dims, in.Shape.Dims) {
			return fuseWiden
		}
		return fuseNone
	}
	for _, op := range in.Operands {
		if !op.Shape.IsArray() || op.Shape.Elem != et {
			return fuseNone
		}
		if in.Opcode != "broadcast" && in.Opcode != "slice" && !equalDims(op.Shape.Dims, in.Shape.Dims) {
			return fuseNone
		}
	}
	if et == dtype.F32 && in.Opcode == "custom-call" && in.CustomCallTarget == YNNTarget && len(in.Operands) > 0 && len(in.Operands) <= 2 {
		return fuseYNN
	}
	switch len(in.Operands) {
	case 1:
		switch in.Opcode {
		case "slice":
			src := in.Operands[0].Shape.Dims
			if len(in.Slice) != len(src) || len(src) != len(in.Shape.Dims) {
				return fuseNone
			}
			for d, r := range in.Slice {
				st := max(r.Stride, 1)
				if r.Start < 0 || r.Limit > src[d] || r.Start > r.Limit || r.Stride < 0 ||
					(r.Limit-r.Start+st-1)/st != in.Shape.Dims[d] {
					return fuseNone
				}
			}
			return fuseSlice
		case "abs", "negate":
			if isInt32Elem(et) {
				break // integer arithmetic, below
			}
			return fuseSignBit
		case "broadcast":
			if len(in.Dimensions) != len(in.Operands[0].Shape.Dims) {
				return fuseNone
			}
			for i, d := range in.Dimensions {
				if d < 0 || int(d) >= len(in.Shape.Dims) || in.Shape.Dims[d] != in.Operands[0].Shape.Dims[i] {
					return fuseNone
				}
			}
			return fuseBroadcast
		case "is-finite", "real", "imag":
			return fuseNone
		}
		if isInt32Elem(et) {
			if fusibleIntUnary[in.Opcode] && registeredAs(in.Opcode, evalUnary) {
				return fuseIntUnary
			}
			return fuseNone
		}
		if isNarrowElem(et) && narrowRoundsInside(in.Opcode, et) {
			return fuseNone // unaryNarrowLogistic rounds inside the op
		}
		if et == dtype.F64 {
			if fusibleUnary[in.Opcode] && registeredAs(in.Opcode, evalUnary) && unaryFloat[float64](in.Opcode, nil, nil) {
				return fuseUnary
			}
			return fuseNone
		}
		if fusibleUnary[in.Opcode] && registeredAs(in.Opcode, evalUnary) && unaryFloat[float32](in.Opcode, nil, nil) {
			return fuseUnary
		}
	case 2:
		if isInt32Elem(et) {
			if fusibleIntBinary[in.Opcode] && registeredAs(in.Opcode, evalBinary) {
				return fuseIntBinary
			}
			return fuseNone
		}
		if bf16NativeMinMax(in.Opcode, et) {
			return fuseNone // computed without flushing (binary)
		}
		if et == dtype.F64 {
			if fusibleBinary[in.Opcode] && registeredAs(in.Opcode, evalBinary) && binaryFloat[float64](in.Opcode, nil, nil, nil) {
				return fuseBinary
			}
			return fuseNone
		}
		if fusibleBinary[in.Opcode] && registeredAs(in.Opcode, evalBinary) && binaryFloat[float32](in.Opcode, nil, nil, nil) {
			return fuseBinary
		}
	case 3:
		if (et == dtype.F32 || et == dtype.F16 || et == dtype.F64) && in.Opcode == "custom-call" && in.CustomCallTarget == FMATarget {
			return fuseFMA
		}
	}
	return fuseNone
}

// fusibleCompare: a compare of two f32 arrays of its shape with the FLOAT
// comparison (the default for floats), or of two s32 arrays SIGNED or two
// u32 arrays UNSIGNED (their defaults), as compare() runs them.
func fusibleCompare(in *hlo.Instruction) fuseKind {
	if !in.Shape.IsArray() || in.Shape.Elem != dtype.Pred || len(in.Shape.DynamicDims) > 0 || len(in.Operands) != 2 {
		return fuseNone
	}
	et := in.Operands[0].Shape.Elem
	for _, op := range in.Operands {
		if !isFusedArray(op.Shape) || op.Shape.Elem != et || !equalDims(op.Shape.Dims, in.Shape.Dims) {
			return fuseNone
		}
	}
	ct, err := in.EffectiveComparisonType()
	if err != nil {
		return fuseNone
	}
	if ct == "" {
		ct = defaultComparison(et)
	}
	if want := map[dtype.Type]string{dtype.F32: "FLOAT", dtype.F64: "FLOAT", dtype.S32: "SIGNED", dtype.U32: "UNSIGNED"}[et]; ct != want {
		return fuseNone
	}
	switch in.ComparisonDirection {
	case "EQ", "NE", "LT", "LE", "GT", "GE":
		return fuseCompare
	}
	return fuseNone
}

// fusibleSelect: an f32, s32 or u32 select whose predicate is a pred
// array of its shape.
func fusibleSelect(in *hlo.Instruction) fuseKind {
	if !isFusedArray(in.Shape) || len(in.Shape.DynamicDims) > 0 || len(in.Operands) != 3 {
		return fuseNone
	}
	p := in.Operands[0]
	if !p.Shape.IsArray() || p.Shape.Elem != dtype.Pred || !equalDims(p.Shape.Dims, in.Shape.Dims) {
		return fuseNone
	}
	for _, op := range in.Operands[1:] {
		if !op.Shape.IsArray() || op.Shape.Elem != in.Shape.Elem || !equalDims(op.Shape.Dims, in.Shape.Dims) {
			return fuseNone
		}
	}
	return fuseSelect
}

// fusibleUnary and fusibleBinary are the f32 ops whose op-by-op evaluation
// is exactly what block() does: flush the operands' subnormals (unless
// keepsSubnormals), run the kernel, flush the result's. Ops with extra
// steps (cbrt's subnormal constant, the glibc subnormal paths of atan2,
// power and remainder: elementwise.go) stay op by op; the random-DAG test
// compares the two evaluations, so a new step in elementwise.go for a listed
// op shows there.
var (
	fusibleUnary = map[string]bool{"exponential": true, "exponential-minus-one": true, "log": true,
		"log-plus-one": true, "logistic": true, "tanh": true, "sqrt": true, "rsqrt": true, "sine": true,
		"cosine": true, "tan": true, "floor": true, "ceil": true, "round-nearest-afz": true,
		"round-nearest-even": true, "sign": true, "erf": true}
	fusibleBinary = map[string]bool{"add": true, "subtract": true, "multiply": true, "divide": true,
		"maximum": true, "minimum": true}
	// The s32/u32 ops: evalUnary and evalBinary run unaryInt and binaryInt
	// of int32 or uint32 at width 32 over the whole array (maskStorage does
	// nothing at 32 bits), so a block runs the same kernel on its slice.
	fusibleIntUnary = map[string]bool{"negate": true, "not": true, "abs": true, "sign": true, "popcnt": true,
		"count-leading-zeros": true}
	fusibleIntBinary = map[string]bool{"add": true, "subtract": true, "multiply": true, "divide": true,
		"remainder": true, "maximum": true, "minimum": true, "and": true, "or": true, "xor": true,
		"shift-left": true, "shift-right-logical": true, "shift-right-arithmetic": true}
)

// registeredAs reports whether opcode is evaluated by f (and so computes
// what the blocked kernels compute).
func registeredAs(opcode string, f OpFunc) bool {
	g, ok := ops[opcode]
	return ok && reflect.ValueOf(g).Pointer() == reflect.ValueOf(f).Pointer()
}

func errMissing(op *hlo.Instruction) error {
	return fmt.Errorf("operand %%%s has no f32 array value", op.Name)
}

// runGroup evaluates g, turning a panic into an error as callOp does.
// The extras' values come back in the order of g.extras.
func runGroup(ev *Evaluator, g *fusedGroup, vals func(*hlo.Instruction) (Value, bool), extrasBuf []Value, fv *frameValues, idx int, into *groupInto) (v Value, extras []Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, extras, err = Value{}, nil, fmt.Errorf("internal error: %v", r)
		}
	}()
	return g.eval(ev, vals, extrasBuf, fv, idx, into)
}

// groupInto is storage a group's run writes its value and its extras (in
// the order of g.extras) into instead of allocating them: a loop
// program's own buffers (loop_program.go), of the types and dims the run
// would allocate (nil: allocated as without groupInto). Every element is
// written. sc, when set, is the group's tables (newScratch) the caller
// keeps between runs.
type groupInto struct {
	out    *tensor.Tensor
	extras []*tensor.Tensor
	sc     *fuseScratch
}

// newOut is the storage of a group's value: into's, else new.
func (into *groupInto) newOut(ev *Evaluator, t dtype.Type, dims []int64) *tensor.Tensor {
	if into != nil && into.out != nil {
		return into.out
	}
	return ev.newTensor(t, dims, false) // every block is written
}

// mergeGroups merges a group A into a group B that reads A's root or one
// of its extras when B runs later and nothing outside the two reads A's
// values before B runs: the merged group runs at B's root, A's values it
// alone reads are never written whole, and the rest become its extras.
// (Threefry's rounds: each step's two halves become one group reading the
// two carried values and writing the two new ones.) Groups are still in
// planning form: members[0] is the root, members run backwards.
func mergeGroups(groups []*fusedGroup, users map[*hlo.Instruction][]*hlo.Instruction,
	groupOf map[*hlo.Instruction]*fusedGroup, shared map[*hlo.Instruction]bool, order map[*hlo.Instruction]int) []*fusedGroup {
	dead := map[*fusedGroup]bool{}
	// exported reports whether x (a member of g) is read outside g.
	exported := func(g *fusedGroup, x *hlo.Instruction) bool {
		for _, u := range users[x] {
			if groupOf[u] != g || shared[u] {
				return true
			}
		}
		return false
	}
	canMerge := func(a, b *fusedGroup) bool {
		at := order[b.members[0]]
		if order[a.members[0]] >= at || a.kinds[0].gathers() {
			// (a lone broadcast or slice is no group of its own: it runs by itself)
			return false
		}
		for _, x := range a.members {
			if shared[x] || groupOf[x] != a {
				continue
			}
			for _, u := range users[x] {
				ug := groupOf[u]
				switch {
				case ug == a:
				case fusibleKind(u).gathers() || shared[u]:
					return false // would read a member in place
				case ug == b:
				case ug != nil:
					if order[ug.members[0]] <= at {
						return false
					}
				case order[u] <= at:
					return false
				}
			}
		}
		return true
	}
	for changed := true; changed; {
		changed = false
		for _, b := range groups {
			if dead[b] || b.reduce != nil || b.predOut != nil || b.predRoot {
				continue
			}
			var a *fusedGroup
			for _, m := range b.members {
				for _, op := range m.Operands {
					og := groupOf[op]
					if og != nil && og != b && !dead[og] && og.reduce == nil && og.predOut == nil && !og.predRoot && og.elem == b.elem &&
						equalDims(og.dims, b.dims) && !shared[op] && canMerge(og, b) {
						a = og
						break
					}
				}
				if a != nil {
					break
				}
			}
			if a == nil {
				continue
			}
			type mk struct {
				m *hlo.Instruction
				k fuseKind
			}
			var all []mk
			seen := map[*hlo.Instruction]bool{}
			for _, g := range []*fusedGroup{b, a} {
				for j, m := range g.members {
					if !seen[m] {
						seen[m] = true
						all = append(all, mk{m, g.kinds[j]})
					}
				}
			}
			root := b.members[0]
			slices.SortStableFunc(all, func(x, y mk) int {
				if x.m == root {
					return -1
				}
				if y.m == root {
					return 1
				}
				return order[y.m] - order[x.m] // backwards, as planned
			})
			b.members, b.kinds = b.members[:0], b.kinds[:0]
			for _, e := range all {
				b.members = append(b.members, e.m)
				b.kinds = append(b.kinds, e.k)
				if !shared[e.m] {
					groupOf[e.m] = b
				}
			}
			dead[a] = true
			b.isExtra = map[*hlo.Instruction]bool{}
			for _, m := range b.members[1:] {
				if !shared[m] && !b.kindOf(m).gathers() && exported(b, m) {
					b.isExtra[m] = true
				}
			}
			changed = true
		}
	}
	var live []*fusedGroup
	for _, g := range groups {
		if !dead[g] {
			live = append(live, g)
		}
	}
	return live
}

// assignSlots gives each member but the root a block buffer: a member's
// buffer is taken before the buffers of the operands it reads last are
// given back, so no member writes a buffer it reads.
func (g *fusedGroup) assignSlots() {
	n := len(g.members)
	last := make([]int, n)
	for j := range last {
		last[j] = j
	}
	for j, m := range g.members {
		for _, op := range m.Operands {
			if q, ok := g.pos[op]; ok && !g.kinds[j].gathers() {
				last[q] = max(last[q], j)
			}
		}
	}
	g.slot = make([]int, n)
	g.nSlots = 0
	var free []int
	for j := range n {
		if j == n-1 {
			g.slot[j] = -1
		} else if len(free) > 0 && !g.splat[j] {
			g.slot[j], free = free[len(free)-1], free[:len(free)-1]
		} else {
			g.slot[j] = g.nSlots
			g.nSlots++
		}
		for q := range j + 1 {
			if last[q] == j && q < n-1 && !g.splat[q] {
				free = append(free, g.slot[q])
			}
		}
	}
}

// kindOf is member m's kind.
func (g *fusedGroup) kindOf(m *hlo.Instruction) fuseKind {
	for j, x := range g.members {
		if x == m {
			return g.kinds[j]
		}
	}
	return fuseNone
}

// fusionNoExtras turns multi-output groups off (GOLDTRACE_NO_FUSION_EXTRAS=1).
var fusionNoExtras = os.Getenv("GOLDTRACE_NO_FUSION_EXTRAS") == "1"

// extraGroup returns the group that in may join as an extra output, or nil:
// among its users' groups (of its shape and type, without a reduce) the one
// that runs first, provided every other user of in is computed after that
// group runs (a user in a group when that group runs, at its root; any
// other user at its own position), so in's value exists before any reader
// outside the group needs it. A user that gathers (broadcast, slice) is
// read wherever its groups run, so in then has no such group.
func extraGroup(in *hlo.Instruction, users []*hlo.Instruction, groupOf map[*hlo.Instruction]*fusedGroup,
	order map[*hlo.Instruction]int) *fusedGroup {
	// A group runs at its root (members[0] while planning), a reduce's
	// at the reduce. (f32 reduce groups write extras as any group does;
	// softmax's one_hot select, summed and added, is one.)
	runsAt := func(g *fusedGroup) int {
		if g.reduce != nil {
			return order[g.reduce]
		}
		return order[g.members[0]]
	}
	var best *fusedGroup
	for _, u := range users {
		if fusibleKind(u).gathers() {
			return nil
		}
		ug := groupOf[u]
		if ug == nil || ug.reduce != nil && ug.elem != dtype.F32 || !equalDims(ug.dims, in.Shape.Dims) || ug.elem != memberElem(in) {
			continue
		}
		if best == nil || runsAt(ug) < runsAt(best) {
			best = ug
		}
	}
	if best == nil {
		return nil
	}
	at := runsAt(best)
	for _, u := range users {
		if ug := groupOf[u]; ug == best {
			continue
		} else if ug != nil {
			if order[ug.members[0]] <= at {
				return nil
			}
		} else if order[u] <= at {
			return nil
		}
	}
	return best
}

// reduceWithExtra returns the fusible f32 reduce among in's users when
// every other user runs after it (a user in a group when that group runs,
// at its root; any other user at its own position) and none gathers: in
// may then be the root of the reduce's group, written whole as an extra
// for the others. Else nil.
func reduceWithExtra(in *hlo.Instruction, users []*hlo.Instruction, groupOf map[*hlo.Instruction]*fusedGroup,
	order map[*hlo.Instruction]int) *hlo.Instruction {
	if len(users) < 2 || memberElem(in) != dtype.F32 {
		return nil
	}
	var r *hlo.Instruction
	for _, u := range users {
		if u.Opcode == "reduce" && fusibleReduce(u, in) {
			if r != nil && r != u {
				return nil
			}
			r = u
		}
	}
	if r == nil {
		return nil
	}
	at := order[r]
	for _, u := range users {
		switch ug := groupOf[u]; {
		case u == r:
		case fusibleKind(u).gathers():
			return nil
		case ug != nil:
			if order[ug.members[0]] <= at {
				return nil
			}
		case order[u] <= at:
			return nil
		}
	}
	return r
}

// planFusion groups c's fusible instructions: walking backwards, an
// instruction joins the group of its users when they all belong to one
// group of its shape (a broadcast joins whatever shape its users have);
// otherwise it starts a group as its root.
func planFusion(c *hlo.Computation) *fusionPlan {
	users := map[*hlo.Instruction][]*hlo.Instruction{}
	for _, in := range c.Instructions {
		for _, op := range in.Operands {
			users[op] = append(users[op], in)
		}
	}
	groupOf := map[*hlo.Instruction]*fusedGroup{}
	shared := map[*hlo.Instruction]bool{} // gathers that joined several groups
	order := map[*hlo.Instruction]int{}
	for i, in := range c.Instructions {
		order[in] = i
	}
	var groups []*fusedGroup
	for i := len(c.Instructions) - 1; i >= 0; i-- {
		in := c.Instructions[i]
		k := fusibleKind(in)
		if k == fuseNone {
			continue
		}
		var g *fusedGroup
		if k.gathers() && in != c.Root && len(users[in]) > 1 {
			// A broadcast or slice whose users all sit in groups of its
			// shape joins each of them: each reads the outside operand in
			// place rather than one copy being made for all.
			var gs []*fusedGroup
			for _, u := range users[in] {
				ug := groupOf[u]
				if ug == nil || fusibleKind(u).gathers() || !equalDims(ug.dims, in.Shape.Dims) || ug.elem != memberElem(in) {
					gs = nil
					break
				}
				if !slices.Contains(gs, ug) {
					gs = append(gs, ug)
				}
			}
			if len(gs) > 1 {
				for _, ug := range gs {
					ug.members = append(ug.members, in)
					ug.kinds = append(ug.kinds, k)
				}
				shared[in] = true
				continue
			}
		}
		if in != c.Root && len(users[in]) > 0 {
			g = groupOf[users[in][0]]
			for _, u := range users[in] {
				if groupOf[u] != g || fusibleKind(u).gathers() {
					g = nil
					break
				}
			}
			if g != nil && g.reduce == users[in][0] {
				g = nil // the reduce is not a member
			}
			if g != nil && len(users[in]) == 1 && widensForReduce(g, in) {
				// A narrow value whose only use is the widening a reduce
				// folds: that group becomes in's type, the widening the
				// identity on its blocks.
				g.elem = memberElem(in)
				g.kinds[0] = fuseWidenMember
			}
			if g != nil && (!equalDims(g.dims, in.Shape.Dims) || !joinsElem(in, g.elem)) {
				g = nil
			}
		}
		extra := false
		if g == nil && k != fuseCompare && k != fusePred && !k.gathers() && in != c.Root && !fusionNoExtras {
			// Read by several groups, or by a group and by other
			// instructions: computed in one of those groups and also
			// written whole, for the others to read.
			if g = extraGroup(in, users[in], groupOf, order); g != nil {
				extra = true
			}
		}
		// A value a reduce folds and other instructions read after the
		// reduce (softmax's exp, summed and then divided): the reduce's
		// group, the value written whole as its extra.
		var extraReduce *hlo.Instruction
		if g == nil && k != fuseCompare && k != fusePred && !k.gathers() && in != c.Root && !fusionNoExtras {
			extraReduce = reduceWithExtra(in, users[in], groupOf, order)
		}
		var predOut *hlo.Instruction
		predRoot := false
		switch {
		case g == nil && k == fuseCompare && memberElem(in) == dtype.F64:
			continue // (f64 groups run by eval64, which makes no pred values)
		case g == nil && k == fuseCompare && in != c.Root && len(users[in]) == 1 && groupOf[users[in][0]] == nil &&
			predOneValue(users[in][0], in) != nil:
			predOut = users[in][0] // the group ends in the convert of its compare
		case g == nil && k == fuseCompare:
			predRoot = true // the group's value is the compare's pred array
		case g == nil && (k == fuseCompare || k == fusePred):
			continue // pred logic is never a group's own
		}
		if g == nil && (predOut != nil || predRoot) {
			g = &fusedGroup{elem: memberElem(in), dims: in.Shape.Dims, pos: map[*hlo.Instruction]int{}, predOut: predOut,
				predRoot: predRoot}
			groups = append(groups, g)
		}
		if g == nil {
			g = &fusedGroup{elem: in.Shape.Elem, dims: in.Shape.Dims, pos: map[*hlo.Instruction]int{}}
			groups = append(groups, g)
			if in != c.Root && (len(users[in]) == 1 || extraReduce != nil) && !k.gathers() {
				r := users[in][0]
				if extraReduce != nil {
					r = extraReduce
				}
				if fusibleReduce(r, in) {
					kind := ynnSumOrder(r, func(x *hlo.Instruction) int {
						n := 0
						for _, op := range c.Instructions {
							for _, o := range op.Operands {
								if o == x {
									n++
								}
							}
						}
						return n
					})
					reduced := make([]bool, len(in.Shape.Dims))
					for _, d := range r.Dimensions {
						reduced[d] = true
					}
					chunked, rows := ynnRowChunking(in.Shape.Dims, reduced, ynnChunk, ynnFusedProducer(r, computationUses(c)))
					// (f64 YNNPACK rows run unfused, reduce_ynn.go, as do
					// rows YNNPACK splits otherwise, reduce_ynn_general.go)
					if kind != ynnF64 && (kind == ynnNone || rows) {
						g.ynnChunked = chunked
						g.reduce, g.op, g.ynn = r, fastReducer(r.ToApply()), kind
						extra = extraReduce != nil
					}
				}
			}
		}
		g.members = append(g.members, in)
		g.kinds = append(g.kinds, k)
		groupOf[in] = g
		if extra {
			if g.isExtra == nil {
				g.isExtra = map[*hlo.Instruction]bool{}
			}
			g.isExtra[in] = true
		}
	}
	if !fusionNoExtras {
		groups = mergeGroups(groups, users, groupOf, shared, order)
	}
	p := &fusionPlan{interior: map[*hlo.Instruction]bool{}, groups: map[*hlo.Instruction]*fusedGroup{}}
	for _, g := range groups {
		n := len(g.members)
		if n < 2 && g.reduce == nil && g.predOut == nil {
			continue
		}
		if n == 1 && g.kinds[0].gathers() {
			continue
		}
		// Members were collected backwards: put them in computation order.
		for a, b := 0, n-1; a < b; a, b = a+1, b-1 {
			g.members[a], g.members[b] = g.members[b], g.members[a]
			g.kinds[a], g.kinds[b] = g.kinds[b], g.kinds[a]
		}
		g.bstrides = make([][]int64, n)
		g.boffs = make([]int64, n)
		g.flushed = make([]bool, n)
		g.cmpFlush = make([]bool, n)
		g.splat = make([]bool, n)
		g.extras, g.extraPos = nil, nil
		for j, m := range g.members {
			g.pos[m] = j
			if g.isExtra[m] {
				g.extras = append(g.extras, m)
				g.extraPos = append(g.extraPos, j)
			}
			g.cmpFlush[j] = g.kinds[j] == fuseCompare && bf16CompareFlushes(m)
			g.flushed[j] = g.kinds[j] == fuseBinary && !keepsSubnormalResult(m.Opcode) ||
				g.kinds[j] == fuseUnary && !keepsSubnormals(m.Opcode) ||
				g.kinds[j] == fuseYNN // (every YNNPACK result is flushed: ynnOut)
			if g.elem == dtype.F64 {
				// f64: XLA's tanh flushes; compares always see subnormals as 0.
				g.flushed[j] = g.kinds[j] == fuseBinary || g.kinds[j] == fuseUnary && !keepsSubnormals64(m.Opcode)
				g.cmpFlush[j] = g.kinds[j] == fuseCompare
			}
			src := tensor.Strides(m.Operands[0].Shape.Dims)
			switch g.kinds[j] {
			case fuseBroadcast:
				g.splat[j] = j < n-1 && tensor.NumElements(m.Operands[0].Shape.Dims) == 1
				st := make([]int64, len(g.dims))
				for i, d := range m.Dimensions {
					st[d] = src[i]
				}
				g.bstrides[j] = st
			case fuseSlice:
				st := make([]int64, len(g.dims))
				for d, r := range m.Slice {
					st[d] = src[d] * max(r.Stride, 1)
					g.boffs[j] += src[d] * r.Start
				}
				g.bstrides[j] = st
			}
		}
		g.extID = make([][]int, n)
		g.opPos = make([][]int, n)
		g.preserves = make([]bool, n)
		g.opRef = make([]int, n)
		ids := map[*hlo.Instruction]int{}
		for j, m := range g.members {
			g.extID[j] = make([]int, len(m.Operands))
			g.opPos[j] = make([]int, len(m.Operands))
			for k, op := range m.Operands {
				g.opPos[j][k] = -1
				if q, in := g.pos[op]; in {
					g.extID[j][k] = -1
					g.opPos[j][k] = q
					continue
				}
				id, ok := ids[op]
				if !ok {
					id = len(ids)
					ids[op] = id
				}
				g.extID[j][k] = id
			}
			g.preserves[j] = g.kinds[j] == fuseSignBit || g.kinds[j] == fuseUnary && m.Opcode == "tanh" && g.elem != dtype.F64
			if g.preserves[j] {
				if id := g.extID[j][0]; id >= 0 {
					g.opRef[j] = ^id
				} else {
					g.opRef[j] = g.pos[m.Operands[0]]
				}
			}
		}
		g.nExt = len(ids)
		g.estate0 = nil
		for op, id := range ids {
			if g.elem == dtype.F32 && resultFlushed(op) {
				if g.estate0 == nil {
					g.estate0 = make([]uint8, len(ids))
				}
				g.estate0[id] = blockClean
			}
		}
		g.outside, g.slots = nil, 0
		g.keepSub, g.cbrt, g.glibcFix = make([]bool, n), make([]bool, n), make([]bool, n)
		for j, m := range g.members {
			for k := range m.Operands {
				if g.extID[j][k] >= 0 {
					g.outside = append(g.outside, fuseOperand{int32(j), int32(k)})
				}
			}
			g.slots += len(m.Operands)
			g.keepSub[j], g.cbrt[j], g.glibcFix[j] = keepsSubnormals(m.Opcode), m.Opcode == "cbrt", glibcSubnormalOps[m.Opcode]
		}
		g.ynnOps = make([]YNNOp, n)
		for j, m := range g.members {
			if g.kinds[j] == fuseYNN {
				o, err := ParseYNNOp(m.BackendConfig)
				if err != nil {
					o.Op = "" // reported when the block runs
				}
				g.ynnOps[j] = o
			}
		}
		g.assignSlots()
		g.narrowOut = narrowingUse(g, c, users)
		for _, m := range g.members {
			p.interior[m] = true
		}
		delete(p.interior, g.out())
		p.groups[g.out()] = g
	}
	if len(p.groups) == 0 {
		return nil
	}
	// The operands each group's run consumes (for Call's use counts): a
	// shared gather's operand counts once, with the last of its groups to run.
	last := map[*hlo.Instruction]*fusedGroup{}
	for _, g := range p.groups {
		for _, m := range g.members {
			if shared[m] && (last[m] == nil || order[last[m].out()] < order[g.out()]) {
				last[m] = g
			}
		}
	}
	for _, g := range p.groups {
		for _, m := range g.all() {
			if !shared[m] || last[m] == g {
				g.consumes = append(g.consumes, m.Operands...)
			}
		}
		if g.narrowOut != nil {
			g.consumes = append(g.consumes, g.narrowOut.Operands...)
		}
		if g.predOut != nil {
			g.consumes = append(g.consumes, g.predOut.Operands...)
		}
		g.planInPlace()
	}
	return p
}

// inPlaceDisabled turns off groups writing into a dying operand's storage
// (GOLDTRACE_NO_INPLACE=1), to compare.
var inPlaceDisabled = os.Getenv("GOLDTRACE_NO_INPLACE") == "1"

// inPlaceMinBytes is the smallest operand whose storage a group takes over
// (planInPlace): below it a new array costs little.
const inPlaceMinBytes = 1 << 16

// planInPlace sets g.inPlace: the outside f32 operands of g's shape that
// every member reading them reads elementwise (element i of block [s, e)
// for element i of the block, never a broadcast's, slice's or pred's
// gather), so that g's value can be written into their storage: a block's
// root writes only [s, e) after every other member has read that range,
// and blocks are disjoint. The root itself may read such an operand only
// through kernels that read each element before writing the same one (no
// second pass over the operand: cbrt's and glibc's subnormal fix-ups, the
// FMA's recomputed NaN vectors, and unary kernels in general, may reread
// it). Only plain f32 groups: a
// reduce, a narrow or pred result has another shape or type. (The
// dot-and-epilogue case: pairwise distances' sqrt(max(|a|²+|b|²-2ab, 0))
// writes into the 64 MB dot result instead of a second fresh array.)
func (g *fusedGroup) planInPlace() {
	g.inPlace = nil
	if g.elem != dtype.F32 || g.reduce != nil || g.narrowOut != nil || g.predOut != nil || g.predRoot {
		return
	}
	n := len(g.members)
	bad := map[*hlo.Instruction]bool{}
	var cands []*hlo.Instruction
	for j, m := range g.members {
		for k, op := range m.Operands {
			if _, in := g.pos[op]; in {
				continue
			}
			ok := op.Shape.IsArray() && op.Shape.Elem == dtype.F32 && equalDims(op.Shape.Dims, g.dims) &&
				4*tensor.NumElements(g.dims) >= inPlaceMinBytes
			switch kind := g.kinds[j]; {
			case kind.gathers(), kind == fuseWiden, kind == fuseWidenMember, kind == fusePred, kind == fuseSelect && k == 0:
				ok = false
			case j == n-1:
				switch kind {
				case fuseSignBit, fuseSelect:
				case fuseYNN:
					ok = ok && len(m.Operands) == 2 && (g.ynnOps[j].Op == "maximum" || g.ynnOps[j].Op == "minimum")
				case fuseBinary:
					ok = ok && !g.glibcFix[j] && (m.Opcode == "add" || m.Opcode == "subtract" || m.Opcode == "multiply" ||
						m.Opcode == "divide" || m.Opcode == "maximum" || m.Opcode == "minimum")
				default:
					ok = false
				}
			}
			if !ok {
				bad[op] = true
			} else if !slices.Contains(cands, op) {
				cands = append(cands, op)
			}
		}
	}
	for _, op := range cands {
		if !bad[op] {
			g.inPlace = append(g.inPlace, op)
		}
	}
}

// widensForReduce reports whether g (in planning form) is only a fuseWiden
// of narrow value in and a reduce of it, so that in may join it.
func widensForReduce(g *fusedGroup, in *hlo.Instruction) bool {
	return g.reduce != nil && g.elem == dtype.F32 && len(g.members) == 1 && g.kinds[0] == fuseWiden &&
		g.members[0].Operands[0] == in && isNarrowElem(memberElem(in)) && in.Shape.Elem == memberElem(in) &&
		equalDims(g.dims, in.Shape.Dims)
}

// narrowingUse is the convert to bf16 or f16 that is the only use of f32
// group g's root, when it can end the group (narrowOut), else nil.
func narrowingUse(g *fusedGroup, c *hlo.Computation, users map[*hlo.Instruction][]*hlo.Instruction) *hlo.Instruction {
	root := g.members[len(g.members)-1]
	if g.elem != dtype.F32 || !isF32Array(root.Shape) || g.reduce != nil || root == c.Root || len(users[root]) != 1 || g.isExtra[root] {
		return nil
	}
	u := users[root][0]
	if u.Opcode != "convert" || len(u.Operands) != 1 || !u.Shape.IsArray() || !isNarrowElem(u.Shape.Elem) ||
		len(u.Shape.DynamicDims) > 0 || !equalDims(u.Shape.Dims, g.dims) || !registeredAs("convert", evalConvert) {
		return nil
	}
	return u
}

// fusibleReduce reports whether reduce r of x can fold the blocks of x as
// they are made: one f32 input, a fast reducer, the trailing dimensions
// reduced (so each result element is one contiguous run), and an operand
// large enough that the op-by-op reduce folds each run left to right
// (reduce_order.go's tree order applies to small operands only).
func fusibleReduce(r, x *hlo.Instruction) bool {
	if r.Opcode != "reduce" || len(r.Operands) != 2 || r.Operands[0] != x || !r.Shape.IsArray() || !x.Shape.IsArray() {
		return false
	}
	if et := x.Shape.Elem; (et != dtype.F32 && et != dtype.F64) || r.Shape.Elem != et {
		return false
	}
	if init := r.Operands[1]; !init.Shape.IsArray() || init.Shape.Elem != x.Shape.Elem || len(init.Shape.Dims) != 0 {
		return false
	}
	switch fastReducer(r.ToApply()) {
	case "add", "maximum", "minimum": // products take XLA's tree order at every size (reduce_order.go)
	default:
		return false
	}
	rank := len(x.Shape.Dims)
	for i, d := range r.Dimensions {
		if d != int64(rank-len(r.Dimensions)+i) {
			return false
		}
	}
	return tensor.NumElements(x.Shape.Dims) >= ynnMinElements
}

// eval computes the group's value from the values of its outside operands.
// The extras' values are appended to extrasBuf[:0] (the caller's, reused).
// With fv, the outside operands are read by position (the group at idx of
// fv's frame), as vals would find them.
func (g *fusedGroup) eval(ev *Evaluator, vals func(*hlo.Instruction) (Value, bool), extrasBuf []Value, fv *frameValues, idx int, into *groupInto) (Value, []Value, error) {
	if g.elem == dtype.F64 {
		if into != nil && into.out != nil {
			return Value{}, nil, fmt.Errorf("internal error: an f64 group has no outside storage form")
		}
		return g.eval64(ev, vals)
	}
	n := len(g.members)
	var sc *fuseScratch
	if into != nil {
		sc = into.sc // the caller's, kept between runs
	}
	if sc == nil {
		sc = g.takeScratch()
		defer g.putScratch(sc)
	}
	ext := fuseInputs{f: sc.f, pred: sc.pred, raw: sc.raw, predArgs: sc.predArgs}
	extras := extrasBuf[:0]
	if len(g.extras) > 0 {
		ext.out, ext.outN = sc.out, sc.outN
		for i, j := range g.extraPos {
			var t *tensor.Tensor
			if into != nil && i < len(into.extras) {
				t = into.extras[i]
			} else {
				t = ev.newTensor(g.elem, g.dims, false) // every block is written
			}
			if isNarrowElem(g.elem) {
				ext.outN[j] = t.Data
			} else {
				ext.out[j] = rawView[float32](t.Data)
			}
			extras = append(extras, ArrayValue(t))
		}
	}
	if err := g.outsideInputs(&ext, sc, vals, fv, idx, nil); err != nil {
		return Value{}, nil, err
	}
	narrow := isNarrowElem(g.elem)
	total := int(tensor.NumElements(g.dims))
	if g.predOut != nil || g.predRoot {
		// As convert from pred: the root compare's bytes as zeros and ones
		// (as themselves, for a pred value).
		to, one := dtype.Pred, predTrue
		if g.predOut != nil {
			to, one = g.predOut.Shape.Elem, predOneValue(g.predOut, g.members[n-1])
		}
		out := into.newOut(ev, to, g.dims)
		g.eachRootBlock(sc, ext, total, rootStore{pred: true, to: to, one: one, out: out.Data})
		return ArrayValue(out), extras, nil
	}
	if g.reduce == nil && g.narrowOut != nil {
		// As convert: rounded to the narrow type (subnormals kept), stored.
		to := g.narrowOut.Shape.Elem
		out := into.newOut(ev, to, g.dims)
		g.eachRootBlock(sc, ext, total, rootStore{to: to, out: out.Data})
		return ArrayValue(out), extras, nil
	}
	if g.reduce == nil {
		out := into.newOut(ev, g.elem, g.dims)
		blocks := (total + fuseBlock - 1) / fuseBlock
		blk := min(fuseBlock, total)
		if narrow {
			ext := ext // the closure's own copy: the tables stay off the heap otherwise
			parallelPull(blocks, total*n, func(lo, hi int) {
				w := getFuseWorker(g, blk)
				defer putFuseWorker(w)
				for b := lo; b < hi; b++ {
					s, e := b*fuseBlock, min((b+1)*fuseBlock, total)
					w.block(g, ext, s, e, w.out[:e-s])
					storeNarrow(g.elem, w.out[:e-s], out.Data[2*s:2*e])
				}
			})
			return ArrayValue(out), extras, nil
		}
		o := rawView[float32](out.Data)
		if total*n < parallelThreshold {
			// As parallelPull runs it, without making its closure.
			w := sc.worker(g, blk)
			for b := range blocks {
				s, e := b*fuseBlock, min((b+1)*fuseBlock, total)
				w.block(g, ext, s, e, o[s:e])
			}
			sc.done(w)
			return ArrayValue(out), extras, nil
		}
		ext := ext // the closure's own copy: the tables stay off the heap otherwise
		parallelPull(blocks, total*n, func(lo, hi int) {
			w := getFuseWorker(g, blk)
			defer putFuseWorker(w)
			for b := lo; b < hi; b++ {
				s, e := b*fuseBlock, min((b+1)*fuseBlock, total)
				w.block(g, ext, s, e, o[s:e])
			}
		})
		return ArrayValue(out), extras, nil
	}
	iv, ok := vals(g.reduce.Operands[1])
	if !ok || iv.T == nil {
		return Value{}, nil, errMissing(g.reduce.Operands[1])
	}
	// As the op-by-op reduce (flushingArithmetic, reducerFlushes): its
	// operand's and init's subnormals read as zeros, its result's flushed.
	// A root whose op flushes has none; any other root's block is flushed
	// in place (w.out is the worker's own).
	i0 := iv.T.F32()[0]
	if firstSubnormal([]float32{i0}) == 0 {
		i0 = float32(math.Copysign(0, float64(i0)))
	}
	dazRoot := !g.flushed[n-1]
	fold := func(b []float32) []float32 {
		if dazRoot {
			if i := firstSubnormal(b); i >= 0 {
				ftz(b[i:])
			}
		}
		return b
	}
	rank := len(g.dims)
	runLen := int(tensor.NumElements(g.dims[rank-len(g.reduce.Dimensions):]))
	var out *tensor.Tensor
	if into != nil && into.out != nil {
		out = into.out // every row is written
	} else {
		out = tensor.New(dtype.F32, g.reduce.Shape.Dims)
	}
	o := out.F32()
	defer func() { ftz(o) }()
	rows := len(o)
	if runLen == 0 {
		for i := range o {
			o[i] = i0
		}
		return ArrayValue(out), extras, nil
	}
	// Whole rows per block when they fit (four at least, folded together:
	// each row's chain stays in order, the four just overlap), else each
	// row in fuseBlock pieces.
	rowBlock := max(fuseBlock, min(4*runLen, fuseRowBlock))
	whole := runLen <= rowBlock
	blk := min(fuseBlock, total)
	if whole {
		blk = min(rowBlock/runLen*runLen, total)
	}
	// A root that is also an extra (softmax's exp) and needs no flushing
	// is computed straight into its whole output and folded from there.
	var rootOut []float32
	if !dazRoot && ext.out != nil {
		rootOut = ext.out[n-1]
	}
	rext := ext // the closure's own copy: the tables stay off the heap otherwise
	parallelPull(rows, total*n, func(lo, hi int) {
		w := getFuseWorker(g, blk)
		defer putFuseWorker(w)
		buf := w.out
		if whole {
			per := blk / runLen
			for r := lo; r < hi; r += per {
				re := min(r+per, hi)
				s, e := r*runLen, re*runLen
				dst := buf[:e-s]
				if rootOut != nil {
					dst = rootOut[s:e]
				}
				w.block(g, rext, s, e, dst)
				if g.ynn != ynnNone {
					b := fold(dst)
					sseAfterAVX() // scalar lanes after the block's vector code
					for q := r; q < re; q++ {
						o[q] = ynnSumRow(g.ynn, i0, b[(q-r)*runLen:(q-r+1)*runLen], g.ynnChunked)
					}
					continue
				}
				foldRows(g.op, i0, fold(dst), runLen, o[r:re])
			}
			return
		}
		if g.ynn != ynnNone {
			// The whole row, block by block, then YNNPACK's order over it.
			row := make([]float32, runLen)
			for r := lo; r < hi; r++ {
				for s := r * runLen; s < (r+1)*runLen; s += fuseBlock {
					e := min(s+fuseBlock, (r+1)*runLen)
					w.block(g, rext, s, e, buf[:e-s])
					copy(row[s-r*runLen:], fold(buf[:e-s]))
				}
				sseAfterAVX()
				o[r] = ynnSumRow(g.ynn, i0, row, g.ynnChunked)
			}
			return
		}
		for r := lo; r < hi; r++ {
			acc := i0
			for s := r * runLen; s < (r+1)*runLen; s += fuseBlock {
				e := min(s+fuseBlock, (r+1)*runLen)
				w.block(g, rext, s, e, buf[:e-s])
				acc = foldFloat(g.op, acc, fold(buf[:e-s]))
			}
			o[r] = acc
		}
	})
	return ArrayValue(out), extras, nil
}

// outsideInputs fills ext (its tables sc's) with the group's outside
// operands, read by position from fv (the group at idx of fv's frame) or
// through vals, and what the blocks know of them before they run; skip,
// when set, is an operand left for the caller to set (a dot whose tiles
// the group finishes as they are made: dotEpilogue).
func (g *fusedGroup) outsideInputs(ext *fuseInputs, sc *fuseScratch, vals func(*hlo.Instruction) (Value, bool), fv *frameValues, idx int, skip *hlo.Instruction) error {
	n := len(g.members)
	narrow := isNarrowElem(g.elem)
	var decoded map[*hlo.Instruction][]float32 // a narrow group's outside operands, widened once
	for _, ref := range g.outside {
		j, k := int(ref.j), int(ref.k)
		m := g.members[j]
		op := m.Operands[k]
		if op == skip {
			continue // set by the caller
		}
		// (The array alone: a whole Value copied here cost more than the
		// rest of a small group's set-up.)
		var vt *tensor.Tensor
		var ok bool
		if fv != nil {
			vt, ok = fv.operandT(idx, j, k)
		} else {
			var v Value
			v, ok = vals(op)
			vt = v.T
		}
		if g.kinds[j] == fuseWiden {
			if !ok || vt == nil || vt.Type != op.Shape.Elem || !equalDims(vt.Dims, g.dims) {
				return fmt.Errorf("operand %%%s has no %v array value", op.Name, op.Shape.Elem)
			}
			ext.raw[j] = vt.Data
			continue
		}
		if g.kinds[j] == fuseSelect && k == 0 {
			if !ok || vt == nil || vt.Type != dtype.Pred || !equalDims(vt.Dims, g.dims) {
				return fmt.Errorf("operand %%%s has no pred array value", op.Name)
			}
			ext.pred[j] = vt.Data
			continue
		}
		if g.kinds[j] == fusePred {
			if !ok || vt == nil || vt.Type != dtype.Pred || !equalDims(vt.Dims, g.dims) {
				return fmt.Errorf("operand %%%s has no pred array value", op.Name)
			}
			if ext.predArgs == nil {
				ext.predArgs = make([][][]byte, n)
			}
			if ext.predArgs[j] == nil {
				ext.predArgs[j] = make([][]byte, len(m.Operands))
			}
			ext.predArgs[j][k] = vt.Data
			continue
		}
		if !ok || vt == nil || vt.Type != g.elem {
			return errMissing(op)
		}
		if narrow && !g.kinds[j].gathers() {
			if ext.nraw == nil {
				ext.nraw = make([][]byte, g.nExt)
			}
			ext.nraw[g.extID[j][k]] = vt.Data
			continue
		}
		if narrow {
			f, ok := decoded[op]
			if !ok {
				if decoded == nil {
					decoded = map[*hlo.Instruction][]float32{}
				}
				f = widenNarrow(vt)
				decoded[op] = f
			}
			ext.f[j][k] = f
			continue
		}
		ext.f[j][k] = rawView[float32](vt.Data) // an s32/u32 operand's bits too
	}
	sc.predArgs = ext.predArgs // made for this group's pred operands, kept
	total := int(tensor.NumElements(g.dims))
	if g.elem == dtype.F32 {
		ext.mstate = g.cleanBroadcasts(sc, *ext, total)
	}
	return nil
}

// resultFlushed reports whether in's value never holds a subnormal,
// however it is computed (alone, in a group, as an extra): f32 add,
// subtract, multiply and divide flush their results (FTZ), and so does
// every YNNTarget op (ynnOut).
func resultFlushed(in *hlo.Instruction) bool {
	if !in.Shape.IsArray() || in.Shape.Elem != dtype.F32 {
		return false
	}
	switch in.Opcode {
	case "add", "subtract", "multiply", "divide":
		return len(in.Operands) == 2 && in.Operands[0].Shape.Elem == dtype.F32 && in.Operands[1].Shape.Elem == dtype.F32
	case "custom-call":
		return in.CustomCallTarget == YNNTarget
	case "dot", "convolution":
		// flushingArithmetic flushes their results (flushAlways). A group
		// run as a dot's epilogue sees the GEMM's tiles before that:
		// planDotEpilogues forgets this for it.
		return true
	}
	return false
}

// cleanBroadcasts returns the per-member states every block of this run
// starts from (nil: all unknown): a broadcast member whose outside source,
// smaller than the group, holds no subnormal is clean. The states live in
// sc between runs.
func (g *fusedGroup) cleanBroadcasts(sc *fuseScratch, ext fuseInputs, total int) []uint8 {
	var st []uint8
	for j, k := range g.kinds {
		if k != fuseBroadcast || g.extID[j][0] < 0 {
			continue
		}
		src := ext.f[j][0]
		if src == nil || len(src) >= total || firstSubnormal(src) >= 0 {
			continue
		}
		if st == nil {
			if cap(sc.mstate) < len(g.kinds) {
				sc.mstate = make([]uint8, len(g.kinds))
			}
			st = sc.mstate[:len(g.kinds)]
			clear(st)
		}
		st[j] = blockClean
	}
	return st
}

// fuseRowBlock bounds a reduce group's block when it holds whole rows.
const fuseRowBlock = 1 << 14

// foldRows sets o[r] to the fold of row r of xs (rows of runLen) from i0,
// each row left to right as foldFloat does, four rows at a time.
func foldRows[F float](op string, i0 F, xs []F, runLen int, o []F) {
	r := 0
	if op == "add" || op == "multiply" {
		for ; r+4 <= len(o); r += 4 {
			x0 := xs[r*runLen : (r+1)*runLen]
			x1 := xs[(r+1)*runLen : (r+2)*runLen][:len(x0)]
			x2 := xs[(r+2)*runLen : (r+3)*runLen][:len(x0)]
			x3 := xs[(r+3)*runLen : (r+4)*runLen][:len(x0)]
			a0, a1, a2, a3 := i0, i0, i0, i0
			if op == "add" {
				for t := range x0 {
					a0 += x0[t]
					a1 += x1[t]
					a2 += x2[t]
					a3 += x3[t]
				}
			} else {
				for t := range x0 {
					a0 *= x0[t]
					a1 *= x1[t]
					a2 *= x2[t]
					a3 *= x3[t]
				}
			}
			o[r], o[r+1], o[r+2], o[r+3] = a0, a1, a2, a3
		}
	}
	if op == "maximum" || op == "minimum" {
		if x, ok := any(xs).([]float32); ok {
			r = minMaxRowsF32(op, float32(i0), x, runLen, any(o).([]float32))
		}
		for ; r+4 <= len(o); r += 4 {
			x0 := xs[r*runLen : (r+1)*runLen]
			x1 := xs[(r+1)*runLen : (r+2)*runLen][:len(x0)]
			x2 := xs[(r+2)*runLen : (r+3)*runLen][:len(x0)]
			x3 := xs[(r+3)*runLen : (r+4)*runLen][:len(x0)]
			a0, a1, a2, a3 := i0, i0, i0, i0
			if op == "maximum" {
				for t := range x0 {
					a0, a1, a2, a3 = maxFloat(a0, x0[t]), maxFloat(a1, x1[t]), maxFloat(a2, x2[t]), maxFloat(a3, x3[t])
				}
			} else {
				for t := range x0 {
					a0, a1, a2, a3 = minFloat(a0, x0[t]), minFloat(a1, x1[t]), minFloat(a2, x2[t]), minFloat(a3, x3[t])
				}
			}
			o[r], o[r+1], o[r+2], o[r+3] = a0, a1, a2, a3
		}
	}
	for ; r < len(o); r++ {
		o[r] = foldFloat(op, i0, xs[r*runLen:(r+1)*runLen])
	}
}

// fuseWorker is one goroutine's block buffers, carved from one slab that
// the pool keeps between groups (a loop body's small groups would otherwise
// allocate them every step). Nothing is read from them before it is written.
type fuseWorker struct {
	slab []float32
	bufs [][]float32 // per member but the root
	tmp  [3][]float32
	out  []float32 // a reduce's block of the root
	idx  []int64
	// states and estate are the block's blockUnknown/Clean/Dirty of each
	// member and of each outside operand (by extID).
	states, estate []uint8
	// filled marks the splat members whose whole buffer holds their value
	// (in this group run).
	filled []bool
	// ebufs are a narrow group's outside operands' blocks widened to f32
	// (by extID), edone which of them hold this block's.
	ebufs [][]float32
	edone []bool
	// pg and pblk are the group and block length w was last prepared for.
	pg   *fusedGroup
	pblk int
}

var fuseWorkers sync.Pool // *fuseWorker

// getFuseWorker returns a worker with buffers of blk elements for g.
func getFuseWorker(g *fusedGroup, blk int) *fuseWorker {
	w, _ := fuseWorkers.Get().(*fuseWorker)
	if w == nil {
		w = &fuseWorker{}
	}
	w.prepare(g, blk)
	return w
}

// keptWorkerMax bounds the blocks of the workers groups keep in their
// scratch (fuseScratch.w): small groups, which a loop body runs every step.
const keptWorkerMax = 512

// worker returns a worker prepared for g's blocks of blk: the scratch's
// own for small blocks, else the pool's.
func (s *fuseScratch) worker(g *fusedGroup, blk int) *fuseWorker {
	if blk > keptWorkerMax {
		return getFuseWorker(g, blk)
	}
	if s.w == nil {
		s.w = &fuseWorker{}
	}
	s.w.prepare(g, blk)
	return s.w
}

// done ends a run of w from worker.
func (s *fuseScratch) done(w *fuseWorker) {
	if w != s.w {
		putFuseWorker(w)
	}
}

// prepare sizes w's buffers for g's blocks of blk elements.
func (w *fuseWorker) prepare(g *fusedGroup, blk int) {
	if w.pg == g && w.pblk == blk {
		clear(w.filled) // the rest is as the last prepare left it
		return
	}
	w.pg, w.pblk = g, blk
	n, ns := len(g.members), g.nSlots
	if need := (ns + 4) * blk; cap(w.slab) < need {
		w.slab = make([]float32, need)
	}
	w.bufs = w.bufs[:0]
	for j := 0; j < n-1; j++ {
		k := g.slot[j]
		w.bufs = append(w.bufs, w.slab[k*blk:(k+1)*blk:(k+1)*blk])
	}
	w.bufs = append(w.bufs, nil)
	for i := range w.tmp {
		w.tmp[i] = w.slab[(ns+i)*blk : (ns+i+1)*blk]
	}
	w.out = w.slab[(ns+3)*blk : (ns+4)*blk]
	if cap(w.idx) < len(g.dims) {
		w.idx = make([]int64, len(g.dims))
	}
	w.idx = w.idx[:len(g.dims)]
	if cap(w.states) < n {
		w.states = make([]uint8, n)
	}
	if cap(w.estate) < g.nExt {
		w.estate = make([]uint8, g.nExt)
	}
	w.states, w.estate = w.states[:n], w.estate[:g.nExt]
	if cap(w.filled) < n {
		w.filled = make([]bool, n)
	}
	w.filled = w.filled[:n]
	clear(w.filled)
	w.edone = w.edone[:0]
	if isNarrowElem(g.elem) {
		for len(w.ebufs) < g.nExt {
			w.ebufs = append(w.ebufs, nil)
		}
		for i := range g.nExt {
			if cap(w.ebufs[i]) < blk {
				w.ebufs[i] = make([]float32, blk)
			}
		}
		w.edone = make([]bool, g.nExt)
	}
}

func putFuseWorker(w *fuseWorker) { fuseWorkers.Put(w) }

// daz is the package's daz for one block, copying into tmp when needed.
func dazInto[F float](xs, tmp []F) []F {
	if i := firstSubnormal(xs); i >= 0 {
		tmp = tmp[:len(xs)]
		copy(tmp, xs)
		ftz(tmp[i:])
		return tmp
	}
	return xs
}

// block computes elements [s, e) of every member; the root's go to o.
func (w *fuseWorker) block(g *fusedGroup, ext fuseInputs, s, e int, o []float32) {
	n := len(g.members)
	l := e - s
	if ext.mstate != nil {
		copy(w.states, ext.mstate)
	} else {
		clear(w.states)
	}
	if g.estate0 != nil {
		copy(w.estate, g.estate0)
	} else {
		clear(w.estate)
	}
	clear(w.edone)
	// (Made once and pointed at each member: a struct literal per member
	// was built and copied, its stores read back before they landed.)
	mb := &memberBlock{w: w, g: g, ext: &ext, s: s, e: e}
	for j, m := range g.members {
		dst := o
		if j < n-1 {
			dst = w.bufs[j][:l]
		}
		mb.j = j
		switch g.kinds[j] {
		case fuseSignBit:
			x := mb.arg(0)
			k := signBitF32Vector(m.Opcode == "abs", x, dst)
			x, dst := x[k:], dst[k:]
			if m.Opcode == "abs" {
				for i, v := range x {
					dst[i] = math.Float32frombits(math.Float32bits(v) &^ (1 << 31))
				}
			} else {
				for i, v := range x {
					dst[i] = math.Float32frombits(math.Float32bits(v) ^ (1 << 31))
				}
			}
		case fuseUnary:
			x := mb.arg(0)
			keep := g.keepSub[j]
			if !keep {
				x = mb.daz(0, w.tmp[0])
			}
			unaryFloat(m.Opcode, x, dst)
			if !keep {
				ftz(dst)
			}
			if g.cbrt[j] {
				fixCbrtSubnormals(mb.arg(0), dst)
			}
		case fuseBinary:
			a, b := mb.daz(0, w.tmp[0]), mb.daz(1, w.tmp[1])
			k := binaryFTZF32Vector(m.Opcode, a, b, dst) // computed and flushed
			binaryFloat(m.Opcode, a[k:], b[k:], dst[k:])
			ftz(dst[k:])
			if g.glibcFix[j] {
				fixSubnormalPaths(m.Opcode, mb.arg(0), mb.arg(1), dst)
			}
		case fuseFMA:
			a, b, c := mb.arg(0), mb.arg(1), mb.arg(2)
			if g.elem == dtype.F16 {
				fmaF16Block(a, b, c, dst)
				break
			}
			for i := fmaF32Vector(a, b, c, dst); i < len(dst); i++ {
				dst[i] = fma32(a[i], b[i], c[i])
			}
		case fuseYNN:
			var b []float32
			if len(m.Operands) == 2 {
				b = mb.arg(1)
			}
			ynnBlock(m, g.ynnOps[j], mb.arg(0), b, dst)
		case fuseBroadcast, fuseSlice:
			if g.splat[j] {
				// One value everywhere: the whole buffer (every block's
				// length is at most its length) once per run.
				if !w.filled[j] {
					b := f32Bits(w.bufs[j])
					fillRepeat(b, f32Bits(mb.arg(0))[g.boffs[j]])
					w.filled[j] = true
				}
				break
			}
			if g.elem != dtype.F32 {
				// Integer bits are moved as uint32, never through float registers.
				broadcastInto(w.idx, g.dims, g.bstrides[j], g.boffs[j], f32Bits(mb.arg(0)), s, f32Bits(dst))
				break
			}
			w.broadcast(g.dims, g.bstrides[j], g.boffs[j], mb.arg(0), s, dst)
		case fuseCompare:
			switch g.elem {
			case dtype.S32, dtype.U32:
				a, b, pb := f32Bits(mb.arg(0)), f32Bits(mb.arg(1)), predBlock(dst)
				k := compareInt32Vector(m.ComparisonDirection, g.elem == dtype.S32, a, b, pb)
				if g.elem == dtype.S32 {
					compareKernel(m.ComparisonDirection, asSigned32(a[k:]), asSigned32(b[k:]), pb[k:])
				} else {
					compareKernel(m.ComparisonDirection, a[k:], b[k:], pb[k:])
				}
			default:
				// As compare(): operands flushed when it flushes, then the
				// same kernel, into the member's buffer seen as bytes.
				a, b, pb := mb.arg(0), mb.arg(1), predBlock(dst)
				if g.cmpFlush[j] {
					a, b = mb.daz(0, w.tmp[0]), mb.daz(1, w.tmp[1])
				}
				k := compareF32Vector(m.ComparisonDirection, a, b, pb)
				compareKernel(m.ComparisonDirection, a[k:], b[k:], pb[k:])
			}
		case fuseWidenMember:
			copy(dst, mb.arg(0))
		case fuseWiden:
			widenNarrowBlock(m.Operands[0].Shape.Elem, ext.raw[j][2*s:2*e], dst)
		case fuseIntUnary:
			unaryInt32(m.Opcode, g.elem == dtype.S32, f32Bits(mb.arg(0)), f32Bits(dst))
		case fuseIntBinary:
			binaryInt32(m.Opcode, g.elem == dtype.S32, f32Bits(mb.arg(0)), f32Bits(mb.arg(1)), f32Bits(dst))
		case fusePred:
			pa := func(k int) []byte {
				if ext.predArgs != nil && ext.predArgs[j] != nil && ext.predArgs[j][k] != nil {
					return ext.predArgs[j][k][s:e]
				}
				return predBlock(w.bufs[g.opPos[j][k]][:l])
			}
			pd := predBlock(dst)
			if m.Opcode == "compare" {
				compareKernel(m.ComparisonDirection, pa(0), pa(1), pd)
				break
			}
			if m.Opcode == "not" {
				predNot(pa(0), pd)
				break
			}
			predLogic(m.Opcode, pa(0), pa(1), pd)
		case fuseSelect:
			p := ext.pred[j]
			if p != nil {
				p = p[s:e]
			} else {
				p = predBlock(w.bufs[g.opPos[j][0]][:l])
			}
			selectBits(p, f32Bits(mb.arg(1)), f32Bits(mb.arg(2)), f32Bits(dst))
		}
		if isNarrowElem(g.elem) && (g.kinds[j] == fuseUnary || g.kinds[j] == fuseBinary) {
			// The op's f32 result rounded to the group's type, as
			// newFromF32 stores it: a flushed result stays free of f32
			// subnormals (bf16 keeps f32's exponent range; every f16
			// value is an f32 normal or zero).
			roundNarrow(g.elem, dst)
		}
		if g.flushed[j] {
			w.states[j] = blockClean
		}
		if ext.out != nil && ext.out[j] != nil {
			if d := ext.out[j][s:e]; len(d) > 0 && &d[0] != &dst[0] {
				copy(d, dst) // (a reduce's root may be computed in place)
			}
		}
		if ext.outN != nil && ext.outN[j] != nil {
			storeNarrow(g.elem, dst, ext.outN[j][2*s:2*e])
		}
	}
}

// memberBlock is member j's view of block [s, e) of a run of w: its
// operands' blocks.
type memberBlock struct {
	w    *fuseWorker
	g    *fusedGroup
	ext  *fuseInputs
	j    int
	s, e int
}

// ref names operand k's block for resolve and learn.
func (b *memberBlock) ref(k int) int {
	if id := b.g.extID[b.j][k]; id >= 0 {
		return ^id
	}
	return b.g.opPos[b.j][k]
}

// arg is operand k's block.
func (b *memberBlock) arg(k int) []float32 {
	g, w, ext, j := b.g, b.w, b.ext, b.j
	l := b.e - b.s
	if id := g.extID[j][k]; id >= 0 && ext.nraw != nil && ext.nraw[id] != nil && !g.kinds[j].gathers() {
		x := w.ebufs[id][:l]
		if !w.edone[id] {
			widenNarrowBlock(g.elem, ext.nraw[id][2*b.s:2*b.e], x)
			w.edone[id] = true
		}
		return x
	}
	if x := ext.f[j][k]; x != nil {
		if g.kinds[j].gathers() {
			return x
		}
		return x[b.s:b.e]
	}
	return w.bufs[g.opPos[j][k]][:l]
}

// daz reads operand k with subnormals flushed: a block known to hold
// none (a member's own op flushed it, or an earlier scan found none) is
// read as it is, else it is scanned and what the scan found kept.
func (b *memberBlock) daz(k int, tmp []float32) []float32 {
	x := b.arg(k)
	switch b.w.resolve(b.g, b.ref(k)) {
	case blockClean:
		return x
	case blockUnknown:
		i := firstSubnormal(x)
		if i < 0 {
			b.w.learn(b.g, b.ref(k), blockClean)
			return x
		}
		b.w.learn(b.g, b.ref(k), blockDirty)
		tmp = tmp[:len(x)]
		copy(tmp, x)
		ftz(tmp[i:])
		return tmp
	}
	return dazInto(x, tmp)
}

// state is what the block knows of block r's subnormals: member r, or for
// r < 0 outside operand ^r.
func (w *fuseWorker) state(r int) *uint8 {
	if r < 0 {
		return &w.estate[^r]
	}
	return &w.states[r]
}

// resolve returns what is known of block r: a member that preserves
// subnormals holds one exactly where its operand does, so it knows what
// its operand's block is known to be.
func (w *fuseWorker) resolve(g *fusedGroup, r int) uint8 {
	st := w.state(r)
	if *st == blockUnknown && r >= 0 && g.preserves[r] {
		*st = w.resolve(g, g.opRef[r])
	}
	return *st
}

// learn records what a scan found in block r, and (through members that
// preserve subnormals) in the operand blocks it came from.
func (w *fuseWorker) learn(g *fusedGroup, r int, v uint8) {
	*w.state(r) = v
	if r >= 0 && g.preserves[r] {
		w.learn(g, g.opRef[r], v)
	}
}

// broadcast fills dst with elements [s, s+len(dst)) of the broadcast or
// slice of src (result dimensions dims, source strides st, 0 where
// broadcast, and the source offset off of the first element).
func (w *fuseWorker) broadcast(dims, st []int64, off int64, src []float32, s int, dst []float32) {
	broadcastInto(w.idx, dims, st, off, src, s, dst)
}

// broadcastInto is broadcast for f32 or integer elements, idx its scratch
// index of len(dims).
func broadcastInto[T float32 | uint32 | uint64](idx []int64, dims, st []int64, off int64, src []T, s int, dst []T) {
	src = src[off:]
	r := len(dims)
	if r == 0 {
		dst[0] = src[0]
		return
	}
	rem := int64(s)
	for d := r - 1; d >= 0; d-- {
		idx[d] = rem % dims[d]
		rem /= dims[d]
	}
	last, ls := dims[r-1], st[r-1]
	for i := 0; i < len(dst); {
		base := int64(0)
		for d := 0; d < r-1; d++ {
			base += idx[d] * st[d]
		}
		run := int(min(last-idx[r-1], int64(len(dst)-i)))
		seg := dst[i : i+run]
		if ls == 0 {
			fillRepeat(seg, src[base])
		} else {
			off := base + idx[r-1]*ls
			if ls == 1 {
				copy(seg, src[off:off+int64(run)])
			} else {
				for k := range seg {
					seg[k] = src[off+int64(k)*ls]
				}
			}
		}
		i += run
		idx[r-1] += int64(run)
		for d := r - 1; d > 0 && idx[d] == dims[d]; d-- {
			idx[d] = 0
			idx[d-1]++
		}
	}
}

// group returns the group whose value instruction in produces, or nil.
func (p *fusionPlan) group(in *hlo.Instruction) *fusedGroup {
	if p == nil {
		return nil
	}
	return p.groups[in]
}

// all is the group's members and its reduce, if any.
func (g *fusedGroup) all() []*hlo.Instruction {
	if g.reduce == nil {
		return g.members
	}
	return append(g.members[:len(g.members):len(g.members)], g.reduce)
}

// fillF32 sets every element of xs to v: a few directly, then by doubling
// copies (memmove runs a vector at a time).
func fillF32(xs []float32, v float32) { fillRepeat(xs, v) }

// fillRepeat is fillF32 for any element type.
func fillRepeat[T any](xs []T, v T) {
	n := min(len(xs), 16)
	for k := range xs[:n] {
		xs[k] = v
	}
	for n < len(xs) {
		n += copy(xs[n:], xs[:n])
	}
}

// predBlock is a member's block buffer seen as the len(b) bytes of a pred
// block.
func predBlock(b []float32) []byte {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&b[0])), len(b))
}

// f32Bits is xs seen as its bit patterns.
func f32Bits(xs []float32) []uint32 {
	if len(xs) == 0 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&xs[0])), len(xs))
}

// selectBits is selectKernel's loop on one block: o[i] = a[i] where p[i]
// is set, else b[i], moving bit patterns.
func selectBits(p []byte, a, b, o []uint32) {
	p, a, b = p[:len(o)], a[:len(o)], b[:len(o)]
	k := selectBitsVector(p, a, b, o)
	p, a, b, o = p[k:], a[k:], b[k:], o[k:]
	selectBitsLoop(p, a, b, o)
}

// predLogic is and, or or xor of pred bytes, masked to the low bit as
// binaryInt and maskStorage compute them at width 1, eight bytes at a time.
func predLogic(op string, a, b, o []byte) {
	n := len(o)
	a, b = a[:n], b[:n]
	const low = 0x0101010101010101
	w := n &^ 7
	switch op {
	case "and":
		for i := 0; i < w; i += 8 {
			bin.LittleEndian.PutUint64(o[i:], bin.LittleEndian.Uint64(a[i:])&bin.LittleEndian.Uint64(b[i:])&low)
		}
		for i := w; i < n; i++ {
			o[i] = a[i] & b[i] & 1
		}
	case "or":
		for i := 0; i < w; i += 8 {
			bin.LittleEndian.PutUint64(o[i:], (bin.LittleEndian.Uint64(a[i:])|bin.LittleEndian.Uint64(b[i:]))&low)
		}
		for i := w; i < n; i++ {
			o[i] = (a[i] | b[i]) & 1
		}
	default: // xor
		for i := 0; i < w; i += 8 {
			bin.LittleEndian.PutUint64(o[i:], (bin.LittleEndian.Uint64(a[i:])^bin.LittleEndian.Uint64(b[i:]))&low)
		}
		for i := w; i < n; i++ {
			o[i] = (a[i] ^ b[i]) & 1
		}
	}
}

// predNot is not of pred bytes: the low bit flipped, the rest cleared, as
// unaryInt and maskStorage compute it at width 1.
func predNot(a, o []byte) {
	n := len(o)
	a = a[:n]
	const low = 0x0101010101010101
	i := 0
	for ; i+8 <= n; i += 8 {
		bin.LittleEndian.PutUint64(o[i:], ^bin.LittleEndian.Uint64(a[i:])&low)
	}
	for ; i < n; i++ {
		o[i] = ^a[i] & 1
	}
}

// selectBitsLoop is selectBits one element at a time.
func selectBitsLoop(p []byte, a, b, o []uint32) {
	p, a, b = p[:len(o)], a[:len(o)], b[:len(o)]
	for i := range o {
		// A mask rather than a branch: predicates are data, often random.
		m := uint32(0)
		if p[i] != 0 {
			m = ^uint32(0)
		}
		o[i] = b[i] ^ (a[i]^b[i])&m
	}
}

// widenNarrow decodes a bf16 or f16 tensor to f32 (exactly), on all cores.
func widenNarrow(t *tensor.Tensor) []float32 {
	o := make([]float32, t.NumElements())
	widenNarrowInto(t, o)
	return o
}

// widenNarrowInto is widenNarrow into o (of t's length).
func widenNarrowInto(t *tensor.Tensor, o []float32) {
	parallelForWork(len(o), 4*len(o), func(lo, hi int) {
		widenNarrowBlock(t.Type, t.Data[2*lo:2*hi], o[lo:hi])
	})
}

// widenNarrowBlock decodes the bf16 or f16 values in src into dst (of half
// src's length), exactly, a vector at a time where the CPU has them.
func widenNarrowBlock(t dtype.Type, src []byte, dst []float32) {
	k := 0
	switch t {
	case dtype.BF16:
		k = widenBF16Vector(u16View(src), f32Bits(dst))
	case dtype.F16:
		k = widenF16Vector(u16View(src), f32Bits(dst))
	}
	dtype.DecodeF32(t, src[2*k:], dst[k:])
}

// encodeF32 is dtype.EncodeF32, bf16 and f16 on all cores, a vector at a
// time: bf16 rounded (roundBF16Bits), then the top halves stored; f16
// rounded and encoded by narrowF16Vector.
func encodeF32(t dtype.Type, src []float32, dst []byte) {
	if !isNarrowElem(t) {
		dtype.EncodeF32(t, src, dst)
		return
	}
	dst = dst[:2*len(src)]
	parallelForWork(len(src), 4*len(src), func(lo, hi int) {
		if t == dtype.F16 {
			storeNarrow(t, src[lo:hi], dst[2*lo:2*hi]) // rounds as EncodeF32 does
			return
		}
		var buf [fuseBlock]float32
		for s := lo; s < hi; s += fuseBlock {
			e := min(s+fuseBlock, hi)
			b := buf[:e-s]
			copy(b, src[s:e])
			roundBF16Bits(f32Bits(b))
			storeNarrow(t, b, dst[2*s:2*e])
		}
	})
}

// roundNarrow rounds each of xs to type t (bf16, f16) and back, as
// newFromF32 and asF32 do to an op's result (buf holds 2*len(xs) bytes).
func roundNarrow(t dtype.Type, xs []float32) {
	if t == dtype.BF16 {
		roundBF16Bits(f32Bits(xs))
	} else {
		roundF16Bits(f32Bits(xs))
	}
}

// storeNarrow stores values of type t (bf16, f16) held exactly as f32 into
// dst: bf16 as the top half of the f32 bits (a NaN passed through by
// negate, select or a broadcast keeps its payload, as the op-by-op bf16
// value does), f16 as EncodeF32 does it (exact on f16 values, NaN payloads
// included; any other f32 rounded to nearest even).
func storeNarrow(t dtype.Type, xs []float32, dst []byte) {
	dst = dst[:2*len(xs)]
	if t == dtype.BF16 {
		k := narrowBF16Vector(f32Bits(xs), u16View(dst))
		// The tail through integer registers only: a float load (MOVSS)
		// after the vector code pays the legacy-SSE penalty.
		bits, dst := f32Bits(xs[k:]), dst[2*k:]
		dst = dst[:2*len(bits)]
		for i, b := range bits {
			dst[2*i], dst[2*i+1] = byte(b>>16), byte(b>>24)
		}
		return
	}
	if t == dtype.F16 {
		k := narrowF16Vector(f32Bits(xs), u16View(dst))
		xs, dst = xs[k:], dst[2*k:]
	}
	dtype.EncodeF32(t, xs, dst)
}

// fmaF16Block is evalFMA's f16 multiply-add on a block of f16 values held
// as f32: each operand's f16 bits widened to f64, one f64 FMA (exact
// wherever the f16 result is finite), one rounding to f16 (dtype.FromF64).
// Without NaNs that rounding is done through f32 rounded to odd (toward
// zero, the last bit set when inexact): f32's 13 extra bits keep the f16
// rounding of the f64 value, to nearest even, exactly (roundF16One); a NaN
// operand or result takes the converters. fmaF16Vector does the same a
// vector at a time.
func fmaF16Block(a, b, c, o []float32) {
	a, b, c = a[:len(o)], b[:len(o)], c[:len(o)]
	for i := 0; i < len(o); {
		i += fmaF16Vector(a[i:], b[i:], c[i:], o[i:])
		e := min(i+8, len(o)) // a vector with a NaN, or the tail
		fmaF16Scalar(a[i:e], b[i:e], c[i:e], o[i:e])
		i = e
	}
}

// fmaF16Scalar is fmaF16Block one element at a time.
func fmaF16Scalar(a, b, c, o []float32) {
	a, b, c = a[:len(o)], b[:len(o)], c[:len(o)]
	w := func(v float32) float64 { return dtype.ToF64(dtype.F16, dtype.FromF32(dtype.F16, v)) }
	for i := range o {
		x, y, z := a[i], b[i], c[i]
		if x != x || y != y || z != z {
			o[i] = dtype.ToF32(dtype.F16, dtype.FromF64(dtype.F16, math.FMA(w(x), w(y), w(z))))
			continue
		}
		r := math.FMA(float64(x), float64(y), float64(z))
		if r != r { // Inf times 0, Inf minus Inf
			o[i] = dtype.ToF32(dtype.F16, dtype.FromF64(dtype.F16, r))
			continue
		}
		f := float32(r)
		if float64(f) != r && !math.IsInf(r, 0) {
			fb := math.Float32bits(f)
			if math.Abs(float64(f)) > math.Abs(r) {
				fb-- // the f32 next toward zero
			}
			f = math.Float32frombits(fb | 1)
		}
		o[i] = math.Float32frombits(roundF16One(math.Float32bits(f)))
	}
}

// u16View is b (of even length, little-endian on the hosts the vector
// loops run on) seen as 16-bit elements.
func u16View(b []byte) []uint16 {
	if len(b) < 2 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b)/2)
}

// eachRootBlock computes the root's block for every block of the group's
// elements on all cores and hands it to store with the block's bounds.
func (g *fusedGroup) eachRootBlock(sc *fuseScratch, ext fuseInputs, total int, store rootStore) {
	blocks := (total + fuseBlock - 1) / fuseBlock
	blk := min(fuseBlock, total)
	if total*len(g.members) < parallelThreshold {
		// As parallelPull runs it, without making its closure.
		w := sc.worker(g, blk)
		for b := range blocks {
			s, e := b*fuseBlock, min((b+1)*fuseBlock, total)
			w.block(g, ext, s, e, w.out[:e-s])
			store.store(w.out[:e-s], s, e)
		}
		sc.done(w)
		return
	}
	pext, pstore := ext, store // the closure's own copies: ext and store stay off the heap otherwise
	parallelPull(blocks, total*len(g.members), func(lo, hi int) {
		w := getFuseWorker(g, blk)
		defer putFuseWorker(w)
		for b := lo; b < hi; b++ {
			s, e := b*fuseBlock, min((b+1)*fuseBlock, total)
			w.block(g, pext, s, e, w.out[:e-s])
			pstore.store(w.out[:e-s], s, e)
		}
	})
}

// predTrue is a pred's true as stored.
var predTrue = []byte{1}

// rootStore stores a block of a group's root computed in f32: as pred
// bytes turned into zeros and ones of type to (pred, a compare root), or
// rounded to narrow type to (a narrow convert root).
type rootStore struct {
	pred bool
	to   dtype.Type
	one  []byte // pred: to's one, as stored
	out  []byte // the whole result's storage
}

func (r rootStore) store(o []float32, s, e int) {
	if r.pred {
		size := r.to.Size()
		predAsValues(predBlock(o)[:e-s], r.one, r.out[size*s:size*e])
		return
	}
	storeF32Block(r.to, o, r.out[2*s:2*e])
}

// predOneValue is the storage of one in u's type when u is a convert of
// pred array cmp to a type predAsValues writes (f32, f64, bf16, f16, and
// the 8- to 64-bit integers), of cmp's shape; else nil.
func predOneValue(u, cmp *hlo.Instruction) []byte {
	if u.Opcode != "convert" || len(u.Operands) != 1 || u.Operands[0] != cmp || !u.Shape.IsArray() ||
		len(u.Shape.DynamicDims) > 0 || !equalDims(u.Shape.Dims, cmp.Shape.Dims) || !registeredAs("convert", evalConvert) {
		return nil
	}
	t := u.Shape.Elem
	switch t {
	case dtype.F32, dtype.F64, dtype.BF16, dtype.F16, dtype.S8, dtype.U8, dtype.S16, dtype.U16, dtype.S32, dtype.U32,
		dtype.S64, dtype.U64:
		one := make([]byte, t.Size())
		dtype.EncodeF32(t, []float32{1}, one)
		return one
	}
	return nil
}

// predAsValues writes each pred byte of p (0 or 1) as zero or one (one's
// bytes) into dst, one element of len(one) bytes per byte of p.
func predAsValues(p, one, dst []byte) {
	switch len(one) {
	case 4:
		v := bin.LittleEndian.Uint32(one)
		d := rawView[uint32](dst[:4*len(p)])
		for i, b := range p {
			d[i] = uint32(b) * v
		}
	case 2:
		v := bin.LittleEndian.Uint16(one)
		d := rawView[uint16](dst[:2*len(p)])
		for i, b := range p {
			d[i] = uint16(b) * v
		}
	case 8:
		v := bin.LittleEndian.Uint64(one)
		d := rawView[uint64](dst[:8*len(p)])
		for i, b := range p {
			d[i] = uint64(b) * v
		}
	default:
		for i, b := range p {
			dst[i] = b * one[0]
		}
	}
}
