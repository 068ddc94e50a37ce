package eval

import (
	"slices"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// scatterByRuns lets evalScatter take scatterRuns (tests turn it off to hold
// it to the element-by-element path).
var scatterByRuns = true

// scatterRuns applies a recognised combiner by contiguous runs when the
// update's window dims trail its scatter (batch) dims in order and the last
// window dim is the operand's last, unit-stride dim: update element (b, w)
// then sits at b*W + w, and each window row is a run of the operand. This is
// the layout of embedding gradients, segment sums and `x.at[idx].add(v)`.
//
// Every operand element receives its updates in increasing batch order, the
// order of the row-major element walk (within one batch a window touches an
// element at most once), so the results are bit for bit scatterFast's. The
// cores split the operand into ranges; each applies every run's part inside
// its range, in batch order.
//
// It returns the scattered copy of the operand, or nil (having copied
// nothing) for other layouts, element types and combiners.
func scatterRuns(kind string, operand *tensor.Tensor, inPlace bool, upd *tensor.Tensor, base, winSize []int64, winOpDims, updWinDims, batchDims []int64) *tensor.Tensor {
	rank := len(operand.Dims)
	nWin := len(updWinDims)
	updRank := len(upd.Dims)
	if nWin == 0 || winOpDims[nWin-1] != int64(rank-1) {
		return nil
	}
	for i, d := range updWinDims {
		if d != int64(updRank-nWin+i) {
			return nil
		}
	}
	// The update's leading dims are the indices' batch dims, in order (the
	// general path reports a mismatch).
	if !slices.Equal(upd.Dims[:updRank-nWin], batchDims) {
		return nil
	}
	strides := tensor.Strides(operand.Dims)
	runLen := winSize[rank-1]
	// The operand offset of each window row (all window dims but the last).
	rowOff := rowMajorWindowRows(winOpDims, winSize, strides)
	w := runLen * int64(len(rowOff))
	if int64(len(base))*w != tensor.NumElements(upd.Dims) {
		return nil
	}
	g := runGeometry{base: base, rowOff: rowOff, runLen: runLen, window: w}
	switch operand.Type {
	case dtype.F32:
		return runOn(operand, inPlace, upd, (*tensor.Tensor).F32, floatRun[float32](kind), g)
	case dtype.F64:
		return runOn(operand, inPlace, upd, (*tensor.Tensor).F64, floatRun[float64](kind), g)
	case dtype.S32:
		return runOn(operand, inPlace, upd, (*tensor.Tensor).I32, intRun[int32](kind), g)
	case dtype.U32:
		return runOn(operand, inPlace, upd, (*tensor.Tensor).U32, intRun[uint32](kind), g)
	case dtype.S64:
		return runOn(operand, inPlace, upd, (*tensor.Tensor).I64, intRun[int64](kind), g)
	case dtype.U64:
		return runOn(operand, inPlace, upd, (*tensor.Tensor).U64, intRun[uint64](kind), g)
	}
	return nil
}

// runOn clones the operand (or, inPlace, takes it) and applies every run
// to the result, or returns nil (before touching anything) when the
// combiner has no run loop for the type.
func runOn[T any](operand *tensor.Tensor, inPlace bool, upd *tensor.Tensor, view func(*tensor.Tensor) []T, apply func(dst, src []T), g runGeometry) *tensor.Tensor {
	if apply == nil {
		return nil
	}
	out := operand
	if !inPlace {
		out = operand.Clone()
	}
	applyRuns(view(out), view(upd), g, apply)
	return out
}

// rowMajorWindowRows lists the operand offsets of a window's rows (every
// window dim but the last) in row-major order of the window.
func rowMajorWindowRows(winOpDims, winSize, strides []int64) []int64 {
	rows := []int64{0}
	for _, od := range winOpDims[:len(winOpDims)-1] {
		next := make([]int64, 0, int64(len(rows))*winSize[od])
		for _, r := range rows {
			for k := int64(0); k < winSize[od]; k++ {
				next = append(next, r+k*strides[od])
			}
		}
		rows = next
	}
	return rows
}

type runGeometry struct {
	base   []int64 // operand offset of each batch's window, -1 when out of bounds
	rowOff []int64 // operand offset of each window row, from the window's start
	runLen int64   // elements per row (the last window dim)
	window int64   // elements per batch's window
}

// applyRuns applies every run of updates u to o, the cores splitting o.
func applyRuns[T any](o, u []T, g runGeometry, apply func(dst, src []T)) {
	n := len(o)
	work := len(u)
	parallelForWork(n, work, func(lo, hi int) {
		lo64, hi64 := int64(lo), int64(hi)
		for b, start := range g.base {
			if start < 0 {
				continue
			}
			ub := int64(b) * g.window
			for r, off := range g.rowOff {
				s := start + off
				e := s + g.runLen
				if e <= lo64 || s >= hi64 {
					continue
				}
				us := ub + int64(r)*g.runLen
				if s < lo64 {
					us += lo64 - s
					s = lo64
				}
				e = min(e, hi64)
				apply(o[s:e], u[us:us+(e-s)])
			}
		}
	})
}

// arithRun is the part of floatRun and intRun that does not depend on the
// kind of number.
func arithRun[T float32 | float64 | int32 | uint32 | int64 | uint64](kind string) func(dst, src []T) {
	switch kind {
	case "add":
		return func(dst, src []T) {
			src = src[:len(dst)]
			for i := range dst {
				dst[i] += src[i]
			}
		}
	case "multiply":
		return func(dst, src []T) {
			src = src[:len(dst)]
			for i := range dst {
				dst[i] *= src[i]
			}
		}
	case "replace":
		return func(dst, src []T) { copy(dst, src) }
	}
	return nil
}

func floatRun[T float32 | float64](kind string) func(dst, src []T) {
	switch kind {
	case "add":
		// Of two NaNs the update's payload wins, as in jax and in the
		// other scatter paths (updateNaNOr), not whichever operand the
		// compiler puts first in the add.
		return func(dst, src []T) {
			src = src[:len(dst)]
			for i := range dst {
				dst[i] = updateNaNOr(src[i], dst[i]+src[i])
			}
		}
	case "multiply":
		return func(dst, src []T) {
			src = src[:len(dst)]
			for i := range dst {
				dst[i] = updateNaNOr(src[i], dst[i]*src[i])
			}
		}
	}
	if f := arithRun[T](kind); f != nil {
		return f
	}
	switch kind {
	case "maximum", "minimum":
		return func(dst, src []T) {
			src = src[:len(dst)]
			for i := range dst {
				dst[i] = applyFloat(kind, dst[i], src[i])
			}
		}
	}
	return nil
}

func intRun[T int32 | uint32 | int64 | uint64](kind string) func(dst, src []T) {
	if f := arithRun[T](kind); f != nil {
		return f
	}
	switch kind {
	case "maximum":
		return func(dst, src []T) {
			src = src[:len(dst)]
			for i := range dst {
				dst[i] = max(dst[i], src[i])
			}
		}
	case "minimum":
		return func(dst, src []T) {
			src = src[:len(dst)]
			for i := range dst {
				dst[i] = min(dst[i], src[i])
			}
		}
	case "or":
		return func(dst, src []T) {
			src = src[:len(dst)]
			for i := range dst {
				dst[i] |= src[i]
			}
		}
	case "and":
		return func(dst, src []T) {
			src = src[:len(dst)]
			for i := range dst {
				dst[i] &= src[i]
			}
		}
	}
	return nil
}
