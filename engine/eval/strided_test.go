package eval

import (
	"math/rand"
	"testing"

	"goldtrace/engine/tensor"
)

// naiveCopyView is copyView's meaning: every index of dims, one element.
func naiveCopyView(dims []int64, dst []uint32, dv view, src []uint32, sv view) {
	idx := make([]int64, len(dims))
	n := tensor.NumElements(dims)
	for e := int64(0); e < n; e++ {
		rem := e
		for d := len(dims) - 1; d >= 0; d-- {
			idx[d] = rem % dims[d]
			rem /= dims[d]
		}
		do, so := dv.off, sv.off
		for d := range dims {
			do += idx[d] * dv.strides[d]
			so += idx[d] * sv.strides[d]
		}
		dst[do] = src[so]
	}
}

// copyViewT (split between cores when large, tiled for transposes of rank
// 2 and more) against the element-by-element reference: transposes of
// every axis order, reversed and broadcast source axes, sliced windows, into
// dense and windowed destinations, small and large.
func TestCopyViewMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	shapes := [][]int64{{70000}, {300, 400}, {17, 33}, {40, 64, 37}, {1, 520, 200}, {18, 64, 100}, {3, 20, 40, 50},
		{2, 1, 300, 300}}
	for trial := 0; trial < 120; trial++ {
		sdims := shapes[trial%len(shapes)]
		r := len(sdims)
		src := make([]uint32, tensor.NumElements(sdims))
		for i := range src {
			src[i] = rng.Uint32()
		}
		ss := tensor.Strides(sdims)
		perm := rng.Perm(r)
		dims := make([]int64, r)
		sv := view{strides: make([]int64, r)}
		for d, p := range perm {
			dims[d] = sdims[p]
			sv.strides[d] = ss[p]
			switch rng.Intn(6) {
			case 0: // reversed
				sv.off += (dims[d] - 1) * sv.strides[d]
				sv.strides[d] = -sv.strides[d]
			case 1: // a window with a stride
				if dims[d] >= 4 {
					st := int64(1 + rng.Intn(2))
					lo := int64(rng.Intn(2))
					sv.off += lo * sv.strides[d]
					sv.strides[d] *= st
					dims[d] = (dims[d] - lo + st - 1) / st
				}
			case 2: // broadcast
				if rng.Intn(3) == 0 {
					sv.strides[d] = 0
				}
			}
		}
		// The destination: dense, or a window of a larger buffer.
		ddims := append([]int64{}, dims...)
		dv := dense(dims)
		if trial%3 == 1 {
			for d := range ddims {
				ddims[d] += 2
			}
			dv = view{strides: tensor.Strides(ddims)}
			for d := range ddims {
				dv.off += dv.strides[d]
			}
		}
		n := tensor.NumElements(ddims)
		got, want := make([]uint32, n), make([]uint32, n)
		for i := range got {
			got[i] = uint32(i)
			want[i] = uint32(i)
		}
		copyViewT(dims, got, dv, src, sv)
		naiveCopyView(dims, want, dv, src, sv)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("trial %d dims %v src strides %v dst strides %v: element %d is %#x, want %#x",
					trial, dims, sv.strides, dv.strides, i, got[i], want[i])
			}
		}
	}
}
