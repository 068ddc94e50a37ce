// Package hlo is goldtrace's one model of an XLA HLO module, with the readers
// that build it (HLO text, HloModuleProto, HloSnapshot), a verifier with shape
// inference, and a printer of canonical HLO text.
//
// All three readers produce the same model, so the evaluator never knows where a
// module came from. Called computations are stored in the order the text names
// them (while: condition then body), whatever order a proto used.
package hlo

import (
	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// Module is a whole HLO module.
type Module struct {
	Name         string
	Computations []*Computation // callees before their callers; Entry among them
	Entry        *Computation

	// Header attributes.
	EntryLayout      *ComputationLayout // entry_computation_layout, nil if absent
	InputOutputAlias []IOAlias
	BufferDonors     []BufferDonor
	ReplicaCount     int64 // 0 when not given (means 1)
	NumPartitions    int64 // 0 when not given (means 1)
	IsScheduled      bool
	FrontendAttrs    map[string]string
	// ExtraAttrs keeps header attributes the model does not interpret, as raw
	// text in order, so the printer can reproduce them.
	ExtraAttrs []RawAttr
}

// ComputationLayout is the `(params...)->result` signature with layouts.
type ComputationLayout struct {
	Params []Shape
	Result Shape
}

// IOAlias is one entry of input_output_alias: output {index} aliases parameter
// (param, {param_index}).
type IOAlias struct {
	OutputIndex []int64
	Param       int64
	ParamIndex  []int64
	Kind        string // "may-alias" or "must-alias"; "" when printed without one
}

// BufferDonor is one entry of buffer_donor: (param, {index}).
type BufferDonor struct {
	Param      int64
	ParamIndex []int64
}

// RawAttr is an attribute kept as unparsed text (the part after '=').
type RawAttr struct {
	Name  string
	Value string
}

// Computation is a named list of instructions with a root.
type Computation struct {
	Name            string
	ID              int64
	Params          []*Instruction // indexed by parameter number
	Instructions    []*Instruction // in order; operands come before their users
	Root            *Instruction
	IsEntry         bool
	ExecutionThread string // "" for the main thread
}

// Shape is an array, tuple or token shape.
type Shape struct {
	Elem dtype.Type // dtype.Tuple for tuples, dtype.Token for tokens
	Dims []int64    // for a bounded dynamic dim, the bound; for unbounded ('?'), UnboundedDim
	// DynamicDims marks dynamic dimensions ('<=' or '?'); nil when none are.
	DynamicDims []bool
	Tuple       []Shape // element shapes when Elem == dtype.Tuple
	Layout      *Layout // nil when the text or proto gave none
}

// UnboundedDim is the dimension size of a '?' dimension (XLA's kUnboundedSize).
const UnboundedDim int64 = -1 << 63

// Layout is an XLA layout: minor_to_major plus the device-level details.
type Layout struct {
	MinorToMajor    []int64
	Tiles           []Tile
	ElementSizeBits int64
	MemorySpace     int64
	// Other layout suffix items we keep but do not interpret (D(..), L(..), #(..), *(..), SC(..), P(..), M(..)),
	// as raw text in the order seen.
	Extra []string
}

// Tile is one T(...) tile; a dimension of TileCombineDim prints as '*'.
type Tile struct {
	Dims []int64
}

// TileCombineDim marks a '*' tile dimension.
const TileCombineDim int64 = -1 << 62

// Literal is a constant value: an array tensor or a tuple of literals.
type Literal struct {
	Tensor *tensor.Tensor // nil for tuples
	Tuple  []*Literal
}

// Instruction is one HLO instruction. Opcode-specific fields are zero when unused.
type Instruction struct {
	Name     string
	ID       int64
	Opcode   string // HLO text opcode name: "add", "all-reduce-start", "custom-call"
	Shape    Shape
	Operands []*Instruction
	// Called holds the called computations in text order:
	//   while: [condition, body]; conditional: [true, false] or branch_computations;
	//   select-and-scatter: [select, scatter]; reduce/map/sort/scatter/all-reduce/call: [to_apply];
	//   fusion/async-start: [calls]; custom-call: called_computations.
	Called              []*Computation
	ControlPredecessors []*Instruction
	Parent              *Computation

	// Attributes every instruction may have.
	Metadata      *Metadata
	Sharding      string // raw text of sharding={...} without the outer braces handling; "" if none
	FrontendAttrs map[string]string
	BackendConfig string // raw backend_config string (JSON or other)
	ExtraAttrs    []RawAttr

	// parameter
	ParameterNumber int64
	// constant
	Literal *Literal
	// get-tuple-element
	TupleIndex int64
	// iota
	IotaDimension int64
	// broadcast, transpose, reverse, concatenate, reduce, sort, all-gather, map, all-to-all, get-dimension-size, set-dimension-size
	Dimensions []int64
	// slice
	Slice []SliceDim
	// pad
	Padding []PadDim
	// dynamic-slice
	DynamicSliceSizes []int64
	// reduce-window, select-and-scatter, convolution
	Window []WindowDim
	// convolution
	ConvDims          *ConvDimensionNumbers
	FeatureGroupCount int64 // 0 when absent (means 1)
	BatchGroupCount   int64 // 0 when absent (means 1)
	// dot, convolution
	DotDims          *DotDimensionNumbers
	OperandPrecision []string // "default", "high", "highest"
	Algorithm        string   // dot algorithm, "" when unset
	// ragged-dot
	RaggedDims *RaggedDotDimensionNumbers
	// gather
	GatherDims       *GatherDimensionNumbers
	GatherSliceSizes []int64
	// scatter
	ScatterDims *ScatterDimensionNumbers
	// gather, scatter
	IndicesAreSorted bool
	UniqueIndices    bool
	// compare
	ComparisonDirection string // "EQ", "NE", "LT", "LE", "GT", "GE"
	ComparisonType      string // "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED", "" when not given
	// ComparisonOrder is newer XLA's order= spelling of the comparison
	// type: "TOTAL", "WEAK", "PARTIAL", "" when not given. See
	// EffectiveComparisonType.
	ComparisonOrder string
	// sort
	IsStable bool
	// topk
	K       int64
	Largest bool
	// reduce-precision
	ExponentBits int64
	MantissaBits int64
	// fft
	FFTType   string // "FFT", "IFFT", "RFFT", "IRFFT"
	FFTLength []int64
	// rng
	RngDistribution string // "rng_uniform", "rng_normal"
	// rng-bit-generator
	RngAlgorithm string // "rng_default", "rng_three_fry", "rng_philox"
	// triangular-solve, cholesky
	LeftSide     bool
	Lower        bool
	UnitDiagonal bool
	TransposeA   string // "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"
	// batch-norm-*
	Epsilon      float32
	FeatureIndex int64
	// collectives
	ReplicaGroups      *ReplicaGroups
	ChannelID          int64 // 0 when absent
	UseGlobalDeviceIDs bool
	ConstrainLayout    bool
	SourceTargetPairs  [][2]int64
	// custom-call
	CustomCallTarget         string
	APIVersion               string // "API_VERSION_ORIGINAL", "API_VERSION_STATUS_RETURNING", ..., "" when absent
	CustomCallHasSideEffect  bool
	OutputOperandAliasing    []OutputOperandAlias
	OperandLayoutConstraints []Shape
	// fusion
	FusionKind string // "kLoop", "kInput", "kOutput", "kCustom"
	// call
	IsComposite bool

	// SourcePos is where the text gave the instruction's opcode and AttrPos
	// where it gave each attribute, in order; both are empty for modules
	// read from protos. Equal ignores them. See AttrPosition.
	SourcePos Position
	AttrPos   []AttrPos
}

// AttrPos is where an attribute was written (in the instruction's file).
type AttrPos struct {
	Name         string
	Line, Column int32
}

// AttrPosition returns where the text wrote attribute name, if it did.
func (in *Instruction) AttrPosition(name string) (Position, bool) {
	for _, a := range in.AttrPos {
		if a.Name == name {
			return Position{Filename: in.SourcePos.Filename, Line: int(a.Line), Column: int(a.Column)}, true
		}
	}
	return Position{}, false
}

// Metadata is metadata={...}; fields we do not model are kept raw.
type Metadata struct {
	OpType     string
	OpName     string
	SourceFile string
	SourceLine int64
	Extra      []RawAttr
}

// SliceDim is one [start:limit:stride] of a slice.
type SliceDim struct{ Start, Limit, Stride int64 }

// PadDim is one low_high_interior entry of a padding config.
type PadDim struct{ Low, High, Interior int64 }

// WindowDim is one dimension of a window={...} attribute.
type WindowDim struct {
	Size, Stride    int64
	PadLow, PadHigh int64
	BaseDilation    int64 // lhs_dilate; 1 when absent
	WindowDilation  int64 // rhs_dilate; 1 when absent
	WindowReversal  bool  // rhs_reversal
}

// ConvDimensionNumbers is the decoded dim_labels of a convolution.
type ConvDimensionNumbers struct {
	InputBatch, InputFeature                int64
	InputSpatial                            []int64
	KernelInputFeature, KernelOutputFeature int64
	KernelSpatial                           []int64
	OutputBatch, OutputFeature              int64
	OutputSpatial                           []int64
}

// DotDimensionNumbers are the batch and contracting dimensions of a dot.
type DotDimensionNumbers struct {
	LhsBatch, RhsBatch             []int64
	LhsContracting, RhsContracting []int64
}

// RaggedDotDimensionNumbers are the attributes ragged-dot adds to dot's: the
// one lhs dimension that group_sizes splits into consecutive groups, and (only
// when that dimension is a free one) the rhs dimension selecting each group's
// matrix.
type RaggedDotDimensionNumbers struct {
	LhsRaggedDims []int64
	RhsGroupDims  []int64
}

// GatherDimensionNumbers are gather's dimension attributes.
type GatherDimensionNumbers struct {
	OffsetDims               []int64
	CollapsedSliceDims       []int64
	StartIndexMap            []int64
	IndexVectorDim           int64
	OperandBatchingDims      []int64
	StartIndicesBatchingDims []int64
}

// ScatterDimensionNumbers are scatter's dimension attributes.
type ScatterDimensionNumbers struct {
	UpdateWindowDims           []int64
	InsertedWindowDims         []int64
	ScatterDimsToOperandDims   []int64
	IndexVectorDim             int64
	InputBatchingDims          []int64
	ScatterIndicesBatchingDims []int64
}

// ReplicaGroups is replica_groups in explicit, iota or mesh-axes form.
type ReplicaGroups struct {
	Groups [][]int64 // explicit form; nil when Iota or Mesh is set
	Iota   *IotaReplicaGroups
	Mesh   *MeshAxesReplicaGroups
}

// IotaReplicaGroups is the compact form [G,S]<=[dims]T(perm).
type IotaReplicaGroups struct {
	GroupShape  [2]int64 // [num_groups, group_size]
	ReshapeDims []int64
	Transpose   []int64 // empty when no T(...)
}

// OutputOperandAlias is one {output_index}: (operand, {operand_index}) pair.
type OutputOperandAlias struct {
	OutputIndex  []int64
	Operand      int64
	OperandIndex []int64
}

// IsTuple reports whether s is a tuple shape.
func (s Shape) IsTuple() bool { return s.Elem == dtype.Tuple }

// IsArray reports whether s is an array shape.
func (s Shape) IsArray() bool { return s.Elem.IsArray() }

// NumElements is the product of the dims of an array shape.
func (s Shape) NumElements() int64 { return tensor.NumElements(s.Dims) }

// Leaves returns the array (and token) shapes of s in depth-first order.
func (s Shape) Leaves() []Shape {
	if !s.IsTuple() {
		return []Shape{s}
	}
	var out []Shape
	for _, t := range s.Tuple {
		out = append(out, t.Leaves()...)
	}
	return out
}

// ToApply returns the single called computation of reduce, map, sort, scatter, call, all-reduce...
func (in *Instruction) ToApply() *Computation {
	if len(in.Called) == 0 {
		return nil
	}
	return in.Called[0]
}

// Instruction returns the instruction called name, or nil.
func (c *Computation) Instruction(name string) *Instruction {
	for _, in := range c.Instructions {
		if in.Name == name {
			return in
		}
	}
	return nil
}

// Computation returns the computation called name, or nil.
func (m *Module) Computation(name string) *Computation {
	for _, c := range m.Computations {
		if c.Name == name {
			return c
		}
	}
	return nil
}
