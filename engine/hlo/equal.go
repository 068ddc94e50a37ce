package hlo

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"goldtrace/engine/tensor"
)

// Equal reports whether a and b describe the same module, and if not, where
// they first differ. Instructions and computations referenced from elsewhere
// (operands, roots, callees) compare by name; IDs and parent links are
// ignored, as are the differences that do not change meaning: a nil slice or
// map equals an empty one, and a nil pointer equals a pointer to a zero value.
// The order of computations carries no meaning (XLA's printer and its protos
// order them differently, both callees first), so they are matched by name.
func Equal(a, b *Module) (bool, string) {
	if a == nil || b == nil {
		if a == b {
			return true, ""
		}
		return false, "one module is nil"
	}
	return equal(a, b, nil)
}

// EqualIgnoringMetadata is Equal without the instructions' metadata={...}
// (op names, source lines): debug information that XLA keeps in protos but
// leaves out of some text printings of the same module.
func EqualIgnoringMetadata(a, b *Module) (bool, string) {
	if a == nil || b == nil {
		return Equal(a, b)
	}
	return equal(a, b, map[string]bool{"Metadata": true})
}

func equal(a, b *Module, skip map[string]bool) (bool, string) {
	sa, sb := computationsByName(a), computationsByName(b)
	d := diff("module", reflect.ValueOf(&sa).Elem(), reflect.ValueOf(&sb).Elem(), false, skip)
	return d == "", d
}

// computationsByName returns a shallow copy of m whose computations are
// sorted by name.
func computationsByName(m *Module) Module {
	c := *m
	c.Computations = slices.Clone(m.Computations)
	slices.SortStableFunc(c.Computations, func(x, y *Computation) int { return strings.Compare(x.Name, y.Name) })
	return c
}

var (
	instrPtrType  = reflect.TypeOf((*Instruction)(nil))
	compPtrType   = reflect.TypeOf((*Computation)(nil))
	tensorPtrType = reflect.TypeOf((*tensor.Tensor)(nil))
)

// diff compares two values of the same type; deep says whether pointers to
// instructions or computations are definitions (compared field by field)
// rather than references (compared by name).
func diff(path string, a, b reflect.Value, deep bool, skip map[string]bool) string {
	t := a.Type()
	switch {
	case (t == instrPtrType || t == compPtrType) && !deep:
		na, nb := refName(a), refName(b)
		if na != nb {
			return fmt.Sprintf("%s: %s vs %s", path, na, nb)
		}
		return ""
	case t == tensorPtrType:
		ta, tb := a.Interface().(*tensor.Tensor), b.Interface().(*tensor.Tensor)
		if ta == nil || tb == nil {
			if ta != tb {
				return path + ": one tensor is nil"
			}
			return ""
		}
		if ta.Type != tb.Type || !reflect.DeepEqual(ta.Dims, tb.Dims) {
			return fmt.Sprintf("%s: %v vs %v", path, ta, tb)
		}
		if !bytes.Equal(ta.Data, tb.Data) {
			return fmt.Sprintf("%s: %v data differs", path, ta)
		}
		return ""
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() && b.IsNil() {
			return ""
		}
		ea, eb := derefOrZero(a), derefOrZero(b)
		label := path
		if t == instrPtrType || t == compPtrType {
			label = path + "(" + refName(a) + ")"
			if a.IsNil() != b.IsNil() {
				return fmt.Sprintf("%s: %s vs %s", path, refName(a), refName(b))
			}
		}
		return diff(label, ea, eb, false, skip)
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Name == "ID" || f.Name == "Parent" || f.Name == "SourcePos" || f.Name == "AttrPos" || skip[f.Name] {
				continue
			}
			deepField := (t == reflect.TypeOf(Module{}) && f.Name == "Computations") ||
				(t == reflect.TypeOf(Computation{}) && f.Name == "Instructions")
			if d := diff(path+"."+f.Name, a.Field(i), b.Field(i), deepField, skip); d != "" {
				return d
			}
		}
		return ""
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: length %d vs %d", path, a.Len(), b.Len())
		}
		for i := 0; i < a.Len(); i++ {
			if d := diff(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i), deep, skip); d != "" {
				return d
			}
		}
		return ""
	case reflect.Map:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: %d vs %d entries", path, a.Len(), b.Len())
		}
		for _, k := range a.MapKeys() {
			vb := b.MapIndex(k)
			if !vb.IsValid() {
				return fmt.Sprintf("%s: key %v missing in second", path, k)
			}
			if d := diff(fmt.Sprintf("%s[%v]", path, k), a.MapIndex(k), vb, deep, skip); d != "" {
				return d
			}
		}
		return ""
	case reflect.Float32, reflect.Float64:
		if a.Float() != b.Float() && !(a.Float() != a.Float() && b.Float() != b.Float()) {
			return fmt.Sprintf("%s: %v vs %v", path, a.Float(), b.Float())
		}
		return ""
	default:
		if !a.Equal(b) {
			return fmt.Sprintf("%s: %v vs %v", path, a.Interface(), b.Interface())
		}
		return ""
	}
}

func derefOrZero(v reflect.Value) reflect.Value {
	if v.IsNil() {
		return reflect.Zero(v.Type().Elem())
	}
	return v.Elem()
}

func refName(v reflect.Value) string {
	if v.IsNil() {
		return "<nil>"
	}
	switch x := v.Interface().(type) {
	case *Instruction:
		return "%" + x.Name
	case *Computation:
		return "%" + x.Name
	}
	return "?"
}
