package golden

import (
	"encoding/json"
	"os"
	"slices"

	"goldtrace/engine/dtype"
	"goldtrace/engine/eval"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// Batched products and the work between them (attention: scores, softmax,
// the product with V) are evaluated a few batch elements at a time: a
// region of instructions that all keep the batch dimensions of a batched
// dot leading, and whose values for batch element b depend only on the
// operands' element b, becomes a custom-call (eval.SlicedTarget) of a
// computation that does the region's work for `chunk` batch elements. The
// evaluator runs it chunk by chunk, one chunk per core at a time, so each
// chunk's score matrix, probabilities and the like stay in cache instead of
// going to memory and back between every op (the [8,12,256,256] scores of
// a bf16 attention are 25 MB; one head's are 256 KB).
//
// The bits are the unsliced evaluation's: every op in a region computes
// each batch element on its own, in an order that does not depend on how
// many batch elements there are (dots plan on m, n and k; reductions only
// over trailing dimensions, a row at a time), and the one size-dependent
// choice, whether a sum takes YNNPACK's order (4096 or more elements), is
// kept by choosing chunks that do not cross it. TestSlicedRegionsKeepBits
// compares sliced and unsliced runs.

// slicedOff turns the slicing off (GOLDTRACE_NO_SLICED=1), to compare.
var slicedOff = os.Getenv("GOLDTRACE_NO_SLICED") == "1"

const (
	// slicedMinBytes: a region whose largest inner value (one read only
	// inside it) is smaller gains nothing (its values fit in cache whole).
	slicedMinBytes = 4 << 20
	// slicedChunkBytes bounds the values of one chunk together: about
	// an L2 cache.
	slicedChunkBytes = 1 << 20
)

// sliceRegions rewrites c's sliceable regions (see above) into sliced
// custom-calls, adding their computations to m.
func (r *xlaRewriter) sliceRegions(m *hlo.Module, c *hlo.Computation) {
	if slicedOff {
		return
	}
	taken := map[*hlo.Instruction]bool{}
	for i := 0; i < len(c.Instructions); i++ {
		d := c.Instructions[i]
		nb := leadingBatch(d)
		if nb == 0 || taken[d] {
			continue
		}
		reg := growRegion(c, d, nb, taken)
		if reg == nil {
			continue
		}
		for x := range reg.members {
			taken[x] = true
		}
		if r.emitSliced(m, c, reg) {
			i = -1 // c's instructions changed: look again from the start
		}
	}
}

// leadingBatch is the number of batch dims of dot d when they lead, in
// order, on both operands and the result (f32 or bf16 results), else 0.
func leadingBatch(d *hlo.Instruction) int {
	if d.Opcode != "dot" || d.DotDims == nil || len(d.Operands) != 2 || !d.Shape.IsArray() {
		return 0
	}
	if d.Shape.Elem != dtype.F32 && d.Shape.Elem != dtype.BF16 {
		return 0
	}
	dd := d.DotDims
	nb := len(dd.LhsBatch)
	if nb == 0 || len(dd.RhsBatch) != nb {
		return 0
	}
	for i := 0; i < nb; i++ {
		if dd.LhsBatch[i] != int64(i) || dd.RhsBatch[i] != int64(i) {
			return 0
		}
	}
	for _, o := range d.Operands {
		if !o.Shape.IsArray() || len(o.Shape.Dims) <= nb || (o.Shape.Elem != dtype.F32 && o.Shape.Elem != dtype.BF16) {
			return 0
		}
	}
	return nb
}

type slicedRegion struct {
	nb      int
	lead    []int64
	members map[*hlo.Instruction]bool
}

// growRegion collects the region around seed: its users (and theirs) that
// keep the lead dims, then operands read only inside. Nil when the region
// is not worth slicing.
func growRegion(c *hlo.Computation, seed *hlo.Instruction, nb int, taken map[*hlo.Instruction]bool) *slicedRegion {
	reg := &slicedRegion{nb: nb, lead: seed.Shape.Dims[:nb], members: map[*hlo.Instruction]bool{seed: true}}
	if !reg.fits(seed) {
		return nil
	}
	pos := map[*hlo.Instruction]int{}
	for i, x := range c.Instructions {
		pos[x] = i
	}
	// Forward: an instruction reading the region joins when it fits;
	// otherwise it and whatever reads it later may not (the region must
	// not feed anything that feeds it back).
	tainted := map[*hlo.Instruction]bool{}
	for _, x := range c.Instructions[pos[seed]+1:] {
		reads, bad := false, false
		for _, o := range x.Operands {
			reads = reads || reg.members[o]
			bad = bad || tainted[o]
		}
		if !reads && !bad {
			continue
		}
		if !bad && !taken[x] && reg.fits(x) {
			reg.members[x] = true
		} else {
			tainted[x] = true
		}
	}
	// Backward: an instruction read only by the region joins when it fits
	// (the widenings of q, k and v, a mask).
	users := map[*hlo.Instruction][]*hlo.Instruction{}
	for _, x := range c.Instructions {
		for _, o := range x.Operands {
			users[o] = append(users[o], x)
		}
	}
	for changed := true; changed; {
		changed = false
		for i := len(c.Instructions) - 1; i >= 0; i-- {
			x := c.Instructions[i]
			if reg.members[x] || taken[x] || tainted[x] || x == c.Root || len(users[x]) == 0 || len(x.ControlPredecessors) > 0 {
				continue
			}
			if x.Opcode == "parameter" || x.Opcode == "constant" || !reg.fits(x) {
				continue
			}
			inside := true
			for _, u := range users[x] {
				inside = inside && reg.members[u]
			}
			for _, o := range x.Operands {
				inside = inside && !tainted[o]
			}
			if inside {
				reg.members[x] = true
				changed = true
			}
		}
	}
	for x := range reg.members {
		if len(x.ControlPredecessors) > 0 {
			return nil
		}
	}
	if tensor.NumElements(reg.lead) < 2 {
		return nil
	}
	return reg
}

// slicedElementwise are the ops that compute each element from the same
// position of same-shaped operands.
var slicedElementwise = map[string]bool{
	"add": true, "subtract": true, "multiply": true, "divide": true, "maximum": true, "minimum": true,
	"power": true, "remainder": true, "atan2": true, "and": true, "or": true, "xor": true, "not": true,
	"negate": true, "abs": true, "sign": true, "exponential": true, "exponential-minus-one": true, "log": true,
	"log-plus-one": true, "tanh": true, "logistic": true, "sqrt": true, "rsqrt": true, "cbrt": true,
	"sine": true, "cosine": true, "tan": true, "erf": true, "floor": true, "ceil": true,
	"round-nearest-even": true, "round-nearest-afz": true, "is-finite": true, "convert": true,
	"compare": true, "select": true, "clamp": true,
}

// fits reports whether x may be a member: its value keeps the lead dims
// and its batch element b depends only on its operands' element b (or on
// operands without the lead dims, read whole).
func (reg *slicedRegion) fits(x *hlo.Instruction) bool {
	nb := reg.nb
	if !reg.leads(x.Shape) || len(x.Called) > 0 && x.Opcode != "reduce" {
		return false
	}
	switch op := x.Opcode; {
	case slicedElementwise[op] || op == "custom-call" && (x.CustomCallTarget == eval.YNNTarget || x.CustomCallTarget == eval.FMATarget):
		for _, o := range x.Operands {
			if !o.Shape.IsArray() || !slices.Equal(o.Shape.Dims, x.Shape.Dims) {
				return false
			}
		}
		return true
	case op == "broadcast":
		if len(x.Operands) != 1 || !x.Operands[0].Shape.IsArray() {
			return false
		}
		return broadcastMode(x, nb) != 0
	case op == "reshape":
		return len(x.Operands) == 1 && reg.leads(x.Operands[0].Shape) && len(x.Shape.Dims) > nb && len(x.Operands[0].Shape.Dims) > nb
	case op == "transpose":
		if len(x.Operands) != 1 || len(x.Dimensions) != len(x.Shape.Dims) {
			return false
		}
		for i := 0; i < nb; i++ {
			if x.Dimensions[i] != int64(i) {
				return false
			}
		}
		return true
	case op == "iota":
		return x.IotaDimension >= int64(nb)
	case op == "reduce":
		// One input, over trailing dims only: a row at a time (a column
		// sum's chunking depends on the whole shape).
		if len(x.Operands) != 2 || !reg.leads(x.Operands[0].Shape) || len(x.Dimensions) == 0 {
			return false
		}
		rank := len(x.Operands[0].Shape.Dims)
		dims := slices.Sorted(slices.Values(x.Dimensions))
		for i, d := range dims {
			if d != int64(rank-len(dims)+i) || d < int64(nb) {
				return false
			}
		}
		return true
	case op == "dot":
		return leadingBatch(x) == nb && x.Shape.Elem != dtype.C64 && reg.leads(x.Operands[0].Shape) && reg.leads(x.Operands[1].Shape)
	}
	return false
}

// leads reports whether s is an array in the default layout whose leading
// dims are the region's.
func (reg *slicedRegion) leads(s hlo.Shape) bool {
	if !s.IsArray() || len(s.Dims) < reg.nb || !slices.Equal(s.Dims[:reg.nb], reg.lead) || len(s.DynamicDims) > 0 {
		return false
	}
	if s.Layout != nil && len(s.Layout.MinorToMajor) > 0 {
		n := len(s.Layout.MinorToMajor)
		for i, d := range s.Layout.MinorToMajor {
			if d != int64(n-1-i) {
				return false
			}
		}
	}
	return true
}

// broadcastMode is 1 when broadcast x maps its operand's first nb dims to
// its own first nb (the operand is sliced with it), 2 when no operand dim
// lands among the first nb (the operand is read whole), else 0.
func broadcastMode(x *hlo.Instruction, nb int) int {
	lead := 0
	for i, d := range x.Dimensions {
		if d < int64(nb) {
			if d != int64(i) {
				return 0
			}
			lead++
		}
	}
	switch lead {
	case nb:
		return 1
	case 0:
		return 2
	}
	return 0
}

// slicedUse says how member x reads its operand k: sliced with the region
// (true) or whole.
func slicedUse(x *hlo.Instruction, k, nb int) bool {
	switch x.Opcode {
	case "broadcast":
		return broadcastMode(x, nb) == 1
	case "reduce":
		return k == 0
	}
	return true
}

// emitSliced replaces reg in c by a sliced custom-call of a new
// computation; false when the region cannot be cut into chunks that keep
// its bits.
func (r *xlaRewriter) emitSliced(m *hlo.Module, c *hlo.Computation, reg *slicedRegion) bool {
	nb := reg.nb
	total := tensor.NumElements(reg.lead)
	var members []*hlo.Instruction
	for _, x := range c.Instructions {
		if reg.members[x] {
			members = append(members, x)
		}
	}
	for _, x := range members {
		switch x.Opcode {
		case "dot":
			// A dot's plan looks through a transpose feeding it (XLA folds
			// it into the dot): one outside the region would be a
			// parameter in its computation, seen otherwise.
			if !plansWithoutOutsideTransposes(x, reg) {
				return false
			}
		case "reduce":
			// Without the fusion prediction's hint, the use counts of a
			// widened bf16 operand pick a sum's kernel, and the region's
			// computation counts only its own uses.
			if o := x.Operands[0]; o.Opcode == "convert" && len(o.Operands) == 1 && o.Operands[0].Shape.Elem != dtype.F32 &&
				x.FrontendAttrs[eval.YNNSumAttr] == "" {
				return false
			}
		}
	}
	// The chunk: the most batch elements whose values fit slicedChunkBytes,
	// a divisor of the total, and on the same side of YNNPACK's 4096
	// elements as the whole for every sum.
	perElem := int64(0)
	for _, x := range members {
		perElem += tensor.NumElements(x.Shape.Dims) / total * int64(x.Shape.Elem.Size())
	}
	chunk := int64(0)
	for d := min(total/2, max(1, slicedChunkBytes/max(perElem, 1))); d >= 1; d-- {
		if total%d != 0 {
			continue
		}
		ok := true
		for _, x := range members {
			if x.Opcode == "reduce" {
				whole := tensor.NumElements(x.Operands[0].Shape.Dims)
				part := whole / total * d
				ok = ok && (whole >= eval.YNNMinElements) == (part >= eval.YNNMinElements)
			}
		}
		if ok {
			chunk = d
			break
		}
	}
	if chunk == 0 {
		return false
	}
	sub := &hlo.Computation{Name: r.newName("sliced_region")}
	sliceShape := func(s hlo.Shape) hlo.Shape {
		out := s
		out.Dims = append([]int64{chunk}, s.Dims[nb:]...)
		out.Layout = nil
		return out
	}
	type inputKey struct {
		in     *hlo.Instruction
		sliced bool
	}
	params := map[inputKey]*hlo.Instruction{}
	var operands []*hlo.Instruction
	var slicedFlags []bool
	clone := map[*hlo.Instruction]*hlo.Instruction{}
	for _, x := range members {
		y := *x
		y.Name = r.newName(x.Opcode)
		y.Parent = sub
		y.Shape = sliceShape(x.Shape)
		y.Operands = make([]*hlo.Instruction, len(x.Operands))
		for k, o := range x.Operands {
			if cl := clone[o]; cl != nil {
				y.Operands[k] = cl
				continue
			}
			key := inputKey{o, slicedUse(x, k, nb)}
			p := params[key]
			if p == nil {
				shape := o.Shape
				if key.sliced {
					shape = sliceShape(o.Shape)
				}
				p = &hlo.Instruction{Name: r.newName("sliced_param"), Opcode: "parameter", Shape: shape,
					ParameterNumber: int64(len(operands)), Parent: sub}
				params[key] = p
				operands = append(operands, o)
				slicedFlags = append(slicedFlags, key.sliced)
				sub.Params = append(sub.Params, p)
				sub.Instructions = append(sub.Instructions, p)
			}
			y.Operands[k] = p
		}
		mapDim := func(d int64) int64 {
			if d < int64(nb) {
				return 0
			}
			return d - int64(nb) + 1
		}
		switch x.Opcode {
		case "broadcast":
			var dims []int64
			if broadcastMode(x, nb) == 1 {
				dims = append(dims, 0)
				for _, d := range x.Dimensions[nb:] {
					dims = append(dims, mapDim(d))
				}
			} else {
				for _, d := range x.Dimensions {
					dims = append(dims, mapDim(d))
				}
			}
			y.Dimensions = dims
		case "transpose":
			y.Dimensions = append([]int64{0}, mapDims(x.Dimensions[nb:], mapDim)...)
		case "reduce":
			y.Dimensions = mapDims(x.Dimensions, mapDim)
		case "iota":
			y.IotaDimension = mapDim(x.IotaDimension)
		case "dot":
			dd := *x.DotDims
			dd.LhsBatch, dd.RhsBatch = []int64{0}, []int64{0}
			dd.LhsContracting = mapDims(x.DotDims.LhsContracting, mapDim)
			dd.RhsContracting = mapDims(x.DotDims.RhsContracting, mapDim)
			y.DotDims = &dd
		}
		clone[x] = &y
		sub.Instructions = append(sub.Instructions, &y)
	}
	// The region's values read outside it (or returned) are its results.
	var outs []*hlo.Instruction
	for _, x := range members {
		outside := x == c.Root
		for _, u := range c.Instructions {
			if !reg.members[u] && slices.Contains(u.Operands, x) {
				outside = true
			}
		}
		if outside {
			outs = append(outs, x)
		}
	}
	if len(outs) == 0 {
		return false
	}
	// Only values the region keeps to itself stop going to memory and
	// back: without a large one (a lone dot) slicing gains nothing.
	largest := int64(0)
	for _, x := range members {
		if !slices.Contains(outs, x) {
			largest = max(largest, tensor.NumElements(x.Shape.Dims)*int64(x.Shape.Elem.Size()))
		}
	}
	if largest < slicedMinBytes {
		return false
	}
	cfg, err := json.Marshal(eval.SlicedConfig{Lead: nb, Chunk: int(chunk), Sliced: slicedFlags})
	if err != nil {
		return false
	}
	call := &hlo.Instruction{Name: r.newName("sliced"), Opcode: "custom-call", Operands: operands, Parent: c,
		Called: []*hlo.Computation{sub}, CustomCallTarget: eval.SlicedTarget, BackendConfig: string(cfg)}
	replace := map[*hlo.Instruction]*hlo.Instruction{}
	var added []*hlo.Instruction
	if len(outs) == 1 {
		sub.Root = clone[outs[0]]
		call.Shape = outs[0].Shape
		replace[outs[0]] = call
	} else {
		var elems []*hlo.Instruction
		call.Shape = hlo.Shape{Elem: dtype.Tuple}
		for _, o := range outs {
			elems = append(elems, clone[o])
			call.Shape.Tuple = append(call.Shape.Tuple, o.Shape)
		}
		t := &hlo.Instruction{Name: r.newName("tuple"), Opcode: "tuple", Operands: elems, Parent: sub,
			Shape: hlo.Shape{Elem: dtype.Tuple, Tuple: make([]hlo.Shape, len(elems))}}
		for i, e := range elems {
			t.Shape.Tuple[i] = e.Shape
		}
		sub.Instructions = append(sub.Instructions, t)
		sub.Root = t
		for i, o := range outs {
			g := &hlo.Instruction{Name: r.newName("get-tuple-element"), Opcode: "get-tuple-element", Shape: o.Shape,
				Operands: []*hlo.Instruction{call}, TupleIndex: int64(i), Parent: c}
			replace[o] = g
			added = append(added, g)
		}
	}
	// The call takes the place of the region's last member (the first
	// place all its operands exist), then the rest in a stable order that
	// puts every instruction after its operands.
	var rest []*hlo.Instruction
	last := members[len(members)-1]
	for _, x := range c.Instructions {
		if reg.members[x] {
			if x == last {
				rest = append(rest, call)
				rest = append(rest, added...)
			}
			continue
		}
		for k, o := range x.Operands {
			if v := replace[o]; v != nil {
				x.Operands[k] = v
			}
		}
		rest = append(rest, x)
	}
	if v := replace[c.Root]; v != nil {
		c.Root = v
	}
	c.Instructions = topoOrder(rest)
	// Callees before callers: the region's computation goes right before c.
	at := slices.Index(m.Computations, c)
	m.Computations = slices.Insert(m.Computations, max(at, 0), sub)
	return true
}

// plansWithoutOutsideTransposes reports whether dot x, its operands that
// are transposes outside the region read as plain parameters (as in the
// region's computation), keeps its plan: no such operand, or an f32 dot
// whose YNNPACK plan is the same either way (XLA copies a transpose that
// moves batch dims rather than folding it).
func plansWithoutOutsideTransposes(x *hlo.Instruction, reg *slicedRegion) bool {
	seen := *x
	seen.Operands = slices.Clone(x.Operands)
	outside := false
	for k, o := range x.Operands {
		if o.Opcode == "transpose" && !reg.members[o] {
			seen.Operands[k] = &hlo.Instruction{Name: o.Name, Opcode: "parameter", Shape: o.Shape}
			outside = true
		}
	}
	return !outside || eval.SameYNNDot(x, &seen)
}

func mapDims(ds []int64, f func(int64) int64) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = f(d)
	}
	return out
}

// sliceEntry runs sliceRegions on m's entry computation.
func sliceEntry(m *hlo.Module) {
	r := &xlaRewriter{names: map[string]bool{}}
	for _, c := range m.Computations {
		r.names[c.Name] = true
		for _, in := range c.Instructions {
			r.names[in.Name] = true
		}
	}
	r.sliceRegions(m, m.Entry)
}
