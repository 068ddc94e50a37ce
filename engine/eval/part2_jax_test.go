package eval

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// jaxCase is one entry of the manifest gen_part2.py writes.
type jaxCase struct {
	Name    string
	HLO     string
	Inputs  []jaxArray
	Outputs []jaxArray
	Rtol    *float64
	Atol    float64
}

type jaxArray struct {
	File  string
	Dtype string
	Shape []int64
}

// jaxCases runs gen_part2.py (restricted to case-name prefixes, if any) into a
// temporary directory and returns the manifest, skipping when python3 or jax
// is missing.
func jaxCases(t *testing.T, script string, prefixes ...string) (string, []jaxCase) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found")
	}
	if err := exec.Command("python3", "-c", "import jax, numpy, ml_dtypes").Run(); err != nil {
		t.Skip("python3 lacks jax/numpy/ml_dtypes")
	}
	dir := t.TempDir()
	cmd := exec.Command("python3", append([]string{filepath.Join("testdata", script), dir}, prefixes...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s failed: %v\n%s", script, err, out)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []jaxCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	return dir, cases
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

// runJaxCase evaluates one generated case and compares every output leaf.
func runJaxCase(t *testing.T, dir string, c jaxCase) {
	src, err := os.ReadFile(filepath.Join(dir, c.HLO))
	if err != nil {
		t.Fatal(err)
	}
	m, err := hlo.ParseText(src, c.HLO)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	var args []Value
	for _, a := range c.Inputs {
		tt, err := loadJaxArray(dir, a)
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, ArrayValue(tt))
	}
	got, err := New(m, Options{}).Run(args)
	if err != nil {
		t.Fatalf("eval: %v", err)
	}
	leaves := got.Leaves()
	if len(leaves) != len(c.Outputs) {
		t.Fatalf("got %d outputs, want %d", len(leaves), len(c.Outputs))
	}
	for i, o := range c.Outputs {
		want, err := loadJaxArray(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		if err := compareTensors(leaves[i], want, c.Rtol, c.Atol); err != nil {
			t.Errorf("output %d: %v", i, err)
		}
	}
}

// compareTensors checks got against want: bit-exact when rtol is nil, else
// elementwise |got-want| <= atol + rtol*|want| (NaNs must match NaNs).
func compareTensors(got, want *tensor.Tensor, rtol *float64, atol float64) error {
	if got.Type != want.Type || !equalShape(got.Dims, want.Dims) {
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

func equalShape(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
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

func TestPart2AgainstJax(t *testing.T) {
	dir, cases := jaxCases(t, "gen_part2.py")
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) { runJaxCase(t, dir, c) })
	}
}
