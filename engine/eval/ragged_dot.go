package eval

import (
	"fmt"

	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func init() { Register("ragged-dot", evalRaggedDot) }

// evalRaggedDot computes ragged-dot the way XLA's RaggedDotRewriter (and
// jax's own CPU lowering) does: the ragged operand is expanded with a leading
// group dimension, each group's slice keeping only the elements inside the
// group's range of the ragged dimension and zero elsewhere, and an ordinary
// dot then contracts (mode 1) or batches (mode 2) over that group dimension.
// Rows past the last group therefore come out zero. Doing the dense product
// rather than one small product per group keeps XLA's arithmetic: there the
// zeros also meet the other groups' matrices, so an inf in one makes NaN.
func evalRaggedDot(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if len(args) != 3 || args[0].T == nil || args[1].T == nil || args[2].T == nil {
		return Value{}, fmt.Errorf("ragged-dot takes three array operands")
	}
	lhs, rhs, gs := args[0].T, args[1].T, args[2].T
	d := in.DotDims
	if d == nil {
		d = &hlo.DotDimensionNumbers{}
	}
	l, err := hlo.ResolveRaggedDot(lhs.Rank(), d, in.RaggedDims)
	if err != nil {
		return Value{}, err
	}
	if !gs.Type.IsInteger() || gs.Rank() == 0 {
		return Value{}, fmt.Errorf("ragged-dot group_sizes must be an integer array, has %v", gs)
	}
	// Validates the dot dims before the rhs ragged dim is looked up by them.
	if _, err := planDot(lhs.Dims, rhs.Dims, d); err != nil {
		return Value{}, err
	}
	sizes := toI64s(gs)
	shift := func(v []int64) []int64 {
		out := make([]int64, len(v))
		for i, x := range v {
			out[i] = x + 1
		}
		return out
	}
	var nd hlo.DotDimensionNumbers
	switch l.Mode {
	case hlo.RaggedBatch:
		nd = *d
	case hlo.RaggedNonContracting:
		if lhs, err = expandGroups(lhs, l.LhsRagged, l.LhsPrefix, gs.Dims, sizes); err != nil {
			return Value{}, err
		}
		nd = hlo.DotDimensionNumbers{
			LhsBatch: shift(d.LhsBatch), RhsBatch: d.RhsBatch,
			LhsContracting: append(shift(d.LhsContracting), 0),
			RhsContracting: append(append([]int64{}, d.RhsContracting...), in.RaggedDims.RhsGroupDims[0]),
		}
	case hlo.RaggedContracting:
		if lhs, err = expandGroups(lhs, l.LhsRagged, l.LhsPrefix, gs.Dims, sizes); err != nil {
			return Value{}, err
		}
		rr := hlo.RhsRaggedDim(d, l.LhsRagged)
		if rhs, err = expandGroups(rhs, rr, hlo.RhsPrefix(d, l.LhsRagged), gs.Dims, sizes); err != nil {
			return Value{}, err
		}
		nd = hlo.DotDimensionNumbers{
			LhsBatch: append([]int64{0}, shift(d.LhsBatch)...), RhsBatch: append([]int64{0}, shift(d.RhsBatch)...),
			LhsContracting: shift(d.LhsContracting), RhsContracting: shift(d.RhsContracting),
		}
	}
	dot := *in
	dot.Opcode, dot.DotDims, dot.RaggedDims = "dot", &nd, nil
	return evalDot(ev, &dot, []Value{ArrayValue(lhs), ArrayValue(rhs)})
}

// expandGroups returns t with a new leading dimension of one slice per group:
// slice g holds t's elements whose index along ragged lies in group g's range
// [sum of earlier sizes, that plus size g) and zeros elsewhere. group_sizes
// (sizes, with dims gsDims) is either [G], shared by every element, or
// [prefix..., G], indexed by t's dims listed in prefix.
func expandGroups(t *tensor.Tensor, ragged int64, prefix []int64, gsDims []int64, sizes []int64) (*tensor.Tensor, error) {
	g := gsDims[len(gsDims)-1]
	if len(gsDims) > 1 {
		if len(gsDims) != len(prefix)+1 {
			return nil, fmt.Errorf("ragged-dot group_sizes has dims %v but the operand has %d prefix dims", gsDims, len(prefix))
		}
		for i, p := range prefix {
			if t.Dims[p] != gsDims[i] {
				return nil, fmt.Errorf("ragged-dot group_sizes dim %d is %d, operand dim %d is %d", i, gsDims[i], p, t.Dims[p])
			}
		}
	} else {
		prefix = nil
	}
	// Exclusive and inclusive prefix sums per group_sizes row.
	starts, ends := make([]int64, len(sizes)), make([]int64, len(sizes))
	for row := int64(0); row < int64(len(sizes)); row += g {
		var acc int64
		for j := row; j < row+g; j++ {
			starts[j] = acc
			acc += sizes[j]
			ends[j] = acc
		}
	}
	out := tensor.New(t.Type, append([]int64{g}, t.Dims...))
	n := t.NumElements()
	sz := int64(t.Type.Size())
	strides := tensor.Strides(t.Dims)
	gsStrides := tensor.Strides(gsDims[:len(prefix)])
	for i := int64(0); i < n; i++ {
		r := (i / strides[ragged]) % t.Dims[ragged]
		var row int64
		for j, p := range prefix {
			row += (i / strides[p]) % t.Dims[p] * gsStrides[j]
		}
		for j := int64(0); j < g; j++ {
			if starts[row*g+j] <= r && r < ends[row*g+j] {
				copy(out.Data[(j*n+i)*sz:(j*n+i+1)*sz], t.Data[i*sz:(i+1)*sz])
			}
		}
	}
	return out, nil
}
