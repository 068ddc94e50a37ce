package ir

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"goldtrace/engine/dtype"
	"goldtrace/kernel/ir/irpb"
)

// SchemaVersion is the IR schema this package reads and writes
// (irpb.SchemaVersion_SCHEMA_VERSION_CURRENT).
const SchemaVersion = uint32(irpb.SchemaVersion_SCHEMA_VERSION_CURRENT)

// Limits on a decoded IR beyond which it is treated as corrupt rather than
// as a kernel (they bound the work Validate and the simulator set up).
const (
	maxVars = 1 << 16
)

// Marshal serializes k as protobuf binary (deterministic: the same kernel
// gives the same bytes, so configs can be hashed and compared). It refuses a
// kernel whose references are broken, so it never writes an IR that
// Unmarshal would reject.
func Marshal(k *irpb.Kernel) ([]byte, error) {
	if err := checkStructure(k).Err(); err != nil {
		return nil, err
	}
	return marshalDeterministic(k), nil
}

// Unmarshal decodes protobuf binary into a Kernel and checks that it is one
// goldtrace can read: a known schema_version, tensors[i].id == i, and every
// reference (tensor, loop variable, program-id axis, tile axis, source file,
// enum value, dtype) in range. Errors are an ErrorList of *Error; a
// decode failure has rule "ir-decode", a version problem "schema-version".
// It does not check hardware rules: see Validate.
func Unmarshal(b []byte) (*irpb.Kernel, error) {
	k := &irpb.Kernel{}
	if err := proto.Unmarshal(b, k); err != nil {
		return nil, ErrorList{{Rule: "ir-decode", Msg: fmt.Sprintf("not a kernel IR protobuf: %v", err)}}
	}
	if err := checkStructure(k).Err(); err != nil {
		return nil, err
	}
	return k, nil
}

// checkStructure checks what every consumer of the IR relies on without
// looking at hardware rules: version, ids and references in range.
func checkStructure(k *irpb.Kernel) ErrorList {
	s := &structChecker{k: k}
	if k == nil {
		return ErrorList{{Rule: "ir-structure", Msg: "nil kernel"}}
	}
	s.sink.files = k.Files
	s.check()
	return s.sink.list
}

type structChecker struct {
	k    *irpb.Kernel
	sink errSink

	// lazy: checking statements before the kernel's signature is known
	// (Builder.CheckAhead). Source file indexes are only collected (maxFile,
	// for the finish to check) and a program id term is a doubt (the grid
	// is not known): the finish then checks the whole kernel afresh.
	lazy    bool
	doubt   bool
	maxFile int32
}

// fileBad: l names a source file the kernel does not list.
func (s *structChecker) fileBad(l *irpb.Loc) bool {
	if s.lazy {
		s.maxFile = max(s.maxFile, l.File)
		return l.File < 0
	}
	return l.File < 0 || int(l.File) >= len(s.k.Files)
}

func (s *structChecker) loc(l *irpb.Loc) locRef {
	if l == nil || l.File < 0 || int(l.File) >= len(s.k.Files) {
		return locRef{}
	}
	return locRef{file: l.File, line: l.Line, ok: true}
}

func (s *structChecker) errf(l *irpb.Loc, op, format string, args ...any) {
	s.sink.add("ir-structure", s.loc(l), op, format, args...)
}

func (s *structChecker) check() {
	if s.kernelLevel() {
		s.stmts(s.k.Body)
	}
}

// kernelLevel checks everything but the body; false: the body cannot be
// checked (an unknown schema version, num_vars out of range).
func (s *structChecker) kernelLevel() bool {
	k := s.k
	switch {
	case k.SchemaVersion == 0:
		s.sink.add("schema-version", locRef{}, "", "schema_version is missing (0): not a goldtrace kernel IR, or its producer did not set it (this goldtrace reads version %d)", SchemaVersion)
		return false
	case k.SchemaVersion > SchemaVersion:
		s.sink.add("schema-version", locRef{}, "", "schema_version %d is newer than this goldtrace reads (version %d); upgrade goldtrace", k.SchemaVersion, SchemaVersion)
		return false
	}
	for i, g := range k.Grid {
		if g < 1 {
			s.errf(nil, "", "grid[%d] = %d: grid sizes must be >= 1", i, g)
		}
	}
	if k.NumVars < 0 || k.NumVars > maxVars {
		s.errf(nil, "", "num_vars %d out of range [0, %d]", k.NumVars, maxVars)
		return false
	}
	if k.NumCores > 1 && (k.CoreGridDim < 0 || int(k.CoreGridDim) >= len(k.Grid)) {
		s.errf(nil, "", "core_grid_dim %d is not a grid dimension (grid has %d)", k.CoreGridDim, len(k.Grid))
	}
	if k.NumCores < 0 {
		s.errf(nil, "", "num_cores %d is negative", k.NumCores)
	}
	for i, t := range k.Tensors {
		s.checkTensor(i, t)
	}
	for i, id := range k.Inputs {
		if !s.tensorInRange(id) {
			s.errf(nil, "", "inputs[%d] = %d: no such tensor (kernel has %d)", i, id, len(k.Tensors))
		}
	}
	for i, id := range k.Outputs {
		if !s.tensorInRange(id) {
			s.errf(nil, "", "outputs[%d] = %d: no such tensor (kernel has %d)", i, id, len(k.Tensors))
		}
	}
	return true
}

func (s *structChecker) tensorInRange(id int32) bool { return id >= 0 && int(id) < len(s.k.Tensors) }

func (s *structChecker) checkLoc(l *irpb.Loc, what string) {
	if l != nil && s.fileBad(l) {
		s.errf(nil, "", "%s: source file index %d out of range (kernel lists %d files)", what, l.File, len(s.k.Files))
	}
}

func (s *structChecker) checkTensor(i int, t *irpb.Tensor) {
	if t == nil {
		s.errf(nil, "", "tensors[%d] is empty", i)
		return
	}
	if t.Loc != nil && s.fileBad(t.Loc) {
		s.checkLoc(t.Loc, fmt.Sprintf("tensor %d", i))
	}
	if int(t.Id) != i {
		s.errf(t.Loc, "", "tensors[%d] has id %d (ids must equal their position)", i, t.Id)
	}
	if _, ok := irpb.Memory_name[int32(t.Memory)]; !ok || t.Memory == irpb.Memory_MEMORY_UNSPECIFIED {
		s.errf(t.Loc, "", "tensor %s: unknown memory %d", tensorLabel(t), t.Memory)
	}
	if _, ok := irpb.TensorRole_name[int32(t.Role)]; !ok || t.Role == irpb.TensorRole_ROLE_UNSPECIFIED {
		s.errf(t.Loc, "", "tensor %s: unknown role %d", tensorLabel(t), t.Role)
	}
	dt := dtype.Type(t.Dtype)
	if !dt.Valid() || !dt.IsArray() {
		s.errf(t.Loc, "", "tensor %s: unknown dtype %d", tensorLabel(t), t.Dtype)
	}
	for d, n := range t.Shape {
		if n < 0 {
			s.errf(t.Loc, "", "tensor %s: dimension %d has negative size %d", tensorLabel(t), d, n)
		}
	}
	if a := t.Allocation; a != nil && a.NumFreeTiles > 0 && (a.LoopVar < 0 || a.LoopVar >= s.k.NumVars) {
		s.errf(t.Loc, "", "tensor %s: allocation loop_var %d is not a loop variable (kernel has %d)", tensorLabel(t), a.LoopVar, s.k.NumVars)
	}
}

func (s *structChecker) stmts(body []*irpb.Stmt) {
	for _, st := range body {
		switch x := st.GetKind().(type) {
		case *irpb.Stmt_Inst:
			s.inst(x.Inst)
		case *irpb.Stmt_Loop:
			s.loop(x.Loop)
		default:
			s.errf(nil, "", "empty statement (neither instruction nor loop)")
		}
	}
}

func (s *structChecker) loop(l *irpb.Loop) {
	if l == nil {
		s.errf(nil, "", "empty loop")
		return
	}
	s.checkLoc(l.Loc, "loop")
	if l.Var < 0 || l.Var >= s.k.NumVars {
		s.errf(l.Loc, "", "loop variable %d out of range (kernel has %d)", l.Var, s.k.NumVars)
	}
	if l.Step <= 0 {
		s.errf(l.Loc, "", "loop step %d must be > 0", l.Step)
	}
	if _, ok := irpb.LoopKind_name[int32(l.Kind)]; !ok || l.Kind == irpb.LoopKind_LOOP_UNSPECIFIED {
		s.errf(l.Loc, "", "unknown loop kind %d", l.Kind)
	}
	s.stmts(l.Body)
}

func (s *structChecker) inst(in *irpb.Instruction) {
	if in == nil {
		s.errf(nil, "", "empty instruction")
		return
	}
	if in.Loc != nil && s.fileBad(in.Loc) {
		s.checkLoc(in.Loc, "instruction "+in.Op)
	}
	op := DisplayOp(in.Op)
	for i, a := range in.Dst {
		s.access(in, op, idxName("dst", i), a)
	}
	for i, a := range in.Src {
		s.access(in, op, idxName("src", i), a)
	}
	for name, a := range in.Attrs {
		if a.GetValue() == nil {
			s.errf(in.Loc, op, "attribute %q has no value", name)
		}
	}
	for i, p := range in.Mask {
		s.pred(in, op, idxName("mask", i), p, -1)
	}
	for i, p := range in.Preds {
		s.pred(in, op, idxName("preds", i), p, -1)
	}
	for i, e := range in.Exprs {
		s.affine(in, op, idxName("exprs", i), e, -1)
	}
}

func (s *structChecker) pred(in *irpb.Instruction, op, what string, p *irpb.Predicate, rank int) {
	if p == nil || p.Expr == nil {
		s.errf(in.Loc, op, "%s: empty predicate", what)
		return
	}
	if _, ok := irpb.Cmp_name[int32(p.Cmp)]; !ok || p.Cmp == irpb.Cmp_CMP_UNSPECIFIED {
		s.errf(in.Loc, op, "%s: unknown comparison %d", what, p.Cmp)
	}
	s.affine(in, op, what, p.Expr, rank)
}

// affineAt checks index expression i of an access (named on error only).
func (s *structChecker) affineAt(in *irpb.Instruction, op, what string, i int, e *irpb.Affine, rank int) {
	if !s.affineOK(e, rank) {
		s.affine(in, op, fmt.Sprintf("%s index %d", what, i), e, rank)
	}
}

// affineOK is the error-free fast path of affine.
func (s *structChecker) affineOK(e *irpb.Affine, rank int) bool {
	if e == nil {
		return false
	}
	for _, t := range e.Terms {
		if t == nil {
			return false
		}
		switch t.Kind {
		case irpb.TermKind_LOOP_VAR:
			if t.Id < 0 || t.Id >= s.k.NumVars {
				return false
			}
		case irpb.TermKind_PROGRAM_ID:
			if s.lazy {
				s.doubt = true
			}
			if t.Id < 0 || int(t.Id) >= max(len(s.k.Grid), 1) {
				return false
			}
		case irpb.TermKind_TILE_AXIS:
			if t.Id < 0 || (rank >= 0 && int(t.Id) >= rank) || t.Id >= 1<<16 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// affine checks term references; rank < 0: tile axes are checked elsewhere
// (they refer to the instruction's domain, which depends on the opcode).
func (s *structChecker) affine(in *irpb.Instruction, op, what string, e *irpb.Affine, rank int) {
	if e == nil {
		s.errf(in.Loc, op, "%s: empty affine expression", what)
		return
	}
	for _, t := range e.Terms {
		if t == nil {
			s.errf(in.Loc, op, "%s: empty term", what)
			continue
		}
		switch t.Kind {
		case irpb.TermKind_LOOP_VAR:
			if t.Id < 0 || t.Id >= s.k.NumVars {
				s.errf(in.Loc, op, "%s: loop variable %d out of range (kernel has %d)", what, t.Id, s.k.NumVars)
			}
		case irpb.TermKind_PROGRAM_ID:
			if s.lazy {
				s.doubt = true
			}
			if t.Id < 0 || int(t.Id) >= max(len(s.k.Grid), 1) {
				s.errf(in.Loc, op, "%s: program_id axis %d out of range (grid has %d dimensions)", what, t.Id, len(s.k.Grid))
			}
		case irpb.TermKind_TILE_AXIS:
			if t.Id < 0 || (rank >= 0 && int(t.Id) >= rank) || t.Id >= 1<<16 {
				s.errf(in.Loc, op, "%s: tile axis %d out of range (tile has %d axes)", what, t.Id, rank)
			}
		default:
			s.errf(in.Loc, op, "%s: unknown term kind %d", what, t.Kind)
		}
	}
}

func (s *structChecker) access(in *irpb.Instruction, op, what string, a *irpb.Access) {
	if a == nil {
		s.errf(in.Loc, op, "%s: empty access", what)
		return
	}
	if !s.tensorInRange(a.Tensor) {
		s.errf(in.Loc, op, "%s: tensor %d does not exist (kernel has %d)", what, a.Tensor, len(s.k.Tensors))
		return
	}
	t := s.k.Tensors[a.Tensor]
	for i, n := range a.Shape {
		if n < 0 {
			s.errf(in.Loc, op, "%s: tile axis %d has negative size %d", what, i, n)
		}
	}
	if t != nil && len(a.Index) != len(t.Shape) {
		s.errf(in.Loc, op, "%s: %d index expressions for tensor %s of rank %d", what, len(a.Index), tensorLabel(t), len(t.Shape))
	}
	for i, e := range a.Index {
		s.affineAt(in, op, what, i, e, len(a.Shape))
	}
	if len(a.DynamicDim) != len(a.Dynamic) {
		s.errf(in.Loc, op, "%s: %d dynamic dimensions but %d dynamic index tiles", what, len(a.DynamicDim), len(a.Dynamic))
	}
	for i, d := range a.DynamicDim {
		if t != nil && (d < 0 || int(d) >= len(t.Shape)) {
			s.errf(in.Loc, op, "%s: dynamic dimension %d is not a dimension of tensor %s", what, d, tensorLabel(t))
		}
		_ = i
	}
	for i, d := range a.Dynamic {
		s.access(in, op, fmt.Sprintf("%s dynamic[%d]", what, i), d)
	}
}

func tensorLabel(t *irpb.Tensor) string {
	if t.Name != "" {
		return fmt.Sprintf("t%d (%s)", t.Id, t.Name)
	}
	return fmt.Sprintf("t%d", t.Id)
}

var (
	dstNames   = smallNames("dst")
	srcNames   = smallNames("src")
	maskNames  = smallNames("mask")
	predsNames = smallNames("preds")
	exprsNames = smallNames("exprs")
)

func smallNames(prefix string) []string {
	out := make([]string, 8)
	for i := range out {
		out[i] = fmt.Sprintf("%s[%d]", prefix, i)
	}
	return out
}

// idxName is "dst[2]" without formatting (or a map lookup) on the common path.
func idxName(prefix string, i int) string {
	var n []string
	switch prefix {
	case "dst":
		n = dstNames
	case "src":
		n = srcNames
	case "mask":
		n = maskNames
	case "preds":
		n = predsNames
	case "exprs":
		n = exprsNames
	}
	if i >= 0 && i < len(n) {
		return n[i]
	}
	return fmt.Sprintf("%s[%d]", prefix, i)
}
