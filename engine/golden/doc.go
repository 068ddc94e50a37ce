// Package golden is the infergoldens driver: it loads an HLO module (text,
// HloModuleProto or HloSnapshot), reads or synthesizes its inputs, legalizes
// the module per the original tool's flags (-U upcast, -F fp8e4m3fn as
// fp8e4m3, -u unsafe input casts; aliasing always stripped), runs it on one
// or several emulated devices with engine/eval, and writes every output leaf
// (and, with -s, every entry instruction's value) as .npy files, atomically.
//
// The API in call order: LoadModule, ReadInputs or SynthesizeInputs, Run,
// WriteOutputs. Main is the whole command line.
//
// Every error the package returns is one of UsageError, ModuleError,
// InputError, EvalError, OutputError or InternalError, and ExitCode maps it to
// the CLI's exit code:
//
//	0   ExitOK        success
//	2   ExitUsage     bad flags or arguments
//	3   ExitModule    module missing, unreadable, unparsable or invalid
//	4   ExitInput     input missing, corrupt, or of the wrong count, shape or dtype
//	5   ExitEval      evaluation failed, incl. unsupported opcode or custom-call target
//	6   ExitOutput    outputs could not be written (nothing partial remains)
//	70  ExitInternal  a recovered panic: a bug
package golden
