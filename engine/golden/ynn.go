package golden

import (
	"os"

	"goldtrace/engine/dtype"
	"goldtrace/engine/eval"
	"goldtrace/engine/hlo"
)

// XLA:CPU (jaxlib 0.10.2) hands its reductions of 4096+ elements to
// YNNPACK together with the elementwise ops around them (a __ynn_fusion,
// eval.PredictYNNFusions says which), and YNNPACK computes those itself,
// after rewriting its own graph (ynnpack/subgraph/fusion.cc):
//
//   - exp, expm1, log, log1p, tanh and erf are its own polynomials, rsqrt
//     is 1/sqrt, logistic (expanded by XLA) is 1/(exp(-x)+1) on its exp,
//     maximum and minimum are MAXPS/MINPS (a NaN first operand is dropped;
//     XLA's simplifier moves a constant to the second operand first), and
//     negate is 0 - x (eval.YNNTarget computes them).
//   - A chain of scalar multiplies, divides and negations feeding exp,
//     expm1, log, log1p or erf folds into the kernel's input multiplier (the
//     factors multiplied in double, rounded to f32 once), and the scalar
//     arithmetic after one of them folds into its result: c1*f + c0 in one
//     FMA for tanh and erf (tanh(x)*A + B rounds once), c1*f for the others
//     (a product of factors, no addend), when each value in the chain has
//     that one use.
//   - Nothing contracts into an FMA: YNNPACK's multiply_add kernel rounds
//     the product (xlaRewriter.contract leaves fusion members alone).
//   - f64 members (jax_enable_x64) take YNNPACK's fp64 kernels the same way
//     (exp, expm1, log, log1p, tanh, erf, rsqrt, negate, maximum, minimum;
//     eval.YNNOp64), their folded scalars composed in double.
//
// Computations of an optimized module's __ynn_fusion instructions are
// fusions as they stand. GOLDTRACE_NO_YNN_NUMERICS=1 turns this off, to
// compare.
var ynnNumericsOff = os.Getenv("GOLDTRACE_NO_YNN_NUMERICS") == "1"

// ynnComputations returns the computations that an optimized module's
// __ynn_fusion instructions call, and whether m has fusions at all (is
// optimized: XLA has placed every op already, nothing is predicted).
func ynnComputations(m *hlo.Module) (map[*hlo.Computation]bool, bool) {
	out, optimized := map[*hlo.Computation]bool{}, false
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			if in.Opcode == "fusion" {
				optimized = true
			}
			if eval.IsYNNFusion(in) {
				for _, cc := range in.Called {
					out[cc] = true
				}
			}
		}
	}
	return out, optimized
}

// ynnPlan is one computation's YNNPACK fusions and what becomes of their
// f32 ops, worked out on the computation before the rewrite.
type ynnPlan struct {
	member map[*hlo.Instruction]*eval.YNNFusion
	// spec is the YNNTarget call that replaces an instruction, on the
	// operands given (instructions of the computation before the rewrite).
	spec map[*hlo.Instruction]ynnSpec
	// repl is the rewrite's replacement of each instruction so far.
	repl map[*hlo.Instruction]*hlo.Instruction
	// wide is the f32 value of a bf16 member, unrounded (ynnWiden), under
	// the member and under its replacement.
	wide map[*hlo.Instruction]*hlo.Instruction
}

type ynnSpec struct {
	op       eval.YNNOp
	operands []*hlo.Instruction
}

// isMember reports whether in is in one of the plan's fusions.
func (p *ynnPlan) isMember(in *hlo.Instruction) bool { return p != nil && p.member[in] != nil }

// planYNN predicts c's fusions (every instruction is one fusion's when
// whole is set).
func planYNN(c *hlo.Computation, whole bool) *ynnPlan {
	p := &ynnPlan{spec: map[*hlo.Instruction]ynnSpec{}, repl: map[*hlo.Instruction]*hlo.Instruction{},
		wide: map[*hlo.Instruction]*hlo.Instruction{}}
	if whole {
		f := &eval.YNNFusion{Members: map[*hlo.Instruction]bool{}, Root: c.Root}
		p.member = map[*hlo.Instruction]*eval.YNNFusion{}
		for _, in := range c.Instructions {
			f.Members[in] = true
			p.member[in] = f
		}
	} else {
		p.member = eval.PredictYNNFusions(c)
	}
	return p
}

// specs works out, on c as it stands (bf16 members widened), the f32 ops
// that YNNPACK computes its own way, with their folds.
func (p *ynnPlan) specs(c *hlo.Computation) {
	if len(p.member) == 0 {
		return
	}
	users := map[*hlo.Instruction][]*hlo.Instruction{}
	for _, in := range c.Instructions {
		for _, o := range in.Operands {
			users[o] = append(users[o], in)
		}
	}
	oneUser := func(v *hlo.Instruction) *hlo.Instruction {
		us := users[v]
		if len(us) != 1 || v == c.Root {
			return nil
		}
		return us[0]
	}
	f32 := func(in *hlo.Instruction) bool { return in.Shape.IsArray() && in.Shape.Elem == dtype.F32 }
	// f64 members (jax_enable_x64) run YNNPACK's fp64 kernels where
	// eval.YNNOp64 has one; their folds compose in double, unrounded.
	f64 := func(in *hlo.Instruction) bool {
		return in.Shape.IsArray() && in.Shape.Elem == dtype.F64 && eval.YNNOp64(ynnUnaryName(in))
	}
	float := func(in *hlo.Instruction) bool { return f32(in) || in.Shape.IsArray() && in.Shape.Elem == dtype.F64 }
	sameType := func(a, b *hlo.Instruction) bool { return a.Shape.Elem == b.Shape.Elem }
	// Output folds first: a scalar multiply folded into a result is no
	// longer a link of another op's input chain.
	folded := map[*hlo.Instruction]bool{}
	type outFold struct {
		last   *hlo.Instruction
		c0, c1 float64
	}
	outs := map[*hlo.Instruction]outFold{}
	for _, in := range c.Instructions {
		name, f := ynnUnaryName(in), p.member[in]
		if f == nil || !f32(in) && !f64(in) {
			continue
		}
		switch name {
		case "exp", "expm1", "log", "log1p", "tanh", "erf":
		default:
			continue
		}
		affine := name == "tanh" || name == "erf"
		c0, c1 := 0.0, 1.0
		v := in
		for {
			w := oneUser(v)
			if w == nil || p.member[w] != f || !float(w) || !sameType(w, in) {
				break
			}
			a, b, x, ok := ynnScalarArith(w)
			if !ok || x != v || !affine && b != 0 {
				break
			}
			c0, c1 = c0*a+b, c1*a
			folded[w] = true
			v = w
		}
		outs[in] = outFold{v, c0, c1}
	}
	// inputFold walks the scalar multiplies, divides and negations feeding
	// an op inside its fusion: the operand they start from, their product.
	inputFold := func(in *hlo.Instruction) (*hlo.Instruction, float64) {
		f := p.member[in]
		x, a := in.Operands[0], 1.0
		for p.member[x] == f && !folded[x] && float(x) && sameType(x, in) {
			fa, fb, y, ok := ynnScalarArith(x)
			if !ok || fb != 0 {
				break
			}
			a *= fa
			x = y
		}
		return x, a
	}
	for _, in := range c.Instructions {
		f := p.member[in]
		if f == nil || folded[in] {
			continue
		}
		if f64(in) {
			name := ynnUnaryName(in)
			op := eval.YNNOp{Op: name, In: 1, C1: 1, F64: true, In64: 1, C164: 1}
			x := in.Operands[0]
			if name != "tanh" && name != "negate" && name != "rsqrt" {
				x, op.In64 = inputFold(in)
			}
			o, ok := outs[in]
			if !ok {
				o = outFold{in, 0, 1} // rsqrt, negate: no folds
			}
			op.C064, op.C164 = o.c0, o.c1
			p.spec[o.last] = ynnSpec{op, []*hlo.Instruction{x}}
			continue
		}
		if in.Shape.IsArray() && in.Shape.Elem == dtype.F64 && (in.Opcode == "maximum" || in.Opcode == "minimum") {
			if a, b, ok := ynnMinMaxOperands(in); ok {
				p.spec[in] = ynnSpec{eval.YNNOp{Op: in.Opcode, In: 1, C1: 1, F64: true, In64: 1, C164: 1}, []*hlo.Instruction{a, b}}
			}
			continue
		}
		if !f32(in) {
			continue
		}
		switch name := ynnUnaryName(in); name {
		case "exp", "expm1", "log", "log1p", "tanh", "erf":
			op := eval.YNNOp{Op: name, In: 1, C1: 1}
			x := in.Operands[0]
			if name != "tanh" {
				var a float64
				x, a = inputFold(in)
				op.In = float32(a)
			}
			o := outs[in]
			op.C0, op.C1 = float32(o.c0), float32(o.c1)
			p.spec[o.last] = ynnSpec{op, []*hlo.Instruction{x}}
		case "rsqrt", "logistic", "negate":
			p.spec[in] = ynnSpec{eval.YNNOp{Op: name, In: 1, C1: 1}, []*hlo.Instruction{in.Operands[0]}}
		}
		switch in.Opcode {
		case "maximum", "minimum":
			if a, b, ok := ynnMinMaxOperands(in); ok {
				p.spec[in] = ynnSpec{eval.YNNOp{Op: in.Opcode, In: 1, C1: 1}, []*hlo.Instruction{a, b}}
			}
		}
	}
}

// ynnMinMaxOperands are the operands of maximum/minimum in in the order
// YNNPACK's kernel takes them, not ok when XLA's simplifier drops in.
func ynnMinMaxOperands(in *hlo.Instruction) (a, b *hlo.Instruction, ok bool) {
	if len(in.Operands) != 2 || eval.YNNIdentityOperand(in) != nil {
		return nil, nil, false // XLA's simplifier drops it: x itself, NaN included
	}
	a, b = in.Operands[0], in.Operands[1]
	_, ka := eval.YNNScalarConst(a)
	_, kb := eval.YNNScalarConst(b)
	if ka && !kb {
		a, b = b, a // XLA's simplifier puts the constant second
	}
	return a, b, true
}

// ynnUnaryName is the YNNTarget op of a unary HLO opcode, "" for others.
func ynnUnaryName(in *hlo.Instruction) string {
	if len(in.Operands) != 1 {
		return ""
	}
	switch in.Opcode {
	case "exponential":
		return "exp"
	case "exponential-minus-one":
		return "expm1"
	case "log":
		return "log"
	case "log-plus-one":
		return "log1p"
	case "tanh", "erf", "rsqrt", "logistic", "negate":
		return in.Opcode
	}
	return ""
}

// ynnScalarArith is YNNPACK's is_scalar_arithmetic: in computes a*x + b
// for a scalar constant (a broadcast one) operand.
func ynnScalarArith(in *hlo.Instruction) (a, b float64, x *hlo.Instruction, ok bool) {
	if in.Opcode == "negate" && len(in.Operands) == 1 {
		return -1, 0, in.Operands[0], true
	}
	if len(in.Operands) != 2 {
		return 0, 0, nil, false
	}
	if k, isK := eval.YNNScalarConst(in.Operands[1]); isK {
		x := in.Operands[0]
		switch in.Opcode {
		case "add":
			return 1, k, x, true
		case "subtract":
			return 1, -k, x, true
		case "multiply":
			return k, 0, x, true
		case "divide":
			return 1 / k, 0, x, true
		}
		return 0, 0, nil, false
	}
	if k, isK := eval.YNNScalarConst(in.Operands[0]); isK {
		x := in.Operands[1]
		switch in.Opcode {
		case "add":
			return 1, k, x, true
		case "subtract":
			return -1, k, x, true
		case "multiply":
			return k, 0, x, true
		}
	}
	return 0, 0, nil, false
}

// ynnNumerics is the rewrite of one instruction: the YNNTarget call the
// plan gives it, or nil to keep it.
func (r *xlaRewriter) ynnNumerics(in *hlo.Instruction) (*hlo.Instruction, error) {
	p := r.ynn
	sp, ok := p.spec[in]
	if !ok {
		return nil, nil
	}
	ops := make([]*hlo.Instruction, len(sp.operands))
	for i, o := range sp.operands {
		if n, ok := p.repl[o]; ok {
			o = n
		}
		ops[i] = o
	}
	nv := r.ynnCall(in.Shape, sp.op, ops...)
	p.repl[in] = nv
	return nv, nil
}

func (r *xlaRewriter) ynnCall(s hlo.Shape, op eval.YNNOp, operands ...*hlo.Instruction) *hlo.Instruction {
	c := r.emit("custom-call", s, operands...)
	c.CustomCallTarget = eval.YNNTarget
	c.BackendConfig = op.Config()
	return c
}

// ynnWiden is the rewrite of one instruction for bf16 inside YNNPACK
// fusions. XLA computes bf16 arithmetic in f32 between converts (float
// normalization), and inside a YNNPACK fusion every f32 -> bf16 -> f32
// pair goes (fusion.cc: rewrite_binary_convert strips a convert from a
// binary op's operand whenever a kernel takes the other type, and
// fuse_converts drops the pairs left, allow_excess_precision being on):
// the fusion computes in f32 and rounds its result once (softmax and layer
// norm on bf16 match jax.jit bit for bit so). Each bf16 elementwise member
// gets an f32 twin reading its operands' twins (bf16 operands from outside
// widened exactly) and is replaced by the twin rounded to bf16, which only
// what needs bf16 bits still reads (the fusion's users, a bf16 max). A
// reduction of a bf16 input widened inside the fusion reads the bf16 data
// itself (rewrite_reduce_convert: sum_k1_bf16_fp32's order), one of a
// widened member the unrounded f32: marked for eval (YNNSumAttr).
func (r *xlaRewriter) ynnWiden(in *hlo.Instruction) (*hlo.Instruction, error) {
	p := r.ynn
	wideOf := func(o *hlo.Instruction) *hlo.Instruction {
		if w, ok := p.wide[o]; ok {
			return w
		}
		return nil
	}
	f := p.member[in]
	if f == nil && in.Opcode == "dot" && len(in.Operands) == 2 && in.Shape.IsArray() && in.Shape.Elem == dtype.BF16 {
		// A dot XLA keeps out of the fusion (its operand copied) still
		// reads the fusion's unrounded f32 value where its widening joined
		// the fusion (eval.YNNFusion.WideDotOperands).
		var wide [2]*hlo.Instruction
		for i, o := range in.Operands {
			if of := p.member[o]; of != nil && of.WideDotOperands[in][i] {
				wide[i] = wideOf(o)
			}
		}
		if wide[0] == nil && wide[1] == nil {
			return nil, nil
		}
		return r.wideDot(in, wide, nil), nil
	}
	if f == nil || !in.Shape.IsArray() {
		return nil, nil
	}
	f32 := hlo.Shape{Elem: dtype.F32, Dims: in.Shape.Dims}
	if x := eval.YNNSelected(in); x != nil {
		if w := wideOf(x); w != nil {
			p.wide[in] = w // XLA folds the select away
		}
		return nil, nil
	}
	switch {
	case in.Opcode == "reduce" && len(in.Operands) == 2 && in.Shape.Elem == dtype.F32:
		x := in.Operands[0]
		hint := ""
		switch src := ynnSquaredBF16(x); {
		case x.Opcode == "convert" && len(x.Operands) == 1 && x.Operands[0].Shape.Elem == dtype.BF16:
			hint = "f32"
			if p.member[x] == f && wideOf(x.Operands[0]) == nil {
				hint = "bf16"
			}
		case src != nil && p.member[x] == f && wideOf(src) == nil:
			// sum(x*x) of bf16 x: YNNPACK's sum_squared reads x itself
			// (rewrite_reduce_sum_of_squared, then rewrite_reduce_convert).
			hint = "bf16"
		}
		if hint != "" {
			attrs := map[string]string{}
			for k, v := range in.FrontendAttrs {
				attrs[k] = v
			}
			attrs[eval.YNNSumAttr] = hint
			in.FrontendAttrs = attrs
		}
		return nil, nil
	case in.Opcode == "convert" && len(in.Operands) == 1:
		o := in.Operands[0]
		switch {
		case in.Shape.Elem == dtype.BF16 && o.Shape.Elem == dtype.F32:
			p.wide[in] = o
		case in.Shape.Elem == dtype.F32 && o.Shape.Elem == dtype.BF16:
			if w := wideOf(o); w != nil {
				return w, nil
			}
		}
		return nil, nil
	case in.Shape.Elem != dtype.BF16:
		return nil, nil
	}
	switch in.Opcode {
	case "dot":
		// A bf16 dot in the fusion is an f32 dot between converts (its
		// YNNPACK form); a widened member it reads arrives unrounded, as
		// the pair f32 -> bf16 -> f32 goes (bf16 attention's softmax
		// probabilities reach the second dot in f32, measured on jax
		// 0.10.2: tests/test_ynn_fusion_numerics.py).
		if len(in.Operands) != 2 || in.Operands[0].Shape.Elem != dtype.BF16 || in.Operands[1].Shape.Elem != dtype.BF16 {
			return nil, nil
		}
		// Its own result is f32 inside the fusion too: the members reading
		// it see it unrounded (the pair XLA puts after the f32 dot goes).
		wide := [2]*hlo.Instruction{wideOf(in.Operands[0]), wideOf(in.Operands[1])}
		return r.wideDot(in, wide, f), nil
	case "broadcast", "reshape", "bitcast":
		if w := wideOf(in.Operands[0]); w != nil {
			t := r.emit(in.Opcode, f32, w)
			t.Dimensions = in.Dimensions
			p.member[t] = f
			p.wide[in] = t
		}
		return nil, nil
	}
	if _, ok := eval.YNNElementwise(in.Opcode); !ok {
		return nil, nil
	}
	ops := make([]*hlo.Instruction, len(in.Operands))
	for i, o := range in.Operands {
		switch w := wideOf(o); {
		case w != nil:
			ops[i] = w
		case o.Shape.Elem == dtype.BF16:
			if i == 1 && o == in.Operands[0] {
				ops[i] = ops[0] // x*x stays a square
				break
			}
			ops[i] = r.emit("convert", hlo.Shape{Elem: dtype.F32, Dims: o.Shape.Dims}, o)
			p.member[ops[i]] = f
		default:
			ops[i] = o
		}
	}
	t := r.emit(in.Opcode, f32, ops...)
	t.Dimensions = in.Dimensions
	p.member[t] = f
	nv := r.emit("convert", in.Shape, t)
	p.member[nv] = f
	p.wide[in], p.wide[nv] = t, t
	return nv, nil
}

// wideDot replaces bf16 dot in by its f32 form rounded to bf16, reading
// the f32 values given (an operand without one widened exactly); f is the
// fusion the dot is in, nil for none.
func (r *xlaRewriter) wideDot(in *hlo.Instruction, wide [2]*hlo.Instruction, f *eval.YNNFusion) *hlo.Instruction {
	p := r.ynn
	w := *in
	w.Name, w.Shape, w.Parent = r.newName("dot"), hlo.Shape{Elem: dtype.F32, Dims: in.Shape.Dims}, r.c
	w.Operands = make([]*hlo.Instruction, 2)
	for i, o := range in.Operands {
		if wide[i] != nil {
			w.Operands[i] = wide[i]
		} else {
			w.Operands[i] = r.widen(o)
		}
	}
	r.out = append(r.out, &w)
	nv := r.emit("convert", in.Shape, &w)
	if f != nil {
		p.member[&w], p.member[nv] = f, f
		p.wide[in], p.wide[nv] = &w, &w
	}
	return nv
}

// ynnRewrites rewrites c's YNNPACK fusions (the whole of c when whole is
// set): bf16 widened, then the f32 ops YNNPACK computes its own way.
func (r *xlaRewriter) ynnRewrites(c *hlo.Computation, whole bool, before map[*hlo.Instruction]int) error {
	r.ynn = planYNN(c, whole)
	if len(r.ynn.member) == 0 {
		return nil
	}
	if err := r.rewrite(c, r.ynnReduceWindow); err != nil {
		return err
	}
	if err := r.rewrite(c, r.ynnWiden); err != nil {
		return err
	}
	pruneDead(c, before)
	r.ynn.specs(c)
	if len(r.ynn.spec) == 0 {
		return nil
	}
	return r.rewrite(c, r.ynnNumerics)
}

// ynnSquaredBF16 returns x when v is x*x of a bf16 x widened to f32 (the
// same widening, or two of the same x), else nil.
func ynnSquaredBF16(v *hlo.Instruction) *hlo.Instruction {
	if v.Opcode != "multiply" || len(v.Operands) != 2 {
		return nil
	}
	a, b := v.Operands[0], v.Operands[1]
	if a.Opcode != "convert" || b.Opcode != "convert" || len(a.Operands) != 1 || len(b.Operands) != 1 {
		return nil
	}
	if x := a.Operands[0]; x == b.Operands[0] && x.Shape.Elem == dtype.BF16 {
		return x
	}
	return nil
}

// cseYNN merges the YNNTarget calls of c that compute the same op on the
// same operands (ynnWiden gives a bf16 member's f32 twin to each reader, so
// softmax's exp is asked for twice: once summed, once divided): the later
// call's users read the first one, which computes the same bits. It runs
// after every rewrite that counts uses (contraction), so it changes where
// values come from, never which arithmetic runs.
func cseYNN(c *hlo.Computation) {
	type key struct {
		config string
		shape  string
		ops    [3]*hlo.Instruction
	}
	seen := map[key]*hlo.Instruction{}
	repl := map[*hlo.Instruction]*hlo.Instruction{}
	for _, in := range c.Instructions {
		if len(repl) > 0 {
			remap(in.Operands, repl)
			remap(in.ControlPredecessors, repl)
		}
		if in.Opcode != "custom-call" || in.CustomCallTarget != eval.YNNTarget || len(in.Operands) > 3 ||
			len(in.Called) != 0 || len(in.ControlPredecessors) != 0 || !in.Shape.IsArray() {
			continue
		}
		k := key{config: in.BackendConfig, shape: plainShape(in.Shape).String()}
		copy(k.ops[:], in.Operands)
		if first, ok := seen[k]; ok && in != c.Root {
			repl[in] = first
			continue
		}
		if _, ok := seen[k]; !ok {
			seen[k] = in
		}
	}
}

// plainShape is s without its layout when that layout is the default
// (row-major, untiled), which is how the evaluator lays out a shape that
// has none.
func plainShape(s hlo.Shape) hlo.Shape {
	l := s.Layout
	if l == nil || len(l.Tiles) != 0 || l.ElementSizeBits != 0 || l.MemorySpace != 0 || len(l.Extra) != 0 ||
		len(l.MinorToMajor) != len(s.Dims) {
		return s
	}
	for i, d := range l.MinorToMajor {
		if d != int64(len(s.Dims)-1-i) {
			return s
		}
	}
	s.Layout = nil
	return s
}
