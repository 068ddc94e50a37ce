// Command infergoldens computes reference outputs ("goldens") of an XLA HLO
// module on the CPU, with the flags of Neuron's xla_infergoldens. Run it with
// --help for the flags and exit codes; the logic lives in engine/golden.Main
// so the Python console script shares it.
//
// Exit codes: 0 ok; 2 usage error; 3 module load/parse error; 4 input error
// (missing file, corrupt .npy, wrong count/shape/dtype); 5 evaluation error
// (including unsupported opcodes and unknown custom-call targets); 6 output
// write error; 70 internal error.
package main

import (
	"os"

	"goldtrace/engine/golden"
)

func main() {
	os.Exit(golden.Main(os.Args[1:], os.Stdout, os.Stderr))
}
