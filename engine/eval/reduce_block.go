package eval

// Reduces over one contiguous block of dimensions without transposing: the
// operand is outer × red × inner, and result (o, c) folds x[o, k, c] for k
// increasing from the init value -- the order the transposed run is folded
// in -- with the op-by-op fold's own arithmetic: foldRun's for floats
// (columns; rows of floats keep reduceFast's loop), and for integers
// wrapping arithmetic in the element's own width, which is the low bits of
// the int64 fold reduceFast computes (add and multiply wrap alike modulo
// 2^width; maximum, minimum, and, or do not depend on the width).

import (
	"os"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// reduceBlockDisabled turns the in-place reduce off (GOLDTRACE_NO_REDUCE_BLOCK=1),
// to compare.
var reduceBlockDisabled = os.Getenv("GOLDTRACE_NO_REDUCE_BLOCK") == "1"

// reducedBlock splits dims around the reduced dimensions when they form one
// contiguous block (at least one dimension reduced).
func reducedBlock(dims []int64, reduced []bool) (outer, red, inner int64, ok bool) {
	first, last := -1, -1
	for d, r := range reduced {
		if r {
			if first >= 0 && last != d-1 {
				return 0, 0, 0, false
			}
			if first < 0 {
				first = d
			}
			last = d
		}
	}
	if first < 0 {
		return 0, 0, 0, false
	}
	outer, red, inner = 1, 1, 1
	for d, n := range dims {
		switch {
		case d < first:
			outer *= n
		case d <= last:
			red *= n
		default:
			inner *= n
		}
	}
	return outer, red, inner, true
}

// reduceBlockFast is the reduce of x by the fast reducer op over the
// reduced block, or nil where the caller's transposing paths keep it: float
// rows (reduceFast folds them in place), small f32/f64 operands (XLA's
// tree order, reduce_order.go), pred and other types.
func reduceBlockFast(op string, x, init *tensor.Tensor, reduced []bool, outDims []int64) *tensor.Tensor {
	if reduceBlockDisabled || init.Type != x.Type {
		return nil
	}
	outer, red, inner, ok := reducedBlock(x.Dims, reduced)
	if !ok || outer*red*inner == 0 {
		return nil
	}
	isInt := op == "and" || op == "or"
	switch classOf(x.Type) {
	case classF32, classF64:
		// Products, and small operands, take XLA's tree order (reduce_order.go).
		if isInt || op == "multiply" || inner == 1 || (x.Type == dtype.F32 || x.Type == dtype.F64) && outer*red*inner < ynnMinElements {
			return nil
		}
		if x.Type == dtype.F64 {
			out := tensor.New(x.Type, outDims)
			reduceColumns(outer, red, inner, x.F64(), init.F64()[0], out.F64(), func(acc, xs []float64) { foldRun(op, acc, xs) })
			return out
		}
		o := make([]float32, outer*inner)
		reduceColumns(outer, red, inner, asF32(x), asF32(init)[0], o, func(acc, xs []float32) { foldRun(op, acc, xs) })
		return newFromF32(x.Type, outDims, o)
	}
	out := tensor.New(x.Type, outDims)
	switch x.Type {
	case dtype.S32:
		reduceIntBlock(op, outer, red, inner, x.I32(), init.I32()[0], out.I32())
	case dtype.S64:
		reduceIntBlock(op, outer, red, inner, x.I64(), init.I64()[0], out.I64())
	case dtype.U32:
		reduceIntBlock(op, outer, red, inner, x.U32(), init.U32()[0], out.U32())
	case dtype.U8:
		reduceIntBlock(op, outer, red, inner, x.U8(), init.U8()[0], out.U8())
	case dtype.S8:
		reduceIntBlock(op, outer, red, inner, x.I8(), init.I8()[0], out.I8())
	default:
		return nil
	}
	return out
}

// reduceColumns folds the red rows of each outer block into its inner
// results, top to bottom, in chunks of columns spread over the cores.
func reduceColumns[T any](outer, red, inner int64, xs []T, i0 T, o []T, fold func(acc, xs []T)) {
	const chunk = 2048
	chunks := (inner + chunk - 1) / chunk
	parallelForWork(int(outer*chunks), int(outer*red*inner), func(lo, hi int) {
		for t := int64(lo); t < int64(hi); t++ {
			b, c0 := t/chunks, (t%chunks)*chunk
			c1 := min(c0+chunk, inner)
			acc := o[b*inner+c0 : b*inner+c1]
			for c := range acc {
				acc[c] = i0
			}
			for k := range red {
				base := (b*red+k)*inner + c0
				fold(acc, xs[base:base+c1-c0])
			}
		}
	})
}

type reduceInt interface {
	int8 | int32 | int64 | uint8 | uint32
}

func reduceIntBlock[T reduceInt](op string, outer, red, inner int64, xs []T, i0 T, o []T) {
	if inner == 1 {
		parallelForWork(int(outer), int(outer*red), func(lo, hi int) {
			for g := int64(lo); g < int64(hi); g++ {
				o[g] = foldIntRow(op, i0, xs[g*red:(g+1)*red])
			}
		})
		return
	}
	reduceColumns(outer, red, inner, xs, i0, o, func(acc, xs []T) { foldIntRun(op, acc, xs) })
}

// foldIntRow folds xs into acc left to right.
func foldIntRow[T reduceInt](op string, acc T, xs []T) T {
	switch op {
	case "add":
		for _, v := range xs {
			acc += v
		}
	case "multiply":
		for _, v := range xs {
			acc *= v
		}
	case "maximum":
		for _, v := range xs {
			acc = max(acc, v)
		}
	case "minimum":
		for _, v := range xs {
			acc = min(acc, v)
		}
	case "and":
		for _, v := range xs {
			acc &= v
		}
	case "or":
		for _, v := range xs {
			acc |= v
		}
	}
	return acc
}

// foldIntRun sets acc[c] = op(acc[c], xs[c]).
func foldIntRun[T reduceInt](op string, acc, xs []T) {
	xs = xs[:len(acc)]
	switch op {
	case "add":
		for c, v := range xs {
			acc[c] += v
		}
	case "multiply":
		for c, v := range xs {
			acc[c] *= v
		}
	case "maximum":
		for c, v := range xs {
			acc[c] = max(acc[c], v)
		}
	case "minimum":
		for c, v := range xs {
			acc[c] = min(acc[c], v)
		}
	case "and":
		for c, v := range xs {
			acc[c] &= v
		}
	case "or":
		for c, v := range xs {
			acc[c] |= v
		}
	}
}
