package golden

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"goldtrace/engine/hlo/hlopb"
)

// cliCase is one end-to-end run: an HLO text module, a Python script that
// writes the inputs in0.npy, in1.npy, ... and the expected outputs exp0.npy,
// exp1.npy, ... computed with numpy/ml_dtypes (or JAX), and extra flags.
type cliCase struct {
	name    string
	hlo     string
	inputs  int
	outputs int
	flags   []string
	script  string
	jax     bool
}

var cliCases = []cliCase{
	{
		name: "f32_bf16_tuple", inputs: 2, outputs: 2,
		hlo: `HloModule m
ENTRY main {
  x = f32[2,3] parameter(0)
  y = bf16[2,3] parameter(1)
  yc = f32[2,3] convert(y)
  s = f32[2,3] add(x, yc)
  m = f32[2,3] multiply(s, x)
  ROOT t = (f32[2,3], bf16[2,3]) tuple(m, y)
}`,
		script: `
x = rng.uniform(-2, 2, (2, 3)).astype(np.float32)
y = rng.uniform(-2, 2, (2, 3)).astype(bf16)
save("in0.npy", x); save("in1.npy", y)
save("exp0.npy", (x + y.astype(np.float32)) * x)
save("exp1.npy", y)`,
	},
	// XLA:CPU rounds every bf16 op's result to bf16.
	bf16ChainCase("bf16_rounds_per_op", `
a = (f(x) + f(y)).astype(bf16)
save("exp0.npy", (f(a) * f(x)).astype(bf16))`),
	// -U: the same module computes in f32 with no rounding, output f32.
	bf16ChainCase("upcast_bf16_chain", `
save("exp0.npy", (f(x) + f(y)) * f(x))`, "-U"),
	convertCase("convert_roundtrip", "x.astype(bf16).astype(np.float32) + x"),
	// -U turns the convert to bf16 into a convert to f32: no rounding.
	convertCase("upcast_convert_roundtrip", "x + x", "--upcast-all-to-fp32"),
	{
		// -U keeps bitcast-convert on the original bits.
		name: "upcast_bitcast_convert", inputs: 1, outputs: 2, flags: []string{"-U"},
		hlo: `HloModule m
ENTRY main {
  y = bf16[3] parameter(0)
  b = s16[3] bitcast-convert(y)
  s = bf16[3] add(y, y)
  back = bf16[3] bitcast-convert(b)
  m = bf16[3] multiply(back, s)
  ROOT t = (s16[3], bf16[3]) tuple(b, m)
}`,
		script: `
y = np.array([1.5, -0.333, 7.1], dtype=bf16)
save("in0.npy", y)
f = y.astype(np.float32)
save("exp0.npy", y.view(np.int16))
save("exp1.npy", f * (f + f))`,
	},
	fp8Case("fp8e4m3fn", "0x7E", "float8_e4m3fn"),
	// -F reads the same bits as IEEE-style e4m3: 0x78 is +inf there.
	fp8Case("fp8e4m3fn_as_e4m3", "0x70", "float8_e4m3", "-F"),
	{
		name: "unsafe_dtype_cast", inputs: 1, outputs: 1, flags: []string{"-u"},
		hlo: `HloModule m
ENTRY main {
  x = f32[3] parameter(0)
  ROOT s = f32[3] add(x, x)
}`,
		script: `
x = np.array([1/3, 1e10/3, -2.5], dtype=np.float64)
save("in0.npy", x)
save("exp0.npy", x.astype(np.float32) * np.float32(2))`,
	},
	{
		name: "tuple_parameter_and_passthrough", inputs: 2, outputs: 3,
		hlo: `HloModule m
ENTRY main {
  p = (f32[2], s32[3]) parameter(0)
  a = f32[2] get-tuple-element(p), index=0
  b = s32[3] get-tuple-element(p), index=1
  c = s32[3] multiply(b, b)
  ROOT t = (f32[2], s32[3], f32[2]) tuple(a, c, a)
}`,
		script: `
a = np.array([0.5, -4], dtype=np.float32)
b = np.array([3, -7, 11], dtype=np.int32)
save("in0.npy", a); save("in1.npy", b)
save("exp0.npy", a); save("exp1.npy", b * b); save("exp2.npy", a)`,
	},
	{
		// A module JAX lowers itself; expected values from jax.jit on CPU.
		name: "jax_lowered", inputs: 3, outputs: 2, jax: true,
		script: `
import jax, jax.numpy as jnp
def f(x, w, b):
    h = jnp.maximum(x @ w, 0.0)
    return (h.astype(jnp.bfloat16) + b), jnp.sum(h, axis=0)
x = rng.integers(-4, 4, (4, 8)).astype(np.float32)
w = rng.integers(-4, 4, (8, 3)).astype(np.float32)
b = rng.integers(-4, 4, (3,)).astype(bf16)
with open("module.hlo", "w") as fh:
    fh.write(jax.jit(f).lower(x, w, b).as_text(dialect="hlo"))
save("in0.npy", x); save("in1.npy", w); save("in2.npy", b)
r0, r1 = jax.jit(f)(x, w, b)
save("exp0.npy", np.asarray(r0)); save("exp1.npy", np.asarray(r1))`,
	},
}

const bf16Chain = `HloModule m
ENTRY main {
  x = bf16[4] parameter(0)
  y = bf16[4] parameter(1)
  a = bf16[4] add(x, y)
  ROOT m = bf16[4] multiply(a, x)
}`

const convertRoundTrip = `HloModule m
ENTRY main {
  x = f32[5] parameter(0)
  c = bf16[5] convert(x)
  d = f32[5] convert(c)
  ROOT s = f32[5] add(d, x)
}`

const fp8Module = `HloModule m
ENTRY main {
  x = f8e4m3fn[4] parameter(0)
  ROOT c = f32[4] convert(x)
}`

// bf16ChainCase runs bf16Chain on four uniform bf16 values each of x and y;
// expect is Python that saves exp0.npy, with f widening to f32.
func bf16ChainCase(name, expect string, flags ...string) cliCase {
	return cliCase{name: name, inputs: 2, outputs: 1, flags: flags, hlo: bf16Chain, script: `
x = rng.uniform(-3, 3, (4,)).astype(bf16)
y = rng.uniform(-3, 3, (4,)).astype(bf16)
save("in0.npy", x); save("in1.npy", y)
f = lambda a: a.astype(np.float32)` + expect}
}

// convertCase runs convertRoundTrip on five uniform f32 values x and expects
// want, a numpy expression of x.
func convertCase(name, want string, flags ...string) cliCase {
	return cliCase{name: name, inputs: 1, outputs: 1, flags: flags, hlo: convertRoundTrip, script: `
x = rng.uniform(-3, 3, (5,)).astype(np.float32)
save("in0.npy", x)
save("exp0.npy", ` + want + `)`}
}

// fp8Case runs fp8Module on the f8e4m3fn bit patterns 0x38, 0x78, 0xC0 and
// last, and expects them read as the ml_dtypes type as, widened to f32.
func fp8Case(name, last, as string, flags ...string) cliCase {
	return cliCase{name: name, inputs: 1, outputs: 1, flags: flags, hlo: fp8Module, script: `
bits = np.array([0x38, 0x78, 0xC0, ` + last + `], dtype=np.uint8)
save("in0.npy", bits.view(ml_dtypes.float8_e4m3fn))
save("exp0.npy", bits.view(ml_dtypes.` + as + `).astype(np.float32))`}
}

func TestCLIMatchesReference(t *testing.T) {
	for _, tc := range cliCases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.jax {
				needJAX(t)
			}
			dir := t.TempDir()
			if tc.hlo != "" {
				writeFile(t, filepath.Join(dir, "module.hlo"), tc.hlo)
			}
			python(t, dir, tc.script)
			out := filepath.Join(dir, "out")
			args := []string{"-m", filepath.Join(dir, "module.hlo"), "-O", out}
			for i := range tc.inputs {
				args = append(args, "-i", filepath.Join(dir, fmt.Sprintf("in%d.npy", i)))
			}
			args = append(args, tc.flags...)
			code, _, stderr := runMain(args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for i := range tc.outputs {
				got := readNpy(t, filepath.Join(out, OutputFileName(i)))
				want := readNpy(t, filepath.Join(dir, fmt.Sprintf("exp%d.npy", i)))
				sameTensor(t, OutputFileName(i), got, want)
			}
			if files := listFiles(t, out); len(files) > 2*tc.outputs {
				t.Errorf("unexpected files in the output dir: %v", files)
			}
			if _, err := os.Stat(filepath.Join(out, OutputFileName(tc.outputs))); err == nil {
				t.Errorf("more than %d outputs written", tc.outputs)
			}
		})
	}
}

func TestCLINamedOutputsAndIntermediates(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "module.hlo"), cliCases[0].hlo)
	python(t, dir, cliCases[0].script+`
f = lambda a: a.astype(np.float32)
save("int2.npy", f(y))
save("int3.npy", x + f(y))`)
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runMain("-m", filepath.Join(dir, "module.hlo"), "-i", filepath.Join(dir, "in0.npy"),
		"-i", filepath.Join(dir, "in1.npy"), "-O", out, "-o", "first.npy", "-o", "sub/second.npy", "-s", "-v", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	sameTensor(t, "first", readNpy(t, filepath.Join(out, "first.npy")), readNpy(t, filepath.Join(dir, "exp0.npy")))
	sameTensor(t, "second", readNpy(t, filepath.Join(out, "sub", "second.npy")), readNpy(t, filepath.Join(dir, "exp1.npy")))
	if _, err := os.Stat(filepath.Join(out, OutputFileName(0))); err == nil {
		t.Error("-o given, but value_output0.npy was written too")
	}
	// Intermediates: x, y, yc, s, m, t (a tuple: two leaves) = 7 files.
	idx, err := os.ReadFile(filepath.Join(out, IntermediatesIndex))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"instruction": "yc"`, `"opcode": "convert"`, `"tuple_index": [`, `"shape": "f32[2,3]"`} {
		if !strings.Contains(string(idx), want) {
			t.Errorf("%s lacks %s:\n%s", IntermediatesIndex, want, idx)
		}
	}
	sameTensor(t, "intermediate yc", readNpy(t, filepath.Join(out, IntermediateFileName(2))), readNpy(t, filepath.Join(dir, "int2.npy")))
	sameTensor(t, "intermediate s", readNpy(t, filepath.Join(out, IntermediateFileName(3))), readNpy(t, filepath.Join(dir, "int3.npy")))
	if _, err := os.Stat(filepath.Join(out, IntermediateFileName(6))); err != nil {
		t.Errorf("expected 7 intermediates: %v", err)
	}
	for _, want := range []string{"module m", "parameter 1 (%y): bf16[2,3]", "output 1 -> sub/second.npy: bf16[2,3] min=", "7 intermediates"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("-v 1 summary lacks %q:\n%s", want, stdout)
		}
	}
	for _, f := range listFiles(t, out) {
		if strings.Contains(f, "tmp") {
			t.Errorf("temporary file left behind: %s", f)
		}
	}
}

func TestCLISynthesizedInputsAreDeterministic(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "module.hlo")
	writeFile(t, mod, cliCases[0].hlo)
	var runs [3]string
	for i, seed := range []string{"7", "7", "8"} {
		runs[i] = filepath.Join(dir, fmt.Sprint("out", i))
		code, stdout, stderr := runMain("-m", mod, "-O", runs[i], "--seed", seed, "-v", "1")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if !strings.Contains(stdout, "synthesized 2") {
			t.Errorf("-v 1 does not say inputs were synthesized:\n%s", stdout)
		}
	}
	a := readNpy(t, filepath.Join(runs[0], OutputFileName(0)))
	sameTensor(t, "same seed", readNpy(t, filepath.Join(runs[1], OutputFileName(0))), a)
	if c := readNpy(t, filepath.Join(runs[2], OutputFileName(0))); string(c.Data) == string(a.Data) {
		t.Error("different seeds gave the same outputs")
	}
}

func TestCLIEmulatedReplicas(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "module.hlo")
	writeFile(t, mod, `HloModule m, replica_count=2
ENTRY main {
  x = f32[3] parameter(0)
  r = u32[] replica-id()
  f = f32[] convert(r)
  b = f32[3] broadcast(f), dimensions={}
  ROOT s = f32[3] add(x, b)
}`)
	python(t, dir, `
x = np.array([1, 2, 3], dtype=np.float32)
save("in0.npy", x); save("exp0.npy", x); save("exp1.npy", x + 1)
save("in1.npy", x * 10); save("exp1b.npy", x * 10 + 1)`)
	out := filepath.Join(dir, "out")
	// Replicated inputs.
	code, _, stderr := runMain("-m", mod, "-i", filepath.Join(dir, "in0.npy"), "-O", out, "-e")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	sameTensor(t, "device 0", readNpy(t, filepath.Join(out, OutputFileName(0))), readNpy(t, filepath.Join(dir, "exp0.npy")))
	sameTensor(t, "device 1", readNpy(t, filepath.Join(out, OutputFileName(1))), readNpy(t, filepath.Join(dir, "exp1.npy")))
	// Every device's outputs also under dev<d>/, device 0 included.
	sameTensor(t, "dev0/", readNpy(t, filepath.Join(out, "dev0", OutputFileName(0))), readNpy(t, filepath.Join(dir, "exp0.npy")))
	sameTensor(t, "dev1/", readNpy(t, filepath.Join(out, "dev1", OutputFileName(0))), readNpy(t, filepath.Join(dir, "exp1.npy")))
	// Per-device inputs.
	out2 := filepath.Join(dir, "out2")
	code, _, stderr = runMain("-m", mod, "-i", filepath.Join(dir, "in0.npy"), "-i", filepath.Join(dir, "in1.npy"), "-O", out2, "--emulate-multiple-devices=2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	sameTensor(t, "device 1, own input", readNpy(t, filepath.Join(out2, OutputFileName(1))), readNpy(t, filepath.Join(dir, "exp1b.npy")))
}

func TestCLIHelp(t *testing.T) {
	code, stdout, _ := runMain("-h")
	if code != 0 {
		t.Fatalf("-h exits %d", code)
	}
	for _, want := range []string{"-m, --module", "-t, --module-type", "-i, --input", "-I, --input-type", "-o, --output",
		"-O, --output-dir", "-v, --verbose", "-s, --save-intermediates", "-U, --upcast-all-to-fp32",
		"-F, --experimental-unsafe-fp8e4m3fn-as-fp8e4m3", "-u, --unsafe-dtype-cast", "-e, --emulate-multiple-devices",
		"-S, --spmd", "-h, --help", "Exit codes", "70"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

// TestCLIProtoAndSnapshot runs a JAX-made HloModuleProto (with -i inputs) and
// an HloSnapshot built around it (whose arguments are the inputs), both
// auto-detected and with -t.
func TestCLIProtoAndSnapshot(t *testing.T) {
	needJAX(t)
	dir := t.TempDir()
	python(t, dir, `
import jax, jax.numpy as jnp
def f(x, y):
    return x * 2 - y, jnp.max(x)
x = np.array([1.5, -2, 8.25, 3], dtype=np.float32)
y = np.array([0.5, 0.25, -1, 6], dtype=np.float32)
mod = jax.jit(f).lower(x, y).compiler_ir("hlo").get_hlo_module()
with open("module.pb", "wb") as fh:
    fh.write(mod.as_serialized_hlo_module_proto())
save("in0.npy", x); save("in1.npy", y)
r0, r1 = jax.jit(f)(x, y)
save("exp0.npy", np.asarray(r0)); save("exp1.npy", np.asarray(r1))`)
	data, err := os.ReadFile(filepath.Join(dir, "module.pb"))
	if err != nil {
		t.Fatal(err)
	}
	var mp hlopb.HloModuleProto
	if err := proto.Unmarshal(data, &mp); err != nil {
		t.Fatal(err)
	}
	f32 := func(v ...float32) *hlopb.LiteralProto {
		return &hlopb.LiteralProto{Shape: &hlopb.ShapeProto{ElementType: hlopb.PrimitiveType_F32, Dimensions: []int64{4},
			Layout: &hlopb.LayoutProto{MinorToMajor: []int64{0}}}, F32S: v}
	}
	snap, err := proto.Marshal(&hlopb.HloSnapshot{Hlo: &hlopb.HloProto{HloModule: &mp},
		Arguments: []*hlopb.LiteralProto{f32(1.5, -2, 8.25, 3), f32(0.5, 0.25, -1, 6)}})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "snap.pb"), string(snap))

	in0, in1 := filepath.Join(dir, "in0.npy"), filepath.Join(dir, "in1.npy")
	runs := [][]string{
		{"-m", filepath.Join(dir, "module.pb"), "-i", in0, "-i", in1},
		{"-m", filepath.Join(dir, "module.pb"), "-t", "proto", "-i", in0, "-i", in1},
		{"-m", filepath.Join(dir, "snap.pb")},
		{"-m", filepath.Join(dir, "snap.pb"), "-t", "snapshot", "-v", "1"},
	}
	for i, args := range runs {
		out := filepath.Join(dir, fmt.Sprint("out", i))
		code, stdout, stderr := runMain(append(args, "-O", out)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		if i == 3 && !strings.Contains(stdout, "the snapshot's 2 arguments") {
			t.Errorf("-v 1 does not say the snapshot's arguments are used:\n%s", stdout)
		}
		for j := range 2 {
			sameTensor(t, fmt.Sprint(args, " output ", j), readNpy(t, filepath.Join(out, OutputFileName(j))),
				readNpy(t, filepath.Join(dir, fmt.Sprintf("exp%d.npy", j))))
		}
	}
}

// TestCLIErrorFile: --error-file records a failure's exit code and its stderr
// message as JSON, for each error class, and is not written on success.
func TestCLIErrorFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.hlo")
	if err := os.WriteFile(good, []byte("HloModule g\nENTRY main {\n  a = f32[2] parameter(0)\n  ROOT r = f32[2] negate(a)\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.hlo")
	if err := os.WriteFile(bad, []byte("HloModule b\nENTRY main {\n  ROOT r = f32[2] add(\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"module", []string{"-m", bad}, ExitModule, "bad.hlo"},
		{"input", []string{"-m", good, "-i", filepath.Join(dir, "missing.npy")}, ExitInput, "missing.npy"},
		{"usage", []string{"-m", good, "-t", "frob"}, ExitUsage, "frob"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ef := filepath.Join(dir, c.name+".json")
			code, _, stderr := runMain(append(c.args, "--error-file", ef, "-O", filepath.Join(dir, "out-"+c.name))...)
			if code != c.code {
				t.Fatalf("exit %d, want %d: %s", code, c.code, stderr)
			}
			var rec struct {
				ExitCode int    `json:"exit_code"`
				Message  string `json:"message"`
			}
			body, err := os.ReadFile(ef)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(body, &rec); err != nil {
				t.Fatalf("%s: %v", body, err)
			}
			if rec.ExitCode != c.code || !strings.Contains(rec.Message, c.want) || !strings.Contains(stderr, rec.Message) {
				t.Errorf("record %+v, stderr %q", rec, stderr)
			}
		})
	}
	ef := filepath.Join(dir, "ok.json")
	if code, _, stderr := runMain("-m", good, "-O", filepath.Join(dir, "ok"), "--error-file", ef); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(ef); !os.IsNotExist(err) {
		t.Errorf("error file written on success: %v", err)
	}
	if code, stdout, _ := runMain("-h"); code != 0 || strings.Contains(stdout, "error-file") {
		t.Errorf("--error-file is not hidden from --help")
	}
}
