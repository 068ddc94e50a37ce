package ir

import (
	"fmt"
	"slices"
	"strings"

	"goldtrace/engine/dtype"
	"goldtrace/kernel/ir/irpb"
)

// Hardware limits the NKI documentation states (NeuronCore-v2/v3; the
// architecture guide's SBUF/PSUM sizes and the ISA stubs' tile limits).
const (
	PartitionMax       = 128        // nl.tile_size.pmax
	PSUMBankBytes      = 2048       // per partition per bank
	PSUMBanks          = 8          //
	PSUMPartitionBytes = 16 * 1024  // PSUMBanks * PSUMBankBytes
	PSUMFreeMax        = 512        // nl.tile_size.psum_fmax (fp32 elements)
	SBUFPartitionBytes = 192 * 1024 // 24 MiB / 128 partitions
	StationaryFreeMax  = 128        // nl.tile_size.gemm_stationary_fmax
	MovingFreeMax      = 512        // nl.tile_size.gemm_moving_fmax
	BNStatsFreeMax     = 512        // nl.tile_size.bn_stats_fmax
	TensorTransposeMax = 128        // Tensor Engine transpose: [128,128] or smaller
	VectorTransposeMax = 32         // Vector Engine transpose: [32,32] or smaller
)

// maxEnumeration bounds the exact (mask-aware) out-of-bounds check: beyond
// this many combinations of the variables involved the conservative
// interval answer stands.
const maxEnumeration = 1 << 18

// enumerationBudget bounds the points enumerated over one Validate call, so
// a kernel (or a corrupt IR) with many large masked accesses stays fast.
const enumerationBudget = 1 << 21

// Validate checks k: first its structure (what Unmarshal checks), then every
// rule below. It returns nil or an ErrorList of *Error sorted by position,
// each naming its rule (at most 200 errors are collected: a corrupt IR can
// break one rule a million times):
//
//	unknown-op, operand-count, attr-unknown, attr-missing, attr-type, attr-value
//	    the opcode table of kernel_ir.proto: known ops, dst/src counts, attributes
//	    present, of the right type, with known op / function / enum names
//	unsupported-dtype, shape, constant-data
//	    tensors: an NKI dtype, dims >= 1, inline constant data of the right size
//	param-memory, output-memory, immutable-param, constant-write
//	    parameters live in HBM, returned tensors in HBM; no write to a parameter
//	    that is neither declared nt.mutable_tensor nor among the outputs (the
//	    older API's output argument), nor to a constant
//	partition-dim
//	    on-chip tensors and tiles: partition (axis 0) size <= 128
//	psum-fmax, psum-bank, psum-capacity, sbuf-capacity, alloc-bounds
//	    a PSUM tile's free size <= 512 elements and <= 2 KiB per partition (one
//	    bank); PSUM tensors live at once <= 16 KiB per partition (8 banks); SBUF
//	    tensors live at once <= 192 KiB per partition; explicit placements inside
//	    the memory
//	engine-memory, gpsimd-psum, dma-memory, dma-size
//	    compute engines read/write SBUF and PSUM only; GpSimd cannot touch PSUM;
//	    a DMA moves between HBM and SBUF (either side may be either, as
//	    nisa.dma_copy documents; PSUM is not reachable by DMA) with equal element counts
//	matmul-memory, matmul-dtype, matmul-result-dtype, matmul-contraction,
//	matmul-stationary-free, matmul-moving-free, matmul-shape
//	    nc_matmul: stationary and moving in SBUF, result in PSUM as float32,
//	    inputs fp8/bf16/fp16/tf32/fp32 (fp32/tf32 only with each other), equal
//	    partition (contraction) sizes <= 128, stationary free <= 128, moving
//	    free <= 512, result (stationary free, moving free)
//	transpose-size, transpose-memory, transpose-shape
//	    nc_transpose: Tensor Engine <= 128x128 from SBUF to PSUM, Vector Engine <= 32x32
//	reduce-axes, reduce-shape
//	    tensor_reduce: axes free (not 0) and the trailing ones; result sizes match
//	tensor-tensor-psum, partition-mismatch, shape-mismatch, operand-shape
//	    at most one PSUM input to tensor_tensor (and copy_predicated); operand
//	    partition sizes equal; sources broadcast to the instruction's domain;
//	    per-partition operands (P, 1)
//	bitwise-dtype, tensor-scalar-op-class
//	    bitvec ops on integer tiles only; tensor_scalar's two ops of one class
//	bn-stats-free, op-shape, op-dtype
//	    bn_stats free size <= 512; fixed result shapes (bn_stats, bn_aggr, max8, ...);
//	    tensor_copy_predicated copies without converting (src and dst of one dtype)
//	loop-scope, mask-axis
//	    index expressions use only enclosing loops' variables; mask tile axes
//	    exist in the domain
//	oob
//	    every access in bounds for every tile element, loop iteration and
//	    program instance (masked instructions: only the elements the mask lets
//	    through, checked exactly when the combinations are few enough)
func Validate(k *irpb.Kernel) error {
	if l := checkStructure(k); len(l) > 0 {
		return l.Err()
	}
	return checkRules(k)
}

// checkRules is Validate after the structure check.
func checkRules(k *irpb.Kernel) error {
	v := &validator{k: k, budget: enumerationBudget}
	v.sink.files = k.Files
	v.run()
	return v.sink.list.Err()
}

type validator struct {
	k    *irpb.Kernel
	sink errSink
	vars []varRange

	// liveness for the capacity rules
	pos      int
	instLocs []*irpb.Loc
	uses     []span // by tensor id; first < 0: never accessed
	loops    []span
	returned []bool // by tensor id: among the kernel's outputs
	budget   int64  // points the exact mask check may still enumerate

	lin []linTerm // scratch for bounds' index expressions

	// lazy: checking statements before the kernel's signature is known
	// (Builder.CheckAhead); a write to a parameter is a doubt (whether it
	// may be written depends on the outputs and mutable parameters).
	lazy, doubt bool
}

type varRange struct {
	inScope            bool
	start, step, trips int64
}

type span struct{ first, last int }

func (v *validator) loc(l *irpb.Loc) locRef {
	if l == nil {
		return locRef{}
	}
	return locRef{file: l.File, line: l.Line, ok: true}
}

func (v *validator) errf(rule string, l *irpb.Loc, op, format string, args ...any) {
	v.sink.add(rule, v.loc(l), op, format, args...)
}

func (v *validator) tensor(id int32) *irpb.Tensor { return v.k.Tensors[id] }

func (v *validator) label(id int32) string { return tensorLabel(v.tensor(id)) }

func isHBM(m irpb.Memory) bool  { return m == irpb.Memory_SHARED_HBM || m == irpb.Memory_PRIVATE_HBM }
func onChip(m irpb.Memory) bool { return m == irpb.Memory_SBUF || m == irpb.Memory_PSUM }

// elemSize is the bytes of one element of t (tf32 is stored as f32).
func elemSize(t *irpb.Tensor) int64 {
	if d := t.Dtype; d >= 0 && int(d) < len(elemSizes) {
		return elemSizes[d]
	}
	return int64(dtype.Type(t.Dtype).Size())
}

// elemSizes is dtype.Type.Size by type number (a table: the validator asks
// per access, and Size is a map lookup).
var elemSizes = func() (tab [64]int64) {
	for i := range tab {
		tab[i] = int64(dtype.Type(i).Size())
	}
	return tab
}()

// freeElems is the product of shape[1:] (saturating).
func freeElems(shape []int64) int64 {
	if len(shape) == 0 {
		return 1
	}
	return prodFree(shape)
}

func prodAll(shape []int64) int64 {
	p := int64(1)
	for _, n := range shape {
		p = satMul(p, max(n, 0))
	}
	return p
}

// partitionBytes is what t occupies in each partition it spans.
func partitionBytes(t *irpb.Tensor) int64 { return satMul(freeElems(t.Shape), elemSize(t)) }

// nkiDtypes are the element types of the NKI language (nl.* dtypes).
var nkiDtypes = map[dtype.Type]bool{
	dtype.BF16: true, dtype.F16: true, dtype.F32: true, dtype.F8E4M3FN: true, dtype.F8E4M3: true, dtype.F8E5M2: true,
	dtype.S8: true, dtype.S16: true, dtype.S32: true, dtype.U8: true, dtype.U16: true, dtype.U32: true, dtype.Pred: true,
}

func (v *validator) run() {
	k := v.k
	v.vars = make([]varRange, k.NumVars)
	v.uses = make([]span, len(k.Tensors))
	for i := range v.uses {
		v.uses[i] = span{-1, -1}
	}
	v.returned = make([]bool, len(k.Tensors))
	v.instLocs = make([]*irpb.Loc, 0, countStmts(k.Body))
	for _, id := range k.Outputs {
		v.returned[id] = true // an older-style output argument is a parameter the kernel writes
	}
	v.kernelRules()
	v.stmts(k.Body, false)
	v.capacity()
}

// kernelRules checks the tensors, parameters and outputs (what needs no
// walk of the body).
func (v *validator) kernelRules() {
	k := v.k
	for _, t := range k.Tensors {
		v.checkTensor(t)
	}
	for _, id := range k.Inputs {
		if t := v.tensor(id); !isHBM(t.Memory) {
			v.errf("param-memory", t.Loc, "", "parameter %s is in %s; kernel parameters live in HBM", tensorLabel(t), memoryName(t.Memory))
		}
	}
	for _, id := range k.Outputs {
		if t := v.tensor(id); !isHBM(t.Memory) {
			v.errf("output-memory", t.Loc, "", "returned tensor %s is in %s; a kernel returns HBM tensors (nl.shared_hbm)", tensorLabel(t), memoryName(t.Memory))
		}
	}
}

func (v *validator) checkTensor(t *irpb.Tensor) {
	dt := dtype.Type(t.Dtype)
	if !nkiDtypes[dt] || (t.Tf32 && dt != dtype.F32) {
		name := dt.String()
		if t.Tf32 {
			name = "tf32 over " + name
		}
		v.errf("unsupported-dtype", t.Loc, "", "tensor %s has dtype %s, which NKI does not support", tensorLabel(t), name)
	}
	for d, n := range t.Shape {
		if n < 1 {
			v.errf("shape", t.Loc, "", "tensor %s: dimension %d has size %d (sizes must be >= 1)", tensorLabel(t), d, n)
		}
	}
	if onChip(t.Memory) && len(t.Shape) > 0 && t.Shape[0] > PartitionMax {
		v.errf("partition-dim", t.Loc, "", "tensor %s: partition dimension size %d exceeds the architecture limit of %d", tensorLabel(t), t.Shape[0], PartitionMax)
	}
	if t.Role == irpb.TensorRole_CONSTANT {
		if want := satMul(prodAll(t.Shape), elemSize(t)); want != int64(len(t.Data)) {
			v.errf("constant-data", t.Loc, "", "constant %s: %s%v needs %d bytes of data, has %d", tensorLabel(t), dtypeName(t), t.Shape, want, len(t.Data))
		}
	}
	capacity := int64(0)
	switch t.Memory {
	case irpb.Memory_SBUF:
		capacity = SBUFPartitionBytes
	case irpb.Memory_PSUM:
		capacity = PSUMPartitionBytes
	}
	if capacity > 0 {
		rule := capacityRule(t.Memory)
		b := partitionBytes(t)
		if b > capacity {
			v.errf(rule, t.Loc, "", "tensor %s needs %d bytes per partition, more than the %d (%d KiB) a %s partition holds", tensorLabel(t), b, capacity, capacity/1024, memoryName(t.Memory))
		}
		if a := t.Allocation; a != nil {
			p := int64(1)
			if len(t.Shape) > 0 {
				p = t.Shape[0]
			}
			if a.PartitionOffset < 0 || satAdd(a.PartitionOffset, p) > PartitionMax {
				v.errf("alloc-bounds", t.Loc, "", "tensor %s placed at partition %d spans partitions up to %d, beyond the %d partitions", tensorLabel(t), a.PartitionOffset, satAdd(a.PartitionOffset, p)-1, PartitionMax)
			}
			end := satAdd(a.ByteOffset, b)
			if a.NumFreeTiles > 1 {
				end = satAdd(end, satMul(a.NumFreeTiles-1, max(a.BytesPerTile, 0)))
			}
			if a.ByteOffset < 0 || a.BytesPerTile < 0 || end > capacity {
				v.errf("alloc-bounds", t.Loc, "", "tensor %s placed at byte %d ends at byte %d of each partition, beyond the %d bytes of %s", tensorLabel(t), a.ByteOffset, end, capacity, memoryName(t.Memory))
			}
		}
	} else if t.Allocation != nil {
		v.errf("alloc-bounds", t.Loc, "", "tensor %s in %s has an on-chip placement; only SBUF and PSUM tensors are placed", tensorLabel(t), memoryName(t.Memory))
	}
}

// stmts walks a body; dead: the enclosing loops run zero times (no access
// happens, so bounds are not checked).
func (v *validator) stmts(body []*irpb.Stmt, dead bool) {
	for _, st := range body {
		switch x := st.GetKind().(type) {
		case *irpb.Stmt_Inst:
			v.inst(x.Inst, dead)
		case *irpb.Stmt_Loop:
			l := x.Loop
			vr := &v.vars[l.Var]
			if vr.inScope {
				v.errf("loop-scope", l.Loc, "", "loop variable i%d is already the variable of an enclosing loop", l.Var)
				v.stmts(l.Body, dead)
				continue
			}
			trips := tripCount(l)
			*vr = varRange{inScope: true, start: l.Start, step: l.Step, trips: trips}
			first := v.pos
			v.stmts(l.Body, dead || trips == 0)
			if v.pos > first {
				v.loops = append(v.loops, span{first, v.pos - 1})
			}
			vr.inScope = false
		}
	}
}

// srcDomain: opcodes whose domain (what masks and exprs range over) is the
// src[0] tile: the reductions and the ops whose result summarizes their
// input (the simulator's table agrees; the other ops' dst[0] has src[0]'s shape).
var srcDomain = setOf("tensor_reduce", "tensor_partition_reduce", "bn_stats", "bn_aggr", "max8",
	"nc_find_index8", "nc_match_replace8")

// domainOf is the instruction's iteration space: dst[0]'s tile unless the
// opcode says otherwise (srcDom: its srcDomain entry, from opTable).
func domainOf(in *irpb.Instruction, srcDom bool) []int64 {
	switch {
	case srcDom && len(in.Src) > 0:
		return in.Src[0].Shape
	case len(in.Dst) > 0:
		return in.Dst[0].Shape
	case len(in.Src) > 0:
		return in.Src[0].Shape
	}
	return nil
}

func (v *validator) inst(in *irpb.Instruction, dead bool) {
	op := DisplayOp(in.Op)
	pos := v.pos
	v.pos++
	v.instLocs = append(v.instLocs, in.Loc)
	for _, a := range in.Dst {
		v.use(a, pos)
	}
	for _, a := range in.Src {
		v.use(a, pos)
	}
	spec, known := opTable[in.Op]
	if !known {
		v.errf("unknown-op", in.Loc, op, "unknown instruction %q", in.Op)
	}
	dom := domainOf(in, known && spec.srcDomain)
	for i, p := range in.Mask {
		v.checkTermsIn(in, op, idxName("mask", i), p.Expr, len(dom))
	}
	for i, p := range in.Preds {
		v.checkTermsIn(in, op, idxName("preds", i), p.Expr, len(dom))
	}
	for i, e := range in.Exprs {
		v.checkTermsIn(in, op, idxName("exprs", i), e, len(dom))
	}
	for i, a := range in.Dst {
		v.access(in, op, idxName("dst", i), a, dom, dead)
		t := v.tensor(a.Tensor)
		if v.lazy && t.Role == irpb.TensorRole_PARAM {
			v.doubt = true
		}
		switch {
		case t.Role == irpb.TensorRole_PARAM && !t.Mutable && !v.returned[a.Tensor]:
			v.errf("immutable-param", in.Loc, op, "writes parameter %s, which is immutable (declare it nt.mutable_tensor to update it in place)", tensorLabel(t))
		case t.Role == irpb.TensorRole_CONSTANT:
			v.errf("constant-write", in.Loc, op, "writes constant %s", tensorLabel(t))
		}
	}
	for i, a := range in.Src {
		v.access(in, op, idxName("src", i), a, dom, dead)
	}
	if !known {
		return
	}
	if len(in.Dst) < spec.dstMin || len(in.Dst) > spec.dstMax || len(in.Src) < spec.srcMin || len(in.Src) > spec.srcMax {
		v.errf("operand-count", in.Loc, op, "has %d destinations and %d sources; %s takes %s destinations and %s sources",
			len(in.Dst), len(in.Src), op, countRange(spec.dstMin, spec.dstMax), countRange(spec.srcMin, spec.srcMax))
		return
	}
	if !v.attrs(in, op, spec) {
		return
	}
	if spec.compute && in.Op != "matmul" && in.Op != "transpose" { // those two have their own memory rules
		for i, a := range in.Dst {
			v.engineMemory(in, op, idxName("dst", i), a)
		}
		for i, a := range in.Src {
			v.engineMemory(in, op, idxName("src", i), a)
		}
	}
	v.opRules(in, op)
}

func countRange(lo, hi int) string {
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}

// use records an access for liveness.
func (v *validator) use(a *irpb.Access, pos int) {
	s := &v.uses[a.Tensor]
	if s.first < 0 {
		*s = span{pos, pos}
	} else {
		s.first, s.last = min(s.first, pos), max(s.last, pos)
	}
	for _, d := range a.Dynamic {
		v.use(d, pos)
	}
}

func (v *validator) engineMemory(in *irpb.Instruction, op, what string, a *irpb.Access) {
	t := v.tensor(a.Tensor)
	if !onChip(t.Memory) {
		v.errf("engine-memory", in.Loc, op, "%s %s is in %s; compute engines read and write SBUF and PSUM only (move it with nl.load / nl.store / dma_copy)", what, tensorLabel(t), memoryName(t.Memory))
	}
	if t.Memory == irpb.Memory_PSUM && in.Engine == "gpsimd" {
		v.errf("gpsimd-psum", in.Loc, op, "%s %s is in PSUM, which the GpSimd Engine cannot access", what, tensorLabel(t))
	}
}

// attrs checks presence, types and values; false when an attribute the op
// rules read is unusable.
func (v *validator) attrs(in *irpb.Instruction, op string, spec *opEntry) bool {
	if attrsOK(in, spec) {
		return true
	}
	return v.attrErrors(in, op, spec)
}

// attrsOK is attrs for a kernel without attribute errors: no sorting, no
// messages (the usual case; attrErrors reports in a stable order otherwise).
func attrsOK(in *irpb.Instruction, spec *opEntry) bool {
	for n, a := range in.Attrs {
		s, known := spec.attrs[n]
		if !known || attrVerdict(a, s) != attrFine {
			return false
		}
	}
	for _, n := range spec.required {
		if in.Attrs[n] == nil {
			return false
		}
	}
	return true
}

func (v *validator) attrErrors(in *irpb.Instruction, op string, spec *opEntry) bool {
	ok := true
	var names []string
	if len(in.Attrs) > 1 {
		names = make([]string, 0, len(in.Attrs))
		for n := range in.Attrs {
			names = append(names, n)
		}
		slices.Sort(names) // errors in a stable order
	} else {
		for n := range in.Attrs {
			names = []string{n}
		}
	}
	for _, n := range names {
		a := in.Attrs[n]
		s, known := spec.attrs[n]
		if !known {
			v.errf("attr-unknown", in.Loc, op, "unknown attribute %q", n)
			ok = false
			continue
		}
		if !v.attrValue(in, op, n, a, s) {
			ok = false
		}
	}
	for _, n := range spec.required {
		if in.Attrs[n] == nil {
			v.errf("attr-missing", in.Loc, op, "missing attribute %q", n)
			ok = false
		}
	}
	return ok
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// attrVerdict classifies attribute a against its spec.
type verdict int

const (
	attrFine     verdict = iota
	attrBadType          // the value has the wrong type
	attrBadValue         // a name the attribute's kind does not know
)

func attrVerdict(a *irpb.Attr, s attrSpec) verdict {
	switch s.kind {
	case kInt:
		if _, ok := a.Value.(*irpb.Attr_I); !ok {
			return attrBadType
		}
	case kNum:
		switch a.Value.(type) {
		case *irpb.Attr_I, *irpb.Attr_F:
		default:
			return attrBadType
		}
	case kBool:
		if _, ok := a.Value.(*irpb.Attr_B); !ok {
			return attrBadType
		}
	case kInts:
		if _, ok := a.Value.(*irpb.Attr_Ints); !ok {
			return attrBadType
		}
	case kStr, kALU, kCmp, kFunc, kEnum:
		sv, ok := a.Value.(*irpb.Attr_S)
		if !ok {
			return attrBadType
		}
		var known bool
		switch s.kind {
		case kStr:
			known = true
		case kALU:
			known = aluOps[sv.S]
		case kCmp:
			known = cmpOps[sv.S]
		case kFunc:
			known = unaryFuncs[sv.S]
		case kEnum:
			known = slices.Contains(s.values, sv.S)
		}
		if !known {
			return attrBadValue
		}
	}
	return attrFine
}

func (v *validator) attrValue(in *irpb.Instruction, op, name string, a *irpb.Attr, s attrSpec) bool {
	switch attrVerdict(a, s) {
	case attrBadType:
		v.errf("attr-type", in.Loc, op, "attribute %q is %s, expected %s", name, attrString(a), s.kindName())
		return false
	case attrBadValue:
		v.errf("attr-value", in.Loc, op, "attribute %q: unknown value %q (expected %s)", name, a.GetS(), s.kindName())
		return false
	}
	return true
}

func (s attrSpec) kindName() string {
	switch s.kind {
	case kInt:
		return "an integer"
	case kNum:
		return "a number"
	case kStr:
		return "a string"
	case kBool:
		return "a boolean"
	case kInts:
		return "a list of integers"
	case kALU:
		return "an ALU op name"
	case kCmp:
		return "a comparison op name"
	case kFunc:
		return "an activation function name"
	}
	return "one of " + strings.Join(s.values, ", ")
}

// checkTermsIn checks that an expression's tile axes exist in a tile of the
// given rank and its loop variables are in scope.
func (v *validator) checkTermsIn(in *irpb.Instruction, op, what string, e *irpb.Affine, rank int) {
	for _, t := range e.Terms {
		switch t.Kind {
		case irpb.TermKind_TILE_AXIS:
			if int(t.Id) >= rank {
				v.errf("mask-axis", in.Loc, op, "%s uses tile axis %d, but the instruction's domain has %d axes", what, t.Id, rank)
			}
		case irpb.TermKind_LOOP_VAR:
			if !v.vars[t.Id].inScope {
				v.errf("loop-scope", in.Loc, op, "%s uses loop variable i%d outside its loop", what, t.Id)
			}
		}
	}
}

func (v *validator) access(in *irpb.Instruction, op, what string, a *irpb.Access, dom []int64, dead bool) {
	t := v.tensor(a.Tensor)
	scoped := true
	for i, e := range a.Index {
		for _, tm := range e.Terms {
			if tm.Kind == irpb.TermKind_LOOP_VAR && !v.vars[tm.Id].inScope {
				v.errf("loop-scope", in.Loc, op, "%s index %d uses loop variable i%d outside its loop", what, i, tm.Id)
				scoped = false
			}
		}
	}
	if onChip(t.Memory) && len(a.Shape) > 0 && a.Shape[0] > PartitionMax && (len(t.Shape) == 0 || t.Shape[0] <= PartitionMax) {
		v.errf("partition-dim", in.Loc, op, "%s: partition dimension size %d of the tile on %s exceeds the architecture limit of %d", what, a.Shape[0], tensorLabel(t), PartitionMax)
	}
	if t.Memory == irpb.Memory_PSUM {
		fe := freeElems(a.Shape)
		if b := satMul(fe, elemSize(t)); b > PSUMBankBytes {
			v.errf("psum-bank", in.Loc, op, "%s: PSUM tile needs %d bytes per partition, more than one bank (%d bytes)", what, b, PSUMBankBytes)
		} else if fe > PSUMFreeMax {
			v.errf("psum-fmax", in.Loc, op, "%s: PSUM tile free size %d exceeds %d elements (nl.tile_size.psum_fmax)", what, fe, PSUMFreeMax)
		}
	}
	if scoped && !dead {
		v.bounds(in, op, what, a, dom)
	}
	for i, d := range a.Dynamic {
		v.access(in, op, fmt.Sprintf("%s dynamic index %d", what, i), d, nil, dead)
	}
}

// ValidateMarshal is Validate(k) with Marshal(k) made concurrently: once the
// structure check (what Marshal requires) passes, a new goroutine serializes
// k and calls done with Marshal's bytes, while this one checks the hardware
// rules. done is called exactly when the structure check passes, so always
// when ValidateMarshal returns nil (also when it returns a hardware-rule
// error); a panic while serializing reaches done as an error, never the
// process. k must not change until done has been called.
func ValidateMarshal(k *irpb.Kernel, done func(b []byte, err error)) error {
	if l := checkStructure(k); len(l) > 0 {
		return l.Err()
	}
	startMarshal(k, nil, done)
	return checkRules(k)
}

// startMarshal serializes k (structure checked) in a new goroutine, which
// then calls done; body, when not nil, is k.Body serialized already.
func startMarshal(k *irpb.Kernel, body []byte, done func(b []byte, err error)) {
	go func() {
		var b []byte
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("internal error serializing kernel %q: %v", k.Name, r)
				}
			}()
			if body == nil {
				b = marshalDeterministic(k)
				return nil
			}
			var e wireEncoder
			e.b = make([]byte, 0, 256+64*len(k.Tensors)+len(body))
			e.kernelWithBody(k, body)
			b = e.b
			return nil
		}()
		done(b, err)
	}()
}
