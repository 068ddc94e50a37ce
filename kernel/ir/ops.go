package ir

import "sort"

// isaNames maps IR opcodes to the ISA / language names kernel authors wrote,
// used in error messages so they read in the author's terms.
var isaNames = map[string]string{
	"matmul":          "nc_matmul",
	"transpose":       "nc_transpose",
	"dma":             "dma_copy",
	"copy_predicated": "tensor_copy_predicated",
	"print":           "device_print",
}

// DisplayOp is the name an error message uses for IR opcode op.
func DisplayOp(op string) string {
	// a switch, not a lookup in isaNames: every instruction asks, twice
	// (TestDisplayOpMatchesTable keeps the two in step)
	switch op {
	case "matmul":
		return "nc_matmul"
	case "transpose":
		return "nc_transpose"
	case "dma":
		return "dma_copy"
	case "copy_predicated":
		return "tensor_copy_predicated"
	case "print":
		return "device_print"
	}
	return op
}

// attrKind is the value type an attribute must have.
type attrKind int

const (
	kInt attrKind = iota + 1
	kNum          // a float; an integer is accepted (memset value=0)
	kStr          // a free string
	kBool
	kInts
	kALU  // a binary / ALU op name (aluOps)
	kCmp  // a comparison op name (the comparison subset of aluOps)
	kFunc // a unary function name (unaryFuncs)
	kEnum // one of attrSpec.values
)

type attrSpec struct {
	kind     attrKind
	required bool
	values   []string // kEnum
}

// opSpec is one row of the opcode table in kernel_ir.proto.
type opSpec struct {
	dstMin, dstMax int
	srcMin, srcMax int
	attrs          map[string]attrSpec
	compute        bool // runs on a compute engine: every access in SBUF or PSUM
}

// opEntry is an opcode's row with what the validator derives from it, so
// that an instruction costs it one lookup.
type opEntry struct {
	opSpec
	required  []string // the required attributes, sorted
	srcDomain bool     // the domain is src[0]'s tile (srcDomain)
}

// opTable is ops with the derived facts (filled by init).
var opTable = map[string]*opEntry{}

func opt(k attrKind) attrSpec { return attrSpec{kind: k} }
func req(k attrKind) attrSpec { return attrSpec{kind: k, required: true} }

// ops is the opcode table (kernel_ir.proto). Presence rules that depend on
// other attributes (a tile operand or an immediate) are checked in validate.go.
var ops = map[string]opSpec{
	"alloc":  {1, 1, 0, 0, nil, false},
	"memset": {1, 1, 0, 0, map[string]attrSpec{"value": req(kNum)}, false},
	"iota":   {1, 1, 0, 0, nil, false},
	"dma": {1, 1, 1, 1, map[string]attrSpec{
		"dst_rmw_op": opt(kALU),
		"oob_mode":   {kind: kEnum, values: []string{"error", "skip"}},
		// informational (nisa.dge_mode); the simulator ignores it
		"dge_mode": {kind: kEnum, values: []string{"unknown", "swdge", "hwdge", "none"}},
	}, false},
	"dma_transpose": {1, 1, 1, 1, nil, false},
	"tensor_copy":   {1, 1, 1, 1, nil, true},
	"activation": {1, 2, 1, 3, map[string]attrSpec{
		"func": req(kFunc), "scale": opt(kNum), "has_bias": opt(kBool), "has_scale": opt(kBool), "reduce_op": opt(kALU),
		"reduce_cmd": opt(kInt),
	}, true},
	"tensor_tensor": {1, 1, 2, 2, map[string]attrSpec{"op": req(kALU)}, true},
	"tensor_scalar": {1, 1, 1, 3, map[string]attrSpec{
		"op0": req(kALU), "op1": opt(kALU), "scalar0": opt(kNum), "scalar1": opt(kNum),
		"has_operand0_tile": opt(kBool), "has_operand1_tile": opt(kBool), "reverse0": opt(kBool), "reverse1": opt(kBool),
	}, true},
	"scalar_tensor_tensor": {1, 1, 2, 3, map[string]attrSpec{
		"op0": req(kALU), "scalar0": opt(kNum), "has_operand0_tile": opt(kBool), "reverse0": opt(kBool),
		"op1": req(kALU), "reverse1": opt(kBool),
	}, true},
	"tensor_reduce": {1, 1, 1, 1, map[string]attrSpec{
		"op": req(kALU), "axes": req(kInts), "keepdims": opt(kBool), "negate": opt(kBool),
	}, true},
	"tensor_partition_reduce": {1, 1, 1, 1, map[string]attrSpec{"op": req(kALU)}, true},
	"tensor_scalar_reduce": {2, 2, 1, 2, map[string]attrSpec{
		"op0": req(kALU), "scalar0": opt(kNum), "has_operand0_tile": opt(kBool), "reverse0": opt(kBool), "reduce_op": req(kALU),
	}, true},
	"tensor_tensor_scan": {1, 1, 2, 3, map[string]attrSpec{
		"op0": req(kALU), "op1": req(kALU), "initial": opt(kNum), "has_initial_tile": opt(kBool), "reverse0": opt(kBool), "reverse1": opt(kBool),
	}, true},
	"matmul":    {1, 1, 2, 2, map[string]attrSpec{"accumulate": opt(kBool)}, true},
	"transpose": {1, 1, 1, 1, map[string]attrSpec{"engine": {kind: kEnum, required: true, values: []string{"tensor", "vector"}}}, true},
	"select": {1, 1, 1, 3, map[string]attrSpec{
		"true_value": opt(kNum), "false_value": opt(kNum), "has_true_tile": opt(kBool), "has_false_tile": opt(kBool),
	}, true},
	"affine_select": {1, 1, 1, 1, map[string]attrSpec{"false_value": req(kNum)}, true},
	"range_select": {1, 2, 3, 3, map[string]attrSpec{
		"comp0": req(kCmp), "comp1": req(kCmp), "fill": req(kNum), "reduce_op": opt(kALU), "range_start": opt(kNum),
		"reduce_cmd": opt(kInt),
	}, true},
	"select_reduce": {1, 2, 2, 3, map[string]attrSpec{
		"false_value": opt(kNum), "reduce_op": opt(kALU), "reverse_pred": opt(kBool), "reduce_cmd": opt(kInt),
	}, true},
	"bn_stats":          {1, 1, 1, 1, nil, true},
	"bn_aggr":           {1, 1, 1, 1, nil, true},
	"max8":              {1, 1, 1, 1, nil, true},
	"nc_find_index8":    {1, 1, 2, 2, nil, true},
	"nc_match_replace8": {1, 1, 2, 2, map[string]attrSpec{"imm": req(kNum)}, true},
	"local_gather":      {1, 1, 2, 2, map[string]attrSpec{"num_elem_per_idx": opt(kInt), "num_valid_indices": opt(kInt)}, true},
	"nc_stream_shuffle": {1, 1, 1, 1, map[string]attrSpec{"shuffle_mask": req(kInts)}, true},
	"dropout":           {1, 1, 1, 2, map[string]attrSpec{"prob": opt(kNum)}, true},
	"rand": {1, 1, 0, 0, map[string]attrSpec{
		"distribution": {kind: kEnum, values: []string{"uniform"}}, "low": opt(kNum), "high": opt(kNum),
	}, false},
	"random_seed":     {0, 0, 1, 1, nil, false},
	"copy_predicated": {1, 1, 2, 2, map[string]attrSpec{"reverse_pred": opt(kBool)}, true},
	"atomic_rmw":      {1, 1, 1, 1, map[string]attrSpec{"op": req(kALU)}, false},
	"all_reduce": {1, 1, 1, 1, map[string]attrSpec{
		"op": req(kALU), "replica_groups": opt(kInts), "group_size": opt(kInt),
		"program_axes": opt(kInts), // the grid axes reduced over (what the tracer sends)
	}, false},
	"print": {0, 0, 1, 1, map[string]attrSpec{"prefix": opt(kStr)}, false},
	// Device collectives (nki.collectives): across the devices of a
	// multi-device golden; ranks are flattened device ids.
	"cc_all_reduce": {1, 1, 1, 1, map[string]attrSpec{
		"op": {kind: kEnum, required: true, values: ccReduceOps}, "replica_groups": opt(kInts), "group_size": opt(kInt),
	}, false},
	"cc_all_gather": {1, 1, 1, 1, map[string]attrSpec{
		"collective_dim": req(kInt), "replica_groups": opt(kInts), "group_size": opt(kInt),
	}, false},
	"cc_reduce_scatter": {1, 1, 1, 1, map[string]attrSpec{
		"op": {kind: kEnum, required: true, values: ccReduceOps}, "collective_dim": req(kInt),
		"replica_groups": opt(kInts), "group_size": opt(kInt),
	}, false},
	"cc_all_to_all": {1, 1, 1, 1, map[string]attrSpec{
		"collective_dim": req(kInt), "replica_groups": opt(kInts), "group_size": opt(kInt),
	}, false},
	"cc_collective_permute": {1, 1, 1, 1, map[string]attrSpec{"source_target_pairs": req(kInts)}, false},
}

// ccReduceOps are the reductions device collectives take (nl.add,
// nl.minimum, nl.maximum).
var ccReduceOps = []string{"add", "maximum", "minimum"}

// IsDeviceCollective reports whether op is a device collective (cc_*): it
// exchanges data with the same instruction on the other devices running the
// kernel, where nl.all_reduce stays within the program instances of one launch.
func IsDeviceCollective(op string) bool {
	switch op {
	case "cc_all_reduce", "cc_all_gather", "cc_reduce_scatter", "cc_all_to_all", "cc_collective_permute":
		return true
	}
	return false
}

func init() {
	for name, spec := range ops {
		e := &opEntry{opSpec: spec, srcDomain: srcDomain[name]}
		for _, a := range sortedKeys(spec.attrs) {
			if spec.attrs[a].required {
				e.required = append(e.required, a)
			}
		}
		opTable[name] = e
	}
}

// OpNames lists the IR opcodes the validator and simulator know, sorted.
func OpNames() []string {
	out := make([]string, 0, len(ops))
	for n := range ops {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

var aluOps = setOf("add", "subtract", "multiply", "divide", "maximum", "minimum",
	"power", "fmod", "mod", "pow", "abs_diff", "equal", "not_equal", "greater",
	"greater_equal", "less", "less_equal", "logical_and", "logical_or", "logical_xor",
	"bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift_arithmetic",
	"right_shift_logical", "bypass")

var cmpOps = setOf("equal", "not_equal", "greater", "greater_equal", "less", "less_equal")

// bitvecOps work on integer bit patterns: integer dtypes only.
var bitvecOps = setOf("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
	"right_shift_arithmetic", "right_shift_logical")

var unaryFuncs = setOf("identity", "copy", "exp", "log", "sqrt", "rsqrt", "reciprocal",
	"abs", "negative", "sign", "square", "sin", "cos", "tan", "arctan", "tanh",
	"sigmoid", "relu", "gelu", "gelu_apprx_tanh", "gelu_dx", "gelu_apprx_sigmoid",
	"silu", "silu_dx", "erf", "erf_dx", "softplus", "mish", "ceil", "floor", "trunc",
	"rint", "invert", "logical_not")

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
