package eval

// Strided element copies: the one engine behind broadcast, transpose, reverse,
// slice, pad, concatenate, dynamic-slice and dynamic-update-slice. A view is an
// element offset plus one element stride per dimension (0 repeats an element,
// negative walks backwards).

import (
	"goldtrace/engine/tensor"
)

// view is a strided window into a tensor's storage.
type view struct {
	off     int64
	strides []int64
}

// dense is the row-major view of a whole tensor with dims.
func dense(dims []int64) view { return view{0, tensor.Strides(dims)} }

// copyView copies the dims-shaped region src to dst; both are storages of
// elements esize bytes wide.
func copyView(esize int, dims []int64, dst []byte, dv view, src []byte, sv view) {
	if tensor.NumElements(dims) == 0 {
		return
	}
	switch esize {
	case 1:
		copyViewT(dims, dst, dv, src, sv)
	case 2:
		copyViewT(dims, rawView[uint16](dst), dv, rawView[uint16](src), sv)
	case 4:
		copyViewT(dims, rawView[uint32](dst), dv, rawView[uint32](src), sv)
	case 8:
		copyViewT(dims, rawView[uint64](dst), dv, rawView[uint64](src), sv)
	case 16:
		copyViewT(dims, rawView[complex128](dst), dv, rawView[complex128](src), sv)
	default:
		panic("copyView: unsupported element size")
	}
}

func copyViewT[T any](dims []int64, dst []T, dv view, src []T, sv view) {
	r := len(dims)
	if r == 0 {
		dst[dv.off] = src[sv.off]
		return
	}
	// A large copy splits a dimension between the cores: every destination
	// element is written once (no destination view repeats an element), so
	// the parts are disjoint. The outermost one of more than one element
	// that the source does not read contiguously (a transpose's tiles run
	// along that one), else the outermost of more than one.
	if n := tensor.NumElements(dims); n >= parallelThreshold {
		k := -1
		for j := 0; j < r-1 && k < 0; j++ {
			if dims[j] > 1 && sv.strides[j] != 1 {
				k = j
			}
		}
		for j := 0; j < r && k < 0; j++ {
			if dims[j] > 1 {
				k = j
			}
		}
		if k >= 0 {
			parallelForWork(int(dims[k]), int(n), func(lo, hi int) {
				if lo == 0 && hi == int(dims[k]) {
					copyViewSerial(dims, dst, dv, src, sv)
					return
				}
				sub := append([]int64{}, dims...)
				sub[k] = int64(hi - lo)
				d, s := dv, sv
				d.off += int64(lo) * dv.strides[k]
				s.off += int64(lo) * sv.strides[k]
				copyViewSerial(sub, dst, d, src, s)
			})
			return
		}
	}
	copyViewSerial(dims, dst, dv, src, sv)
}

// copyViewSerial is copyViewT on the calling goroutine.
func copyViewSerial[T any](dims []int64, dst []T, dv view, src []T, sv view) {
	r := len(dims)
	if r == 2 && dv.strides[1] == 1 && sv.strides[0] == 1 && dims[0] >= 16 && dims[1] >= 16 {
		transposeBlocked(dims, dst, dv, src, sv)
		return
	}
	if r >= 3 && dv.strides[r-1] == 1 && sv.strides[r-1] != 1 && dims[r-1] >= 16 {
		// A transpose whose source walks the destination's rows with a
		// stride but another dimension k contiguously: tiles of the (k,
		// last) plane, for each index of the other dimensions.
		for k := r - 2; k >= 0; k-- {
			if sv.strides[k] == 1 && dims[k] >= 16 {
				transposePlanes(dims, k, dst, dv, src, sv)
				return
			}
		}
	}
	inner := dims[r-1]
	ds, ss := dv.strides[r-1], sv.strides[r-1]
	idx := make([]int64, r-1)
	d, s := dv.off, sv.off
	for {
		switch {
		case ds == 1 && ss == 1:
			copy(dst[d:d+inner], src[s:s+inner])
		case ss == 0:
			v := src[s]
			for k, dk := int64(0), d; k < inner; k, dk = k+1, dk+ds {
				dst[dk] = v
			}
		default:
			for k, dk, sk := int64(0), d, s; k < inner; k, dk, sk = k+1, dk+ds, sk+ss {
				dst[dk] = src[sk]
			}
		}
		// Advance the odometer over the outer dimensions.
		j := r - 2
		for ; j >= 0; j-- {
			idx[j]++
			d += dv.strides[j]
			s += sv.strides[j]
			if idx[j] < dims[j] {
				break
			}
			d -= dv.strides[j] * dims[j]
			s -= sv.strides[j] * dims[j]
			idx[j] = 0
		}
		if j < 0 {
			return
		}
	}
}

// transposePlanes copies dims by transposeBlocked of the (k, last) plane at
// each index of the other dimensions.
func transposePlanes[T any](dims []int64, k int, dst []T, dv view, src []T, sv view) {
	r := len(dims)
	pd := []int64{dims[k], dims[r-1]}
	pdv := view{strides: []int64{dv.strides[k], 1}}
	psv := view{strides: []int64{1, sv.strides[r-1]}}
	var outer []int // the other dimensions
	for j := 0; j < r-1; j++ {
		if j != k {
			outer = append(outer, j)
		}
	}
	idx := make([]int64, len(outer))
	for {
		pdv.off, psv.off = dv.off, sv.off
		for i, j := range outer {
			pdv.off += idx[i] * dv.strides[j]
			psv.off += idx[i] * sv.strides[j]
		}
		transposeBlocked(pd, dst, pdv, src, psv)
		i := len(outer) - 1
		for ; i >= 0; i-- {
			idx[i]++
			if idx[i] < dims[outer[i]] {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return
		}
	}
}

// transposeBlocked copies a 2-D region whose source walks columns, in square
// tiles so both sides stay in cache.
func transposeBlocked[T any](dims []int64, dst []T, dv view, src []T, sv view) {
	const b = 32
	for i0 := int64(0); i0 < dims[0]; i0 += b {
		i1 := min(i0+b, dims[0])
		for j0 := int64(0); j0 < dims[1]; j0 += b {
			j1 := min(j0+b, dims[1])
			for i := i0; i < i1; i++ {
				d := dv.off + i*dv.strides[0]
				s := sv.off + i*sv.strides[0]
				for j := j0; j < j1; j++ {
					dst[d+j] = src[s+j*sv.strides[1]]
				}
			}
		}
	}
}
