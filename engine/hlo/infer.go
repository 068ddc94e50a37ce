package hlo

import (
	"errors"
	"fmt"
	"slices"

	"goldtrace/engine/dtype"
)

// errNotInferable marks opcodes whose result shape comes only from the
// declaration (reshape, broadcast, convert, custom-call, ...).
var errNotInferable = errors.New("the result shape is not determined by the operands")

// InferShape computes the result shape of in from its operands, attributes and
// called computations, following XLA's ShapeInference. Layouts are not
// inferred. For opcodes whose shape XLA takes from the declaration it returns
// an error; the declared in.Shape is otherwise only consulted for the result
// element type of dot and convolution (their preferred_element_type).
func InferShape(in *Instruction) (Shape, error) {
	ops := make([]Shape, len(in.Operands))
	for i, o := range in.Operands {
		ops[i] = o.Shape
	}
	if err := checkArity(in); err != nil {
		return Shape{}, err
	}
	arr := func(i int) error {
		if !ops[i].IsArray() {
			return fmt.Errorf("operand %d must be an array, has shape %v", i, ops[i])
		}
		return nil
	}
	for i := range ops {
		switch in.Opcode {
		case "tuple", "get-tuple-element", "while", "call", "conditional", "fusion", "custom-call", "opt-barrier",
			"domain", "add-dependency", "after-all", "outfeed", "send", "recv", "infeed", "async-start",
			"async-update", "async-done", "all-reduce", "all-to-all", "collective-permute", "copy", "copy-start",
			"sort", "all-gather", "reduce-scatter", "collective-broadcast", "rng-bit-generator", "scan",
			"all-gather-start", "all-gather-done", "all-reduce-start", "all-reduce-done", "collective-permute-start",
			"collective-permute-done", "copy-done", "send-done", "recv-done":
		default:
			if err := arr(i); err != nil && !isAsyncWrapper(in.Opcode) {
				return Shape{}, err
			}
		}
	}
	op := in.Opcode
	switch op {
	case "abs", "acos", "acosh", "asin", "asinh", "atanh", "cbrt", "ceil", "cosine", "cosh", "erf", "exponential",
		"exponential-minus-one", "floor", "log", "log-plus-one", "logistic", "negate", "round-nearest-afz",
		"round-nearest-even", "rsqrt", "sign", "sine", "sinh", "sqrt", "tan", "tanh", "not", "popcnt",
		"count-leading-zeros", "reduce-precision", "real", "imag", "copy":
		s := stripLayout(ops[0])
		switch op {
		case "real", "imag", "abs":
			s.Elem = realType(s.Elem)
		}
		return s, nil
	case "is-finite":
		return withElem(ops[0], dtype.Pred), nil
	case "add", "subtract", "multiply", "divide", "remainder", "power", "atan2", "maximum", "minimum", "and", "or",
		"xor", "shift-left", "shift-right-arithmetic", "shift-right-logical", "mulhi", "compare", "complex":
		if !sameDims(ops[0], ops[1]) || ops[0].Elem != ops[1].Elem {
			return Shape{}, fmt.Errorf("binary %s operands differ: %v and %v", op, ops[0], ops[1])
		}
		switch op {
		case "compare":
			return withElem(ops[0], dtype.Pred), nil
		case "complex":
			ct := dtype.C64
			if ops[0].Elem == dtype.F64 {
				ct = dtype.C128
			} else if ops[0].Elem != dtype.F32 {
				return Shape{}, fmt.Errorf("complex needs f32 or f64 operands, has %v", ops[0].Elem)
			}
			return withElem(ops[0], ct), nil
		}
		return stripLayout(ops[0]), nil
	case "clamp":
		for _, b := range []Shape{ops[0], ops[2]} {
			if b.Elem != ops[1].Elem || len(b.Dims) != 0 && !sameDims(b, ops[1]) {
				return Shape{}, fmt.Errorf("clamp bounds %v do not fit operand %v", b, ops[1])
			}
		}
		return stripLayout(ops[1]), nil
	case "select":
		if ops[0].Elem != dtype.Pred || len(ops[0].Dims) != 0 && !sameDims(ops[0], ops[1]) {
			return Shape{}, fmt.Errorf("select predicate %v does not fit %v", ops[0], ops[1])
		}
		if !sameShape(ops[1], ops[2]) {
			return Shape{}, fmt.Errorf("select branches differ: %v and %v", ops[1], ops[2])
		}
		return stripLayout(ops[1]), nil
	case "tuple":
		return stripLayout(tupleShape(ops...)), nil
	case "get-tuple-element":
		if !ops[0].IsTuple() || in.TupleIndex < 0 || in.TupleIndex >= int64(len(ops[0].Tuple)) {
			return Shape{}, fmt.Errorf("index %d is out of range for %v", in.TupleIndex, ops[0])
		}
		return stripLayout(ops[0].Tuple[in.TupleIndex]), nil
	case "transpose":
		if !isPermutation(in.Dimensions, len(ops[0].Dims)) {
			return Shape{}, fmt.Errorf("dimensions %v are not a permutation of rank %d", in.Dimensions, len(ops[0].Dims))
		}
		s := stripLayout(ops[0])
		for i, d := range in.Dimensions {
			s.Dims[i] = ops[0].Dims[d]
			if s.DynamicDims != nil {
				s.DynamicDims[i] = ops[0].DynamicDims[d]
			}
		}
		return s, nil
	case "reverse":
		if err := checkDims(in.Dimensions, len(ops[0].Dims)); err != nil {
			return Shape{}, err
		}
		return stripLayout(ops[0]), nil
	case "slice":
		if len(in.Slice) != len(ops[0].Dims) {
			return Shape{}, fmt.Errorf("slice has %d dimensions, operand %v", len(in.Slice), ops[0])
		}
		s := stripLayout(ops[0])
		for i, d := range in.Slice {
			if d.Start < 0 || d.Limit < d.Start || d.Limit > ops[0].Dims[i] || d.Stride <= 0 {
				return Shape{}, fmt.Errorf("slice [%d:%d:%d] is invalid for dimension %d of size %d", d.Start, d.Limit, d.Stride, i, ops[0].Dims[i])
			}
			s.Dims[i] = (d.Limit - d.Start + d.Stride - 1) / d.Stride
		}
		return s, nil
	case "dynamic-slice":
		r := len(ops[0].Dims)
		if len(in.DynamicSliceSizes) != r {
			return Shape{}, fmt.Errorf("dynamic_slice_sizes %v do not match rank %d", in.DynamicSliceSizes, r)
		}
		if err := checkStartIndices(ops[1:], r); err != nil {
			return Shape{}, err
		}
		for i, n := range in.DynamicSliceSizes {
			if n < 0 || n > ops[0].Dims[i] {
				return Shape{}, fmt.Errorf("slice size %d exceeds dimension %d of %v", n, i, ops[0])
			}
		}
		return arrayShape(ops[0].Elem, in.DynamicSliceSizes...), nil
	case "dynamic-update-slice":
		if len(ops) < 2 || !sameRank(ops[0], ops[1]) || ops[0].Elem != ops[1].Elem {
			return Shape{}, fmt.Errorf("update does not match operand")
		}
		if err := checkStartIndices(ops[2:], len(ops[0].Dims)); err != nil {
			return Shape{}, err
		}
		for i := range ops[1].Dims {
			if ops[1].Dims[i] > ops[0].Dims[i] {
				return Shape{}, fmt.Errorf("update %v is larger than operand %v", ops[1], ops[0])
			}
		}
		return stripLayout(ops[0]), nil
	case "concatenate":
		if len(ops) == 0 || len(in.Dimensions) != 1 {
			return Shape{}, fmt.Errorf("concatenate needs operands and one dimension")
		}
		d := in.Dimensions[0]
		if d < 0 || d >= int64(len(ops[0].Dims)) {
			return Shape{}, fmt.Errorf("dimension %d out of range for %v", d, ops[0])
		}
		s := stripLayout(ops[0])
		for _, o := range ops[1:] {
			if o.Elem != s.Elem || !sameRank(o, s) {
				return Shape{}, fmt.Errorf("operands %v and %v cannot be concatenated", ops[0], o)
			}
			for i := range o.Dims {
				if int64(i) != d && o.Dims[i] != s.Dims[i] {
					return Shape{}, fmt.Errorf("operands %v and %v differ outside dimension %d", ops[0], o, d)
				}
			}
			s.Dims[d] += o.Dims[d]
		}
		return s, nil
	case "pad":
		if len(in.Padding) != len(ops[0].Dims) || len(ops[1].Dims) != 0 || ops[1].Elem != ops[0].Elem {
			return Shape{}, fmt.Errorf("padding %d dims or value %v do not fit operand %v", len(in.Padding), ops[1], ops[0])
		}
		s := stripLayout(ops[0])
		for i, p := range in.Padding {
			if p.Interior < 0 {
				return Shape{}, fmt.Errorf("negative interior padding")
			}
			d := ops[0].Dims[i]
			s.Dims[i] = p.Low + p.High + d + max(d-1, 0)*p.Interior
			if s.Dims[i] < 0 {
				return Shape{}, fmt.Errorf("padding makes dimension %d negative", i)
			}
		}
		return s, nil
	case "gather":
		return inferGather(in, ops[0], ops[1])
	case "scatter":
		return inferScatter(in, ops)
	case "reduce":
		return inferReduce(in, ops)
	case "reduce-window":
		return inferReduceWindow(in, ops)
	case "select-and-scatter":
		if _, err := windowOutput(in.Window, ops[0].Dims); err != nil {
			return Shape{}, err
		}
		return stripLayout(ops[0]), nil
	case "dot":
		return inferDot(in, ops[0], ops[1])
	case "ragged-dot":
		return inferRaggedDot(in, ops[0], ops[1], ops[2])
	case "convolution":
		if len(ops) != 2 {
			return Shape{}, fmt.Errorf("convolution takes 2 operands, has %d", len(ops))
		}
		return inferConv(in, ops[0], ops[1])
	case "fft":
		return inferFFT(in, ops[0])
	case "sort":
		for _, o := range ops[1:] {
			if !sameDims(o, ops[0]) {
				return Shape{}, fmt.Errorf("sort operands %v and %v differ", ops[0], o)
			}
		}
		if err := checkDims(in.Dimensions, len(ops[0].Dims)); err != nil || len(in.Dimensions) != 1 {
			return Shape{}, fmt.Errorf("sort needs one dimension within rank %d", len(ops[0].Dims))
		}
		if len(ops) == 1 {
			return stripLayout(ops[0]), nil
		}
		return stripLayout(tupleShape(ops...)), nil
	case "topk":
		r := len(ops[0].Dims)
		if r == 0 || in.K < 0 || in.K > ops[0].Dims[r-1] {
			return Shape{}, fmt.Errorf("k=%d does not fit %v", in.K, ops[0])
		}
		v := stripLayout(ops[0])
		v.Dims[r-1] = in.K
		return tupleShape(v, withElem(v, dtype.S32)), nil
	case "map":
		c := in.ToApply()
		if c == nil {
			return Shape{}, fmt.Errorf("map has no to_apply")
		}
		if c.Root.Shape.IsTuple() || len(ops) == 0 {
			return Shape{}, fmt.Errorf("map needs operands and a scalar computation")
		}
		return withElem(ops[0], c.Root.Shape.Elem), nil
	case "while":
		return stripLayout(ops[0]), nil
	case "call", "fusion":
		if c := in.ToApply(); c != nil {
			return stripLayout(c.Root.Shape), nil
		}
		return Shape{}, fmt.Errorf("%s has no called computation", op)
	case "conditional":
		if len(in.Called) == 0 {
			return Shape{}, fmt.Errorf("conditional has no branches")
		}
		return stripLayout(in.Called[0].Root.Shape), nil
	case "cholesky", "opt-barrier", "domain", "add-dependency":
		return stripLayout(ops[0]), nil
	case "triangular-solve":
		return stripLayout(ops[1]), nil
	case "all-reduce", "collective-permute":
		if len(ops) == 1 {
			return stripLayout(ops[0]), nil
		}
		return stripLayout(tupleShape(ops...)), nil
	case "after-all":
		return Shape{Elem: dtype.Token, Dims: []int64{}}, nil
	case "replica-id", "partition-id":
		return arrayShape(dtype.U32), nil
	case "get-dimension-size":
		return arrayShape(dtype.S32), nil
	case "batch-norm-inference":
		return stripLayout(ops[0]), nil
	case "batch-norm-training", "batch-norm-grad":
		fi := in.FeatureIndex
		if fi < 0 || fi >= int64(len(ops[0].Dims)) {
			return Shape{}, fmt.Errorf("feature_index %d out of range for %v", fi, ops[0])
		}
		f := arrayShape(ops[0].Elem, ops[0].Dims[fi])
		return tupleShape(stripLayout(ops[0]), f, f), nil
	}
	return Shape{}, errNotInferable
}

// checkArity checks the operand count: exact for fixed-arity opcodes, at least
// one for the variadic ones that read their first operand.
func checkArity(in *Instruction) error {
	n, ok := opcodes[in.Opcode]
	switch {
	case !ok:
	case n >= 0 && len(in.Operands) != n:
		return fmt.Errorf("%s takes %d operands, has %d", in.Opcode, n, len(in.Operands))
	case n < 0 && len(in.Operands) == 0:
		switch in.Opcode {
		case "tuple", "after-all", "custom-call", "call", "fusion", "async-start", "async-update", "rng",
			"all-reduce", "all-gather", "collective-permute", "all-to-all", "reduce-scatter", "collective-broadcast",
			"collective-reduce", "all-reduce-start", "all-gather-start", "collective-permute-start", "scan":
		default:
			return fmt.Errorf("%s needs operands", in.Opcode)
		}
	}
	return nil
}

func isAsyncWrapper(op string) bool {
	_, known := opcodes[op]
	return !known
}

func stripLayout(s Shape) Shape {
	out := Shape{Elem: s.Elem}
	if s.IsTuple() {
		out.Tuple = make([]Shape, len(s.Tuple))
		for i, e := range s.Tuple {
			out.Tuple[i] = stripLayout(e)
		}
		return out
	}
	out.Dims = append([]int64{}, s.Dims...)
	if s.DynamicDims != nil {
		out.DynamicDims = append([]bool{}, s.DynamicDims...)
	}
	return out
}

func withElem(s Shape, t dtype.Type) Shape {
	out := stripLayout(s)
	out.Elem = t
	return out
}

func realType(t dtype.Type) dtype.Type {
	switch t {
	case dtype.C64:
		return dtype.F32
	case dtype.C128:
		return dtype.F64
	}
	return t
}

func sameRank(a, b Shape) bool { return len(a.Dims) == len(b.Dims) }

func sameDims(a, b Shape) bool { return !a.IsTuple() && !b.IsTuple() && slices.Equal(a.Dims, b.Dims) }

// sameShape compares element types, dimensions and tuple structure, ignoring
// layouts and dynamic-dimension markers (a bounded dimension compares by its bound).
func sameShape(a, b Shape) bool {
	return sameStructure(a, b, func(a, b Shape) bool { return slices.Equal(a.Dims, b.Dims) })
}

func checkDims(dims []int64, rank int) error {
	seen := map[int64]bool{}
	for _, d := range dims {
		if d < 0 || d >= int64(rank) || seen[d] {
			return fmt.Errorf("dimensions %v are invalid for rank %d", dims, rank)
		}
		seen[d] = true
	}
	return nil
}

func checkStartIndices(idx []Shape, rank int) error {
	if len(idx) == 1 && len(idx[0].Dims) == 1 && idx[0].Dims[0] == int64(rank) && idx[0].Elem.IsInteger() {
		return nil // the old single-vector form
	}
	if len(idx) != rank {
		return fmt.Errorf("%d start indices for rank %d", len(idx), rank)
	}
	for _, s := range idx {
		if len(s.Dims) != 0 || !s.Elem.IsInteger() {
			return fmt.Errorf("start index %v must be an integer scalar", s)
		}
	}
	return nil
}

func inferGather(in *Instruction, operand, indices Shape) (Shape, error) {
	g := in.GatherDims
	if g == nil {
		return Shape{}, fmt.Errorf("gather has no dimension numbers")
	}
	if !indices.Elem.IsInteger() {
		return Shape{}, fmt.Errorf("gather indices must be integers, are %v", indices)
	}
	ss := in.GatherSliceSizes
	if len(ss) != len(operand.Dims) {
		return Shape{}, fmt.Errorf("slice_sizes %v do not match operand %v", ss, operand)
	}
	for i, s := range ss {
		if s < 0 || s > operand.Dims[i] {
			return Shape{}, fmt.Errorf("slice size %d out of range for dimension %d of %v", s, i, operand)
		}
	}
	idxDims := append([]int64{}, indices.Dims...)
	if g.IndexVectorDim < 0 || g.IndexVectorDim > int64(len(idxDims)) {
		return Shape{}, fmt.Errorf("index_vector_dim %d out of range for %v", g.IndexVectorDim, indices)
	}
	if g.IndexVectorDim == int64(len(idxDims)) {
		idxDims = append(idxDims, 1)
	}
	if int64(len(g.StartIndexMap)) != idxDims[g.IndexVectorDim] {
		return Shape{}, fmt.Errorf("start_index_map %v does not match index vector size %d", g.StartIndexMap, idxDims[g.IndexVectorDim])
	}
	collapsed := map[int64]bool{}
	for _, d := range append(append([]int64{}, g.CollapsedSliceDims...), g.OperandBatchingDims...) {
		if d < 0 || d >= int64(len(operand.Dims)) || collapsed[d] {
			return Shape{}, fmt.Errorf("collapsed or batching dimension %d is invalid for %v", d, operand)
		}
		if ss[d] > 1 {
			return Shape{}, fmt.Errorf("collapsed dimension %d has slice size %d", d, ss[d])
		}
		collapsed[d] = true
	}
	var window []int64
	for i, s := range ss {
		if !collapsed[int64(i)] {
			window = append(window, s)
		}
	}
	if len(window) != len(g.OffsetDims) {
		return Shape{}, fmt.Errorf("offset_dims %v do not match %d window dimensions", g.OffsetDims, len(window))
	}
	var batch []int64
	for i, d := range idxDims {
		if int64(i) != g.IndexVectorDim {
			batch = append(batch, d)
		}
	}
	rank := len(batch) + len(window)
	out := make([]int64, rank)
	isOffset := map[int64]bool{}
	for _, d := range g.OffsetDims {
		if d < 0 || d >= int64(rank) || isOffset[d] {
			return Shape{}, fmt.Errorf("offset_dims %v are invalid for output rank %d", g.OffsetDims, rank)
		}
		isOffset[d] = true
	}
	wi, bi := 0, 0
	for i := range out {
		if isOffset[int64(i)] {
			out[i] = window[wi]
			wi++
		} else {
			out[i] = batch[bi]
			bi++
		}
	}
	return arrayShape(operand.Elem, out...), nil
}

func inferScatter(in *Instruction, ops []Shape) (Shape, error) {
	if len(ops) < 3 || len(ops)%2 != 1 {
		return Shape{}, fmt.Errorf("scatter takes N operands, indices and N updates; has %d operands", len(ops))
	}
	n := len(ops) / 2
	sd := in.ScatterDims
	if sd == nil {
		return Shape{}, fmt.Errorf("scatter has no dimension numbers")
	}
	operands, indices, updates := ops[:n], ops[n], ops[n+1:]
	if !indices.Elem.IsInteger() {
		return Shape{}, fmt.Errorf("scatter indices must be integers, are %v", indices)
	}
	for i := range operands {
		if !sameDims(operands[i], operands[0]) || !sameDims(updates[i], updates[0]) {
			return Shape{}, fmt.Errorf("scatter operands or updates differ in shape")
		}
		if updates[i].Elem != operands[i].Elem {
			return Shape{}, fmt.Errorf("update %v does not match operand %v", updates[i], operands[i])
		}
	}
	if int64(len(updates[0].Dims)) != int64(len(sd.UpdateWindowDims))+int64(len(indices.Dims))-boolInt(sd.IndexVectorDim < int64(len(indices.Dims))) {
		return Shape{}, fmt.Errorf("updates %v do not match update_window_dims %v and indices %v", updates[0], sd.UpdateWindowDims, indices)
	}
	if int64(len(sd.UpdateWindowDims)+len(sd.InsertedWindowDims)+len(sd.InputBatchingDims)) != int64(len(operands[0].Dims)) {
		return Shape{}, fmt.Errorf("update_window_dims %v, inserted_window_dims %v and input_batching_dims %v do not cover operand rank %d",
			sd.UpdateWindowDims, sd.InsertedWindowDims, sd.InputBatchingDims, len(operands[0].Dims))
	}
	if n == 1 {
		return stripLayout(operands[0]), nil
	}
	return stripLayout(tupleShape(operands...)), nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// reducerResult is the shape N accumulators of the given inits make: a scalar or a tuple.
func reducerResult(dims []int64, inits []Shape) Shape {
	if len(inits) == 1 {
		return arrayShape(inits[0].Elem, dims...)
	}
	elems := make([]Shape, len(inits))
	for i, s := range inits {
		elems[i] = arrayShape(s.Elem, dims...)
	}
	return tupleShape(elems...)
}

func inferReduce(in *Instruction, ops []Shape) (Shape, error) {
	if len(ops) < 2 || len(ops)%2 != 0 {
		return Shape{}, fmt.Errorf("reduce takes N inputs and N inits; has %d operands", len(ops))
	}
	n := len(ops) / 2
	inputs, inits := ops[:n], ops[n:]
	for i := range inputs {
		if !sameDims(inputs[i], inputs[0]) || len(inits[i].Dims) != 0 {
			return Shape{}, fmt.Errorf("reduce inputs must share dims and inits must be scalars")
		}
	}
	if err := checkDims(in.Dimensions, len(inputs[0].Dims)); err != nil {
		return Shape{}, err
	}
	var out []int64
	for i, d := range inputs[0].Dims {
		if !slices.Contains(in.Dimensions, int64(i)) {
			out = append(out, d)
		}
	}
	return reducerResult(out, inits), nil
}

// windowOutput is the output dims of a window over dims (reduce-window, select-and-scatter).
func windowOutput(w []WindowDim, dims []int64) ([]int64, error) {
	if len(w) != len(dims) {
		return nil, fmt.Errorf("window has %d dimensions, operand has %d", len(w), len(dims))
	}
	out := make([]int64, len(dims))
	for i, d := range w {
		if d.Size <= 0 || d.Stride <= 0 || d.BaseDilation <= 0 || d.WindowDilation <= 0 {
			return nil, fmt.Errorf("window dimension %d has a non-positive size, stride or dilation", i)
		}
		in := dims[i]
		if in > 0 {
			in = (in-1)*d.BaseDilation + 1
		}
		padded := in + d.PadLow + d.PadHigh
		eff := (d.Size-1)*d.WindowDilation + 1
		if padded < eff {
			out[i] = 0
		} else {
			out[i] = (padded-eff)/d.Stride + 1
		}
	}
	return out, nil
}

func inferReduceWindow(in *Instruction, ops []Shape) (Shape, error) {
	if len(ops) < 2 || len(ops)%2 != 0 {
		return Shape{}, fmt.Errorf("reduce-window takes N inputs and N inits; has %d operands", len(ops))
	}
	n := len(ops) / 2
	out, err := windowOutput(in.Window, ops[0].Dims)
	if err != nil {
		return Shape{}, err
	}
	return reducerResult(out, ops[n:]), nil
}

func inferDot(in *Instruction, lhs, rhs Shape) (Shape, error) {
	d := in.DotDims
	if d == nil {
		d = &DotDimensionNumbers{}
	}
	if len(d.LhsBatch) != len(d.RhsBatch) || len(d.LhsContracting) != len(d.RhsContracting) {
		return Shape{}, fmt.Errorf("dot batch or contracting dimension counts differ")
	}
	if err := checkDims(append(append([]int64{}, d.LhsBatch...), d.LhsContracting...), len(lhs.Dims)); err != nil {
		return Shape{}, fmt.Errorf("lhs: %v", err)
	}
	if err := checkDims(append(append([]int64{}, d.RhsBatch...), d.RhsContracting...), len(rhs.Dims)); err != nil {
		return Shape{}, fmt.Errorf("rhs: %v", err)
	}
	var out []int64
	for i := range d.LhsBatch {
		if lhs.Dims[d.LhsBatch[i]] != rhs.Dims[d.RhsBatch[i]] {
			return Shape{}, fmt.Errorf("batch dimensions differ: %v vs %v", lhs, rhs)
		}
		out = append(out, lhs.Dims[d.LhsBatch[i]])
	}
	for i := range d.LhsContracting {
		if lhs.Dims[d.LhsContracting[i]] != rhs.Dims[d.RhsContracting[i]] {
			return Shape{}, fmt.Errorf("contracting dimensions differ: %v vs %v", lhs, rhs)
		}
	}
	free := func(s Shape, batch, contr []int64) {
		for i, n := range s.Dims {
			if !slices.Contains(batch, int64(i)) && !slices.Contains(contr, int64(i)) {
				out = append(out, n)
			}
		}
	}
	free(lhs, d.LhsBatch, d.LhsContracting)
	free(rhs, d.RhsBatch, d.RhsContracting)
	return arrayShape(preferredType(in, lhs.Elem), out...), nil
}

// preferredType is the declared result element type of dot/convolution
// (preferred_element_type), or the operand type when none is declared.
func preferredType(in *Instruction, def dtype.Type) dtype.Type {
	if in.Shape.Elem.IsArray() {
		return in.Shape.Elem
	}
	return def
}

func inferConv(in *Instruction, lhs, rhs Shape) (Shape, error) {
	cd := in.ConvDims
	if cd == nil {
		return Shape{}, fmt.Errorf("convolution has no dim_labels")
	}
	r := len(lhs.Dims)
	ns := len(cd.InputSpatial)
	if len(rhs.Dims) != r || ns+2 != r || len(cd.KernelSpatial) != ns || len(cd.OutputSpatial) != ns {
		return Shape{}, fmt.Errorf("dim_labels rank %d does not match operands %v and %v", ns+2, lhs, rhs)
	}
	fg, bg := max(in.FeatureGroupCount, 1), max(in.BatchGroupCount, 1)
	inF := lhs.Dims[cd.InputFeature]
	kIn, kOut := rhs.Dims[cd.KernelInputFeature], rhs.Dims[cd.KernelOutputFeature]
	if inF%fg != 0 || inF/fg != kIn {
		return Shape{}, fmt.Errorf("input features %d / feature_group_count %d != kernel input features %d", inF, fg, kIn)
	}
	if kOut%fg != 0 || kOut%bg != 0 {
		return Shape{}, fmt.Errorf("kernel output features %d not divisible by group counts %d, %d", kOut, fg, bg)
	}
	batch := lhs.Dims[cd.InputBatch]
	if batch%bg != 0 {
		return Shape{}, fmt.Errorf("batch %d not divisible by batch_group_count %d", batch, bg)
	}
	w := in.Window
	if len(w) == 0 && ns == 0 {
		w = []WindowDim{}
	}
	if len(w) != ns {
		return Shape{}, fmt.Errorf("window has %d dimensions, convolution has %d spatial dimensions", len(w), ns)
	}
	spatial := make([]int64, ns)
	for i := range spatial {
		spatial[i] = lhs.Dims[cd.InputSpatial[i]]
		if w[i].Size != rhs.Dims[cd.KernelSpatial[i]] {
			return Shape{}, fmt.Errorf("window size %d != kernel spatial dimension %d", w[i].Size, rhs.Dims[cd.KernelSpatial[i]])
		}
	}
	so, err := windowOutput(w, spatial)
	if err != nil {
		return Shape{}, err
	}
	out := make([]int64, r)
	out[cd.OutputBatch] = batch / bg
	out[cd.OutputFeature] = kOut
	for i, d := range cd.OutputSpatial {
		out[d] = so[i]
	}
	return arrayShape(preferredType(in, lhs.Elem), out...), nil
}

func inferFFT(in *Instruction, x Shape) (Shape, error) {
	n := len(in.FFTLength)
	r := len(x.Dims)
	if n < 1 || n > 3 || n > r {
		return Shape{}, fmt.Errorf("fft_length %v does not fit %v", in.FFTLength, x)
	}
	s := stripLayout(x)
	last := in.FFTLength[n-1]
	switch in.FFTType {
	case "FFT", "IFFT":
		if !x.Elem.IsComplex() {
			return Shape{}, fmt.Errorf("%s needs a complex operand, has %v", in.FFTType, x)
		}
	case "RFFT":
		switch x.Elem {
		case dtype.F32:
			s.Elem = dtype.C64
		case dtype.F64:
			s.Elem = dtype.C128
		default:
			return Shape{}, fmt.Errorf("RFFT needs f32 or f64, has %v", x)
		}
		s.Dims[r-1] = last/2 + 1
	case "IRFFT":
		if !x.Elem.IsComplex() {
			return Shape{}, fmt.Errorf("IRFFT needs a complex operand, has %v", x)
		}
		s.Elem = realType(x.Elem)
		s.Dims[r-1] = last
	default:
		return Shape{}, fmt.Errorf("unknown fft_type %q", in.FFTType)
	}
	return s, nil
}
