// Command infergoldens computes reference outputs ("goldens") of an XLA HLO
// module on the CPU, with the flags of Neuron's xla_infergoldens. Run it with
// --help for the flags and exit codes; the logic lives in engine/golden.Main
// so the Python console script shares it.
//
// Exit codes: 0 ok; 2 usage error; 3 module load/parse error; 4 input error
// (missing file, corrupt .npy, wrong count/shape/dtype); 5 evaluation error
// (including unsupported opcodes and unknown custom-call targets); 6 output
// write error; 70 internal error.
//
// `infergoldens batch ...` (many modules, resumable, local pool or Dask) is
// the Python package's: this binary hands it to `python3 -m goldtrace.cli`
// ($GOLDTRACE_PYTHON names another interpreter).
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"goldtrace/engine/golden"
	"goldtrace/kernel/customcall"
)

func main() {
	// Kernel custom-calls (AwsNeuronCustomNativeKernel, ...) run in the simulator,
	// as they do under the Python CLI and goldtrace.golden.
	customcall.Register()
	if len(os.Args) > 1 && os.Args[1] == "batch" {
		os.Exit(batch(os.Args[1:]))
	}
	os.Exit(golden.Main(os.Args[1:], os.Stdout, os.Stderr))
}

// batch replaces this process with the Python batch runner; it returns only
// when that cannot start.
func batch(args []string) int {
	py := os.Getenv("GOLDTRACE_PYTHON")
	if py == "" {
		py = "python3"
	}
	path, err := exec.LookPath(py)
	if err == nil {
		err = syscall.Exec(path, append([]string{py, "-m", "goldtrace.cli"}, args...), os.Environ())
	}
	fmt.Fprintf(os.Stderr, "infergoldens: batch runs in the Python package (pip install goldtrace), but %s could not start: %v\n", py, err)
	return golden.ExitUsage
}
