package customcall

import (
	"errors"
	"fmt"
	"strings"

	"goldtrace/engine/dtype"
	"goldtrace/engine/eval"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
	"goldtrace/kernel/sim"
)

// Kernels inside goldens: handlers for the evaluator's custom-call registry
// that decode the backend_config and run the kernel in the simulator in
// process (no files, no processes). engine/ never imports kernel/
// (docs/design.md), so an embedder wires them in with Register.

// NeuronTargets carry the raw base64 backend_config: the Neuron form JAX
// emits, the simulator variant of it, and torch-xla's form.
var NeuronTargets = []string{"AwsNeuronCustomNativeKernel", "AwsNeuronCustomNativeKernel_Sim", "AwsNeuronNkiKernel"}

// Register installs the kernel handlers in engine/eval's custom-call
// registry: NeuronTargets and FFITarget (whose backend_config is a
// dictionary attribute {kernel = "<base64>"}).
func Register() {
	for _, t := range NeuronTargets {
		eval.RegisterCustomCall(t, evalKernelCustomCall)
	}
	eval.RegisterCustomCall(FFITarget, evalKernelCustomCall)
}

// kernelConfigOf extracts the base64 backend_config of a kernel custom-call:
// the backend_config itself, or the string entry `kernel` of a dictionary
// attribute (the typed-FFI spelling; accepted for every target).
func kernelConfigOf(in *hlo.Instruction) (string, error) {
	bc := strings.TrimSpace(in.BackendConfig)
	if bc == "" {
		return "", fmt.Errorf("the custom-call has no backend_config (expected the kernel's base64 backend_config)")
	}
	if !strings.HasPrefix(bc, "{") {
		return bc, nil
	}
	entries, err := parseMLIRDict(bc)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if e.Key != "kernel" {
			continue
		}
		if !e.IsString {
			return "", fmt.Errorf("backend_config entry `kernel` is %s, not a string (expected the kernel's base64 backend_config)", e.Raw)
		}
		return e.Str, nil
	}
	keys := make([]string, len(entries))
	for i, e := range entries {
		keys[i] = e.Key
	}
	return "", fmt.Errorf("backend_config dictionary has no entry `kernel` (has %s)", strings.Join(keys, ", "))
}

func evalKernelCustomCall(ev *eval.Evaluator, in *hlo.Instruction, args []eval.Value) (eval.Value, error) {
	s, err := kernelConfigOf(in)
	if err != nil {
		return eval.Value{}, eval.Unsupported("kernel custom-call %%%s: a backend_config goldtrace cannot read (%v)", in.Name, err)
	}
	kc, err := lookupKernel(s)
	if err != nil {
		return eval.Value{}, eval.Unsupported("kernel custom-call %%%s: a backend_config goldtrace cannot read (%v)", in.Name, err)
	}
	fail := func(format string, a ...any) (eval.Value, error) {
		return eval.Value{}, fmt.Errorf("kernel %q: %s", kc.name(), fmt.Sprintf(format, a...))
	}
	// has_collectives says the kernel communicates. nl.all_reduce reduces
	// across the program instances of one launch, which is what each
	// emulated device runs: such kernels run per device, each device its own
	// launch. Device collectives (cc_*) meet the same kernel call on the
	// other emulated devices through the evaluator's exchange (docs/design.md,
	// decision 21).
	ts := make([]*tensor.Tensor, len(args))
	for i, a := range args {
		if a.T == nil {
			return fail("operand %d is a tuple or token; kernel operands are arrays", i)
		}
		ts[i] = a.T
	}
	inputs, err := kc.bindInputs(ts)
	if err != nil {
		return fail("%v", err)
	}
	// The result: one array, or a tuple of arrays (a kernel returning a
	// sequence, or several outputs).
	var shapes []hlo.Shape
	if in.Shape.IsTuple() {
		shapes = in.Shape.Tuple
	} else {
		shapes = []hlo.Shape{in.Shape}
	}
	if len(shapes) != len(kc.k.Outputs) {
		return fail("the custom-call has %d results but the kernel returns %d outputs", len(shapes), len(kc.k.Outputs))
	}
	for i, sh := range shapes {
		if sh.IsTuple() || !sh.Elem.IsArray() {
			return fail("result %d is %v; kernel results are arrays", i, sh.Elem)
		}
		if err := kc.checkResult(i, sh.Elem, sh.Dims); err != nil {
			return fail("%v", err)
		}
	}
	if err := kc.checkAliasing(in); err != nil {
		return eval.Value{}, err
	}
	opts := sim.Options{Parallel: ev.Options.Parallelism}
	if kc.deviceCollectives {
		opts.Devices = &evalDevices{ev: ev, in: in, name: kc.name(), grid: ev.Grid()}
	}
	outs, err := kc.run(inputs, opts)
	if err != nil {
		var ce *configError
		if errors.As(err, &ce) {
			return eval.Value{}, eval.Unsupported("kernel custom-call %%%s: kernel %q cannot run in goldtrace's simulator (%v)", in.Name, kc.name(), err)
		}
		return fail("%v", err)
	}
	if !in.Shape.IsTuple() {
		return eval.ArrayValue(outs[0]), nil
	}
	elems := make([]eval.Value, len(outs))
	for i, t := range outs {
		elems[i] = eval.ArrayValue(t)
	}
	return eval.TupleValue(elems...), nil
}

// checkAliasing accepts output_to_operand_aliasing where the aliased output
// is the parameter itself (a kernel writing into a mutable parameter and
// returning it): the simulator's output is then the buffer's final content.
// An output that is a separate tensor of the kernel, aliased to an operand,
// would keep the operand's values wherever the kernel does not write it; the
// simulator cannot tell which elements those are, so it is refused rather
// than guessed.
func (kc *kernelCall) checkAliasing(in *hlo.Instruction) error {
	for _, a := range in.OutputOperandAliasing {
		out := int64(0)
		switch {
		case in.Shape.IsTuple() && len(a.OutputIndex) == 1:
			out = a.OutputIndex[0]
		case !in.Shape.IsTuple() && len(a.OutputIndex) == 0:
		default:
			return fmt.Errorf("kernel %q: output_to_operand_aliasing output index %v does not name a result", kc.name(), a.OutputIndex)
		}
		if out < 0 || int(out) >= len(kc.k.Outputs) || len(a.OperandIndex) != 0 || a.Operand < 0 {
			return fmt.Errorf("kernel %q: output_to_operand_aliasing {%v: (%d, %v)} does not fit the custom-call", kc.name(), a.OutputIndex, a.Operand, a.OperandIndex)
		}
		if int(a.Operand) >= len(kc.k.Inputs) {
			return eval.Unsupported("kernel custom-call %%%s: output %d aliased to operand %d, which is not a parameter of kernel %q", in.Name, out, a.Operand, kc.name())
		}
		if kc.k.Outputs[out] != kc.k.Inputs[a.Operand] {
			return eval.Unsupported("kernel custom-call %%%s: output %d aliased to operand %d while kernel %q returns a separate tensor (%q), not that parameter (keeping the operand's values where the kernel does not write)", in.Name, out, a.Operand, kc.name(), kc.k.Tensors[kc.k.Outputs[out]].Name)
		}
	}
	return nil
}

// evalDevices serves a kernel's device collectives from the evaluator's
// device machinery: each cc_* execution is one exchange, at the kernel's
// custom-call, among every emulated device that runs (all run the same module,
// so the k-th exchange at this custom-call on one device meets the k-th on
// the others; the simulator picks its group's data from what it gets back).
// Each contribution carries the instruction's site id, so devices that reach
// different collectives fail instead of mixing data.
type evalDevices struct {
	ev   *eval.Evaluator
	in   *hlo.Instruction
	name string
	grid eval.DeviceGrid
}

func (d *evalDevices) Rank() int64 { return d.grid.Self() }
func (d *evalDevices) Size() int64 { return d.grid.Replicas * d.grid.Partitions }

func (d *evalDevices) Exchange(site int, data []float64) ([][]float64, error) {
	n, self := d.Size(), d.Rank()
	out := make([][]float64, n)
	if d.ev.Options.Exchange == nil {
		// One emulated device: only its own data is there.
		out[self] = data
		return out, nil
	}
	all := d.ev.Options.Running // a partially manual region runs some devices
	if all == nil {
		all = make([]int64, n)
		for i := range all {
			all[i] = int64(i)
		}
	}
	t := tensor.New(dtype.F64, []int64{int64(len(data)) + 1})
	f := t.F64()
	f[0] = float64(site)
	copy(f[1:], data)
	vals, err := d.ev.Options.Exchange(d.in, all, eval.ArrayValue(t))
	if err != nil {
		return nil, err
	}
	if len(vals) != len(all) {
		return nil, fmt.Errorf("the exchange returned %d values for %d devices", len(vals), len(all))
	}
	for j, v := range vals {
		i := all[j]
		if i < 0 || i >= n {
			return nil, fmt.Errorf("the exchange names device %d of %d", i, n)
		}
		if v.T == nil || v.T.Type != dtype.F64 || v.T.Rank() != 1 || v.T.NumElements() < 1 {
			return nil, fmt.Errorf("device %d contributed %v, not kernel collective data", i, v)
		}
		g := v.T.F64()
		if int(g[0]) != site {
			return nil, fmt.Errorf("device %d reached device collective #%d of kernel %q where device %d reached #%d", i, int(g[0]), d.name, self, site)
		}
		out[i] = g[1:]
	}
	return out, nil
}
