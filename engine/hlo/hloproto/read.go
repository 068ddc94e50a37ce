// Package hloproto reads XLA's binary HLO protos — HloModuleProto, HloProto,
// HloModuleProtoWithConfig and HloSnapshot — into goldtrace's HLO model, the
// same model the HLO text parser builds, and auto-detects text versus proto
// input the way XLA's run_hlo_module does.
package hloproto

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/hlo/hlopb"
)

// ReadModule decodes a serialized HloModuleProto.
func ReadModule(data []byte) (*hlo.Module, error) {
	var mp hlopb.HloModuleProto
	if err := proto.Unmarshal(data, &mp); err != nil {
		return nil, fmt.Errorf("hloproto: decoding HloModuleProto: %w", err)
	}
	return ConvertModule(&mp, nil)
}

// ReadSnapshot decodes a serialized HloSnapshot: its module and its argument
// literals (in parameter order).
func ReadSnapshot(data []byte) (*hlo.Module, []*hlo.Literal, error) {
	var sp hlopb.HloSnapshot
	if err := proto.Unmarshal(data, &sp); err != nil {
		return nil, nil, fmt.Errorf("hloproto: decoding HloSnapshot: %w", err)
	}
	return convertSnapshot(&sp)
}

func convertSnapshot(sp *hlopb.HloSnapshot) (*hlo.Module, []*hlo.Literal, error) {
	if sp.GetHlo().GetHloModule() == nil {
		return nil, nil, fmt.Errorf("hloproto: HloSnapshot has no hlo.hlo_module")
	}
	m, err := ConvertModule(sp.GetHlo().GetHloModule(), nil)
	if err != nil {
		return nil, nil, err
	}
	args := make([]*hlo.Literal, len(sp.GetArguments()))
	for i, a := range sp.GetArguments() {
		l, err := ReadLiteral(a)
		if err != nil {
			return nil, nil, fmt.Errorf("hloproto: HloSnapshot argument %d: %w", i, err)
		}
		args[i] = l
	}
	return m, args, nil
}

// Kinds of input reported by Load.
const (
	KindText        = "text"         // HLO text
	KindSnapshot    = "snapshot"     // HloSnapshot
	KindHloProto    = "hlo_proto"    // HloProto or HloModuleProtoWithConfig
	KindModuleProto = "module_proto" // bare HloModuleProto
)

// ParseText parses HLO text for Load. It is a variable so Load does not
// depend on when the text parser is wired in; it defaults to hlo.ParseText.
var ParseText = parseTextDefault

// Load reads an HLO module from HLO text or any of XLA's binary forms. Text
// is recognized by "HloModule" after leading whitespace and comments.
// Otherwise, like run_hlo_module, it tries HloSnapshot, then HloProto, then
// HloModuleProto. Because protobuf decoding accepts many byte strings, a
// form only counts when its module converts cleanly. args is non-nil only
// for snapshots.
func Load(data []byte) (m *hlo.Module, args []*hlo.Literal, kind string, err error) {
	if looksLikeText(data) {
		m, err = ParseText(data)
		return m, nil, KindText, err
	}
	var errs []string
	var sp hlopb.HloSnapshot
	if e := proto.Unmarshal(data, &sp); e == nil && len(sp.GetHlo().GetHloModule().GetComputations()) > 0 {
		m, args, err = convertSnapshot(&sp)
		if err == nil {
			return m, args, KindSnapshot, nil
		}
		errs = append(errs, "as HloSnapshot: "+err.Error())
	} else if e != nil {
		errs = append(errs, "as HloSnapshot: "+e.Error())
	}
	var hp hlopb.HloModuleProtoWithConfig
	if e := proto.Unmarshal(data, &hp); e == nil && len(hp.GetHloModule().GetComputations()) > 0 {
		m, err = ConvertModule(hp.GetHloModule(), hp.GetConfig())
		if err == nil {
			return m, nil, KindHloProto, nil
		}
		errs = append(errs, "as HloProto: "+err.Error())
	} else if e != nil {
		errs = append(errs, "as HloProto: "+e.Error())
	}
	var mp hlopb.HloModuleProto
	e := proto.Unmarshal(data, &mp)
	if e == nil {
		m, err = ConvertModule(&mp, nil)
		if err == nil {
			return m, nil, KindModuleProto, nil
		}
		errs = append(errs, "as HloModuleProto: "+err.Error())
	} else {
		errs = append(errs, "as HloModuleProto: "+e.Error())
	}
	return nil, nil, "", fmt.Errorf("hloproto: input is neither HLO text nor a valid HLO proto (%s)", strings.Join(errs, "; "))
}

// looksLikeText reports whether data starts with "HloModule" after
// whitespace and // or /* */ comments.
func looksLikeText(data []byte) bool {
	s := string(data)
	for {
		s = strings.TrimLeft(s, " \t\r\n")
		switch {
		case strings.HasPrefix(s, "//"):
			i := strings.IndexByte(s, '\n')
			if i < 0 {
				return false
			}
			s = s[i+1:]
		case strings.HasPrefix(s, "/*"):
			i := strings.Index(s[2:], "*/")
			if i < 0 {
				return false
			}
			s = s[2+i+2:]
		default:
			return strings.HasPrefix(s, "HloModule")
		}
	}
}

// ConvertModule builds the model from a decoded HloModuleProto. config may be
// nil; when given it supplies replica_count, num_partitions and the entry
// layout, which HloModuleProto itself does not carry.
func ConvertModule(mp *hlopb.HloModuleProto, config *hlopb.HloModuleConfigProto) (*hlo.Module, error) {
	m, err := convertModule(mp, config)
	if err != nil {
		name := mp.GetName()
		return nil, fmt.Errorf("hloproto: module %q: %w", name, err)
	}
	return m, nil
}

func convertModule(mp *hlopb.HloModuleProto, config *hlopb.HloModuleConfigProto) (*hlo.Module, error) {
	if len(mp.GetComputations()) == 0 {
		return nil, fmt.Errorf("no computations")
	}
	m := &hlo.Module{Name: mp.GetName()}
	byID := map[int64]*hlo.Computation{}
	mc := &moduleContext{comps: byID, payloads: mp.GetPayloads()}
	for i, cp := range mp.GetComputations() {
		c, err := convertComputation(cp, mc)
		if err != nil {
			return nil, fmt.Errorf("computation %d (%q): %w", i, cp.GetName(), err)
		}
		if _, dup := byID[c.ID]; dup {
			return nil, fmt.Errorf("computation %q: duplicate id %d", c.Name, c.ID)
		}
		byID[c.ID] = c
		m.Computations = append(m.Computations, c)
	}
	entry, ok := byID[mp.GetEntryComputationId()]
	if !ok {
		return nil, fmt.Errorf("entry computation id %d not found", mp.GetEntryComputationId())
	}
	entry.IsEntry = true
	m.Entry = entry

	var err error
	layout := mp.GetHostProgramShape()
	if config.GetEntryComputationLayout() != nil {
		layout = config.GetEntryComputationLayout()
	}
	if m.EntryLayout, err = convertProgramShape(layout); err != nil {
		return nil, fmt.Errorf("entry computation layout: %w", err)
	}
	if config != nil {
		m.ReplicaCount = config.GetReplicaCount()
		m.NumPartitions = config.GetNumPartitions()
	}
	m.IsScheduled = mp.Schedule != nil
	m.FrontendAttrs = frontendAttrs(mp.GetFrontendAttributes())
	for _, e := range mp.GetInputOutputAlias().GetEntries() {
		kind := "may-alias"
		if e.GetKind() == hlopb.Kind_MUST_ALIAS {
			kind = "must-alias"
		}
		m.InputOutputAlias = append(m.InputOutputAlias, hlo.IOAlias{
			OutputIndex: nonNil(e.GetOutputShapeIndex()),
			Param:       e.GetParameterNumber(),
			ParamIndex:  nonNil(e.GetParameterShapeIndex()),
			Kind:        kind,
		})
	}
	for _, e := range mp.GetBufferDonor().GetEntries() {
		m.BufferDonors = append(m.BufferDonors, hlo.BufferDonor{
			Param:      e.GetParameterNumber(),
			ParamIndex: nonNil(e.GetParameterShapeIndex()),
		})
	}
	return m, nil
}

func nonNil(v []int64) []int64 { return append([]int64{}, v...) }

func frontendAttrs(fa *hlopb.FrontendAttributes) map[string]string {
	if len(fa.GetMap()) == 0 {
		return nil
	}
	out := make(map[string]string, len(fa.GetMap()))
	for k, v := range fa.GetMap() {
		out[k] = v
	}
	return out
}

// moduleContext is what instructions may refer to outside their computation.
type moduleContext struct {
	comps    map[int64]*hlo.Computation // computations converted so far, by id
	payloads [][]byte                   // HloModuleProto.payloads
}

func convertComputation(cp *hlopb.HloComputationProto, mc *moduleContext) (*hlo.Computation, error) {
	c := &hlo.Computation{Name: cp.GetName(), ID: cp.GetId()}
	if c.Name == "" {
		return nil, fmt.Errorf("computation without a name")
	}
	if t := cp.GetExecutionThread(); t != "main" {
		c.ExecutionThread = t
	}
	if len(cp.GetInstructions()) == 0 {
		return nil, fmt.Errorf("no instructions")
	}
	byID := make(map[int64]*hlo.Instruction, len(cp.GetInstructions()))
	var params []*hlo.Instruction
	for i, ip := range cp.GetInstructions() {
		in, err := convertInstruction(ip, byID, mc)
		if err != nil {
			return nil, fmt.Errorf("instruction %d (%q): %w", i, ip.GetName(), err)
		}
		if _, dup := byID[in.ID]; dup {
			return nil, fmt.Errorf("instruction %q: duplicate id %d", in.Name, in.ID)
		}
		in.Parent = c
		byID[in.ID] = in
		c.Instructions = append(c.Instructions, in)
		if in.Opcode == "parameter" {
			params = append(params, in)
		}
	}
	// Control predecessors may be listed after their successors.
	for i, ip := range cp.GetInstructions() {
		in := c.Instructions[i]
		for _, id := range ip.GetControlPredecessorIds() {
			p, ok := byID[id]
			if !ok {
				return nil, fmt.Errorf("instruction %q: control predecessor id %d not in computation", in.Name, id)
			}
			in.ControlPredecessors = append(in.ControlPredecessors, p)
		}
	}
	c.Params = make([]*hlo.Instruction, len(params))
	for _, p := range params {
		n := p.ParameterNumber
		if n < 0 || n >= int64(len(params)) || c.Params[n] != nil {
			return nil, fmt.Errorf("parameter %q: number %d is out of range or repeated (%d parameters)", p.Name, n, len(params))
		}
		c.Params[n] = p
	}
	root, ok := byID[cp.GetRootId()]
	if !ok {
		return nil, fmt.Errorf("root id %d not in computation", cp.GetRootId())
	}
	c.Root = root
	return c, nil
}

// convertInstruction maps one instruction. Operands must already be defined
// (protos list instructions in dependency order); callees must be earlier
// computations.
func convertInstruction(ip *hlopb.HloInstructionProto, instrs map[int64]*hlo.Instruction, mc *moduleContext) (*hlo.Instruction, error) {
	in := &hlo.Instruction{Name: strings.TrimPrefix(ip.GetName(), "%"), ID: ip.GetId(), Opcode: ip.GetOpcode()}
	if in.Name == "" {
		return nil, fmt.Errorf("instruction without a name")
	}
	if in.Opcode == "" {
		return nil, fmt.Errorf("no opcode")
	}
	var err error
	if in.Shape, err = convertShape(ip.Shape); err != nil {
		return nil, fmt.Errorf("shape: %w", err)
	}
	for _, id := range ip.GetOperandIds() {
		op, ok := instrs[id]
		if !ok {
			return nil, fmt.Errorf("operand id %d is not defined earlier in the computation", id)
		}
		in.Operands = append(in.Operands, op)
	}
	for _, id := range ip.GetCalledComputationIds() {
		c, ok := mc.comps[id]
		if !ok {
			return nil, fmt.Errorf("called computation id %d is not defined earlier in the module", id)
		}
		in.Called = append(in.Called, c)
	}
	// The proto stores while's callees as [body, condition]; the model uses
	// text order [condition, body].
	if in.Opcode == "while" {
		if len(in.Called) != 2 {
			return nil, fmt.Errorf("while calls %d computations, want 2", len(in.Called))
		}
		in.Called[0], in.Called[1] = in.Called[1], in.Called[0]
	}
	if err := convertAttributes(ip, in); err != nil {
		return nil, err
	}
	bc, err := backendConfig(ip, mc.payloads)
	if err != nil {
		return nil, err
	}
	in.BackendConfig = bc
	return in, nil
}

// convertAttributes maps the opcode-specific proto fields. Values XLA writes
// into every proto but leaves out of text when they are the default (group
// counts of 1, all-default precision, the element type's default comparison
// type, the original custom-call API) are stored as "absent", as the text
// parser would.
func convertAttributes(ip *hlopb.HloInstructionProto, in *hlo.Instruction) error {
	in.Metadata = convertMetadata(ip.GetMetadata())
	if ip.Sharding != nil {
		s, err := shardingText(ip.Sharding, 0)
		if err != nil {
			return fmt.Errorf("sharding: %w", err)
		}
		in.Sharding = s
	}
	in.FrontendAttrs = frontendAttrs(ip.GetFrontendAttributes())

	switch in.Opcode {
	case "parameter":
		in.ParameterNumber = ip.GetParameterNumber()
	case "constant":
		if ip.Literal == nil {
			return fmt.Errorf("constant without a literal")
		}
		lit, err := literalFromProto(ip.Literal, ip.Shape, 0)
		if err != nil {
			return fmt.Errorf("literal: %w", err)
		}
		in.Literal = lit
	case "get-tuple-element":
		in.TupleIndex = ip.GetTupleIndex()
	case "iota":
		d := ip.GetDimensions()
		if len(d) != 1 {
			return fmt.Errorf("iota has %d dimensions, want 1", len(d))
		}
		in.IotaDimension = d[0]
	case "fft":
		in.FFTType = ip.GetFftType().String()
		in.FFTLength = nonNil(ip.GetFftLength())
	case "rng":
		in.RngDistribution = strings.ToLower(ip.GetDistribution().String())
	case "rng-bit-generator":
		in.RngAlgorithm = strings.ToLower(ip.GetRngAlgorithm().String())
	case "triangular-solve":
		o := ip.GetTriangularSolveOptions()
		in.LeftSide, in.Lower, in.UnitDiagonal = o.GetLeftSide(), o.GetLower(), o.GetUnitDiagonal()
		in.TransposeA = o.GetTransposeA().String()
	case "cholesky":
		in.Lower = ip.GetCholeskyOptions().GetLower()
	case "batch-norm-training", "batch-norm-inference", "batch-norm-grad":
		in.Epsilon = ip.GetEpsilon()
		in.FeatureIndex = ip.GetFeatureIndex()
	case "reduce-precision":
		in.ExponentBits = int64(ip.GetExponentBits())
		in.MantissaBits = int64(ip.GetMantissaBits())
	case "topk":
		in.K = ip.GetK()
		in.Largest = ip.GetLargest()
	case "sort":
		in.IsStable = ip.GetIsStable()
	case "fusion":
		in.FusionKind = ip.GetFusionKind()
	case "call":
		in.IsComposite = ip.GetIsComposite()
	case "compare":
		in.ComparisonDirection = ip.GetComparisonDirection()
		in.ComparisonType = ip.GetComparisonType()
		if len(in.Operands) > 0 && in.ComparisonType == defaultComparisonType(in.Operands[0].Shape.Elem) {
			in.ComparisonType = ""
		}
	case "custom-call":
		in.CustomCallTarget = ip.GetCustomCallTarget()
		if v := ip.GetCustomCallApiVersion(); v != hlopb.CustomCallApiVersion_API_VERSION_ORIGINAL && v != hlopb.CustomCallApiVersion_API_VERSION_UNSPECIFIED {
			in.APIVersion = v.String()
		}
		in.CustomCallHasSideEffect = ip.GetCustomCallHasSideEffect()
		for i, s := range ip.GetOperandShapesWithLayout() {
			sh, err := convertShape(s)
			if err != nil {
				return fmt.Errorf("operand layout constraint %d: %w", i, err)
			}
			in.OperandLayoutConstraints = append(in.OperandLayoutConstraints, sh)
		}
		if s := ip.GetCustomCallSchedule(); s != hlopb.CustomCallSchedule_SCHEDULE_NONE {
			in.ExtraAttrs = append(in.ExtraAttrs, hlo.RawAttr{Name: "schedule", Value: s.String()})
		}
	}
	if in.Opcode != "iota" && len(ip.GetDimensions()) > 0 {
		in.Dimensions = nonNil(ip.GetDimensions())
	}
	for _, s := range ip.GetSliceDimensions() {
		in.Slice = append(in.Slice, hlo.SliceDim{Start: s.GetStart(), Limit: s.GetLimit(), Stride: s.GetStride()})
	}
	for _, p := range ip.GetPaddingConfig().GetDimensions() {
		in.Padding = append(in.Padding, hlo.PadDim{Low: p.GetEdgePaddingLow(), High: p.GetEdgePaddingHigh(), Interior: p.GetInteriorPadding()})
	}
	if len(ip.GetDynamicSliceSizes()) > 0 {
		in.DynamicSliceSizes = nonNil(ip.GetDynamicSliceSizes())
	}
	for _, w := range ip.GetWindow().GetDimensions() {
		in.Window = append(in.Window, hlo.WindowDim{
			Size: w.GetSize(), Stride: orOne(w.GetStride()),
			PadLow: w.GetPaddingLow(), PadHigh: w.GetPaddingHigh(),
			BaseDilation: orOne(w.GetBaseDilation()), WindowDilation: orOne(w.GetWindowDilation()),
			WindowReversal: w.GetWindowReversal(),
		})
	}
	if cd := ip.GetConvolutionDimensionNumbers(); cd != nil {
		in.ConvDims = &hlo.ConvDimensionNumbers{
			InputBatch: cd.GetInputBatchDimension(), InputFeature: cd.GetInputFeatureDimension(),
			InputSpatial:       nonNil(cd.GetInputSpatialDimensions()),
			KernelInputFeature: cd.GetKernelInputFeatureDimension(), KernelOutputFeature: cd.GetKernelOutputFeatureDimension(),
			KernelSpatial: nonNil(cd.GetKernelSpatialDimensions()),
			OutputBatch:   cd.GetOutputBatchDimension(), OutputFeature: cd.GetOutputFeatureDimension(),
			OutputSpatial: nonNil(cd.GetOutputSpatialDimensions()),
		}
	}
	if g := ip.GetFeatureGroupCount(); g > 1 {
		in.FeatureGroupCount = g
	}
	if g := ip.GetBatchGroupCount(); g > 1 {
		in.BatchGroupCount = g
	}
	dd := ip.GetDotDimensionNumbers()
	if rd := ip.GetRaggedDotDimensionNumbers(); rd != nil && dd == nil {
		dd = rd.GetDotDimensionNumbers()
	}
	if rd := ip.GetRaggedDotDimensionNumbers(); rd != nil {
		in.RaggedDims = &hlo.RaggedDotDimensionNumbers{
			LhsRaggedDims: nonNil(rd.GetLhsRaggedDimensions()), RhsGroupDims: nonNil(rd.GetRhsGroupDimensions()),
		}
	}
	if dd != nil {
		in.DotDims = &hlo.DotDimensionNumbers{
			LhsBatch: nonNil(dd.GetLhsBatchDimensions()), RhsBatch: nonNil(dd.GetRhsBatchDimensions()),
			LhsContracting: nonNil(dd.GetLhsContractingDimensions()), RhsContracting: nonNil(dd.GetRhsContractingDimensions()),
		}
	}
	if pc := ip.GetPrecisionConfig(); pc != nil {
		nonDefault := false
		for _, p := range pc.GetOperandPrecision() {
			if p != hlopb.PrecisionConfig_DEFAULT {
				nonDefault = true
			}
		}
		if nonDefault {
			for _, p := range pc.GetOperandPrecision() {
				in.OperandPrecision = append(in.OperandPrecision, strings.ToLower(p.String()))
			}
		}
		if a := pc.GetAlgorithm(); a != hlopb.PrecisionConfig_ALG_UNSET {
			in.Algorithm = strings.ToLower(strings.TrimPrefix(a.String(), "ALG_"))
		}
	}
	if gd := ip.GetGatherDimensionNumbers(); gd != nil {
		in.GatherDims = &hlo.GatherDimensionNumbers{
			OffsetDims: nonNil(gd.GetOffsetDims()), CollapsedSliceDims: nonNil(gd.GetCollapsedSliceDims()),
			StartIndexMap: nonNil(gd.GetStartIndexMap()), IndexVectorDim: gd.GetIndexVectorDim(),
			OperandBatchingDims: nonNil(gd.GetOperandBatchingDims()), StartIndicesBatchingDims: nonNil(gd.GetStartIndicesBatchingDims()),
		}
		in.GatherSliceSizes = nonNil(ip.GetGatherSliceSizes())
	}
	if sd := ip.GetScatterDimensionNumbers(); sd != nil {
		in.ScatterDims = &hlo.ScatterDimensionNumbers{
			UpdateWindowDims: nonNil(sd.GetUpdateWindowDims()), InsertedWindowDims: nonNil(sd.GetInsertedWindowDims()),
			ScatterDimsToOperandDims: nonNil(sd.GetScatterDimsToOperandDims()), IndexVectorDim: sd.GetIndexVectorDim(),
			InputBatchingDims: nonNil(sd.GetInputBatchingDims()), ScatterIndicesBatchingDims: nonNil(sd.GetScatterIndicesBatchingDims()),
		}
	}
	in.IndicesAreSorted = ip.GetIndicesAreSorted()
	in.UniqueIndices = ip.GetUniqueIndices()

	in.ReplicaGroups = replicaGroups(ip)
	if hasUnknownField(ip, meshAxesReplicaGroupListField) {
		// Dropping it would leave "no groups": everyone in one group.
		return fmt.Errorf("mesh_axes_replica_group_list (HloInstructionProto field %d) is not supported in protos; give the module as HLO text, where mesh['x'=4] {'x'} is", meshAxesReplicaGroupListField)
	}
	if c := ip.GetChannelId(); c > 0 {
		in.ChannelID = c
	}
	in.UseGlobalDeviceIDs = ip.GetUseGlobalDeviceIds()
	// A custom-call's constrained layouts show in text only as
	// operand_layout_constraints, which the model keeps on their own.
	if in.Opcode != "custom-call" {
		in.ConstrainLayout = ip.GetConstrainLayout()
	}
	for _, st := range ip.GetSourceTargetPairs() {
		in.SourceTargetPairs = append(in.SourceTargetPairs, [2]int64{st.GetSource(), st.GetTarget()})
	}
	for _, a := range ip.GetOutputOperandAliasing() {
		in.OutputOperandAliasing = append(in.OutputOperandAliasing, hlo.OutputOperandAlias{
			OutputIndex: nonNil(a.GetOutputShapeIndex()), Operand: a.GetOperandIndex(), OperandIndex: nonNil(a.GetOperandShapeIndex()),
		})
	}
	addExtraAttrs(ip, in)
	return nil
}

// addExtraAttrs keeps, as raw text, attributes the model has no field for.
func addExtraAttrs(ip *hlopb.HloInstructionProto, in *hlo.Instruction) {
	add := func(name, value string) { in.ExtraAttrs = append(in.ExtraAttrs, hlo.RawAttr{Name: name, Value: value}) }
	if ip.GetIsHostTransfer() {
		add("is_host_transfer", "true")
	}
	if t := ip.GetAsyncExecutionThread(); t != "" && t != "main" {
		add("async_execution_thread", strconv.Quote(t))
	}
	if in.Opcode == "rng-get-and-update-state" {
		add("delta", strconv.FormatInt(ip.GetDelta(), 10))
	}
	if c := ip.GetInfeedConfig(); len(c) > 0 {
		add("infeed_config", strconv.Quote(string(c)))
	}
	if c := ip.GetOutfeedConfig(); len(c) > 0 {
		add("outfeed_config", strconv.Quote(string(c)))
	}
	if ra := ip.GetResultAccuracy(); ra != nil {
		if t := ra.GetTolerance(); t != nil {
			add("result_accuracy", fmt.Sprintf("{tolerance={atol=%v,rtol=%v,ulps=%d}}", t.GetAtol(), t.GetRtol(), t.GetUlps()))
		} else if ra.GetMode() != hlopb.ResultAccuracy_DEFAULT {
			add("result_accuracy", "{mode="+strings.ToLower(ra.GetMode().String())+"}")
		}
	}
}

// backendConfig returns the backend config from the legacy bytes field or,
// in newer protos, from the payload (inline or by index into payloads).
func backendConfig(ip *hlopb.HloInstructionProto, payloads [][]byte) (string, error) {
	if b := ip.GetBackendConfig(); len(b) > 0 {
		return string(b), nil
	}
	p := ip.GetBackendConfigPayload()
	if p == nil {
		return "", nil
	}
	if v, ok := p.GetPayloadSource().(*hlopb.Payload_Id); ok {
		if v.Id < 0 || v.Id >= int64(len(payloads)) {
			return "", fmt.Errorf("backend config payload id %d out of range (%d payloads)", v.Id, len(payloads))
		}
		return string(payloads[v.Id]), nil
	}
	return string(p.GetValue()), nil
}

// meshAxesReplicaGroupListField is HloInstructionProto's
// mesh_axes_replica_group_list, which the committed proto subset lacks.
const meshAxesReplicaGroupListField = 93

// hasUnknownField reports whether m carries field number num among the
// fields its generated type does not know.
func hasUnknownField(m proto.Message, num protowire.Number) bool {
	b := m.ProtoReflect().GetUnknown()
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return false
		}
		if n == num {
			return true
		}
		b = b[l:]
		l = protowire.ConsumeFieldValue(n, typ, b)
		if l < 0 {
			return false
		}
		b = b[l:]
	}
	return false
}

// replicaGroups prefers collective_device_list over the deprecated
// replica_groups field, and returns nil when neither holds a group.
func replicaGroups(ip *hlopb.HloInstructionProto) *hlo.ReplicaGroups {
	cdl := ip.GetCollectiveDeviceList()
	iota := ip.GetIotaCollectiveDeviceList()
	if iota == nil {
		iota = cdl.GetIotaReplicaGroupList()
	}
	if iota != nil {
		perm := make([]int64, len(iota.GetIotaTransposePerm()))
		for i, p := range iota.GetIotaTransposePerm() {
			perm[i] = int64(p)
		}
		return &hlo.ReplicaGroups{Iota: &hlo.IotaReplicaGroups{
			GroupShape:  [2]int64{iota.GetNumReplicaGroups(), iota.GetNumDevicesPerGroup()},
			ReshapeDims: nonNil(iota.GetIotaReshapeDims()),
			Transpose:   perm,
		}}
	}
	groups := cdl.GetReplicaGroups()
	if len(groups) == 0 {
		groups = ip.GetReplicaGroups()
	}
	if len(groups) == 0 {
		return nil
	}
	out := &hlo.ReplicaGroups{Groups: make([][]int64, len(groups))}
	for i, g := range groups {
		out.Groups[i] = nonNil(g.GetReplicaIds())
	}
	return out
}

func orOne(v int64) int64 {
	if v == 0 {
		return 1
	}
	return v
}

// defaultComparisonType is the comparison type XLA assumes, and so omits
// from text, for operands of element type t.
func defaultComparisonType(t dtype.Type) string {
	switch {
	case t.IsFloat() || t.IsComplex():
		return "FLOAT"
	case t.IsSigned():
		return "SIGNED"
	default:
		return "UNSIGNED"
	}
}
