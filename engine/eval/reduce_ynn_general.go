package eval

// YNNPACK's f32 sum over any set of reduced dimensions, as XLA:CPU (jaxlib
// 0.10.2) runs it: the row and column kernels of reduce_ynn.go, called the
// way ynn_define_reduce and its slinky schedule call them. Fitted bit for
// bit against jax.jit on ~300 random shapes of 1 to 6 dimensions (4096 to
// 8M elements, any reduced set, extent-1 dimensions included) and the shapes
// the earlier row/column model left out (column blocks of several batches,
// columns wider than 32768, rows past 32768 beside few or many others).
//
// In YNNPACK's dimension order (innermost first), with extent-1 dimensions
// dropped:
//
//  1. Split factors: a tile of 32768 elements is handed out innermost first,
//     split_i = min(extent_i, left), left = max(left/split_i, 1).
//  2. When some reduced dimension is split (split < extent) the reduce is two:
//     a partial reduce whose output keeps every split reduced dimension with
//     extent ceil(extent/split), then a reduce of that over those dimensions.
//     The schedule walks the dimensions outermost first, counting the tasks
//     so far (the product of ceil(extent/split)); a split reduced dimension
//     met while fewer than 2·threads tasks exist is parallel: each tile of it
//     is summed from zero into its own partial. A split reduced dimension met
//     later is serial: it is not tiled at all, the whole extent is summed
//     into partial 0 and its other partials stay zero (and are added anyway).
//     When the reduce's operand is computed in the fusion (a producer slinky
//     schedules inside the reduction's loops: abs(x), y - m, not x*x, which
//     YNNPACK sums as sum_squared of x), every split reduced dimension with
//     no split kept dimension inside it is parallel (batch norm's var over
//     f32[8,28,28,128]; rows of |x| in f32[4,70000]; not |x| in
//     f32[4,8,40000] over axis 1). XLA's CSE decides the uses first:
//     groupnorm's x - m, traced twice, is one value with two users, computed
//     outside.
//  3. The second reduce is a plain one over the partials, from the reduce's
//     init. Its own split factors tile a reduced dimension (one kernel call
//     per tile, in order) only when a kept dimension inner to it is split too
//     (f32[25,40000] over axis 0 adds its 25 rows one at a time; f32[25,32768]
//     sums them in one column-kernel call).
//  4. A kernel pass over a box (make_unary_reduce_impl): innermost first, the
//     reduced dimensions contiguous from the innermost element form k1; the
//     first kept dimensions contiguous in both the operand and the output form
//     n; the next reduced run of uniform stride forms k2; the rest are loops.
//     With k1 = 1 and n contiguous the column kernel sums k2 rows of n
//     columns once; otherwise, for each k2 index in order, the row kernel sums
//     each of the n rows of k1 elements and adds it to the output. The loops'
//     calls add into the output in index order (outermost slowest).
//
// Rows of up to 32768 elements and column blocks of at most 4 chunks are
// the old model's cases, which this reproduces.

import (
	"fmt"
	"strings"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
)

const ynnTileArea = 32768 // elements of f32: YNNPACK's 128 KiB tile

// ynnFloat is an element type YNNPACK sums: f32, or f64 (whose kernels,
// sum_k1_fp64 and sum_kn_fp64, and tile of 128 KiB, 16384 elements, take
// the same schedule).
type ynnFloat interface{ float32 | float64 }

// ynnSumKernels is one element type's YNNPACK sum: its tile and kernels.
type ynnSumKernels[T ynnFloat] struct {
	tile int64                                            // elements in YNNPACK's 128 KiB tile
	row  func([]T) T                                      // one row-kernel call
	grp  func(xs []T, inner, ngroups int, acc0, acc1 []T) // the column kernel's groups of four rows
}

var (
	ynnSum32 = ynnSumKernels[float32]{ynnTileArea, ynnRowKernel, ynnColGroups}
	ynnSum64 = ynnSumKernels[float64]{ynnChunk64, ynnRowKernel64, ynnColGroups64}
)

// ynnTasks is the task count YNNPACK's schedule aims at: twice XLA's
// intra-op threads, 1 when there is one thread (then nothing is parallel).
func ynnTasks() int64 {
	if xlaCPUThreads > 1 {
		return 2 * int64(xlaCPUThreads)
	}
	return 1
}

// ynnBox is a strided view of an array, dimensions innermost first.
type ynnBox struct {
	off  int
	ext  []int64
	strd []int64
}

// ynnSumSplits is step 1: the split factor of each dimension (innermost first).
func ynnSumSplits(ext []int64, tile int64) []int64 {
	s := make([]int64, len(ext))
	left := tile
	for i, e := range ext {
		s[i] = max(min(e, left), 1)
		left = max(left/s[i], 1)
	}
	return s
}

// ynnRowsParallel reports whether YNNPACK sums rows of k elements, beside
// rows others, as chunks of 32768 in partials of their own (step 2) rather
// than in one kernel call.
func ynnRowsParallel(rows, k, tile int64, producer bool) bool {
	return k > tile && (producer || rows < ynnTasks())
}

// ynnProducerOps are the elementwise ops XLA puts in a YNNPACK fusion.
var ynnProducerOps = map[string]bool{
	"add": true, "subtract": true, "multiply": true, "divide": true, "maximum": true, "minimum": true,
	"power": true, "exponential": true, "exponential-minus-one": true, "log": true, "log-plus-one": true,
	"tanh": true, "erf": true, "logistic": true, "sqrt": true, "rsqrt": true, "negate": true, "abs": true,
	"sign": true, "floor": true, "ceil": true, "round-nearest-even": true,
}

// ynnFusedProducer reports whether the operand of the YNNPACK-sized reduce
// r is computed inside r's fusion (step 2): an elementwise op YNNPACK runs
// whose only use is the reduce (through bitcast reshapes), where a*a counts
// as a itself (YNNPACK's sum_squared reads a).
func ynnFusedProducer(r *hlo.Instruction, uses func(*hlo.Instruction) int) bool {
	x := r.Operands[0]
	through := func() {
		for (x.Opcode == "reshape" || x.Opcode == "bitcast") && len(x.Operands) == 1 && uses(x) == 1 {
			x = x.Operands[0]
		}
	}
	through()
	want := 1
	if x.Opcode == "multiply" && len(x.Operands) == 2 && x.Operands[0] == x.Operands[1] && uses(x) == 1 {
		x, want = x.Operands[0], 2 // read twice by the square
	}
	if uses(x) != want || !x.Shape.IsArray() || x.Shape.Elem != dtype.F32 && x.Shape.Elem != dtype.F64 {
		return false
	}
	return ynnProducerOps[x.Opcode] || x.Opcode == "custom-call" && x.CustomCallTarget == YNNTarget
}

// computationUses counts each instruction's operand uses in c (the root's
// value counting as one more) after XLA's CSE: instructions computing the
// same value (cseKey) share their uses.
func computationUses(c *hlo.Computation) func(*hlo.Instruction) int {
	n := map[string]int{}
	keys := map[*hlo.Instruction]string{}
	if c != nil {
		for _, in := range c.Instructions {
			for _, o := range in.Operands {
				n[cseKey(o, keys)]++
			}
		}
		if c.Root != nil {
			n[cseKey(c.Root, keys)]++
		}
	}
	return func(x *hlo.Instruction) int { return n[cseKey(x, keys)] }
}

// cseKey names what x computes as far as XLA's simplifier and CSE merge
// instructions (elementwise ops, broadcasts, reshapes, fast reduces of the
// same operands; extent-1 dimensions ignored, so jnp.var's keepdims mean is
// its caller's mean); anything else is itself alone.
func cseKey(x *hlo.Instruction, memo map[*hlo.Instruction]string) string {
	if v, ok := memo[x]; ok {
		return v
	}
	v := fmt.Sprintf("#%p", x)
	red := ""
	if x.Opcode == "reduce" {
		red = fastReducer(x.ToApply())
	}
	// Same elements in the same order: reshapes and broadcasts that only
	// add or drop extent-1 dimensions.
	sameElems := len(x.Operands) == 1 && x.Shape.IsArray() && x.Operands[0].Shape.IsArray() &&
		equalDims(nonUnit(x.Shape.Dims), nonUnit(x.Operands[0].Shape.Dims)) &&
		(x.Opcode == "reshape" || x.Opcode == "bitcast" || x.Opcode == "broadcast" && sortedDims(x.Dimensions))
	switch {
	case sameElems:
		v = cseKey(x.Operands[0], memo)
	case x.Opcode == "constant" && x.Literal != nil && x.Literal.Tensor != nil && len(x.Literal.Tensor.Data) <= 64:
		v = fmt.Sprintf("const:%v%v%x", x.Shape.Elem, nonUnit(x.Shape.Dims), x.Literal.Tensor.Data)
	case (ynnProducerOps[x.Opcode] || x.Opcode == "broadcast" || x.Opcode == "convert" || x.Opcode == "reshape" ||
		x.Opcode == "bitcast" || x.Opcode == "transpose" || red != "") &&
		(len(x.Called) == 0 || red != "") && x.Shape.IsArray():
		var b strings.Builder
		dims := x.Dimensions
		if x.Opcode == "broadcast" && len(x.Operands) == 1 {
			dims = unitFreeBroadcast(x.Operands[0].Shape.Dims, x.Shape.Dims, x.Dimensions)
		}
		if red != "" && len(x.Operands) > 0 {
			dims = unitFreeReduced(x.Operands[0].Shape.Dims, x.Dimensions)
		}
		fmt.Fprintf(&b, "%s%s:%v%v%v(", x.Opcode, red, x.Shape.Elem, nonUnit(x.Shape.Dims), dims)
		for _, o := range x.Operands {
			b.WriteString(cseKey(o, memo))
			b.WriteByte(',')
		}
		b.WriteByte(')')
		v = b.String()
	}
	memo[x] = v
	return v
}

func nonUnit(dims []int64) []int64 {
	var out []int64
	for _, d := range dims {
		if d != 1 {
			out = append(out, d)
		}
	}
	return out
}

func sortedDims(d []int64) bool {
	for i := 1; i < len(d); i++ {
		if d[i] <= d[i-1] {
			return false
		}
	}
	return true
}

// unitFreeBroadcast is a broadcast's dimension map with extent-1
// dimensions of operand and result left out (result dims renumbered).
func unitFreeBroadcast(opDims, outDims, dims []int64) []int64 {
	renum := make([]int64, len(outDims))
	n := int64(0)
	for i, e := range outDims {
		renum[i] = n
		if e != 1 {
			n++
		}
	}
	var out []int64
	for i, d := range dims {
		if i < len(opDims) && opDims[i] != 1 && int(d) < len(outDims) {
			out = append(out, renum[d])
		}
	}
	return out
}

// unitFreeReduced is a reduce's reduced dimensions with the operand's
// extent-1 dimensions left out (renumbered).
func unitFreeReduced(opDims, dims []int64) []int64 {
	var out []int64
	for _, d := range dims {
		if int(d) >= len(opDims) || opDims[d] == 1 {
			continue
		}
		n := int64(0)
		for i := int64(0); i < d; i++ {
			if opDims[i] != 1 {
				n++
			}
		}
		out = append(out, n)
	}
	return out
}

// ynnProducerOf is ynnFusedProducer of r, cached per evaluator.
func (ev *Evaluator) ynnProducerOf(r *hlo.Instruction) bool {
	if v, ok := ev.ynnProducer.Load(r); ok {
		return v.(bool)
	}
	p := ynnFusedProducer(r, computationUses(r.Parent))
	ev.ynnProducer.Store(r, p)
	return p
}

// ynnSumGeneral is init plus the sum of x (row-major dims) over the reduced
// dimensions in YNNPACK's order, into out (the kept dimensions, row-major).
func ynnSumGeneral(xs []float32, dims []int64, reduced []bool, init float32, out []float32, producer bool) {
	ynnSumGeneralT(ynnSum32, xs, dims, reduced, init, out, producer)
}

// ynnSumGeneralT is ynnSumGeneral with kernels ks.
func ynnSumGeneralT[T ynnFloat](ks ynnSumKernels[T], xs []T, dims []int64, reduced []bool, init T, out []T, producer bool) {
	// YNNPACK's order, extent-1 dimensions dropped.
	var ext, strd []int64
	var red []bool
	st := int64(1)
	for d := len(dims) - 1; d >= 0; d-- {
		if dims[d] != 1 {
			ext, strd, red = append(ext, dims[d]), append(strd, st), append(red, reduced[d])
		}
		st *= dims[d]
	}
	for i := range out {
		out[i] = init
	}
	if len(out) == 0 || len(xs) == 0 {
		return
	}
	ostr := denseOutStrides(ext, red)
	split := ynnSumSplits(ext, ks.tile)
	part := make([]bool, len(ext))
	var anySplit bool
	tasks := int64(1)
	keptSplitInside := make([]bool, len(ext)) // a kept dimension inner to i is split
	for i := 1; i < len(ext); i++ {
		keptSplitInside[i] = keptSplitInside[i-1] || !red[i-1] && split[i-1] < ext[i-1]
	}
	for i := len(ext) - 1; i >= 0; i-- {
		if red[i] && split[i] < ext[i] {
			anySplit = true
			part[i] = producer && !keptSplitInside[i] || tasks < ynnTasks()
		}
		tasks *= (ext[i] + split[i] - 1) / split[i]
	}
	box := ynnBox{0, ext, strd}
	if !anySplit {
		ynnKernelPass(ks, xs, box, red, out, ostr, 0, true)
		return
	}
	// The partials: kept dimensions, and each split reduced dimension with
	// extent ceil(extent/split) (serial ones holding zeros past index 0).
	var mext []int64
	var mred []bool
	mpos := make([]int, len(ext)) // index into mext, -1 when dropped
	for i, e := range ext {
		switch {
		case !red[i]:
			mpos[i] = len(mext)
			mext, mred = append(mext, e), append(mred, false)
		case split[i] < e:
			mpos[i] = len(mext)
			mext, mred = append(mext, (e+split[i]-1)/split[i]), append(mred, true)
		default:
			mpos[i] = -1
		}
	}
	mstr := make([]int64, len(mext))
	mn := int64(1)
	for i := range mext {
		mstr[i] = mn
		mn *= mext[i]
	}
	mid := make([]T, mn)
	// The stage-1 output seen by one tile: kept dimensions at mid's strides.
	cstr := make([]int64, len(ext))
	for i := range ext {
		if !red[i] {
			cstr[i] = mstr[mpos[i]]
		}
	}
	var pdims []int
	ntiles := int64(1)
	for i := range ext {
		if part[i] {
			pdims = append(pdims, i)
			ntiles *= mext[mpos[i]]
		}
	}
	tile := func(t int64, parallel bool) {
		sub := ynnBox{0, append([]int64(nil), ext...), strd}
		coff := int64(0)
		for _, i := range pdims {
			n := mext[mpos[i]]
			p := t % n
			t /= n
			sub.off += int(p * split[i] * strd[i])
			sub.ext[i] = min(split[i], ext[i]-p*split[i])
			coff += p * mstr[mpos[i]]
		}
		ynnKernelPass(ks, xs, sub, red, mid[coff:], cstr, 0, parallel)
	}
	if ntiles >= 4 {
		parallelForWork(int(ntiles), len(xs), func(lo, hi int) {
			sseAfterAVX()
			for t := lo; t < hi; t++ {
				tile(int64(t), false)
			}
		})
	} else {
		for t := int64(0); t < ntiles; t++ {
			tile(t, true)
		}
	}
	// The second reduce over the partials, tiled by its own split factors
	// where a kept dimension inner to a reduced one is split.
	msplit := ynnSumSplits(mext, ks.tile)
	var tdims []int
	keptSplit := false
	for i := range mext {
		if !mred[i] && msplit[i] < mext[i] {
			keptSplit = true
		}
		if mred[i] && msplit[i] < mext[i] && keptSplit {
			tdims = append(tdims, i)
		}
	}
	mostr := denseOutStrides(mext, mred)
	if len(tdims) == 0 {
		ynnKernelPass(ks, mid, ynnBox{0, mext, mstr}, mred, out, mostr, 0, true)
		return
	}
	// Tiles in index order, outermost slowest: tdims is innermost first.
	idx := make([]int64, len(tdims))
	for {
		sub := ynnBox{0, append([]int64(nil), mext...), mstr}
		for j, i := range tdims {
			sub.off += int(idx[j] * msplit[i] * mstr[i])
			sub.ext[i] = min(msplit[i], mext[i]-idx[j]*msplit[i])
		}
		ynnKernelPass(ks, mid, sub, mred, out, mostr, 0, true)
		j := 0
		for ; j < len(tdims); j++ {
			i := tdims[j]
			if idx[j]++; idx[j]*msplit[i] < mext[i] {
				break
			}
			idx[j] = 0
		}
		if j == len(tdims) {
			return
		}
	}
}

// denseOutStrides is the stride of each kept dimension in a dense row-major
// output of the kept dimensions (0 for reduced ones); dims innermost first.
func denseOutStrides(ext []int64, red []bool) []int64 {
	s := make([]int64, len(ext))
	n := int64(1)
	for i, e := range ext {
		if !red[i] {
			s[i] = n
			n *= e
		}
	}
	return s
}

// ynnLoop is a dimension a kernel pass loops over: extent and strides in
// the operand and the output.
type ynnLoop struct{ ext, as, cs int64 }

// ynnKernelPass adds the sum of box over its reduced dimensions into c
// (c[coff + Σ index·cstr] for the kept ones) as one call of YNNPACK's
// reduce implementation does (step 4).
func ynnKernelPass[T ynnFloat](ks ynnSumKernels[T], xs []T, box ynnBox, red []bool, c []T, cstr []int64, coff int, parallel bool) {
	k1, n, k2 := int64(1), int64(1), int64(1)
	var sn, sk2 int64
	var keptLoops, redLoops []ynnLoop
	for i, e := range box.ext {
		s := box.strd[i]
		switch {
		case e == 1:
		case red[i] && k1 == s:
			k1 *= e
		case red[i] && sk2*k2 == s:
			k2 *= e
		case red[i] && k2 == 1:
			k2, sk2 = e, s
		case red[i]:
			redLoops = append(redLoops, ynnLoop{e, s, 0})
		case cstr[i] == n && sn*n == s:
			n *= e
		case cstr[i] == n && n == 1:
			n, sn = e, s
		default:
			keptLoops = append(keptLoops, ynnLoop{e, s, cstr[i]})
		}
	}
	cols := k1 == 1 && (n == 1 || sn == 1)
	if cols {
		k1, sn, k2, sk2 = k2, sk2, 1, 0
	}
	// Tasks: each kept-loop index, by blocks of the n outputs.
	const colTile = 1024
	nb := int64(1)
	if cols {
		nb = (n + colTile - 1) / colTile
	}
	nk := int64(1)
	for _, l := range keptLoops {
		nk *= l.ext
	}
	nr := int64(1)
	for _, l := range redLoops {
		nr *= l.ext
	}
	run := func(lo, hi int) {
		var s *ynnColScratchT[T]
		if cols {
			s = new(ynnColScratchT[T])
		}
		sseAfterAVX()
		for t := int64(lo); t < int64(hi); t++ {
			kt, b := t/nb, t%nb
			ab, cb := int64(box.off), int64(coff)
			for _, l := range keptLoops {
				q := kt % l.ext
				kt /= l.ext
				ab += q * l.as
				cb += q * l.cs
			}
			n0, n1 := int64(0), n
			if cols {
				n0, n1 = b*colTile, min((b+1)*colTile, n)
			}
			for r := int64(0); r < nr; r++ {
				a := ab
				q := r
				for _, l := range redLoops {
					a += (q % l.ext) * l.as
					q /= l.ext
				}
				for j := int64(0); j < k2; j++ {
					aj := a + j*sk2
					if cols {
						ynnColKernelT(ks.grp, xs[aj:], int(k1), int(sn), 0, int(n0), c[cb+n0:cb+n1], s)
						continue
					}
					for i := n0; i < n1; i++ {
						ri := aj + i*sn
						c[cb+i] += ks.row(xs[ri : ri+k1])
					}
				}
			}
		}
	}
	tasks := nk * nb
	if !parallel {
		run(0, int(tasks))
		return
	}
	work := int(nk * nr * k2 * k1 * n)
	if tasks == 1 && !cols && n >= 4 {
		// One output block: split its rows instead.
		parallelForWork(int(n), work, func(lo, hi int) {
			ynnKernelRows(ks, xs, box.off, k1, k2, sk2, sn, redLoops, c[coff:], int64(lo), int64(hi))
		})
		return
	}
	parallelForWork(int(tasks), work, run)
}

// ynnKernelRows is ynnKernelPass's row-kernel loop for outputs lo..hi of a
// pass without kept loops.
func ynnKernelRows[T ynnFloat](ks ynnSumKernels[T], xs []T, off int, k1, k2, sk2, sn int64, redLoops []ynnLoop, c []T, lo, hi int64) {
	sseAfterAVX()
	nr := int64(1)
	for _, l := range redLoops {
		nr *= l.ext
	}
	for r := int64(0); r < nr; r++ {
		a := int64(off)
		q := r
		for _, l := range redLoops {
			a += (q % l.ext) * l.as
			q /= l.ext
		}
		for j := int64(0); j < k2; j++ {
			aj := a + j*sk2
			for i := lo; i < hi; i++ {
				ri := aj + i*sn
				c[i] += ks.row(xs[ri : ri+k1])
			}
		}
	}
}
