package ir

import (
	"fmt"
	"slices"

	"goldtrace/engine/dtype"
	"goldtrace/kernel/ir/irpb"
)

// Per-opcode shape, memory and dtype rules. Operand and attribute counts are
// already checked when these run.

func attrS(in *irpb.Instruction, name string) string { return in.Attrs[name].GetS() }
func attrB(in *irpb.Instruction, name string) bool   { return in.Attrs[name].GetB() }
func hasAttr(in *irpb.Instruction, name string) bool { return in.Attrs[name] != nil }

func (v *validator) mem(a *irpb.Access) irpb.Memory { return v.tensor(a.Tensor).Memory }
func (v *validator) dt(a *irpb.Access) dtype.Type   { return dtype.Type(v.tensor(a.Tensor).Dtype) }

func partition(shape []int64) int64 {
	if len(shape) == 0 {
		return 1
	}
	return shape[0]
}

// broadcasts reports whether src can meet a domain tile: numpy broadcasting
// (right-aligned, size-1 axes repeat) or the same partition size and the same
// number of elements per partition (the ISA's "same partition axis size and
// number of elements per partition"), or one element per partition.
func broadcasts(src, dom []int64) bool {
	if partition(src) == partition(dom) && (freeElems(src) == freeElems(dom) || freeElems(src) == 1) {
		return true
	}
	for i := 1; i <= max(len(src), len(dom)); i++ {
		s, d := int64(1), int64(1)
		if i <= len(src) {
			s = src[len(src)-i]
		}
		if i <= len(dom) {
			d = dom[len(dom)-i]
		}
		if s != d && s != 1 {
			return false
		}
	}
	return true
}

func (v *validator) needBroadcast(in *irpb.Instruction, op, what string, a *irpb.Access, dom []int64) {
	if !broadcasts(a.Shape, dom) {
		v.errf("shape-mismatch", in.Loc, op, "%s tile %s does not match the instruction's domain %s", what, shapeString(a.Shape), shapeString(dom))
	}
}

// needVector: a per-partition operand of shape (P, 1) (or a single element).
func (v *validator) needVector(in *irpb.Instruction, op, what string, a *irpb.Access, p int64) {
	if freeElems(a.Shape) != 1 || (partition(a.Shape) != p && partition(a.Shape) != 1) {
		v.errf("operand-shape", in.Loc, op, "%s tile %s must be a (%d, 1) per-partition vector", what, shapeString(a.Shape), p)
	}
}

func shapeString(s []int64) string {
	out := "("
	for i, n := range s {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprint(n)
	}
	return out + ")"
}

func (v *validator) needInteger(in *irpb.Instruction, op, opName string) {
	for _, group := range [][]*irpb.Access{in.Dst, in.Src} {
		for _, a := range group {
			if dt := v.dt(a); !dt.IsInteger() && dt != dtype.Pred {
				v.errf("bitwise-dtype", in.Loc, op, "bitvec op %s needs integer tiles, but %s is %s", opName, tensorLabel(v.tensor(a.Tensor)), dtypeName(v.tensor(a.Tensor)))
				return
			}
		}
	}
}

// samePartition: the destination (accs[0]) and the sources share one
// partition size; a source with one partition broadcasts across partitions
// (the IR's broadcasting convention: nl.broadcast_to, (1, F) operands).
func (v *validator) samePartition(in *irpb.Instruction, op string, accs ...*irpb.Access) {
	if len(accs) == 0 {
		return
	}
	p := partition(accs[0].Shape)
	for _, a := range accs[1:] {
		if q := partition(a.Shape); q != p && q != 1 {
			v.errf("partition-mismatch", in.Loc, op, "partition sizes differ: %d (%s) and %d (%s)", p, v.label(accs[0].Tensor), q, v.label(a.Tensor))
			return
		}
	}
}

func (v *validator) opShape(in *irpb.Instruction, op, what string, a *irpb.Access, p, free int64) {
	if partition(a.Shape) != p || freeElems(a.Shape) != free {
		v.errf("op-shape", in.Loc, op, "%s tile %s must have %d partitions and %d elements per partition", what, shapeString(a.Shape), p, free)
	}
}

// immediateOrTile: exactly one of a tile operand (flag) or an immediate (value attr).
func (v *validator) immediateOrTile(in *irpb.Instruction, op, flag, value string) {
	if !attrB(in, flag) && !hasAttr(in, value) {
		v.errf("attr-missing", in.Loc, op, "missing attribute %q (the operand is neither a tile nor an immediate)", value)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (v *validator) srcCount(in *irpb.Instruction, op string, want int, why string) bool {
	if len(in.Src) != want {
		v.errf("operand-count", in.Loc, op, "has %d sources; %s needs %d", len(in.Src), why, want)
		return false
	}
	return true
}

func (v *validator) opRules(in *irpb.Instruction, op string) {
	dst := func(i int) *irpb.Access { return in.Dst[i] }
	src := func(i int) *irpb.Access { return in.Src[i] }
	switch in.Op {
	case "iota":
		if len(in.Exprs) != 1 {
			v.errf("operand-count", in.Loc, op, "needs exactly one expression (exprs), has %d", len(in.Exprs))
		}
	case "dma", "dma_transpose":
		d, s := dst(0), src(0)
		for _, x := range []struct {
			what string
			a    *irpb.Access
		}{{"dst[0]", d}, {"src[0]", s}} {
			if v.mem(x.a) == irpb.Memory_PSUM {
				v.errf("dma-memory", in.Loc, op, "%s %s is in PSUM, which DMA engines do not reach (copy it to SBUF with tensor_copy first)", x.what, v.label(x.a.Tensor))
			}
		}
		if in.Op == "dma" {
			if prodAll(d.Shape) != prodAll(s.Shape) {
				v.errf("dma-size", in.Loc, op, "copies %d elements %s into %d elements %s; the counts must match", prodAll(s.Shape), shapeString(s.Shape), prodAll(d.Shape), shapeString(d.Shape))
			}
			if r := attrS(in, "dst_rmw_op"); bitvecOps[r] {
				v.needInteger(in, op, r)
			}
		} else {
			if len(d.Shape) != 2 || len(s.Shape) != 2 || d.Shape[0] != s.Shape[1] || d.Shape[1] != s.Shape[0] {
				v.errf("transpose-shape", in.Loc, op, "dst tile %s must be the transpose of the 2-D src tile %s", shapeString(d.Shape), shapeString(s.Shape))
			}
			if v.mem(d) != irpb.Memory_SBUF {
				v.errf("dma-memory", in.Loc, op, "dst %s must be in SBUF", v.label(d.Tensor))
			}
		}
	case "tensor_copy":
		v.samePartition(in, op, dst(0), src(0))
		v.needBroadcast(in, op, "src[0]", src(0), dst(0).Shape)
	case "activation":
		data := src(0)
		dom := dst(0).Shape
		hasBias, hasScale := attrB(in, "has_bias"), attrB(in, "has_scale")
		if !v.srcCount(in, op, 1+boolInt(hasBias)+boolInt(hasScale), "activation with these has_bias/has_scale") {
			return
		}
		v.samePartition(in, op, dst(0), data)
		v.needBroadcast(in, op, "src[0]", data, dom)
		for i := 1; i < len(in.Src); i++ {
			v.needVector(in, op, idxName("src", i), src(i), partition(data.Shape))
		}
		switch {
		case hasRegisterCmd(in):
			// Accumulator registers (reduce_cmd): reducing without reading
			// out, or reading out (reduce_res) what earlier instructions
			// accumulated, are both instructions of their own.
			if len(in.Dst) == 2 {
				v.needVector(in, op, "dst[1]", dst(1), partition(data.Shape))
			}
		case (len(in.Dst) == 2) != hasAttr(in, "reduce_op"):
			v.errf("operand-count", in.Loc, op, "a reduction needs both reduce_op and a second destination (reduce_res)")
		case len(in.Dst) == 2:
			v.needVector(in, op, "dst[1]", dst(1), partition(data.Shape))
		}
		if f := attrS(in, "func"); f == "invert" {
			v.needInteger(in, op, f)
		}
	case "tensor_tensor":
		a, b := src(0), src(1)
		if v.mem(a) == irpb.Memory_PSUM && v.mem(b) == irpb.Memory_PSUM {
			v.errf("tensor-tensor-psum", in.Loc, op, "both inputs %s and %s are in PSUM; at most one may be", v.label(a.Tensor), v.label(b.Tensor))
		}
		v.samePartition(in, op, dst(0), a, b)
		v.needBroadcast(in, op, "src[0]", a, dst(0).Shape)
		v.needBroadcast(in, op, "src[1]", b, dst(0).Shape)
		if o := attrS(in, "op"); bitvecOps[o] {
			v.needInteger(in, op, o)
		}
	case "tensor_scalar":
		has0, has1 := attrB(in, "has_operand0_tile"), attrB(in, "has_operand1_tile")
		op1 := hasAttr(in, "op1")
		if has1 && !op1 {
			v.errf("attr-missing", in.Loc, op, "has an operand1 tile but no op1")
		}
		if !v.srcCount(in, op, 1+boolInt(has0)+boolInt(has1), "tensor_scalar with these has_operand*_tile") {
			return
		}
		v.immediateOrTile(in, op, "has_operand0_tile", "scalar0")
		if op1 {
			v.immediateOrTile(in, op, "has_operand1_tile", "scalar1")
		}
		v.samePartition(in, op, dst(0), src(0))
		v.needBroadcast(in, op, "src[0]", src(0), dst(0).Shape)
		for i := 1; i < len(in.Src); i++ {
			v.needVector(in, op, idxName("src", i), src(i), partition(src(0).Shape))
		}
		o0, o1 := attrS(in, "op0"), attrS(in, "op1")
		if op1 && bitvecOps[o0] != bitvecOps[o1] && o1 != "bypass" && o0 != "bypass" {
			v.errf("tensor-scalar-op-class", in.Loc, op, "op0 %s and op1 %s must both be bitvec or both arithmetic", o0, o1)
		}
		if bitvecOps[o0] || bitvecOps[o1] {
			v.needInteger(in, op, map[bool]string{true: o0, false: o1}[bitvecOps[o0]])
		}
	case "scalar_tensor_tensor":
		has0 := attrB(in, "has_operand0_tile")
		if !v.srcCount(in, op, 2+boolInt(has0), "scalar_tensor_tensor with this has_operand0_tile") {
			return
		}
		v.immediateOrTile(in, op, "has_operand0_tile", "scalar0")
		data, data1 := src(0), src(len(in.Src)-1)
		v.samePartition(in, op, dst(0), data, data1)
		v.needBroadcast(in, op, "src[0]", data, dst(0).Shape)
		v.needBroadcast(in, op, fmt.Sprintf("src[%d]", len(in.Src)-1), data1, dst(0).Shape)
		if has0 {
			v.needVector(in, op, "src[1]", src(1), partition(data.Shape))
		}
		for _, n := range []string{"op0", "op1"} {
			if o := attrS(in, n); bitvecOps[o] {
				v.needInteger(in, op, o)
			}
		}
	case "tensor_reduce":
		v.reduce(in, op)
	case "tensor_partition_reduce":
		if partition(dst(0).Shape) != 1 || freeElems(dst(0).Shape) != freeElems(src(0).Shape) {
			v.errf("reduce-shape", in.Loc, op, "reducing the partitions of %s gives (1, %d), not %s", shapeString(src(0).Shape), freeElems(src(0).Shape), shapeString(dst(0).Shape))
		}
		if o := attrS(in, "op"); bitvecOps[o] {
			v.needInteger(in, op, o)
		}
	case "tensor_scalar_reduce":
		has0 := attrB(in, "has_operand0_tile")
		if !v.srcCount(in, op, 1+boolInt(has0), "tensor_scalar_reduce with this has_operand0_tile") {
			return
		}
		v.immediateOrTile(in, op, "has_operand0_tile", "scalar0")
		v.samePartition(in, op, dst(0), src(0))
		v.needBroadcast(in, op, "src[0]", src(0), dst(0).Shape)
		v.needVector(in, op, "dst[1]", dst(1), partition(src(0).Shape))
		if has0 {
			v.needVector(in, op, "src[1]", src(1), partition(src(0).Shape))
		}
	case "tensor_tensor_scan":
		if !v.srcCount(in, op, 2+boolInt(attrB(in, "has_initial_tile")), "tensor_tensor_scan with this has_initial_tile") {
			return
		}
		v.immediateOrTile(in, op, "has_initial_tile", "initial")
		v.samePartition(in, op, dst(0), src(0), src(1))
		v.needBroadcast(in, op, "src[0]", src(0), dst(0).Shape)
		v.needBroadcast(in, op, "src[1]", src(1), dst(0).Shape)
		if len(in.Src) == 3 {
			v.needVector(in, op, "src[2]", src(2), partition(src(0).Shape))
		}
	case "matmul":
		v.matmul(in, op)
	case "transpose":
		v.transpose(in, op)
	case "select":
		hasT, hasF := attrB(in, "has_true_tile"), attrB(in, "has_false_tile")
		if !v.srcCount(in, op, 1+boolInt(hasT)+boolInt(hasF), "select with these has_true_tile/has_false_tile") {
			return
		}
		v.immediateOrTile(in, op, "has_true_tile", "true_value")
		v.immediateOrTile(in, op, "has_false_tile", "false_value")
		for i, a := range in.Src {
			v.needBroadcast(in, op, idxName("src", i), a, dst(0).Shape)
		}
	case "affine_select":
		if len(in.Preds) == 0 {
			v.errf("attr-missing", in.Loc, op, "needs its condition in preds")
		}
		v.needBroadcast(in, op, "src[0]", src(0), dst(0).Shape)
	case "range_select":
		v.samePartition(in, op, dst(0), src(0))
		v.needBroadcast(in, op, "src[0]", src(0), dst(0).Shape)
		v.needVector(in, op, "src[1]", src(1), partition(src(0).Shape))
		v.needVector(in, op, "src[2]", src(2), partition(src(0).Shape))
		v.optionalReduce(in, op)
	case "select_reduce":
		if len(in.Src) == 2 && !hasAttr(in, "false_value") {
			v.errf("attr-missing", in.Loc, op, "missing attribute \"false_value\" (no on_false tile given)")
		}
		for i, a := range in.Src {
			v.needBroadcast(in, op, idxName("src", i), a, dst(0).Shape)
		}
		v.optionalReduce(in, op)
	case "bn_stats":
		p, f := partition(src(0).Shape), freeElems(src(0).Shape)
		if f > BNStatsFreeMax {
			v.errf("bn-stats-free", in.Loc, op, "free size %d exceeds bn_stats' limit of %d (nl.tile_size.bn_stats_fmax)", f, BNStatsFreeMax)
		} else {
			v.opShape(in, op, "dst[0]", dst(0), p, 6*((f+BNStatsFreeMax-1)/BNStatsFreeMax))
		}
	case "bn_aggr":
		v.opShape(in, op, "dst[0]", dst(0), partition(src(0).Shape), 2)
		if f := freeElems(src(0).Shape); f%3 != 0 {
			v.errf("op-shape", in.Loc, op, "src[0] holds %d elements per partition, not whole (count, mean, var) triples from bn_stats", f)
		}
	case "max8":
		v.opShape(in, op, "dst[0]", dst(0), partition(src(0).Shape), 8)
		if f := freeElems(src(0).Shape); f < 8 {
			v.errf("op-shape", in.Loc, op, "src[0] has %d elements per partition; max8 needs at least 8", f)
		}
	case "nc_find_index8":
		v.opShape(in, op, "dst[0]", dst(0), partition(src(0).Shape), 8)
		if dt := v.dt(dst(0)); dt != dtype.U32 && dt != dtype.S32 {
			v.errf("op-shape", in.Loc, op, "dst[0] must be an int32/uint32 index tile, is %s", dt)
		}
	case "nc_match_replace8":
		v.samePartition(in, op, dst(0), src(0))
		v.needBroadcast(in, op, "src[0]", src(0), dst(0).Shape)
	case "nc_stream_shuffle":
		m := in.Attrs["shuffle_mask"].GetInts().GetV()
		if len(m) != 32 {
			v.errf("attr-value", in.Loc, op, "shuffle_mask has %d entries, needs 32", len(m))
		}
		for _, x := range m {
			if (x < 0 || x >= 32) && x != 255 {
				v.errf("attr-value", in.Loc, op, "shuffle_mask entry %d is not a partition 0-31 or 255 (keep)", x)
				break
			}
		}
	case "dropout":
		if len(in.Src) == 1 && !hasAttr(in, "prob") {
			v.errf("attr-missing", in.Loc, op, "missing attribute \"prob\" (no probability tile given)")
		}
		v.needBroadcast(in, op, "src[0]", src(0), dst(0).Shape)
	case "copy_predicated":
		if v.mem(src(0)) == irpb.Memory_PSUM && v.mem(src(1)) == irpb.Memory_PSUM {
			v.errf("tensor-tensor-psum", in.Loc, op, "data and predicate are both in PSUM; at most one may be")
		}
		v.samePartition(in, op, dst(0), src(0), src(1))
		v.needBroadcast(in, op, "src[0]", src(0), dst(0).Shape)
		v.needBroadcast(in, op, "src[1]", src(1), dst(0).Shape)
		if a, b := v.tensor(src(0).Tensor), v.tensor(dst(0).Tensor); a.Dtype != b.Dtype || a.Tf32 != b.Tf32 {
			v.errf("op-dtype", in.Loc, op, "src %s is %s but dst %s is %s; a predicated copy does not convert", tensorLabel(a), dtypeName(a), tensorLabel(b), dtypeName(b))
		}
	case "cc_all_reduce", "cc_all_gather", "cc_reduce_scatter", "cc_all_to_all", "cc_collective_permute":
		v.deviceCollective(in, op)
	case "atomic_rmw":
		if !isHBM(v.mem(dst(0))) {
			v.errf("engine-memory", in.Loc, op, "dst %s must be an HBM tensor", v.label(dst(0).Tensor))
		}
		if prodAll(dst(0).Shape) != prodAll(src(0).Shape) {
			v.errf("shape-mismatch", in.Loc, op, "src tile %s and dst tile %s differ in size", shapeString(src(0).Shape), shapeString(dst(0).Shape))
		}
	}
}

// hasRegisterCmd: the instruction names an accumulator-register command
// other than idle (nisa.reduce_cmd; kernel/sim/regs.go).
func hasRegisterCmd(in *irpb.Instruction) bool {
	a := in.GetAttrs()["reduce_cmd"]
	return a != nil && a.GetI() != 0
}

func (v *validator) optionalReduce(in *irpb.Instruction, op string) {
	if hasRegisterCmd(in) {
		if len(in.Dst) == 2 {
			v.needVector(in, op, "dst[1]", in.Dst[1], partition(in.Dst[0].Shape))
		}
		return
	}
	if (len(in.Dst) == 2) != hasAttr(in, "reduce_op") {
		v.errf("operand-count", in.Loc, op, "a reduction needs both reduce_op and a second destination")
	} else if len(in.Dst) == 2 {
		v.needVector(in, op, "dst[1]", in.Dst[1], partition(in.Dst[0].Shape))
	}
}

func (v *validator) reduce(in *irpb.Instruction, op string) {
	s, d := in.Src[0], in.Dst[0]
	axes := in.Attrs["axes"].GetInts().GetV()
	r := int64(len(s.Shape))
	if len(axes) == 0 {
		v.errf("reduce-axes", in.Loc, op, "no reduction axes")
		return
	}
	sorted := slices.Clone(axes)
	slices.Sort(sorted)
	for i, a := range sorted {
		switch {
		case a == 0:
			v.errf("reduce-axes", in.Loc, op, "axes %v include the partition axis 0; only free axes can be reduced (transpose first, or use a matmul with a ones vector)", axes)
			return
		case a < 0 || a >= r:
			v.errf("reduce-axes", in.Loc, op, "axis %d is not an axis of the %d-D tile %s", a, r, shapeString(s.Shape))
			return
		case i > 0 && a == sorted[i-1]:
			v.errf("reduce-axes", in.Loc, op, "axis %d appears twice", a)
			return
		}
	}
	if sorted[len(sorted)-1] != r-1 || sorted[len(sorted)-1]-sorted[0] != int64(len(sorted)-1) {
		v.errf("reduce-axes", in.Loc, op, "axes %v of the %d-D tile %s are not the last contiguous free axes (valid: [%d], [%d, %d], ...)", axes, r, shapeString(s.Shape), r-1, r-2, r-1)
		return
	}
	kept := freeElems(s.Shape[:sorted[0]])
	if partition(d.Shape) != partition(s.Shape) || freeElems(d.Shape) != kept {
		v.errf("reduce-shape", in.Loc, op, "reducing axes %v of %s gives %d partitions of %d elements, but dst is %s", axes, shapeString(s.Shape), partition(s.Shape), kept, shapeString(d.Shape))
	}
	if o := attrS(in, "op"); bitvecOps[o] {
		v.needInteger(in, op, o)
	}
}

var matmulInputTypes = map[dtype.Type]bool{
	dtype.F8E4M3FN: true, dtype.F8E4M3: true, dtype.F8E5M2: true, dtype.BF16: true, dtype.F16: true, dtype.F32: true,
}

func (v *validator) matmul(in *irpb.Instruction, op string) {
	d, st, mv := in.Dst[0], in.Src[0], in.Src[1]
	for _, x := range []struct {
		what string
		a    *irpb.Access
		want irpb.Memory
	}{{"stationary", st, irpb.Memory_SBUF}, {"moving", mv, irpb.Memory_SBUF}, {"result", d, irpb.Memory_PSUM}} {
		if m := v.mem(x.a); m != x.want {
			v.errf("matmul-memory", in.Loc, op, "%s %s is in %s; nc_matmul reads SBUF and writes PSUM", x.what, v.label(x.a.Tensor), memoryName(m))
		}
	}
	if dt := v.dt(d); dt != dtype.F32 || v.tensor(d.Tensor).Tf32 {
		v.errf("matmul-result-dtype", in.Loc, op, "result %s is %s; the tensor engine accumulates and writes float32", v.label(d.Tensor), dtypeName(v.tensor(d.Tensor)))
	}
	f32 := func(a *irpb.Access) bool { return v.dt(a) == dtype.F32 }
	for _, x := range []struct {
		what string
		a    *irpb.Access
	}{{"stationary", st}, {"moving", mv}} {
		if !matmulInputTypes[v.dt(x.a)] {
			v.errf("matmul-dtype", in.Loc, op, "%s %s is %s; the tensor engine takes fp8, bf16, fp16, tf32 or fp32", x.what, v.label(x.a.Tensor), dtypeName(v.tensor(x.a.Tensor)))
			return
		}
	}
	if f32(st) != f32(mv) {
		v.errf("matmul-dtype", in.Loc, op, "stationary is %s and moving is %s; a tf32/fp32 operand needs a tf32/fp32 partner", dtypeName(v.tensor(st.Tensor)), dtypeName(v.tensor(mv.Tensor)))
	}
	k1, k2 := partition(st.Shape), partition(mv.Shape)
	if k1 != k2 {
		v.errf("matmul-contraction", in.Loc, op, "contraction (partition) sizes differ: stationary %d, moving %d", k1, k2)
	}
	if max(k1, k2) > PartitionMax {
		v.errf("matmul-contraction", in.Loc, op, "contraction (partition) size %d exceeds the tensor engine's limit of %d", max(k1, k2), PartitionMax)
	}
	m, n := freeElems(st.Shape), freeElems(mv.Shape)
	if m > StationaryFreeMax {
		v.errf("matmul-stationary-free", in.Loc, op, "stationary free size %d exceeds the tensor engine's limit of %d", m, StationaryFreeMax)
	}
	if n > MovingFreeMax {
		v.errf("matmul-moving-free", in.Loc, op, "moving free size %d exceeds the tensor engine's limit of %d", n, MovingFreeMax)
	}
	if partition(d.Shape) != m || freeElems(d.Shape) != n {
		v.errf("matmul-shape", in.Loc, op, "result tile %s must be (stationary free %d, moving free %d)", shapeString(d.Shape), m, n)
	}
}

func (v *validator) transpose(in *irpb.Instruction, op string) {
	d, s := in.Dst[0], in.Src[0]
	p, f := partition(s.Shape), freeElems(s.Shape)
	limit := int64(VectorTransposeMax)
	eng := attrS(in, "engine")
	if eng == "tensor" {
		limit = TensorTransposeMax
		if v.mem(s) != irpb.Memory_SBUF || v.mem(d) != irpb.Memory_PSUM {
			v.errf("transpose-memory", in.Loc, op, "a Tensor Engine transpose reads SBUF and writes PSUM; src %s is in %s, dst %s in %s",
				v.label(s.Tensor), memoryName(v.mem(s)), v.label(d.Tensor), memoryName(v.mem(d)))
		}
	}
	if eng == "vector" && (!onChip(v.mem(s)) || !onChip(v.mem(d))) {
		v.errf("transpose-memory", in.Loc, op, "a Vector Engine transpose reads and writes SBUF or PSUM; src %s is in %s, dst %s in %s",
			v.label(s.Tensor), memoryName(v.mem(s)), v.label(d.Tensor), memoryName(v.mem(d)))
	}
	if p > limit || f > limit {
		v.errf("transpose-size", in.Loc, op, "tile %dx%d exceeds the %s engine's transpose limit of %dx%d", p, f, eng, limit, limit)
	}
	if partition(d.Shape) != f || freeElems(d.Shape) != p {
		v.errf("transpose-shape", in.Loc, op, "dst tile %s must be the transpose (%d, %d) of src %s", shapeString(d.Shape), f, p, shapeString(s.Shape))
	}
}
