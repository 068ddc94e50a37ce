package eval

// Which instructions XLA:CPU (jaxlib 0.10.2) hands to YNNPACK in a
// __ynn_fusion, predicted on an unoptimized computation. Inside such a
// fusion YNNPACK computes the elementwise ops itself (ynn_math.go), not
// XLA's emitter, so the golden driver rewrites them (engine/golden/ynn.go).
//
// The model is XLA's LibraryRewriter with the YnnMatcher
// (xla/backends/cpu/transforms/library_rewriter.cc, ynn_matcher.h,
// xla/backends/cpu/ynn_support.cc), with the op lists measured on jaxlib
// 0.10.2 (jax.jit(f).lower(...).compile().as_text()):
//
//   - Only reductions start a fusion (fuse_reduce; dots and convolutions are
//     fused one by one by another pass and never grow; elementwise ops never
//     start one): a reduce (or a non-overlapping reduce-window) of one
//     operand with an add, maximum or minimum reducer of two parameters,
//     f32/f64 (add), or u8/s8/bf16/f16/f32/f64 (max/min), "preferred" by
//     YNNPACK: the result or an operand holds 4096 or more elements.
//     Starters are taken from the root upwards (reverse post order).
//   - A fusion grows breadth first, to a fixed point: an operand joins when
//     every one of its users is already in the fusion, the fusion's single
//     user (its root's, when it has exactly one) joins downwards. What may
//     join: broadcasts (dimensions in order), reshapes and bitcasts that keep
//     the element type, pads without interior padding, iotas (f32, s32) and
//     constants, whatever their size; elementwise ops and reductions only
//     when preferred (4096+ elements in the result or an operand), with
//     result and operands f64, f32, bf16, s8 or u8, among add, subtract,
//     multiply, divide, maximum, minimum, power, exponential,
//     exponential-minus-one, log, log-plus-one, tanh, erf, logistic
//     (expanded by XLA first), sqrt, rsqrt, negate, abs, sign, floor, ceil,
//     round-nearest-even and convert. Not: sine, cosine, tan, cbrt, atan2,
//     remainder, compare, select, clamp, slice, concatenate, reverse,
//     transpose, copy, is-finite, converts to or from other types.
//   - A dot XLA gives to YNNPACK (ynnRoute's conditions) is a fusion of its
//     own; a growing fusion that reaches it, or another reduction's fusion,
//     merges with it.
//
// XLA runs this after its algebraic simplifier and CSE; the prediction runs
// on a view of the computation with identical instructions merged (same
// opcode, shape, attributes and operands), so that jax's repeated
// expressions (layer norm's two x - mean) count as one, as in XLA.

import (
	"fmt"
	"math"
	"strings"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// YNNFusionKind is the fusion_config kind of XLA:CPU's YNNPACK fusions.
const YNNFusionKind = "__ynn_fusion"

// IsYNNFusion reports whether in is a fusion XLA:CPU hands to YNNPACK (in
// an optimized module: kind=kCustom, backend_config fusion_config kind
// "__ynn_fusion").
func IsYNNFusion(in *hlo.Instruction) bool {
	return in != nil && in.Opcode == "fusion" && strings.Contains(in.BackendConfig, YNNFusionKind)
}

// YNNFusion is one predicted __ynn_fusion: its instructions and its root
// (the value it returns).
type YNNFusion struct {
	Members map[*hlo.Instruction]bool
	Root    *hlo.Instruction
	// WideDotOperands are the dots outside the fusion that read an operand
	// (by index) as the fusion's f32 value, unrounded: XLA's widening of a
	// bf16 dot operand it copies joined the fusion (ynnGraph.copiedOperands).
	WideDotOperands map[*hlo.Instruction][2]bool
}

// YNNMinElements is the size from which YNNPACK "prefers" an op.
const YNNMinElements = 4096

// PredictYNNFusions returns, for each instruction of c that XLA:CPU would
// put in a __ynn_fusion, that fusion. c is an unoptimized computation (no
// fusions yet); instructions CSE would merge share their fusion.
func PredictYNNFusions(c *hlo.Computation) map[*hlo.Instruction]*YNNFusion {
	if c == nil || len(c.Instructions) == 0 {
		return nil
	}
	g := newYNNGraph(c)
	g.run()
	out := map[*hlo.Instruction]*YNNFusion{}
	byID := map[*ynnGroup]*YNNFusion{}
	for _, in := range c.Instructions {
		n := g.fnode[in]
		if n == nil {
			n = g.node[in]
		}
		if n == nil {
			continue // dead
		}
		f := n.group
		if f == nil {
			continue
		}
		for f.mergedInto != nil {
			f = f.mergedInto
		}
		if f.dotOnly() {
			continue // a dot alone: dot_ynn.go's business
		}
		yf := byID[f]
		if yf == nil {
			yf = &YNNFusion{Members: map[*hlo.Instruction]bool{}}
			byID[f] = yf
		}
		yf.Members[in] = true
		out[in] = yf
	}
	for n, uses := range g.dotWiden {
		f := n.groupOf()
		if f == nil || byID[f] == nil {
			continue
		}
		yf := byID[f]
		if yf.WideDotOperands == nil {
			yf.WideDotOperands = map[*hlo.Instruction][2]bool{}
		}
		for _, u := range uses {
			w := yf.WideDotOperands[u.dot]
			w[u.i] = true
			yf.WideDotOperands[u.dot] = w
		}
	}
	for f, yf := range byID {
		for _, in := range c.Instructions {
			if g.node[in] == f.root || g.fnode[in] == f.root {
				yf.Root = in
				if in == c.Root {
					break
				}
			}
		}
	}
	return out
}

// ynnNode is one CSE class of instructions.
type ynnNode struct {
	in       *hlo.Instruction // the class's first instruction
	operands []*ynnNode
	users    []*ynnNode // distinct
	group    *ynnGroup
	order    int // post order position
}

type ynnGroup struct {
	members    map[*ynnNode]bool
	root       *ynnNode
	mergedInto *ynnGroup
	dot        bool // started as a lone YNNPACK dot
}

func (f *ynnGroup) dotOnly() bool { return f.dot && len(f.members) == 1 }

type ynnGraph struct {
	c     *hlo.Computation
	node  map[*hlo.Instruction]*ynnNode // an instruction's value
	fnode map[*hlo.Instruction]*ynnNode // a bf16 op's f32 computation
	nodes []*ynnNode                    // distinct, in computation order
	root  *ynnNode
	// dotWiden are the f32 widenings of bf16 dot operands that XLA copies
	// (copiedOperands): which dot and operand each is.
	dotWiden map[*ynnNode][]ynnDotOperand
}

type ynnDotOperand struct {
	dot *hlo.Instruction
	i   int
}

// copiedOperands puts XLA's copy between a YNNPACK dot and each operand it
// reads through a transposed copy of its own (xlaDotLayout: jax's
// dot_product_attention layouts): a transpose, which no fusion takes, so a
// fusion producing the operand stops there and one reaching the dot does
// not grow through it into the operand. A bf16 dot is an f32 dot between
// converts (float normalization), and the operand's widening comes before
// the copy: it joins the producer's fusion like any convert, and YNNPACK
// then drops the f32 -> bf16 -> f32 pair (the dot reads the unrounded f32
// value, measured: dot_product_attention on bf16).
func (g *ynnGraph) copiedOperands(dot *hlo.Instruction, ops []*ynnNode, add func(*hlo.Instruction, []*ynnNode) *ynnNode) {
	p, err := planDot(dot.Operands[0].Shape.Dims, dot.Operands[1].Shape.Dims, dot.DotDims)
	if err != nil {
		return
	}
	_, _, lCopy, rCopy := xlaDotLayout(p, dot.Operands[0], dot.Operands[1])
	for i, copied := range []bool{lCopy, rCopy} {
		o := dot.Operands[i]
		if !copied || ops[i] == nil || !o.Shape.IsArray() {
			continue
		}
		x, xn := o, ops[i]
		if o.Shape.Elem != dtype.F32 {
			x = &hlo.Instruction{Name: o.Name + ".ynn.dotf32", Opcode: "convert",
				Shape: hlo.Shape{Elem: dtype.F32, Dims: o.Shape.Dims}, Operands: []*hlo.Instruction{o}}
			xn = add(x, []*ynnNode{xn})
			if g.dotWiden == nil {
				g.dotWiden = map[*ynnNode][]ynnDotOperand{}
			}
			g.dotWiden[xn] = append(g.dotWiden[xn], ynnDotOperand{dot, i})
		}
		t := &hlo.Instruction{Name: o.Name + ".ynn.copy", Opcode: "transpose", Shape: x.Shape, Operands: []*hlo.Instruction{x}}
		ops[i] = add(t, []*ynnNode{xn})
	}
}

func newYNNGraph(c *hlo.Computation) *ynnGraph {
	g := &ynnGraph{c: c, node: map[*hlo.Instruction]*ynnNode{}, fnode: map[*hlo.Instruction]*ynnNode{}}
	byKey := map[string]*ynnNode{}
	ids := map[*ynnNode]int{}
	// add makes (or finds, by CSE) the node of in, whose operands' nodes
	// are ops.
	add := func(in *hlo.Instruction, ops []*ynnNode) *ynnNode {
		key := ynnCSEKey(in, ops, ids)
		if key != "" {
			if n, ok := byKey[key]; ok {
				return n
			}
		}
		n := &ynnNode{in: in, operands: ops}
		ids[n] = len(g.nodes)
		g.nodes = append(g.nodes, n)
		if key != "" {
			byKey[key] = n
		}
		return n
	}
	// Only what the root reads: dead instructions (a rewrite's leftovers)
	// have no say in use counts.
	live := map[*hlo.Instruction]bool{}
	var mark func(in *hlo.Instruction)
	mark = func(in *hlo.Instruction) {
		if in == nil || live[in] {
			return
		}
		live[in] = true
		if x := ynnTupleElement(in); x != nil {
			mark(x) // XLA forwards the element: the rest of the tuple is dead
			return
		}
		for _, o := range in.Operands {
			mark(o)
		}
	}
	mark(c.Root)
	for _, in := range c.Instructions {
		if !live[in] {
			continue
		}
		var ops []*ynnNode
		for _, o := range in.Operands {
			ops = append(ops, g.node[o]) // nil for an operand from outside c
		}
		if x := ynnTupleElement(in); x != nil && g.node[x] != nil {
			g.node[in] = g.node[x]
			continue
		}
		if x := YNNIdentityOperand(in); x != nil && g.node[x] != nil {
			g.node[in] = g.node[x] // XLA's simplifier drops it
			continue
		}
		if x := YNNSelected(in); x != nil && g.node[x] != nil {
			g.node[in] = g.node[x] // a constant predicate folds away
			continue
		}
		if _, ok := ynnElementwise[in.Opcode]; ok && in.Opcode != "convert" && in.Shape.IsArray() && in.Shape.Elem == dtype.BF16 {
			// XLA computes bf16 arithmetic in f32 between converts (float
			// normalization runs before): f = op(widened operands), the
			// value is convert(f) to bf16. An f32 twin of the op that a
			// rewrite made (excess precision) is then the same node as f.
			fops := make([]*hlo.Instruction, len(in.Operands))
			fnodes := make([]*ynnNode, len(in.Operands))
			for i, o := range in.Operands {
				fops[i], fnodes[i] = o, ops[i]
				if o.Shape.IsArray() && o.Shape.Elem == dtype.BF16 {
					w := &hlo.Instruction{Name: o.Name + ".ynn.f32", Opcode: "convert", Shape: hlo.Shape{Elem: dtype.F32, Dims: o.Shape.Dims}, Operands: []*hlo.Instruction{o}}
					fops[i], fnodes[i] = w, add(w, []*ynnNode{ops[i]})
				}
			}
			fi := &hlo.Instruction{Name: in.Name + ".ynn.f32", Opcode: in.Opcode, Shape: hlo.Shape{Elem: dtype.F32, Dims: in.Shape.Dims}, Operands: fops}
			fn := add(fi, fnodes)
			ni := &hlo.Instruction{Name: in.Name + ".ynn.bf16", Opcode: "convert", Shape: in.Shape, Operands: []*hlo.Instruction{fi}}
			g.fnode[in] = fn
			g.node[in] = add(ni, []*ynnNode{fn})
			continue
		}
		if in.Opcode == "dot" && ynnLoneDot(in) {
			g.copiedOperands(in, ops, add)
		}
		g.node[in] = add(in, ops)
	}
	for _, n := range g.nodes {
		for _, o := range n.operands {
			if o != nil && !containsNode(o.users, n) {
				o.users = append(o.users, n)
			}
		}
	}
	g.root = g.node[c.Root]
	// XLA's MakeInstructionPostOrder: depth first from the root, operands
	// in order; instructions the root does not reach come first.
	seen := map[*ynnNode]bool{}
	pos := 0
	var visit func(n *ynnNode)
	visit = func(n *ynnNode) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		for _, o := range n.operands {
			visit(o)
		}
		n.order = pos
		pos++
	}
	for _, n := range g.nodes {
		if len(n.users) == 0 && n != g.root {
			visit(n)
		}
	}
	visit(g.root)
	for _, n := range g.nodes {
		visit(n)
	}
	return g
}

func containsNode(list []*ynnNode, n *ynnNode) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}

// ynnCSEOps are the opcodes whose value is fixed by the opcode, the shape,
// the attributes ynnCSEKey spells out and the operands.
var ynnCSEOps = map[string]bool{
	"add": true, "subtract": true, "multiply": true, "divide": true, "maximum": true, "minimum": true,
	"power": true, "negate": true, "abs": true, "sign": true, "exponential": true, "exponential-minus-one": true,
	"log": true, "log-plus-one": true, "tanh": true, "erf": true, "logistic": true, "sqrt": true, "rsqrt": true,
	"floor": true, "ceil": true, "round-nearest-even": true, "convert": true, "broadcast": true, "reshape": true,
	"bitcast": true, "transpose": true, "copy": true, "constant": true, "iota": true, "compare": true,
	"select": true, "sine": true, "cosine": true, "reduce": true,
}

// ynnCSEKey is what XLA's CSE compares, "" for an instruction left alone.
func ynnCSEKey(in *hlo.Instruction, ops []*ynnNode, ids map[*ynnNode]int) string {
	if !ynnCSEOps[in.Opcode] || !in.Shape.IsArray() {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%v%v|%v|%d|%s|%s", in.Opcode, in.Shape.Elem, in.Shape.Dims, in.Dimensions, in.IotaDimension,
		in.ComparisonDirection, in.ComparisonType)
	switch in.Opcode {
	case "constant":
		if in.Literal == nil || in.Literal.Tensor == nil || len(in.Literal.Tensor.Data) > 256 {
			return ""
		}
		fmt.Fprintf(&b, "|%x", in.Literal.Tensor.Data)
	case "reduce":
		r := fastReducer(in.ToApply())
		if r == "" {
			return ""
		}
		b.WriteString("|" + r)
	}
	for _, o := range ops {
		if o == nil {
			return ""
		}
		fmt.Fprintf(&b, "|%d", ids[o])
	}
	return b.String()
}

// ynnElemTypes are the element types YNNPACK takes elementwise ops in.
func ynnElemType(t dtype.Type) bool {
	switch t {
	case dtype.F64, dtype.F32, dtype.BF16, dtype.S8, dtype.U8:
		return true
	}
	return false
}

// ynnType is an element type YNNPACK has at all.
func ynnType(t dtype.Type) bool {
	switch t {
	case dtype.F64, dtype.F32, dtype.BF16, dtype.F16, dtype.S8, dtype.U8, dtype.S32:
		return true
	}
	return false
}

// ynnElementwise are the elementwise opcodes jaxlib 0.10.2's YNNPACK
// fusions take (measured), by operand count.
var ynnElementwise = map[string]int{
	"add": 2, "subtract": 2, "multiply": 2, "divide": 2, "maximum": 2, "minimum": 2, "power": 2,
	"exponential": 1, "exponential-minus-one": 1, "log": 1, "log-plus-one": 1, "tanh": 1, "erf": 1,
	"logistic": 1, "sqrt": 1, "rsqrt": 1, "negate": 1, "abs": 1, "sign": 1, "floor": 1, "ceil": 1,
	"round-nearest-even": 1, "convert": 1,
}

func descendingLayout(s hlo.Shape) bool {
	if s.Layout == nil || len(s.Layout.MinorToMajor) == 0 {
		return true
	}
	n := len(s.Layout.MinorToMajor)
	for i, d := range s.Layout.MinorToMajor {
		if d != int64(n-1-i) {
			return false
		}
	}
	return true
}

func ynnPreferred(in *hlo.Instruction) bool {
	if in.Shape.IsArray() && tensor.NumElements(in.Shape.Dims) >= YNNMinElements {
		return true
	}
	for _, o := range in.Operands {
		if o.Shape.IsArray() && tensor.NumElements(o.Shape.Dims) >= YNNMinElements {
			return true
		}
	}
	return false
}

// ynnSupported is YnnMatcher::IsOpSupported for in, after layout
// assignment: XLA:CPU gives every op its default layout there (a
// transpose becomes a copy of its own), so the layout an unoptimized
// module writes is no bar, except to a bitcast, whose meaning it is. What
// that layout does before layout assignment (TreeReductionRewriter's
// split, engine/golden/ynn_layout.go) the golden driver rewrites first.
func ynnSupported(in *hlo.Instruction) bool {
	s := in.Shape
	if !s.IsArray() || in.FrontendAttrs[YNNOffAttr] != "" {
		return false
	}
	for _, o := range in.Operands {
		if !o.Shape.IsArray() {
			return false
		}
	}
	if in.Opcode == "bitcast" && len(in.Operands) == 1 && (!descendingLayout(s) || !descendingLayout(in.Operands[0].Shape)) {
		return false
	}
	switch in.Opcode {
	case "constant":
		return ynnType(s.Elem)
	case "iota":
		return s.Elem == dtype.F32 || s.Elem == dtype.S32
	case "reshape", "bitcast":
		return len(in.Operands) == 1 && ynnType(s.Elem) && in.Operands[0].Shape.Elem == s.Elem
	case "broadcast":
		if len(in.Operands) != 1 || !ynnType(s.Elem) {
			return false
		}
		for i := 1; i < len(in.Dimensions); i++ {
			if in.Dimensions[i] <= in.Dimensions[i-1] {
				return false
			}
		}
		return true
	case "pad":
		if len(in.Operands) != 2 || !ynnType(s.Elem) || in.Operands[0].Shape.Elem != s.Elem || in.Operands[1].Shape.Elem != s.Elem {
			return false
		}
		for i, p := range in.Padding {
			if p.Interior != 0 || i < len(in.Operands[0].Shape.Dims) && in.Operands[0].Shape.Dims[i] == 1 && (p.Low != 0 || p.High != 0) {
				return false
			}
		}
		return true
	}
	if !ynnPreferred(in) {
		return false
	}
	switch in.Opcode {
	case "reduce", "reduce-window":
		return ynnReduceSupported(in)
	}
	n, ok := ynnElementwise[in.Opcode]
	if !ok || len(in.Operands) != n || !ynnElemType(s.Elem) {
		return false
	}
	if in.Opcode == "convert" && in.Operands[0].Opcode == "slice" {
		// XLA widens before it slices, in a loop fusion of its own
		// (convert_slice_fusion, measured: x[:, :n] row sums of bf16).
		return false
	}
	for _, o := range in.Operands {
		if !ynnElemType(o.Shape.Elem) {
			return false
		}
	}
	return true
}

// ynnReduceSupported is IsReduceLikeOpSupportedByYnn.
func ynnReduceSupported(in *hlo.Instruction) bool {
	if len(in.Operands) != 2 || !in.Shape.IsArray() {
		return false
	}
	x, init := in.Operands[0], in.Operands[1]
	if init.Shape.Elem != in.Shape.Elem {
		return false
	}
	c := in.ToApply()
	if c == nil || len(c.Instructions) != 3 {
		return false
	}
	if in.Opcode == "reduce" {
		if len(in.Dimensions) == 0 {
			return false
		}
	} else {
		axes := 0
		for _, w := range in.Window {
			if w.Size > 1 || w.Stride > 1 {
				if w.Size > 1 && w.Stride != w.Size || w.BaseDilation > 1 || w.WindowDilation > 1 || w.WindowReversal {
					return false
				}
				axes++
			}
		}
		if axes == 0 {
			return false
		}
	}
	in0, out := x.Shape.Elem, in.Shape.Elem
	switch fastReducer(c) {
	case "add":
		return in0 == out && (out == dtype.F32 || out == dtype.F64)
	case "maximum", "minimum":
		if in0 != out {
			return false
		}
		switch out {
		case dtype.U8, dtype.S8, dtype.BF16, dtype.F16, dtype.F32, dtype.F64:
			return true
		}
	}
	return false
}

// ynnLoneDot reports whether dot in is one XLA:CPU gives to YNNPACK (a
// fusion of its own that a growing fusion merges): ynnRoute's conditions.
func ynnLoneDot(in *hlo.Instruction) bool {
	if in.Opcode != "dot" || len(in.Operands) != 2 || in.DotDims == nil || !in.Shape.IsArray() {
		return false
	}
	lt, rt, ot := in.Operands[0].Shape.Elem, in.Operands[1].Shape.Elem, in.Shape.Elem
	switch {
	case lt == dtype.F32 && rt == dtype.F32 && ot == dtype.F32:
	case lt == rt && (lt == dtype.BF16 || lt == dtype.F16) && ot == lt:
	default:
		return false
	}
	p, err := planDot(in.Operands[0].Shape.Dims, in.Operands[1].Shape.Dims, in.DotDims)
	if err != nil || p.m <= 1 || p.n <= 1 || max(p.m, p.k, p.n) < 8 {
		return false
	}
	lp, rp, _, _ := xlaDotLayout(p, in.Operands[0], in.Operands[1])
	if !isIdentity(lp) {
		return false
	}
	return isIdentity(rp) || rhsIsBatchNK(rp, p.nBatch, p.nContract)
}

// groupOf is the (merged) fusion n belongs to, nil for none.
func (n *ynnNode) groupOf() *ynnGroup {
	f := n.group
	for f != nil && f.mergedInto != nil {
		f = f.mergedInto
	}
	return f
}

func (g *ynnGraph) run() {
	for _, n := range g.nodes {
		if ynnLoneDot(n.in) {
			n.group = &ynnGroup{members: map[*ynnNode]bool{n: true}, root: n, dot: true}
		}
	}
	starters := make([]*ynnNode, 0)
	for _, n := range g.nodes {
		if (n.in.Opcode == "reduce" || n.in.Opcode == "reduce-window") && ynnSupported(n.in) {
			starters = append(starters, n)
		}
	}
	// Reverse post order: the root side first.
	for i := 1; i < len(starters); i++ {
		for j := i; j > 0 && starters[j].order > starters[j-1].order; j-- {
			starters[j], starters[j-1] = starters[j-1], starters[j]
		}
	}
	for _, s := range starters {
		if s.groupOf() != nil {
			continue
		}
		f := &ynnGroup{members: map[*ynnNode]bool{s: true}, root: s}
		s.group = f
		for g.fuseNeighbors(f) {
		}
	}
}

type ynnCandidate struct {
	n    *ynnNode
	down bool
}

// users of the fusion: the root's users outside it.
func (f *ynnGroup) outsideUsers() []*ynnNode {
	var out []*ynnNode
	for _, u := range f.root.users {
		if !f.members[u] {
			out = append(out, u)
		}
	}
	return out
}

// fuseNeighbors is one LibraryRewriter::FuseNeighbors pass over f.
func (g *ynnGraph) fuseNeighbors(f *ynnGroup) bool {
	var queue []ynnCandidate
	visited := map[*ynnNode]bool{}
	for m := range f.members {
		visited[m] = true
	}
	// allUsersIn: every user of o is in f (o seen from outside f).
	allUsersIn := func(o *ynnNode) bool {
		if og := o.groupOf(); og != nil {
			// o stands for its fusion, whose users are its root's.
			if og.root != o {
				return false
			}
		}
		for _, u := range o.users {
			if u.groupOf() != f {
				return false
			}
		}
		return len(o.users) > 0
	}
	addCandidates := func(x *ynnNode, whole, up, down bool) {
		if up {
			var ops []*ynnNode
			if whole {
				for m := range f.members {
					ops = append(ops, m.operands...)
				}
			} else {
				ops = x.operands
			}
			for _, o := range ops {
				if o == nil || f.members[o] || visited[o] {
					continue
				}
				if og := o.groupOf(); og != nil && og != f {
					o = og.root
					if visited[o] {
						continue
					}
				}
				if allUsersIn(o) {
					visited[o] = true
					queue = append(queue, ynnCandidate{o, false})
				}
			}
		}
		if !down {
			return
		}
		var users []*ynnNode
		if whole {
			users = f.outsideUsers()
		} else {
			users = x.users
		}
		if len(users) != 1 {
			return
		}
		u := users[0]
		if og := u.groupOf(); og == f || visited[u] {
			return
		}
		visited[u] = true
		queue = append(queue, ynnCandidate{u, true})
	}
	addCandidates(nil, true, true, true)
	changed := false
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if og := c.n.groupOf(); og != nil && og != f {
			// Another YNNPACK fusion: merge.
			for m := range og.members {
				f.members[m] = true
				m.group = f
			}
			og.mergedInto = f
			if c.down {
				f.root = og.root
			}
			changed = true
			continue
		}
		if c.n.groupOf() == f || !ynnSupported(c.n.in) {
			continue
		}
		f.members[c.n] = true
		c.n.group = f
		addCandidates(c.n, false, !c.down, c.down)
		if c.down {
			f.root = c.n
		}
		changed = true
	}
	return changed
}

// ynnScalarConst returns the value of x when x is a scalar constant or a
// broadcast (through reshapes) of one.
func ynnScalarConst(x *hlo.Instruction) (float64, bool) {
	for x != nil && (x.Opcode == "broadcast" || x.Opcode == "reshape" || x.Opcode == "bitcast") && len(x.Operands) == 1 {
		x = x.Operands[0]
	}
	if x == nil || x.Opcode != "constant" || x.Literal == nil || x.Literal.Tensor == nil {
		return 0, false
	}
	t := x.Literal.Tensor
	if tensor.NumElements(t.Dims) < 1 {
		return 0, false
	}
	var v float64
	switch t.Type {
	case dtype.F32:
		s := t.F32()
		for _, e := range s[1:] {
			if math.Float32bits(e) != math.Float32bits(s[0]) {
				return 0, false
			}
		}
		v = float64(s[0])
	case dtype.F64:
		s := t.F64()
		for _, e := range s[1:] {
			if math.Float64bits(e) != math.Float64bits(s[0]) {
				return 0, false
			}
		}
		v = s[0]
	case dtype.BF16:
		if tensor.NumElements(t.Dims) != 1 {
			return 0, false
		}
		f := make([]float64, 1)
		dtype.DecodeF64(dtype.BF16, t.Data[:2], f)
		v = f[0]
	default:
		return 0, false
	}
	return v, true
}

// YNNOffAttr, a frontend attribute the golden driver sets on an op that
// XLA's passes before layout assignment keep out of YNNPACK's reach
// (engine/golden/ynn_layout.go), whatever the fusion rules say.
const YNNOffAttr = "goldtrace.ynn_off"

// YNNTakesReduce reports whether YNNPACK takes reduce in (its type,
// reducer and size) once its layouts are the default ones.
func YNNTakesReduce(in *hlo.Instruction) bool {
	return in.Opcode == "reduce" && ynnSupported(in)
}

// DescendingLayout reports whether s has the default (row-major) layout,
// or none.
func DescendingLayout(s hlo.Shape) bool { return descendingLayout(s) }

// YNNElementwise reports whether opcode is an elementwise op YNNPACK
// fusions take, with its operand count.
func YNNElementwise(opcode string) (int, bool) {
	n, ok := ynnElementwise[opcode]
	return n, ok
}

// ynnTupleElement returns the element a get-tuple-element of a tuple
// instruction reads (an inlined call's results), else nil.
func ynnTupleElement(in *hlo.Instruction) *hlo.Instruction {
	if in.Opcode != "get-tuple-element" || len(in.Operands) != 1 {
		return nil
	}
	t := in.Operands[0]
	if t.Opcode != "tuple" || in.TupleIndex < 0 || int(in.TupleIndex) >= len(t.Operands) {
		return nil
	}
	return t.Operands[in.TupleIndex]
}

// YNNIdentityOperand returns x when in is maximum(x, -inf) or
// minimum(x, +inf) (either order), which XLA's algebraic simplifier
// replaces by x (jax's max and logsumexp emit them), else nil.
func YNNIdentityOperand(in *hlo.Instruction) *hlo.Instruction {
	if len(in.Operands) != 2 || in.Opcode != "maximum" && in.Opcode != "minimum" {
		return nil
	}
	want := math.Inf(-1)
	if in.Opcode == "minimum" {
		want = math.Inf(1)
	}
	for i, o := range in.Operands {
		if k, ok := ynnScalarConst(o); ok && k == want {
			if x := in.Operands[1-i]; x.Shape.IsArray() && in.Shape.IsArray() && equalDims(x.Shape.Dims, in.Shape.Dims) && x.Shape.Elem == in.Shape.Elem {
				return x
			}
		}
	}
	return nil
}

// YNNSelected returns the operand a select with a constant predicate picks
// (XLA folds the select away), else nil.
func YNNSelected(in *hlo.Instruction) *hlo.Instruction {
	if in.Opcode != "select" || len(in.Operands) != 3 {
		return nil
	}
	p, ok := ynnFoldPred(in.Operands[0])
	if !ok {
		return nil
	}
	if p {
		return in.Operands[1]
	}
	return in.Operands[2]
}

// ynnFoldPred folds a pred that is a broadcast of a compare of scalar
// constant arithmetic (jnp.var's n > ddof), as XLA's constant folding does.
func ynnFoldPred(x *hlo.Instruction) (bool, bool) {
	for (x.Opcode == "broadcast" || x.Opcode == "reshape") && len(x.Operands) == 1 {
		x = x.Operands[0]
	}
	if x.Shape.Elem != dtype.Pred || tensor.NumElements(x.Shape.Dims) != 1 {
		return false, false
	}
	switch x.Opcode {
	case "constant":
		if x.Literal == nil || x.Literal.Tensor == nil || len(x.Literal.Tensor.Data) != 1 {
			return false, false
		}
		return x.Literal.Tensor.Data[0] != 0, true
	case "compare":
		a, okA := ynnFoldNum(x.Operands[0], 8)
		b, okB := ynnFoldNum(x.Operands[1], 8)
		if !okA || !okB {
			return false, false
		}
		switch x.ComparisonDirection {
		case "EQ":
			return a == b, true
		case "NE":
			return a != b, true
		case "LT":
			return a < b, true
		case "LE":
			return a <= b, true
		case "GT":
			return a > b, true
		case "GE":
			return a >= b, true
		}
	}
	return false, false
}

// ynnFoldNum evaluates scalar constant arithmetic (in float64: only its
// order against another such value matters).
func ynnFoldNum(x *hlo.Instruction, depth int) (float64, bool) {
	if depth == 0 || !x.Shape.IsArray() || tensor.NumElements(x.Shape.Dims) != 1 {
		return 0, false
	}
	switch x.Opcode {
	case "constant":
		if x.Literal == nil || x.Literal.Tensor == nil {
			return 0, false
		}
		t := x.Literal.Tensor
		switch {
		case t.Type.IsFloat():
			v := make([]float64, 1)
			dtype.DecodeF64(t.Type, t.Data, v)
			return v[0], true
		case t.Type.IsInteger() && t.Type.Size() <= 8 && len(t.Data) >= t.Type.Size():
			var bits uint64
			for i := t.Type.Size() - 1; i >= 0; i-- {
				bits = bits<<8 | uint64(t.Data[i])
			}
			return float64(dtype.DecodeInt(t.Type, bits)), true
		}
		return 0, false
	case "convert", "broadcast", "reshape":
		return ynnFoldNum(x.Operands[0], depth-1)
	case "negate":
		v, ok := ynnFoldNum(x.Operands[0], depth-1)
		return -v, ok
	case "add", "subtract", "multiply":
		a, okA := ynnFoldNum(x.Operands[0], depth-1)
		b, okB := ynnFoldNum(x.Operands[1], depth-1)
		if !okA || !okB {
			return 0, false
		}
		switch x.Opcode {
		case "add":
			return a + b, true
		case "subtract":
			return a - b, true
		}
		return a * b, true
	}
	return 0, false
}

// YNNScalarConst is ynnScalarConst for the golden driver.
func YNNScalarConst(x *hlo.Instruction) (float64, bool) { return ynnScalarConst(x) }
