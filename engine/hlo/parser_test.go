package hlo

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
)

func mustParse(t *testing.T, src string) *Module {
	t.Helper()
	m := roundTrip(t, t.Name(), []byte(src))
	if m == nil {
		t.FailNow()
	}
	return m
}

func instr(t *testing.T, m *Module, name string) *Instruction {
	t.Helper()
	for _, c := range m.Computations {
		if in := c.Instruction(name); in != nil {
			return in
		}
	}
	t.Fatalf("no instruction %q", name)
	return nil
}

func TestSyntaxVariants(t *testing.T) {
	t.Run("bare names, no ENTRY, no ROOT, inferred shapes", func(t *testing.T) {
		m := mustParse(t, `HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  s = add(a, b)
}
main {
  x = f32[4,3] parameter(0)
  z = f32[] constant(0)
  r = reduce(x, z), dimensions={0}, to_apply=add
  c = compare(r, r), direction=LT
  t = tuple(r, c)
}`)
		if m.Entry.Name != "main" || !m.Entry.IsEntry || m.Entry.Root.Name != "t" {
			t.Fatalf("entry %q root %q", m.Entry.Name, m.Entry.Root.Name)
		}
		if got := instr(t, m, "t").Shape.String(); got != "(f32[3], pred[3])" {
			t.Errorf("inferred tuple shape %s", got)
		}
	})
	t.Run("inline operand shapes, nested instructions, comments", func(t *testing.T) {
		m := mustParse(t, `// leading comment
HloModule m /* block */, is_scheduled=true

ENTRY %e (x: f32[2], y: f32[2]) -> f32[2] {
  %x = f32[2]{0} parameter(0) // trailing
  %y = f32[2]{0} parameter(1)
  ROOT %r = f32[2]{0} add(f32[2]{0} %x, /*index=1*/ f32[2] multiply(f32[2] %x, f32[2] %y))
}
`)
		r := m.Entry.Root
		if len(m.Entry.Instructions) != 4 || r.Operands[1].Opcode != "multiply" || r.Operands[1].Operands[1].Name != "y" {
			t.Errorf("nested operand not parsed: %v", Print(m))
		}
	})
	t.Run("stack frame tables and header attributes", func(t *testing.T) {
		m := mustParse(t, `HloModule jit_f, is_scheduled=true, replica_count=2, num_partitions=4, input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {1,0}) }, buffer_donor={ (2, {}) }, entry_computation_layout={(f32[2]{0}, (s32[], f32[3]{0}), f32[1]{0})->(f32[2]{0}, f32[3]{0})}, frontend_attributes={a="1",b="x y"}, allow_spmd_sharding_propagation_to_output={true}, weird_attr=foo

FileNames
1 "/tmp/a.py"

FunctionNames
1 "<module>"

FileLocations
1 {file_name_id=1 function_name_id=1 line=6 end_line=6 column=4 end_column=26}

StackFrames
1 {file_location_id=1 parent_frame_id=1}

ENTRY %main (p0: f32[2], p1: (s32[], f32[3]), p2: f32[1]) -> (f32[2], f32[3]) {
  %p0 = f32[2]{0} parameter(0), metadata={op_name="x" stack_frame_id=1}
  %p1 = (s32[], f32[3]{0}) parameter(1)
  %p2 = f32[1]{0} parameter(2)
  %g = f32[3]{0} get-tuple-element(%p1), index=1
  ROOT %t = (f32[2]{0}, f32[3]{0}) tuple(%p0, %g)
}, execution_thread="main"
`)
		if m.ReplicaCount != 2 || m.NumPartitions != 4 || !m.IsScheduled {
			t.Errorf("header ints/bools: %+v", m)
		}
		want := []IOAlias{{OutputIndex: []int64{0}, Param: 0, ParamIndex: []int64{}, Kind: "may-alias"}, {OutputIndex: []int64{1}, Param: 1, ParamIndex: []int64{1, 0}}}
		if !reflect.DeepEqual(m.InputOutputAlias, want) {
			t.Errorf("input_output_alias %+v", m.InputOutputAlias)
		}
		if len(m.BufferDonors) != 1 || m.BufferDonors[0].Param != 2 {
			t.Errorf("buffer_donor %+v", m.BufferDonors)
		}
		if m.EntryLayout == nil || len(m.EntryLayout.Params) != 3 || m.EntryLayout.Params[1].String() != "(s32[], f32[3]{0})" {
			t.Errorf("entry layout %+v", m.EntryLayout)
		}
		if m.FrontendAttrs["b"] != "x y" || len(m.ExtraAttrs) != 2 || m.ExtraAttrs[1] != (RawAttr{"weird_attr", "foo"}) {
			t.Errorf("frontend %v extra %v", m.FrontendAttrs, m.ExtraAttrs)
		}
		if m.Entry.ExecutionThread != "main" {
			t.Errorf("execution thread %q", m.Entry.ExecutionThread)
		}
		md := instr(t, m, "p0").Metadata
		if md.OpName != "x" || len(md.Extra) != 1 || md.Extra[0] != (RawAttr{"stack_frame_id", "1"}) {
			t.Errorf("metadata %+v", md)
		}
	})
	t.Run("generic attributes", func(t *testing.T) {
		m := mustParse(t, `HloModule m
ENTRY e {
  p = f32[8,8]{1,0} parameter(0), sharding={devices=[2,1]<=[2]}
  a = f32[8,8]{1,0} custom-call(p), custom_call_target="foo\"bar", api_version=API_VERSION_TYPED_FFI, backend_config={"k": {"x": "}"}}, custom_call_has_side_effect=true, output_to_operand_aliasing={{}: (0, {})}, operand_layout_constraints={f32[8,8]{0,1}}, schedule=SCHEDULE_LATEST
  b = f32[8,8]{1,0} copy(a), control-predecessors={p}, backend_config="{\"q\":1}", statistics={visualizing_index=1,stat-index-0=0.5}, origin={{"x"}}, result_accuracy={tolerance={atol=0 rtol=0 ulps=1}}, metadata={op_type="t" op_name="n" source_file="f.py" source_line=12 deduplicated_name="d" preserve_layout=true}
  ROOT c = f32[8,8]{1,0} add(a, b), frontend_attributes={_xla="1", x.y={z = 2}}
}`)
		a := instr(t, m, "a")
		if a.CustomCallTarget != `foo"bar` || a.APIVersion != "API_VERSION_TYPED_FFI" || !a.CustomCallHasSideEffect ||
			a.BackendConfig != `{"k": {"x": "}"}}` || len(a.OperandLayoutConstraints) != 1 ||
			len(a.OutputOperandAliasing) != 1 || a.ExtraAttrs[0] != (RawAttr{"schedule", "SCHEDULE_LATEST"}) {
			t.Errorf("custom-call attrs %+v", a)
		}
		b := instr(t, m, "b")
		if b.BackendConfig != `{"q":1}` || len(b.ControlPredecessors) != 1 || len(b.ExtraAttrs) != 3 ||
			b.Metadata.SourceLine != 12 || b.Metadata.SourceFile != "f.py" || len(b.Metadata.Extra) != 2 {
			t.Errorf("copy attrs %+v %+v", b, b.Metadata)
		}
		if instr(t, m, "p").Sharding != "{devices=[2,1]<=[2]}" {
			t.Errorf("sharding %q", instr(t, m, "p").Sharding)
		}
		if instr(t, m, "c").FrontendAttrs["x.y"] != "{z = 2}" {
			t.Errorf("frontend attrs %v", instr(t, m, "c").FrontendAttrs)
		}
	})
	t.Run("per-op attributes", func(t *testing.T) {
		m := mustParse(t, `HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = pred[] compare(a, b), direction=GE, type=TOTALORDER
}
ENTRY e {
  x = f32[1,4,9,9]{3,2,1,0} parameter(0)
  w = f32[3,3,2,8]{3,2,1,0} parameter(1)
  conv = f32[1,8,5,6]{3,2,1,0} convolution(x, w), window={size=3x3 stride=2x1 pad=1_1x-1_2 lhs_dilate=1x1 rhs_dilate=1x2 rhs_reversal=0x1}, dim_labels=bf01_01io->bf01, feature_group_count=2, operand_precision={highest,default}
  pd = f32[1,4,17,7]{3,2,1,0} pad(x, f32[] constant(0)), padding=0_0x0_0x-1_1_1x1_-3
  sl = f32[1,2,9,3]{3,2,1,0} slice(x), slice={[0:1], [1:4:2], [0:9], [0:9:3]}
  rw = f32[1,4,5,5]{3,2,1,0} reduce-window(x, f32[] constant(0)), window={size=1x1x3x3 stride=1x1x2x2 pad=0_0x0_0x1_1x1_1}, to_apply=add
  ss = f32[1,4,9,9]{3,2,1,0} select-and-scatter(x, rw, f32[] constant(0)), window={size=1x1x3x3 stride=1x1x2x2 pad=0_0x0_0x1_1x1_1}, select=ge, scatter=add
  ar = f32[1,4,9,9]{3,2,1,0} all-reduce(x), replica_groups=[2,4]<=[4,2]T(1,0), channel_id=3, use_global_device_ids=true, to_apply=add
  ag = f32[1,4,9,9]{3,2,1,0} all-reduce(x), replica_groups={{0,1},{2,3}}, to_apply=add
  cp = f32[1,4,9,9]{3,2,1,0} collective-permute(x), source_target_pairs={{0,1},{1,0}}
  rp = f32[1,4,9,9]{3,2,1,0} reduce-precision(x), exponent_bits=5, mantissa_bits=0
  ROOT t = (f32[1,8,5,6]{3,2,1,0}, f32[1,4,17,7]{3,2,1,0}, f32[1,2,9,3]{3,2,1,0}, f32[1,4,9,9]{3,2,1,0}) tuple(conv, pd, sl, ss)
}`)
		conv := instr(t, m, "conv")
		if conv.Window[1] != (WindowDim{Size: 3, Stride: 1, PadLow: -1, PadHigh: 2, BaseDilation: 1, WindowDilation: 2, WindowReversal: true}) {
			t.Errorf("window %+v", conv.Window[1])
		}
		want := &ConvDimensionNumbers{InputBatch: 0, InputFeature: 1, InputSpatial: []int64{2, 3}, KernelInputFeature: 2,
			KernelOutputFeature: 3, KernelSpatial: []int64{0, 1}, OutputBatch: 0, OutputFeature: 1, OutputSpatial: []int64{2, 3}}
		if !reflect.DeepEqual(conv.ConvDims, want) || conv.FeatureGroupCount != 2 || conv.OperandPrecision[0] != "highest" {
			t.Errorf("conv dims %+v", conv.ConvDims)
		}
		if p := instr(t, m, "pd").Padding; p[2] != (PadDim{-1, 1, 1}) || p[3] != (PadDim{1, -3, 0}) {
			t.Errorf("padding %+v", p)
		}
		if s := instr(t, m, "sl").Slice; s[1] != (SliceDim{1, 4, 2}) || s[0].Stride != 1 {
			t.Errorf("slice %+v", s)
		}
		ar := instr(t, m, "ar")
		if ar.ReplicaGroups.Iota == nil || !reflect.DeepEqual(ar.ReplicaGroups.Iota.Transpose, []int64{1, 0}) || ar.ChannelID != 3 {
			t.Errorf("iota groups %+v", ar.ReplicaGroups.Iota)
		}
		if g := instr(t, m, "ag").ReplicaGroups.Groups; len(g) != 2 || g[1][1] != 3 {
			t.Errorf("groups %v", g)
		}
		if ss := instr(t, m, "ss"); ss.Called[0].Name != "ge" || ss.Called[1].Name != "add" {
			t.Errorf("select-and-scatter callees")
		}
	})
	t.Run("control flow callees in model order", func(t *testing.T) {
		m := mustParse(t, `HloModule m
c {
  p = (s32[], f32[2]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  ROOT lt = pred[] compare(i, s32[] constant(3)), direction=LT
}
b {
  p = (s32[], f32[2]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  v = f32[2] get-tuple-element(p), index=1
  ROOT t = (s32[], f32[2]) tuple(add(i, s32[] constant(1)), v)
}
br0 {
  p = f32[2] parameter(0)
  ROOT n = f32[2] negate(p)
}
ENTRY e {
  x = (s32[], f32[2]) parameter(0)
  w = (s32[], f32[2]) while(x), body=b, condition=c
  k = s32[] get-tuple-element(w), index=0
  v = f32[2] get-tuple-element(w), index=1
  c1 = f32[2] conditional(pred[] constant(true), v, v), false_computation=br0, true_computation=br0
  ROOT c2 = f32[2] conditional(k, v, c1, v), branch_computations={br0, br0, br0}
}`)
		if w := instr(t, m, "w"); w.Called[0].Name != "c" || w.Called[1].Name != "b" {
			t.Errorf("while callees %s %s", w.Called[0].Name, w.Called[1].Name)
		}
		if len(instr(t, m, "c2").Called) != 3 {
			t.Errorf("branch computations")
		}
	})
	t.Run("shapes", func(t *testing.T) {
		m := mustParse(t, `HloModule m
ENTRY e {
  a = f32[<=4,?,3]{2,1,0} parameter(0)
  b = (f32[2]{0:T(128)E(32)S(1)}, (s4[8]{0:T(2,128)(*,2)E(4)}, ()), token[]) parameter(1)
  c = bf16[8,128]{1,0:T(8,128)(2,1)L(4)#(u8)} parameter(2)
  ROOT t = (f32[<=4,?,3]{2,1,0}, bf16[8,128]{1,0:T(8,128)(2,1)L(4)#(u8)}) tuple(a, c)
}`)
		a := instr(t, m, "a").Shape
		if a.Dims[0] != 4 || a.Dims[1] != UnboundedDim || !reflect.DeepEqual(a.DynamicDims, []bool{true, true, false}) {
			t.Errorf("dynamic dims %+v", a)
		}
		b := instr(t, m, "b").Shape
		s4 := b.Tuple[1].Tuple[0]
		if s4.Elem != dtype.S4 || s4.Layout.ElementSizeBits != 4 || s4.Layout.Tiles[1].Dims[0] != TileCombineDim ||
			b.Tuple[0].Layout.MemorySpace != 1 || len(b.Tuple[1].Tuple[1].Tuple) != 0 || b.Tuple[2].Elem != dtype.Token {
			t.Errorf("tuple shape %v", b)
		}
		if l := instr(t, m, "c").Shape.Layout; !reflect.DeepEqual(l.Extra, []string{"L(4)", "#(u8)"}) {
			t.Errorf("raw layout items %q", l.Extra)
		}
	})
}

func TestConstants(t *testing.T) {
	m := mustParse(t, `HloModule m
ENTRY e {
  f = f32[7] constant({inf, -inf, nan, -nan, nan(0x1), -nan(0x200001), 1e-45})
  h = f16[3] constant({nan(0x3), 65504, -0})
  c = c64[2] constant({(1, -2.5), (nan, inf)})
  p = pred[2,2] constant({{true, false}, {false, true}})
  i = s4[4] constant({-8, 7, -1, 0})
  u = u64[1] constant({18446744073709551615})
  col = s32[2,3]{0,1} constant({{1, 2, 3}, {4, 5, 6}})
  z = f32[2,0] constant({{}, {}})
  tup = (s32[], (f32[2], pred[])) constant((1, ({2, 3}, true)))
  ROOT s = f64[] constant(-1e-300)
}`)
	f := instr(t, m, "f").Literal.Tensor.U32()
	want := []uint32{0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001, 0xffa00001, 1}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("f32 specials %x, want %x", f, want)
	}
	if h := instr(t, m, "h").Literal.Tensor.U16(); !reflect.DeepEqual(h, []uint16{0x7c03, 0x7bff, 0x8000}) {
		t.Errorf("f16 %x", h)
	}
	c := instr(t, m, "c").Literal.Tensor.C64()
	if c[0] != complex(1, -2.5) || !math.IsNaN(float64(real(c[1]))) || !math.IsInf(float64(imag(c[1])), 1) {
		t.Errorf("c64 %v", c)
	}
	if b := instr(t, m, "i").Literal.Tensor.U8(); !reflect.DeepEqual(b, []byte{8, 7, 15, 0}) {
		t.Errorf("s4 stored %v, want low nibbles (ml_dtypes int4)", b)
	}
	if v := instr(t, m, "u").Literal.Tensor.U64()[0]; v != math.MaxUint64 {
		t.Errorf("u64 %d", v)
	}
	if v := instr(t, m, "col").Literal.Tensor.I32(); !reflect.DeepEqual(v, []int32{1, 2, 3, 4, 5, 6}) {
		t.Errorf("a {0,1} constant must stay row-major logical: %v", v)
	}
	tup := instr(t, m, "tup").Literal
	if tup.Tuple[0].Tensor.I32()[0] != 1 || tup.Tuple[1].Tuple[0].Tensor.F32()[1] != 3 || !tup.Tuple[1].Tuple[1].Tensor.Bools()[0] {
		t.Errorf("tuple literal")
	}
}

func TestSyntaxErrors(t *testing.T) {
	head := "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n"
	for _, tc := range []struct{ src, want string }{
		{head + "  ROOT r = f32[2] frobnicate(p)\n}", `x.hlo:4:19: unknown opcode "frobnicate"`},
		{head + "  ROOT r = f32[2] add(p, q)\n}", `x.hlo:4:26: operand "q" of "r" is not defined earlier`},
		{head + "  ROOT r = f32[2] constant({...})\n}", `x.hlo:4:29: constant data elided`},
		{head + "  ROOT r = f16[] constant(70000)\n}", `x.hlo:4:27: "70000" is out of range for f16`},
		{head + "  ROOT r = s8[] constant(128)\n}", `x.hlo:4:26: "128" is not a valid s8 value`},
		{head + "  ROOT r = f32[2] constant({1, 2, 3})\n}", `x.hlo:4:35: too many elements`},
		{head + "  ROOT r = f32[2] map(p), to_apply=nope\n}", `x.hlo:4:36: computation "nope" is not defined`},
		{head + "  ROOT r = f32[2] add(p, p), metadata={op_name=\"x}\n}", `unterminated string`},
		{head + "  /* open\n}", `x.hlo:4:3: unterminated comment`},
		{head + "  ROOT r = f99[2] negate(p)\n}", `x.hlo:4:12: unknown element type "f99"`},
		{head + "  ROOT r = negate(p, p)\n}", `x.hlo:4:12: instruction "r" has no shape and it cannot be inferred: negate takes 1 operands, has 2`},
		{head + "  p = f32[2] negate(p)\n}", `x.hlo:4:3: instruction "p" is already defined`},
		{head + "  ROOT r = f32[2] add(p, p), window={size=2 pad=1}\n}", `x.hlo:4:49: invalid pad "1"`},
		{head + "  ROOT r = f32[2] add(p, p) junk\n}", `x.hlo:5:1: expected '=', found '}'`},
		{"HloModule m\n", `x.hlo:2:1: module "m" has no computations`},
		{"HloModul m\n", `x.hlo:1:1: expected 'HloModule'`},
		{head + "  ROOT r = f32[2] add(p, p) @\n}", `x.hlo:4:29: unexpected character "@"`},
	} {
		_, err := ParseText([]byte(tc.src), "x.hlo")
		var el ErrorList
		if !errors.As(err, &el) || len(el) == 0 {
			t.Errorf("%q: expected an ErrorList, got %v", tc.src, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %q does not contain %q", err, tc.want)
		}
	}
}

func TestVerifyErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"ROOT r = f32[3] add(p, p)", `computation "e", instruction "r" (add): inferred shape f32[2], declared f32[3]`},
		{"ROOT r = f32[2,2] dot(p, p), lhs_contracting_dims={0}, rhs_contracting_dims={0}", `inferred shape f32[], declared f32[2,2]`},
		{"ROOT r = f32[3] broadcast(p), dimensions={0}", `cannot broadcast`},
		{"ROOT r = f32[5] reshape(p)", `cannot reshape f32[2] into f32[5]`},
		{"ROOT r = f32[2] bitcast-convert(p)", ``},
		{"ROOT r = s16[2] bitcast-convert(p)", `bitcast-convert of f32[2] gives s16[2,2], declared s16[2]`},
		{"ROOT r = f32[2] transpose(p), dimensions={1}", `not a permutation`},
	} {
		src := "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  " + tc.body + "\n}\n"
		m, err := ParseText([]byte(src), "v.hlo")
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		err = Verify(m)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: unexpected %v", tc.body, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v does not contain %q", tc.body, err, tc.want)
		}
	}
}

func TestEqualReportsDifference(t *testing.T) {
	src := "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT r = f32[2] negate(p)\n}\n"
	a, _ := ParseText([]byte(src), "")
	b, _ := ParseText([]byte(strings.Replace(src, "negate", "abs", 1)), "")
	if ok, d := Equal(a, b); ok || !strings.Contains(d, "Opcode: negate vs abs") {
		t.Errorf("Equal = %v, %q", ok, d)
	}
}
