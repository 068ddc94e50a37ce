package golden

import (
	"goldtrace/engine/hlo"
)

// upcastMixedDot gives a dot whose operands are of different float types
// (an f32 cotangent times a bf16 operand in jax.grad of bf16 attention,
// which jax leaves mixed under algorithm=dot_bf16_bf16_f32) the operand
// types of its result: the narrower operand converted exactly, as XLA's
// operand upcasting does. XLA:CPU then computes the f32 dot of the widened
// operands (measured on jax 0.10.2: bit for bit the dot of
// x.astype(f32) and y.astype(f32), tests/test_dot_algorithms.py), which the
// evaluator's f32 paths reproduce; the mixed dot would take none of them.
func (r *xlaRewriter) upcastMixedDot(in *hlo.Instruction) (*hlo.Instruction, error) {
	if in.Opcode != "dot" || len(in.Operands) != 2 || !in.Shape.IsArray() {
		return nil, nil
	}
	a, b := in.Operands[0], in.Operands[1]
	if !a.Shape.IsArray() || !b.Shape.IsArray() || a.Shape.Elem == b.Shape.Elem {
		return nil, nil
	}
	out := in.Shape.Elem
	if !out.IsFloat() || !a.Shape.Elem.IsFloat() || !b.Shape.Elem.IsFloat() ||
		a.Shape.Elem.Bits() > out.Bits() || b.Shape.Elem.Bits() > out.Bits() {
		return nil, nil
	}
	up := func(x *hlo.Instruction) *hlo.Instruction {
		if x.Shape.Elem == out {
			return x
		}
		return r.emit("convert", hlo.Shape{Elem: out, Dims: x.Shape.Dims}, x)
	}
	d := *in
	d.Operands = []*hlo.Instruction{up(a), up(b)}
	d.Parent = r.c
	r.out = append(r.out, &d)
	return &d, nil
}
