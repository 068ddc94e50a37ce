package hlo

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"goldtrace/internal/pyref"
)

// requirePython skips the test (fails it, when references are required)
// unless the reference interpreter imports every module.
func requirePython(t testing.TB, modules ...string) {
	t.Helper()
	pyref.Require(t, modules...)
}

// roundTrip parses src, verifies it, prints it and checks that the printed
// text parses back into an equal module and prints identically.
func roundTrip(t *testing.T, name string, src []byte) *Module {
	t.Helper()
	m, err := ParseText(src, name)
	if err != nil {
		t.Errorf("%s: parse: %v", name, err)
		return nil
	}
	if err := Verify(m); err != nil {
		t.Errorf("%s: verify: %v", name, err)
	}
	text := Print(m)
	m2, err := ParseText([]byte(text), name+".printed")
	if err != nil {
		t.Errorf("%s: parsing printed module: %v", name, err)
		return m
	}
	if ok, d := Equal(m, m2); !ok {
		t.Errorf("%s: printed module differs: %s", name, d)
	}
	if text2 := Print(m2); text2 != text {
		t.Errorf("%s: printing is not idempotent", name)
	}
	return m
}

// TestJAXModules parses every module gen_modules.py makes with JAX (the
// unoptimized HLO JAX hands to XLA and XLA:CPU's optimized module) and checks
// that XLA's own shapes verify and that print→parse round-trips.
func TestJAXModules(t *testing.T) {
	if testing.Short() {
		t.Skip("needs JAX")
	}
	requirePython(t, "jax", "ml_dtypes")
	dir := t.TempDir()
	cmd := pyref.Command("testdata/gen_modules.py", dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gen_modules.py: %v\n%s", err, out)
	}
	if len(out) > 0 {
		t.Errorf("gen_modules.py reported failures:\n%s", out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.hlo"))
	if len(files) < 80 {
		t.Fatalf("expected at least 80 modules, got %d", len(files))
	}
	opcodesSeen := map[string]bool{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m := roundTrip(t, filepath.Base(f), src)
		if m == nil {
			continue
		}
		for _, c := range m.Computations {
			for _, in := range c.Instructions {
				opcodesSeen[in.Opcode] = true
			}
		}
	}
	for _, op := range []string{"dot", "convolution", "reduce-window", "select-and-scatter", "gather", "scatter",
		"sort", "topk", "while", "conditional", "rng-bit-generator", "fft", "custom-call", "fusion",
		"bitcast-convert", "reduce-precision", "dynamic-update-slice", "pad", "reverse"} {
		if !opcodesSeen[op] {
			t.Errorf("no generated module exercised %s", op)
		}
	}
	t.Logf("%d modules, %d opcodes", len(files), len(opcodesSeen))
}

// TestTestdataModules round-trips the modules kept in testdata (also the fuzz seeds).
func TestTestdataModules(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.hlo")
	if len(files) == 0 {
		t.Fatal("no testdata modules")
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, f, src)
	}
}

// TestConstantsMatchMLDtypes checks that float constants of every float type
// round to the same bits ml_dtypes gives and print back exactly.
func TestConstantsMatchMLDtypes(t *testing.T) {
	requirePython(t, "numpy", "ml_dtypes")
	script := `
import numpy as np, ml_dtypes, sys
rng = np.random.default_rng(7)
names = ["float16","bfloat16","float32","float64","float8_e5m2","float8_e4m3fn","float8_e4m3fnuz",
         "float8_e5m2fnuz","float8_e4m3b11fnuz","float8_e4m3","float8_e3m4","float8_e8m0fnu","float4_e2m1fn"]
for n in names:
    dt = np.dtype(getattr(ml_dtypes, n, None) or n)
    fi = ml_dtypes.finfo(dt)
    vals = list(rng.standard_normal(40).astype(np.float32) * np.float32(fi.max) / np.float32(4))
    vals += list((rng.standard_normal(20) * 3).astype(np.float32))
    vals += [np.float32(fi.max), np.float32(fi.tiny), np.float32(fi.smallest_subnormal), np.float32(0.0), np.float32(-0.0)]
    if n == "float8_e8m0fnu":
        vals = [abs(v) for v in vals if v != 0]
    if n == "float64":
        vals = [np.float64(v) for v in vals] + [np.float64(1e300), np.float64(-5e-324)]
    arr = np.array([float(v) for v in vals]).astype(dt)
    bits = arr.view(np.uint8 if dt.itemsize == 1 else {2: np.uint16, 4: np.uint32, 8: np.uint64}[dt.itemsize])
    print(n, ",".join(repr(float(v)) for v in vals), ",".join(str(int(b)) for b in bits))
`
	out, err := pyref.Command("-W", "ignore", "-c", script).Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	hloName := map[string]string{"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
		"float8_e5m2": "f8e5m2", "float8_e4m3fn": "f8e4m3fn", "float8_e4m3fnuz": "f8e4m3fnuz",
		"float8_e5m2fnuz": "f8e5m2fnuz", "float8_e4m3b11fnuz": "f8e4m3b11fnuz", "float8_e4m3": "f8e4m3",
		"float8_e3m4": "f8e3m4", "float8_e8m0fnu": "f8e8m0fnu", "float4_e2m1fn": "f4e2m1fn"}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(hloName) {
		t.Fatalf("python printed %d lines", len(lines))
	}
	for _, line := range lines {
		f := strings.Fields(line)
		ty, vals, bits := hloName[f[0]], strings.Split(f[1], ","), strings.Split(f[2], ",")
		src := "HloModule c\nENTRY e {\n  ROOT c = " + ty + "[" + itoa(int64(len(vals))) + "] constant({" + strings.Join(vals, ", ") + "})\n}\n"
		m := roundTrip(t, ty, []byte(src))
		if m == nil {
			continue
		}
		tn := m.Entry.Root.Literal.Tensor
		size := tn.Type.Size()
		for i, want := range bits {
			var got uint64
			for k := size - 1; k >= 0; k-- {
				got = got<<8 | uint64(tn.Data[i*size+k])
			}
			if strconv.FormatUint(got, 10) != want {
				t.Errorf("%s: value %s parsed to bits %d, ml_dtypes gives %s", ty, vals[i], got, want)
			}
		}
	}
}
