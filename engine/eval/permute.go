package eval

import (
	"unsafe"

	"goldtrace/engine/tensor"
)

// permuteTo returns src (row-major over dims) transposed so that the result's
// dimension i is source dimension perm[i]. The identity permutation returns src.
func permuteTo[T any](src []T, dims []int64, perm []int) []T {
	return permuteToPar(1, src, dims, perm)
}

// permuteMinParallel is the element count from which permuteToPar splits
// the copy over goroutines.
const permuteMinParallel = 1 << 16

// permuteToPar is permuteTo on up to par goroutines. Result dimensions that
// stay adjacent in the source are merged first; rows that are contiguous in
// the source are copied whole, and when the result's last dimension walks
// the source with a stride, the copy goes in square tiles of that dimension
// and the source's contiguous one, so both sides stay in cache.
func permuteToPar[T any](par int, src []T, dims []int64, perm []int) []T {
	if permuteIsIdentity(dims, perm) {
		return src
	}
	var out []T
	if n := len(src) * int(unsafe.Sizeof(src[0])); n >= 1<<18 && pointerFree[T]() {
		// permuteInto writes every element: no need to clear them first.
		b := tensor.StorageForWriting(n)
		out = unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(src))
	} else {
		out = make([]T, len(src))
	}
	permuteInto(par, out, src, dims, perm)
	return out
}

// pointerFree reports whether T is one of the element types tensor storage
// holds (no pointers, so storage that was never cleared may hold it).
func pointerFree[T any]() bool {
	switch any(*new(T)).(type) {
	case float32, float64, complex64, complex128, int8, int16, int32, int64, uint8, uint16, uint32, uint64, bool:
		return true
	}
	return false
}

// permuteIsIdentity reports whether permuting dims by perm moves no element.
func permuteIsIdentity(dims []int64, perm []int) bool {
	last := -1
	for _, p := range perm {
		if dims[p] == 1 {
			continue
		}
		if p < last {
			return false
		}
		last = p
	}
	return true
}

// permuteScratch is permuteToPar into storage drawn from (and, by the
// returned func, given back to) the tensor package's reuse pool, for
// operand copies that die with the op: the next op's copies of the same
// size then take the same storage instead of growing the heap. The
// release func must be called only when nothing reads the copy any more;
// for the identity it does nothing (src is returned).
func permuteScratch[T number](par int, src []T, dims []int64, perm []int) ([]T, func()) {
	if permuteIsIdentity(dims, perm) || len(src) == 0 {
		return src, func() {}
	}
	size := int(unsafe.Sizeof(src[0]))
	b := tensor.StorageForWriting(len(src) * size) // permuteInto writes every element
	out := unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(src))
	permuteInto(par, out, src, dims, perm)
	return out, func() { tensor.Release(b) }
}

// permuteInto writes src permuted into dst (len(src) elements), unless
// perm is the identity up to unit dimensions.
func permuteInto[T any](par int, out, src []T, dims []int64, perm []int) {
	strides := tensor.Strides(dims)
	var pd, ps []int64 // merged result dims and their source strides
	for _, p := range perm {
		if dims[p] == 1 {
			continue
		}
		if n := len(pd); n > 0 && ps[n-1] == strides[p]*dims[p] {
			pd[n-1] *= dims[p]
			ps[n-1] = strides[p]
			continue
		}
		pd, ps = append(pd, dims[p]), append(ps, strides[p])
	}
	if len(pd) <= 1 {
		return // the identity, up to unit dimensions (permuteIsIdentity)
	}
	r := len(pd)
	inner := r - 1
	tile := -1 // the result dim the source is contiguous along, when not the last
	if ps[inner] != 1 {
		for i, s := range ps {
			if s == 1 {
				tile = i
			}
		}
	}
	// Work items: every index of the dims other than the last (and the
	// tiled one, which goes in tiles of permuteTile).
	const permuteTile = 16
	os := tensor.Strides(pd)
	outer := make([]int64, 0, r) // dims walked item by item
	for i := 0; i < inner; i++ {
		if i != tile {
			outer = append(outer, int64(i))
		}
	}
	items := int64(1)
	for _, d := range outer {
		items *= pd[d]
	}
	tiles := int64(1)
	if tile >= 0 {
		tiles = (pd[tile] + permuteTile - 1) / permuteTile
	}
	body := func(lo, hi int64) {
		for it := lo; it < hi; it++ {
			// Decompose the item: the tile index is the fastest-varying.
			rest, t := it/tiles, it%tiles
			o, s := int64(0), int64(0)
			for k := len(outer) - 1; k >= 0; k-- {
				d := outer[k]
				x := rest % pd[d]
				rest /= pd[d]
				o += x * os[d]
				s += x * ps[d]
			}
			n := pd[inner]
			if tile < 0 {
				row := out[o : o+n]
				if ps[inner] == 1 {
					copy(row, src[s:s+n])
					continue
				}
				st := ps[inner]
				for j := range row {
					row[j] = src[s+int64(j)*st]
				}
				continue
			}
			j0, j1 := t*permuteTile, min((t+1)*permuteTile, pd[tile])
			st, ot := ps[inner], os[tile]
			for i0 := int64(0); i0 < n; i0 += permuteTile {
				i1 := min(i0+permuteTile, n)
				for j := j0; j < j1; j++ {
					row := out[o+j*ot+i0 : o+j*ot+i1]
					sj := s + j
					for i := range row {
						row[i] = src[sj+(i0+int64(i))*st]
					}
				}
			}
		}
	}
	total := items * tiles
	if par <= 1 || len(out) < permuteMinParallel {
		body(0, total)
		return
	}
	chunks := min(int64(4*par), total)
	dynamicFor(par, int(chunks), func(next func() int) {
		for c := int64(next()); c < chunks; c = int64(next()) {
			body(c*total/chunks, (c+1)*total/chunks)
		}
	})
}
