package eval

import (
	"fmt"
	"math"
	"math/bits"
	"os"
	"slices"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func init() {
	Register("sort", evalSort)
	Register("topk", evalTopK)
	RegisterCustomCall("TopK", customTopK)
}

// sortKeys holds operand 0 as totally ordered integer keys so the common
// comparators run without calling into the interpreter.
type sortKeys struct {
	signed   []int64
	unsigned []uint64
	floats   []float64
	// f32, for topKSelect only, is an f32 operand read in place: its key
	// is that of the float64 newSortKeys would hold.
	f32 []float32
}

func newSortKeys(t *tensor.Tensor) *sortKeys {
	switch classOf(t.Type) {
	case classF32, classF64:
		return &sortKeys{floats: toF64s(t)}
	case classUnsigned, classPred:
		return &sortKeys{unsigned: asU64(t)}
	case classSigned:
		return &sortKeys{signed: asI64(t)}
	}
	return nil
}

// totalOrderKey maps a float to an integer whose order is XLA's TOTALORDER:
// -NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN.
func totalOrderKey(f float64) int64 {
	b := int64(math.Float64bits(f))
	if b < 0 {
		b ^= math.MaxInt64
	}
	return b
}

// less reports a < b under the given comparison type.
func (k *sortKeys) less(a, b int64, totalOrder bool) bool {
	switch {
	case k.floats != nil:
		if totalOrder {
			return totalOrderKey(k.floats[a]) < totalOrderKey(k.floats[b])
		}
		return k.floats[a] < k.floats[b]
	case k.unsigned != nil:
		return k.unsigned[a] < k.unsigned[b]
	}
	return k.signed[a] < k.signed[b]
}

// simpleComparator recognises `ROOT compare(p0, p1), direction=LT|GT` (or with
// the parameters swapped), the comparator of a plain ascending or descending
// sort on operand 0. It returns ok=false for anything else.
func simpleComparator(c *hlo.Computation) (descending, totalOrder, ok bool) {
	if c == nil || len(c.Params) < 2 || c.Root == nil || c.Root.Opcode != "compare" || len(c.Root.Operands) != 2 {
		return false, false, false
	}
	r := c.Root
	p0, p1 := c.Params[0], c.Params[1]
	var swapped bool
	switch {
	case r.Operands[0] == p0 && r.Operands[1] == p1:
	case r.Operands[0] == p1 && r.Operands[1] == p0:
		swapped = true
	default:
		return false, false, false
	}
	switch r.ComparisonDirection {
	case "LT":
		descending = false
	case "GT":
		descending = true
	default:
		return false, false, false
	}
	ctype, err := r.EffectiveComparisonType()
	if err != nil {
		return false, false, false
	}
	return descending != swapped, ctype == "TOTALORDER", true
}

func evalSort(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if len(args) == 0 {
		return Value{}, fmt.Errorf("sort has no operands")
	}
	for i, a := range args {
		if a.T == nil {
			return Value{}, fmt.Errorf("sort operand %d is not an array", i)
		}
		if !slices.Equal(a.T.Dims, args[0].T.Dims) {
			return Value{}, fmt.Errorf("sort operand %d has dims %v, operand 0 has %v", i, a.T.Dims, args[0].T.Dims)
		}
	}
	dims := args[0].T.Dims
	if len(in.Dimensions) != 1 || in.Dimensions[0] < 0 || int(in.Dimensions[0]) >= len(dims) {
		if len(dims) == 0 {
			return sortResult(in, args), nil
		}
		return Value{}, fmt.Errorf("sort dimensions %v invalid for rank %d", in.Dimensions, len(dims))
	}
	cmp := in.ToApply()
	if cmp == nil || len(cmp.Params) != 2*len(args) {
		return Value{}, fmt.Errorf("sort comparator must take %d parameters", 2*len(args))
	}
	dim := int(in.Dimensions[0])
	n := dims[dim]
	stride := tensor.Strides(dims)[dim]
	// newLess gives each worker its own comparator when comparators can run
	// concurrently (a key order, a compiled program); the interpreter's
	// comparator shares state and sorts every line itself.
	var newLess func() (func(a, b int64) bool, func() error)
	var radix *radixOrder // the comparator as one integer key per element, when it is that
	var less func(a, b int64) bool
	var callErr error
	ts := make([]*tensor.Tensor, len(args))
	for i, a := range args {
		ts[i] = a.T
	}
	if desc, total, ok := simpleComparator(cmp); ok && newSortKeys(args[0].T) != nil {
		keys := newSortKeys(args[0].T)
		l := func(a, b int64) bool { return keys.less(a, b, total) }
		if desc {
			l = func(a, b int64) bool { return keys.less(b, a, total) }
		}
		newLess = func() (func(a, b int64) bool, func() error) { return l, func() error { return nil } }
	} else if prog := compileScalar(cmp); prog != nil {
		newLess, _ = scalarSortLess(prog, cmp.Root, ts, &radix)
	}
	if newLess == nil {
		// The comparator is called as (k0[a], k0[b], k1[a], k1[b], ...).
		scalars := make([][]Value, len(args))
		for i, a := range args {
			scalars[i] = make([]Value, a.T.NumElements())
			for j := range scalars[i] {
				scalars[i][j] = ArrayValue(scalarAt(a.T, int64(j)))
			}
		}
		cargs := make([]Value, 2*len(args))
		less = func(a, b int64) bool {
			if callErr != nil {
				return false
			}
			for i := range args {
				cargs[2*i], cargs[2*i+1] = scalars[i][a], scalars[i][b]
			}
			r, err := ev.Call(cmp, cargs)
			if err != nil {
				callErr = fmt.Errorf("sort comparator: %w", err)
				return false
			}
			if r.T == nil || r.T.Type != dtype.Pred || len(r.T.Data) != 1 {
				callErr = fmt.Errorf("sort comparator %s did not return a pred scalar", cmp.Name)
				return false
			}
			return r.T.Data[0] != 0
		}
	}
	// Sort every 1-D line along dim. XLA:CPU uses std::sort unless is_stable;
	// a stable sort is one valid outcome of either, and the one HloEvaluator gives.
	total := args[0].T.NumElements()
	perm := make([]int64, total)
	var lines int64
	if n > 0 {
		lines = total / n
	}
	sortLines := func(lo, hi int64, less func(a, b int64) bool) {
		line, buf := make([]int64, n), make([]int64, n)
		for l := lo; l < hi; l++ {
			start := l/stride*stride*n + l%stride
			for i := range line {
				line[i] = start + int64(i)*stride
			}
			if radix != nil && n >= radixSortMin && !radixSortDisabled {
				radix.sort(line, buf)
			} else {
				stableSort(line, buf, less)
			}
			for i, src := range line {
				perm[start+int64(i)*stride] = src
			}
		}
	}
	if newLess != nil {
		var fe firstError
		work := total * int64(bits.Len64(uint64(n))+1)
		parallelForWork(int(lines), int(work), func(lo, hi int) {
			l, errf := newLess()
			sortLines(int64(lo), int64(hi), l)
			fe.set(errf())
		})
		if fe.err != nil {
			return Value{}, fmt.Errorf("sort comparator: %w", fe.err)
		}
	} else {
		sortLines(0, lines, less)
		if callErr != nil {
			return Value{}, callErr
		}
	}
	outs := make([]Value, len(args))
	for i, a := range args {
		outs[i] = ArrayValue(takeElems(a.T, dims, perm))
	}
	if len(outs) == 1 && !in.Shape.IsTuple() {
		return outs[0], nil
	}
	return TupleValue(outs...), nil
}

func sortResult(in *hlo.Instruction, args []Value) Value {
	if len(args) == 1 && !in.Shape.IsTuple() {
		return args[0]
	}
	return TupleValue(args...)
}

func evalTopK(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if len(args) != 1 || args[0].T == nil {
		return Value{}, fmt.Errorf("topk takes one array operand")
	}
	return topK(args[0].T, in.K, in.Largest)
}

// customTopK is XLA:CPU's "TopK" custom call (from TopkRewriter): operand x,
// result (values, s32 indices) of the k largest along the last dim, k taken
// from the result shape.
func customTopK(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if len(args) != 1 || args[0].T == nil || !in.Shape.IsTuple() || len(in.Shape.Tuple) != 2 || len(in.Shape.Tuple[0].Dims) == 0 {
		return Value{}, fmt.Errorf("TopK custom call takes one array and returns (values, indices)")
	}
	d := in.Shape.Tuple[0].Dims
	return topK(args[0].T, d[len(d)-1], true)
}

// topK returns the k largest (or smallest) entries along the last dim and
// their s32 indices, ordered by value with ties broken by lower index first.
// NaNs rank by total order (a positive NaN is largest).
func topK(x *tensor.Tensor, k int64, largest bool) (Value, error) {
	if len(x.Dims) == 0 {
		return Value{}, fmt.Errorf("topk operand must have rank >= 1")
	}
	n := x.Dims[len(x.Dims)-1]
	if k < 0 || k > n {
		return Value{}, fmt.Errorf("topk k=%d out of range for last dimension %d", k, n)
	}
	var keys *sortKeys
	if x.Type == dtype.F32 && !topKSelectDisabled {
		keys = &sortKeys{f32: x.F32()} // read in place, not widened to a copy
	} else if keys = newSortKeys(x); keys == nil {
		return Value{}, fmt.Errorf("topk does not support element type %v", x.Type)
	}
	rows := int64(0)
	if n > 0 {
		rows = x.NumElements() / n
	}
	outDims := append(slices.Clone(x.Dims[:len(x.Dims)-1]), k)
	idx := make([]int64, rows*k)
	pos := make([]int32, rows*k)
	if !topKSelectDisabled {
		if k <= topKSelectMax {
			topKSelect(keys, rows, n, k, largest, idx, pos)
		} else {
			topKHeap(keys, rows, n, k, largest, idx, pos)
		}
		vals := takeElems(x, outDims, idx)
		ind := tensor.New(dtype.S32, outDims)
		copy(ind.I32(), pos)
		return TupleValue(ArrayValue(vals), ArrayValue(ind)), nil
	}
	line := make([]int64, n)
	for r := int64(0); r < rows; r++ {
		for i := range line {
			line[i] = r*n + int64(i)
		}
		slices.SortStableFunc(line, func(a, b int64) int {
			if largest {
				a, b = b, a
			}
			switch {
			case keys.less(a, b, true):
				return -1
			case keys.less(b, a, true):
				return 1
			}
			return 0
		})
		for i := int64(0); i < k; i++ {
			idx[r*k+i] = line[i]
			pos[r*k+i] = int32(line[i] - r*n)
		}
	}
	vals := takeElems(x, outDims, idx)
	ind := tensor.New(dtype.S32, outDims)
	copy(ind.I32(), pos)
	return TupleValue(ArrayValue(vals), ArrayValue(ind)), nil
}

// stableSort sorts xs stably by less, using buf (len(xs)) as scratch: a
// bottom-up merge sort over insertion-sorted runs. It calls less once per
// comparison (slices.SortStableFunc needs a three-way result, which costs
// two calls for ties) and O(n log n) times (its in-place merges need
// O(n log² n)), which matters when less runs a comparator computation.
func stableSort(xs, buf []int64, less func(a, b int64) bool) {
	const run = 16
	n := len(xs)
	if n < 2 {
		return
	}
	for lo := 0; lo < n; lo += run {
		hi := min(lo+run, n)
		for i := lo + 1; i < hi; i++ {
			x := xs[i]
			j := i
			for ; j > lo && less(x, xs[j-1]); j-- {
				xs[j] = xs[j-1]
			}
			xs[j] = x
		}
	}
	src, dst := xs, buf[:n]
	for width := run; width < n; width *= 2 {
		for lo := 0; lo < n; lo += 2 * width {
			mid, hi := min(lo+width, n), min(lo+2*width, n)
			i, j, k := lo, mid, lo
			for i < mid && j < hi {
				// Take from the right only when strictly less: stability.
				if less(src[j], src[i]) {
					dst[k] = src[j]
					j++
				} else {
					dst[k] = src[i]
					i++
				}
				k++
			}
			k += copy(dst[k:], src[i:mid])
			copy(dst[k:], src[j:hi])
		}
		src, dst = dst, src
	}
	if &src[0] != &xs[0] {
		copy(xs, src)
	}
}

// topKSelectMax is the largest k topK selects by insertion rather than by
// sorting each row.
const topKSelectMax = 128

// topKSelectDisabled turns the selection off (GOLDTRACE_NO_TOPK_SELECT=1),
// to compare.
var topKSelectDisabled = os.Getenv("GOLDTRACE_NO_TOPK_SELECT") == "1"

// topKSelect is topK's row loop without sorting: the stable sort ranks a
// row's elements by (key, then position) -- a strict total order, as
// positions differ -- so its first k are the k best under that order, in
// order. One pass over the row keeps them in a sorted buffer; an element
// enters when it beats the buffer's worst, which for equal keys it cannot
// (it comes later). Rows run in parallel.
func topKSelect(keys *sortKeys, rows, n, k int64, largest bool, idx []int64, pos []int32) {
	if k == 0 || rows == 0 {
		return
	}
	rank := keys.rank(largest)
	parallelForWork(int(rows), int(rows*n*2), func(lo, hi int) {
		bk := make([]int64, k)
		bi := make([]int64, k)
		for r := int64(lo); r < int64(hi); r++ {
			base := r * n
			m := int64(0)
			for i := int64(0); i < n; i++ {
				v := rank(base + i)
				if m == k {
					if v <= bk[k-1] {
						continue
					}
					m--
				}
				// After every kept key >= v (equal keys came earlier).
				j := m
				for j > 0 && bk[j-1] < v {
					bk[j], bi[j] = bk[j-1], bi[j-1]
					j--
				}
				bk[j], bi[j] = v, i
				m++
			}
			for j := int64(0); j < k; j++ {
				idx[r*k+j] = base + bi[j]
				pos[r*k+j] = int32(bi[j])
			}
		}
	})
}

// rank returns a map from an element to an int64 whose larger values rank
// first: the comparison less(.., .., true) uses, flipped for the smallest.
func (keys *sortKeys) rank(largest bool) func(i int64) int64 {
	return func(i int64) int64 {
		var v int64
		switch {
		case keys.f32 != nil:
			v = totalOrderKey(float64(keys.f32[i]))
		case keys.floats != nil:
			v = totalOrderKey(keys.floats[i])
		case keys.unsigned != nil:
			v = int64(keys.unsigned[i] ^ (1 << 63))
		default:
			v = keys.signed[i]
		}
		if !largest {
			v = ^v
		}
		return v
	}
}

// topKHeap is topKSelect for a large k (jax.lax.top_k with k=1000 had
// sorted every 32768-element row serially, 3.2 s against XLA's 0.16 s): a
// heap of the k best so far under the same strict order (key, then
// position), the worst at its root. An element enters when it beats the
// root, which for an equal key it cannot (it comes later); the heap is then
// emptied worst first into the row's output from the back. Rows run in
// parallel.
func topKHeap(keys *sortKeys, rows, n, k int64, largest bool, idx []int64, pos []int32) {
	if k == 0 || rows == 0 {
		return
	}
	rank := keys.rank(largest)
	parallelForWork(int(rows), int(rows*n*2), func(lo, hi int) {
		hk := make([]int64, k) // keys
		hp := make([]int64, k) // positions in the row
		// worse reports whether heap entry a ranks after entry b.
		worse := func(a, b int64) bool { return hk[a] < hk[b] || hk[a] == hk[b] && hp[a] > hp[b] }
		down := func(j, m int64) {
			for {
				c := 2*j + 1
				if c >= m {
					return
				}
				if c+1 < m && worse(c+1, c) {
					c++
				}
				if !worse(c, j) {
					return
				}
				hk[j], hk[c], hp[j], hp[c] = hk[c], hk[j], hp[c], hp[j]
				j = c
			}
		}
		for r := int64(lo); r < int64(hi); r++ {
			base := r * n
			for i := int64(0); i < k; i++ {
				hk[i], hp[i] = rank(base+i), i
			}
			for j := k/2 - 1; j >= 0; j-- {
				down(j, k)
			}
			if keys.f32 != nil { // rank inlined: the scan is most of the time
				for j, x := range keys.f32[base+k : base+n] {
					v := totalOrderKey(float64(x))
					if !largest {
						v = ^v
					}
					if v > hk[0] {
						hk[0], hp[0] = v, k+int64(j)
						down(0, k)
					}
				}
			} else {
				for i := k; i < n; i++ {
					if v := rank(base + i); v > hk[0] {
						hk[0], hp[0] = v, i
						down(0, k)
					}
				}
			}
			for m := k; m > 0; m-- {
				idx[r*k+m-1] = base + hp[0]
				pos[r*k+m-1] = int32(hp[0])
				hk[0], hp[0] = hk[m-1], hp[m-1]
				down(0, m-1)
			}
		}
	})
}
