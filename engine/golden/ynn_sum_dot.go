package golden

import (
	"goldtrace/engine/dtype"
	"goldtrace/engine/eval"
	"goldtrace/engine/hlo"
)

// YNNPACK rewrites a sum of products with a broadcast operand into a dot
// (ynnpack/subgraph/fusion.cc), whose kernel takes each element's products
// in one FMA chain, k in order from zero, where the fusion's multiply and
// reduce would round every product. Measured on jax 0.10.2 for
// sum(a[.., K, n..] * broadcast(b[.., K]), K) with the broadcast constant
// along the kept dimensions after K (top-2 mixture-of-experts routing,
// sum(o[T,K,F] * w[T,K,None], 1)): bit for bit for K from 2 to 128. Sums
// over the innermost dimension (a row dot, whose kernel has lanes) and
// longer K (K blocks) are left as they are.

const ynnSumDotMaxK = 128

// ynnSumDot rewrites such a reduce, a YNNPACK fusion member, into the
// chain: fma(a_k, b_k, ... fma(a_0, b_0, 0)), a_k the slices at k.
func (r *xlaRewriter) ynnSumDot(in *hlo.Instruction) (*hlo.Instruction, error) {
	if in.Opcode != "reduce" || len(in.Operands) != 2 || len(in.Dimensions) != 1 || !r.ynn.isMember(in) ||
		!in.Shape.IsArray() || in.Shape.Elem != dtype.F32 || eval.FastReducer(in.ToApply()) != "add" ||
		!isZeroScalar(in.Operands[1]) {
		return nil, nil
	}
	x := in.Operands[0]
	d := int(in.Dimensions[0])
	if x.Opcode != "multiply" || len(x.Operands) != 2 || !r.oneUse(x) || !r.ynn.isMember(x) || x.Shape.Elem != dtype.F32 {
		return nil, nil
	}
	dims := x.Shape.Dims
	k := dims[d]
	inner := int64(1)
	for _, e := range dims[d+1:] {
		inner *= e
	}
	if k < 2 || k > ynnSumDotMaxK || inner < 2 {
		return nil, nil
	}
	// b: a broadcast that does not vary along the dimensions after d, but
	// does along d; a: the other operand, not such a broadcast.
	flat := func(o *hlo.Instruction) bool {
		if o.Opcode != "broadcast" || len(o.Operands) != 1 {
			return false
		}
		alongD := false
		for i, od := range o.Dimensions {
			if int(od) > d && o.Operands[0].Shape.Dims[i] != 1 {
				return false
			}
			if int(od) == d {
				alongD = true
			}
		}
		return alongD
	}
	a, b := x.Operands[0], x.Operands[1]
	if flat(a) {
		a, b = b, a
	}
	if !flat(b) || flat(a) {
		return nil, nil
	}
	sliced := func(o *hlo.Instruction, j int64) *hlo.Instruction {
		sd := append([]int64(nil), dims...)
		sd[d] = 1
		s := r.emit("slice", hlo.Shape{Elem: dtype.F32, Dims: sd}, o)
		s.Slice = make([]hlo.SliceDim, len(dims))
		for i, e := range dims {
			s.Slice[i] = hlo.SliceDim{Start: 0, Limit: e, Stride: 1}
		}
		s.Slice[d] = hlo.SliceDim{Start: j, Limit: j + 1, Stride: 1}
		return s
	}
	sd := append([]int64(nil), dims...)
	sd[d] = 1
	shape := hlo.Shape{Elem: dtype.F32, Dims: sd}
	acc := r.emit("broadcast", shape, in.Operands[1])
	for j := int64(0); j < k; j++ {
		f := r.emit("custom-call", shape, sliced(a, j), sliced(b, j), acc)
		f.CustomCallTarget = eval.FMATarget
		acc = f
	}
	return r.emit("reshape", in.Shape, acc), nil
}

// isZeroScalar reports whether x is the f32 scalar constant +0.
func isZeroScalar(x *hlo.Instruction) bool {
	return x.Opcode == "constant" && x.Shape.IsArray() && len(x.Shape.Dims) == 0 && x.Shape.Elem == dtype.F32 &&
		x.Literal != nil && x.Literal.Tensor != nil && len(x.Literal.Tensor.Data) == 4 &&
		x.Literal.Tensor.Data[0]|x.Literal.Tensor.Data[1]|x.Literal.Tensor.Data[2]|x.Literal.Tensor.Data[3] == 0
}
