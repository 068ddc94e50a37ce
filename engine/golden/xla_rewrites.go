package golden

import (
	"fmt"
	"slices"
	"strings"

	"goldtrace/engine/dtype"
	"goldtrace/engine/eval"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
	"goldtrace/internal/hostcpu"
)

// XLA:CPU does not run the module it is given: its optimization pipeline
// first rewrites it, and a few rewrites change float results. Goldens follow
// XLA:CPU, so legalization reproduces those rewrites on the copy that runs.
// Each was measured bit for bit against jax.jit on CPU (jaxlib 0.10.2, see
// xla_rewrites_test.go); the rules follow the algebraic simplifier's
// HandleDivide (xla/hlo/transforms/simplifiers/algebraic_simplifier.cc) and
// LLVM's multiply-add contraction.
//
//   - Calls are inlined first (XLA's CallInliner), so that constants and
//     multiply-add pairs are seen across jit boundaries.
//   - Cumulative reduce-windows longer than 16 become XLA's two-level scan
//     tree (ReduceWindowRewriter, see scanTree), which folds in another
//     order than the window.
//   - A / C, with C a constant, or broadcasts and reshapes of constants,
//     and A not constant, becomes A * (1/C), the reciprocal rounded to the
//     element type (jnp.mean: sum * 0.005, and 1/sqrt(d) attention scaling).
//   - A / broadcast(B) becomes A * broadcast(1/B), whatever else reads B
//     (softmax: e * (1/sum) per row). 1/B is itself simplified: 1/rsqrt(v)
//     becomes sqrt(v), 1/sqrt(v) rsqrt(v) and 1/pow(v, p) pow(v, -p).
//   - A / pow(B, C) becomes A * pow(B, -C); A / rsqrt(B) becomes A * sqrt(B)
//     when that rsqrt has no other use; A / sqrt(B) becomes A * rsqrt(B)
//     when that sqrt has no other use (also 1/sqrt(B) in the broadcast rule
//     below: layer norm's x * broadcast(rsqrt(var + eps))). The evaluator's
//     f32 rsqrt is XLA:CPU's only where eval.RsqrtMatchesXLA (elsewhere it
//     is correctly rounded and f32 results may differ in the last bit; the
//     rewrite still brings them closer on the whole), and its f64 rsqrt is
//     correctly rounded where XLA:CPU's is an estimate refined by Newton
//     steps (about a third of f64 quotients differ by an ulp or two).
//   - (A/B)/(C/D) becomes (A*D)/(B*C), (A/B)/C becomes A/(B*C) and A/(B/C)
//     becomes (A*C)/B.
//   - (A*C1)*C2 becomes A*(C1*C2) for constants, or for broadcast scalar
//     constants in that operand order (HandleMultiply), also when A*C1 came
//     from a division: adam's lr * (m / (1-b1^t)) is m * 0.00369003718.
//   - Every float type narrower than f32 except f16 is computed in f32 on
//     XLA:CPU (float normalization runs before the simplifier), so for them
//     the division is rewritten in f32 between converts: x/3 on bf16 becomes
//     bf16(f32(x) * 0.333333343), not x * bf16(1/3). f16, f32 and f64 are
//     rewritten in their own type. Complex division is left alone.
//   - A multiply whose only use is an f32 or f64 add or subtract (f16 too on
//     hosts with AVX512-FP16, see contractF16), directly or
//     through reshape, transpose, slice, bitcast or copy, is contracted into
//     a fused multiply-add (eval.FMATarget), rounding once: XLA:CPU compiles
//     fusions with fp-contract=fast on an FMA host. When both operands of an add
//     are such multiplies, the one LLVM's Reassociate pass ranks lower is
//     fused, the left one on a tie (see contractRanks): Reassociate puts
//     the lower-ranked operand of every commutative instruction first, and
//     the DAG combiner fuses operand 0's multiply first. A subtract keeps
//     its order (left first). Not contracted, as measured: a multiply reaching the
//     add through a broadcast, a multiply with several uses in one
//     expression or also returned as an output (counting identical
//     multiplies as one, as XLA's CSE does; when each of them feeds one
//     copy of the same expression, as jax traces a repeated Python
//     expression, CSE merges those too and the one product contracts:
//     productsMergedOneUse), f16 arithmetic on hosts
//     without AVX512-FP16 and any narrower arithmetic (rounded after every
//     op), and reductions.
//
// Left out, with evidence in the test file: the multiply in a multiply-add
// whose multiply has several uses that XLA happens to put in different
// fusions. Not exact either: the load order contractRanks assumes. XLA:CPU
// emits a fusion's loads in an order of its own (neither first use nor
// parameter order; x*y + 3*x loads y first), so where two products' ranks
// differ only through it the other product may be XLA's: 13 of 227 random
// P + Q trees over three inputs, 2 of 26 hand-written ones (x*y + 3*x and
// (y+1)*y + (x+1)*(x+1)), against 0 of 15 measured in the test table. Each
// such miss moves a result by at most the rounding of one product.

// xlaRewrites rewrites m, a private copy, as XLA:CPU's pipeline would.
func xlaRewrites(m *hlo.Module) error {
	r := &xlaRewriter{names: map[string]bool{}, consts: map[*hlo.Instruction]*tensor.Tensor{}}
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			r.names[in.Name] = true
		}
	}
	kernel := calledByCustomCalls(m)
	ynnComps, optimized := ynnComputations(m)
	for _, c := range m.Computations { // callees before callers: nested calls flatten
		if kernel[c] {
			continue
		}
		r.inlineCalls(c)
	}
	for _, c := range m.Computations {
		if kernel[c] {
			continue
		}
		before := useCounts(c)
		r.unrolled = map[*hlo.Instruction]bool{}
		if err := r.rewrite(c, r.unrollWhile); err != nil {
			return err
		}
		r.forwardTuples(c)
		if err := r.rewrite(c, r.scanWindows); err != nil {
			return err
		}
		if err := r.rewrite(c, r.upcastMixedDot); err != nil {
			return err
		}
		r.narrowed = map[narrowKey]*hlo.Instruction{}
		if err := r.rewrite(c, r.narrowIndexConvert); err != nil {
			return err
		}
		if err := r.rewrite(c, r.excessPrecision); err != nil {
			return err
		}
		if err := r.rewrite(c, r.simplify); err != nil {
			return err
		}
		if !optimized {
			if err := r.layoutPasses(c, before); err != nil {
				return err
			}
		}
		r.ynn = nil
		if !ynnNumericsOff && (ynnComps[c] || !optimized) {
			if err := r.ynnRewrites(c, ynnComps[c], before); err != nil {
				return err
			}
		}
		if r.ynn != nil {
			if err := r.rewrite(c, r.ynnSumDot); err != nil {
				return err
			}
		}
		log1pPairs(c)
		r.products = productCounts(c)
		r.mergedOneUse = productsMergedOneUse(c)
		if err := r.rewrite(c, r.contract); err != nil {
			return err
		}
		cseYNN(c)
		foldDotTransposes(c)
		forwardLocalTuples(c)
		pruneDead(c, before)
		if err := r.hoistTransposes(c, before); err != nil {
			return err
		}
		r.sunk = nil
	}
	return nil
}

// calledByCustomCalls returns the computations reachable from custom-calls:
// they belong to a kernel compiled for its exact types and ops.
func calledByCustomCalls(m *hlo.Module) map[*hlo.Computation]bool {
	keep := map[*hlo.Computation]bool{}
	var mark func(c *hlo.Computation)
	mark = func(c *hlo.Computation) {
		if keep[c] {
			return
		}
		keep[c] = true
		for _, in := range c.Instructions {
			for _, cc := range in.Called {
				mark(cc)
			}
		}
	}
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			if in.Opcode == "custom-call" {
				for _, cc := range in.Called {
					mark(cc)
				}
			}
		}
	}
	return keep
}

type xlaRewriter struct {
	names  map[string]bool
	seq    int
	consts map[*hlo.Instruction]*tensor.Tensor // folded constant values
	// products counts the multiplies of each operand pair (productKey):
	// XLA's CSE merges them into one multiply with all their uses.
	products map[string]int
	// mergedOneUse marks the productKeys whose identical multiplies each
	// feed one identical expression: XLA's CSE merges those expressions too,
	// leaving one multiply with one use, which contracts.
	mergedOneUse map[string]bool
	// narrowed memoizes narrowIndex per computation.
	narrowed map[narrowKey]*hlo.Instruction
	// unrolled marks the last step's tuple of each unrolled while loop.
	unrolled map[*hlo.Instruction]bool
	// excessPrecision's state for the computation epComp: the ops a convert
	// to f32 reads (epRead), and the f32 value of each rewritten op's
	// narrow replacement (epWide).
	epComp *hlo.Computation
	epRead map[*hlo.Instruction]bool
	epWide map[*hlo.Instruction]*hlo.Instruction

	// State of the computation being rewritten.
	c    *hlo.Computation
	out  []*hlo.Instruction
	uses map[*hlo.Instruction]int
	// readers lists each instruction's readers in c as the pass began
	// (made when copiedForLoop first asks).
	readers map[*hlo.Instruction][]*hlo.Instruction

	// ynn is the computation's YNNPACK fusions (ynn.go): their ops take
	// YNNPACK's numerics and never contract.
	ynn *ynnPlan
	// sunk are the transposes ReshapeMover's model sank (ynn_layout.go),
	// hoisted back once the fusions are rewritten.
	sunk map[*hlo.Instruction]bool
}

func (r *xlaRewriter) newName(base string) string {
	for {
		r.seq++
		n := fmt.Sprintf("%s.xla.%d", base, r.seq)
		if !r.names[n] {
			r.names[n] = true
			return n
		}
	}
}

// emit appends a new instruction computing opcode over operands.
func (r *xlaRewriter) emit(opcode string, shape hlo.Shape, operands ...*hlo.Instruction) *hlo.Instruction {
	in := &hlo.Instruction{Name: r.newName(opcode), Opcode: opcode, Shape: shape, Operands: operands, Parent: r.c}
	r.out = append(r.out, in)
	return in
}

// useCounts counts, per instruction, the operand slots that read it, plus
// one for the root.
func useCounts(c *hlo.Computation) map[*hlo.Instruction]int {
	n := make(map[*hlo.Instruction]int, len(c.Instructions))
	for _, in := range c.Instructions {
		for _, op := range in.Operands {
			n[op]++
		}
	}
	if c.Root != nil {
		n[c.Root]++
	}
	return n
}

// rewrite runs f over c's instructions in order. f sees each instruction
// with its operands already replaced and returns a replacement (appending
// any new instructions it needs with emit) or nil to keep it. A
// replacement takes over the name of the instruction it replaces, so that
// intermediates keep the names of the module that was given.
func (r *xlaRewriter) rewrite(c *hlo.Computation, f func(in *hlo.Instruction) (*hlo.Instruction, error)) error {
	r.c, r.out, r.uses, r.readers = c, nil, useCounts(c), nil
	repl := map[*hlo.Instruction]*hlo.Instruction{}
	for _, in := range c.Instructions {
		remap(in.Operands, repl)
		remap(in.ControlPredecessors, repl)
		nv, err := f(in)
		if err != nil {
			return fmt.Errorf("computation %s, instruction %%%s: %w", c.Name, in.Name, err)
		}
		if nv == nil || nv == in {
			r.out = append(r.out, in)
			continue
		}
		repl[in] = nv
		if r.isNew(nv) {
			nv.Name, nv.Metadata = in.Name, in.Metadata
		}
	}
	c.Instructions = r.out
	if nv, ok := repl[c.Root]; ok {
		c.Root = nv
	}
	r.c, r.out, r.uses, r.readers = nil, nil, nil, nil
	return nil
}

func remap(list []*hlo.Instruction, repl map[*hlo.Instruction]*hlo.Instruction) {
	for i, x := range list {
		if y, ok := repl[x]; ok {
			list[i] = y
		}
	}
}

// isNew reports whether in was created by this pass in the current
// computation (it has no use count from before).
func (r *xlaRewriter) isNew(in *hlo.Instruction) bool {
	_, old := r.uses[in]
	return !old && in.Opcode != "parameter"
}

// oneUse reports whether in is read exactly once. New instructions are
// built for one use.
func (r *xlaRewriter) oneUse(in *hlo.Instruction) bool {
	if r.isNew(in) {
		return true
	}
	return r.uses[in] == 1
}

// pureOps may be dropped once nothing reads them.
var pureOps = map[string]bool{
	"constant": true, "broadcast": true, "reshape": true, "transpose": true, "bitcast": true, "copy": true,
	"slice": true, "convert": true, "add": true, "subtract": true, "multiply": true, "divide": true,
	"negate": true, "sqrt": true, "rsqrt": true, "power": true, "exponential": true, "reduce": true,
	"maximum": true, "minimum": true, "select": true, "compare": true, "get-tuple-element": true, "tuple": true,
	"iota": true, "shift-left": true, "shift-right-logical": true, "and": true, "or": true, "xor": true, "not": true,
}

// pruneDead removes the pure instructions the rewrites left unread (those
// read before, per before, and new ones), as XLA's dead code elimination
// does; instructions the module itself left unread stay.
func pruneDead(c *hlo.Computation, before map[*hlo.Instruction]int) {
	for {
		uses := useCounts(c)
		ctl := map[*hlo.Instruction]bool{}
		for _, in := range c.Instructions {
			for _, p := range in.ControlPredecessors {
				ctl[p] = true
			}
		}
		var keep []*hlo.Instruction
		for _, in := range c.Instructions {
			// excessPrecision can leave any op it rewrites unread.
			pure := pureOps[in.Opcode] || excessPrecisionOps[in.Opcode] || in.CustomCallTarget == eval.YNNTarget
			if uses[in] == 0 && pure && (before[in] > 0 || !knownIn(before, in)) && !ctl[in] {
				continue
			}
			keep = append(keep, in)
		}
		if len(keep) == len(c.Instructions) {
			return
		}
		c.Instructions = keep
	}
}

func knownIn(m map[*hlo.Instruction]int, in *hlo.Instruction) bool { _, ok := m[in]; return ok }

// inlineCalls replaces every call in c by a copy of its callee's body.
// The callee's root copy takes the call's name.
func (r *xlaRewriter) inlineCalls(c *hlo.Computation) {
	var out []*hlo.Instruction
	repl := map[*hlo.Instruction]*hlo.Instruction{}
	for _, in := range c.Instructions {
		remap(in.Operands, repl)
		remap(in.ControlPredecessors, repl)
		if in.Opcode != "call" || len(in.Called) != 1 || in.Called[0].ExecutionThread != "" || in.Called[0].Root == nil {
			out = append(out, in)
			continue
		}
		callee := in.Called[0]
		local := map[*hlo.Instruction]*hlo.Instruction{}
		for _, ci := range callee.Instructions {
			if ci.Opcode == "parameter" && int(ci.ParameterNumber) < len(in.Operands) {
				local[ci] = in.Operands[ci.ParameterNumber]
				continue
			}
			ni := *ci
			ni.Parent = c
			ni.Name = r.newName(ci.Name)
			ni.Operands = append([]*hlo.Instruction(nil), ci.Operands...)
			remap(ni.Operands, local)
			ni.ControlPredecessors = append([]*hlo.Instruction(nil), ci.ControlPredecessors...)
			remap(ni.ControlPredecessors, local)
			if len(ni.ControlPredecessors) == 0 {
				ni.ControlPredecessors = append(ni.ControlPredecessors, in.ControlPredecessors...)
			}
			local[ci] = &ni
			out = append(out, &ni)
		}
		root := local[callee.Root]
		if root.Parent == c && root.Opcode != "parameter" && !inList(c.Instructions, root) {
			root.Name = in.Name // the call's name is free now
		}
		repl[in] = root
	}
	c.Instructions = out
	if nv, ok := repl[c.Root]; ok {
		c.Root = nv
	}
}

func inList(list []*hlo.Instruction, x *hlo.Instruction) bool {
	for _, y := range list {
		if y == x {
			return true
		}
	}
	return false
}

// --- division ---

// f32Computed reports whether XLA:CPU computes arithmetic of float type t
// in f32 (float normalization), so that its simplifier sees f32 ops.
func f32Computed(t dtype.Type) bool { return isLowFloat(t) && t != dtype.F16 }

// simplify applies the algebraic simplifier's numerics-changing rules to
// one instruction.
func (r *xlaRewriter) simplify(in *hlo.Instruction) (*hlo.Instruction, error) {
	if in.Opcode == "multiply" && in.Shape.IsArray() && (in.Shape.Elem.IsFloat() && !f32Computed(in.Shape.Elem) ||
		in.Shape.Elem.IsInteger()) {
		if sel := r.multiplyByPred(in); sel != nil {
			return sel, nil
		}
	}
	if !in.Shape.IsArray() || !in.Shape.Elem.IsFloat() {
		return nil, nil
	}
	switch in.Opcode {
	case "divide":
		return r.divide(in)
	case "multiply":
		if f32Computed(in.Shape.Elem) {
			return nil, nil // converts separate the f32 multiplies
		}
		return r.simplifyMultiply(in.Operands[0], in.Operands[1], in.Shape)
	}
	return nil, nil
}

// multiplyByPred is HandleMultiply's A * convert(P) => select(P, A, 0) for
// a pred array P converted to the multiply's own type, either operand
// order: where P is false the result is +0 whatever A is (a negative A, an
// infinity or a NaN times 0 would give -0 or NaN), which masks and one_hot
// products show. XLA:CPU's float normalization computes bf16 and the 8-bit
// floats in f32 first, so their multiplies never match (measured on jax
// 0.10: f32, f16, f64 and integer products are rewritten, bf16 and
// f8e4m3fn ones are not, nor a product with a broadcast of the convert).
func (r *xlaRewriter) multiplyByPred(in *hlo.Instruction) *hlo.Instruction {
	a, b := in.Operands[0], in.Operands[1]
	predOf := func(x *hlo.Instruction) *hlo.Instruction {
		if x.Opcode != "convert" || len(x.Operands) != 1 || !x.Shape.IsArray() || x.Shape.Elem != in.Shape.Elem {
			return nil
		}
		if p := x.Operands[0]; p.Shape.IsArray() && p.Shape.Elem == dtype.Pred && len(p.Shape.DynamicDims) == 0 &&
			slices.Equal(p.Shape.Dims, in.Shape.Dims) {
			return p
		}
		return nil
	}
	p, other := predOf(b), a
	if p == nil {
		p, other = predOf(a), b
	}
	if p == nil || len(in.Shape.DynamicDims) > 0 {
		return nil
	}
	zero := r.emit("broadcast", in.Shape, r.constant(tensor.New(in.Shape.Elem, []int64{})))
	zero.Dimensions = []int64{}
	return r.emit("select", in.Shape, p, other, zero)
}

// simplifyMultiply folds constant factors as HandleMultiply does, which
// rounds their product once instead of rounding after each factor:
// (A*C1)*C2 => A*(C1*C2), for constants C1, C2 in either order, or for
// scalar constants broadcast, in exactly that order. It returns nil when
// neither applies.
func (r *xlaRewriter) simplifyMultiply(a, b *hlo.Instruction, s hlo.Shape) (*hlo.Instruction, error) {
	var x, c1, c2 *hlo.Instruction
	isConst := func(i *hlo.Instruction) bool {
		return i.Opcode == "constant" && i.Literal != nil && i.Literal.Tensor != nil
	}
	scalarBcast := func(i *hlo.Instruction) *hlo.Instruction {
		if i.Opcode == "broadcast" && len(i.Operands) == 1 && isConst(i.Operands[0]) && i.Operands[0].Shape.NumElements() == 1 {
			return i.Operands[0]
		}
		return nil
	}
	switch {
	case a.Opcode == "multiply" && scalarBcast(b) != nil && scalarBcast(a.Operands[1]) != nil:
		x, c1, c2 = a.Operands[0], scalarBcast(a.Operands[1]), scalarBcast(b)
	default:
		inner, outer := a, b
		if !isConst(outer) {
			inner, outer = b, a
		}
		if inner.Opcode != "multiply" || !isConst(outer) {
			return nil, nil
		}
		x, c1 = inner.Operands[0], inner.Operands[1]
		if isConst(x) {
			x, c1 = c1, x
		}
		if isConst(x) || !isConst(c1) {
			return nil, nil
		}
		c2 = outer
	}
	v1, err := r.fold(c1)
	if err != nil {
		return nil, err
	}
	v2, err := r.fold(c2)
	if err != nil {
		return nil, err
	}
	if v1.Type != s.Elem || v2.Type != s.Elem || !sameDimsOrScalar(v1, v2) {
		return nil, nil
	}
	big := v1
	if v2.NumElements() > v1.NumElements() {
		big = v2
	}
	p, err := evalSingle(&hlo.Instruction{Name: "product", Opcode: "multiply", Shape: hlo.Shape{Elem: s.Elem, Dims: big.Dims}},
		[]*tensor.Tensor{v1, v2})
	if err != nil {
		return nil, err
	}
	k := r.constant(p)
	if p.NumElements() != s.NumElements() || len(p.Dims) != len(s.Dims) {
		k = r.emit("broadcast", s, k)
		k.Dimensions = []int64{}
	}
	return r.emit("multiply", s, x, k), nil
}

// sameDimsOrScalar reports whether two constants multiply elementwise
// without broadcasting: equal dims, both scalars.
func sameDimsOrScalar(a, b *tensor.Tensor) bool {
	return fmt.Sprint(a.Dims) == fmt.Sprint(b.Dims)
}

// constant emits a constant instruction holding v.
func (r *xlaRewriter) constant(v *tensor.Tensor) *hlo.Instruction {
	k := r.emit("constant", hlo.Shape{Elem: v.Type, Dims: v.Dims})
	k.Literal = &hlo.Literal{Tensor: v}
	r.consts[k] = v
	return k
}

func (r *xlaRewriter) divide(in *hlo.Instruction) (*hlo.Instruction, error) {
	t := in.Shape.Elem
	if !f32Computed(t) {
		return r.simplifyDivide(in.Operands[0], in.Operands[1], in.Shape, 0)
	}
	// Rewrite the f32 division XLA:CPU sees; keep the original when no rule
	// applies, so the new instructions are dropped.
	mark := len(r.out)
	s32 := hlo.Shape{Elem: dtype.F32, Dims: in.Shape.Dims}
	a := r.emit("convert", s32, in.Operands[0])
	b := r.widenChain(in.Operands[1])
	nv, err := r.simplifyDivide(a, b, s32, 0)
	if nv == nil || err != nil {
		r.out = r.out[:mark]
		return nil, err
	}
	return r.emit("convert", in.Shape, nv), nil
}

// widenChain converts x to f32 below its movement chain (convert commutes
// with broadcast and reshape; XLA sinks it), so that the division rules see
// broadcast(convert(B)) where the module has broadcast(B).
func (r *xlaRewriter) widenChain(x *hlo.Instruction) *hlo.Instruction {
	chain, base := movementChain(x, r.oneUse)
	w := r.emit("convert", hlo.Shape{Elem: dtype.F32, Dims: base.Shape.Dims}, base)
	if !r.oneUse(base) {
		r.uses[w] = 2 // keeps the one-use rule from applying, as for B itself
	}
	return r.cloneChain(chain, w)
}

// movementChain walks from x down through broadcast, reshape, transpose,
// bitcast and copy links, each read once (per oneUse; x itself may be read
// anywhere), to the first other instruction. It returns the links, outermost
// first, and that base.
func movementChain(x *hlo.Instruction, oneUse func(*hlo.Instruction) bool) ([]*hlo.Instruction, *hlo.Instruction) {
	var chain []*hlo.Instruction
	for isMovement(x.Opcode) && len(x.Operands) == 1 && (len(chain) == 0 || oneUse(x)) {
		chain = append(chain, x)
		x = x.Operands[0]
	}
	return chain, x
}

func isMovement(op string) bool {
	switch op {
	case "broadcast", "reshape", "transpose", "bitcast", "copy":
		return true
	}
	return false
}

// cloneChain rebuilds chain (outermost first) over a new base, keeping each
// link's dims and the base's element type.
func (r *xlaRewriter) cloneChain(chain []*hlo.Instruction, base *hlo.Instruction) *hlo.Instruction {
	x := base
	for i := len(chain) - 1; i >= 0; i-- {
		l := chain[i]
		n := *l
		n.Name = r.newName(l.Opcode)
		n.Shape = hlo.Shape{Elem: base.Shape.Elem, Dims: l.Shape.Dims, Layout: l.Shape.Layout}
		n.Operands = []*hlo.Instruction{x}
		n.ControlPredecessors = nil
		n.Parent = r.c
		r.out = append(r.out, &n)
		x = &n
	}
	return x
}

// simplifyDivide applies HandleDivide's float rules to a / b (of shape s)
// in its order, returning the replacement or nil. depth bounds the
// re-simplification of the divisions the rules create.
func (r *xlaRewriter) simplifyDivide(a, b *hlo.Instruction, s hlo.Shape, depth int) (*hlo.Instruction, error) {
	if depth > 8 {
		return nil, nil
	}
	mul := func(x, y *hlo.Instruction) (*hlo.Instruction, error) {
		if isOnes(x) {
			return y, nil // the A*1 => A rule
		}
		if !f32Computed(s.Elem) {
			if nv, err := r.simplifyMultiply(x, y, s); nv != nil || err != nil {
				return nv, err
			}
		}
		return r.emit("multiply", s, x, y), nil
	}
	div := func(x, y *hlo.Instruction) (*hlo.Instruction, error) {
		if nv, err := r.simplifyDivide(x, y, s, depth+1); nv != nil || err != nil {
			return nv, err
		}
		return r.emit("divide", s, x, y), nil
	}
	switch {
	case b.Opcode == "power" && len(b.Operands) == 2: // A/pow(B,C) => A*pow(B,-C)
		base, exp := b.Operands[0], b.Operands[1]
		neg := r.emit("negate", exp.Shape, exp)
		return mul(a, r.emit("power", base.Shape, base, neg))
	case b.Opcode == "rsqrt" && r.oneUse(b): // A/rsqrt(B) => A*sqrt(B)
		return mul(a, r.emit("sqrt", s, b.Operands[0]))
	case b.Opcode == "sqrt" && r.oneUse(b): // A/sqrt(B) => A*rsqrt(B)
		return mul(a, r.emit("rsqrt", s, b.Operands[0]))
	}
	if r.foldable(b) && !r.foldable(a) { // A/Const => A*(1/Const)
		chain, base := movementChain(b, func(*hlo.Instruction) bool { return true })
		v, err := r.fold(base)
		if err != nil {
			return nil, err
		}
		inv, err := reciprocal(v)
		if err != nil {
			return nil, err
		}
		return mul(a, r.cloneChain(chain, r.constant(inv)))
	}
	if chain, base := movementChain(b, r.oneUse); addsElements(chain, base) && !r.foldable(base) {
		// A/broadcast(B) => A*broadcast(1/B); XLA:CPU only, whatever
		// else reads B (measured: softmax's sum also squared in its
		// gradient, or returned).
		one := r.ones(base.Shape)
		inv, err := r.simplifyDivide(one, base, base.Shape, depth+1)
		if err != nil {
			return nil, err
		}
		if inv == nil {
			inv = r.emit("divide", base.Shape, one, base)
		}
		return mul(a, r.cloneChain(chain, inv))
	}
	switch {
	case a.Opcode == "divide" && b.Opcode == "divide": // (A/B)/(C/D) => (A*D)/(B*C)
		ad, err := mul(a.Operands[0], b.Operands[1])
		if err != nil {
			return nil, err
		}
		bc, err := mul(a.Operands[1], b.Operands[0])
		if err != nil {
			return nil, err
		}
		return div(ad, bc)
	case a.Opcode == "divide": // (A/B)/C => A/(B*C)
		bc, err := mul(a.Operands[1], b)
		if err != nil {
			return nil, err
		}
		return div(a.Operands[0], bc)
	case b.Opcode == "divide": // A/(B/C) => (A*C)/B
		ac, err := mul(a, b.Operands[1])
		if err != nil {
			return nil, err
		}
		return div(ac, b.Operands[0])
	}
	return nil, nil
}

// addsElements reports whether a movement chain broadcasts (its result has
// more elements than its base); XLA turns one that does not into a reshape.
func addsElements(chain []*hlo.Instruction, base *hlo.Instruction) bool {
	return len(chain) > 0 && chain[0].Shape.NumElements() > base.Shape.NumElements()
}

// ones returns a broadcast of the constant 1 of shape s.
func (r *xlaRewriter) ones(s hlo.Shape) *hlo.Instruction {
	one, _ := castTensor(scalarF64(1), s.Elem) // 1 is exact in every float type
	b := r.emit("broadcast", s, r.constant(one))
	b.Dimensions = []int64{}
	return b
}

func scalarF64(v float64) *tensor.Tensor {
	t := tensor.New(dtype.F64, nil)
	t.F64()[0] = v
	return t
}

// isOnes reports whether x is a constant 1 or a broadcast of one.
func isOnes(x *hlo.Instruction) bool {
	for x.Opcode == "broadcast" && len(x.Operands) == 1 {
		x = x.Operands[0]
	}
	if x.Opcode != "constant" || x.Literal == nil || x.Literal.Tensor == nil || x.Literal.Tensor.Type != x.Shape.Elem {
		return false
	}
	t := x.Literal.Tensor
	if t.NumElements() != 1 {
		return false
	}
	one, err := castTensor(scalarF64(1), t.Type)
	return err == nil && string(one.Data) == string(t.Data)
}

// foldOps are the ops whose constant operands XLA folds and whose folding
// the evaluator reproduces exactly (correctly rounded arithmetic and data
// movement; not transcendental functions, where HloEvaluator's libm and
// XLA:CPU's kernels differ).
var foldOps = map[string]bool{
	"broadcast": true, "reshape": true, "transpose": true, "bitcast": true, "copy": true, "slice": true,
	"convert": true, "add": true, "subtract": true, "multiply": true, "divide": true, "negate": true,
	"sqrt": true, "abs": true, "maximum": true, "minimum": true,
}

// foldable reports whether x is computed from constants only.
func (r *xlaRewriter) foldable(x *hlo.Instruction) bool {
	if x.Opcode == "constant" {
		return x.Literal != nil && x.Literal.Tensor != nil
	}
	if !foldOps[x.Opcode] || len(x.Called) > 0 || !x.Shape.IsArray() {
		return false
	}
	for _, op := range x.Operands {
		if !r.foldable(op) {
			return false
		}
	}
	return true
}

// fold evaluates a foldable instruction.
func (r *xlaRewriter) fold(x *hlo.Instruction) (*tensor.Tensor, error) {
	if v, ok := r.consts[x]; ok {
		return v, nil
	}
	if x.Opcode == "constant" {
		return x.Literal.Tensor, nil
	}
	args := make([]*tensor.Tensor, len(x.Operands))
	for i, op := range x.Operands {
		v, err := r.fold(op)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	v, err := evalSingle(x, args)
	if err != nil {
		return nil, fmt.Errorf("folding constant %%%s: %w", x.Name, err)
	}
	r.consts[x] = v
	return v, nil
}

// reciprocal computes 1/v in v's type with the evaluator's divide, which
// rounds f16 through f32 as Eigen's half does.
func reciprocal(v *tensor.Tensor) (*tensor.Tensor, error) {
	one, err := castTensor(scalarF64(1), v.Type)
	if err != nil {
		return nil, err
	}
	s := hlo.Shape{Elem: v.Type, Dims: v.Dims}
	b := &hlo.Instruction{Name: "one", Opcode: "broadcast", Shape: s, Dimensions: []int64{}}
	ones, err := evalSingle(b, []*tensor.Tensor{one})
	if err != nil {
		return nil, err
	}
	return evalSingle(&hlo.Instruction{Name: "reciprocal", Opcode: "divide", Shape: s}, []*tensor.Tensor{ones, v})
}

// evalSingle evaluates one instruction like tmpl (opcode, shape and
// attributes; not its operands) on array arguments.
func evalSingle(tmpl *hlo.Instruction, args []*tensor.Tensor) (*tensor.Tensor, error) {
	c := &hlo.Computation{Name: "fold", IsEntry: true}
	vals := make([]eval.Value, len(args))
	for i, a := range args {
		p := &hlo.Instruction{Name: fmt.Sprintf("p%d", i), Opcode: "parameter", ParameterNumber: int64(i),
			Shape: hlo.Shape{Elem: a.Type, Dims: a.Dims}, Parent: c}
		c.Params = append(c.Params, p)
		c.Instructions = append(c.Instructions, p)
		vals[i] = eval.ArrayValue(a)
	}
	in := *tmpl
	in.Operands, in.ControlPredecessors, in.Parent = c.Params, nil, c
	in.Shape.Layout = nil
	c.Instructions = append(c.Instructions, &in)
	c.Root = &in
	m := &hlo.Module{Name: "fold", Computations: []*hlo.Computation{c}, Entry: c}
	v, err := eval.Evaluate(m, vals, eval.Options{})
	if err != nil {
		return nil, err
	}
	if v.T == nil {
		return nil, fmt.Errorf("%s did not produce an array", tmpl.Opcode)
	}
	return v.T, nil
}

// --- multiply-add contraction ---

// contractF16 is whether f16 multiply-adds contract too: XLA:CPU computes
// f16 in f16, and LLVM forms an f16 FMA (VFMADD*PH, one rounding) only where
// the host has AVX512-FP16; elsewhere f16 arithmetic is promoted to f32 and
// rounded after every op (measured with --xla_cpu_max_isa=AVX2). A variable,
// so that tests can check both hosts.
var contractF16 = hostcpu.X86.AVX512FP16

// contractOps are the links through which a multiply still reaches an add
// in the same basic block of XLA:CPU's fused loop (index remapping only).
var contractOps = map[string]bool{"reshape": true, "transpose": true, "slice": true, "bitcast": true, "copy": true}

func (r *xlaRewriter) contract(in *hlo.Instruction) (*hlo.Instruction, error) {
	t := in.Shape.Elem
	if (in.Opcode != "add" && in.Opcode != "subtract") || !in.Shape.IsArray() || (t != dtype.F32 && t != dtype.F64 && (t != dtype.F16 || !contractF16)) {
		return nil, nil
	}
	if r.ynn.isMember(in) {
		return nil, nil // YNNPACK's multiply_add rounds the product
	}
	slots := [2]int{0, 1}
	if in.Opcode == "add" && r.product(in.Operands[0]) && r.product(in.Operands[1]) && rankedLower(in) {
		slots = [2]int{1, 0} // LLVM's Reassociate puts the lower rank first
	}
	for _, slot := range slots {
		x := in.Operands[slot]
		reader := in
		var chain []*hlo.Instruction
		negated := false
		for {
			if contractOps[x.Opcode] && len(x.Operands) == 1 && r.oneUse(x) {
				chain = append(chain, x)
				reader, x = x, x.Operands[0]
				continue
			}
			// A negated product contracts too (r.negatedProduct).
			if r.negatedProduct(x, in.Operands[1-slot]) {
				negated = !negated
				reader, x = x, x.Operands[0]
				continue
			}
			// XLA folds a select on a constant predicate away before fusing
			// (jnp.var's n > ddof: var + eps contracts its 1/n product).
			if s := eval.YNNSelected(x); s != nil && r.oneUse(x) && s.Shape.Elem == t && equalShapeDims(s, x) {
				reader, x = x, s
				continue
			}
			break
		}
		if x.Opcode != "multiply" || x.Shape.Elem != t || !(r.oneUse(x) || r.copiedForLoop(x, reader)) || len(x.Operands) != 2 || r.ynn.isMember(x) ||
			r.products[productKey(x)] > 1 && !r.mergedOneUse[productKey(x)] || foldsIntoSelect64(x, r.oneLiveUse) {
			continue
		}
		if in.Operands[0] == in.Operands[1] {
			return nil, nil // x*y + x*y reads the product twice
		}
		a := r.cloneChain(chain, x.Operands[0])
		b := r.cloneChain(chain, x.Operands[1])
		if negated {
			a = r.emit("negate", a.Shape, a)
		}
		c := in.Operands[1-slot]
		if in.Opcode == "subtract" {
			if slot == 0 { // x*y - c = fma(x, y, -c)
				c = r.emit("negate", c.Shape, c)
			} else { // c - x*y = fma(-x, y, c)
				a = r.emit("negate", a.Shape, a)
			}
		}
		f := r.emit("custom-call", in.Shape, a, b, c)
		f.CustomCallTarget = eval.FMATarget
		return f, nil
	}
	return nil, nil
}

// copiedForLoop reports whether XLA gives the loop fusion of reader its own
// copy of product x: every other reader of x is in a YNNPACK fusion, which
// reads x materialized, so the loop fusion's copy has one use (a layer
// norm's backward sums g·rsqrt in a YNNPACK reduce and adds it to the
// gradient).
func (r *xlaRewriter) copiedForLoop(x, reader *hlo.Instruction) bool {
	if r.ynn == nil || r.isNew(x) {
		return false
	}
	if r.readers == nil {
		r.readers = map[*hlo.Instruction][]*hlo.Instruction{}
		for _, u := range r.c.Instructions {
			for _, o := range u.Operands {
				r.readers[o] = append(r.readers[o], u)
			}
		}
	}
	others := 0
	for _, u := range r.readers[x] {
		if u == reader {
			continue
		}
		if !r.ynn.isMember(u) && (u.Opcode != "custom-call" || u.CustomCallTarget != eval.YNNTarget) {
			return false
		}
		others++
	}
	return others > 0
}

// negatedProduct reports whether x, an operand of an add whose other
// operand is other (nil: any), is a negated product that contracts, as
// measured on jax 0.10.2: LLVM moves the sign of -(P) into a negative
// constant factor of P when it has one (the tanh-free gelu's backward,
// -(x·(-0.564)·e·0.707) + erfc·0.5: then the add of two products ranks as
// any other); otherwise the add is other - P, which fuses other when it is
// a product and P when it is not (-(a·b·0.7) + c·d fuses c·d; -(a·b) + c
// is fma(-a, b, c)).
func (r *xlaRewriter) negatedProduct(x, other *hlo.Instruction) bool {
	if x.Opcode != "negate" || len(x.Operands) != 1 || !r.oneUse(x) || x.Shape.Elem != x.Operands[0].Shape.Elem {
		return false
	}
	if signAbsorbed(x.Operands[0]) {
		return true
	}
	return other != nil && !r.product(other)
}

// signAbsorbed reports whether the product p has a negative scalar
// constant factor (through its multiplies) that takes a negation.
func signAbsorbed(p *hlo.Instruction) bool {
	for depth := 0; p.Opcode == "multiply" && len(p.Operands) == 2 && depth < 16; depth++ {
		var next *hlo.Instruction
		for _, o := range p.Operands {
			if v, ok := scalarConstValue(o); ok {
				if v < 0 {
					return true
				}
				continue
			}
			if o.Opcode == "multiply" && next == nil {
				next = o
			}
		}
		if next == nil {
			return false
		}
		p = next
	}
	return false
}

// scalarConstValue is the value of a scalar constant, or of a broadcast of
// one.
func scalarConstValue(x *hlo.Instruction) (float64, bool) {
	for (x.Opcode == "broadcast" || x.Opcode == "reshape") && len(x.Operands) == 1 {
		x = x.Operands[0]
	}
	if x.Opcode != "constant" || x.Literal == nil || x.Literal.Tensor == nil || x.Literal.Tensor.NumElements() != 1 {
		return 0, false
	}
	switch t := x.Literal.Tensor; t.Type {
	case dtype.F32:
		return float64(t.F32()[0]), true
	case dtype.F64:
		return t.F64()[0], true
	}
	return 0, false
}

func equalShapeDims(a, b *hlo.Instruction) bool {
	if len(a.Shape.Dims) != len(b.Shape.Dims) {
		return false
	}
	for i := range a.Shape.Dims {
		if a.Shape.Dims[i] != b.Shape.Dims[i] {
			return false
		}
	}
	return true
}

// productKey names a multiply by its operands (in either order) and shape.
func productKey(m *hlo.Instruction) string {
	a, b := m.Operands[0].Name, m.Operands[1].Name
	if a > b {
		a, b = b, a
	}
	return fmt.Sprintf("%s*%s:%v%v", a, b, m.Shape.Elem, m.Shape.Dims)
}

func productCounts(c *hlo.Computation) map[string]int {
	n := map[string]int{}
	for _, in := range c.Instructions {
		if in.Opcode == "multiply" && len(in.Operands) == 2 {
			n[productKey(in)]++
		}
	}
	return n
}

// productsMergedOneUse returns the productKeys of c whose multiplies (two or
// more) each have exactly one use, in distinct instructions that are all
// the same expression (cseValue): after XLA's CSE merges the expressions and
// the multiplies, the one product has one use. jax traces a repeated
// Python expression (adam's 0.9*m + 0.1*g, once per output) this way.
func productsMergedOneUse(c *hlo.Computation) map[string]bool {
	users := map[*hlo.Instruction][]*hlo.Instruction{}
	for _, in := range c.Instructions {
		for _, o := range in.Operands {
			users[o] = append(users[o], in)
		}
	}
	byKey := map[string][]*hlo.Instruction{}
	for _, in := range c.Instructions {
		if in.Opcode == "multiply" && len(in.Operands) == 2 {
			byKey[productKey(in)] = append(byKey[productKey(in)], in)
		}
	}
	memo := map[*hlo.Instruction]string{}
	out := map[string]bool{}
	for key, ms := range byKey {
		if len(ms) < 2 {
			continue
		}
		ok := true
		seen := map[*hlo.Instruction]bool{}
		value := ""
		for _, m := range ms {
			us := users[m]
			if len(us) != 1 || seen[us[0]] || m == c.Root {
				ok = false
				break
			}
			seen[us[0]] = true
			v := cseValue(us[0], memo)
			if value == "" {
				value = v
			} else if v != value {
				ok = false
				break
			}
		}
		out[key] = ok
	}
	return out
}

// cseValueOps are the opcodes cseValue looks through: their value is
// fixed by the opcode, the shape, the dimensions and the operands' values.
var cseValueOps = map[string]bool{
	"add": true, "subtract": true, "multiply": true, "divide": true, "negate": true,
	"maximum": true, "minimum": true, "reshape": true, "bitcast": true, "copy": true, "transpose": true,
}

// cseValue names what in computes, as far as XLA's CSE would merge two
// instructions: the same opcode, shape, dimensions and operand values, in
// order. Anything else is itself alone.
func cseValue(in *hlo.Instruction, memo map[*hlo.Instruction]string) string {
	if v, ok := memo[in]; ok {
		return v
	}
	v := "#" + in.Name
	if cseValueOps[in.Opcode] && len(in.Called) == 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "%s:%v%v%v(", in.Opcode, in.Shape.Elem, in.Shape.Dims, in.Dimensions)
		for _, o := range in.Operands {
			b.WriteString(cseValue(o, memo))
			b.WriteByte(',')
		}
		b.WriteByte(')')
		v = b.String()
	}
	memo[in] = v
	return v
}

// contractRank models the rank LLVM's Reassociate pass gives an add operand
// in XLA:CPU's fused loop body: every pass runs canonicalizeOperands on a
// commutative instruction, even without fast-math flags, swapping the
// operands when the right one has the lower rank, and the DAG combiner then
// fuses operand 0's multiply first. A load (a parameter or anything computed
// outside the fusion, a broadcast of one) ranks by the order the loads were
// emitted, modelled as the order a depth-first walk from the add (operand 0
// first) reaches them; a constant ranks 0; every other instruction ranks one
// more than its highest operand (negate and index remapping add nothing).
func rankedLower(add *hlo.Instruction) bool {
	r0, r1 := contractRanks(add)
	return r1 < r0
}

// product reports whether x is a single-use multiply, directly or through
// single-use contractOps links (worth ranking only when both operands are).
func (r *xlaRewriter) product(x *hlo.Instruction) bool {
	for (contractOps[x.Opcode] || r.negatedProduct(x, nil) && signAbsorbed(x.Operands[0])) && len(x.Operands) == 1 && r.oneUse(x) {
		x = x.Operands[0]
	}
	return x.Opcode == "multiply" && r.oneUse(x)
}

// The walk ranks values as XLA's CSE leaves them (rankKey): jax traces a
// repeated Python expression (the GRU's z in (1-z)*h + z*hh) as two copies,
// which CSE merges before fusion, so the second copy's loads were already
// emitted and rank as the first's.
func contractRanks(add *hlo.Instruction) (int, int) {
	loads := map[string]int{}
	memo := map[string]int{}
	keys := map[*hlo.Instruction]string{}
	var rank func(x *hlo.Instruction) int
	rank = func(x *hlo.Instruction) int {
		k := rankKey(x, keys)
		if v, ok := memo[k]; ok {
			return v
		}
		v := 0
		switch {
		case x.Opcode == "constant" || (x.Opcode == "broadcast" && len(x.Operands) == 1 && isConstantTree(x.Operands[0])):
		case x.Opcode == "custom-call" && x.CustomCallTarget == eval.FMATarget && len(x.Operands) == 3:
			// An add contracted already: in the loop body it is still
			// the multiply and the add (LLVM fuses them after ranking).
			v = max(max(rank(x.Operands[0]), rank(x.Operands[1]))+1, rank(x.Operands[2])) + 1
		case !rankedElementwise[x.Opcode] && !contractOps[x.Opcode] && x.Opcode != "negate":
			if _, ok := loads[k]; !ok {
				loads[k] = len(loads) + 1
			}
			v = loads[k]
		default:
			for _, o := range x.Operands {
				v = max(v, rank(o))
			}
			if rankedElementwise[x.Opcode] {
				v += max(1, inlinedDepth[x.Opcode])
			}
		}
		memo[k] = v
		return v
	}
	r0 := rank(add.Operands[0])
	return r0, rank(add.Operands[1])
}

// rankKeyOps are the opcodes rankKey looks through: side-effect free, their
// value fixed by the opcode, the shape, the attributes rankKey spells out
// and the operands' values.
var rankKeyOps = map[string]bool{
	"broadcast": true, "dot": true, "negate": true, "reshape": true, "bitcast": true, "copy": true,
	"transpose": true, "slice": true, "exponential-minus-one": true, "log-plus-one": true, "erf": true,
}

// rankKey names what x computes as far as XLA's CSE would merge two
// instructions; anything else is itself alone.
func rankKey(x *hlo.Instruction, memo map[*hlo.Instruction]string) string {
	if v, ok := memo[x]; ok {
		return v
	}
	v := "#" + x.Name
	if (rankKeyOps[x.Opcode] || rankedElementwise[x.Opcode] || cseValueOps[x.Opcode]) && len(x.Called) == 0 && x.Shape.IsArray() {
		var b strings.Builder
		fmt.Fprintf(&b, "%s:%v%v%v%v%v%s%s%v(", x.Opcode, x.Shape.Elem, x.Shape.Dims, x.Dimensions, x.Slice,
			x.DotDims, x.ComparisonDirection, x.ComparisonType, x.ExtraAttrs)
		for _, o := range x.Operands {
			b.WriteString(rankKey(o, memo))
			b.WriteByte(',')
		}
		b.WriteByte(')')
		v = b.String()
	}
	memo[x] = v
	return v
}

// inlinedDepth is how much an op XLA:CPU expands inline adds to the rank of
// its result: the longest chain of LLVM instructions from its operand to
// its value in the fused loop (counted in jaxlib 0.10.2's optimized IR of
// the op alone). A GRU's (1-z)*h + z*tanh(·) fuses z*tanh(·), whose tanh
// chain (21) is shorter than the exp chain under z (28); counting each as
// one instruction had tied the two products.
var inlinedDepth = map[string]int{
	"exponential": 28, "tanh": 21, "logistic": 30, "log": 28, "log-plus-one": 28,
	"exponential-minus-one": 32, "erf": 9, "rsqrt": 18,
}

// rankedElementwise are the elementwise opcodes fused into XLA:CPU's loop
// body, each counted as one LLVM instruction for contractRanks (or
// inlinedDepth).
var rankedElementwise = map[string]bool{
	"add": true, "subtract": true, "multiply": true, "divide": true, "abs": true, "sqrt": true,
	"rsqrt": true, "maximum": true, "minimum": true, "exponential": true, "log": true,
	"tanh": true, "logistic": true, "power": true, "select": true, "compare": true,
	"convert": true, "floor": true, "ceil": true, "sign": true, "clamp": true,
	"log-plus-one": true, "exponential-minus-one": true, "erf": true,
}

func isConstantTree(x *hlo.Instruction) bool {
	for x.Opcode == "broadcast" || x.Opcode == "reshape" {
		if len(x.Operands) != 1 {
			return false
		}
		x = x.Operands[0]
	}
	return x.Opcode == "constant"
}

// scanBaseLength is the base_length XLA:CPU gives its ReduceWindowRewriter.
const scanBaseLength = 16

// scanTree is XLA's ReduceWindowRewriter for cumulative windows
// (xla/hlo/transforms/simplifiers/reduce_window_rewriter.cc): a
// single-input reduce-window whose only non-trivial window dimension d has
// size n = the operand's length there, n > 16, stride 1, no dilation or
// reversal, and padding (n-1 or n, 0) (a forward inclusive or exclusive
// scan) or (0, n-1 or n) (reverse) is computed as a two-level tree, which
// folds in another order than the window does and so rounds differently:
// d moved last (swapped with the last dimension), padded with the init
// value to a multiple of 16, reshaped to [..., m, 16], scanned within each
// block of 16, the blocks' totals (last column, first for reverse) scanned
// exclusively over m (itself rewritten the same way while m > 16), and the
// two combined by the reducer as reducer(block scan, broadcast total); then
// reshaped, transposed back, the padding sliced off, and an exclusive scan
// padded by one init value. Returns nil when in is not such a window.
func (r *xlaRewriter) scanTree(in *hlo.Instruction) *hlo.Instruction {
	if in.Opcode != "reduce-window" || len(in.Operands) != 2 || len(in.Called) != 1 || in.Shape.Elem == dtype.Tuple {
		return nil
	}
	x, init, red := in.Operands[0], in.Operands[1], in.Called[0]
	rank := len(x.Shape.Dims)
	if len(in.Window) != rank || len(in.Shape.Dims) != rank || x.Shape.DynamicDims != nil || red.Root == nil {
		return nil
	}
	d := -1
	for i, w := range in.Window {
		trivial := w.Size == 1 && w.Stride == 1 && w.PadLow == 0 && w.PadHigh == 0 && w.BaseDilation <= 1 && w.WindowDilation <= 1
		if !trivial {
			if d >= 0 {
				return nil
			}
			d = i
		}
	}
	if d < 0 {
		return nil
	}
	n := x.Shape.Dims[d]
	w := in.Window[d]
	if n <= scanBaseLength {
		return nil
	}
	forward := (w.PadLow == n-1 || w.PadLow == n) && w.PadHigh == 0
	reverse := (w.PadHigh == n-1 || w.PadHigh == n) && w.PadLow == 0
	if w.Stride != 1 || w.Size != n || (!forward && !reverse) || w.WindowReversal || w.BaseDilation > 1 || w.WindowDilation > 1 {
		return nil
	}
	exclusive := (forward && w.PadLow == n) || (!forward && w.PadHigh == n)
	elem := in.Shape.Elem
	shape := func(dims ...int64) hlo.Shape { return hlo.Shape{Elem: elem, Dims: dims} }
	with := func(dims []int64, i int, v int64) []int64 {
		out := append([]int64(nil), dims...)
		out[i] = v
		return out
	}
	last := rank - 1
	src := x
	perm := make([]int64, rank)
	for i := range perm {
		perm[i] = int64(i)
	}
	if d != last {
		perm[d], perm[last] = int64(last), int64(d)
		dims := append([]int64(nil), x.Shape.Dims...)
		dims[d], dims[last] = dims[last], dims[d]
		src = r.emit("transpose", shape(dims...), src)
		src.Dimensions = append([]int64(nil), perm...)
	}
	const b = scanBaseLength
	padded := (n + b - 1) / b * b
	if padded != n {
		p := r.emit("pad", shape(with(src.Shape.Dims, last, padded)...), src, init)
		p.Padding = make([]hlo.PadDim, rank)
		p.Padding[last].High = padded - n
		src = p
	}
	m := padded / b
	tiledDims := append(with(src.Shape.Dims, last, m), b)
	tiled := r.emit("reshape", shape(tiledDims...), src)
	win := make([]hlo.WindowDim, rank+1)
	for i := range win {
		win[i] = hlo.WindowDim{Size: 1, Stride: 1, BaseDilation: 1, WindowDilation: 1}
	}
	win[rank].Size = b
	if forward {
		win[rank].PadLow = b - 1
	} else {
		win[rank].PadHigh = b - 1
	}
	blocks := r.emit("reduce-window", shape(tiledDims...), tiled, init)
	blocks.Window, blocks.Called = win, []*hlo.Computation{red}

	col := r.emit("slice", shape(with(tiledDims, rank, 1)...), blocks)
	col.Slice = make([]hlo.SliceDim, rank+1)
	for i, s := range tiledDims {
		col.Slice[i] = hlo.SliceDim{Start: 0, Limit: s, Stride: 1}
	}
	if forward {
		col.Slice[rank].Start = b - 1
	} else {
		col.Slice[rank].Limit = 1
	}
	totals := r.emit("reshape", shape(tiledDims[:rank]...), col)

	// The exclusive scan of the totals, a reduce-window of m over m+1
	// results, rewritten again while m > 16 (XLA runs the pass to a fixed
	// point).
	inner := &hlo.Instruction{Opcode: "reduce-window", Shape: shape(with(totals.Shape.Dims, last, m+1)...),
		Operands: []*hlo.Instruction{totals, init}, Called: []*hlo.Computation{red}, Parent: r.c}
	inner.Window = make([]hlo.WindowDim, rank)
	for i := range inner.Window {
		inner.Window[i] = hlo.WindowDim{Size: 1, Stride: 1, BaseDilation: 1, WindowDilation: 1}
	}
	inner.Window[last].Size = m
	if forward {
		inner.Window[last].PadLow = m
	} else {
		inner.Window[last].PadHigh = m
	}
	scanned := r.scanTree(inner)
	if scanned == nil {
		inner.Name = r.newName("reduce-window")
		r.out = append(r.out, inner)
		scanned = inner
	}
	excl := r.emit("slice", totals.Shape, scanned)
	excl.Slice = make([]hlo.SliceDim, rank)
	for i, s := range totals.Shape.Dims {
		excl.Slice[i] = hlo.SliceDim{Start: 0, Limit: s, Stride: 1}
	}
	if !forward {
		excl.Slice[last] = hlo.SliceDim{Start: 1, Limit: m + 1, Stride: 1}
	}
	bc := r.emit("broadcast", shape(tiledDims...), excl)
	bc.Dimensions = make([]int64, rank)
	for i := range bc.Dimensions {
		bc.Dimensions[i] = int64(i)
	}
	out := r.combine(red, shape(tiledDims...), blocks, bc)
	out = r.emit("reshape", src.Shape, out)
	if d != last {
		dims := append([]int64(nil), src.Shape.Dims...)
		dims[d], dims[last] = dims[last], dims[d]
		out = r.emit("transpose", shape(dims...), out)
		out.Dimensions = perm
	}
	if padded != n {
		s := r.emit("slice", shape(x.Shape.Dims...), out)
		s.Slice = make([]hlo.SliceDim, rank)
		for i, v := range x.Shape.Dims {
			s.Slice[i] = hlo.SliceDim{Start: 0, Limit: v, Stride: 1}
		}
		out = s
	}
	if exclusive {
		p := r.emit("pad", shape(in.Shape.Dims...), out, init)
		p.Padding = make([]hlo.PadDim, rank)
		if forward {
			p.Padding[d].Low = 1
		} else {
			p.Padding[d].High = 1
		}
		out = p
	}
	out.Shape.Layout = in.Shape.Layout
	return out
}

// combine applies reducer red elementwise to a and b, as a map over it, or,
// when red is one elementwise op of its parameters, as that op (XLA's
// MapInliner).
func (r *xlaRewriter) combine(red *hlo.Computation, s hlo.Shape, a, b *hlo.Instruction) *hlo.Instruction {
	args := []*hlo.Instruction{a, b}
	root := red.Root
	if len(red.Instructions) == 3 && root.Opcode != "parameter" && len(root.Operands) == 2 && binaryOps[root.Opcode] {
		ops := make([]*hlo.Instruction, len(root.Operands))
		for i, p := range root.Operands {
			if p.Opcode != "parameter" || p.ParameterNumber < 0 || p.ParameterNumber > 1 {
				ops = nil
				break
			}
			ops[i] = args[p.ParameterNumber]
		}
		if ops != nil {
			ni := *root
			ni.Name, ni.Parent, ni.Operands, ni.Shape, ni.Metadata = r.newName(root.Opcode), r.c, ops, s, nil
			ni.ControlPredecessors = nil
			r.out = append(r.out, &ni)
			return &ni
		}
	}
	mp := r.emit("map", s, a, b)
	mp.Called = []*hlo.Computation{red}
	mp.Dimensions = make([]int64, len(s.Dims))
	for i := range mp.Dimensions {
		mp.Dimensions[i] = int64(i)
	}
	return mp
}

// scanWindows is the rewrite step running scanTree.
func (r *xlaRewriter) scanWindows(in *hlo.Instruction) (*hlo.Instruction, error) {
	if t := r.scanTree(in); t != nil {
		return t, nil
	}
	return nil, nil
}

// binaryOps are the elementwise binary opcodes combine writes out directly.
var binaryOps = map[string]bool{
	"add": true, "subtract": true, "multiply": true, "divide": true, "maximum": true, "minimum": true,
	"and": true, "or": true, "xor": true, "power": true, "remainder": true, "atan2": true,
}
