package hloproto

import (
	"fmt"
	"strings"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/hlo/hlopb"
)

// maxDepth bounds recursion through nested tuple shapes and literals, so a
// hostile proto cannot exhaust the stack.
const maxDepth = 512

// xlaUnboundedDim and xlaTileCombineDim are the values XLA stores in protos
// for a '?' dimension and a '*' tile dimension (both INT64_MIN).
const (
	xlaUnboundedDim   int64 = -1 << 63
	xlaTileCombineDim int64 = -1 << 63
)

func convertShape(sp *hlopb.ShapeProto) (hlo.Shape, error) {
	return convertShapeDepth(sp, 0)
}

func convertShapeDepth(sp *hlopb.ShapeProto, depth int) (hlo.Shape, error) {
	if sp == nil {
		return hlo.Shape{}, fmt.Errorf("missing shape")
	}
	if depth > maxDepth {
		return hlo.Shape{}, fmt.Errorf("shape nested deeper than %d", maxDepth)
	}
	t := dtype.Type(sp.GetElementType())
	if !t.Valid() {
		return hlo.Shape{}, fmt.Errorf("unknown element type %d", int32(t))
	}
	s := hlo.Shape{Elem: t}
	switch t {
	case dtype.Tuple:
		if len(sp.GetDimensions()) != 0 {
			return s, fmt.Errorf("tuple shape has dimensions")
		}
		s.Tuple = make([]hlo.Shape, 0, len(sp.GetTupleShapes()))
		for i, e := range sp.GetTupleShapes() {
			es, err := convertShapeDepth(e, depth+1)
			if err != nil {
				return s, fmt.Errorf("tuple element %d: %w", i, err)
			}
			s.Tuple = append(s.Tuple, es)
		}
		return s, nil
	case dtype.Token, dtype.OpaqueType:
		if len(sp.GetDimensions()) != 0 || len(sp.GetTupleShapes()) != 0 {
			return s, fmt.Errorf("%v shape has dimensions or elements", t)
		}
		return s, nil
	}
	if len(sp.GetTupleShapes()) != 0 {
		return s, fmt.Errorf("array shape %v has tuple elements", t)
	}
	dims := sp.GetDimensions()
	dyn := sp.GetIsDynamicDimension()
	if len(dyn) != 0 && len(dyn) != len(dims) {
		return s, fmt.Errorf("%d dynamic-dimension flags for %d dimensions", len(dyn), len(dims))
	}
	s.Dims = make([]int64, len(dims))
	for i, d := range dims {
		isDyn := len(dyn) > 0 && dyn[i]
		switch {
		case d == xlaUnboundedDim && isDyn:
			s.Dims[i] = hlo.UnboundedDim
		case d < 0:
			return s, fmt.Errorf("negative dimension %d", d)
		default:
			s.Dims[i] = d
		}
		if isDyn {
			if s.DynamicDims == nil {
				s.DynamicDims = make([]bool, len(dims))
			}
			s.DynamicDims[i] = true
		}
	}
	if sp.Layout != nil {
		l, err := convertLayout(sp.Layout, len(dims))
		if err != nil {
			return s, fmt.Errorf("layout: %w", err)
		}
		s.Layout = l
	}
	return s, nil
}

// convertLayout maps a LayoutProto. A scalar's trivial layout becomes nil,
// because HLO text cannot print one and the model must not depend on the source.
func convertLayout(lp *hlopb.LayoutProto, rank int) (*hlo.Layout, error) {
	m2m := lp.GetMinorToMajor()
	if len(m2m) != rank {
		return nil, fmt.Errorf("minor_to_major %v has %d entries for rank %d", m2m, len(m2m), rank)
	}
	if err := checkPermutation(m2m); err != nil {
		return nil, fmt.Errorf("minor_to_major: %w", err)
	}
	l := &hlo.Layout{
		MinorToMajor:    append([]int64{}, m2m...),
		ElementSizeBits: lp.GetElementSizeInBits(),
		MemorySpace:     lp.GetMemorySpace(),
	}
	for _, t := range lp.GetTiles() {
		dims := make([]int64, len(t.GetDimensions()))
		for i, d := range t.GetDimensions() {
			if d == xlaTileCombineDim {
				d = hlo.TileCombineDim
			} else if d <= 0 {
				return nil, fmt.Errorf("tile dimension %d", d)
			}
			dims[i] = d
		}
		l.Tiles = append(l.Tiles, hlo.Tile{Dims: dims})
	}
	l.Extra = layoutExtra(lp)
	if rank == 0 && len(l.Tiles) == 0 && l.ElementSizeBits == 0 && l.MemorySpace == 0 && len(l.Extra) == 0 {
		return nil, nil
	}
	return l, nil
}

// layoutExtra renders the layout items the model keeps as raw text, in the
// order and spelling XLA's layout printer uses, so they match parsed text.
func layoutExtra(lp *hlopb.LayoutProto) []string {
	var out []string
	if dl := lp.GetDimLevelTypes(); len(dl) > 0 {
		parts := make([]string, len(dl))
		for i, d := range dl {
			name := map[hlopb.DimLevelType]string{
				hlopb.DimLevelType_DIM_DENSE: "D", hlopb.DimLevelType_DIM_COMPRESSED: "C",
				hlopb.DimLevelType_DIM_SINGLETON: "S", hlopb.DimLevelType_DIM_LOOSE_COMPRESSED: "H",
			}[d]
			if name == "" {
				name = "?"
			}
			if u := lp.GetDimUnique(); i < len(u) && !u[i] {
				name += "+"
			}
			if o := lp.GetDimOrdered(); i < len(o) && !o[i] {
				name += "~"
			}
			parts[i] = name
		}
		out = append(out, "D("+strings.Join(parts, ",")+")")
	}
	if a := lp.GetTailPaddingAlignmentInElements(); a > 1 {
		out = append(out, fmt.Sprintf("L(%d)", a))
	}
	if t := lp.GetIndexPrimitiveType(); t != hlopb.PrimitiveType_PRIMITIVE_TYPE_INVALID {
		out = append(out, "#("+dtype.Type(t).String()+")")
	}
	if t := lp.GetPointerPrimitiveType(); t != hlopb.PrimitiveType_PRIMITIVE_TYPE_INVALID {
		out = append(out, "*("+dtype.Type(t).String()+")")
	}
	if sc := lp.GetSplitConfigs(); len(sc) > 0 {
		var b strings.Builder
		b.WriteString("SC(")
		for i, c := range sc {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "%d:%s", c.GetDimension(), joinInts(c.GetSplitIndices(), ","))
		}
		b.WriteString(")")
		out = append(out, b.String())
	}
	if n := lp.GetDynamicShapeMetadataPrefixBytes(); n > 0 {
		out = append(out, fmt.Sprintf("M(%d)", n))
	}
	return out
}

func checkPermutation(p []int64) error {
	seen := make([]bool, len(p))
	for _, v := range p {
		if v < 0 || v >= int64(len(p)) || seen[v] {
			return fmt.Errorf("%v is not a permutation of 0..%d", p, len(p)-1)
		}
		seen[v] = true
	}
	return nil
}

func joinInts(v []int64, sep string) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, sep)
}

func convertProgramShape(ps *hlopb.ProgramShapeProto) (*hlo.ComputationLayout, error) {
	if ps == nil || ps.Result == nil {
		return nil, nil
	}
	cl := &hlo.ComputationLayout{}
	for i, p := range ps.GetParameters() {
		s, err := convertShape(p)
		if err != nil {
			return nil, fmt.Errorf("parameter %d: %w", i, err)
		}
		cl.Params = append(cl.Params, s)
	}
	r, err := convertShape(ps.Result)
	if err != nil {
		return nil, fmt.Errorf("result: %w", err)
	}
	cl.Result = r
	return cl, nil
}
