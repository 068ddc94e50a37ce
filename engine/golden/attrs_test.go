package golden

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// TestUnknownAttributesFail runs the CLI on modules that each carry one
// attribute or enum value goldtrace does not understand: each must fail with
// the evaluation exit code, name the attribute, the instruction and its
// file:line:column, and write nothing.
func TestUnknownAttributesFail(t *testing.T) {
	const head = "HloModule m\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\nENTRY main {\n  x = f32[4] parameter(0)\n  y = f32[4] parameter(1)\n"
	cases := []struct {
		name, root, attr string
	}{
		{"result_accuracy", "ROOT r = f32[4] exponential(x), result_accuracy={tolerance={atol=0 rtol=0 ulps=1}}", "result_accuracy"},
		{"future_attribute", "ROOT r = f32[4] add(x, y), frobnicate=true", "frobnicate"},
		{"weak_order", "ROOT r = pred[4] compare(x, y), direction=LT, order=WEAK", "order=WEAK"},
		{"bad_type", "ROOT r = pred[4] compare(x, y), direction=LT, type=SOMETIMES", "type=SOMETIMES"},
		{"order_type_clash", "ROOT r = pred[4] compare(x, y), direction=LT, type=FLOAT, order=TOTAL", "order=TOTAL"},
		{"dot_algorithm", "ROOT r = f32[] dot(x, y), lhs_contracting_dims={0}, rhs_contracting_dims={0}, algorithm=dot_tf32_tf32_f32", "algorithm=dot_tf32_tf32_f32"},
		{"dot_algorithm_operands", "ROOT r = f32[] dot(x, y), lhs_contracting_dims={0}, rhs_contracting_dims={0}, algorithm=dot_f16_f16_f16", "algorithm=dot_f16_f16_f16"},
		{"precision", "ROOT r = f32[] dot(x, y), lhs_contracting_dims={0}, rhs_contracting_dims={0}, operand_precision={packed_nibble,default}", "operand_precision"},
		{"api_version", "ROOT r = f32[4] custom-call(x), custom_call_target=\"Sharding\", api_version=API_VERSION_QUANTUM", "api_version=API_VERSION_QUANTUM"},
		{"schedule", "ROOT r = f32[4] custom-call(x), custom_call_target=\"Sharding\", custom_call_schedule=SCHEDULE_SOMETIME", "custom_call_schedule=SCHEDULE_SOMETIME"},
		{"fusion_kind", "ROOT r = f32[4] fusion(x, y), kind=kMagic, calls=fused", "kind=kMagic"},
		{"rng_algorithm", "s = u64[2] constant({1, 2})\n  ROOT r = (u64[2], u32[4]) rng-bit-generator(s), algorithm=rng_quantum", "algorithm=rng_quantum"},
		{"transpose_a", "a = f32[2,2] reshape(x)\n  ROOT r = f32[2,2] triangular-solve(a, a), left_side=true, lower=true, transpose_a=CONJUGATE", "transpose_a=CONJUGATE"},
	}
	dir := t.TempDir()
	python(t, dir, `save("x.npy", np.arange(4, dtype=np.float32))`)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := head + "  " + c.root + "\n}\n"
			if strings.Contains(c.root, "calls=fused") {
				src = strings.Replace(src, "ENTRY main", "fused {\n  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n  ROOT s = f32[4] add(a, b)\n}\n\nENTRY main", 1)
			}
			mod := filepath.Join(dir, c.name+".hlo")
			writeFile(t, mod, src)
			out := filepath.Join(dir, c.name+".out")
			code, _, stderr := runMain("-m", mod, "-i", filepath.Join(dir, "x.npy"), "-i", filepath.Join(dir, "x.npy"), "-O", out)
			if code != ExitEval {
				t.Fatalf("exit %d, want %d; stderr: %s", code, ExitEval, stderr)
			}
			line := strings.Count(src[:strings.Index(src, "ROOT r")], "\n") + 1
			for _, want := range []string{c.attr, "%r", fmt.Sprintf("%s.hlo:%d:", c.name, line), "not supported"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not say %q: %s", want, stderr)
				}
			}
			if files := listFiles(t, out); len(files) > 0 {
				t.Errorf("files written: %v", files)
			}
		})
	}
}

// TestHintAttributesRun: attributes that cannot change a result do not stop
// a run, and the result is what the module computes without them.
func TestHintAttributesRun(t *testing.T) {
	m := parse(t, `HloModule m
ENTRY main {
  x = f32[4] parameter(0), parameter_replication={false}, origin={{"x"}}
  e = f32[4] exponential(x), result_accuracy={mode=default}, statistics={visualizing_index=1,stat-index-0=0.5}
  s = f32[4] custom-call(e), custom_call_target="Sharding", custom_call_schedule=SCHEDULE_LATEST, sharding={replicated}, frontend_attributes={_xla_stream_annotation="1"}
  ROOT n = f32[4] negate(s), metadata={op_name="n" source_line=3}, backend_config={"outer_dimension_partitions":[]}
}`)
	x := tensor.New(dtype.F32, []int64{4})
	copy(x.F32(), []float32{0, 1, -1, 2})
	res, err := Run(m, []*tensor.Tensor{x}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	plain := parse(t, `HloModule m
ENTRY main {
  x = f32[4] parameter(0)
  e = f32[4] exponential(x)
  ROOT n = f32[4] negate(e)
}`)
	want, err := Run(plain, []*tensor.Tensor{x}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sameTensor(t, "output", res.Outputs[0], want.Outputs[0])
}
