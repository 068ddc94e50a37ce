package eval

// A golden tool must never give a wrong answer quietly: an instruction whose
// attributes the evaluator does not understand is refused before anything
// runs. The parser models the attributes the evaluator honours; everything
// else it keeps raw in ExtraAttrs, and only the ones listed here, which
// cannot change a value, may pass.

import (
	"fmt"
	"slices"
	"strings"

	"goldtrace/engine/hlo"
)

// hintAttrs are the raw (unmodelled) instruction attributes that cannot
// change what an instruction computes: visualisation and provenance
// records, replication hints, scheduling and layout-assignment annotations.
var hintAttrs = map[string]string{
	"statistics":                   "visualisation statistics",
	"origin":                       "original value (provenance of a rewritten instruction)",
	"original_value":               "original value (provenance of a rewritten instruction)",
	"parameter_replication":        "a promise that a parameter is replicated",
	"outer_dimension_partitions":   "XLA:CPU parallel-task partitioning",
	"schedule":                     "custom-call scheduling hint",
	"custom_call_schedule":         "custom-call scheduling hint",
	"async_execution_thread":       "the thread an async computation is scheduled on",
	"is_cross_program_prefetch":    "prefetch scheduling",
	"cross_program_prefetch_index": "prefetch scheduling",
	"conv_kind":                    "a label of the convolution's role (forward, backward); the dimensions fix the math",
	"domain":                       "sharding-domain bookkeeping of the identity op domain",
	"inlineable":                   "inlining hint",
}

// enumAttrs lists the values the evaluator implements for the modelled
// attributes that are enums (the parser accepts any word there).
var enumAttrs = map[string]map[string]bool{
	"fft_type":          set("FFT", "IFFT", "RFFT", "IRFFT"),
	"distribution":      set("rng_uniform", "rng_normal"),
	"transpose_a":       set("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"),
	"kind":              set("kLoop", "kInput", "kOutput", "kCustom", "kScatter"),
	"operand_precision": set("default", "high", "highest", "DEFAULT", "HIGH", "HIGHEST"),
	// UNSPECIFIED: what torch-xla's default and the Neuron FrameworkKernel docstring print;
	// the evaluator's handlers do not depend on the calling convention.
	"api_version": set("API_VERSION_UNSPECIFIED", "API_VERSION_ORIGINAL", "API_VERSION_STATUS_RETURNING",
		"API_VERSION_STATUS_RETURNING_UNIFIED", "API_VERSION_TYPED_FFI"),
	"rng_algorithm":        set("rng_default", "rng_three_fry", "rng_philox"),
	"custom_call_schedule": set("SCHEDULE_NONE", "SCHEDULE_LATEST", "SCHEDULE_EARLIEST"),
}

func set(vals ...string) map[string]bool {
	m := make(map[string]bool, len(vals))
	for _, v := range vals {
		m[v] = true
	}
	return m
}

// defaultDotAlgorithms are the dot algorithm= values that XLA:CPU computes
// as the plain dot of the operand types listed: the algorithm names what the
// plain dot does (f32, f64), or the CPU backend does not act on it (jaxlib
// 0.10.2 gives dot_bf16_bf16_f32 on f32 or bf16 operands, either one of
// each (jax.grad of bf16 dot_product_attention multiplies an f32 cotangent
// by a bf16 operand: the f32 dot of the widened operands), the x3 and x6
// forms on f32 ones and dot_f16_f16_f16 on f16 ones the plain dot's bits;
// tests/test_dot_algorithms.py holds every pair to jax). Other algorithms,
// and these on other operand types, are refused.
var defaultDotAlgorithms = map[string][]string{
	"dot_f32_f32_f32":      {"f32"},
	"dot_f64_f64_f64":      {"f64"},
	"dot_bf16_bf16_f32":    {"f32", "bf16"},
	"dot_bf16_bf16_f32_x3": {"f32"},
	"dot_bf16_bf16_f32_x6": {"f32"},
	"dot_f16_f16_f16":      {"f16"},
}

// HintAttribute reports whether a raw attribute name is one that cannot
// change results (see hintAttrs).
func HintAttribute(name string) bool {
	_, ok := hintAttrs[name]
	return ok
}

// CheckAttributes returns an *UnsupportedError when in carries an attribute
// or enum value the evaluator does not understand, naming the attribute and,
// for text modules, where it was written.
func CheckAttributes(in *hlo.Instruction) error {
	bad := func(attr, value, why string) error {
		where := ""
		if p, ok := in.AttrPosition(attr); ok {
			where = " at " + p.String()
		} else if in.SourcePos.Line > 0 {
			where = " at " + in.SourcePos.String()
		}
		if why != "" {
			why = " (" + why + ")"
		}
		return Unsupported("attribute %s=%s%s on %%%s (%s)%s", attr, value, where, in.Name, in.Opcode, why)
	}
	for _, a := range in.ExtraAttrs {
		if a.Name == "result_accuracy" && strings.ReplaceAll(a.Value, " ", "") == "{mode=default}" {
			continue // the default accuracy is what the evaluator computes
		}
		if !HintAttribute(a.Name) {
			return bad(a.Name, a.Value, "unknown to goldtrace, so it might change the result")
		}
		if (a.Name == "custom_call_schedule" || a.Name == "schedule") && !enumAttrs["custom_call_schedule"][a.Value] {
			return bad(a.Name, a.Value, "unknown value")
		}
	}
	enum := func(attr, v string) error {
		if v != "" && !enumAttrs[attr][v] {
			return bad(attr, v, "unknown value")
		}
		return nil
	}
	for _, e := range []struct{ attr, v string }{
		{"fft_type", in.FFTType}, {"distribution", in.RngDistribution}, {"transpose_a", in.TransposeA},
		{"kind", in.FusionKind}, {"api_version", in.APIVersion},
	} {
		if err := enum(e.attr, e.v); err != nil {
			return err
		}
	}
	if in.RngAlgorithm != "" && !enumAttrs["rng_algorithm"][strings.ToLower(in.RngAlgorithm)] {
		return bad("algorithm", in.RngAlgorithm, "unknown rng algorithm")
	}
	for _, p := range in.OperandPrecision {
		if !enumAttrs["operand_precision"][p] {
			return bad("operand_precision", "{"+strings.Join(in.OperandPrecision, ",")+"}", "unknown precision "+p)
		}
	}
	if in.Algorithm != "" {
		types, ok := defaultDotAlgorithms[in.Algorithm]
		if !ok || len(in.Operands) != 2 || !slices.Contains(types, in.Operands[0].Shape.Elem.String()) ||
			!slices.Contains(types, in.Operands[1].Shape.Elem.String()) {
			return bad("algorithm", in.Algorithm, "a dot algorithm other than the default computation")
		}
	}
	if in.Opcode == "compare" {
		if _, err := in.EffectiveComparisonType(); err != nil {
			attr := "type"
			val := in.ComparisonType
			if in.ComparisonOrder != "" {
				attr, val = "order", in.ComparisonOrder
			}
			return bad(attr, val, fmt.Sprint(err))
		}
	}
	return nil
}
