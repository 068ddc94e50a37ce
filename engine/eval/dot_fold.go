package eval

import (
	"reflect"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
)

// SameYNNDot reports whether a and b are f32 dots of equal extents that
// XLA:CPU hands to YNNPACK with one plan (ynnRoute, which plans on the
// layout XLA's pipeline gives the operands, transposes folded or not):
// goldtrace sums every element of both in the plan's order, whatever the
// memory layout it reads, so b (reading a transpose's source in place) may
// replace a (reading the transpose's copy).
func SameYNNDot(a, b *hlo.Instruction) bool {
	pa, ya := ynnDotPlan(a)
	pb, yb := ynnDotPlan(b)
	return ya != nil && yb != nil && pa.b == pb.b && pa.m == pb.m && pa.k == pb.k && pa.n == pb.n &&
		reflect.DeepEqual(ya.tasks, yb.tasks)
}

// ynnDotPlan is d's plan and its YNNPACK route when d is an f32 dot that
// ynnRoute takes, else a nil route.
func ynnDotPlan(d *hlo.Instruction) (*dotPlan, *ynnDot) {
	if d.Opcode != "dot" || len(d.Operands) != 2 || !d.Shape.IsArray() || d.Shape.Elem != dtype.F32 {
		return nil, nil
	}
	for _, o := range d.Operands {
		if !o.Shape.IsArray() || o.Shape.Elem != dtype.F32 {
			return nil, nil
		}
	}
	p, err := planDot(d.Operands[0].Shape.Dims, d.Operands[1].Shape.Dims, d.DotDims)
	if err != nil {
		return nil, nil
	}
	return p, ynnRoute(p, dtype.F32, dtype.F32, dtype.F32, d.Operands[0], d.Operands[1])
}
