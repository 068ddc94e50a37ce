package golden

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"goldtrace/engine/npy"
	"goldtrace/engine/tensor"

	"goldtrace/internal/pyref"
)

// pyPrelude is prepended to every reference script: save() writes .npy files
// the way numpy + ml_dtypes users do, raw bits plus a .meta sidecar for the
// ml_dtypes types, independently of our own npy writer.
const pyPrelude = `
import json, sys
import numpy as np
import ml_dtypes
def save(name, a):
    a = np.asarray(a)
    if hasattr(ml_dtypes, a.dtype.name):
        np.save(name, a.view(np.dtype("V%d" % a.dtype.itemsize)))
        with open(name + ".meta", "w") as f:
            f.write(json.dumps({"ml_dtype": a.dtype.name}))
    else:
        np.save(name, a)
bf16 = ml_dtypes.bfloat16
rng = np.random.default_rng(1234)
`

// python runs script (after pyPrelude) in dir, with env added to the
// environment, skipping the test (failing
// it, when references are required) when the reference interpreter lacks
// numpy and ml_dtypes.
func python(t *testing.T, dir, script string, env ...string) {
	t.Helper()
	pyref.Require(t, "numpy", "ml_dtypes")
	cmd := pyref.Command("-")
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdin = strings.NewReader(pyPrelude + script)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("reference script failed: %v\n%s\nscript:\n%s", err, out, script)
	}
}

func needJAX(t *testing.T) {
	t.Helper()
	pyref.Require(t, "numpy", "ml_dtypes", "jax")
}

// runMain runs the CLI and returns its exit code, stdout and stderr.
func runMain(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readNpy(t *testing.T, path string) *tensor.Tensor {
	t.Helper()
	x, err := npy.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return x
}

// sameTensor compares type, shape and bits.
func sameTensor(t *testing.T, what string, got, want *tensor.Tensor) {
	t.Helper()
	if got.Type != want.Type || !slices.Equal(got.Dims, want.Dims) {
		t.Errorf("%s: got %v, want %v", what, got, want)
		return
	}
	if !bytes.Equal(got.Data, want.Data) {
		t.Errorf("%s: values differ\n got  %v\n want %v", what, describe(got), describe(want))
	}
}

// listFiles returns every entry under dir (relative paths), or nil if dir
// does not exist.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return nil
	})
	return out
}
