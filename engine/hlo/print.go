package hlo

import (
	"sort"
	"strconv"
	"strings"

	"goldtrace/engine/dtype"
)

// Print returns m as canonical HLO text that ParseText reads back into an
// equal module: every instruction with its full shape and layout, operands by
// name, attributes in a fixed order.
func Print(m *Module) string {
	var b strings.Builder
	b.WriteString("HloModule ")
	b.WriteString(m.Name)
	if m.IsScheduled {
		b.WriteString(", is_scheduled=true")
	}
	if m.ReplicaCount != 0 {
		b.WriteString(", replica_count=" + itoa(m.ReplicaCount))
	}
	if m.NumPartitions != 0 {
		b.WriteString(", num_partitions=" + itoa(m.NumPartitions))
	}
	if m.InputOutputAlias != nil {
		b.WriteString(", input_output_alias={")
		for i, a := range m.InputOutputAlias {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(intSet(a.OutputIndex) + ": (" + itoa(a.Param) + ", " + intSet(a.ParamIndex))
			if a.Kind != "" {
				b.WriteString(", " + a.Kind)
			}
			b.WriteByte(')')
		}
		b.WriteByte('}')
	}
	if m.BufferDonors != nil {
		b.WriteString(", buffer_donor={")
		for i, d := range m.BufferDonors {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(" + itoa(d.Param) + ", " + intSet(d.ParamIndex) + ")")
		}
		b.WriteByte('}')
	}
	if l := m.EntryLayout; l != nil {
		b.WriteString(", entry_computation_layout={(")
		for i, s := range l.Params {
			if i > 0 {
				b.WriteString(", ")
			}
			writeShape(&b, s)
		}
		b.WriteString(")->")
		writeShape(&b, l.Result)
		b.WriteByte('}')
	}
	if m.FrontendAttrs != nil {
		b.WriteString(", frontend_attributes=" + frontendAttrString(m.FrontendAttrs))
	}
	for _, a := range m.ExtraAttrs {
		b.WriteString(", " + a.Name + "=" + a.Value)
	}
	b.WriteString("\n")
	for _, c := range m.Computations {
		b.WriteString("\n")
		writeComputation(&b, c)
	}
	return b.String()
}

// String returns Print(m).
func (m *Module) String() string { return Print(m) }

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func intSet(v []int64) string {
	var b strings.Builder
	b.WriteByte('{')
	writeInts(&b, v, ",")
	b.WriteByte('}')
	return b.String()
}

func frontendAttrString(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		if isPlainWord(k) {
			b.WriteString(k)
		} else {
			b.WriteString(quote(k))
		}
		b.WriteString("=" + quote(m[k]))
	}
	b.WriteByte('}')
	return b.String()
}

func isPlainWord(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isWordByte(s[i]) || s[i] == '-' && i+1 < len(s) && s[i+1] == '>' {
			return false
		}
	}
	return true
}

// printName writes a name with '%' so it never collides with keywords.
func printName(b *strings.Builder, name string) {
	b.WriteByte('%')
	b.WriteString(name)
}

func writeComputation(b *strings.Builder, c *Computation) {
	if c.IsEntry {
		b.WriteString("ENTRY ")
	}
	printName(b, c.Name)
	b.WriteString(" {\n")
	for _, in := range c.Instructions {
		b.WriteString("  ")
		if in == c.Root {
			b.WriteString("ROOT ")
		}
		writeInstruction(b, in)
		b.WriteByte('\n')
	}
	b.WriteString("}")
	if c.ExecutionThread != "" {
		b.WriteString(", execution_thread=" + quote(c.ExecutionThread))
	}
	b.WriteString("\n")
}

func writeInstruction(b *strings.Builder, in *Instruction) {
	printName(b, in.Name)
	b.WriteString(" = ")
	writeShape(b, in.Shape)
	b.WriteByte(' ')
	b.WriteString(in.Opcode)
	b.WriteByte('(')
	switch in.Opcode {
	case "constant":
		writeLiteral(b, in.Literal)
	case "parameter":
		b.WriteString(itoa(in.ParameterNumber))
	default:
		for i, op := range in.Operands {
			if i > 0 {
				b.WriteString(", ")
			}
			printName(b, op.Name)
		}
	}
	b.WriteByte(')')
	attr := func(name, value string) {
		b.WriteString(", ")
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(value)
	}
	ints := func(name string, v []int64) {
		if v != nil {
			attr(name, intSet(v))
		}
	}
	boolAttr := func(name string, v bool) {
		if v {
			attr(name, "true")
		}
	}
	word := func(name, v string) {
		if v != "" {
			attr(name, v)
		}
	}
	switch in.Opcode {
	case "get-tuple-element":
		attr("index", itoa(in.TupleIndex))
	case "iota":
		attr("iota_dimension", itoa(in.IotaDimension))
	case "reduce-precision":
		attr("exponent_bits", itoa(in.ExponentBits))
		attr("mantissa_bits", itoa(in.MantissaBits))
	case "batch-norm-training", "batch-norm-inference", "batch-norm-grad":
		attr("epsilon", strconv.FormatFloat(float64(in.Epsilon), 'g', -1, 32))
		attr("feature_index", itoa(in.FeatureIndex))
	case "topk":
		attr("k", itoa(in.K))
		attr("largest", strconv.FormatBool(in.Largest))
	default:
		if in.TupleIndex != 0 {
			attr("index", itoa(in.TupleIndex))
		}
		if in.IotaDimension != 0 {
			attr("iota_dimension", itoa(in.IotaDimension))
		}
		if in.ExponentBits != 0 || in.MantissaBits != 0 {
			attr("exponent_bits", itoa(in.ExponentBits))
			attr("mantissa_bits", itoa(in.MantissaBits))
		}
		if in.Epsilon != 0 {
			attr("epsilon", strconv.FormatFloat(float64(in.Epsilon), 'g', -1, 32))
		}
		if in.FeatureIndex != 0 {
			attr("feature_index", itoa(in.FeatureIndex))
		}
		if in.K != 0 {
			attr("k", itoa(in.K))
		}
		boolAttr("largest", in.Largest)
	}
	ints("dimensions", in.Dimensions)
	if in.Slice != nil {
		var s strings.Builder
		s.WriteByte('{')
		for i, d := range in.Slice {
			if i > 0 {
				s.WriteString(", ")
			}
			s.WriteString("[" + itoa(d.Start) + ":" + itoa(d.Limit) + ":" + itoa(d.Stride) + "]")
		}
		s.WriteByte('}')
		attr("slice", s.String())
	}
	if in.Padding != nil {
		parts := make([]string, len(in.Padding))
		for i, d := range in.Padding {
			parts[i] = itoa(d.Low) + "_" + itoa(d.High)
			if d.Interior != 0 {
				parts[i] += "_" + itoa(d.Interior)
			}
		}
		attr("padding", strings.Join(parts, "x"))
	}
	ints("dynamic_slice_sizes", in.DynamicSliceSizes)
	if in.Window != nil {
		attr("window", windowString(in.Window))
	}
	if in.ConvDims != nil {
		attr("dim_labels", dimLabelsString(in.ConvDims))
	}
	if in.FeatureGroupCount != 0 {
		attr("feature_group_count", itoa(in.FeatureGroupCount))
	}
	if in.BatchGroupCount != 0 {
		attr("batch_group_count", itoa(in.BatchGroupCount))
	}
	if d := in.DotDims; d != nil {
		ints("lhs_batch_dims", nonEmpty(d.LhsBatch))
		ints("lhs_contracting_dims", nonEmpty(d.LhsContracting))
		ints("rhs_batch_dims", nonEmpty(d.RhsBatch))
		ints("rhs_contracting_dims", nonEmpty(d.RhsContracting))
	}
	if r := in.RaggedDims; r != nil {
		ints("lhs_ragged_dims", nonEmpty(r.LhsRaggedDims))
		ints("rhs_group_dims", nonEmpty(r.RhsGroupDims))
	}
	if in.OperandPrecision != nil {
		attr("operand_precision", "{"+strings.Join(in.OperandPrecision, ",")+"}")
	}
	word("algorithm", in.Algorithm)
	word("algorithm", in.RngAlgorithm)
	if g := in.GatherDims; g != nil {
		ints("offset_dims", nonNil(g.OffsetDims))
		ints("collapsed_slice_dims", nonNil(g.CollapsedSliceDims))
		ints("start_index_map", nonNil(g.StartIndexMap))
		attr("index_vector_dim", itoa(g.IndexVectorDim))
		ints("operand_batching_dims", nonEmpty(g.OperandBatchingDims))
		ints("start_indices_batching_dims", nonEmpty(g.StartIndicesBatchingDims))
	}
	ints("slice_sizes", in.GatherSliceSizes)
	if s := in.ScatterDims; s != nil {
		ints("update_window_dims", nonNil(s.UpdateWindowDims))
		ints("inserted_window_dims", nonNil(s.InsertedWindowDims))
		ints("scatter_dims_to_operand_dims", nonNil(s.ScatterDimsToOperandDims))
		attr("index_vector_dim", itoa(s.IndexVectorDim))
		ints("input_batching_dims", nonEmpty(s.InputBatchingDims))
		ints("scatter_indices_batching_dims", nonEmpty(s.ScatterIndicesBatchingDims))
	}
	boolAttr("indices_are_sorted", in.IndicesAreSorted)
	boolAttr("unique_indices", in.UniqueIndices)
	word("direction", in.ComparisonDirection)
	word("type", in.ComparisonType)
	word("order", in.ComparisonOrder)
	boolAttr("is_stable", in.IsStable)
	word("fft_type", in.FFTType)
	ints("fft_length", in.FFTLength)
	word("distribution", in.RngDistribution)
	boolAttr("left_side", in.LeftSide)
	boolAttr("lower", in.Lower)
	boolAttr("unit_diagonal", in.UnitDiagonal)
	word("transpose_a", in.TransposeA)
	if rg := in.ReplicaGroups; rg != nil {
		attr("replica_groups", replicaGroupsString(rg))
	}
	if in.ChannelID != 0 {
		attr("channel_id", itoa(in.ChannelID))
	}
	boolAttr("use_global_device_ids", in.UseGlobalDeviceIDs)
	boolAttr("constrain_layout", in.ConstrainLayout)
	if in.SourceTargetPairs != nil {
		var s strings.Builder
		s.WriteByte('{')
		for i, pr := range in.SourceTargetPairs {
			if i > 0 {
				s.WriteByte(',')
			}
			s.WriteString("{" + itoa(pr[0]) + "," + itoa(pr[1]) + "}")
		}
		s.WriteByte('}')
		attr("source_target_pairs", s.String())
	}
	if in.CustomCallTarget != "" {
		attr("custom_call_target", quote(in.CustomCallTarget))
	}
	word("api_version", in.APIVersion)
	boolAttr("custom_call_has_side_effect", in.CustomCallHasSideEffect)
	if in.OutputOperandAliasing != nil {
		parts := make([]string, len(in.OutputOperandAliasing))
		for i, a := range in.OutputOperandAliasing {
			parts[i] = intSet(a.OutputIndex) + ": (" + itoa(a.Operand) + ", " + intSet(a.OperandIndex) + ")"
		}
		attr("output_to_operand_aliasing", "{"+strings.Join(parts, ", ")+"}")
	}
	if in.OperandLayoutConstraints != nil {
		var s strings.Builder
		s.WriteByte('{')
		for i, sh := range in.OperandLayoutConstraints {
			if i > 0 {
				s.WriteString(", ")
			}
			writeShape(&s, sh)
		}
		s.WriteByte('}')
		attr("operand_layout_constraints", s.String())
	}
	word("kind", in.FusionKind)
	boolAttr("is_composite", in.IsComposite)
	writeCalled(in, attr)
	if in.ControlPredecessors != nil {
		names := make([]string, len(in.ControlPredecessors))
		for i, c := range in.ControlPredecessors {
			names[i] = "%" + c.Name
		}
		attr("control-predecessors", "{"+strings.Join(names, ", ")+"}")
	}
	if in.Sharding != "" {
		attr("sharding", in.Sharding)
	}
	if in.FrontendAttrs != nil {
		attr("frontend_attributes", frontendAttrString(in.FrontendAttrs))
	}
	if md := in.Metadata; md != nil {
		var parts []string
		if md.OpType != "" {
			parts = append(parts, "op_type="+quote(md.OpType))
		}
		if md.OpName != "" {
			parts = append(parts, "op_name="+quote(md.OpName))
		}
		if md.SourceFile != "" {
			parts = append(parts, "source_file="+quote(md.SourceFile))
		}
		if md.SourceLine != 0 {
			parts = append(parts, "source_line="+itoa(md.SourceLine))
		}
		for _, e := range md.Extra {
			parts = append(parts, e.Name+"="+e.Value)
		}
		attr("metadata", "{"+strings.Join(parts, " ")+"}")
	}
	if in.BackendConfig != "" {
		attr("backend_config", quote(in.BackendConfig))
	}
	for _, e := range in.ExtraAttrs {
		attr(e.Name, e.Value)
	}
}

// writeCalled prints the called computations under the attribute names the
// opcode uses; the parser maps every spelling back to the same Called list.
func writeCalled(in *Instruction, attr func(name, value string)) {
	if len(in.Called) == 0 {
		return
	}
	ref := func(c *Computation) string { return "%" + c.Name }
	if slots := calledSlotNames(in.Opcode); slots != nil && len(in.Called) == 2 &&
		(in.Opcode != "conditional" || len(in.Operands) > 0 && in.Operands[0].Shape.Elem == dtype.Pred) {
		attr(slots[0], ref(in.Called[0]))
		attr(slots[1], ref(in.Called[1]))
		return
	}
	if in.Opcode == "conditional" {
		attr("branch_computations", refList(in.Called))
		return
	}
	if in.Opcode == "custom-call" || len(in.Called) > 1 {
		attr("called_computations", refList(in.Called))
		return
	}
	if in.Opcode == "fusion" || strings.HasPrefix(in.Opcode, "async-") {
		attr("calls", ref(in.Called[0]))
		return
	}
	attr("to_apply", ref(in.Called[0]))
}

func refList(cs []*Computation) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = "%" + c.Name
	}
	return "{" + strings.Join(names, ", ") + "}"
}

func nonEmpty(v []int64) []int64 {
	if len(v) == 0 {
		return nil
	}
	return v
}

func nonNil(v []int64) []int64 {
	if v == nil {
		return []int64{}
	}
	return v
}

func windowString(w []WindowDim) string {
	field := func(name string, f func(WindowDim) string, isDefault func(WindowDim) bool) string {
		all := true
		parts := make([]string, len(w))
		for i, d := range w {
			parts[i] = f(d)
			all = all && isDefault(d)
		}
		if all && name != "size" {
			return ""
		}
		return name + "=" + strings.Join(parts, "x")
	}
	var fs []string
	for _, s := range []string{
		field("size", func(d WindowDim) string { return itoa(d.Size) }, func(WindowDim) bool { return false }),
		field("stride", func(d WindowDim) string { return itoa(d.Stride) }, func(d WindowDim) bool { return d.Stride == 1 }),
		field("pad", func(d WindowDim) string { return itoa(d.PadLow) + "_" + itoa(d.PadHigh) },
			func(d WindowDim) bool { return d.PadLow == 0 && d.PadHigh == 0 }),
		field("lhs_dilate", func(d WindowDim) string { return itoa(d.BaseDilation) }, func(d WindowDim) bool { return d.BaseDilation == 1 }),
		field("rhs_dilate", func(d WindowDim) string { return itoa(d.WindowDilation) }, func(d WindowDim) bool { return d.WindowDilation == 1 }),
		field("rhs_reversal", func(d WindowDim) string {
			if d.WindowReversal {
				return "1"
			}
			return "0"
		}, func(d WindowDim) bool { return !d.WindowReversal }),
	} {
		if s != "" {
			fs = append(fs, s)
		}
	}
	if len(w) == 0 {
		return "{}"
	}
	return "{" + strings.Join(fs, " ") + "}"
}

func dimLabelsString(cd *ConvDimensionNumbers) string {
	labels := func(a, b int64, ca, cb byte, sp []int64) string {
		out := make([]byte, 2+len(sp))
		for i := range out {
			out[i] = '?'
		}
		set := func(i int64, c byte) {
			if i >= 0 && i < int64(len(out)) {
				out[i] = c
			}
		}
		set(a, ca)
		set(b, cb)
		for i, d := range sp {
			set(d, byte('0'+i))
		}
		return string(out)
	}
	return labels(cd.InputBatch, cd.InputFeature, 'b', 'f', cd.InputSpatial) + "_" +
		labels(cd.KernelInputFeature, cd.KernelOutputFeature, 'i', 'o', cd.KernelSpatial) + "->" +
		labels(cd.OutputBatch, cd.OutputFeature, 'b', 'f', cd.OutputSpatial)
}

func replicaGroupsString(rg *ReplicaGroups) string {
	if rg.Mesh != nil {
		return meshAxesString(rg.Mesh)
	}
	if io := rg.Iota; io != nil {
		var b strings.Builder
		b.WriteString("[" + itoa(io.GroupShape[0]) + "," + itoa(io.GroupShape[1]) + "]<=[")
		writeInts(&b, io.ReshapeDims, ",")
		b.WriteByte(']')
		if len(io.Transpose) > 0 {
			b.WriteString("T(")
			writeInts(&b, io.Transpose, ",")
			b.WriteByte(')')
		}
		return b.String()
	}
	parts := make([]string, len(rg.Groups))
	for i, g := range rg.Groups {
		parts[i] = intSet(g)
	}
	return "{" + strings.Join(parts, ",") + "}"
}
