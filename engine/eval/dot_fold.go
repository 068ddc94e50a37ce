package eval

import (
	"reflect"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
)

// SameYNNDot reports whether a and b are f32 (or f64) dots of equal
// extents and type that XLA:CPU hands to YNNPACK with one plan (ynnRoute or
// ynnRouteF64, which plan on the layout XLA's pipeline gives the operands,
// transposes folded or not): goldtrace sums every element of both in the
// plan's order, whatever the memory layout it reads, so b (reading a
// transpose's source in place) may replace a (reading the transpose's copy).
func SameYNNDot(a, b *hlo.Instruction) bool {
	pa, ta := ynnDotPlan(a)
	pb, tb := ynnDotPlan(b)
	return ta != nil && tb != nil && a.Shape.Elem == b.Shape.Elem &&
		pa.b == pb.b && pa.m == pb.m && pa.k == pb.k && pa.n == pb.n && reflect.DeepEqual(ta, tb)
}

// ynnDotPlan is d's plan and its YNNPACK tasks when d is an f32 or f64 dot
// (operands of its type) that ynnRoute or ynnRouteF64 takes, else nil tasks.
func ynnDotPlan(d *hlo.Instruction) (*dotPlan, []ynnTask) {
	if d.Opcode != "dot" || len(d.Operands) != 2 || !d.Shape.IsArray() {
		return nil, nil
	}
	typ := d.Shape.Elem
	if typ != dtype.F32 && typ != dtype.F64 {
		return nil, nil
	}
	for _, o := range d.Operands {
		if !o.Shape.IsArray() || o.Shape.Elem != typ {
			return nil, nil
		}
	}
	p, err := planDot(d.Operands[0].Shape.Dims, d.Operands[1].Shape.Dims, d.DotDims)
	if err != nil {
		return nil, nil
	}
	if typ == dtype.F64 {
		return p, ynnRouteF64(p, typ, typ, typ, d.Operands[0], d.Operands[1])
	}
	if y := ynnRoute(p, typ, typ, typ, d.Operands[0], d.Operands[1]); y != nil {
		return p, y.tasks
	}
	return p, nil
}
