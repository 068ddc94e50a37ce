package eval

// XLA:CPU's summation order for add-reductions, measured against jax.jit on
// CPU (jaxlib 0.10.2; see testdata/gen_reduce_order.py):
//
//   - Before fusion, TreeReductionRewriter replaces every non-variadic reduce
//     whose reduced dimensions are not all <= 32 long by a reduce-window (each
//     reduced dimension gets window = stride = min(size, 32), SAME padding:
//     the low pad is half the total, rounded down) followed by the same reduce
//     over the window results, and repeats until no reduced dimension is
//     longer than 32. Every window starts from the init value (so a non-zero
//     init is added once per window) and skips the padding.
//   - The reduce-window and the final short reduce each fold their elements
//     one after the other, starting from the init value.
//   - f32 and f64 add-reductions touching 4096 or more elements are handed to
//     YNNPACK instead (16-lane vector accumulators, blocked, with its own
//     horizontal reduction; reduce_ynn.go reproduces the f32 ones). Complex
//     types never go there.
//   - A reduce over several non-trivial dimensions that are each <= 32 is
//     vectorised by LLVM across the outer reduced dimension (for example the
//     rows of a [4,3] full sum are added as (r0+r2)+(r1+r3)), in ways that
//     depend on the extents.
//
// We reproduce the first two rules for one non-trivial reduced dimension and
// leave the YNNPACK and multi-dimension cases to the row-major fold.

import (
	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

const (
	// xlaTreeWindow is the window TreeReductionRewriter uses on XLA:CPU.
	xlaTreeWindow = 32
	// ynnMinElements is the operand size from which XLA:CPU runs f32 and f64
	// add-reductions in YNNPACK.
	ynnMinElements = 4096
)

// reduceAddXLAOrder runs a single-input add-reduction in XLA:CPU's order, or
// returns nil when that order is not known (other reducers or types, several
// non-trivial reduced dimensions, YNNPACK-sized float operands). x holds
// runs of runLen elements, one per result element, in row-major order of the
// reduced dimensions of the original operand inDims.
//
// Products follow the same tree at every size: YNNPACK takes sums (and
// max/min) only, so TreeReductionRewriter's windows are XLA's order for
// multiply-reductions of any length (measured: jnp.prod over rows of 33 to
// 100000 elements, which a left-to-right fold missed on nearly every row).
func reduceAddXLAOrder(c *hlo.Computation, x, init *tensor.Tensor, inDims, reduced, outDims []int64, runLen int64) *tensor.Tensor {
	op := fastReducer(c)
	if op != "add" && op != "multiply" || !singleReducedDim(inDims, reduced) {
		return nil
	}
	if op == "add" && (x.Type == dtype.F32 || x.Type == dtype.F64) && tensor.NumElements(inDims) >= ynnMinElements {
		return nil
	}
	mul := op == "multiply"
	out := tensor.New(x.Type, outDims)
	switch x.Type {
	case dtype.F32:
		treeSumRuns(out.F32(), x.F32(), init.F32()[0], int(runLen), pick(mul, foldProduct[float32], foldSum[float32]))
	case dtype.F64:
		treeSumRuns(out.F64(), x.F64(), init.F64()[0], int(runLen), pick(mul, foldProduct[float64], foldSum[float64]))
	case dtype.C64:
		treeSumRuns(out.C64(), x.C64(), init.C64()[0], int(runLen), pick(mul, foldProductXLA[complex64], foldSum[complex64]))
	case dtype.C128:
		treeSumRuns(out.C128(), x.C128(), init.C128()[0], int(runLen), pick(mul, foldProductXLA[complex128], foldSum[complex128]))
	default:
		return nil
	}
	return out
}

// singleReducedDim reports whether at most one reduced dimension is longer
// than 1, the case whose XLA:CPU order does not depend on vectorisation.
func singleReducedDim(inDims, reduced []int64) bool {
	n := 0
	for _, d := range reduced {
		if d < 0 || int(d) >= len(inDims) {
			return false
		}
		if inDims[d] > 1 {
			n++
		}
	}
	return n <= 1
}

type addable interface {
	float32 | float64 | complex64 | complex128
}

func pick[F any](cond bool, a, b F) F {
	if cond {
		return a
	}
	return b
}

// treeSumRuns folds each run of rl elements of xs into o in XLA:CPU's
// order, fold folding each window.
func treeSumRuns[T addable](o, xs []T, init T, rl int, fold func(T, []T) T) {
	parallelForWork(len(o), len(o)*rl, func(lo, hi int) {
		scratch := make([]T, (rl+xlaTreeWindow-1)/xlaTreeWindow)
		for g := lo; g < hi; g++ {
			o[g] = treeFold(init, xs[g*rl:(g+1)*rl], scratch, fold)
		}
	})
}

// foldProductXLA multiplies complex values as XLA:CPU's reducer does, with
// the elementwise multiply's arithmetic (mulComplexXLA).
func foldProductXLA[C cplx](acc C, xs []C) C {
	for _, v := range xs {
		acc = mulComplexXLA(acc, v)
	}
	return acc
}

// foldSum and foldProduct fold xs into acc left to right.
func foldSum[T addable](acc T, xs []T) T {
	for _, v := range xs {
		acc += v
	}
	return acc
}

// foldProduct flushes each partial product that is subnormal to a zero of
// its sign, as XLA:CPU's reduce loop does under FTZ (1e-20 * 1e-20 * 1e30 is
// 0, not 1e-10); the reduce's operands and result are flushed around it
// (flushingArithmetic).
func foldProduct[T float32 | float64](acc T, xs []T) T {
	tiny := T(0x1p-126)
	if _, wide := any(acc).(float64); wide {
		tiny = T(0x1p-1022)
	}
	for _, v := range xs {
		acc *= v
		if acc < tiny && acc > -tiny && acc != 0 {
			acc *= 0
		}
	}
	return acc
}

// treeFold folds xs into init in the order XLA:CPU's TreeReductionRewriter
// produces: runs of at most 32 elements are folded one by one from init;
// longer ones are cut into windows of 32 (SAME padding), each folded from
// init, and the window results are reduced the same way. scratch must hold
// ceil(len(xs)/32) elements.
func treeFold[T addable](init T, xs []T, scratch []T, fold func(T, []T) T) T {
	n := len(xs)
	if n <= xlaTreeWindow {
		return fold(init, xs)
	}
	src := xs
	for n > xlaTreeWindow {
		nw := (n + xlaTreeWindow - 1) / xlaTreeWindow
		lo := (nw*xlaTreeWindow - n) / 2
		// Window k reads src[32k-lo, 32k-lo+32) and is written to scratch[k];
		// in the later rounds src is scratch itself, which is safe because
		// every window starts at or after the slot it is written to.
		for k := 0; k < nw; k++ {
			a, b := max(k*xlaTreeWindow-lo, 0), min(k*xlaTreeWindow-lo+xlaTreeWindow, n)
			scratch[k] = fold(init, src[a:b])
		}
		src, n = scratch, nw
	}
	return fold(init, src[:n])
}
