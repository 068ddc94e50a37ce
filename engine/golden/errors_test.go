package golden

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const twoParamModule = `HloModule m
ENTRY main {
  x = f32[2,3] parameter(0)
  y = f32[2,3] parameter(1)
  ROOT s = f32[2,3] add(x, y)
}`

// TestCLIErrors runs the CLI on bad modules, inputs and flags: each must exit
// with its documented code, say what is wrong on one stderr line, and leave
// nothing in the output directory.
func TestCLIErrors(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "module.hlo")
	writeFile(t, mod, twoParamModule)
	writeFile(t, filepath.Join(dir, "garbage.hlo"), "HloModule broken\nENTRY main {\n  x = f32[2 parameter(0)\n}\n")
	writeFile(t, filepath.Join(dir, "invalid.hlo"), `HloModule m
ENTRY main {
  x = f32[2] parameter(0)
  y = f32[3] parameter(1)
  ROOT s = f32[2] add(x, y)
}`)
	writeFile(t, filepath.Join(dir, "customcall.hlo"), `HloModule m
ENTRY main {
  x = f32[2] parameter(0)
  ROOT c = f32[2] custom-call(x), custom_call_target="no_such_target"
}`)
	writeFile(t, filepath.Join(dir, "replicas.hlo"), `HloModule m, replica_count=2
ENTRY main {
  ROOT x = f32[2] parameter(0)
}`)
	writeFile(t, filepath.Join(dir, "corrupt.npy"), "\x93NUMPY\x01\x00garbage that is not a header")
	writeFile(t, filepath.Join(dir, "notafile"), "I am a file, not a directory")
	python(t, dir, `
save("good.npy", np.ones((2, 3), np.float32))
save("transposed.npy", np.ones((3, 2), np.float32))
save("ints.npy", np.ones((2, 3), np.int32))
save("f2.npy", np.ones((2,), np.float32))
with open("good.npy", "rb") as f: data = f.read()
with open("truncated.npy", "wb") as f: f.write(data[:-5])`)
	in := func(name string) string { return filepath.Join(dir, name) }
	good := in("good.npy")

	cases := []struct {
		name string
		args []string
		code int
		msgs []string
	}{
		{"missing module", []string{"-m", in("nope.hlo")}, ExitModule, []string{"nope.hlo", "no such file"}},
		{"unparsable module", []string{"-m", in("garbage.hlo")}, ExitModule, []string{"garbage.hlo:3"}},
		{"invalid module", []string{"-m", in("invalid.hlo")}, ExitModule, []string{"invalid.hlo", "invalid module"}},
		{"proto type on text", []string{"-m", mod, "-t", "snapshot"}, ExitModule, []string{"module.hlo"}},
		{"too few inputs", []string{"-m", mod, "-i", good}, ExitInput, []string{"wrong number of input files", "expected 2, got 1"}},
		{"too many inputs", []string{"-m", mod, "-i", good, "-i", good, "-i", good}, ExitInput, []string{"expected 2, got 3"}},
		{"wrong shape", []string{"-m", mod, "-i", good, "-i", in("transposed.npy")}, ExitInput,
			[]string{"parameter 1 (%y)", "wrong shape", "expected f32[2,3], got f32[3,2]"}},
		{"wrong dtype", []string{"-m", mod, "-i", in("ints.npy"), "-i", good}, ExitInput,
			[]string{"parameter 0 (%x)", "wrong dtype", "expected f32[2,3], got s32[2,3]"}},
		{"missing input file", []string{"-m", mod, "-i", good, "-i", in("absent.npy")}, ExitInput,
			[]string{"absent.npy", "parameter 1 (%y)", "no such file"}},
		{"corrupt npy", []string{"-m", mod, "-i", in("corrupt.npy"), "-i", good}, ExitInput, []string{"corrupt.npy", "parameter 0 (%x)"}},
		{"truncated npy", []string{"-m", mod, "-i", good, "-i", in("truncated.npy")}, ExitInput, []string{"truncated.npy", "parameter 1"}},
		{"unknown custom-call target", []string{"-m", in("customcall.hlo"), "-i", in("f2.npy")}, ExitEval,
			[]string{"no_such_target", "%c"}},
		{"unknown flag", []string{"-m", mod, "--bogus"}, ExitUsage, []string{"bogus"}},
		{"no module", []string{"-i", good}, ExitUsage, []string{"no module"}},
		{"positional argument", []string{"-m", mod, "extra"}, ExitUsage, []string{"extra"}},
		{"bad module type", []string{"-m", mod, "-t", "yaml"}, ExitUsage, []string{"yaml"}},
		{"bad input type", []string{"-m", mod, "-I", "csv"}, ExitUsage, []string{"csv"}},
		{"bad verbosity", []string{"-m", mod, "-v", "x"}, ExitUsage, []string{"verbose"}},
		{"output names mismatch", []string{"-m", mod, "-o", "a.npy", "-o", "b.npy"}, ExitUsage, []string{"2 -o/--output names", "1 output"}},
		{"device count mismatch", []string{"-m", in("replicas.hlo"), "--emulate-multiple-devices=3"}, ExitUsage, []string{"3 devices", "replica_count=2"}},
		{"output dir is a file", []string{"-m", mod, "-O", in("notafile")}, ExitOutput, []string{"notafile"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"-O", out}, tc.args...)
			code, _, stderr := runMain(args...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d; stderr: %s", code, tc.code, stderr)
			}
			if n := strings.Count(stderr, "\n"); tc.code != ExitUsage && n != 1 {
				t.Errorf("stderr has %d lines, want one: %q", n, stderr)
			}
			for _, m := range tc.msgs {
				if !strings.Contains(stderr, m) {
					t.Errorf("stderr lacks %q: %s", m, stderr)
				}
			}
			if files := listFiles(t, out); len(files) > 0 {
				t.Errorf("files left behind: %v", files)
			}
		})
	}
}

// TestWriteOutputsAllOrNothing makes the last of several writes fail and
// checks that none of the earlier files survive.
func TestWriteOutputsAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "module.hlo")
	writeFile(t, mod, cliCases[9].hlo) // three outputs
	writeFile(t, filepath.Join(dir, "blocker"), "a file where a directory is needed")
	out := filepath.Join(dir, "out")
	code, _, stderr := runMain("-m", mod, "-O", out, "-o", "a.npy", "-o", "b.npy", "-o", filepath.Join(dir, "blocker", "c.npy"))
	if code != ExitOutput {
		t.Fatalf("exit %d, want %d: %s", code, ExitOutput, stderr)
	}
	if files := listFiles(t, out); len(files) > 0 {
		t.Errorf("partial outputs left behind: %v", files)
	}

	// A failure while renaming into place (the destination is a directory)
	// must remove the files already placed.
	out2 := filepath.Join(dir, "out2")
	if err := os.MkdirAll(filepath.Join(out2, "c.npy"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runMain("-m", mod, "-O", out2, "-o", "a.npy", "-o", "b.npy", "-o", "c.npy")
	if code != ExitOutput {
		t.Fatalf("exit %d, want %d: %s", code, ExitOutput, stderr)
	}
	if files := listFiles(t, out2); len(files) != 1 || files[0] != "c.npy" {
		t.Errorf("after a failed rename the output dir holds %v, want only the pre-existing c.npy", files)
	}
}

func TestExitCodeMapping(t *testing.T) {
	cases := []struct {
		err  error
		code int
	}{
		{nil, ExitOK},
		{&UsageError{Msg: "x"}, ExitUsage},
		{&ModuleError{File: "f", Err: errors.New("x")}, ExitModule},
		{fmt.Errorf("wrapped: %w", &InputError{Param: 0, Err: errors.New("x")}), ExitInput},
		{&EvalError{Device: -1, Err: errors.New("x")}, ExitEval},
		{&OutputError{Path: "p", Err: errors.New("x")}, ExitOutput},
		{&InternalError{Value: "boom"}, ExitInternal},
		{errors.New("unclassified"), ExitInternal},
	}
	for _, tc := range cases {
		if got := ExitCode(tc.err); got != tc.code {
			t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.code)
		}
	}
}
