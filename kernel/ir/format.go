package ir

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"goldtrace/engine/dtype"
	"goldtrace/kernel/ir/irpb"
)

// Format renders k as a readable listing, one instruction per line, loops
// indented, accesses written as `t3[128*i0 + p, f]<128x512>` (tile axes: p is
// axis 0, the partition axis; f the free axis of a 2-D tile, f1, f2, ... for
// more; i<n> loop variables; pid<n> program ids; the tile shape in <>), and
// the kernel's own file:line as a trailing comment. It works on any decoded
// IR, valid or not (bad references print as such), so it can show what a
// rejected IR holds.
func Format(k *irpb.Kernel) string {
	if k == nil {
		return "<nil kernel>\n"
	}
	f := &formatter{k: k}
	f.kernel()
	return f.b.String()
}

type formatter struct {
	k *irpb.Kernel
	b strings.Builder
}

func (f *formatter) line(indent int, text string, loc *irpb.Loc) {
	for range indent {
		f.b.WriteString("  ")
	}
	f.b.WriteString(text)
	if s := f.locString(loc); s != "" {
		f.b.WriteString("  # ")
		f.b.WriteString(s)
	}
	f.b.WriteByte('\n')
}

func (f *formatter) locString(l *irpb.Loc) string {
	if l == nil {
		return ""
	}
	name := "?"
	if l.File >= 0 && int(l.File) < len(f.k.Files) {
		name = f.k.Files[l.File]
	}
	return fmt.Sprintf("%s:%d", name, l.Line)
}

func (f *formatter) kernel() {
	k := f.k
	head := fmt.Sprintf("kernel %s schema=%d", strconv.Quote(k.Name), k.SchemaVersion)
	if len(k.Grid) > 0 {
		head += " grid=" + intsString(k.Grid)
	}
	if k.NumCores > 1 {
		head += fmt.Sprintf(" cores=%d core_grid_dim=%d", k.NumCores, k.CoreGridDim)
	}
	f.line(0, head, nil)
	if len(k.Options) > 0 {
		keys := make([]string, 0, len(k.Options))
		for key := range k.Options {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, key := range keys {
			parts[i] = key + "=" + strconv.Quote(k.Options[key])
		}
		f.line(0, "options "+strings.Join(parts, " "), nil)
	}
	f.line(0, "tensors:", nil)
	for i, t := range k.Tensors {
		if t == nil {
			f.line(1, fmt.Sprintf("<empty tensor %d>", i), nil)
			continue
		}
		f.line(1, f.tensorDecl(t), t.Loc)
	}
	f.line(0, "inputs: "+f.tensorRefs(k.Inputs), nil)
	f.line(0, "outputs: "+f.tensorRefs(k.Outputs), nil)
	f.line(0, "body:", nil)
	f.stmts(1, k.Body)
}

func (f *formatter) tensorRefs(ids []int32) string {
	if len(ids) == 0 {
		return "(none)"
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("t%d", id)
		if id >= 0 && int(id) < len(f.k.Tensors) && f.k.Tensors[id] != nil && f.k.Tensors[id].Name != "" {
			parts[i] += "(" + f.k.Tensors[id].Name + ")"
		}
	}
	return strings.Join(parts, ", ")
}

func memoryName(m irpb.Memory) string {
	switch m {
	case irpb.Memory_SHARED_HBM:
		return "shared_hbm"
	case irpb.Memory_PRIVATE_HBM:
		return "private_hbm"
	case irpb.Memory_SBUF:
		return "sbuf"
	case irpb.Memory_PSUM:
		return "psum"
	}
	return fmt.Sprintf("memory%d", int32(m))
}

func roleName(r irpb.TensorRole) string {
	switch r {
	case irpb.TensorRole_PARAM:
		return "param"
	case irpb.TensorRole_OUTPUT:
		return "output"
	case irpb.TensorRole_TEMP:
		return "temp"
	case irpb.TensorRole_CONSTANT:
		return "constant"
	}
	return fmt.Sprintf("role%d", int32(r))
}

func dtypeName(t *irpb.Tensor) string {
	if t.Tf32 {
		return "tf32"
	}
	return dtype.Type(t.Dtype).String()
}

func (f *formatter) tensorDecl(t *irpb.Tensor) string {
	var b strings.Builder
	fmt.Fprintf(&b, "t%d", t.Id)
	if t.Name != "" {
		b.WriteString(" " + strconv.Quote(t.Name))
	}
	fmt.Fprintf(&b, " %s %s %s%s", roleName(t.Role), memoryName(t.Memory), dtypeName(t), intsString(t.Shape))
	if t.Mutable {
		b.WriteString(" mutable")
	}
	if a := t.Allocation; a != nil {
		fmt.Fprintf(&b, " alloc(%s partition=%d byte=%d", orDefault(a.Kind, "fixed"), a.PartitionOffset, a.ByteOffset)
		if a.NumFreeTiles > 0 {
			fmt.Fprintf(&b, " + (i%d mod %d)*%d", a.LoopVar, a.NumFreeTiles, a.BytesPerTile)
		}
		b.WriteString(")")
	}
	if len(t.Data) > 0 {
		fmt.Fprintf(&b, " data=%dB", len(t.Data))
	}
	return b.String()
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func (f *formatter) stmts(indent int, body []*irpb.Stmt) {
	for _, st := range body {
		switch x := st.GetKind().(type) {
		case *irpb.Stmt_Inst:
			f.inst(indent, x.Inst)
		case *irpb.Stmt_Loop:
			f.loop(indent, x.Loop)
		default:
			f.line(indent, "<empty statement>", nil)
		}
	}
}

func (f *formatter) loop(indent int, l *irpb.Loop) {
	if l == nil {
		f.line(indent, "<empty loop>", nil)
		return
	}
	kind := "range"
	switch l.Kind {
	case irpb.LoopKind_AFFINE:
		kind = "affine_range"
	case irpb.LoopKind_SEQUENTIAL:
		kind = "sequential_range"
	}
	head := fmt.Sprintf("for i%d in %s(%d, %d", l.Var, kind, l.Start, l.Stop)
	if l.Step != 1 {
		head += fmt.Sprintf(", %d", l.Step)
	}
	f.line(indent, head+"):", l.Loc)
	f.stmts(indent+1, l.Body)
}

func (f *formatter) inst(indent int, in *irpb.Instruction) {
	if in == nil {
		f.line(indent, "<empty instruction>", nil)
		return
	}
	var b strings.Builder
	b.WriteString(orDefault(in.Op, "<no op>"))
	if in.Engine != "" {
		b.WriteString("." + in.Engine)
	}
	b.WriteByte(' ')
	for i, a := range in.Dst {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f.access(a))
	}
	if len(in.Src) > 0 {
		b.WriteString(" <- ")
		for i, a := range in.Src {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(f.access(a))
		}
	}
	if len(in.Attrs) > 0 {
		keys := make([]string, 0, len(in.Attrs))
		for key := range in.Attrs {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		for _, key := range keys {
			fmt.Fprintf(&b, " %s=%s", key, attrString(in.Attrs[key]))
		}
	}
	for i, e := range in.Exprs {
		fmt.Fprintf(&b, " expr%d=(%s)", i, affineString(e, -1))
	}
	if len(in.Preds) > 0 {
		b.WriteString(" pred(" + predsString(in.Preds) + ")")
	}
	if len(in.Mask) > 0 {
		b.WriteString(" mask(" + predsString(in.Mask) + ")")
	}
	f.line(indent, b.String(), in.Loc)
}

func (f *formatter) access(a *irpb.Access) string {
	if a == nil {
		return "<empty access>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "t%d[", a.Tensor)
	for i, e := range a.Index {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(affineString(e, len(a.Shape)))
		for j, d := range a.DynamicDim {
			if int(d) == i && j < len(a.Dynamic) {
				b.WriteString(" + " + f.access(a.Dynamic[j]))
			}
		}
	}
	b.WriteString("]<")
	for i, n := range a.Shape {
		if i > 0 {
			b.WriteByte('x')
		}
		b.WriteString(strconv.FormatInt(n, 10))
	}
	b.WriteString(">")
	return b.String()
}

// axisName names tile axis id of a rank-`rank` tile (rank < 0: unknown).
func axisName(id int32, rank int) string {
	switch {
	case id == 0:
		return "p"
	case rank == 2 && id == 1:
		return "f"
	}
	return fmt.Sprintf("f%d", id)
}

func termString(t *irpb.Term, rank int) string {
	if t == nil {
		return "<empty term>"
	}
	switch t.Kind {
	case irpb.TermKind_LOOP_VAR:
		return fmt.Sprintf("i%d", t.Id)
	case irpb.TermKind_PROGRAM_ID:
		return fmt.Sprintf("pid%d", t.Id)
	case irpb.TermKind_TILE_AXIS:
		return axisName(t.Id, rank)
	}
	return fmt.Sprintf("term%d_%d", int32(t.Kind), t.Id)
}

// affineString writes terms first, then the constant: `128*i0 + p + 3`.
func affineString(e *irpb.Affine, rank int) string {
	if e == nil {
		return "<empty>"
	}
	return affineWith(e, rank, e.Constant)
}

func affineWith(e *irpb.Affine, rank int, constant int64) string {
	var b strings.Builder
	first := true
	// loop variables and program ids first, tile axes last: `128*i0 + p`
	ordered := make([]*irpb.Term, 0, len(e.Terms))
	for pass := 0; pass < 2; pass++ {
		for _, t := range e.Terms {
			if (t != nil && t.Kind == irpb.TermKind_TILE_AXIS) == (pass == 1) {
				ordered = append(ordered, t)
			}
		}
	}
	for _, t := range ordered {
		c := int64(1)
		if t != nil {
			c = t.Coef
		}
		if c == 0 {
			continue
		}
		name := termString(t, rank)
		neg := c < 0
		mag := uint64(c)
		if neg {
			mag = -mag
		}
		switch {
		case first && neg:
			b.WriteString("-")
		case !first && neg:
			b.WriteString(" - ")
		case !first:
			b.WriteString(" + ")
		}
		if mag != 1 {
			b.WriteString(strconv.FormatUint(mag, 10) + "*")
		}
		b.WriteString(name)
		first = false
	}
	if first {
		return strconv.FormatInt(constant, 10)
	}
	if constant > 0 {
		b.WriteString(" + " + strconv.FormatInt(constant, 10))
	} else if constant < 0 {
		b.WriteString(" - " + strconv.FormatUint(-uint64(constant), 10))
	}
	return b.String()
}

var cmpText = map[irpb.Cmp]string{
	irpb.Cmp_LT: "<", irpb.Cmp_LE: "<=", irpb.Cmp_GT: ">", irpb.Cmp_GE: ">=", irpb.Cmp_EQ: "==", irpb.Cmp_NE: "!=",
}

// predsString writes `expr cmp 0` as `terms cmp -constant`: `p + 128*i0 < 1000`.
func predsString(ps []*irpb.Predicate) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		if p == nil || p.Expr == nil {
			parts[i] = "<empty predicate>"
			continue
		}
		op, ok := cmpText[p.Cmp]
		if !ok {
			op = fmt.Sprintf("cmp%d", int32(p.Cmp))
		}
		hasTerms := false
		for _, t := range p.Expr.Terms {
			if t != nil && t.Coef != 0 {
				hasTerms = true
			}
		}
		if !hasTerms || p.Expr.Constant == math.MinInt64 {
			parts[i] = affineString(p.Expr, -1) + " " + op + " 0"
			continue
		}
		parts[i] = affineWith(p.Expr, -1, 0) + " " + op + " " + strconv.FormatInt(-p.Expr.Constant, 10)
	}
	return strings.Join(parts, " & ")
}

func attrString(a *irpb.Attr) string {
	switch v := a.GetValue().(type) {
	case *irpb.Attr_I:
		return strconv.FormatInt(v.I, 10)
	case *irpb.Attr_F:
		return strconv.FormatFloat(v.F, 'g', -1, 64)
	case *irpb.Attr_S:
		return strconv.Quote(v.S)
	case *irpb.Attr_B:
		return strconv.FormatBool(v.B)
	case *irpb.Attr_Ints:
		return intsString(v.Ints.GetV())
	case *irpb.Attr_Floats:
		parts := make([]string, len(v.Floats.GetV()))
		for i, x := range v.Floats.GetV() {
			parts[i] = strconv.FormatFloat(x, 'g', -1, 64)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return "<no value>"
}

func intsString(v []int64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatInt(x, 10)
	}
	return "[" + strings.Join(parts, ",") + "]"
}
