package golden

import (
	"fmt"
	"strings"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// ParamLeaf is one array input of a module: a non-tuple entry parameter, or
// one array leaf of a tuple parameter. Inputs are passed as the list of a
// module's ParamLeaves, in order: parameter 0's leaves depth-first, then
// parameter 1's, and so on. Token leaves take no input and are not listed.
type ParamLeaf struct {
	Param int    // parameter number
	Index []int  // position inside a tuple parameter; nil for array parameters
	Name  string // the parameter instruction's name
	Instr *hlo.Instruction
	Shape hlo.Shape // an array shape
}

// Label names the leaf in messages: "parameter 1 (%x)" or "parameter 1 (%t) {0,2}".
func (p ParamLeaf) Label() string {
	s := fmt.Sprintf("parameter %d (%%%s)", p.Param, p.Name)
	if p.Index != nil {
		s += " " + indexString(p.Index)
	}
	return s
}

func indexString(idx []int) string {
	parts := make([]string, len(idx))
	for i, v := range idx {
		parts[i] = fmt.Sprint(v)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// ParamLeaves lists the array inputs m's entry computation takes.
func ParamLeaves(m *hlo.Module) []ParamLeaf {
	var out []ParamLeaf
	for i, p := range m.Entry.Params {
		var walk func(s hlo.Shape, idx []int)
		walk = func(s hlo.Shape, idx []int) {
			if s.IsTuple() {
				for j, e := range s.Tuple {
					walk(e, append(append([]int{}, idx...), j))
				}
				return
			}
			if s.IsArray() {
				out = append(out, ParamLeaf{Param: i, Index: idx, Name: p.Name, Instr: p, Shape: s})
			}
		}
		var root []int
		if p.Shape.IsTuple() {
			root = []int{}
		}
		walk(p.Shape, root)
	}
	return out
}

func hloShapeString(s hlo.Shape) string { return tensor.ShapeString(s.Elem, s.Dims) }

// mapShape returns s with every array element type replaced by f(type). Tuple
// element lists are copied, so the result can be changed without touching s;
// the layout of a changed leaf loses its element size, which belonged to the
// old type.
func mapShape(s hlo.Shape, f func(dtype.Type) dtype.Type) hlo.Shape {
	if s.IsTuple() {
		out := s
		out.Tuple = make([]hlo.Shape, len(s.Tuple))
		for i, e := range s.Tuple {
			out.Tuple[i] = mapShape(e, f)
		}
		return out
	}
	if !s.IsArray() {
		return s
	}
	to := f(s.Elem)
	if to == s.Elem {
		return s
	}
	out := s
	out.Elem = to
	if s.Layout != nil && s.Layout.ElementSizeBits != 0 {
		l := *s.Layout
		l.ElementSizeBits = 0
		out.Layout = &l
	}
	return out
}

// shapeHas reports whether any array leaf of s has a type satisfying pred.
func shapeHas(s hlo.Shape, pred func(dtype.Type) bool) bool {
	for _, l := range s.Leaves() {
		if l.IsArray() && pred(l.Elem) {
			return true
		}
	}
	return false
}
