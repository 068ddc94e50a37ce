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
	if r == 2 && dv.strides[1] == 1 && sv.strides[0] == 1 && dims[0] >= 16 && dims[1] >= 16 {
		transposeBlocked(dims, dst, dv, src, sv)
		return
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
