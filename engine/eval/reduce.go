package eval

// reduce, reduce-window and select-and-scatter. Reducers that are a single
// add/multiply/maximum/minimum/and/or of their two parameters run as typed
// loops (floats narrower than f64 accumulate in f32 and round once at the
// end, ints in 64 bits, which wraps to the same result); any other reducer is
// called as a computation per element. Elements are folded in row-major order
// of the reduced (or window) dimensions, starting from the init value.

import (
	"fmt"
	"math"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func init() {
	Register("reduce", flushingArithmetic(evalReduce, reducerFlushes))
	Register("reduce-window", flushingArithmetic(evalReduceWindow, reducerFlushes))
	Register("select-and-scatter", evalSelectAndScatter)
}

// fastReducer returns the binary opcode a reducer computes on its two scalar
// parameters, or "" if it is anything more complicated.
func fastReducer(c *hlo.Computation) string {
	if c == nil || len(c.Params) != 2 || c.Root == nil || len(c.Root.Operands) != 2 {
		return ""
	}
	r := c.Root
	switch r.Opcode {
	case "add", "multiply", "maximum", "minimum", "and", "or":
	default:
		return ""
	}
	a, b := r.Operands[0], r.Operands[1]
	if a.Opcode != "parameter" || b.Opcode != "parameter" || a == b {
		return ""
	}
	if r.Shape.Elem != c.Params[0].Shape.Elem || len(r.Shape.Dims) != 0 {
		return ""
	}
	return r.Opcode
}

// splitReduceArgs splits variadic operands into inputs and init values.
func splitReduceArgs(args []Value) (inputs, inits []*tensor.Tensor, err error) {
	ts, err := arrayArgs(args, len(args))
	if err != nil {
		return nil, nil, err
	}
	if len(ts) == 0 || len(ts)%2 != 0 {
		return nil, nil, fmt.Errorf("expected inputs and as many init values, got %d operands", len(ts))
	}
	n := len(ts) / 2
	for i := 0; i < n; i++ {
		if !equalDims(ts[i].Dims, ts[0].Dims) {
			return nil, nil, fmt.Errorf("inputs have different shapes: %v vs %v", ts[0], ts[i])
		}
		if ts[n+i].NumElements() != 1 || ts[n+i].Type != ts[i].Type {
			return nil, nil, fmt.Errorf("init value %d must be a %v scalar", i, ts[i].Type)
		}
	}
	return ts[:n], ts[n:], nil
}

func evalReduce(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	inputs, inits, err := splitReduceArgs(args)
	if err != nil {
		return Value{}, err
	}
	x0 := inputs[0]
	reduced := make([]bool, x0.Rank())
	for _, d := range in.Dimensions {
		if d < 0 || int(d) >= x0.Rank() || reduced[d] {
			return Value{}, fmt.Errorf("bad reduce dimensions %v for rank %d", in.Dimensions, x0.Rank())
		}
		reduced[d] = true
	}
	// Move the reduced dimensions last (keeping their order) so each result
	// element folds one contiguous run in row-major order.
	var perm, outDims []int64
	runLen := int64(1)
	for d := range reduced {
		if !reduced[d] {
			perm = append(perm, int64(d))
			outDims = append(outDims, x0.Dims[d])
		}
	}
	for d := range reduced {
		if reduced[d] {
			perm = append(perm, int64(d))
			runLen *= x0.Dims[d]
		}
	}
	if dir, ok := argReducer(in.ToApply()); ok && len(inputs) == 2 {
		if outs := argReduceFast(dir, inputs[0], inputs[1], inits[0], inits[1], reduced, outDims); outs != nil {
			return packResults(outs), nil
		}
	}
	if len(inputs) == 1 {
		// f32 sums XLA:CPU hands to YNNPACK follow its order (reduce_ynn.go).
		if out := reduceAddYNN(ev, in, inputs[0], inits[0], reduced, outDims); out != nil {
			return ArrayValue(out), nil
		}
	}
	if op := fastReducer(in.ToApply()); op != "" && len(inputs) == 1 {
		if out := reduceBlockFast(op, inputs[0], inits[0], reduced, outDims); out != nil {
			return ArrayValue(out), nil
		}
	}
	runs := make([]*tensor.Tensor, len(inputs))
	for i, x := range inputs {
		if runs[i], err = transposeIfNeeded(x, perm); err != nil {
			return Value{}, err
		}
	}
	groups := tensor.NumElements(outDims)
	if len(inputs) == 1 {
		// Float and complex sums follow XLA:CPU's association (reduce_order.go).
		if out := reduceAddXLAOrder(in.ToApply(), runs[0], inits[0], x0.Dims, in.Dimensions, outDims, runLen); out != nil {
			return ArrayValue(out), nil
		}
	}
	if op := fastReducer(in.ToApply()); op != "" && len(inputs) == 1 {
		if out := reduceFast(op, runs[0], inits[0], outDims, runLen); out != nil {
			return ArrayValue(out), nil
		}
	}
	outs := make([]*tensor.Tensor, len(inputs))
	for i, x := range inputs {
		outs[i] = tensor.New(x.Type, outDims)
	}
	if prog := compileScalar(in.ToApply()); prog != nil {
		if ok, err := scalarReduce(prog, runs, inits, outs, groups, runLen); ok {
			if err != nil {
				return Value{}, err
			}
			return packResults(outs), nil
		}
	}
	acc := make([]Value, len(inputs))
	for g := int64(0); g < groups; g++ {
		for i := range acc {
			acc[i] = ArrayValue(inits[i])
		}
		for k := int64(0); k < runLen; k++ {
			if acc, err = applyReducer(ev, in.ToApply(), acc, runs, g*runLen+k); err != nil {
				return Value{}, err
			}
		}
		for i, a := range acc {
			storeElem(outs[i], g, a.T)
		}
	}
	return packResults(outs), nil
}

func packResults(outs []*tensor.Tensor) Value {
	if len(outs) == 1 {
		return ArrayValue(outs[0])
	}
	vals := make([]Value, len(outs))
	for i, o := range outs {
		vals[i] = ArrayValue(o)
	}
	return TupleValue(vals...)
}

func transposeIfNeeded(x *tensor.Tensor, perm []int64) (*tensor.Tensor, error) {
	for i, p := range perm {
		if p != int64(i) {
			return transpose(x, perm)
		}
	}
	return x, nil
}

// scalarView shares element i of t as a scalar tensor (no copy).
func scalarView(t *tensor.Tensor, i int64) *tensor.Tensor {
	s := int64(t.Type.Size())
	return &tensor.Tensor{Type: t.Type, Dims: []int64{}, Data: t.Data[i*s : (i+1)*s : (i+1)*s]}
}

func storeElem(dst *tensor.Tensor, i int64, v *tensor.Tensor) {
	s := int64(dst.Type.Size())
	copy(dst.Data[i*s:(i+1)*s], v.Data)
}

// applyReducer calls a reducer computation on accumulators and element i of xs.
func applyReducer(ev *Evaluator, c *hlo.Computation, acc []Value, xs []*tensor.Tensor, i int64) ([]Value, error) {
	if c == nil {
		return nil, fmt.Errorf("missing to_apply computation")
	}
	args := make([]Value, 0, 2*len(acc))
	args = append(args, acc...)
	for _, x := range xs {
		args = append(args, ArrayValue(scalarView(x, i)))
	}
	r, err := ev.Call(c, args)
	if err != nil {
		return nil, err
	}
	if len(acc) == 1 && r.T != nil {
		return []Value{r}, nil
	}
	if len(r.Tuple) != len(acc) {
		return nil, fmt.Errorf("reducer %s returned %d values, want %d", c.Name, len(r.Tuple), len(acc))
	}
	for _, e := range r.Tuple {
		if e.T == nil || e.T.NumElements() != 1 {
			return nil, fmt.Errorf("reducer %s must return scalars", c.Name)
		}
	}
	return r.Tuple, nil
}

// reduceFast folds runs of runLen contiguous elements with a simple op, or
// returns nil when the type has no fast path.
func reduceFast(op string, x, init *tensor.Tensor, outDims []int64, runLen int64) *tensor.Tensor {
	// The loops stay spelled out per type: a shared one would call the fold
	// through a function value per run, measurably slower for short runs.
	groups := int(tensor.NumElements(outDims))
	rl := int(runLen)
	switch classOf(x.Type) {
	case classF32:
		if op == "and" || op == "or" {
			return nil
		}
		if out := reduceBF16MinMaxRows(op, x, init, outDims, rl); out != nil {
			return out // on the bf16 bits (reduce_bf16.go)
		}
		xs, i0 := asF32(x), asF32(init)[0]
		o := make([]float32, groups)
		// Four runs at a time, each still folded left to right (foldRows).
		parallelForWork(groups, groups*rl, func(lo, hi int) {
			foldRows(op, i0, xs[lo*rl:hi*rl], rl, o[lo:hi])
		})
		return newFromF32(x.Type, outDims, o)
	case classF64:
		if op == "and" || op == "or" {
			return nil
		}
		xs, i0 := x.F64(), init.F64()[0]
		out := tensor.New(x.Type, outDims)
		o := out.F64()
		parallelFor(groups, func(lo, hi int) {
			for g := lo; g < hi; g++ {
				o[g] = foldFloat(op, i0, xs[g*rl:(g+1)*rl])
			}
		})
		return out
	case classSigned:
		xs, i0 := asI64(x), asI64(init)[0]
		o := make([]int64, groups)
		parallelFor(groups, func(lo, hi int) {
			for g := lo; g < hi; g++ {
				o[g] = foldInt(op, i0, xs[g*rl:(g+1)*rl])
			}
		})
		return newFromI64(x.Type, outDims, o)
	case classUnsigned, classPred:
		if x.Type == dtype.Pred && (op == "add" || op == "multiply") {
			return nil // i1 arithmetic: leave it to the generic path
		}
		xs, i0 := asU64(x), asU64(init)[0]
		o := make([]uint64, groups)
		parallelFor(groups, func(lo, hi int) {
			for g := lo; g < hi; g++ {
				o[g] = foldInt(op, i0, xs[g*rl:(g+1)*rl])
			}
		})
		return newFromU64(x.Type, outDims, o)
	}
	return nil
}

func maxFloat[F float](x, y F) F {
	switch {
	case x != x || x > y:
		return x
	case y != y || y > x:
		return y
	case math.Signbit(float64(x)):
		return y
	}
	return x
}

func minFloat[F float](x, y F) F {
	switch {
	case x != x || x < y:
		return x
	case y != y || y < x:
		return y
	case math.Signbit(float64(x)):
		return x
	}
	return y
}

// foldArith folds xs into acc with add or multiply; ok is false for any
// other op. Each element type gets its own instantiation, so the loops stay
// as tight as hand-written ones.
func foldArith[T ~float32 | ~float64 | int64 | uint64](op string, acc T, xs []T) (_ T, ok bool) {
	switch op {
	case "add":
		for _, v := range xs {
			acc += v
		}
	case "multiply":
		for _, v := range xs {
			acc *= v
		}
	default:
		return acc, false
	}
	return acc, true
}

func foldFloat[F float](op string, acc F, xs []F) F {
	if r, ok := foldArith(op, acc, xs); ok {
		return r
	}
	switch op {
	case "maximum":
		for _, v := range xs {
			acc = maxFloat(acc, v)
		}
	case "minimum":
		for _, v := range xs {
			acc = minFloat(acc, v)
		}
	}
	return acc
}

func foldInt[I int64 | uint64](op string, acc I, xs []I) I {
	if r, ok := foldArith(op, acc, xs); ok {
		return r
	}
	switch op {
	case "maximum":
		for _, v := range xs {
			acc = max(acc, v)
		}
	case "minimum":
		for _, v := range xs {
			acc = min(acc, v)
		}
	case "and":
		for _, v := range xs {
			acc &= v
		}
	case "or":
		for _, v := range xs {
			acc |= v
		}
	}
	return acc
}

// windowGeom enumerates, for each result element of a windowed op, the input
// elements its window covers (padding and base-dilation holes skipped), in
// row-major window order.
type windowGeom struct {
	in, out, size []int64
	win           []hlo.WindowDim
}

func newWindowGeom(dims []int64, win []hlo.WindowDim) (*windowGeom, error) {
	if len(win) != len(dims) {
		return nil, fmt.Errorf("window has %d dimensions for rank %d", len(win), len(dims))
	}
	g := &windowGeom{in: dims, win: win, out: make([]int64, len(dims)), size: make([]int64, len(dims))}
	for i, w := range win {
		bd, wd, st := max(w.BaseDilation, 1), max(w.WindowDilation, 1), max(w.Stride, 1)
		if w.Size < 1 {
			return nil, fmt.Errorf("window size %d in dimension %d", w.Size, i)
		}
		padded := w.PadLow + w.PadHigh
		if dims[i] > 0 {
			padded += (dims[i]-1)*bd + 1
		}
		eff := (w.Size-1)*wd + 1
		if padded >= eff {
			g.out[i] = (padded-eff)/st + 1
		}
		g.win[i].BaseDilation, g.win[i].WindowDilation, g.win[i].Stride = bd, wd, st
		g.size[i] = w.Size
	}
	return g, nil
}

// positions appends to buf the input linear indices of result element o's window.
func (g *windowGeom) positions(o int64, buf []int64) []int64 {
	r := len(g.in)
	buf = buf[:0]
	oi := make([]int64, r)
	for d := r - 1; d >= 0; d-- {
		if g.out[d] > 0 {
			oi[d] = o % g.out[d]
			o /= g.out[d]
		}
	}
	strides := tensor.Strides(g.in)
	wi := make([]int64, r)
	total := tensor.NumElements(g.size)
	for k := int64(0); k < total; k++ {
		lin, ok := int64(0), true
		for d := 0; d < r && ok; d++ {
			w := g.win[d]
			p := oi[d]*w.Stride + wi[d]*w.WindowDilation - w.PadLow
			if p < 0 || p%w.BaseDilation != 0 || p/w.BaseDilation >= g.in[d] {
				ok = false
				break
			}
			lin += p / w.BaseDilation * strides[d]
		}
		if ok {
			buf = append(buf, lin)
		}
		for d := r - 1; d >= 0; d-- {
			wi[d]++
			if wi[d] < g.size[d] {
				break
			}
			wi[d] = 0
		}
	}
	return buf
}

func evalReduceWindow(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	inputs, inits, err := splitReduceArgs(args)
	if err != nil {
		return Value{}, err
	}
	g, err := newWindowGeom(inputs[0].Dims, append([]hlo.WindowDim{}, in.Window...))
	if err != nil {
		return Value{}, err
	}
	n := tensor.NumElements(g.out)
	outs := make([]*tensor.Tensor, len(inputs))
	for i, x := range inputs {
		outs[i] = tensor.New(x.Type, g.out)
	}
	var buf []int64
	// bf16/f16 sums and products round to their type after every step in
	// XLA:CPU, which the f32 fold below does not (reduce_window_narrow.go);
	// other narrow types take the scalar machine, which rounds op by op.
	// Maximum and minimum are exact.
	narrowArith := func(op string, t dtype.Type) bool {
		return t != dtype.F32 && t != dtype.F64 && (op == "add" || op == "multiply")
	}
	if op := fastReducer(in.ToApply()); op != "" && len(inputs) == 1 && (inputs[0].Type == dtype.BF16 || inputs[0].Type == dtype.F16) && narrowArith(op, inputs[0].Type) && !narrowWindowFastDisabled {
		x := inputs[0]
		o := make([]float32, n)
		reduceWindowNarrow(op, x.Type, asF32(inits[0])[0], asF32(x), g, o)
		return ArrayValue(newFromF32(x.Type, g.out, o)), nil
	}
	if op := fastReducer(in.ToApply()); op != "" && len(inputs) == 1 && inputs[0].Type.IsFloat() && !narrowArith(op, inputs[0].Type) {
		x := inputs[0]
		if x.Type == dtype.F64 {
			reduceWindowFloat(op, inits[0].F64()[0], x.F64(), g, outs[0].F64())
			return ArrayValue(outs[0]), nil
		}
		o := make([]float32, n)
		reduceWindowFloat(op, asF32(inits[0])[0], asF32(x), g, o)
		return ArrayValue(newFromF32(x.Type, g.out, o)), nil
	}
	if op := fastReducer(in.ToApply()); op != "" && len(inputs) == 1 && !intWindowFastDisabled {
		if out := reduceWindowInt(op, inputs[0], inits[0], g); out != nil {
			return ArrayValue(out), nil
		}
	}
	if prog := compileScalar(in.ToApply()); prog != nil {
		if ok, err := scalarReduceWindow(prog, g, inputs, inits, outs); ok {
			if err != nil {
				return Value{}, err
			}
			return packResults(outs), nil
		}
	}
	acc := make([]Value, len(inputs))
	sc := g.scratch()
	for k := int64(0); k < n; k++ {
		for i := range acc {
			acc[i] = ArrayValue(inits[i])
		}
		buf = g.walk(k, len(g.in), buf, sc)
		for _, p := range buf {
			if acc, err = applyReducer(ev, in.ToApply(), acc, inputs, p); err != nil {
				return Value{}, err
			}
		}
		for i, a := range acc {
			storeElem(outs[i], k, a.T)
		}
	}
	return packResults(outs), nil
}

func foldFloatAt[F float](op string, acc F, xs []F, idx []int64) F {
	for _, i := range idx {
		switch op {
		case "add":
			acc += xs[i]
		case "multiply":
			acc *= xs[i]
		case "maximum":
			acc = maxFloat(acc, xs[i])
		case "minimum":
			acc = minFloat(acc, xs[i])
		}
	}
	return acc
}

// evalSelectAndScatter: for each source element, select one operand element
// of its window (the first in-bounds one, replaced by each later candidate for
// which select(current, candidate) is false), then scatter the source into the
// result (initialized with init_value) there.
func evalSelectAndScatter(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	ts, err := arrayArgs(args, 3)
	if err != nil {
		return Value{}, err
	}
	x, src, init := ts[0], ts[1], ts[2]
	if len(in.Called) != 2 {
		return Value{}, fmt.Errorf("select-and-scatter needs select and scatter computations")
	}
	sel, scat := in.Called[0], in.Called[1]
	g, err := newWindowGeom(x.Dims, append([]hlo.WindowDim{}, in.Window...))
	if err != nil {
		return Value{}, err
	}
	if !equalDims(g.out, src.Dims) {
		return Value{}, fmt.Errorf("source %v does not match the window output dims %v", src, g.out)
	}
	out := broadcastScalar(init, x.Dims)
	if !selectScatterFastDisabled && selectScatterFast(sel, scat, g, x, src, out) {
		return ArrayValue(out), nil
	}
	if ps, pc := compileScalar(sel), compileScalar(scat); ps != nil && pc != nil {
		if ok, err := scalarSelectAndScatter(ps, pc, g, x, src, out); ok {
			if err != nil {
				return Value{}, err
			}
			return ArrayValue(out), nil
		}
	}
	var buf []int64
	sc := g.scratch()
	for k := int64(0); k < src.NumElements(); k++ {
		buf = g.walk(k, len(g.in), buf, sc)
		if len(buf) == 0 {
			continue
		}
		pick := buf[0]
		for _, c := range buf[1:] {
			r, err := ev.Call(sel, []Value{ArrayValue(scalarView(x, pick)), ArrayValue(scalarView(x, c))})
			if err != nil {
				return Value{}, err
			}
			if r.T == nil || r.T.Type != dtype.Pred || len(r.T.Data) != 1 {
				return Value{}, fmt.Errorf("select computation %s must return a pred scalar", sel.Name)
			}
			if r.T.Data[0] == 0 {
				pick = c
			}
		}
		r, err := ev.Call(scat, []Value{ArrayValue(scalarView(out, pick).Clone()), ArrayValue(scalarView(src, k))})
		if err != nil {
			return Value{}, err
		}
		if r.T == nil || r.T.NumElements() != 1 {
			return Value{}, fmt.Errorf("scatter computation %s must return a scalar", scat.Name)
		}
		storeElem(out, pick, r.T)
	}
	return ArrayValue(out), nil
}

// FastReducer is fastReducer for the golden driver's rewrites: the binary
// opcode reducer c computes on its two parameters, "" for anything else.
func FastReducer(c *hlo.Computation) string { return fastReducer(c) }
