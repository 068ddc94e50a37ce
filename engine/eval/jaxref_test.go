package eval

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"

	"goldtrace/internal/pyref"
)

// The differential tests against jax share this plumbing: a python
// generator in testdata (built on testdata/jaxcases.py) lowers jax programs
// to HLO text, runs them with jax on CPU and writes raw input/output bytes
// plus a manifest.json; the Go side evaluates each HLO module on the inputs
// and compares with jax's outputs.

// jaxCase is one manifest entry as testdata/jaxcases.py writes it.
// Generators may add fields; their tests embed jaxCase in a larger struct.
type jaxCase struct {
	Name    string
	HLO     string
	Inputs  []jaxArray
	Outputs []jaxArray
	Rtol    *float64
	Atol    float64
}

// jaxArray names one raw little-endian array file of a case.
type jaxArray struct {
	File  string
	Dtype string
	Shape []int64
}

// requireJax skips the test (fails it, when references are required)
// unless the reference interpreter imports jax, numpy and ml_dtypes.
func requireJax(t *testing.T) {
	t.Helper()
	pyref.Require(t, "jax", "numpy", "ml_dtypes")
}

// genJaxCases runs testdata/<script> with a fresh temporary output directory
// followed by args, and returns that directory. For mutation runs only,
// GOLDTRACE_REFERENCE_CACHE=dir keeps the references in dir/<script><args>
// and reuses them while they exist (the generator itself is then not run).
func genJaxCases(t *testing.T, script string, args ...string) string {
	t.Helper()
	requireJax(t)
	dir := t.TempDir()
	if cache := os.Getenv("GOLDTRACE_REFERENCE_CACHE"); cache != "" {
		dir = filepath.Join(cache, strings.Join(append([]string{script}, args...), "_"))
		if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err == nil {
			return dir
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := pyref.Command(append([]string{filepath.Join("testdata", script), dir}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s failed: %v\n%s", script, err, out)
	}
	return dir
}

// readManifest decodes dir/manifest.json into entries of type T.
func readManifest[T any](t *testing.T, dir string) []T {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []T
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	return cases
}

// jaxCases runs a generator (restricted to case-name prefixes, if any) and
// returns its directory and manifest.
func jaxCases(t *testing.T, script string, prefixes ...string) (string, []jaxCase) {
	t.Helper()
	dir := genJaxCases(t, script, prefixes...)
	return dir, readManifest[jaxCase](t, dir)
}

func loadJaxArray(dir string, a jaxArray) (*tensor.Tensor, error) {
	typ, ok := dtype.FromNumpy(a.Dtype)
	if !ok {
		return nil, fmt.Errorf("unknown dtype %q", a.Dtype)
	}
	data, err := os.ReadFile(filepath.Join(dir, a.File))
	if err != nil {
		return nil, err
	}
	return tensor.FromBytes(typ, a.Shape, data)
}

// referenceXLACompat is the XLA:CPU version of the jax that generates the
// references (the one make deps installs).
const referenceXLACompat = "0.10"

// evalJaxCase evaluates a case's module on its inputs and returns the result
// leaves beside jax's outputs, failing the test on any error or on a leaf
// count mismatch.
func evalJaxCase(t *testing.T, dir string, c jaxCase) (got, want []*tensor.Tensor) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(dir, c.HLO))
	if err != nil {
		t.Fatal(err)
	}
	m, err := hlo.ParseText(src, c.HLO)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	// The references come from this machine's jax (0.10), whose XLA:CPU
	// differs from the newest the evaluator follows.
	if err := ApplyXLACompat(m, referenceXLACompat); err != nil {
		t.Fatal(err)
	}
	var args []Value
	for _, a := range c.Inputs {
		tt, err := loadJaxArray(dir, a)
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, ArrayValue(tt))
	}
	res, err := New(m, Options{}).Run(args)
	if err != nil {
		t.Fatalf("eval: %v", err)
	}
	got = res.Leaves()
	if len(got) != len(c.Outputs) {
		t.Fatalf("got %d outputs, want %d", len(got), len(c.Outputs))
	}
	want = make([]*tensor.Tensor, len(c.Outputs))
	for i, o := range c.Outputs {
		if want[i], err = loadJaxArray(dir, o); err != nil {
			t.Fatal(err)
		}
	}
	return got, want
}

// compareJaxOutputs reports every output of got that differs from want
// under the case's tolerances (see compareTensors).
func compareJaxOutputs(t *testing.T, got, want []*tensor.Tensor, c jaxCase) {
	t.Helper()
	for i := range want {
		if err := compareTensors(got[i], want[i], c.Rtol, c.Atol); err != nil {
			t.Errorf("output %d: %v", i, err)
		}
	}
}

// runJaxCase evaluates one generated case and compares every output leaf.
func runJaxCase(t *testing.T, dir string, c jaxCase) {
	got, want := evalJaxCase(t, dir, c)
	compareJaxOutputs(t, got, want, c)
}

// compareTensors checks got against want: bit-exact when rtol is nil, else
// elementwise |got-want| <= atol + rtol*|want| (NaNs must match NaNs).
func compareTensors(got, want *tensor.Tensor, rtol *float64, atol float64) error {
	if got.Type != want.Type || !equalDims(got.Dims, want.Dims) {
		return fmt.Errorf("got %v, want %v", got, want)
	}
	if rtol == nil || !(want.Type.IsFloat() || want.Type.IsComplex()) {
		es := int64(want.Type.Size())
		for i := int64(0); i < want.NumElements(); i++ {
			g, w := got.Data[i*es:(i+1)*es], want.Data[i*es:(i+1)*es]
			if string(g) != string(w) {
				return fmt.Errorf("element %d: got bytes %x (%v), want %x (%v); first mismatch", i, g, elemF64(got, i), w, elemF64(want, i))
			}
		}
		return nil
	}
	gv, wv := flatF64(got), flatF64(want)
	bad := 0
	var first string
	for i := range wv {
		g, w := gv[i], wv[i]
		ok := (math.IsNaN(g) && math.IsNaN(w)) || g == w || math.Abs(g-w) <= atol+*rtol*math.Abs(w)
		if !ok {
			if bad == 0 {
				first = fmt.Sprintf("value %d: got %v, want %v", i, g, w)
			}
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d values out of tolerance (rtol %g atol %g); %s", bad, len(wv), *rtol, atol, first)
	}
	return nil
}

// flatF64 returns a float tensor's values as float64 (complex: re, im pairs).
func flatF64(t *tensor.Tensor) []float64 {
	if t.Type.IsComplex() {
		var out []float64
		for _, c := range toC128s(t) {
			out = append(out, real(c), imag(c))
		}
		return out
	}
	return toF64s(t)
}

func elemF64(t *tensor.Tensor, i int64) any {
	switch {
	case t.Type.IsFloat():
		return flatF64(t)[i]
	case t.Type.IsComplex():
		return toC128s(t)[i]
	case t.Type.IsUnsigned():
		return asU64(t)[i]
	}
	return asI64(t)[i]
}
