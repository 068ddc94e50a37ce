//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

// minMaxRowsF32 is foldRows' maximum or minimum fold for f32 rows of at
// least 16 elements, eight lanes at a time: without NaNs the fold is
// order-independent (maximum(+0, -0) is +0 and minimum -0 whichever comes
// first, which the lane step gets by taking AND or OR of equal lanes), so
// the lanes' results and then the row's last few elements fold in any order
// to the sequential result. A row holding a NaN is left to the sequential
// fold, which keeps the first NaN's payload. It returns how many of o's
// rows it did (all of them, or none).
func minMaxRowsF32(op string, i0 float32, xs []float32, runLen int, o []float32) int {
	isMax := op == "maximum"
	if runLen < 16 || i0 != i0 || subnormalLanes < 8 || len(o) == 0 {
		return 0
	}
	p := f32Base(xs, len(o)*runLen)
	init := archsimd.BroadcastFloat32x8(i0)
	var lanes [8]float32
	for r := range o {
		base := 4 * r * runLen
		a, b := init, init
		nan := a.IsNaN() // all false: i0 is not a NaN
		t := 0
		for ; t+16 <= runLen; t += 16 {
			u, v := loadFloat32x8(p, base+4*t), loadFloat32x8(p, base+4*t+32)
			nan = nan.Or(u.IsNaN()).Or(v.IsNaN())
			a, b = minMaxStep(isMax, a, u), minMaxStep(isMax, b, v)
		}
		for ; t+8 <= runLen; t += 8 {
			u := loadFloat32x8(p, base+4*t)
			nan = nan.Or(u.IsNaN())
			a = minMaxStep(isMax, a, u)
		}
		row := xs[r*runLen : (r+1)*runLen]
		if nan.ToBits() != 0 {
			archsimd.ClearAVXUpperBits() // scalar float code follows
			o[r] = foldFloat(op, i0, row)
			continue
		}
		minMaxStep(isMax, a, b).Store(&lanes)
		archsimd.ClearAVXUpperBits()
		o[r] = minMaxSeq(isMax, minMaxSeq(isMax, lanes[0], lanes[1:]), row[t:])
	}
	return len(o)
}

// minMaxStep is maximum (isMax) or minimum of NaN-free lanes, signed zeros
// included: equal lanes (+0 and -0 among them) give AND (maximum) or OR
// (minimum) of their bits.
func minMaxStep(isMax bool, acc, v archsimd.Float32x8) archsimd.Float32x8 {
	eq := acc.Equal(v)
	if isMax {
		return acc.AsUint32x8().And(v.AsUint32x8()).AsFloat32x8().Merge(acc.Max(v), eq)
	}
	return acc.AsUint32x8().Or(v.AsUint32x8()).AsFloat32x8().Merge(acc.Min(v), eq)
}

// minMaxSeq folds xs into acc in order.
func minMaxSeq(isMax bool, acc float32, xs []float32) float32 {
	for _, x := range xs {
		if isMax {
			acc = maxFloat(acc, x)
		} else {
			acc = minFloat(acc, x)
		}
	}
	return acc
}
