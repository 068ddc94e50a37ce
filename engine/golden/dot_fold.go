package golden

import (
	"os"
	"slices"

	"goldtrace/engine/eval"
	"goldtrace/engine/hlo"
)

// dotFoldOff turns foldDotTransposes off (GOLDTRACE_NO_DOT_FOLD=1), to
// compare.
var dotFoldOff = os.Getenv("GOLDTRACE_NO_DOT_FOLD") == "1"

// foldDotTransposes lets each f32 or f64 dot that XLA:CPU hands to YNNPACK read a
// transpose feeding it (and nothing else) from the transpose's source, its
// dimension numbers mapped through the permutation, as XLA's
// TransposeFolding does, when the folded dot has the same YNNPACK plan
// (eval.SameYNNDot): the GEMM reads the source in place, so the transposed
// copy is never made (`x @ w.T`, `q @ k.swapaxes(-1, -2)`: a full copy of
// the weight or of K per call otherwise). The sums are the plan's either
// way, so the bits do not change.
func foldDotTransposes(c *hlo.Computation) {
	if dotFoldOff {
		return
	}
	uses := useCounts(c)
	for _, d := range c.Instructions {
		if d.Opcode != "dot" || len(d.Operands) != 2 || d.DotDims == nil {
			continue
		}
		for side := 0; side < 2; side++ {
			t := d.Operands[side]
			if t.Opcode != "transpose" || uses[t] != 1 || len(t.Operands) != 1 || len(t.Dimensions) != len(t.Shape.Dims) {
				continue
			}
			batch, contracting := d.DotDims.LhsBatch, d.DotDims.LhsContracting
			if side == 1 {
				batch, contracting = d.DotDims.RhsBatch, d.DotDims.RhsContracting
			}
			if !freeDimsKeepOrder(t, batch, contracting) {
				continue // the result's dims would come out in another order
			}
			folded := *d
			folded.Operands = slices.Clone(d.Operands)
			folded.Operands[side] = t.Operands[0]
			dims := *d.DotDims
			through := func(ds []int64) []int64 {
				out := make([]int64, len(ds))
				for i, x := range ds {
					out[i] = t.Dimensions[x]
				}
				return out
			}
			if side == 0 {
				dims.LhsBatch, dims.LhsContracting = through(d.DotDims.LhsBatch), through(d.DotDims.LhsContracting)
			} else {
				dims.RhsBatch, dims.RhsContracting = through(d.DotDims.RhsBatch), through(d.DotDims.RhsContracting)
			}
			folded.DotDims = &dims
			if !eval.SameYNNDot(d, &folded) {
				continue
			}
			d.Operands, d.DotDims = folded.Operands, folded.DotDims
			uses[t]--
		}
	}
}

// freeDimsKeepOrder reports whether the dims of transpose t that are
// neither batch nor contracting dims of the dot reading it come, in t's
// order, from ascending dims of t's source: the dot's result lists an
// operand's free dims in ascending order, so folding t must not reorder
// them.
func freeDimsKeepOrder(t *hlo.Instruction, batch, contracting []int64) bool {
	last := int64(-1)
	for d, src := range t.Dimensions {
		if slices.Contains(batch, int64(d)) || slices.Contains(contracting, int64(d)) {
			continue
		}
		if src < last {
			return false
		}
		last = src
	}
	return true
}
