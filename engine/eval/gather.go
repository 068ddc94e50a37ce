package eval

import (
	"fmt"
	"math"
	"slices"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func init() {
	Register("gather", evalGather)
	Register("scatter", evalScatter)
}

// indexBatches describes the start-index vectors of a gather or scatter: the
// indices tensor seen as a list of vectors along indexVectorDim (an implicit
// trailing dim of size 1 when indexVectorDim == rank).
type indexBatches struct {
	dims   []int64 // the batch dims: the indices' dims without indexVectorDim
	vecLen int64
	vals   []int64 // [numBatches * vecLen], saturated to int64
}

func readIndexBatches(t *tensor.Tensor, ivd int64, what string) (*indexBatches, error) {
	if !t.Type.IsInteger() {
		return nil, fmt.Errorf("%s indices must be integers, got %v", what, t.Type)
	}
	rank := int64(len(t.Dims))
	if ivd < 0 || ivd > rank {
		return nil, fmt.Errorf("%s index_vector_dim %d out of range for indices rank %d", what, ivd, rank)
	}
	var raw []int64
	if t.Type.IsUnsigned() {
		us := asU64(t)
		raw = make([]int64, len(us))
		for i, v := range us {
			raw[i] = int64(min(v, math.MaxInt64))
		}
	} else {
		raw = asI64(t)
	}
	ib := &indexBatches{vecLen: 1}
	perm := make([]int, 0, rank)
	for d := int64(0); d < rank; d++ {
		if d != ivd {
			ib.dims = append(ib.dims, t.Dims[d])
			perm = append(perm, int(d))
		}
	}
	if ivd < rank {
		ib.vecLen = t.Dims[ivd]
		perm = append(perm, int(ivd))
	}
	ib.vals = permuteTo(raw, t.Dims, perm)
	return ib, nil
}

func (ib *indexBatches) count() int64 { return tensor.NumElements(ib.dims) }

// vector returns start vector b.
func (ib *indexBatches) vector(b int64) []int64 { return ib.vals[b*ib.vecLen : (b+1)*ib.vecLen] }

// batchCoords returns the multi-index of batch b over ib.dims, written to dst.
func unravel(i int64, dims []int64, dst []int64) {
	for d := len(dims) - 1; d >= 0; d-- {
		if dims[d] > 0 {
			dst[d] = i % dims[d]
			i /= dims[d]
		}
	}
}

// indicesBatchPos maps a dim of the full indices tensor to its position among
// the batch dims (the dims other than index_vector_dim).
func indicesBatchPos(d, ivd int64) int64 {
	if d > ivd {
		return d - 1
	}
	return d
}

func checkDimList(list []int64, rank int, what, attr string) error {
	seen := make(map[int64]bool)
	for _, d := range list {
		if d < 0 || int(d) >= rank {
			return fmt.Errorf("%s %s entry %d out of range for rank %d", what, attr, d, rank)
		}
		if seen[d] {
			return fmt.Errorf("%s %s repeats dimension %d", what, attr, d)
		}
		seen[d] = true
	}
	return nil
}

// namedDims is a list of dimension numbers and the attribute it comes from.
type namedDims struct {
	list []int64
	attr string
}

// checkDimLists runs checkDimList on each list in turn.
func checkDimLists(rank int, what string, lists ...namedDims) error {
	for _, l := range lists {
		if err := checkDimList(l.list, rank, what, l.attr); err != nil {
			return err
		}
	}
	return nil
}

func contains(list []int64, v int64) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func evalGather(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if len(args) != 2 || args[0].T == nil || args[1].T == nil {
		return Value{}, fmt.Errorf("gather takes two array operands")
	}
	op := args[0].T
	g := in.GatherDims
	if g == nil {
		return Value{}, fmt.Errorf("gather has no dimension numbers")
	}
	rank := len(op.Dims)
	if len(in.GatherSliceSizes) != rank {
		return Value{}, fmt.Errorf("gather slice_sizes has %d entries for operand rank %d", len(in.GatherSliceSizes), rank)
	}
	if out := gatherScalarsDirect(ev, in, op, args[1].T); out != nil {
		return ArrayValue(out), nil
	}
	ib, err := readIndexBatches(args[1].T, g.IndexVectorDim, "gather")
	if err != nil {
		return Value{}, err
	}
	if err := checkDimLists(rank, "gather", namedDims{g.CollapsedSliceDims, "collapsed_slice_dims"},
		namedDims{g.StartIndexMap, "start_index_map"}, namedDims{g.OperandBatchingDims, "operand_batching_dims"}); err != nil {
		return Value{}, err
	}
	if int64(len(g.StartIndexMap)) != ib.vecLen {
		return Value{}, fmt.Errorf("gather start_index_map has %d entries but index vectors have %d", len(g.StartIndexMap), ib.vecLen)
	}
	if len(g.OperandBatchingDims) != len(g.StartIndicesBatchingDims) {
		return Value{}, fmt.Errorf("gather operand_batching_dims and start_indices_batching_dims differ in length")
	}
	// Window: operand dims kept in the output, in order.
	strides := tensor.Strides(op.Dims)
	var winDims, winStrides []int64
	for d := 0; d < rank; d++ {
		s := in.GatherSliceSizes[d]
		if s < 0 || s > op.Dims[d] {
			return Value{}, fmt.Errorf("gather slice size %d out of range for operand dimension %d of size %d", s, d, op.Dims[d])
		}
		if contains(g.CollapsedSliceDims, int64(d)) || contains(g.OperandBatchingDims, int64(d)) {
			if s > 1 {
				return Value{}, fmt.Errorf("gather collapses dimension %d whose slice size is %d", d, s)
			}
			continue
		}
		winDims = append(winDims, s)
		winStrides = append(winStrides, strides[d])
	}
	if len(winDims) != len(g.OffsetDims) {
		return Value{}, fmt.Errorf("gather has %d offset_dims but %d window dimensions", len(g.OffsetDims), len(winDims))
	}
	outRank := len(ib.dims) + len(winDims)
	if err := checkDimList(g.OffsetDims, outRank, "gather", "offset_dims"); err != nil {
		return Value{}, err
	}
	// Base offset of each batch's window.
	nb := ib.count()
	base := make([]int64, nb)
	parallelFor(int(nb), func(lo, hi int) {
		if len(g.StartIndexMap) == 1 && len(g.OperandBatchingDims) == 0 {
			// One index per batch (a scalar or row lookup).
			d := g.StartIndexMap[0]
			top, st := op.Dims[d]-in.GatherSliceSizes[d], strides[d]
			for b, v := range ib.vals[lo:hi] {
				base[lo+b] = min(max(v, 0), top) * st
			}
			return
		}
		coords := make([]int64, len(ib.dims))
		for b := int64(lo); b < int64(hi); b++ {
			vec := ib.vector(b)
			off := int64(0)
			for k, d := range g.StartIndexMap {
				hi := op.Dims[d] - in.GatherSliceSizes[d]
				off += min(max(vec[k], 0), hi) * strides[d]
			}
			if len(g.OperandBatchingDims) > 0 {
				unravel(b, ib.dims, coords)
				for i, d := range g.OperandBatchingDims {
					off += coords[indicesBatchPos(g.StartIndicesBatchingDims[i], g.IndexVectorDim)] * strides[d]
				}
			}
			base[b] = off
		}
	})
	// Walk the output, each dim contributing either to the batch or to the window.
	outDims := make([]int64, outRank)
	contribB := make([]int64, outRank)
	contribW := make([]int64, outRank)
	bStr := tensor.Strides(ib.dims)
	wi, bi := 0, 0
	for d := 0; d < outRank; d++ {
		if contains(g.OffsetDims, int64(d)) {
			outDims[d] = winDims[wi]
			contribW[d] = winStrides[wi]
			wi++
		} else {
			outDims[d] = ib.dims[bi]
			contribB[d] = bStr[bi]
			bi++
		}
	}
	if !slices.Equal(outDims, in.Shape.Dims) {
		return Value{}, fmt.Errorf("gather result shape %v does not match computed dims %v", in.Shape.Dims, outDims)
	}
	if run, ok := contiguousWindows(g.OffsetDims, outRank, winDims, winStrides); ok && !gatherRunsDisabled {
		// Each batch's window is one run of the operand, and the windows
		// follow each other in the output (an embedding lookup): copy runs.
		es := int64(op.Type.Size())
		out := tensor.New(op.Type, outDims)
		if run == 1 && gatherElems(op, out, base) {
			return ArrayValue(out), nil
		}
		parallelForWork(int(nb), int(nb*run), func(lo, hi int) {
			for b := lo; b < hi; b++ {
				copy(out.Data[int64(b)*run*es:(int64(b)+1)*run*es], op.Data[base[b]*es:(base[b]+run)*es])
			}
		})
		return ArrayValue(out), nil
	}
	if gatherRunsDisabled {
		return ArrayValue(takeElems(op, outDims, windowPositions(outDims, contribB, contribW, base))), nil
	}
	return ArrayValue(gatherRows(op, outDims, contribB, contribW, base)), nil
}

// gatherElems is the runs copy of one element each (a gather of scalars:
// jnp.searchsorted's probes, x[idx] on a vector) as typed loads; false for
// element sizes it does not take.
func gatherElems(op, out *tensor.Tensor, base []int64) bool {
	switch op.Type.Size() {
	case 4:
		gatherWords(out.U32(), op.U32(), base)
	case 8:
		gatherWords(out.U64(), op.U64(), base)
	case 2:
		gatherWords(out.U16(), op.U16(), base)
	case 1:
		gatherWords(out.Data, op.Data, base)
	default:
		return false
	}
	return true
}

func gatherWords[W uint8 | uint16 | uint32 | uint64](d, s []W, base []int64) {
	parallelFor(len(base), func(lo, hi int) {
		for b := lo; b < hi; b++ {
			d[b] = s[base[b]]
		}
	})
}

// gatherRows is takeElems(src, dims, windowPositions(...)) for a gather (no
// negative bases) without the position array: each output row (the last dim)
// steps its batch and window offsets by that dim's contributions, on all
// cores; a last dim inside one window at stride 1 is copied as one run.
func gatherRows(src *tensor.Tensor, dims, contribB, contribW, base []int64) *tensor.Tensor {
	out := tensor.New(src.Type, dims)
	n := tensor.NumElements(dims)
	r := len(dims)
	if n == 0 {
		return out
	}
	if r == 0 {
		copy(out.Data, src.Data[base[0]*int64(src.Type.Size()):][:src.Type.Size()])
		return out
	}
	last := dims[r-1]
	rows := n / last
	cb, cw := contribB[r-1], contribW[r-1]
	es := int64(src.Type.Size())
	parallelForWork(int(rows), int(n), func(lo, hi int) {
		idx := make([]int64, r-1)
		unravel(int64(lo), dims[:r-1], idx)
		for row := int64(lo); row < int64(hi); row++ {
			b, w := int64(0), int64(0)
			for d, i := range idx {
				b += i * contribB[d]
				w += i * contribW[d]
			}
			o := row * last
			switch {
			case cb == 0 && cw == 1:
				p := base[b] + w
				copy(out.Data[o*es:(o+last)*es], src.Data[p*es:(p+last)*es])
			case es == 4:
				gatherLine(out.U32()[o:o+last], src.U32(), base, b, w, cb, cw)
			case es == 8:
				gatherLine(out.U64()[o:o+last], src.U64(), base, b, w, cb, cw)
			case es == 2:
				gatherLine(out.U16()[o:o+last], src.U16(), base, b, w, cb, cw)
			case es == 1:
				gatherLine(out.Data[o:o+last], src.Data, base, b, w, cb, cw)
			default:
				for j := int64(0); j < last; j++ {
					p := base[b+j*cb] + w + j*cw
					copy(out.Data[(o+j)*es:(o+j+1)*es], src.Data[p*es:(p+1)*es])
				}
			}
			for d := r - 2; d >= 0; d-- {
				idx[d]++
				if idx[d] < dims[d] {
					break
				}
				idx[d] = 0
			}
		}
	})
	return out
}

// gatherLine sets d[j] to s[base[b+j*cb] + w + j*cw].
func gatherLine[W uint8 | uint16 | uint32 | uint64](d, s []W, base []int64, b, w, cb, cw int64) {
	if cw == 0 {
		bs := base[b:]
		for j := range d {
			d[j] = s[bs[int64(j)*cb]+w]
		}
		return
	}
	for j := range d {
		d[j] = s[base[b+int64(j)*cb]+w+int64(j)*cw]
	}
}

// gatherScalarsDirect is the runs path of a gather of single elements by
// one 32-bit index each (jnp.searchsorted's probes, x[idx] on a vector, the
// rows of a table of one column), read straight from the index tensor: each
// output element b is the operand's element at the clamped index b times
// the indexed dimension's stride, as base[] holds it on the general path,
// without the widened index copies and the base array. nil when the gather
// is not of that form (the general path then takes it).
func gatherScalarsDirect(ev *Evaluator, in *hlo.Instruction, op, idx *tensor.Tensor) *tensor.Tensor {
	g := in.GatherDims
	if gatherRunsDisabled || gatherDirectDisabled || g == nil || len(g.StartIndexMap) != 1 ||
		len(g.OperandBatchingDims) != 0 || len(g.StartIndicesBatchingDims) != 0 ||
		(idx.Type != dtype.S32 && idx.Type != dtype.U32) || len(in.GatherSliceSizes) != len(op.Dims) {
		return nil
	}
	rank := int64(len(idx.Dims))
	ivd := g.IndexVectorDim
	if ivd < 0 || ivd > rank || (ivd < rank && idx.Dims[ivd] != 1) {
		return nil
	}
	d := g.StartIndexMap[0]
	if d < 0 || d >= int64(len(op.Dims)) {
		return nil
	}
	// Every slice is one element; the window dims (all of size 1) are the
	// trailing output dims, so output element b is batch b's element.
	nWin := 0
	for k, s := range in.GatherSliceSizes {
		if s != 1 || op.Dims[k] < 1 {
			return nil
		}
		if !contains(g.CollapsedSliceDims, int64(k)) {
			nWin++
		}
	}
	if len(g.OffsetDims) != nWin || len(g.CollapsedSliceDims) != len(op.Dims)-nWin {
		return nil
	}
	outRank := len(in.Shape.Dims)
	for i, od := range g.OffsetDims {
		if od != int64(outRank-nWin+i) {
			return nil
		}
	}
	n := idx.NumElements()
	if in.Shape.Elem != op.Type || tensor.NumElements(in.Shape.Dims) != n {
		return nil
	}
	var batch []int64
	for k, s := range idx.Dims {
		if int64(k) != ivd {
			batch = append(batch, s)
		}
	}
	if !slices.Equal(batch, in.Shape.Dims[:outRank-nWin]) {
		return nil
	}
	es := op.Type.Size()
	if es != 1 && es != 2 && es != 4 && es != 8 {
		return nil
	}
	top, st := op.Dims[d]-1, tensor.Strides(op.Dims)[d]
	out := ev.newTensor(op.Type, in.Shape.Dims, false)
	signed := idx.Type == dtype.S32
	ix := idx.U32()
	switch es {
	case 4:
		gatherByU32(out.U32(), op.U32(), ix, signed, top, st)
	case 8:
		gatherByU32(out.U64(), op.U64(), ix, signed, top, st)
	case 2:
		gatherByU32(out.U16(), op.U16(), ix, signed, top, st)
	case 1:
		gatherByU32(out.Data, op.Data, ix, signed, top, st)
	}
	return out
}

// gatherByU32 sets d[b] to s[clamp(ix[b], 0, top)*st], ix read as int32
// when signed, else as uint32.
func gatherByU32[W uint8 | uint16 | uint32 | uint64](d, s []W, ix []uint32, signed bool, top, st int64) {
	parallelFor(len(d), func(lo, hi int) {
		dd, xx := d[lo:hi], ix[lo:hi:hi]
		if signed {
			for b := range dd {
				dd[b] = s[min(max(int64(int32(xx[b])), 0), top)*st]
			}
			return
		}
		for b := range dd {
			dd[b] = s[min(int64(xx[b]), top)*st]
		}
	})
}

// gatherDirectDisabled sends gathers past gatherScalarsDirect (tests).
var gatherDirectDisabled bool

// gatherRunsDisabled sends every gather through the element-wise path (tests).
var gatherRunsDisabled bool

// contiguousWindows reports whether a gather's windows (dims winDims at
// operand strides winStrides) are each one contiguous run of the operand,
// of the returned length, and are the trailing output dimensions, so that
// batch b's window fills output elements [b*run, (b+1)*run).
func contiguousWindows(offsetDims []int64, outRank int, winDims, winStrides []int64) (int64, bool) {
	for i, d := range offsetDims {
		if d != int64(outRank-len(offsetDims)+i) {
			return 0, false
		}
	}
	run, next := int64(1), int64(1) // next: the stride the next outer dim must have
	for i := len(winDims) - 1; i >= 0; i-- {
		if winDims[i] == 1 {
			continue
		}
		if winStrides[i] != next {
			return 0, false
		}
		run *= winDims[i]
		next = winStrides[i] * winDims[i]
	}
	return run, true
}

// windowPositions maps every element of dims, in row-major order, to the
// operand position base[b] + w, where b and w are the element's index dotted
// with contribB (its batch) and contribW (its offset in that batch's window);
// a batch whose base is negative (a scatter window out of bounds) maps to -1.
func windowPositions(dims, contribB, contribW, base []int64) []int64 {
	pos := make([]int64, tensor.NumElements(dims))
	walkIndex(dims, func(lin int64, idx []int64) {
		b, w := int64(0), int64(0)
		for d, i := range idx {
			b += i * contribB[d]
			w += i * contribW[d]
		}
		if base[b] < 0 {
			pos[lin] = -1
		} else {
			pos[lin] = base[b] + w
		}
	})
	return pos
}

// walkIndex calls f for every index of dims in row-major order with its
// linear position; idx is reused between calls.
func walkIndex(dims []int64, f func(lin int64, idx []int64)) {
	n := tensor.NumElements(dims)
	if n <= 0 {
		return
	}
	idx := make([]int64, len(dims))
	for lin := int64(0); lin < n; lin++ {
		f(lin, idx)
		for d := len(dims) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < dims[d] {
				break
			}
			idx[d] = 0
		}
	}
}

// takeElems builds a tensor of src's type and dims whose element i is
// src's element at linear position idx[i].
func takeElems(src *tensor.Tensor, dims []int64, idx []int64) *tensor.Tensor {
	out := tensor.New(src.Type, dims)
	switch src.Type.Size() {
	case 1:
		takeWords(out.Data, src.Data, idx)
	case 2:
		takeWords(out.U16(), src.U16(), idx)
	case 4:
		takeWords(out.U32(), src.U32(), idx)
	case 8:
		takeWords(out.U64(), src.U64(), idx)
	default:
		es := int64(src.Type.Size())
		for i, j := range idx {
			copy(out.Data[int64(i)*es:int64(i+1)*es], src.Data[j*es:(j+1)*es])
		}
	}
	return out
}

// takeWords sets d[i] to s[idx[i]]: takeElems for one element size.
func takeWords[W uint8 | uint16 | uint32 | uint64](d, s []W, idx []int64) {
	for i, j := range idx {
		d[i] = s[j]
	}
}

func evalScatter(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if len(args) < 3 || len(args)%2 == 0 {
		return Value{}, fmt.Errorf("scatter takes N operands, indices and N updates; got %d operands", len(args))
	}
	n := (len(args) - 1) / 2
	for i, a := range args {
		if a.T == nil {
			return Value{}, fmt.Errorf("scatter operand %d is not an array", i)
		}
	}
	ops, upds := args[:n], args[n+1:]
	op0 := ops[0].T
	s := in.ScatterDims
	if s == nil {
		return Value{}, fmt.Errorf("scatter has no dimension numbers")
	}
	comb := in.ToApply()
	if comb == nil {
		return Value{}, fmt.Errorf("scatter has no to_apply computation")
	}
	rank := len(op0.Dims)
	for i := 0; i < n; i++ {
		if !slices.Equal(ops[i].T.Dims, op0.Dims) || !slices.Equal(upds[i].T.Dims, upds[0].T.Dims) {
			return Value{}, fmt.Errorf("scatter operands (or updates) differ in shape")
		}
	}
	if n == 1 {
		if out := scatterScalarsDirect(ev, in, op0, args[1].T, upds[0].T, combinerKind(comb)); out != nil {
			return ArrayValue(out), nil
		}
	}
	ib, err := readIndexBatches(args[n].T, s.IndexVectorDim, "scatter")
	if err != nil {
		return Value{}, err
	}
	if int64(len(s.ScatterDimsToOperandDims)) != ib.vecLen {
		return Value{}, fmt.Errorf("scatter scatter_dims_to_operand_dims has %d entries but index vectors have %d", len(s.ScatterDimsToOperandDims), ib.vecLen)
	}
	if err := checkDimLists(rank, "scatter", namedDims{s.InsertedWindowDims, "inserted_window_dims"},
		namedDims{s.ScatterDimsToOperandDims, "scatter_dims_to_operand_dims"}, namedDims{s.InputBatchingDims, "input_batching_dims"}); err != nil {
		return Value{}, err
	}
	if len(s.InputBatchingDims) != len(s.ScatterIndicesBatchingDims) {
		return Value{}, fmt.Errorf("scatter input_batching_dims and scatter_indices_batching_dims differ in length")
	}
	updDims := upds[0].T.Dims
	if err := checkDimList(s.UpdateWindowDims, len(updDims), "scatter", "update_window_dims"); err != nil {
		return Value{}, err
	}
	// Operand dims covered by the window, in order, paired with update_window_dims.
	var winOpDims []int64
	for d := 0; d < rank; d++ {
		if !contains(s.InsertedWindowDims, int64(d)) && !contains(s.InputBatchingDims, int64(d)) {
			winOpDims = append(winOpDims, int64(d))
		}
	}
	if len(winOpDims) != len(s.UpdateWindowDims) {
		return Value{}, fmt.Errorf("scatter has %d update_window_dims but %d operand window dimensions", len(s.UpdateWindowDims), len(winOpDims))
	}
	if len(updDims)-len(s.UpdateWindowDims) != len(ib.dims) {
		return Value{}, fmt.Errorf("scatter updates have %d scatter dims but indices have %d batch dims", len(updDims)-len(s.UpdateWindowDims), len(ib.dims))
	}
	strides := tensor.Strides(op0.Dims)
	winSize := make([]int64, rank) // window extent per operand dim (1 for inserted/batching)
	for d := range winSize {
		winSize[d] = 1
	}
	for i, ud := range s.UpdateWindowDims {
		od := winOpDims[i]
		winSize[od] = updDims[ud]
		if winSize[od] > op0.Dims[od] {
			return Value{}, fmt.Errorf("scatter update window dim %d of size %d exceeds operand dim %d of size %d", ud, winSize[od], od, op0.Dims[od])
		}
	}
	// Start of each batch's window, or -1 when the window is out of bounds.
	nb := ib.count()
	base := make([]int64, nb)
	coords := make([]int64, len(ib.dims))
	start := make([]int64, rank)
	for b := int64(0); b < nb; b++ {
		clear(start)
		vec := ib.vector(b)
		for k, d := range s.ScatterDimsToOperandDims {
			start[d] = vec[k]
		}
		if len(s.InputBatchingDims) > 0 {
			unravel(b, ib.dims, coords)
			for i, d := range s.InputBatchingDims {
				start[d] = coords[indicesBatchPos(s.ScatterIndicesBatchingDims[i], s.IndexVectorDim)]
			}
		}
		off := int64(0)
		for d := 0; d < rank; d++ {
			if start[d] < 0 || start[d] > op0.Dims[d]-winSize[d] {
				off = -1
				break
			}
			off += start[d] * strides[d]
		}
		base[b] = off
	}
	if n == 1 && len(s.InputBatchingDims) == 0 && scatterByRuns {
		if kind := combinerKind(comb); kind != "" && upds[0].T.Type == op0.Type {
			if out := scatterRuns(kind, ops[0].T, ev.takeDonation(in, ops[0].T), upds[0].T, base, winSize, winOpDims, s.UpdateWindowDims, ib.dims); out != nil {
				return ArrayValue(out), nil
			}
		}
	}
	// Target of every update element in row-major update order (-1 = skipped).
	contribB := make([]int64, len(updDims))
	contribW := make([]int64, len(updDims))
	bStr := tensor.Strides(ib.dims)
	bi := 0
	for d := range updDims {
		if k := indexOf(s.UpdateWindowDims, int64(d)); k >= 0 {
			contribW[d] = strides[winOpDims[k]]
		} else {
			if updDims[d] != ib.dims[bi] {
				return Value{}, fmt.Errorf("scatter update dim %d has size %d but indices batch dim has %d", d, updDims[d], ib.dims[bi])
			}
			contribB[d] = bStr[bi]
			bi++
		}
	}
	target := windowPositions(updDims, contribB, contribW, base)
	outs := make([]*tensor.Tensor, n)
	for i := range outs {
		if n == 1 && ev.takeDonation(in, ops[i].T) {
			outs[i] = ops[i].T // the frame's dying operand (Evaluator.donation)
		} else {
			outs[i] = ops[i].T.Clone()
		}
	}
	if n == 1 {
		if kind := combinerKind(comb); kind != "" && scatterFast(kind, outs[0], upds[0].T, target) {
			return ArrayValue(outs[0]), nil
		}
	}
	if err := scatterGeneral(ev, comb, outs, upds, target); err != nil {
		return Value{}, err
	}
	if n == 1 {
		return ArrayValue(outs[0]), nil
	}
	vals := make([]Value, n)
	for i, t := range outs {
		vals[i] = ArrayValue(t)
	}
	return TupleValue(vals...), nil
}

func indexOf(list []int64, v int64) int {
	for i, x := range list {
		if x == v {
			return i
		}
	}
	return -1
}

// combinerKind recognises two-parameter computations whose root is a single
// binary op of (param0, param1), or that return param1 (a plain store).
// It returns "" for anything else.
func combinerKind(c *hlo.Computation) string {
	if c == nil || len(c.Params) != 2 || c.Root == nil {
		return ""
	}
	r := c.Root
	if r == c.Params[1] {
		return "replace"
	}
	if len(r.Operands) != 2 || r.Operands[0] != c.Params[0] || r.Operands[1] != c.Params[1] {
		return ""
	}
	switch r.Opcode {
	case "add", "multiply", "maximum", "minimum", "or", "and":
		return r.Opcode
	}
	return ""
}

// scatterFast applies a recognised combiner natively. It handles f32, f64 and
// integer/pred element types (whose results are exact in 64-bit arithmetic
// and wrap once at the end); it reports false for other types.
func scatterFast(kind string, out, upd *tensor.Tensor, target []int64) bool {
	// The four loops stay spelled out: one generic loop would have to call
	// the combiner through a function value, which measured 2-3x slower.
	switch classOf(out.Type) {
	case classF32:
		if out.Type != dtype.F32 {
			return false
		}
		o, u := out.F32(), upd.F32()
		for i, t := range target {
			if t >= 0 {
				o[t] = applyFloat(kind, o[t], u[i])
			}
		}
	case classF64:
		o, u := out.F64(), upd.F64()
		for i, t := range target {
			if t >= 0 {
				o[t] = applyFloat(kind, o[t], u[i])
			}
		}
	case classSigned, classPred:
		o, u := asI64(out), asI64(upd)
		for i, t := range target {
			if t >= 0 {
				o[t] = applyInt(kind, o[t], u[i])
			}
		}
		copy(out.Data, newFromI64(out.Type, out.Dims, o).Data)
	case classUnsigned:
		o, u := asU64(out), asU64(upd)
		for i, t := range target {
			if t >= 0 {
				o[t] = applyInt(kind, o[t], u[i])
			}
		}
		copy(out.Data, newFromU64(out.Type, out.Dims, o).Data)
	default:
		return false
	}
	return true
}

// applyFloat follows XLA's maximum/minimum: NaN propagates, checking lhs first,
// and on a tie (±0) the lhs wins.
func applyFloat[T float32 | float64](kind string, a, b T) T {
	switch kind {
	case "maximum":
		if a != a {
			return a
		}
		if b != b || b > a {
			return b
		}
		return a
	case "minimum":
		if a != a {
			return a
		}
		if b != b || b < a {
			return b
		}
		return a
	case "add", "multiply":
		if b != b {
			// Of two NaNs the update's payload wins (XLA:CPU's combiner),
			// whichever operand order the compiler gives the instruction.
			return b + b
		}
	}
	return applyArith(kind, a, b)
}

func applyInt[T int64 | uint64](kind string, a, b T) T {
	switch kind {
	case "maximum":
		return max(a, b)
	case "minimum":
		return min(a, b)
	case "or":
		return a | b
	case "and":
		return a & b
	}
	return applyArith(kind, a, b)
}

// applyArith is the part of applyFloat and applyInt that does not depend on
// the kind of number.
func applyArith[T float32 | float64 | int64 | uint64](kind string, a, b T) T {
	switch kind {
	case "replace":
		return b
	case "add":
		return a + b
	case "multiply":
		return a * b
	}
	panic("scatter: unknown combiner " + kind)
}

// scatterGeneral calls the combiner for every in-bounds update element, in
// update order, as to_apply(currents..., updates...).
func scatterGeneral(ev *Evaluator, comb *hlo.Computation, outs []*tensor.Tensor, upds []Value, target []int64) error {
	n := len(outs)
	if len(comb.Params) != 2*n {
		return fmt.Errorf("scatter combiner %s takes %d parameters, want %d", comb.Name, len(comb.Params), 2*n)
	}
	if prog := compileScalar(comb); prog != nil {
		if ok, err := scalarScatter(prog, outs, upds, target); ok {
			if err != nil {
				return fmt.Errorf("scatter combiner: %w", err)
			}
			return nil
		}
	}
	args := make([]Value, 2*n)
	for i, t := range target {
		if t < 0 {
			continue
		}
		for k := 0; k < n; k++ {
			args[k] = ArrayValue(scalarAt(outs[k], t))
			args[n+k] = ArrayValue(scalarAt(upds[k].T, int64(i)))
		}
		r, err := ev.Call(comb, args)
		if err != nil {
			return fmt.Errorf("scatter combiner: %w", err)
		}
		leaves := r.Leaves()
		if len(leaves) != n {
			return fmt.Errorf("scatter combiner %s returned %d values, want %d", comb.Name, len(leaves), n)
		}
		for k, l := range leaves {
			if err := setScalar(outs[k], t, l); err != nil {
				return fmt.Errorf("scatter combiner %s: %w", comb.Name, err)
			}
		}
	}
	return nil
}

// scalarAt returns element i of t as a rank-0 tensor.
func scalarAt(t *tensor.Tensor, i int64) *tensor.Tensor {
	es := int64(t.Type.Size())
	out := tensor.New(t.Type, nil)
	copy(out.Data, t.Data[i*es:(i+1)*es])
	return out
}

// setScalar stores the rank-0 tensor s at element i of t.
func setScalar(t *tensor.Tensor, i int64, s *tensor.Tensor) error {
	if s.Type != t.Type || s.NumElements() != 1 {
		return fmt.Errorf("returned %v where a %v scalar was expected", s, t.Type)
	}
	es := int64(t.Type.Size())
	copy(t.Data[i*es:(i+1)*es], s.Data)
	return nil
}
