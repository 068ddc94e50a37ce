package golden

import (
	"os"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
)

// XLA:CPU computes bf16 arithmetic in f32 (float normalization: converts to
// f32 around an f32 op, then a convert back to bf16). When the program then
// converts that bf16 result to f32 itself (`(a + b).astype(jnp.float32)` on
// bf16 a, b), XLA's excess-precision simplification (on by default,
// xla_allow_excess_precision) drops the pair f32 -> bf16 -> f32, so the
// convert yields the op's f32 value, never rounded to bf16. Other users of
// the bf16 op still see it rounded, and roundings between consecutive bf16
// ops stay. Measured on jax 0.10.2 (tests/test_excess_precision.py): every
// op listed below, dots and convolutions included, with the chain broken by any
// instruction between the op and the convert (a reshape, a transpose).
//
// Dots count when XLA's DotDecomposer leaves them as they are (canonicalDot):
// it reshapes the result of the others, which keeps the rounding
// (tests/jax_programs.py model-attention-bf16).
//
// Left alone: logistic (XLA expands it into several bf16 ops first; its last
// step alone would be unrounded), reductions (jnp inserts its own converts,
// which stay), ops whose bf16 result is exact (max, min, abs, floor, select,
// ...), f16 (computed natively) and the 8-bit floats (not measured).

// excessPrecisionOff turns the rewrite off (GOLDTRACE_NO_EXCESS_PRECISION=1),
// to compare.
var excessPrecisionOff = os.Getenv("GOLDTRACE_NO_EXCESS_PRECISION") == "1"

// excessPrecisionOps are the bf16 ops whose f32 value a convert to f32 takes.
var excessPrecisionOps = map[string]bool{
	"add": true, "subtract": true, "multiply": true, "divide": true, "power": true, "atan2": true,
	"exponential": true, "exponential-minus-one": true, "log": true, "log-plus-one": true,
	"tanh": true, "sqrt": true, "rsqrt": true, "cbrt": true, "sine": true, "cosine": true, "tan": true,
	"erf": true, "dot": true, "convolution": true,
}

// excessPrecision rewrites convert(op) -> f32, op a bf16 instruction of
// excessPrecisionOps, into op computed in f32 on its operands converted to
// f32 (exact), which is what the evaluator computes before rounding a bf16
// op anyway. A dot or convolution read by such a convert becomes, for its
// other users, convert(its f32 value) -> bf16: XLA's bf16 value is the f32
// one rounded (float normalization puts the f32 op between converts, and
// the evaluator's bf16 dot is the f32 dot rounded the same way), so a
// product read both ways is computed once. Elementwise ops are left to be
// computed twice: recomputing one is cheaper than the full-size f32 value
// the blocked fusion would then write and read back (softmax's exp).
func (r *xlaRewriter) excessPrecision(in *hlo.Instruction) (*hlo.Instruction, error) {
	if excessPrecisionOff || len(in.Operands) == 0 || !in.Shape.IsArray() {
		return nil, nil
	}
	if r.epComp != r.c {
		r.epComp, r.epWide, r.epRead = r.c, map[*hlo.Instruction]*hlo.Instruction{}, map[*hlo.Instruction]bool{}
		for _, x := range r.c.Instructions {
			if widensBF16(x) {
				r.epRead[x.Operands[0]] = true
			}
		}
	}
	if widensBF16(in) {
		if w := r.epWide[in.Operands[0]]; w != nil {
			return w, nil // a product's f32 value, computed for it below
		}
		if op := in.Operands[0]; op.Opcode != "dot" && op.Opcode != "convolution" {
			return r.wideOf(op, &in.Shape), nil
		}
		return nil, nil
	}
	if (in.Opcode == "dot" || in.Opcode == "convolution") && r.epRead[in] {
		if wide := r.wideOf(in, nil); wide != nil {
			narrow := r.emit("convert", in.Shape, wide)
			r.epWide[narrow] = wide
			return narrow, nil
		}
	}
	return nil, nil
}

// wideOf emits op computed in f32 on its operands converted to f32, with
// shape s (nil: op's own in f32), or returns nil when op is not a bf16 op
// of excessPrecisionOps on bf16 operands.
func (r *xlaRewriter) wideOf(op *hlo.Instruction, s *hlo.Shape) *hlo.Instruction {
	if !excessPrecisionOps[op.Opcode] || !op.Shape.IsArray() || op.Shape.Elem != dtype.BF16 ||
		len(op.Called) > 0 || op.Opcode == "dot" && !canonicalDot(op) {
		return nil
	}
	for _, x := range op.Operands {
		if !x.Shape.IsArray() || x.Shape.Elem != dtype.BF16 {
			return nil
		}
	}
	operands := make([]*hlo.Instruction, len(op.Operands))
	for i, x := range op.Operands {
		operands[i] = r.widen(x)
	}
	wide := *op
	wide.Name = r.newName(op.Opcode)
	if s != nil {
		wide.Shape = *s
	} else {
		wide.Shape.Elem = dtype.F32
	}
	wide.Operands = operands
	wide.Parent = r.c
	r.out = append(r.out, &wide)
	return &wide
}

// widensBF16 reports whether in converts a bf16 array to f32.
func widensBF16(in *hlo.Instruction) bool {
	return in.Opcode == "convert" && len(in.Operands) == 1 && in.Shape.IsArray() && in.Shape.Elem == dtype.F32 &&
		in.Operands[0].Shape.IsArray() && in.Operands[0].Shape.Elem == dtype.BF16
}

// widen converts the bf16 value x to f32, exactly. A transpose is widened
// below it (transpose of the widened source), so that a dot still sees its
// operand's transpose, which XLA folds into the dot's layout (and which
// picks YNNPACK's plan, dot_ynn.go).
func (r *xlaRewriter) widen(x *hlo.Instruction) *hlo.Instruction {
	f32 := func(s hlo.Shape) hlo.Shape {
		s.Elem, s.Layout = dtype.F32, nil
		return s
	}
	if x.Opcode == "transpose" && len(x.Operands) == 1 && x.Operands[0].Shape.IsArray() {
		t := r.emit("transpose", f32(x.Shape), r.emit("convert", f32(x.Operands[0].Shape), x.Operands[0]))
		t.Dimensions = x.Dimensions
		return t
	}
	return r.emit("convert", f32(x.Shape), x)
}

// canonicalDot reports whether dot is in the form XLA's DotDecomposer
// leaves alone: batch dimensions leading on both operands, in order, then
// one free and one contracting dimension each (either order). Other dots are
// rewritten around a reshape of their result, which keeps its rounding
// (measured: "bqhd,bkhd->bhqk" on bf16 stays rounded, "bhqd,bhkd->bhqk" does
// not).
func canonicalDot(dot *hlo.Instruction) bool {
	d := dot.DotDims
	if d == nil || len(dot.Operands) != 2 || len(d.LhsContracting) != 1 || len(d.RhsContracting) != 1 {
		return false
	}
	nb := len(d.LhsBatch)
	if len(d.RhsBatch) != nb || len(dot.Operands[0].Shape.Dims) != nb+2 || len(dot.Operands[1].Shape.Dims) != nb+2 {
		return false
	}
	for i := 0; i < nb; i++ {
		if d.LhsBatch[i] != int64(i) || d.RhsBatch[i] != int64(i) {
			return false
		}
	}
	return true
}
