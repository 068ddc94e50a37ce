package golden

import (
	"fmt"

	"goldtrace/engine/dtype"
	"goldtrace/engine/eval"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// Legalization rewrites a copy of the module before it runs; the caller's
// module is never changed.
//
// Aliasing: input_output_alias and buffer_donor are dropped. On a device they
// let an output reuse an input's buffer; here every output must be its own
// array so that writing one output file can never clobber an input or another
// output.
//
// -F (FP8E4M3FNAsE4M3): every f8e4m3fn type becomes f8e4m3, and f8e4m3fn data
// (inputs, constants) is relabelled bit for bit, not converted by value. This
// emulates hardware that only knows IEEE-style e4m3 and reads the same bytes:
// bit patterns agree except in the top binade, where e4m3fn's 256..448 and its
// single NaN pattern are infinities and NaNs in e4m3. That is why it is unsafe.
//
// -U (Upcast): every floating-point type narrower than f32 (f16, bf16, the
// f8 and f4 formats) becomes f32 in every instruction of every computation:
// parameters (inputs are converted exactly on the way in), constants
// (converted exactly), converts (a convert to bf16 becomes a convert to f32,
// i.e. the rounding disappears), arithmetic, and the result, whose outputs are
// therefore f32. The module then computes with no intermediate rounding: a
// reference for "what the math would give", not for what the low-precision
// program gives. Three things keep their original types, because their
// meaning depends on the bits: bitcast-convert and custom-call (a kernel is
// compiled for its operand types) get converts inserted around them, and
// computations called only by custom-calls are left alone. A dot or
// convolution whose operands changed loses its precision algorithm, which
// named the old types.

// legalize returns the module that actually runs for opts.
func legalize(m *hlo.Module, opts Options) (*hlo.Module, error) {
	m = cloneModule(m)
	m.InputOutputAlias = nil
	m.BufferDonors = nil
	if opts.FP8E4M3FNAsE4M3 {
		relabelFP8(m)
	}
	if opts.Upcast {
		if err := upcastModule(m); err != nil {
			return nil, err
		}
		// The rewrite must leave a module the evaluator can trust.
		if err := hlo.Verify(m); err != nil {
			return nil, fmt.Errorf("after upcasting to f32: %w", err)
		}
	}
	if opts.SPMD {
		hoistSdyCallAttrs(m) // before calls are inlined (spmd.go)
	}
	// What XLA:CPU's optimizer changes in float results (xla_rewrites.go).
	if err := xlaRewrites(m); err != nil {
		return nil, fmt.Errorf("applying XLA:CPU's rewrites: %w", err)
	}
	// Older XLA:CPU behaviours asked for with --xla-compat.
	if err := eval.ApplyXLACompat(m, opts.XLACompat); err != nil {
		return nil, fmt.Errorf("applying --xla-compat=%s: %w", opts.XLACompat, err)
	}
	if err := hlo.Verify(m); err != nil {
		return nil, fmt.Errorf("after XLA:CPU's rewrites: %w", err)
	}
	return m, nil
}

// cloneModule copies the module's computations and instructions so that they
// can be rewritten; shapes, literals and attributes are shared and must be
// replaced, not mutated.
func cloneModule(m *hlo.Module) *hlo.Module {
	nm := *m
	comps := make(map[*hlo.Computation]*hlo.Computation, len(m.Computations))
	instrs := map[*hlo.Instruction]*hlo.Instruction{}
	for _, c := range m.Computations {
		nc := *c
		comps[c] = &nc
		for _, in := range c.Instructions {
			ni := *in
			instrs[in] = &ni
		}
	}
	mapInstrs := func(list []*hlo.Instruction) []*hlo.Instruction {
		if list == nil {
			return nil
		}
		out := make([]*hlo.Instruction, len(list))
		for i, x := range list {
			if y, ok := instrs[x]; ok {
				out[i] = y
			} else {
				out[i] = x
			}
		}
		return out
	}
	nm.Computations = make([]*hlo.Computation, len(m.Computations))
	for i, c := range m.Computations {
		nc := comps[c]
		nm.Computations[i] = nc
		nc.Params = mapInstrs(c.Params)
		nc.Instructions = mapInstrs(c.Instructions)
		if c.Root != nil {
			nc.Root = instrs[c.Root]
		}
		for _, ni := range nc.Instructions {
			ni.Parent = nc
			ni.Operands = mapInstrs(ni.Operands)
			ni.ControlPredecessors = mapInstrs(ni.ControlPredecessors)
			if ni.Called != nil {
				called := make([]*hlo.Computation, len(ni.Called))
				for j, cc := range ni.Called {
					if x, ok := comps[cc]; ok {
						called[j] = x
					} else {
						called[j] = cc
					}
				}
				ni.Called = called
			}
		}
	}
	if m.Entry != nil {
		nm.Entry = comps[m.Entry]
	}
	if m.EntryLayout != nil {
		l := *m.EntryLayout
		l.Params = append([]hlo.Shape(nil), l.Params...)
		nm.EntryLayout = &l
	}
	return &nm
}

// mapModuleTypes applies f to every instruction shape and to the entry layout.
func mapModuleTypes(m *hlo.Module, f func(dtype.Type) dtype.Type) {
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			in.Shape = mapShape(in.Shape, f)
		}
	}
	if m.EntryLayout != nil {
		for i := range m.EntryLayout.Params {
			m.EntryLayout.Params[i] = mapShape(m.EntryLayout.Params[i], f)
		}
		m.EntryLayout.Result = mapShape(m.EntryLayout.Result, f)
	}
}

func fp8Relabel(t dtype.Type) dtype.Type {
	if t == dtype.F8E4M3FN {
		return dtype.F8E4M3
	}
	return t
}

func relabelFP8(m *hlo.Module) {
	mapModuleTypes(m, fp8Relabel)
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			if in.Literal != nil {
				in.Literal = mapLiteral(in.Literal, func(t *tensor.Tensor) (*tensor.Tensor, error) {
					return relabelTensor(t), nil
				})
			}
		}
	}
}

// relabelTensor reinterprets f8e4m3fn bits as f8e4m3 (sharing storage).
func relabelTensor(t *tensor.Tensor) *tensor.Tensor {
	if t.Type != dtype.F8E4M3FN {
		return t
	}
	return &tensor.Tensor{Type: dtype.F8E4M3, Dims: t.Dims, Data: t.Data}
}

func mapLiteral(l *hlo.Literal, f func(*tensor.Tensor) (*tensor.Tensor, error)) *hlo.Literal {
	out, err := mapLiteralErr(l, f)
	if err != nil {
		panic(err) // only for infallible f
	}
	return out
}

func mapLiteralErr(l *hlo.Literal, f func(*tensor.Tensor) (*tensor.Tensor, error)) (*hlo.Literal, error) {
	if l.Tensor != nil {
		t, err := f(l.Tensor)
		if err != nil {
			return nil, err
		}
		return &hlo.Literal{Tensor: t}, nil
	}
	out := &hlo.Literal{Tuple: make([]*hlo.Literal, len(l.Tuple))}
	for i, e := range l.Tuple {
		var err error
		if out.Tuple[i], err = mapLiteralErr(e, f); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func isLowFloat(t dtype.Type) bool { return t.IsFloat() && t.Bits() < 32 }

func upcastType(t dtype.Type) dtype.Type {
	if isLowFloat(t) {
		return dtype.F32
	}
	return t
}

// bitExact lists the opcodes whose meaning depends on their operands' and
// result's exact types, so -U converts around them instead of retyping them.
var bitExact = map[string]bool{"custom-call": true, "bitcast-convert": true}

func upcastModule(m *hlo.Module) error {
	// Computations a custom-call calls belong to the kernel's typed world.
	keep := calledByCustomCalls(m)
	names := map[string]bool{}
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			names[in.Name] = true
		}
	}
	u := &upcaster{names: names}
	for _, c := range m.Computations {
		if keep[c] {
			continue
		}
		if err := u.computation(c); err != nil {
			return err
		}
	}
	if m.EntryLayout != nil && !keep[m.Entry] {
		for i := range m.EntryLayout.Params {
			m.EntryLayout.Params[i] = mapShape(m.EntryLayout.Params[i], upcastType)
		}
		m.EntryLayout.Result = mapShape(m.EntryLayout.Result, upcastType)
	}
	return nil
}

type upcaster struct {
	names map[string]bool
	seq   int
}

func (u *upcaster) newName(base string) string {
	for {
		u.seq++
		n := fmt.Sprintf("%s.upcast.%d", base, u.seq)
		if !u.names[n] {
			u.names[n] = true
			return n
		}
	}
}

func (u *upcaster) computation(c *hlo.Computation) error {
	// Shapes as they were before this pass: instructions are retyped in
	// place, in order, so operands are already rewritten when users are seen.
	orig := make(map[*hlo.Instruction]hlo.Shape, len(c.Instructions))
	for _, in := range c.Instructions {
		orig[in] = in.Shape
	}
	replaced := map[*hlo.Instruction]*hlo.Instruction{}
	var out []*hlo.Instruction
	for _, in := range c.Instructions {
		hadLowOperand := false
		for i, op := range in.Operands {
			if shapeHas(orig[op], isLowFloat) {
				hadLowOperand = true
			}
			if bitExact[in.Opcode] && shapeHas(orig[op], isLowFloat) {
				cur := op
				if r, ok := replaced[op]; ok {
					cur = r
				}
				conv, extra := u.convertChain(c, cur, orig[op], in.Name)
				out = append(out, extra...)
				in.Operands[i] = conv
			} else if r, ok := replaced[op]; ok {
				in.Operands[i] = r
			}
		}
		if bitExact[in.Opcode] {
			out = append(out, in)
			if shapeHas(in.Shape, isLowFloat) {
				conv, extra := u.convertChain(c, in, mapShape(in.Shape, upcastType), in.Name)
				out = append(out, extra...)
				replaced[in] = conv
			}
			continue
		}
		if in.Literal != nil && shapeHas(in.Shape, isLowFloat) {
			l, err := mapLiteralErr(in.Literal, func(t *tensor.Tensor) (*tensor.Tensor, error) {
				return castTensor(t, upcastType(t.Type))
			})
			if err != nil {
				return fmt.Errorf("upcasting constant %%%s: %w", in.Name, err)
			}
			in.Literal = l
		}
		in.Shape = mapShape(in.Shape, upcastType)
		if hadLowOperand {
			in.Algorithm = ""
		}
		out = append(out, in)
	}
	c.Instructions = out
	if r, ok := replaced[c.Root]; ok {
		c.Root = r
	}
	return nil
}

// convertChain builds instructions converting x (whatever its current type)
// to shape to, element by element: one convert for an array, and
// get-tuple-element / convert / tuple for a tuple. It returns the final
// instruction and the new instructions in order.
func (u *upcaster) convertChain(c *hlo.Computation, x *hlo.Instruction, to hlo.Shape, base string) (*hlo.Instruction, []*hlo.Instruction) {
	var extra []*hlo.Instruction
	var build func(x *hlo.Instruction, to hlo.Shape) *hlo.Instruction
	build = func(x *hlo.Instruction, to hlo.Shape) *hlo.Instruction {
		from := x.Shape
		if to.IsTuple() {
			elems := make([]*hlo.Instruction, len(to.Tuple))
			for i, et := range to.Tuple {
				gte := &hlo.Instruction{Name: u.newName(base), Opcode: "get-tuple-element", Shape: from.Tuple[i],
					Operands: []*hlo.Instruction{x}, TupleIndex: int64(i), Parent: c}
				extra = append(extra, gte)
				elems[i] = build(gte, et)
			}
			t := &hlo.Instruction{Name: u.newName(base), Opcode: "tuple", Shape: to, Operands: elems, Parent: c}
			extra = append(extra, t)
			return t
		}
		if !to.IsArray() || from.Elem == to.Elem {
			return x
		}
		cv := &hlo.Instruction{Name: u.newName(base), Opcode: "convert", Shape: to, Operands: []*hlo.Instruction{x}, Parent: c}
		extra = append(extra, cv)
		return cv
	}
	return build(x, to), extra
}

// castTensor converts t to element type to with the evaluator's convert, so
// inputs and constants round exactly as a convert instruction would.
func castTensor(t *tensor.Tensor, to dtype.Type) (*tensor.Tensor, error) {
	if t.Type == to {
		return t, nil
	}
	v, err := evalSingle(&hlo.Instruction{Name: "cast", Opcode: "convert", Shape: hlo.Shape{Elem: to, Dims: t.Dims}}, []*tensor.Tensor{t})
	if err != nil {
		return nil, fmt.Errorf("converting %s to %v: %w", shapeString(t), to, err)
	}
	return v, nil
}
