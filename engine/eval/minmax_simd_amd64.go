//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

// maximum/minimum folds of reduce-window's inner runs a vector at a time,
// lane for lane maxFloat/minFloat: the accumulator wins when it is NaN or
// strictly ahead, the element when it is NaN or strictly ahead, and a tie
// (equal values, ±0 included) goes by the accumulator's sign bit.

// foldRunMinMaxVector sets acc[c] = op(acc[c], xs[c]) over the whole vectors
// at the front and returns how many elements that was (0: not handled).
func foldRunMinMaxVector(op string, acc, xs []float32) int {
	return minMaxF32Vector(op, acc, xs, acc, false)
}

// minMaxF32Vector sets o[c] = op(x[c], y[c]) (x in the accumulator's part)
// over the whole vectors at the front of o and returns how many elements
// that was (0: not handled); with flush, subnormal results become zeros of
// their sign. o may be x.
func minMaxF32Vector(op string, x, y, o []float32, flush bool) int {
	isMax := op == "maximum"
	if !isMax && op != "minimum" {
		return 0
	}
	n := len(o)
	x, y = x[:n], y[:n]
	if binaryLanes == 16 {
		if n &^= 15; n == 0 {
			return 0
		}
		px, py, po := f32Base(x, n), f32Base(y, n), f32Base(o, n)
		zero := archsimd.BroadcastInt32x16(0)
		sign, minNormal := archsimd.BroadcastUint32x16(0x80000000), archsimd.BroadcastFloat32x16(0x1p-126)
		for off, end := 0, 4*n; off < end; off += 64 {
			a, b := loadFloat32x16(px, off), loadFloat32x16(py, off)
			neg := a.AsInt32x16().Less(zero)
			var selA, selB archsimd.Mask32x16
			var tie archsimd.Float32x16
			if isMax {
				selA, selB = a.IsNaN().Or(a.Greater(b)), b.IsNaN().Or(b.Greater(a))
				tie = b.Merge(a, neg) // negative accumulator: the element
			} else {
				selA, selB = a.IsNaN().Or(a.Less(b)), b.IsNaN().Or(b.Less(a))
				tie = a.Merge(b, neg) // negative accumulator: itself
			}
			r := a.Merge(b.Merge(tie, selB), selA)
			if flush {
				r = flushSubnormal16(r, sign, minNormal)
			}
			storeFloat32x16(r, po, off)
		}
		archsimd.ClearAVXUpperBits()
		return n
	}
	if binaryLanes == 8 {
		if n &^= 7; n == 0 {
			return 0
		}
		px, py, po := f32Base(x, n), f32Base(y, n), f32Base(o, n)
		zero := archsimd.BroadcastInt32x8(0)
		mag, minNormal := archsimd.BroadcastUint32x8(0x7fffffff), archsimd.BroadcastFloat32x8(0x1p-126)
		for off, end := 0, 4*n; off < end; off += 32 {
			a, b := loadFloat32x8(px, off), loadFloat32x8(py, off)
			neg := a.AsInt32x8().Less(zero)
			var selA, selB archsimd.Mask32x8
			var tie archsimd.Float32x8
			if isMax {
				selA, selB = a.IsNaN().Or(a.Greater(b)), b.IsNaN().Or(b.Greater(a))
				tie = b.Merge(a, neg)
			} else {
				selA, selB = a.IsNaN().Or(a.Less(b)), b.IsNaN().Or(b.Less(a))
				tie = a.Merge(b, neg)
			}
			r := a.Merge(b.Merge(tie, selB), selA)
			if flush {
				r = flushSubnormal8(r, mag, minNormal)
			}
			storeFloat32x8(r, po, off)
		}
		archsimd.ClearAVXUpperBits()
		return n
	}
	return 0
}

// foldWindowMinMaxVector folds, for the whole vectors at the front of o,
// i0 then xs[p+c] for each p of offs in order into o[c] (maximum or
// minimum, lane for lane as foldRunMinMaxVector), keeping the accumulator
// in a register; it returns how many elements that was (0: not handled).
func foldWindowMinMaxVector(op string, i0 float32, xs []float32, offs []int64, o []float32) int {
	isMax := op == "maximum"
	if !isMax && op != "minimum" {
		return 0
	}
	n := len(o)
	switch binaryLanes {
	case 16:
		n &^= 15
		zero, init := archsimd.BroadcastInt32x16(0), archsimd.BroadcastFloat32x16(i0)
		for c := 0; c < n; c += 16 {
			x := init
			for _, p := range offs {
				y := archsimd.LoadFloat32x16((*[16]float32)(xs[p+int64(c):]))
				neg := x.AsInt32x16().Less(zero)
				var selX, selY archsimd.Mask32x16
				var tie archsimd.Float32x16
				if isMax {
					selX, selY = x.IsNaN().Or(x.Greater(y)), y.IsNaN().Or(y.Greater(x))
					tie = y.Merge(x, neg)
				} else {
					selX, selY = x.IsNaN().Or(x.Less(y)), y.IsNaN().Or(y.Less(x))
					tie = x.Merge(y, neg)
				}
				x = x.Merge(y.Merge(tie, selY), selX)
			}
			x.Store((*[16]float32)(o[c:]))
		}
		archsimd.ClearAVXUpperBits()
		return n
	case 8:
		n &^= 7
		zero, init := archsimd.BroadcastInt32x8(0), archsimd.BroadcastFloat32x8(i0)
		for c := 0; c < n; c += 8 {
			x := init
			for _, p := range offs {
				y := archsimd.LoadFloat32x8((*[8]float32)(xs[p+int64(c):]))
				neg := x.AsInt32x8().Less(zero)
				var selX, selY archsimd.Mask32x8
				var tie archsimd.Float32x8
				if isMax {
					selX, selY = x.IsNaN().Or(x.Greater(y)), y.IsNaN().Or(y.Greater(x))
					tie = y.Merge(x, neg)
				} else {
					selX, selY = x.IsNaN().Or(x.Less(y)), y.IsNaN().Or(y.Less(x))
					tie = x.Merge(y, neg)
				}
				x = x.Merge(y.Merge(tie, selY), selX)
			}
			x.Store((*[8]float32)(o[c:]))
		}
		archsimd.ClearAVXUpperBits()
		return n
	}
	return 0
}
