package hloproto

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/hlo/hlopb"
)

// shapeText formats s the way XLA prints instruction shapes, to compare
// against XLA's own printing of the same proto.
func shapeText(s hlo.Shape) string {
	switch s.Elem {
	case dtype.Tuple:
		parts := make([]string, len(s.Tuple))
		for i, e := range s.Tuple {
			parts[i] = shapeText(e)
		}
		return "(" + strings.Join(parts, ", ") + ")"
	case dtype.Token:
		return "token[]"
	}
	dims := make([]string, len(s.Dims))
	for i, d := range s.Dims {
		switch {
		case d == hlo.UnboundedDim:
			dims[i] = "?"
		case s.DynamicDims != nil && s.DynamicDims[i]:
			dims[i] = fmt.Sprintf("<=%d", d)
		default:
			dims[i] = fmt.Sprint(d)
		}
	}
	out := s.Elem.String() + "[" + strings.Join(dims, ",") + "]"
	if s.Layout != nil && len(s.Dims) > 0 {
		out += "{" + joinInts(s.Layout.MinorToMajor, ",") + "}"
	}
	return out
}

var (
	indexComment = regexp.MustCompile(`/\*index=\d+\*/`)
	calleeAttr   = regexp.MustCompile(`\b(condition|body|to_apply|calls|true_computation|false_computation|select|scatter)=%?([\w.\-]+)|\b(branch_computations|called_computations)=\{([^}]*)\}`)
	rootLine     = regexp.MustCompile(`(?m)^\s*ROOT %?([\w.\-]+) =`)
)

// calleesInText lists the computations an instruction's text names, in order.
func calleesInText(text string) []string {
	var out []string
	for _, m := range calleeAttr.FindAllStringSubmatch(text, -1) {
		if m[2] != "" {
			out = append(out, m[2])
			continue
		}
		for _, n := range strings.Split(m[4], ",") {
			if n = strings.TrimPrefix(strings.TrimSpace(n), "%"); n != "" {
				out = append(out, n)
			}
		}
	}
	return out
}

func names[T any](xs []T, name func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = name(x)
	}
	return out
}

// TestJAXProtos reads every HloModuleProto XLA produced and checks the model
// against XLA's own view of the same module: computations, instruction
// names, opcodes, operands, shapes with layouts, callee order and roots.
func TestJAXProtos(t *testing.T) {
	dir, cases := generated(t)
	if len(cases) < 20 {
		t.Fatalf("only %d generated cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			data := readGen(t, dir, c.PB)
			m, err := ReadModule(data)
			if err != nil {
				t.Fatal(err)
			}
			m2, args, kind, err := Load(data)
			if err != nil || kind != KindModuleProto || args != nil || len(m2.Computations) != len(m.Computations) {
				t.Fatalf("Load: kind %q, err %v", kind, err)
			}
			txt := string(readGen(t, dir, c.Txt))
			roots := map[string]bool{}
			for _, r := range rootLine.FindAllStringSubmatch(txt, -1) {
				roots[r[1]] = true
			}
			if len(m.Computations) != len(c.Computations) {
				t.Errorf("%d computations, XLA has %d", len(m.Computations), len(c.Computations))
			}
			if m.Entry == nil || !m.Entry.IsEntry {
				t.Fatal("no entry computation")
			}
			for _, xc := range c.Computations {
				mc := m.Computation(xc.Name)
				if mc == nil {
					t.Errorf("computation %q missing", xc.Name)
					continue
				}
				if !roots[mc.Root.Name] {
					t.Errorf("computation %q: root %q is not a ROOT in XLA's text", mc.Name, mc.Root.Name)
				}
				if len(mc.Instructions) != len(xc.Instructions) {
					t.Errorf("computation %q: %d instructions, XLA has %d", mc.Name, len(mc.Instructions), len(xc.Instructions))
				}
				for pi, p := range mc.Params {
					if p.Opcode != "parameter" || p.ParameterNumber != int64(pi) {
						t.Errorf("computation %q: Params[%d] is %s %d", mc.Name, pi, p.Opcode, p.ParameterNumber)
					}
				}
				for _, xi := range xc.Instructions {
					in := mc.Instruction(xi.Name)
					if in == nil {
						t.Errorf("%s: instruction %q missing", mc.Name, xi.Name)
						continue
					}
					checkInstruction(t, in, xi.Opcode, xi.Operands, xi.Text)
				}
			}
			for _, k := range c.Constants {
				in := m.Computation(k.Computation).Instruction(k.Instruction)
				want := readGen(t, dir, k.File)
				checkLiteral(t, in.Literal, k.Dtype, k.Dims, want)
			}
		})
	}
}

func checkInstruction(t *testing.T, in *hlo.Instruction, opcode string, operands []string, text string) {
	t.Helper()
	text = indexComment.ReplaceAllString(text, "")
	if !strings.Contains(text, " "+in.Opcode+"(") {
		t.Errorf("%s: opcode %q not in XLA text %q (XLA enum %s)", in.Name, in.Opcode, text, opcode)
	}
	got := names(in.Operands, func(o *hlo.Instruction) string { return o.Name })
	if strings.Join(got, ",") != strings.Join(operands, ",") {
		t.Errorf("%s: operands %v, XLA %v", in.Name, got, operands)
	}
	if st := shapeText(in.Shape); !strings.Contains(text, "= "+st+" "+in.Opcode+"(") {
		t.Errorf("%s: shape %s does not match XLA text %q", in.Name, st, text)
	}
	called := names(in.Called, func(c *hlo.Computation) string { return c.Name })
	if want := calleesInText(text); strings.Join(called, ",") != strings.Join(want, ",") {
		t.Errorf("%s: called %v, XLA text names %v", in.Name, called, want)
	}
}

func checkLiteral(t *testing.T, lit *hlo.Literal, numpyName string, dims []int64, want []byte) {
	t.Helper()
	if lit == nil || lit.Tensor == nil {
		t.Fatalf("no array literal")
	}
	tt := lit.Tensor
	if tt.Type.NumpyName() != numpyName || fmt.Sprint(tt.Dims) != fmt.Sprint(dims) {
		t.Errorf("literal is %v (%s), want %s%v", tt, tt.Type.NumpyName(), numpyName, dims)
	}
	if !bytes.Equal(tt.Data, want) {
		t.Errorf("literal %v data\n got % x\nwant % x", tt, tt.Data, want)
	}
}

// constantsModule returns the XLA-made proto holding a {0,1}-layout constant
// of every element type, and the expected row-major bytes of each.
func constantsModule(t *testing.T) (*hlopb.HloModuleProto, manifestCase, string) {
	dir, cases := generated(t)
	for _, c := range cases {
		if c.Name == "constants" {
			var mp hlopb.HloModuleProto
			if err := proto.Unmarshal(readGen(t, dir, c.PB), &mp); err != nil {
				t.Fatal(err)
			}
			return &mp, c, dir
		}
	}
	t.Fatal("no constants case")
	return nil, manifestCase{}, ""
}

// TestSnapshot wraps XLA-encoded literals of every element type (layout
// {0,1}, i.e. column-major data) as HloSnapshot arguments, plus a tuple.
func TestSnapshot(t *testing.T) {
	mp, c, dir := constantsModule(t)
	lits := map[string]*hlopb.LiteralProto{}
	for _, in := range mp.Computations[len(mp.Computations)-1].Instructions {
		if in.GetOpcode() == "constant" {
			lits[in.GetName()] = in.Literal
		}
	}
	snap := &hlopb.HloSnapshot{Hlo: &hlopb.HloProto{HloModule: mp}, ExecutionPlatform: "Host"}
	for _, k := range c.Constants {
		lp := lits[k.Instruction]
		if lp == nil {
			t.Fatalf("constant %s missing from proto", k.Instruction)
		}
		if mtm := lp.GetShape().GetLayout().GetMinorToMajor(); fmt.Sprint(mtm) != "[0 1]" {
			t.Fatalf("%s: XLA literal layout %v, want {0,1}", k.Instruction, mtm)
		}
		snap.Arguments = append(snap.Arguments, lp)
	}
	first, second := c.Constants[0], c.Constants[1]
	snap.Arguments = append(snap.Arguments, &hlopb.LiteralProto{
		Shape:         &hlopb.ShapeProto{ElementType: hlopb.PrimitiveType_TUPLE, TupleShapes: []*hlopb.ShapeProto{lits[first.Instruction].Shape, lits[second.Instruction].Shape}},
		TupleLiterals: []*hlopb.LiteralProto{lits[first.Instruction], lits[second.Instruction]},
	})
	data, err := proto.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	m, args, err := ReadSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	if m.Entry == nil || len(args) != len(c.Constants)+1 {
		t.Fatalf("%d args", len(args))
	}
	for i, k := range c.Constants {
		t.Run(k.Dtype, func(t *testing.T) { checkLiteral(t, args[i], k.Dtype, k.Dims, readGen(t, dir, k.File)) })
	}
	tup := args[len(args)-1]
	if len(tup.Tuple) != 2 {
		t.Fatalf("tuple argument has %d elements", len(tup.Tuple))
	}
	checkLiteral(t, tup.Tuple[0], first.Dtype, first.Dims, readGen(t, dir, first.File))
	checkLiteral(t, tup.Tuple[1], second.Dtype, second.Dims, readGen(t, dir, second.File))

	_, args2, kind, err := Load(data)
	if err != nil || kind != KindSnapshot || len(args2) != len(args) {
		t.Fatalf("Load: kind %q, %d args, err %v", kind, len(args2), err)
	}
}

// TestHloProtoForms checks HloProto and HloModuleProtoWithConfig detection;
// only the latter carries replica and partition counts.
func TestHloProtoForms(t *testing.T) {
	mp, _, _ := constantsModule(t)
	data, _ := proto.Marshal(&hlopb.HloProto{HloModule: mp})
	m, _, kind, err := Load(data)
	if err != nil || kind != KindHloProto || m.ReplicaCount != 0 {
		t.Fatalf("HloProto: kind %q, err %v", kind, err)
	}
	data, _ = proto.Marshal(&hlopb.HloModuleProtoWithConfig{HloModule: mp, Config: &hlopb.HloModuleConfigProto{ReplicaCount: 2, NumPartitions: 4}})
	m, _, kind, err = Load(data)
	if err != nil || kind != KindHloProto || m.ReplicaCount != 2 || m.NumPartitions != 4 {
		t.Fatalf("HloModuleProtoWithConfig: kind %q, replicas %d, partitions %d, err %v", kind, m.ReplicaCount, m.NumPartitions, err)
	}
}

// TestOneBitLiterals covers s1/u1, which XLA itself cannot read from a proto:
// one element per byte, value in the low bit, relaid out from {0,1}.
func TestOneBitLiterals(t *testing.T) {
	for _, tc := range []struct {
		typ  hlopb.PrimitiveType
		set  func(*hlopb.LiteralProto, []byte)
		name string
	}{
		{hlopb.PrimitiveType_S1, func(l *hlopb.LiteralProto, b []byte) { l.S1S = b }, "int1"},
		{hlopb.PrimitiveType_U1, func(l *hlopb.LiteralProto, b []byte) { l.U1S = b }, "uint1"},
	} {
		lp := &hlopb.LiteralProto{Shape: &hlopb.ShapeProto{ElementType: tc.typ, Dimensions: []int64{2, 3}, Layout: &hlopb.LayoutProto{MinorToMajor: []int64{0, 1}}}}
		// Column-major storage of {{1,0,1},{0,0,1}}; the high bits must be dropped.
		tc.set(lp, []byte{0xff, 0, 0, 0, 1, 0x81})
		lit, err := ReadLiteral(lp)
		if err != nil {
			t.Fatal(err)
		}
		checkLiteral(t, lit, tc.name, []int64{2, 3}, []byte{1, 0, 1, 0, 0, 1})
	}
}

// TestCorruptInputs checks that malformed protos give errors naming the problem.
func TestCorruptInputs(t *testing.T) {
	f32 := func(dims ...int64) *hlopb.ShapeProto {
		return &hlopb.ShapeProto{ElementType: hlopb.PrimitiveType_F32, Dimensions: dims}
	}
	param := &hlopb.HloInstructionProto{Name: "p", Opcode: "parameter", Shape: f32(2), Id: 1}
	module := func(instrs ...*hlopb.HloInstructionProto) *hlopb.HloModuleProto {
		return &hlopb.HloModuleProto{Name: "m", EntryComputationId: 7, Computations: []*hlopb.HloComputationProto{
			{Name: "e", Id: 7, RootId: instrs[len(instrs)-1].Id, Instructions: instrs}}}
	}
	for _, tc := range []struct {
		name string
		mp   *hlopb.HloModuleProto
		want string
	}{
		{"no computations", &hlopb.HloModuleProto{Name: "m"}, "no computations"},
		{"bad entry", &hlopb.HloModuleProto{Name: "m", EntryComputationId: 3, Computations: module(param).Computations}, "entry computation id 3"},
		{"undefined operand", module(param, &hlopb.HloInstructionProto{Name: "n", Opcode: "negate", Shape: f32(2), Id: 2, OperandIds: []int64{9}}), "operand id 9"},
		{"missing callee", module(param, &hlopb.HloInstructionProto{Name: "c", Opcode: "call", Shape: f32(2), Id: 2, OperandIds: []int64{1}, CalledComputationIds: []int64{5}}), "called computation id 5"},
		{"while arity", module(param, &hlopb.HloInstructionProto{Name: "w", Opcode: "while", Shape: f32(2), Id: 2, OperandIds: []int64{1}}), "while calls 0"},
		{"bad layout", module(&hlopb.HloInstructionProto{Name: "p", Opcode: "parameter", Id: 1, Shape: &hlopb.ShapeProto{ElementType: hlopb.PrimitiveType_F32, Dimensions: []int64{2, 2}, Layout: &hlopb.LayoutProto{MinorToMajor: []int64{1, 1}}}}), "not a permutation"},
		{"bad type", module(&hlopb.HloInstructionProto{Name: "p", Opcode: "parameter", Id: 1, Shape: &hlopb.ShapeProto{ElementType: 99}}), "unknown element type 99"},
		{"negative dim", module(&hlopb.HloInstructionProto{Name: "p", Opcode: "parameter", Id: 1, Shape: f32(-2)}), "negative dimension"},
		{"short literal", module(&hlopb.HloInstructionProto{Name: "c", Opcode: "constant", Id: 1, Shape: f32(3), Literal: &hlopb.LiteralProto{Shape: f32(3), F32S: []float32{1, 2}}}), "f32s holds 2 values, want 3"},
		{"huge literal", module(&hlopb.HloInstructionProto{Name: "c", Opcode: "constant", Id: 1, Shape: f32(1 << 40), Literal: &hlopb.LiteralProto{Shape: f32(1 << 40)}}), "more than the limit"},
		{"parameter gap", module(&hlopb.HloInstructionProto{Name: "p", Opcode: "parameter", Id: 1, Shape: f32(2), ParameterNumber: 1}), "out of range"},
		{"bad root", &hlopb.HloModuleProto{Name: "m", EntryComputationId: 7, Computations: []*hlopb.HloComputationProto{{Name: "e", Id: 7, RootId: 4, Instructions: []*hlopb.HloInstructionProto{param}}}}, "root id 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := proto.Marshal(tc.mp)
			if err != nil {
				t.Fatal(err)
			}
			_, err = ReadModule(data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to mention %q", err, tc.want)
			}
		})
	}
	if _, _, _, err := Load([]byte("\x0a\x05hello garbage")); err == nil {
		t.Error("Load accepted garbage")
	}
}

func TestLooksLikeText(t *testing.T) {
	for in, want := range map[string]bool{
		"HloModule m\n":                    true,
		"  // c\n/* x */ HloModule m":      true,
		"/* unterminated HloModule":        false,
		"\x0a\x02HloModule":                false,
		"// only a comment":                false,
		"\n\n\tHloModule jit_f, entry=...": true,
	} {
		if got := looksLikeText([]byte(in)); got != want {
			t.Errorf("looksLikeText(%q) = %v", in, got)
		}
	}
}
