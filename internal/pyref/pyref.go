// Package pyref locates the Python interpreter the differential tests run to
// build their references (jax on CPU, numpy, ml_dtypes) and decides what a
// missing reference means: a skip on a developer's machine, a failure where
// references are required.
//
// The interpreter is $GOLDTRACE_PYTHON when set (the Makefile passes the
// $(PYTHON) it was given), else python3. References are required when
// GOLDTRACE_REQUIRE_REFERENCE=1 or CI=true (make test sets the former), so
// a broken reference environment turns the suite red instead of green.
package pyref

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// Python returns the interpreter the tests run.
func Python() string {
	if p := os.Getenv("GOLDTRACE_PYTHON"); p != "" {
		return p
	}
	return "python3"
}

// Required reports whether a missing reference fails the test instead of
// skipping it: GOLDTRACE_REQUIRE_REFERENCE=1 or CI=true.
func Required() bool {
	return os.Getenv("GOLDTRACE_REQUIRE_REFERENCE") == "1" || strings.EqualFold(os.Getenv("CI"), "true")
}

// Command returns an exec.Cmd running the interpreter with args.
func Command(args ...string) *exec.Cmd {
	return exec.Command(Python(), args...)
}

var (
	mu     sync.Mutex
	probed = map[string]error{}
)

// Missing returns nil when the interpreter imports every module, else an
// error naming the interpreter, the modules and Python's complaint. Results
// are cached per module list.
func Missing(modules ...string) error {
	key := strings.Join(modules, ", ")
	mu.Lock()
	defer mu.Unlock()
	if err, ok := probed[key]; ok {
		return err
	}
	var err error
	if _, lerr := exec.LookPath(Python()); lerr != nil {
		err = fmt.Errorf("python interpreter %q not found: %v", Python(), lerr)
	} else if out, rerr := Command("-c", "import "+key).CombinedOutput(); rerr != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		err = fmt.Errorf("%s cannot import %s: %s", Python(), key, lines[len(lines)-1])
	}
	probed[key] = err
	return err
}

// Require skips t (or fails it, when Required) unless the interpreter
// imports every module.
func Require(t testing.TB, modules ...string) {
	t.Helper()
	if err := Missing(modules...); err != nil {
		if Required() {
			t.Fatalf("reference unavailable (GOLDTRACE_REQUIRE_REFERENCE=1 or CI=true): %v", err)
		}
		t.Skipf("reference unavailable: %v (set GOLDTRACE_REQUIRE_REFERENCE=1 to fail instead)", err)
	}
}
