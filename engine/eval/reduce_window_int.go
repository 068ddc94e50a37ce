package eval

import (
	"runtime"

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
	if d, ok := g.prefixScan(); ok && op == "add" {
		if out := prefixSumNative(x, init, g, d); out != nil {
			return out
		}
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

// prefixSumNative is the add prefix scan (jnp.cumsum) in x's own integer
// type: wrapping adds in the type give the bits the int64 fold wraps to, and
// nothing is widened. nil for a type it does not take.
func prefixSumNative(x, init *tensor.Tensor, g *windowGeom, d int) *tensor.Tensor {
	out := tensor.New(x.Type, g.out)
	switch x.Type {
	case dtype.S8:
		prefixSumTyped(x.I8(), init.I8()[0], g, d, out.I8())
	case dtype.U8:
		prefixSumTyped(x.U8(), init.U8()[0], g, d, out.U8())
	case dtype.S16:
		prefixSumTyped(x.I16(), init.I16()[0], g, d, out.I16())
	case dtype.U16:
		prefixSumTyped(x.U16(), init.U16()[0], g, d, out.U16())
	case dtype.S32:
		prefixSumTyped(x.I32(), init.I32()[0], g, d, out.I32())
	case dtype.U32:
		prefixSumTyped(x.U32(), init.U32()[0], g, d, out.U32())
	case dtype.S64:
		prefixSumTyped(x.I64(), init.I64()[0], g, d, out.I64())
	case dtype.U64:
		prefixSumTyped(x.U64(), init.U64()[0], g, d, out.U64())
	default:
		return nil
	}
	return out
}

// prefixSumTyped is prefixScanInt's add in T: runs along dimension d of
// each outer row, inner columns side by side (a column scan adds whole
// rows of inner elements at a time), split into column chunks so that the
// cores share even a single outer row.
func prefixSumTyped[T integer](xs []T, i0 T, g *windowGeom, d int, o []T) {
	outer, inner, n, m, last := g.prefixRows(d)
	if outer == 0 || inner == 0 {
		return
	}
	ends := make([]int64, m)
	for i := range m {
		ends[i] = last(i)
	}
	if inner == 1 {
		parallelForWork(int(outer), int(outer*n), func(lo, hi int) {
			for r := int64(lo); r < int64(hi); r++ {
				x, y := xs[r*n:(r+1)*n], o[r*m:(r+1)*m]
				acc, j := i0, int64(-1)
				for i, e := range ends {
					for ; j < e; j++ {
						acc += x[j+1]
					}
					y[i] = acc
				}
			}
		})
		return
	}
	const minChunk = 512
	chunks := max(1, min(inner/minChunk, int64(4*runtime.GOMAXPROCS(0))))
	parallelForWork(int(outer*chunks), int(outer*n*inner), func(lo, hi int) {
		acc := make([]T, (inner+chunks-1)/chunks)
		for t := int64(lo); t < int64(hi); t++ {
			r, k := t/chunks, t%chunks
			c0, c1 := k*inner/chunks, (k+1)*inner/chunks
			a := acc[:c1-c0]
			for c := range a {
				a[c] = i0
			}
			x, y := xs[r*n*inner:(r+1)*n*inner], o[r*m*inner:(r+1)*m*inner]
			j := int64(-1)
			for i := range m {
				for e := ends[i]; j < e; {
					j++
					for c, v := range x[j*inner+c0 : j*inner+c1] {
						a[c] += v
					}
				}
				copy(y[i*inner+c0:i*inner+c1], a)
			}
		}
	})
}
