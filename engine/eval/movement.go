package eval

// Shape and data-movement opcodes. Values are immutable, so ops that do not
// change bytes (reshape, copy, opt-barrier...) share their operand's storage.

import (
	"fmt"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func init() {
	Register("constant", evalConstant)
	Register("iota", evalIota)
	Register("tuple", func(_ *Evaluator, _ *hlo.Instruction, args []Value) (Value, error) {
		return TupleValue(append([]Value{}, args...)...), nil
	})
	Register("get-tuple-element", evalGetTupleElement)
	Register("broadcast", evalBroadcast)
	Register("reshape", evalReshape)
	Register("dynamic-reshape", evalReshape)
	Register("transpose", evalTranspose)
	Register("reverse", evalReverse)
	Register("slice", evalSlice)
	Register("dynamic-slice", evalDynamicSlice)
	Register("dynamic-update-slice", evalDynamicUpdateSlice)
	Register("pad", evalPad)
	Register("concatenate", evalConcatenate)
	Register("bitcast", evalBitcast)
	for _, op := range []string{"copy", "opt-barrier", "domain", "add-dependency", "set-dimension-size"} {
		// add-dependency orders its operand after a token; set-dimension-size
		// only changes the dynamic size, and arrays here are always static.
		Register(op, passThrough)
	}
	Register("get-dimension-size", evalGetDimensionSize)
	Register("copy-start", func(_ *Evaluator, _ *hlo.Instruction, args []Value) (Value, error) {
		if len(args) != 1 {
			return Value{}, fmt.Errorf("expected 1 operand, got %d", len(args))
		}
		// (destination, source, context) as XLA shapes it.
		return TupleValue(args[0], args[0], ArrayValue(tensor.New(dtype.U32, nil))), nil
	})
	Register("copy-done", func(_ *Evaluator, _ *hlo.Instruction, args []Value) (Value, error) {
		if len(args) != 1 || !args[0].IsTuple() || len(args[0].Tuple) < 1 {
			return Value{}, fmt.Errorf("copy-done needs the tuple of a copy-start")
		}
		return args[0].Tuple[0], nil
	})
}

func passThrough(_ *Evaluator, _ *hlo.Instruction, args []Value) (Value, error) {
	if len(args) < 1 {
		return Value{}, fmt.Errorf("expected an operand")
	}
	return args[0], nil
}

func evalConstant(_ *Evaluator, in *hlo.Instruction, _ []Value) (Value, error) {
	if in.Literal == nil {
		return Value{}, fmt.Errorf("constant has no literal")
	}
	return literalValue(in.Literal)
}

func literalValue(l *hlo.Literal) (Value, error) {
	if l.Tensor != nil {
		return ArrayValue(l.Tensor), nil
	}
	elems := make([]Value, len(l.Tuple))
	for i, e := range l.Tuple {
		if e == nil {
			return Value{}, fmt.Errorf("tuple literal element %d is missing", i)
		}
		v, err := literalValue(e)
		if err != nil {
			return Value{}, err
		}
		elems[i] = v
	}
	return TupleValue(elems...), nil
}

func evalIota(_ *Evaluator, in *hlo.Instruction, _ []Value) (Value, error) {
	to, err := resultElem(in)
	if err != nil {
		return Value{}, err
	}
	dims := in.Shape.Dims
	d := in.IotaDimension
	if d < 0 || int(d) >= len(dims) {
		return Value{}, fmt.Errorf("iota_dimension %d out of range for rank %d", d, len(dims))
	}
	if err := tensor.CheckShape(to, dims); err != nil {
		return Value{}, err
	}
	idx := tensor.New(dtype.S64, dims)
	v := idx.I64()
	stride := tensor.Strides(dims)[d]
	for i := range v {
		v[i] = (int64(i) / stride) % dims[d]
	}
	out, err := convert(idx, to)
	if err != nil {
		return Value{}, err
	}
	return ArrayValue(out), nil
}

func evalGetTupleElement(_ *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if len(args) != 1 || !args[0].IsTuple() {
		return Value{}, fmt.Errorf("get-tuple-element needs one tuple operand")
	}
	i := in.TupleIndex
	if i < 0 || int(i) >= len(args[0].Tuple) {
		return Value{}, fmt.Errorf("tuple index %d out of range for a %d-tuple", i, len(args[0].Tuple))
	}
	return args[0].Tuple[i], nil
}

// arrayResult validates the result dims of an instruction for allocation.
func arrayResult(in *hlo.Instruction) (dtype.Type, []int64, error) {
	to, err := resultElem(in)
	if err != nil {
		return 0, nil, err
	}
	if err := tensor.CheckShape(to, in.Shape.Dims); err != nil {
		return 0, nil, err
	}
	return to, in.Shape.Dims, nil
}

func evalBroadcast(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	ts, err := arrayArgs(args, 1)
	if err != nil {
		return Value{}, err
	}
	x := ts[0]
	_, dims, err := arrayResult(in)
	if err != nil {
		return Value{}, err
	}
	if len(in.Dimensions) != x.Rank() {
		return Value{}, fmt.Errorf("broadcast dimensions %v do not match operand rank %d", in.Dimensions, x.Rank())
	}
	xs := tensor.Strides(x.Dims)
	strides := make([]int64, len(dims))
	for i, d := range in.Dimensions {
		if d < 0 || int(d) >= len(dims) || dims[d] != x.Dims[i] {
			return Value{}, fmt.Errorf("broadcast maps operand dim %d (%d) to result dim %d of %v", i, x.Dims[i], d, dims)
		}
		strides[d] = xs[i]
	}
	if x.NumElements() == 1 {
		// A scalar fills the result: zero bits are already there, others
		// double a filled prefix.
		out := ev.newTensor(x.Type, dims, true)
		if e := x.Data; !allZero(e) && len(out.Data) > 0 {
			n := copy(out.Data, e)
			for n < len(out.Data) {
				n += copy(out.Data[n:], out.Data[:n])
			}
		}
		return ArrayValue(out), nil
	}
	out := ev.newTensor(x.Type, dims, false) // copyView writes every element
	copyView(x.Type.Size(), dims, out.Data, dense(dims), x.Data, view{0, strides})
	return ArrayValue(out), nil
}

func allZero(b []byte) bool {
	for _, v := range b {
		if v != 0 {
			return false
		}
	}
	return true
}

// reshaped shares x's storage under new dims.
func reshaped(x *tensor.Tensor, dims []int64) (*tensor.Tensor, error) {
	if tensor.NumElements(dims) != x.NumElements() {
		return nil, fmt.Errorf("cannot reshape %v to %v", x, tensor.ShapeString(x.Type, dims))
	}
	return &tensor.Tensor{Type: x.Type, Dims: append([]int64{}, dims...), Data: x.Data}, nil
}

func evalReshape(_ *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if len(args) < 1 || args[0].T == nil {
		return Value{}, fmt.Errorf("reshape needs an array operand")
	}
	out, err := reshaped(args[0].T, in.Shape.Dims)
	if err != nil {
		return Value{}, err
	}
	return ArrayValue(out), nil
}

// transpose permutes dims: result dim i is operand dim perm[i].
func transpose(x *tensor.Tensor, perm []int64) (*tensor.Tensor, error) {
	if len(perm) != x.Rank() {
		return nil, fmt.Errorf("permutation %v does not match rank %d", perm, x.Rank())
	}
	xs := tensor.Strides(x.Dims)
	dims := make([]int64, len(perm))
	strides := make([]int64, len(perm))
	seen := make([]bool, len(perm))
	for i, p := range perm {
		if p < 0 || int(p) >= len(perm) || seen[p] {
			return nil, fmt.Errorf("%v is not a permutation", perm)
		}
		seen[p] = true
		dims[i], strides[i] = x.Dims[p], xs[p]
	}
	out := tensor.New(x.Type, dims)
	copyView(x.Type.Size(), dims, out.Data, dense(dims), x.Data, view{0, strides})
	return out, nil
}

func evalTranspose(_ *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	ts, err := arrayArgs(args, 1)
	if err != nil {
		return Value{}, err
	}
	out, err := transpose(ts[0], in.Dimensions)
	if err != nil {
		return Value{}, err
	}
	return ArrayValue(out), nil
}

func evalReverse(_ *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	ts, err := arrayArgs(args, 1)
	if err != nil {
		return Value{}, err
	}
	x := ts[0]
	sv := dense(x.Dims)
	for _, d := range in.Dimensions {
		if d < 0 || int(d) >= x.Rank() {
			return Value{}, fmt.Errorf("reverse dimension %d out of range", d)
		}
		if x.Dims[d] > 0 {
			sv.off += (x.Dims[d] - 1) * sv.strides[d]
			sv.strides[d] = -sv.strides[d]
		}
	}
	out := tensor.New(x.Type, x.Dims)
	copyView(x.Type.Size(), x.Dims, out.Data, dense(x.Dims), x.Data, sv)
	return ArrayValue(out), nil
}

func evalSlice(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	ts, err := arrayArgs(args, 1)
	if err != nil {
		return Value{}, err
	}
	x := ts[0]
	if len(in.Slice) != x.Rank() {
		return Value{}, fmt.Errorf("slice has %d ranges for rank %d", len(in.Slice), x.Rank())
	}
	sv := dense(x.Dims)
	dims := make([]int64, x.Rank())
	for i, s := range in.Slice {
		stride := s.Stride
		if stride == 0 {
			stride = 1
		}
		if s.Start < 0 || s.Limit > x.Dims[i] || s.Start > s.Limit || stride < 0 {
			return Value{}, fmt.Errorf("slice [%d:%d:%d] out of range for dimension %d of %v", s.Start, s.Limit, s.Stride, i, x)
		}
		dims[i] = (s.Limit - s.Start + stride - 1) / stride
		sv.off += s.Start * sv.strides[i]
		sv.strides[i] *= stride
	}
	out := ev.newTensor(x.Type, dims, false) // copyView writes every element
	copyView(x.Type.Size(), dims, out.Data, dense(dims), x.Data, sv)
	return ArrayValue(out), nil
}

// startIndices reads scalar start operands and clamps each to [0, dim-size].
func startIndices(args []Value, dims, sizes []int64) ([]int64, error) {
	if len(args) != len(dims) {
		return nil, fmt.Errorf("expected %d start indices, got %d", len(dims), len(args))
	}
	starts := make([]int64, len(dims))
	for i, a := range args {
		if a.T == nil || a.T.NumElements() != 1 || !(a.T.Type.IsInteger()) {
			return nil, fmt.Errorf("start index %d must be an integer scalar", i)
		}
		var s int64
		if a.T.Type.IsUnsigned() {
			u := asU64(a.T)[0]
			s = int64(min(u, uint64(1)<<62))
		} else {
			s = asI64(a.T)[0]
		}
		if sizes[i] > dims[i] || sizes[i] < 0 {
			return nil, fmt.Errorf("size %d exceeds dimension %d (%d)", sizes[i], i, dims[i])
		}
		starts[i] = max(0, min(s, dims[i]-sizes[i]))
	}
	return starts, nil
}

func evalDynamicSlice(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if len(args) < 1 || args[0].T == nil {
		return Value{}, fmt.Errorf("dynamic-slice needs an array operand")
	}
	x := args[0].T
	sizes := in.DynamicSliceSizes
	if len(sizes) != x.Rank() {
		return Value{}, fmt.Errorf("dynamic_slice_sizes %v do not match rank %d", sizes, x.Rank())
	}
	starts, err := startIndices(args[1:], x.Dims, sizes)
	if err != nil {
		return Value{}, err
	}
	sv := dense(x.Dims)
	for i, s := range starts {
		sv.off += s * sv.strides[i]
	}
	out := ev.newTensor(x.Type, sizes, false) // copyView writes every element
	copyView(x.Type.Size(), sizes, out.Data, dense(sizes), x.Data, sv)
	return ArrayValue(out), nil
}

func evalDynamicUpdateSlice(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if len(args) < 2 || args[0].T == nil || args[1].T == nil {
		return Value{}, fmt.Errorf("dynamic-update-slice needs array operand and update")
	}
	x, u := args[0].T, args[1].T
	if u.Type != x.Type || u.Rank() != x.Rank() {
		return Value{}, fmt.Errorf("update %v does not fit operand %v", u, x)
	}
	starts, err := startIndices(args[2:], x.Dims, u.Dims)
	if err != nil {
		return Value{}, err
	}
	var out *tensor.Tensor
	if ev != nil && (ev.dusInPlace(in) || ev.takeDonation(in, x)) {
		out = x // the loop or the frame owns x and nothing else reads it (while_inplace.go, Evaluator.donation)
	} else {
		out = x.Clone()
	}
	dv := dense(x.Dims)
	for i, s := range starts {
		dv.off += s * dv.strides[i]
	}
	copyView(x.Type.Size(), u.Dims, out.Data, dv, u.Data, dense(u.Dims))
	return ArrayValue(out), nil
}

func evalPad(_ *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	ts, err := arrayArgs(args, 2)
	if err != nil {
		return Value{}, err
	}
	x, pv := ts[0], ts[1]
	if pv.NumElements() != 1 || pv.Type != x.Type {
		return Value{}, fmt.Errorf("padding value must be a %v scalar", x.Type)
	}
	if len(in.Padding) != x.Rank() {
		return Value{}, fmt.Errorf("padding has %d dimensions for rank %d", len(in.Padding), x.Rank())
	}
	dims := make([]int64, x.Rank())
	for i, p := range in.Padding {
		if p.Interior < 0 {
			return Value{}, fmt.Errorf("negative interior padding %d", p.Interior)
		}
		n := x.Dims[i]
		dims[i] = p.Low + p.High + n
		if n > 0 {
			dims[i] += (n - 1) * p.Interior
		}
		if dims[i] < 0 {
			return Value{}, fmt.Errorf("padding %d_%d_%d makes dimension %d negative", p.Low, p.High, p.Interior, i)
		}
	}
	if err := tensor.CheckShape(x.Type, dims); err != nil {
		return Value{}, err
	}
	out := broadcastScalar(pv, dims)
	// Copy the operand elements that land inside the result: element k of
	// dimension i goes to low + k*(interior+1).
	ostr := tensor.Strides(dims)
	dv := view{0, make([]int64, len(dims))}
	sv := dense(x.Dims)
	region := make([]int64, len(dims))
	for i, p := range in.Padding {
		step := p.Interior + 1
		first := int64(0)
		if p.Low < 0 {
			first = (-p.Low + step - 1) / step
		}
		last := x.Dims[i] - 1 // highest k with low + k*step < dims[i]
		if lim := dims[i] - 1 - p.Low; lim < last*step {
			if lim < 0 {
				last = -1
			} else {
				last = lim / step
			}
		}
		region[i] = max(0, last-first+1)
		dv.off += (p.Low + first*step) * ostr[i]
		dv.strides[i] = step * ostr[i]
		sv.off += first * sv.strides[i]
	}
	copyView(x.Type.Size(), region, out.Data, dv, x.Data, sv)
	return ArrayValue(out), nil
}

func evalConcatenate(_ *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	ts, err := arrayArgs(args, len(args))
	if err != nil {
		return Value{}, err
	}
	if len(ts) == 0 || len(in.Dimensions) != 1 {
		return Value{}, fmt.Errorf("concatenate needs operands and one dimension")
	}
	d := in.Dimensions[0]
	first := ts[0]
	if d < 0 || int(d) >= first.Rank() {
		return Value{}, fmt.Errorf("concatenate dimension %d out of range", d)
	}
	dims := append([]int64{}, first.Dims...)
	dims[d] = 0
	for _, t := range ts {
		if t.Type != first.Type || t.Rank() != first.Rank() {
			return Value{}, fmt.Errorf("cannot concatenate %v with %v", first, t)
		}
		for i := range dims {
			if int64(i) != d && t.Dims[i] != first.Dims[i] {
				return Value{}, fmt.Errorf("cannot concatenate %v with %v along %d", first, t, d)
			}
		}
		dims[d] += t.Dims[d]
	}
	out := tensor.New(first.Type, dims)
	dv := dense(dims)
	for _, t := range ts {
		copyView(t.Type.Size(), t.Dims, out.Data, dv, t.Data, dense(t.Dims))
		dv.off += t.Dims[d] * dv.strides[d]
	}
	return ArrayValue(out), nil
}

func evalGetDimensionSize(_ *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	ts, err := arrayArgs(args, 1)
	if err != nil {
		return Value{}, err
	}
	if len(in.Dimensions) != 1 || in.Dimensions[0] < 0 || int(in.Dimensions[0]) >= ts[0].Rank() {
		return Value{}, fmt.Errorf("get-dimension-size needs one valid dimension, got %v", in.Dimensions)
	}
	out := tensor.New(dtype.S32, nil)
	out.I32()[0] = int32(ts[0].Dims[in.Dimensions[0]])
	return ArrayValue(out), nil
}

// evalBitcast reinterprets the operand's physical buffer under the result's
// shape and layout. With default (or absent) layouts that is a reshape.
func evalBitcast(_ *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	ts, err := arrayArgs(args, 1)
	if err != nil {
		return Value{}, err
	}
	x := ts[0]
	to, dims, err := arrayResult(in)
	if err != nil {
		return Value{}, err
	}
	var srcLayout *hlo.Layout
	if len(in.Operands) == 1 {
		srcLayout = in.Operands[0].Shape.Layout
	}
	phys, err := toPhysical(x, srcLayout)
	if err != nil {
		return Value{}, err
	}
	if to != x.Type {
		if to.Size()*int(tensor.NumElements(dims)) != len(phys.Data) {
			return Value{}, fmt.Errorf("bitcast of %v to %v changes the byte size", x, tensor.ShapeString(to, dims))
		}
		phys = &tensor.Tensor{Type: to, Dims: []int64{tensor.NumElements(dims)}, Data: phys.Data}
	}
	out, err := fromPhysical(phys, dims, in.Shape.Layout)
	if err != nil {
		return Value{}, err
	}
	return ArrayValue(out), nil
}

// majorToMinor returns the dimension order of a layout, major first, or nil
// for the default (row-major) order.
func majorToMinor(l *hlo.Layout, rank int) ([]int64, error) {
	if l == nil || len(l.MinorToMajor) == 0 {
		return nil, nil
	}
	if len(l.MinorToMajor) != rank {
		return nil, fmt.Errorf("layout %v does not match rank %d", l.MinorToMajor, rank)
	}
	perm := make([]int64, rank)
	identity := true
	for i, d := range l.MinorToMajor {
		perm[rank-1-i] = d
		if d != int64(rank-1-i) {
			identity = false
		}
	}
	if identity {
		return nil, nil
	}
	return perm, nil
}

// toPhysical returns x's elements in the memory order of layout l, flattened.
func toPhysical(x *tensor.Tensor, l *hlo.Layout) (*tensor.Tensor, error) {
	perm, err := majorToMinor(l, x.Rank())
	if err != nil {
		return nil, err
	}
	if perm != nil {
		if x, err = transpose(x, perm); err != nil {
			return nil, err
		}
	}
	return reshaped(x, []int64{x.NumElements()})
}

// fromPhysical builds the logical tensor of dims whose memory order under
// layout l is the flat buffer phys.
func fromPhysical(phys *tensor.Tensor, dims []int64, l *hlo.Layout) (*tensor.Tensor, error) {
	perm, err := majorToMinor(l, len(dims))
	if err != nil {
		return nil, err
	}
	if perm == nil {
		return reshaped(phys, dims)
	}
	pdims := make([]int64, len(dims))
	for i, p := range perm {
		pdims[i] = dims[p]
	}
	t, err := reshaped(phys, pdims)
	if err != nil {
		return nil, err
	}
	inv := make([]int64, len(perm))
	for i, p := range perm {
		inv[p] = int64(i)
	}
	return transpose(t, inv)
}
