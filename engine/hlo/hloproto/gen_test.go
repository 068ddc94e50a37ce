package hloproto

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"goldtrace/internal/pyref"
)

// manifest mirrors testdata/gen_protos.py's manifest.json.
type manifestCase struct {
	Name         string `json:"name"`
	PB           string `json:"pb"`
	Txt          string `json:"txt"`
	Computations []struct {
		Name         string `json:"name"`
		Instructions []struct {
			Name     string   `json:"name"`
			Opcode   string   `json:"opcode"`
			Operands []string `json:"operands"`
			Text     string   `json:"text"`
		} `json:"instructions"`
	} `json:"computations"`
	Constants []struct {
		Computation string  `json:"computation"`
		Instruction string  `json:"instruction"`
		Dtype       string  `json:"dtype"`
		Dims        []int64 `json:"dims"`
		File        string  `json:"file"`
	} `json:"constants"`
}

var (
	genOnce sync.Once
	genDir  string
	genErr  error
	genSkip string
)

// generated runs gen_protos.py once per test binary and returns its output
// directory and manifest; it skips the test when python3 or jax is missing.
func generated(tb testing.TB) (string, []manifestCase) {
	tb.Helper()
	dir, cases, skip, err := runGenerator()
	if skip != "" {
		pyref.Require(tb, "jax", "numpy", "ml_dtypes") // skips, or fails when references are required
		tb.Skip(skip)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return dir, cases
}

// runGenerator runs gen_protos.py (once) and reads its manifest. skip is
// non-empty when python3 or its packages are missing.
func runGenerator() (dir string, cases []manifestCase, skip string, err error) {
	genOnce.Do(func() {
		if err := pyref.Missing("jax", "numpy", "ml_dtypes"); err != nil {
			genSkip = err.Error()
			return
		}
		dir, err := os.MkdirTemp("", "hloproto-gen-")
		if err != nil {
			genErr = err
			return
		}
		genDir = dir
		cmd := pyref.Command(filepath.Join("testdata", "gen_protos.py"), dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			genErr = &genError{err: err, out: string(out)}
		}
	})
	if genSkip != "" || genErr != nil {
		return "", nil, genSkip, genErr
	}
	raw, err := os.ReadFile(filepath.Join(genDir, "manifest.json"))
	if err != nil {
		return "", nil, "", err
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		return "", nil, "", err
	}
	return genDir, cases, "", nil
}

type genError struct {
	err error
	out string
}

func (e *genError) Error() string { return "gen_protos.py: " + e.err.Error() + "\n" + e.out }

func readGen(tb testing.TB, dir, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
