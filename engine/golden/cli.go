package golden

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"goldtrace/engine/tensor"
)

const usageHead = `Usage: infergoldens -m MODULE [-i INPUT.npy]... [options]

Computes the outputs ("goldens") of an XLA HLO module on the CPU, the way
XLA:CPU would, and writes them as value_output<i>.npy (one per output leaf,
depth-first over the result tuple). Types numpy cannot name (bfloat16,
float8_*, ...) are written as raw bits with a <file>.npy.meta sidecar
{"ml_dtype": "<name>"}. Without -i, inputs are synthesized deterministically
from the parameter shapes (a snapshot module uses its own arguments).

Options:
`

const usageTail = `
Exit codes:
  0   success
  2   usage error (bad flags, wrong number of -o names)
  3   the module could not be read, parsed or verified
  4   input error: missing or corrupt file, wrong count, shape or dtype
  5   evaluation error, including unsupported opcodes and custom-call targets
  6   the outputs could not be written (nothing partial is left behind)
  70  internal error (a bug; please report it)

Many modules at once (a tree or a manifest, resumable, local or on Dask):
infergoldens batch --help (the Python package's runner).
`

// Main is the infergoldens command line: it parses args (without the program
// name), runs, and returns the process exit code (see the Exit* constants).
// It writes the -v report to stdout and errors, one line each, to stderr. It
// is shared by cmd/infergoldens and the C library's Python console script.
func Main(args []string, stdout, stderr io.Writer) (code int) {
	defer tuneGCForGoldens()() // the whole command: reading inputs, running, writing outputs
	var cfg *cliConfig
	fail := func(c int, msg string) int {
		if cfg != nil && cfg.errorFile != "" {
			writeErrorFile(cfg.errorFile, c, msg, stderr)
		}
		return c
	}
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprintf("internal error: %v", r)
			fmt.Fprintf(stderr, "infergoldens: %s\n", msg)
			code = fail(ExitInternal, msg)
		}
	}()
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(stdout, usage(cfg.flags))
			return ExitOK
		}
		fmt.Fprintf(stderr, "infergoldens: %v\nTry 'infergoldens --help' for more information.\n", err)
		return fail(ExitUsage, oneLine(err.Error()))
	}
	if err := cfg.run(stdout, stderr); err != nil {
		msg := oneLine(err.Error())
		fmt.Fprintf(stderr, "infergoldens: %s\n", msg)
		return fail(ExitCode(err), msg)
	}
	return ExitOK
}

// writeErrorFile records a failed run for a caller that cannot read stderr
// (the batch runner runs many jobs in one process): {"exit_code", "message"}.
func writeErrorFile(path string, code int, msg string, stderr io.Writer) {
	body, _ := json.Marshal(struct {
		ExitCode int    `json:"exit_code"`
		Message  string `json:"message"`
	}{code, msg})
	if err := os.WriteFile(path, append(body, '\n'), 0o644); err != nil {
		fmt.Fprintf(stderr, "infergoldens: writing the error file: %v\n", err)
	}
}

// oneLine folds a multi-line message (e.g. a parser's error list) so every
// error stays one line on stderr.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.ReplaceAll(s, "\n", "; ")
}

type cliConfig struct {
	flags      *pflag.FlagSet
	module     string
	moduleType string
	inputs     []string
	inputType  string
	outputs    []string
	outputDir  string
	seed       uint64
	errorFile  string
	opts       Options
}

func newFlagSet(c *cliConfig) *pflag.FlagSet {
	fs := pflag.NewFlagSet("infergoldens", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.StringVarP(&c.module, "module", "m", "", "HLO module `FILE` (HLO text, HloModuleProto or HloSnapshot)")
	fs.StringVarP(&c.moduleType, "module-type", "t", "", "module `TYPE`: text, proto or snapshot (default: detect)")
	fs.StringArrayVarP(&c.inputs, "input", "i", nil, "input .npy `FILE`, repeated in parameter order (tuple parameters: one per leaf)")
	fs.StringVarP(&c.inputType, "input-type", "I", "numpy", "input file `TYPE` (only numpy)")
	fs.StringArrayVarP(&c.outputs, "output", "o", nil, "output `FILE`, repeated, one per output leaf, instead of value_output<i>.npy (relative to -O)")
	fs.StringVarP(&c.outputDir, "output-dir", "O", ".", "output `DIR` (created if missing)")
	fs.IntVarP(&c.opts.Verbose, "verbose", "v", 0, "verbosity `N`: 1 prints a summary, 2 also progress once a second")
	fs.BoolVarP(&c.opts.SaveIntermediates, "save-intermediates", "s", false, "also write every entry instruction's value as value_intermediate<i>.npy, indexed in "+IntermediatesIndex)
	fs.BoolVarP(&c.opts.Upcast, "upcast-all-to-fp32", "U", false, "compute every float type narrower than f32 (bf16, f16, f8, f4) in f32; outputs are f32")
	fs.BoolVarP(&c.opts.FP8E4M3FNAsE4M3, "experimental-unsafe-fp8e4m3fn-as-fp8e4m3", "F", false, "treat f8e4m3fn as f8e4m3 (same bits, IEEE-style inf/NaN)")
	fs.BoolVarP(&c.opts.UnsafeDtypeCast, "unsafe-dtype-cast", "u", false, "convert inputs of another dtype to the parameter's dtype instead of failing")
	fs.IntVarP(&c.opts.EmulateDevices, "emulate-multiple-devices", "e", 0, "emulate all replica_count × num_partitions devices, or `N` with --emulate-multiple-devices=N")
	fs.Lookup("emulate-multiple-devices").NoOptDefVal = fmt.Sprint(AllDevices)
	fs.Lookup("emulate-multiple-devices").Usage += "; every device's outputs also go to dev<d>/value_output<k>.npy"
	fs.BoolVarP(&c.opts.SPMD, "spmd", "S", false, "global inputs in, global outputs out for a sharded module XLA has not partitioned (shard_map regions run per device); use -e for a partitioned one")
	fs.StringVar(&c.opts.XLACompat, "xla-compat", "", "follow XLA:CPU `VERSION` (0.10) where it differs from the newest (see docs/xla-cpu-semantics.md)")
	fs.Uint64Var(&c.seed, "seed", 0, "`SEED` of the synthesized inputs")
	fs.BoolVar(&c.opts.ReportMemory, "report-memory", false, "print the largest total size of the values live at once (also with -v)")
	fs.BoolP("help", "h", false, "show this help")
	// For the batch runner: the exit code and message of a failed run, as JSON.
	fs.StringVar(&c.errorFile, "error-file", "", "also write a failure's exit code and message as JSON to `FILE`")
	_ = fs.MarkHidden("error-file")
	fs.SetOutput(io.Discard)
	return fs
}

func usage(fs *pflag.FlagSet) string {
	return usageHead + fs.FlagUsages() + usageTail
}

func parseFlags(args []string, stderr io.Writer) (*cliConfig, error) {
	c := &cliConfig{}
	c.flags = newFlagSet(c)
	if err := c.flags.Parse(args); err != nil {
		return c, err
	}
	if h, _ := c.flags.GetBool("help"); h {
		return c, pflag.ErrHelp
	}
	switch {
	case c.flags.NArg() > 0:
		return c, fmt.Errorf("unexpected argument %q (the module is given with -m)", c.flags.Arg(0))
	case c.module == "":
		return c, errors.New("no module given (-m/--module FILE)")
	case c.moduleType != ModuleAuto && c.moduleType != ModuleText && c.moduleType != ModuleProto && c.moduleType != ModuleSnapshot:
		return c, fmt.Errorf("unknown module type %q (want text, proto or snapshot)", c.moduleType)
	case c.inputType != "numpy":
		return c, fmt.Errorf("unknown input type %q (only numpy is supported)", c.inputType)
	case c.opts.Verbose < 0:
		return c, fmt.Errorf("verbosity must be ≥ 0, got %d", c.opts.Verbose)
	case c.opts.EmulateDevices < AllDevices:
		return c, fmt.Errorf("invalid device count %d", c.opts.EmulateDevices)
	case !validXLACompat(c.opts.XLACompat):
		return c, fmt.Errorf("unknown --xla-compat version %q (known: 0.10)", c.opts.XLACompat)
	}
	return c, nil
}

func (c *cliConfig) run(stdout, stderr io.Writer) error {
	report := func(format string, args ...any) {
		if c.opts.Verbose >= 1 {
			fmt.Fprintf(stdout, format+"\n", args...)
		}
	}
	t0 := time.Now()
	loaded, err := LoadModule(c.module, c.moduleType)
	if err != nil {
		return err
	}
	m := loaded.Module
	report("module %s (%s, %s): %d computations, %d entry instructions, loaded in %v",
		m.Name, c.module, loaded.Kind, len(m.Computations), len(m.Entry.Instructions), time.Since(t0).Round(time.Microsecond))
	devices, err := DeviceCount(m, c.opts)
	if err != nil {
		return err
	}
	nOut := 0
	for _, s := range m.Entry.Root.Shape.Leaves() {
		if s.IsArray() {
			nOut++
		}
	}
	if c.outputs != nil && len(c.outputs) != nOut*devices {
		return usageErrorf("%d -o/--output names given, but the module has %d output leaves", len(c.outputs), nOut*devices)
	}

	var inputs []*tensor.Tensor
	switch {
	case len(c.inputs) > 0:
		if inputs, err = ReadInputs(m, c.inputs, devices); err != nil {
			return err
		}
	case loaded.Args != nil:
		inputs = loaded.Args
		report("inputs: the snapshot's %d arguments", len(inputs))
	default:
		inputs = SynthesizeInputs(m, c.seed)
		report("inputs: none given, synthesized %d from the parameter shapes (seed %d)", len(inputs), c.seed)
	}
	if c.opts.Verbose >= 1 {
		leaves := ParamLeaves(m)
		for i, t := range inputs {
			label := fmt.Sprintf("input %d", i)
			if i < len(leaves) {
				label = leaves[i].Label()
			}
			report("  %s: %s", label, describe(t))
		}
	}

	opts := c.opts
	if opts.Verbose >= 2 {
		opts.Progress = stderr
	}
	// Inputs read or synthesized here are needed by nothing after the run.
	opts.ConsumeInputs = loaded.Args == nil
	res, err := Run(m, inputs, opts)
	var ie *InputError
	if errors.As(err, &ie) && ie.File == "" && ie.Input >= 0 && ie.Input < len(c.inputs) {
		ie.File = c.inputs[ie.Input]
	}
	if err != nil {
		return err
	}
	report("evaluated on %d device(s) in %v", res.Devices, res.Elapsed.Round(time.Microsecond))
	switch {
	case !c.opts.ReportMemory && c.opts.Verbose < 1:
	case c.opts.SPMD:
		fmt.Fprintln(stdout, "values live at once: not recorded for --spmd runs")
	default:
		fmt.Fprintf(stdout, "values live at once: at most %.1f MB\n", float64(res.PeakLiveBytes)/(1<<20))
	}
	t1 := time.Now()
	if err := WriteOutputs(c.outputDir, res, nilIfEmpty(c.outputs)); err != nil {
		return err
	}
	for i, t := range res.Outputs {
		if c.opts.Verbose < 1 {
			break // describe reads every element: only when it is printed
		}
		name := OutputFileName(i)
		if c.outputs != nil {
			name = c.outputs[i]
		}
		report("  output %d -> %s: %s", i, name, describe(t))
	}
	if len(res.Intermediates) > 0 {
		report("  %d intermediates, indexed in %s", len(res.Intermediates), IntermediatesIndex)
	}
	report("wrote %d file(s) to %s in %v", len(res.Outputs)+len(res.Intermediates), c.outputDir, time.Since(t1).Round(time.Microsecond))
	return nil
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}
