package customcall

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"goldtrace/engine/eval"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
	"goldtrace/kernel/config"
)

// Kernels inside goldens: HLO modules whose custom-calls carry real encoded
// configs, evaluated by engine/eval with the handlers eval.go
// registers. Expected values are float32 arithmetic done here, independently
// of the simulator.

// The handlers are what an embedder (capi, a CLI) installs.
func TestMain(m *testing.M) {
	Register()
	os.Exit(m.Run())
}

// evalText parses and evaluates an HLO module, checking every instruction's
// attributes first as the golden driver does.
func evalText(t *testing.T, text string, opts eval.Options, args ...*tensor.Tensor) (eval.Value, error) {
	t.Helper()
	m, err := hlo.ParseText([]byte(text), "kernel_test.hlo")
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			if err := eval.CheckAttributes(in); err != nil {
				t.Fatalf("attributes of %%%s: %v", in.Name, err)
			}
		}
	}
	vals := make([]eval.Value, len(args))
	for i, a := range args {
		vals[i] = eval.ArrayValue(a)
	}
	return eval.Evaluate(m, vals, opts)
}

func mustEval(t *testing.T, text string, args ...*tensor.Tensor) eval.Value {
	t.Helper()
	v, err := evalText(t, text, eval.Options{}, args...)
	if err != nil {
		t.Fatalf("evaluate: %v", err)
	}
	return v
}

// backendConfig spells a config as the target's producer does.
func backendConfig(target, cfg string) string {
	if target == FFITarget {
		return fmt.Sprintf(`api_version=API_VERSION_TYPED_FFI, backend_config={kernel = "%s"}`, cfg)
	}
	return fmt.Sprintf(`api_version=API_VERSION_STATUS_RETURNING_UNIFIED, metadata={op_type="xla___op_NkiKernelCallImpl" op_name="jit(f)/nki_kernel"}, backend_config="%s"`, cfg)
}

func TestGoldenKernelTargets(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	a, b := randF32(r, 128*32), randF32(r, 128*32)
	cfg := encodeKernel(t, binaryKernel("golden_add", "add", 128, 32), nil)
	// The kernel's output feeds an ordinary op: out = kernel(a, b) * a.
	want := zipF32(zipF32(a, b, func(x, y float32) float32 { return x + y }), a, func(x, y float32) float32 { return x * y })
	for _, target := range append(append([]string{}, NeuronTargets...), FFITarget) {
		text := fmt.Sprintf(`HloModule m
ENTRY e {
  a = f32[128,32]{1,0} parameter(0)
  b = f32[128,32]{1,0} parameter(1)
  kern = f32[128,32]{1,0} custom-call(a, b), custom_call_target="%s", %s
  ROOT r = f32[128,32]{1,0} multiply(kern, a)
}`, target, backendConfig(target, cfg))
		v := mustEval(t, text, f32Tensor(t, a, 128, 32), f32Tensor(t, b, 128, 32))
		wantF32(t, target, v.T, want)
	}
}

// The typed-FFI dictionary in other spellings: more entries, a quoted
// backend_config string holding the dictionary.
func TestGoldenFFIDictionarySpellings(t *testing.T) {
	a, b := make([]float32, 16), make([]float32, 16)
	for i := range a {
		a[i], b[i] = float32(i), float32(2*i)
	}
	cfg := encodeKernel(t, binaryKernel("golden_max", "maximum", 4, 4), nil)
	for _, bc := range []string{
		fmt.Sprintf(`backend_config={alpha = 1.5 : f32, kernel = "%s", zeta = [1, 2], "quoted name" = {x = 1 : i64}}`, cfg),
		fmt.Sprintf(`backend_config="{kernel = \"%s\"}"`, cfg),
	} {
		text := fmt.Sprintf(`HloModule m
ENTRY e {
  a = f32[4,4]{1,0} parameter(0)
  b = f32[4,4]{1,0} parameter(1)
  ROOT kern = f32[4,4]{1,0} custom-call(a, b), custom_call_target="goldtrace_nki_kernel", api_version=API_VERSION_TYPED_FFI, %s
}`, bc)
		v := mustEval(t, text, f32Tensor(t, a, 4, 4), f32Tensor(t, b, 4, 4))
		wantF32(t, bc[:30], v.T, b) // b >= a everywhere
	}
}

func TestGoldenKernelTupleAndAliasing(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	a, b := randF32(r, 64*8), randF32(r, 64*8)
	sum := zipF32(a, b, func(x, y float32) float32 { return x + y })
	prod := zipF32(a, b, func(x, y float32) float32 { return x * y })

	cfg := encodeKernel(t, sumProdKernel(64, 8), func(c *config.Config) { c.ResultIsSequence = true })
	v := mustEval(t, fmt.Sprintf(`HloModule m
ENTRY e {
  a = f32[64,8]{1,0} parameter(0)
  b = f32[64,8]{1,0} parameter(1)
  ROOT kern = (f32[64,8]{1,0}, f32[64,8]{1,0}) custom-call(a, b), custom_call_target="AwsNeuronCustomNativeKernel", backend_config="%s"
}`, cfg), f32Tensor(t, a, 64, 8), f32Tensor(t, b, 64, 8))
	if !v.IsTuple() || len(v.Tuple) != 2 {
		t.Fatalf("want a 2-tuple, got %+v", v)
	}
	wantF32(t, "sum", v.Tuple[0].T, sum)
	wantF32(t, "prod", v.Tuple[1].T, prod)

	// A one-output kernel returning a sequence: a 1-tuple.
	cfg1 := encodeKernel(t, binaryKernel("seq1", "add", 64, 8), func(c *config.Config) { c.ResultIsSequence = true })
	v = mustEval(t, fmt.Sprintf(`HloModule m
ENTRY e {
  a = f32[64,8]{1,0} parameter(0)
  b = f32[64,8]{1,0} parameter(1)
  kern = (f32[64,8]{1,0}) custom-call(a, b), custom_call_target="AwsNeuronNkiKernel", backend_config="%s"
  ROOT g = f32[64,8]{1,0} get-tuple-element(kern), index=0
}`, cfg1), f32Tensor(t, a, 64, 8), f32Tensor(t, b, 64, 8))
	wantF32(t, "seq1", v.T, sum)

	// Writing into an aliased operand: the result is the parameter's final
	// content, and the operand value itself is unchanged for its other uses.
	cfgIn := encodeKernel(t, scaleInPlaceKernel(64, 8), nil)
	v = mustEval(t, fmt.Sprintf(`HloModule m
ENTRY e {
  a = f32[64,8]{1,0} parameter(0)
  b = f32[64,8]{1,0} parameter(1)
  kern = f32[64,8]{1,0} custom-call(a, b), custom_call_target="AwsNeuronCustomNativeKernel", output_to_operand_aliasing={{}: (0, {})}, backend_config="%s"
  ROOT t = (f32[64,8]{1,0}, f32[64,8]{1,0}) tuple(kern, a)
}`, cfgIn), f32Tensor(t, a, 64, 8), f32Tensor(t, b, 64, 8))
	wantF32(t, "aliased result", v.Tuple[0].T, prod)
	wantF32(t, "operand after the call", v.Tuple[1].T, a)

	// Tuple result, second output aliased to operand 0 (tuple index form).
	_, err := evalText(t, fmt.Sprintf(`HloModule m
ENTRY e {
  a = f32[64,8]{1,0} parameter(0)
  b = f32[64,8]{1,0} parameter(1)
  ROOT kern = (f32[64,8]{1,0}, f32[64,8]{1,0}) custom-call(a, b), custom_call_target="AwsNeuronCustomNativeKernel", output_to_operand_aliasing={{1}: (0, {})}, backend_config="%s"
}`, cfg), eval.Options{}, f32Tensor(t, a, 64, 8), f32Tensor(t, b, 64, 8))
	// sum_prod's outputs are separate tensors, not parameter a: refused.
	var ue *eval.UnsupportedError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), `%kern`) || !strings.Contains(err.Error(), `output 1 aliased to operand 0`) {
		t.Fatalf("aliasing a separate output: %v", err)
	}
}

func TestGoldenKernelConstantOperands(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	c := randF32(r, 16*4)
	k, cv := addConstKernel(c, 16, 4)
	cfg := encodeKernel(t, k, func(cc *config.Config) { cc.ConstantValues = []config.ConstantValue{cv} })
	a := randF32(r, 16*4)
	want := zipF32(a, c, func(x, y float32) float32 { return x + y })
	text := func(n int) string {
		var params, ops []string
		for i := 0; i < n; i++ {
			params = append(params, fmt.Sprintf("  p%d = f32[16,4]{1,0} parameter(%d)", i, i))
			ops = append(ops, fmt.Sprintf("p%d", i))
		}
		return fmt.Sprintf("HloModule m\nENTRY e {\n%s\n  ROOT kern = f32[16,4]{1,0} custom-call(%s), custom_call_target=\"AwsNeuronCustomNativeKernel\", backend_config=\"%s\"\n}",
			strings.Join(params, "\n"), strings.Join(ops, ", "), cfg)
	}
	at, ct := f32Tensor(t, a, 16, 4), f32Tensor(t, c, 16, 4)
	wantF32(t, "parameters only", mustEval(t, text(1), at).T, want)
	wantF32(t, "constant appended", mustEval(t, text(2), at, ct).T, want)

	wrong := append([]float32(nil), c...)
	wrong[0] = -wrong[0] + 1
	for _, tc := range []struct {
		name string
		args []*tensor.Tensor
		want string
	}{
		{"other constant data", []*tensor.Tensor{at, f32Tensor(t, wrong, 16, 4)}, `operand 1 holds other data than constant_values[0] ("c")`},
		{"three operands", []*tensor.Tensor{at, ct, ct}, "takes 1 operands (its parameters) or 2 (parameters then its 1 constant_values), got 3"},
	} {
		_, err := evalText(t, text(len(tc.args)), eval.Options{}, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "%kern") {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// reencode rewrites a config's JSON object.
func reencode(t *testing.T, cfg string, edit func(map[string]any)) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(out)
}

func TestGoldenKernelUnreadableConfigs(t *testing.T) {
	cfg := encodeKernel(t, binaryKernel("golden_bad", "add", 4, 4), nil)
	cases := []struct {
		name, target, bc, want string
	}{
		{"another producer's IR", "AwsNeuronCustomNativeKernel", `backend_config="` + reencode(t, cfg, func(m map[string]any) {
			delete(m, "serialize_ir_string")
			m["klir_binary"] = base64.StdEncoding.EncodeToString([]byte("KLIR\x00\x01"))
		}) + `"`, `unexpected key(s) "klir_binary"`},
		{"newer kernel_version", "AwsNeuronNkiKernel", `backend_config="` + reencode(t, cfg, func(m map[string]any) { m["kernel_version"] = 7 }) + `"`, "kernel_version 7 is newer"},
		{"corrupt IR", "AwsNeuronCustomNativeKernel_Sim", `backend_config="` + reencode(t, cfg, func(m map[string]any) {
			m["serialize_ir_string"] = base64.StdEncoding.EncodeToString([]byte{0xff, 0xff, 0xff, 0x01, 0x02})
		}) + `"`, `bad kernel IR (key "serialize_ir_string")`},
		{"not a config", "AwsNeuronCustomNativeKernel", `backend_config="{\"opaque\": 1}"`, "dictionary"},
		{"no backend_config", "AwsNeuronCustomNativeKernel", `api_version=API_VERSION_ORIGINAL`, "has no backend_config"},
		{"dictionary without kernel", FFITarget, `backend_config={opaque = "x"}`, "has no entry `kernel` (has opaque)"},
		{"kernel not a string", FFITarget, `backend_config={kernel = 3 : i64}`, "entry `kernel` is 3 : i64, not a string"},
	}
	for _, c := range cases {
		text := fmt.Sprintf(`HloModule m
ENTRY e {
  a = f32[4,4]{1,0} parameter(0)
  ROOT kern = f32[4,4]{1,0} custom-call(a, a), custom_call_target="%s", %s
}`, c.target, c.bc)
		x := f32Tensor(t, make([]float32, 16), 4, 4)
		_, err := evalText(t, text, eval.Options{}, x)
		var ue *eval.UnsupportedError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "%kern") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want an UnsupportedError naming %%kern and %q, got %v", c.name, c.want, err)
		}
	}
}

func TestGoldenKernelShapeErrors(t *testing.T) {
	cfg := encodeKernel(t, binaryKernel("golden_shapes", "add", 4, 4), nil)
	for _, c := range []struct{ shape, operands, want string }{
		{"f32[4,4]{1,0}", "a", "takes 2 operands (its parameters), got 1"},
		{"f32[4,2]{1,0}", "a, a", `result 0 is f32[4,2] but kernel output 0 ("out") is f32[4,4]`},
		{"(f32[4,4]{1,0}, f32[4,4]{1,0})", "a, a", "2 results but the kernel returns 1 outputs"},
	} {
		text := fmt.Sprintf(`HloModule m
ENTRY e {
  a = f32[4,4]{1,0} parameter(0)
  ROOT kern = %s custom-call(%s), custom_call_target="AwsNeuronCustomNativeKernel", backend_config="%s"
}`, c.shape, c.operands, cfg)
		_, err := evalText(t, text, eval.Options{}, f32Tensor(t, make([]float32, 16), 4, 4))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `kernel "golden_shapes"`) {
			t.Errorf("%s(%s): %v", c.shape, c.operands, err)
		}
	}
}
