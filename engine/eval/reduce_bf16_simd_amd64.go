//go:build goexperiment.simd && amd64

package eval

import (
	"simd/archsimd"
	"unsafe"
)

var vec16x7fff = [16]int16{0x7fff, 0x7fff, 0x7fff, 0x7fff, 0x7fff, 0x7fff, 0x7fff, 0x7fff,
	0x7fff, 0x7fff, 0x7fff, 0x7fff, 0x7fff, 0x7fff, 0x7fff, 0x7fff}

// keyRangeBF16Vector folds the keyBF16 of the whole 16-lane vectors of row
// into *kmin and *kmax; it returns how many elements it read.
func keyRangeBF16Vector(row []uint16, kmin, kmax *int16) int {
	if subnormalLanes < 8 || len(row) < 16 {
		return 0
	}
	m := archsimd.LoadInt16x16(&vec16x7fff)
	var zero archsimd.Int16x16
	p := unsafe.Slice((*int16)(unsafe.Pointer(&row[0])), len(row))
	key := func(i int) archsimd.Int16x16 {
		x := archsimd.LoadInt16x16((*[16]int16)(p[i:]))
		return x.Xor(m).Merge(x, zero.Greater(x))
	}
	lo := key(0)
	hi := lo
	i := 16
	for ; i+16 <= len(p); i += 16 {
		k := key(i)
		lo, hi = lo.Min(k), hi.Max(k)
	}
	var a, b [16]int16
	lo.Store(&a)
	hi.Store(&b)
	archsimd.ClearAVXUpperBits()
	for j := range a {
		*kmin, *kmax = min(*kmin, a[j]), max(*kmax, b[j])
	}
	return i
}
