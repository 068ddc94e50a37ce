package eval

// bf16 maximum and minimum reduces of rows, on the bf16 bits. The op-by-op
// reduce widens to f32, folds each row left to right from the init value
// (maxFloat, minFloat: a NaN wins from where it is met, +0 is above -0) and
// rounds back (a NaN becomes the quiet NaN of its sign); without a NaN
// the result is the row's (and init's) largest (smallest) value in the
// order of keyBF16, which is the order of the values with -0 below +0, so
// it is found a vector at a time, in any order. A row or init with a NaN
// is folded as before.

import (
	"math"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// keyBF16 maps bf16 bits to an int16 that orders as the values do (-0
// below +0, NaNs beyond the infinities); it is its own inverse.
func keyBF16(b uint16) int16 {
	k := int16(b)
	return k ^ (k>>15)&0x7fff
}

// Keys beyond these are NaNs.
const (
	keyBF16PosInf = 0x7f80
	keyBF16NegInf = -0x7f81 // keyBF16(0xff80)
)

// reduceBF16MinMaxRows is the reduce of the rows (of runLen) of bf16 x by
// maximum or minimum from init, or nil for other ops and types.
func reduceBF16MinMaxRows(op string, x, init *tensor.Tensor, outDims []int64, runLen int) *tensor.Tensor {
	if x.Type != dtype.BF16 || init.Type != dtype.BF16 || (op != "maximum" && op != "minimum") || runLen < 16 {
		return nil
	}
	isMax := op == "maximum"
	out := tensor.New(dtype.BF16, outDims)
	xs, o, i0 := x.U16(), out.U16(), init.U16()[0]
	ki := keyBF16(i0)
	initNaN := ki > keyBF16PosInf || ki < keyBF16NegInf
	parallelForWork(len(o), len(o)*runLen, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := xs[r*runLen : (r+1)*runLen]
			kmin, kmax := keyRangeBF16(row)
			if initNaN || kmax > keyBF16PosInf || kmin < keyBF16NegInf {
				o[r] = foldBF16Row(op, i0, row)
				continue
			}
			if isMax {
				o[r] = uint16(keyBF16(uint16(max(kmax, ki))))
			} else {
				o[r] = uint16(keyBF16(uint16(min(kmin, ki))))
			}
		}
	})
	return out
}

// keyRangeBF16 is the smallest and largest keyBF16 of row (not empty).
func keyRangeBF16(row []uint16) (kmin, kmax int16) {
	kmin, kmax = math.MaxInt16, math.MinInt16
	n := keyRangeBF16Vector(row, &kmin, &kmax)
	for _, b := range row[n:] {
		k := keyBF16(b)
		kmin, kmax = min(kmin, k), max(kmax, k)
	}
	return kmin, kmax
}

// foldBF16Row is the op-by-op fold of row: widened, folded from i0, rounded.
func foldBF16Row(op string, i0 uint16, row []uint16) uint16 {
	f := make([]float32, len(row))
	for i, b := range row {
		f[i] = math.Float32frombits(uint32(b) << 16)
	}
	v := foldFloat(op, math.Float32frombits(uint32(i0)<<16), f)
	return uint16(dtype.FromF32(dtype.BF16, v))
}
