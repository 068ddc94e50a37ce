package eval

import (
	"slices"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// scatterDirectDisabled sends scatters past scatterScalarsDirect (tests).
var scatterDirectDisabled bool

// scatterScalarsDirect is the path of a scatter of single elements
// (`jnp.zeros(n).at[i].add(w)`, bincounts, histograms, `x.at[i, j].max(v)`):
// one operand, no batching dims, every window of size 1, so update element b
// goes to the operand element that index vector b names, or nowhere when a
// component is negative or past its dim. It reads the index tensor in place
// instead of widening it to int64, building the base array and the target
// of every update element (~100 MB of fresh storage for 4M updates, most of
// the general path's time), and applies the updates with typed loops.
//
// Updates are applied one at a time in update order, as scatterFast applies
// them, so each element sees its updates in the same order and rounds after
// each: the bits are the general path's. With one index per update (the
// common case) the loop reads the indices and updates straight through;
// longer index vectors are turned into targets first (in parallel, no
// order involved) and applied by scatterFast.
//
// It returns nil, having done nothing, for other forms, element types and
// combiners (the general path then takes them, and reports malformed ones).
func scatterScalarsDirect(ev *Evaluator, in *hlo.Instruction, op, idx, upd *tensor.Tensor, kind string) *tensor.Tensor {
	s := in.ScatterDims
	if scatterDirectDisabled || s == nil || kind == "" || upd.Type != op.Type ||
		len(s.InputBatchingDims) != 0 || len(s.ScatterIndicesBatchingDims) != 0 {
		return nil
	}
	switch op.Type {
	case dtype.F32, dtype.F64, dtype.S32, dtype.U32, dtype.S64, dtype.U64:
	default:
		return nil
	}
	switch idx.Type {
	case dtype.S32, dtype.U32, dtype.S64, dtype.U64:
	default:
		return nil
	}
	rank := len(op.Dims)
	if tensor.NumElements(op.Dims) == 0 {
		return nil
	}
	// Index vectors: of one component wherever index_vector_dim lies (its
	// size-1 dim does not change the row-major order), else along the last
	// dim, so vector b is idx[b*V : (b+1)*V].
	irank := int64(len(idx.Dims))
	ivd := s.IndexVectorDim
	if ivd < 0 || ivd > irank {
		return nil
	}
	vl := int64(1)
	if ivd < irank {
		vl = idx.Dims[ivd]
	}
	if vl < 1 || (vl > 1 && ivd != irank-1) || int64(len(s.ScatterDimsToOperandDims)) != vl {
		return nil
	}
	var batch []int64
	for d, n := range idx.Dims {
		if int64(d) != ivd {
			batch = append(batch, n)
		}
	}
	if !distinctIn(s.ScatterDimsToOperandDims, int64(rank)) || !distinctIn(s.InsertedWindowDims, int64(rank)) ||
		!distinctIn(s.UpdateWindowDims, int64(len(upd.Dims))) || !slices.IsSorted(s.UpdateWindowDims) {
		return nil
	}
	// Every window dim has size 1 in the update, so update element b is
	// batch b: the update's other dims must be the indices' batch dims.
	nWin := 0
	for d := 0; d < rank; d++ {
		if !contains(s.InsertedWindowDims, int64(d)) {
			nWin++
		}
	}
	if nWin != len(s.UpdateWindowDims) {
		return nil
	}
	var scatterDims []int64
	for d, n := range upd.Dims {
		if contains(s.UpdateWindowDims, int64(d)) {
			if n != 1 {
				return nil
			}
		} else {
			scatterDims = append(scatterDims, n)
		}
	}
	if !slices.Equal(scatterDims, batch) {
		return nil
	}
	strides := tensor.Strides(op.Dims)
	lim := make([]uint64, vl)
	st := make([]int64, vl)
	for k, d := range s.ScatterDimsToOperandDims {
		lim[k], st[k] = uint64(op.Dims[d]), strides[d]
	}
	out := op // the frame's dying operand (Evaluator.donation)
	if !ev.takeDonation(in, op) {
		out = ev.newTensor(op.Type, op.Dims, false)
		copy(out.Data, op.Data)
	}
	if vl == 1 {
		switch idx.Type {
		case dtype.S32:
			scatterTyped(kind, out, upd, idx.I32(), lim[0], st[0])
		case dtype.U32:
			scatterTyped(kind, out, upd, idx.U32(), lim[0], st[0])
		case dtype.S64:
			scatterTyped(kind, out, upd, idx.I64(), lim[0], st[0])
		case dtype.U64:
			scatterTyped(kind, out, upd, idx.U64(), lim[0], st[0])
		}
		return out
	}
	target := make([]int64, tensor.NumElements(batch))
	switch idx.Type {
	case dtype.S32:
		vectorTargets(target, idx.I32(), lim, st)
	case dtype.U32:
		vectorTargets(target, idx.U32(), lim, st)
	case dtype.S64:
		vectorTargets(target, idx.I64(), lim, st)
	case dtype.U64:
		vectorTargets(target, idx.U64(), lim, st)
	}
	if !scatterFast(kind, out, upd, target) {
		panic("scatter: scatterFast refused a type scatterScalarsDirect takes")
	}
	return out
}

// distinctIn reports whether list holds distinct dims in [0, n).
func distinctIn(list []int64, n int64) bool {
	for i, d := range list {
		if d < 0 || d >= n || slices.Contains(list[:i], d) {
			return false
		}
	}
	return true
}

type scatterIndex interface {
	int32 | uint32 | int64 | uint64
}

// vectorTargets sets target[b] to the operand offset index vector b names
// (the vectors lying along ix's last dim), or -1 when a component is outside
// its dim (negative indices convert to huge unsigned ones).
func vectorTargets[I scatterIndex](target []int64, ix []I, lim []uint64, st []int64) {
	vl := len(lim)
	parallelForWork(len(target), len(target)*vl, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			vec := ix[b*vl : (b+1)*vl]
			off := int64(0)
			for k, v := range vec {
				if uint64(int64(v)) >= lim[k] {
					off = -1
					break
				}
				off += int64(v) * st[k]
			}
			target[b] = off
		}
	})
}

// scatterTyped applies update b to out's element ix[b]*st for every b with
// ix[b] in [0, lim), in order.
func scatterTyped[I scatterIndex](kind string, out, upd *tensor.Tensor, ix []I, lim uint64, st int64) {
	switch out.Type {
	case dtype.F32:
		scatterFloatByIndex(kind, out.F32(), upd.F32(), ix, lim, st)
	case dtype.F64:
		scatterFloatByIndex(kind, out.F64(), upd.F64(), ix, lim, st)
	case dtype.S32:
		scatterIntByIndex(kind, out.I32(), upd.I32(), ix, lim, st)
	case dtype.U32:
		scatterIntByIndex(kind, out.U32(), upd.U32(), ix, lim, st)
	case dtype.S64:
		scatterIntByIndex(kind, out.I64(), upd.I64(), ix, lim, st)
	case dtype.U64:
		scatterIntByIndex(kind, out.U64(), upd.U64(), ix, lim, st)
	}
}

// The loops below stay spelled out per combiner: a combiner called through a
// function value costs 2-3x (see scatterFast). uint64(int64(i)) sends
// negative indices past lim. Of two NaNs the update's payload wins, in
// both paths by an explicit test (updateNaNOr, applyFloat), not by the
// operand order the compiler happens to give an ADDSS (TestScatterScalars-
// DirectMatchesGeneral holds the two paths to the same payloads, also
// under -race, where that order changed).

func scatterFloatByIndex[T float32 | float64, I scatterIndex](kind string, o, u []T, ix []I, lim uint64, st int64) {
	u = u[:len(ix)]
	switch kind {
	case "maximum":
		for b, i := range ix {
			if uint64(int64(i)) < lim {
				t := int64(i) * st
				o[t] = applyFloat("maximum", o[t], u[b])
			}
		}
	case "minimum":
		for b, i := range ix {
			if uint64(int64(i)) < lim {
				t := int64(i) * st
				o[t] = applyFloat("minimum", o[t], u[b])
			}
		}
	default:
		scatterArithByIndex(kind, o, u, ix, lim, st)
	}
}

func scatterIntByIndex[T int32 | uint32 | int64 | uint64, I scatterIndex](kind string, o, u []T, ix []I, lim uint64, st int64) {
	u = u[:len(ix)]
	switch kind {
	case "maximum":
		for b, i := range ix {
			if uint64(int64(i)) < lim {
				t := int64(i) * st
				o[t] = max(o[t], u[b])
			}
		}
	case "minimum":
		for b, i := range ix {
			if uint64(int64(i)) < lim {
				t := int64(i) * st
				o[t] = min(o[t], u[b])
			}
		}
	case "or":
		for b, i := range ix {
			if uint64(int64(i)) < lim {
				o[int64(i)*st] |= u[b]
			}
		}
	case "and":
		for b, i := range ix {
			if uint64(int64(i)) < lim {
				o[int64(i)*st] &= u[b]
			}
		}
	default:
		scatterArithByIndex(kind, o, u, ix, lim, st)
	}
}

// updateNaNOr is the quieted update u when u is a NaN, else r: of two NaNs
// the update's payload wins (applyFloat's rule), whichever operand order
// the compiler gives u+o (it did not under -race). Integers are never NaN.
func updateNaNOr[T float32 | float64 | int32 | uint32 | int64 | uint64](u, r T) T {
	if u != u {
		return u + u
	}
	return r
}

func scatterArithByIndex[T float32 | float64 | int32 | uint32 | int64 | uint64, I scatterIndex](kind string, o, u []T, ix []I, lim uint64, st int64) {
	u = u[:len(ix)]
	switch kind {
	case "add":
		if st == 1 {
			for b, i := range ix {
				if uint64(int64(i)) < lim {
					o[i] = updateNaNOr(u[b], u[b]+o[i])
				}
			}
			return
		}
		for b, i := range ix {
			if uint64(int64(i)) < lim {
				t := int64(i) * st
				o[t] = updateNaNOr(u[b], u[b]+o[t])
			}
		}
	case "multiply":
		for b, i := range ix {
			if uint64(int64(i)) < lim {
				t := int64(i) * st
				o[t] = updateNaNOr(u[b], u[b]*o[t])
			}
		}
	case "replace":
		for b, i := range ix {
			if uint64(int64(i)) < lim {
				o[int64(i)*st] = u[b]
			}
		}
	default:
		panic("scatter: unknown combiner " + kind)
	}
}
