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
// It reports false (and does nothing) for other layouts and element types.
func scatterRuns(kind string, out, upd *tensor.Tensor, base, winSize []int64, winOpDims, updWinDims, batchDims []int64) bool {
	rank := len(out.Dims)
	nWin := len(updWinDims)
	updRank := len(upd.Dims)
	if nWin == 0 || winOpDims[nWin-1] != int64(rank-1) {
		return false
	}
	for i, d := range updWinDims {
		if d != int64(updRank-nWin+i) {
			return false
		}
	}
	// The update's leading dims are the indices' batch dims, in order (the
	// general path reports a mismatch).
	if !slices.Equal(upd.Dims[:updRank-nWin], batchDims) {
		return false
	}
	strides := tensor.Strides(out.Dims)
	runLen := winSize[rank-1]
	// The operand offset of each window row (all window dims but the last).
	rowOff := rowMajorWindowRows(winOpDims, winSize, strides)
	w := runLen * int64(len(rowOff))
	if int64(len(base))*w != tensor.NumElements(upd.Dims) {
		return false
	}
	g := runGeometry{base: base, rowOff: rowOff, runLen: runLen, window: w}
	switch out.Type {
	case dtype.F32:
		return applyRuns(kind, out.F32(), upd.F32(), g, floatRun[float32])
	case dtype.F64:
		return applyRuns(kind, out.F64(), upd.F64(), g, floatRun[float64])
	case dtype.S32:
		return applyRuns(kind, out.I32(), upd.I32(), g, intRun[int32])
	case dtype.U32:
		return applyRuns(kind, out.U32(), upd.U32(), g, intRun[uint32])
	case dtype.S64:
		return applyRuns(kind, out.I64(), upd.I64(), g, intRun[int64])
	case dtype.U64:
		return applyRuns(kind, out.U64(), upd.U64(), g, intRun[uint64])
	}
	return false
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

// runFunc returns the loop applying a combiner kind to dst from src, or nil.
type runFunc[T any] func(kind string) func(dst, src []T)

func applyRuns[T any](kind string, o, u []T, g runGeometry, pick runFunc[T]) bool {
	apply := pick(kind)
	if apply == nil {
		return false
	}
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
	return true
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
