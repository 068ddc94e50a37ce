package eval

import (
	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// Integer reduce-windows with a fast reducer (add, multiply, maximum,
// minimum, and, or). These are associative and commutative in the type's
// wrapping arithmetic, so any fold order gives the same bits: a prefix-scan
// geometry (jnp.cumsum, cummax on integers) runs as one running fold per
// row instead of refolding every window, and other windows fold their
// walked positions. Values are held as int64, sign- or zero-extended, and
// wrap to the type's width when stored; the unsigned 64-bit maximum and
// minimum compare with the sign bit flipped.

// intWindowFastDisabled sends integer reduce-windows to the scalar machine
// (tests compare the two).
var intWindowFastDisabled bool

// reduceWindowInt is evalReduceWindow's integer path, or nil when x's type
// or op is not its kind.
func reduceWindowInt(op string, x, init *tensor.Tensor, g *windowGeom) *tensor.Tensor {
	if !x.Type.IsInteger() {
		return nil
	}
	bias := int64(0)
	if x.Type == dtype.U64 && (op == "maximum" || op == "minimum") {
		bias = -1 << 63
	}
	var fold func(a, b int64) int64
	switch op {
	case "add":
		fold = func(a, b int64) int64 { return a + b }
	case "multiply":
		fold = func(a, b int64) int64 { return a * b }
	case "maximum":
		fold = func(a, b int64) int64 { return max(a, b) }
	case "minimum":
		fold = func(a, b int64) int64 { return min(a, b) }
	case "and":
		fold = func(a, b int64) int64 { return a & b }
	case "or":
		fold = func(a, b int64) int64 { return a | b }
	default:
		return nil
	}
	xs := asI64(x)
	i0 := asI64(init)[0] ^ bias
	if bias != 0 {
		for i := range xs {
			xs[i] ^= bias
		}
	}
	o := make([]int64, tensor.NumElements(g.out))
	if d, ok := g.prefixScan(); ok {
		prefixScanInt(fold, i0, xs, g, d, o)
	} else {
		parallelForWork(len(o), len(o)*int(max(tensor.NumElements(g.size), 1)), func(lo, hi int) {
			sc := g.scratch()
			var buf []int64
			for k := lo; k < hi; k++ {
				buf = g.walk(int64(k), len(g.in), buf, sc)
				acc := i0
				for _, p := range buf {
					acc = fold(acc, xs[p])
				}
				o[k] = acc
			}
		})
	}
	if bias != 0 {
		for i := range o {
			o[i] ^= bias
		}
	}
	return newFromI64(x.Type, g.out, o)
}

// prefixScanInt is reduceWindowPrefix for int64 values: result i of a row
// continues result i-1's fold over the elements its window adds.
func prefixScanInt(fold func(a, b int64) int64, i0 int64, xs []int64, g *windowGeom, d int, o []int64) {
	outer, inner, n, m, last := g.prefixRows(d)
	if outer == 0 || inner == 0 {
		return
	}
	parallelForWork(int(outer*inner), int(outer*n*inner), func(lo, hi int) {
		for t := int64(lo); t < int64(hi); t++ {
			r, c := t/inner, t%inner
			acc, j := i0, int64(-1)
			for i := range m {
				for e := last(i); j < e; {
					j++
					acc = fold(acc, xs[(r*n+j)*inner+c])
				}
				o[(r*m+i)*inner+c] = acc
			}
		}
	})
}
