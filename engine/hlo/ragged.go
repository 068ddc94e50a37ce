package hlo

import (
	"fmt"
	"slices"
)

// RaggedDotMode says which kind of lhs dimension a ragged-dot splits into groups.
type RaggedDotMode int

// The three ragged-dot modes. A ragged free (non-contracting) dimension picks,
// per row, the rhs matrix of the row's group along the rhs group dimension; a
// ragged contracting dimension gives every group its own partial contraction,
// stacked along a new leading result dimension; a ragged batch dimension
// makes the op an ordinary dot.
const (
	RaggedNonContracting RaggedDotMode = iota
	RaggedContracting
	RaggedBatch
)

// RaggedDotLayout is a ragged-dot's attributes resolved against its lhs rank.
type RaggedDotLayout struct {
	Mode RaggedDotMode
	// LhsRagged is the lhs dimension split into groups.
	LhsRagged int64
	// LhsPrefix lists the lhs dimensions that index group_sizes' leading
	// dimensions when it has more than one: the batch dimensions, then the
	// free (mode 1) or contracting (mode 2) dimensions before LhsRagged, in
	// the order the dimension numbers list them.
	LhsPrefix []int64
}

// ResolveRaggedDot classifies a ragged-dot from its dot and ragged dimension
// numbers and the lhs rank, as jax and XLA's RaggedDotRewriter do.
func ResolveRaggedDot(lhsRank int, d *DotDimensionNumbers, r *RaggedDotDimensionNumbers) (RaggedDotLayout, error) {
	var l RaggedDotLayout
	if d == nil {
		d = &DotDimensionNumbers{}
	}
	if r == nil || len(r.LhsRaggedDims) != 1 {
		return l, fmt.Errorf("ragged-dot needs exactly one lhs_ragged_dims entry")
	}
	rd := r.LhsRaggedDims[0]
	if rd < 0 || rd >= int64(lhsRank) {
		return l, fmt.Errorf("lhs_ragged_dims %d out of range for lhs rank %d", rd, lhsRank)
	}
	l.LhsRagged = rd
	l.LhsPrefix = slices.Clone(d.LhsBatch)
	switch {
	case slices.Contains(d.LhsContracting, rd):
		l.Mode = RaggedContracting
		l.LhsPrefix = append(l.LhsPrefix, d.LhsContracting[:slices.Index(d.LhsContracting, rd)]...)
	case slices.Contains(d.LhsBatch, rd):
		l.Mode = RaggedBatch
		l.LhsPrefix = slices.Clone(d.LhsBatch[:slices.Index(d.LhsBatch, rd)])
	default:
		l.Mode = RaggedNonContracting
		for i := int64(0); i < rd; i++ {
			if !slices.Contains(d.LhsBatch, i) && !slices.Contains(d.LhsContracting, i) {
				l.LhsPrefix = append(l.LhsPrefix, i)
			}
		}
	}
	if want := l.Mode == RaggedNonContracting; want != (len(r.RhsGroupDims) == 1) || (!want && len(r.RhsGroupDims) != 0) {
		if want {
			return l, fmt.Errorf("ragged-dot with a ragged free lhs dimension needs exactly one rhs_group_dims entry, has %d", len(r.RhsGroupDims))
		}
		return l, fmt.Errorf("ragged-dot with a ragged contracting or batch lhs dimension takes no rhs_group_dims, has %v", r.RhsGroupDims)
	}
	return l, nil
}

// RhsRaggedDim is the rhs contracting dimension paired with a mode-2
// ragged-dot's ragged lhs dimension.
func RhsRaggedDim(d *DotDimensionNumbers, lhsRagged int64) int64 {
	return d.RhsContracting[slices.Index(d.LhsContracting, lhsRagged)]
}

// RhsPrefix is LhsPrefix's rhs counterpart for mode 2: the rhs batch
// dimensions, then the rhs contracting dimensions paired with the lhs
// contracting dimensions listed before the ragged one.
func RhsPrefix(d *DotDimensionNumbers, lhsRagged int64) []int64 {
	i := slices.Index(d.LhsContracting, lhsRagged)
	return append(slices.Clone(d.RhsBatch), d.RhsContracting[:i]...)
}

// inferRaggedDot is dot's rule on lhs and rhs without its group dimension,
// with a leading group dimension in mode 2, after checking group_sizes.
func inferRaggedDot(in *Instruction, lhs, rhs, gs Shape) (Shape, error) {
	d := in.DotDims
	if d == nil {
		d = &DotDimensionNumbers{}
	}
	l, err := ResolveRaggedDot(len(lhs.Dims), d, in.RaggedDims)
	if err != nil {
		return Shape{}, err
	}
	if !gs.Elem.IsInteger() || len(gs.Dims) == 0 {
		return Shape{}, fmt.Errorf("ragged-dot group_sizes must be an integer array of rank >= 1, has shape %v", gs)
	}
	g := gs.Dims[len(gs.Dims)-1]
	if len(gs.Dims) > 1 {
		want := make([]int64, 0, len(l.LhsPrefix)+1)
		for _, p := range l.LhsPrefix {
			want = append(want, lhs.Dims[p])
		}
		if want = append(want, g); !slices.Equal(want, gs.Dims) {
			return Shape{}, fmt.Errorf("ragged-dot group_sizes has dims %v, want %v or [%d]", gs.Dims, want, g)
		}
	}
	dd := *d
	if l.Mode == RaggedNonContracting {
		gd := in.RaggedDims.RhsGroupDims[0]
		if gd < 0 || gd >= int64(len(rhs.Dims)) || slices.Contains(d.RhsBatch, gd) || slices.Contains(d.RhsContracting, gd) {
			return Shape{}, fmt.Errorf("ragged-dot rhs_group_dims %d must be a free dimension of rhs %v", gd, rhs)
		}
		if rhs.Dims[gd] != g {
			return Shape{}, fmt.Errorf("ragged-dot rhs group dimension has size %d, group_sizes has %d groups", rhs.Dims[gd], g)
		}
		// Drop the group dimension: rhs loses it and later dims shift down.
		shift := func(v []int64) []int64 {
			out := make([]int64, len(v))
			for i, x := range v {
				out[i] = x
				if x > gd {
					out[i]--
				}
			}
			return out
		}
		dd.RhsBatch, dd.RhsContracting = shift(d.RhsBatch), shift(d.RhsContracting)
		rhs.Dims = slices.Delete(slices.Clone(rhs.Dims), int(gd), int(gd)+1)
	}
	tmp := *in
	tmp.DotDims = &dd
	out, err := inferDot(&tmp, lhs, rhs)
	if err != nil {
		return Shape{}, err
	}
	if l.Mode == RaggedContracting {
		out.Dims = append([]int64{g}, out.Dims...)
	}
	return out, nil
}
