package golden

import (
	"fmt"
	"slices"

	"goldtrace/engine/dtype"
	"goldtrace/engine/eval"
	"goldtrace/engine/hlo"
)

// What the layouts of an unoptimized module do on XLA:CPU (jaxlib 0.10.2),
// measured with --xla_dump_hlo_pass_re on softmax(x.T), sum(exp(x.T)) and
// grouped-KV dot_product_attention. jax writes the layout a transpose
// leaves on every value computed from it (x.T is f32[N,M]{0,1}); XLA's
// passes before layout assignment read it, and layout assignment then gives
// every op the default layout (a transpose becomes a copy of its own), so
// the YNNPACK fusions are decided without it (eval.PredictYNNFusions). The
// passes, in XLA's order, rewritten here before the fusions are predicted:
//
//   - Float normalization first takes out of YNNPACK's reach a bf16 reduce
//     it would take but for that layout (hintedNarrowReduce).
//   - The algebraic simplifier reads a reduce of a transpose as a reduce of
//     the transpose's operand over the dims it maps the reduced ones to,
//     transposing the result when the kept dims change order (sum(x.T, -1)
//     is x summed over dim 0, in YNNPACK's column order).
//   - TreeReductionRewriter, run next, leaves alone the reduces YNNPACK will
//     take, judged on the layouts the module writes: a reduce YNNPACK would
//     take but for a non-default layout of its operand or result (the sum
//     of exp(x.T)) becomes a reduce-window over windows of min(n, 32) of
//     each reduced dim (SAME padding) and the same reduce over the window
//     results, when a reduced dim is longer than 32. Both then go to
//     YNNPACK, in default layouts: the row is summed as 32-element pieces,
//     then the pieces.
//   - ReshapeMover sinks a transpose below the elementwise ops that read it
//     when their other operands are constants or broadcasts it can
//     re-target (dims in order before and after) and every user of the
//     transpose moves: softmax(x.T)'s x - max and exp are computed on x, in
//     the fusion of max(x), and transposed after. A transpose a reduce of
//     hintedNarrowReduce reads does not hold it back (XLA's reads it
//     through a convert, and keeps a copy).
//
// Once the fusions are rewritten, hoistTransposes moves the sunk transposes
// back up, where the evaluator runs the chain faster. Only unoptimized
// modules: an optimized one has XLA's fusions as they are.
func (r *xlaRewriter) layoutPasses(c *hlo.Computation, before map[*hlo.Instruction]int) error {
	for _, in := range c.Instructions {
		if hintedNarrowReduce(in) {
			attrs := map[string]string{eval.YNNOffAttr: "float-normalized"}
			for k, v := range in.FrontendAttrs {
				attrs[k] = v
			}
			in.FrontendAttrs = attrs
		}
	}
	if err := r.rewrite(c, r.foldReduceTranspose); err != nil {
		return err
	}
	if err := r.rewrite(c, r.treeSplitHinted); err != nil {
		return err
	}
	for range 16 {
		moved, err := r.sinkTransposes(c)
		if err != nil {
			return err
		}
		if !moved {
			break
		}
	}
	if err := r.rewrite(c, r.foldReduceTranspose); err != nil {
		return err
	}
	// What the moves left unread goes, as XLA's DCE drops it: a use count
	// it kept would stop a contraction (x*y read by its old transpose).
	pruneDead(c, before)
	return nil
}

// hintedNarrowReduce reports whether in is a reduce YNNPACK would take in
// a type narrower than f32 (a bf16 max) but for the layout the module writes
// on it. XLA's float normalization, which runs first and asks YNNPACK the
// same question, then computes it in f32 with a reducer that rounds each
// step (so no YNNPACK, and no reduce of a transpose left to fold): a loop
// reduce, split like any other (softmax(x.T) on bf16: x's max).
func hintedNarrowReduce(in *hlo.Instruction) bool {
	if in.Opcode != "reduce" || len(in.Operands) != 2 || !in.Shape.IsArray() || !in.Operands[0].Shape.IsArray() {
		return false
	}
	switch in.Shape.Elem {
	case dtype.F32, dtype.F64:
		return false
	}
	return (!eval.DescendingLayout(in.Operands[0].Shape) || !eval.DescendingLayout(in.Shape)) && eval.YNNTakesReduce(in)
}

// foldReduceTranspose is the simplifier's reduce(transpose(x)) ->
// [transpose](reduce(x)).
func (r *xlaRewriter) foldReduceTranspose(in *hlo.Instruction) (*hlo.Instruction, error) {
	if in.Opcode != "reduce" || len(in.Operands) != 2 || !in.Shape.IsArray() || len(in.Called) != 1 || in.FrontendAttrs[eval.YNNOffAttr] != "" {
		return nil, nil
	}
	t := in.Operands[0]
	// A bf16 transpose is an f32 one between converts on XLA:CPU (float
	// normalization), and the widening after it cancels with the narrowing:
	// the reduce reads the f32 transpose (jnp.mean(x.T) on bf16).
	widen := t.Opcode == "convert" && len(t.Operands) == 1 && t.Shape.IsArray() && t.Shape.Elem == dtype.F32 &&
		(t.Operands[0].Shape.Elem == dtype.BF16 || t.Operands[0].Shape.Elem == dtype.F16)
	if widen {
		t = t.Operands[0]
	}
	if t.Opcode != "transpose" || len(t.Operands) != 1 || !t.Shape.IsArray() || len(t.Dimensions) != len(t.Shape.Dims) {
		return nil, nil
	}
	x := t.Operands[0]
	if widen {
		x = r.emit("convert", hlo.Shape{Elem: dtype.F32, Dims: x.Shape.Dims}, x)
	}
	rank := len(t.Dimensions)
	reducedX := make([]bool, rank)
	newDims := make([]int64, 0, len(in.Dimensions))
	for _, d := range in.Dimensions {
		if d < 0 || int(d) >= rank {
			return nil, nil
		}
		xd := t.Dimensions[d]
		reducedX[xd] = true
		newDims = append(newDims, xd)
	}
	// Kept dims: in x's order (the new reduce's result) and in the old
	// result's order.
	var keptX, keptOld []int64
	var dims []int64
	for d := 0; d < rank; d++ {
		if !reducedX[d] {
			keptX = append(keptX, int64(d))
			dims = append(dims, x.Shape.Dims[d])
		}
	}
	for j := 0; j < rank; j++ {
		if !slices.Contains(in.Dimensions, int64(j)) {
			keptOld = append(keptOld, t.Dimensions[j])
		}
	}
	red := r.emit("reduce", hlo.Shape{Elem: in.Shape.Elem, Dims: dims}, x, in.Operands[1])
	red.Dimensions = newDims
	red.Called = in.Called
	red.FrontendAttrs = in.FrontendAttrs
	red.Metadata = in.Metadata
	if slices.Equal(keptX, keptOld) {
		red.Shape = in.Shape
		return red, nil
	}
	perm := make([]int64, len(keptOld))
	for i, d := range keptOld {
		perm[i] = int64(slices.Index(keptX, d))
	}
	tr := r.emit("transpose", in.Shape, red)
	tr.Dimensions = perm
	return tr, nil
}

// treeSplitHinted is TreeReductionRewriter on a reduce that YNNPACK would
// take but for the layout the module writes on it.
func (r *xlaRewriter) treeSplitHinted(in *hlo.Instruction) (*hlo.Instruction, error) {
	if in.Opcode != "reduce" || len(in.Operands) != 2 || !in.Shape.IsArray() || len(in.Called) != 1 {
		return nil, nil
	}
	x := in.Operands[0]
	if !x.Shape.IsArray() || eval.DescendingLayout(x.Shape) && eval.DescendingLayout(in.Shape) || !eval.YNNTakesReduce(in) {
		return nil, nil
	}
	long := false
	for _, d := range in.Dimensions {
		if d < 0 || int(d) >= len(x.Shape.Dims) {
			return nil, nil
		}
		long = long || x.Shape.Dims[d] > 32
	}
	if !long {
		return nil, nil
	}
	win := make([]hlo.WindowDim, len(x.Shape.Dims))
	dims := make([]int64, len(x.Shape.Dims))
	for d, n := range x.Shape.Dims {
		win[d] = hlo.WindowDim{Size: 1, Stride: 1, BaseDilation: 1, WindowDilation: 1}
		dims[d] = n
		if !slices.Contains(in.Dimensions, int64(d)) {
			continue
		}
		w := min(n, 32)
		out := (n + w - 1) / w
		pad := max((out-1)*w+w-n, 0)
		win[d].Size, win[d].Stride, win[d].PadLow, win[d].PadHigh = w, w, pad/2, pad-pad/2
		dims[d] = out
	}
	rw := r.emit("reduce-window", hlo.Shape{Elem: in.Shape.Elem, Dims: dims}, x, in.Operands[1])
	rw.Window = win
	rw.Called = in.Called
	rw.Metadata = in.Metadata
	red := r.emit("reduce", hlo.Shape{Elem: in.Shape.Elem, Dims: in.Shape.Dims}, rw, in.Operands[1])
	red.Dimensions = in.Dimensions
	red.Called = in.Called
	red.FrontendAttrs = in.FrontendAttrs
	red.Metadata = in.Metadata
	return red, nil
}

// moverElementwise are the elementwise opcodes ReshapeMover moves a
// transpose through.
var moverElementwise = map[string]bool{
	"add": true, "subtract": true, "multiply": true, "divide": true, "maximum": true, "minimum": true,
	"power": true, "remainder": true, "atan2": true, "and": true, "or": true, "xor": true, "compare": true,
	"select": true, "clamp": true, "negate": true, "abs": true, "sign": true, "exponential": true,
	"exponential-minus-one": true, "log": true, "log-plus-one": true, "tanh": true, "erf": true,
	"logistic": true, "sqrt": true, "rsqrt": true, "cbrt": true, "sine": true, "cosine": true, "tan": true,
	"floor": true, "ceil": true, "round-nearest-even": true, "round-nearest-afz": true, "convert": true,
	"not": true, "is-finite": true,
}

func isRearrange(in *hlo.Instruction) bool {
	return in.Opcode == "transpose" || in.Opcode == "reshape"
}

// trivialUnder is ReshapeMover's CanTriviallyRearrange of o under the
// inverse of transpose t.
func trivialUnder(o, t *hlo.Instruction) bool {
	if t.Opcode != "transpose" {
		return false
	}
	if isIdentityPerm(t.Dimensions) || o.Opcode == "constant" {
		return true
	}
	if o.Opcode != "broadcast" || !slices.IsSorted(o.Dimensions) {
		return false
	}
	return slices.IsSorted(bcastUnder(o.Dimensions, t.Dimensions))
}

// bcastUnder is where a broadcast's dims land under the inverse of a
// transpose with dims perm.
func bcastUnder(dims, perm []int64) []int64 {
	out := make([]int64, len(dims))
	for i, d := range dims {
		out[i] = perm[d]
	}
	return out
}

func isIdentityPerm(p []int64) bool {
	for i, d := range p {
		if d != int64(i) {
			return false
		}
	}
	return true
}

// readsThroughConvert reports whether XLA's float normalization put a
// convert between u and its operands (hintedNarrowReduce's reduce): the
// transpose it reads moves through that convert, and u keeps a copy.
func readsThroughConvert(u *hlo.Instruction) bool {
	return u.Opcode == "reduce" && u.FrontendAttrs[eval.YNNOffAttr] != ""
}

// sinkTransposes is one round of ReshapeMover on transposes; it reports
// whether it moved any.
func (r *xlaRewriter) sinkTransposes(c *hlo.Computation) (bool, error) {
	users := map[*hlo.Instruction][]*hlo.Instruction{}
	for _, in := range c.Instructions {
		for _, o := range in.Operands {
			if !slices.Contains(users[o], in) {
				users[o] = append(users[o], in)
			}
		}
	}
	lead := map[*hlo.Instruction]*hlo.Instruction{} // candidate -> its transpose
	for _, in := range c.Instructions {
		if !moverElementwise[in.Opcode] || !in.Shape.IsArray() || len(in.Operands) == 0 {
			continue
		}
		var t *hlo.Instruction
		for _, o := range in.Operands {
			if isRearrange(o) && len(o.Operands) == 1 && !trivialUnder(o.Operands[0], o) {
				t = o
				break
			}
		}
		if t == nil || t.Opcode != "transpose" || !t.Shape.IsArray() {
			continue // a reshape leads: not modelled, left in place
		}
		ok := true
		for _, o := range in.Operands {
			if isRearrange(o) {
				ok = ok && o.Opcode == "transpose" && slices.Equal(o.Dimensions, t.Dimensions) && slices.Equal(o.Shape.Dims, t.Shape.Dims)
			} else {
				ok = ok && trivialUnder(o, t)
			}
		}
		if ok {
			lead[in] = t
		}
	}
	for changed := true; changed && len(lead) > 0; {
		changed = false
		for cand := range lead {
			for _, o := range cand.Operands {
				if !isRearrange(o) {
					continue
				}
				for _, u := range users[o] {
					if lead[u] == nil && !readsThroughConvert(u) {
						for _, v := range users[o] {
							if lead[v] != nil {
								delete(lead, v)
								changed = true
							}
						}
						break
					}
				}
			}
		}
	}
	if len(lead) == 0 {
		return false, nil
	}
	err := r.rewrite(c, func(in *hlo.Instruction) (*hlo.Instruction, error) {
		t := lead[in]
		if t == nil {
			return nil, nil
		}
		inv := make([]int64, len(t.Dimensions))
		for i, d := range t.Dimensions {
			inv[d] = int64(i)
		}
		src := t.Operands[0].Shape.Dims
		ops := make([]*hlo.Instruction, len(in.Operands))
		for i, o := range in.Operands {
			switch {
			case o.Opcode == "transpose":
				ops[i] = o.Operands[0]
			case o.Opcode == "broadcast":
				b := r.emit("broadcast", hlo.Shape{Elem: o.Shape.Elem, Dims: src}, o.Operands[0])
				b.Dimensions = bcastUnder(o.Dimensions, t.Dimensions)
				ops[i] = b
			default:
				tr := r.emit("transpose", hlo.Shape{Elem: o.Shape.Elem, Dims: src}, o)
				tr.Dimensions = inv
				ops[i] = tr
			}
		}
		e := *in
		e.Name, e.Shape, e.Operands, e.Parent = r.newName(in.Opcode), hlo.Shape{Elem: in.Shape.Elem, Dims: src}, ops, r.c
		r.out = append(r.out, &e)
		tr := r.emit("transpose", in.Shape, &e)
		tr.Dimensions = t.Dimensions
		if r.sunk == nil {
			r.sunk = map[*hlo.Instruction]bool{}
		}
		r.sunk[tr] = true
		return tr, nil
	})
	return err == nil, err
}

// hoistTransposes moves the transposes sinkTransposes sank back up the
// elementwise chains they were sunk through, once every rewrite that reads
// the fusions is done: elementwise ops give the same bits in either order
// of the elements, and the evaluator runs the chain where the transpose
// reads a parameter faster than a chain materialized and then transposed
// (softmax(x.T): x - max and exp fused into the row sums again). Only
// chains whose every link has the one use are moved, so no value the
// reductions read changes its number of uses (eval's fused-producer rule).
func (r *xlaRewriter) hoistTransposes(c *hlo.Computation, before map[*hlo.Instruction]int) error {
	for range 16 {
		if len(r.sunk) == 0 {
			return nil
		}
		// A chain sunk from two readers of one value comes back as two
		// transposes of it: one is enough, and the value then has one use.
		firsts := map[string]*hlo.Instruction{}
		merged := false
		err := r.rewrite(c, func(in *hlo.Instruction) (*hlo.Instruction, error) {
			if in.Opcode != "transpose" || len(in.Operands) != 1 || !in.Shape.IsArray() {
				return nil, nil
			}
			k := fmt.Sprintf("%p|%v|%v", in.Operands[0], in.Dimensions, in.Shape.Elem)
			first := firsts[k]
			if first == nil {
				firsts[k] = in
				return nil, nil
			}
			if !r.sunk[in] || in == c.Root {
				return nil, nil
			}
			merged = true
			return first, nil
		})
		if err != nil {
			return err
		}
		if merged {
			pruneDead(c, before)
		}
		uses := useCounts(c)
		moved := false
		err = r.rewrite(c, func(in *hlo.Instruction) (*hlo.Instruction, error) {
			if !r.sunk[in] || len(in.Operands) != 1 || !in.Shape.IsArray() {
				return nil, nil
			}
			e := in.Operands[0]
			if uses[e] != 1 || !hoistable(e) {
				return nil, nil
			}
			inv := make([]int64, len(in.Dimensions))
			for i, d := range in.Dimensions {
				inv[d] = int64(i)
			}
			ops := make([]*hlo.Instruction, len(e.Operands))
			for i, o := range e.Operands {
				if o.Opcode == "broadcast" && len(o.Operands) == 1 && slices.IsSorted(bcastUnder(o.Dimensions, inv)) {
					b := r.emit("broadcast", hlo.Shape{Elem: o.Shape.Elem, Dims: in.Shape.Dims}, o.Operands[0])
					b.Dimensions = bcastUnder(o.Dimensions, inv)
					ops[i] = b
					continue
				}
				t := r.emit("transpose", hlo.Shape{Elem: o.Shape.Elem, Dims: in.Shape.Dims, Layout: in.Shape.Layout}, o)
				t.Dimensions = in.Dimensions
				r.sunk[t] = true
				ops[i] = t
			}
			h := *e
			h.Name, h.Shape, h.Operands, h.Parent = r.newName(e.Opcode), hlo.Shape{Elem: e.Shape.Elem, Dims: in.Shape.Dims, Layout: in.Shape.Layout}, ops, r.c
			r.out = append(r.out, &h)
			moved = true
			return &h, nil
		})
		if err != nil {
			return err
		}
		pruneDead(c, before)
		if !moved && !merged {
			return nil
		}
	}
	return nil
}

// hoistable reports whether e is an elementwise op over operands of its
// own dims (or broadcasts) that hoistTransposes may move a transpose above.
func hoistable(e *hlo.Instruction) bool {
	switch {
	case moverElementwise[e.Opcode]:
	case e.Opcode == "custom-call" && (e.CustomCallTarget == eval.YNNTarget || e.CustomCallTarget == eval.FMATarget) && len(e.Called) == 0:
	default:
		return false
	}
	if !e.Shape.IsArray() || len(e.ControlPredecessors) != 0 {
		return false
	}
	for _, o := range e.Operands {
		if !o.Shape.IsArray() || !slices.Equal(o.Shape.Dims, e.Shape.Dims) {
			return false
		}
	}
	return true
}
