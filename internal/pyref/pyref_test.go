package pyref

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestRequireFailsWhenRequired runs a child test with a missing module: it
// must skip normally and fail under GOLDTRACE_REQUIRE_REFERENCE=1 and CI=true.
func TestRequireFailsWhenRequired(t *testing.T) {
	if os.Getenv("PYREF_CHILD") == "1" {
		Require(t, "goldtrace_no_such_module_xyz")
		return
	}
	for _, c := range []struct {
		env      []string
		wantFail bool
	}{
		{[]string{"GOLDTRACE_REQUIRE_REFERENCE=", "CI="}, false},
		{[]string{"GOLDTRACE_REQUIRE_REFERENCE=1", "CI="}, true},
		{[]string{"GOLDTRACE_REQUIRE_REFERENCE=", "CI=true"}, true},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRequireFailsWhenRequired$", "-test.v")
		cmd.Env = append(append(os.Environ(), "PYREF_CHILD=1"), c.env...)
		out, err := cmd.CombinedOutput()
		failed := err != nil
		if failed != c.wantFail {
			t.Errorf("env %v: failed=%v, want %v\n%s", c.env, failed, c.wantFail, out)
		}
		if !c.wantFail && !strings.Contains(string(out), "SKIP") {
			t.Errorf("env %v: not skipped\n%s", c.env, out)
		}
	}
}

// TestPythonFromEnv: the interpreter make was given is the one used.
func TestPythonFromEnv(t *testing.T) {
	t.Setenv("GOLDTRACE_PYTHON", "/opt/py/bin/python3.99")
	if got := Python(); got != "/opt/py/bin/python3.99" {
		t.Errorf("Python() = %q", got)
	}
	if got := Command("-V").Path; got != "/opt/py/bin/python3.99" {
		t.Errorf("Command path = %q", got)
	}
	t.Setenv("GOLDTRACE_PYTHON", "")
	if got := Python(); got != "python3" {
		t.Errorf("default Python() = %q", got)
	}
}
