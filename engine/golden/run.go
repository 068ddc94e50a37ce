package golden

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
	"unsafe"

	"goldtrace/engine/dtype"
	"goldtrace/engine/eval"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// AllDevices as Options.EmulateDevices emulates every device the module
// declares (replica_count × num_partitions).
const AllDevices = -1

// Options are the driver's knobs; the CLI flag of each is in brackets.
type Options struct {
	// Upcast computes every float type narrower than f32 in f32 [-U]; see
	// the legalization notes in legalize.go.
	Upcast bool
	// FP8E4M3FNAsE4M3 reads f8e4m3fn as f8e4m3, bit for bit [-F].
	FP8E4M3FNAsE4M3 bool
	// ReportMemory records Result.PeakLiveBytes (also recorded with
	// Verbose ≥ 1) [--report-memory].
	ReportMemory bool
	// UnsafeDtypeCast converts an input of another element type to its
	// parameter's type instead of rejecting it [-u]. Shapes must still match.
	UnsafeDtypeCast bool
	// EmulateDevices is the number of devices to run [-e]: 0 or 1 runs one
	// device (replica 0, partition 0); AllDevices runs replica_count ×
	// num_partitions of them; any other n must equal that product, or, for a
	// module that declares one device, runs n replicas of it.
	EmulateDevices int
	// SPMD runs a module that is not partitioned yet (as JAX lowers it)
	// on global inputs and returns global outputs [-S]: values outside
	// manual regions are computed globally, and every manual region
	// (shard_map: Shardy's xla.sdy.GlobalToLocalShape/LocalToGlobalShape,
	// GSPMD's SPMDFullToShardShape/SPMDShardToFullShape) runs once per
	// device on the device's block of each input (spmd.go). Modules XLA
	// already partitioned run per device with EmulateDevices.
	SPMD bool
	// XLACompat selects an older XLA:CPU's behaviour where versions differ
	// ("0.10": JAX 0.10's); "" follows the newest [--xla-compat].
	XLACompat string
	// SaveIntermediates keeps the value of every instruction of the entry
	// computation in Result.Intermediates [-s].
	SaveIntermediates bool
	// Verbose is the CLI's verbosity [-v]; Run only uses it through Progress.
	Verbose int
	// Progress, when set, receives a progress line about once a second
	// while the module runs.
	Progress io.Writer
	// ProgressInterval overrides the one-second progress period (tests).
	ProgressInterval time.Duration
	// ConsumeInputs hands the inputs slice over to Run: on one device,
	// Run clears it and lets each input go once the module has no more use
	// for it, so memory the caller would hold until the end is freed early.
	// Callers that use their inputs afterwards must not set it.
	ConsumeInputs bool
}

// Result is what a run produced.
type Result struct {
	// Module is the legalized module that ran.
	Module *hlo.Module
	// Outputs are the result's array leaves, depth-first over the result
	// tuple; with several devices, device 0's leaves, then device 1's, ...
	Outputs []*tensor.Tensor
	// Devices is the number of emulated devices; OutputsPerDevice = len(Outputs)/Devices.
	Devices          int
	OutputsPerDevice int
	// Intermediates are the values of the entry computation's instructions in
	// execution order (with SaveIntermediates).
	Intermediates []Intermediate
	// Elapsed is the evaluation time.
	Elapsed time.Duration
	// PeakLiveBytes is the largest total size of the values live at once
	// (eval.MemoryStats), summed over devices; recorded with ReportMemory
	// or Verbose ≥ 1, else 0.
	PeakLiveBytes int64
}

// Intermediate is one array value computed by an entry instruction.
type Intermediate struct {
	Device      int
	Computation string
	Instruction string
	Opcode      string
	TupleIndex  []int // position within a tuple-valued instruction; nil for arrays
	Value       *tensor.Tensor
}

// DeviceCount is the number of devices a run of m with opts emulates, or an
// error when opts ask for a count the module cannot have.
func DeviceCount(m *hlo.Module, opts Options) (int, error) {
	declared := max(m.ReplicaCount, 1) * max(m.NumPartitions, 1)
	switch {
	case opts.SPMD:
		if opts.EmulateDevices != 0 {
			return 0, usageErrorf("-S/--spmd (global inputs and outputs) and -e/--emulate-multiple-devices (per-device) exclude each other")
		}
		return 1, nil
	case opts.EmulateDevices == AllDevices:
		return int(declared), nil
	case opts.EmulateDevices == 0 || opts.EmulateDevices == 1:
		return 1, nil
	case opts.EmulateDevices < 0:
		return 0, usageErrorf("invalid device count %d", opts.EmulateDevices)
	case int64(opts.EmulateDevices) == declared || declared == 1:
		return opts.EmulateDevices, nil
	}
	return 0, usageErrorf("cannot emulate %d devices: the module declares replica_count=%d × num_partitions=%d",
		opts.EmulateDevices, max(m.ReplicaCount, 1), max(m.NumPartitions, 1))
}

// Run evaluates m on inputs (one tensor per ParamLeaves entry; with several
// devices, either that list, given to every device, or one such list per
// device, concatenated). m itself is not changed.
func Run(m *hlo.Module, inputs []*tensor.Tensor, opts Options) (res *Result, err error) {
	defer tuneGCForGoldens()()
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, &InternalError{Value: r}
		}
	}()
	if m == nil || m.Entry == nil {
		return nil, &ModuleError{File: "<module>", Err: fmt.Errorf("module has no entry computation")}
	}
	if !validXLACompat(opts.XLACompat) {
		return nil, usageErrorf("unknown --xla-compat version %q (known: 0.10; empty for the newest)", opts.XLACompat)
	}
	devices, err := DeviceCount(m, opts)
	if err != nil {
		return nil, err
	}
	lm, err := legalize(m, opts)
	if err != nil {
		return nil, &ModuleError{File: m.Name, Err: err}
	}
	if opts.SPMD {
		regions, err := outlineManualRegions(lm)
		if err != nil {
			var ue *eval.UnsupportedError
			if errors.As(err, &ue) {
				return nil, &EvalError{Device: -1, Err: err}
			}
			return nil, &ModuleError{File: m.Name, Err: fmt.Errorf("-S/--spmd: %w", err)}
		}
		defer func() {
			for _, in := range regions {
				manualSpecs.Delete(in)
			}
		}()
	}
	if err := checkSupported(lm, opts.SPMD); err != nil {
		return nil, err
	}
	args, err := deviceArgs(m, lm, inputs, devices, opts)
	if err != nil {
		return nil, err
	}
	// Outputs that are inputs (passed-through parameters) are copied at the
	// end; the inputs are known by address, so that the set holds none of
	// them alive (a false match after one was freed only costs a copy).
	inputSet := map[uintptr]bool{}
	for _, a := range args {
		for _, v := range a {
			for _, t := range v.Leaves() {
				inputSet[uintptr(unsafe.Pointer(t))] = true
			}
		}
	}
	consume := opts.ConsumeInputs && devices == 1
	if consume {
		clear(inputs)
	}

	res = &Result{Module: lm, Devices: devices}
	prog := newProgress(lm, devices)
	var mu sync.Mutex
	ops := newOpProfile(lm.Entry)
	trace := func(dev int) func(in *hlo.Instruction, v eval.Value) {
		if opts.Progress == nil && !opts.SaveIntermediates {
			return nil // no per-instruction cost when nobody listens
		}
		return func(in *hlo.Instruction, v eval.Value) {
			prog.step(dev, in)
			if !opts.SaveIntermediates || in.Parent != lm.Entry {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			res.Intermediates = append(res.Intermediates, valueIntermediates(dev, in, v)...)
		}
	}
	stop := prog.start(opts.Progress, opts.ProgressInterval)
	defer ops.report()
	start := time.Now()
	ops.begin(start)
	// The meeting point for collectives across devices. A module declaring
	// one device but run on n is run as n replicas.
	rv := NewRendezvous(devices)
	partitions := max(lm.NumPartitions, 1)
	replicas := int64(devices) / partitions
	if opts.SPMD {
		// One global evaluation; manual regions run their own devices.
		partitions, replicas = 1, 1
	}
	outs := make([]eval.Value, devices)
	errs := make([]error, devices)
	memStats := make([]eval.MemoryStats, devices)
	var wg sync.WaitGroup
	for d := range devices {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					errs[d] = &InternalError{Value: r}
				}
			}()
			evOpts := eval.Options{
				ReplicaID:     int64(d) / partitions,
				PartitionID:   int64(d) % partitions,
				ReplicaCount:  replicas,
				NumPartitions: partitions,
				Trace:         trace(d),
				ConsumeArgs:   consume,
			}
			if opts.Verbose >= 1 || opts.ReportMemory {
				evOpts.Memory = &memStats[d]
			}
			if d == 0 && ops != nil {
				evOpts.Finished = ops.step
			}
			if devices > 1 {
				evOpts.Exchange = func(in *hlo.Instruction, group []int64, v eval.Value) ([]eval.Value, error) {
					return rv.ExchangeGroup(in, d, group, v)
				}
			}
			ev := eval.New(lm, evOpts)
			outs[d], errs[d] = ev.Run(args[d])
			rv.Finish(d, errs[d])
		}()
	}
	wg.Wait()
	stop()
	res.Elapsed = time.Since(start)
	for d := range memStats {
		res.PeakLiveBytes += memStats[d].Peak
	}
	for d, e := range errs {
		if e == nil {
			continue
		}
		if _, ok := e.(*InternalError); ok {
			return nil, e
		}
		dev := d
		if devices == 1 {
			dev = -1
		}
		return nil, &EvalError{Device: dev, Err: e}
	}
	for _, out := range outs {
		leaves := out.Leaves()
		res.OutputsPerDevice = len(leaves)
		for _, t := range leaves {
			// An output that is an input (a passed-through parameter) gets its
			// own copy, as aliasing was stripped.
			if inputSet[uintptr(unsafe.Pointer(t))] {
				t = t.Clone()
			}
			res.Outputs = append(res.Outputs, t)
		}
	}
	if opts.SaveIntermediates {
		sortIntermediates(res.Intermediates)
	}
	return res, nil
}

func valueIntermediates(dev int, in *hlo.Instruction, v eval.Value) []Intermediate {
	var out []Intermediate
	var walk func(v eval.Value, idx []int)
	walk = func(v eval.Value, idx []int) {
		switch {
		case v.T != nil:
			out = append(out, Intermediate{Device: dev, Computation: in.Parent.Name, Instruction: in.Name,
				Opcode: in.Opcode, TupleIndex: idx, Value: v.T})
		case v.Token:
		default:
			for i, e := range v.Tuple {
				walk(e, append(append([]int{}, idx...), i))
			}
		}
	}
	var root []int
	if v.IsTuple() {
		root = []int{}
	}
	walk(v, root)
	return out
}

// sortIntermediates orders by device, keeping each device's execution order
// (devices run concurrently, so their traces interleave).
func sortIntermediates(xs []Intermediate) {
	var byDev [][]Intermediate
	for _, x := range xs {
		for len(byDev) <= x.Device {
			byDev = append(byDev, nil)
		}
		byDev[x.Device] = append(byDev[x.Device], x)
	}
	xs = xs[:0]
	for _, d := range byDev {
		xs = append(xs, d...)
	}
}

// checkSupported fails before any work is done when the module uses an
// opcode or custom-call target the evaluator does not have, naming it.
func checkSupported(m *hlo.Module, spmd bool) error {
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			var err error
			switch {
			case in.Opcode == "parameter":
			case !eval.Supported(in.Opcode):
				err = eval.Unsupported("opcode %q", in.Opcode)
			case in.Opcode == "custom-call":
				if _, ok := eval.LookupCustomCall(in.CustomCallTarget); !ok {
					err = eval.Unsupported("custom-call target %q (no handler registered)", in.CustomCallTarget)
				}
			}
			if err == nil {
				err = eval.CheckAttributes(in)
			}
			if err == nil && !spmd && (isEntryMarker(in) || isExitMarker(in)) &&
				(len(in.Operands) != 1 || !hlo.Compatible(in.Operands[0].Shape, in.Shape)) {
				err = eval.Unsupported("custom-call %q that changes the shape outside -S/--spmd (a manual region runs on global inputs with -S, or partitioned by XLA with -e)", in.CustomCallTarget)
			}
			if err != nil {
				return &EvalError{Device: -1, Err: &eval.Error{Computation: c.Name, Instruction: in.Name, Opcode: in.Opcode, Err: err}}
			}
		}
	}
	return nil
}

// deviceArgs validates inputs against the original module m, converts them
// to the legalized module lm's parameter types, and assembles each device's
// parameter values (tuples, tokens).
func deviceArgs(m, lm *hlo.Module, inputs []*tensor.Tensor, devices int, opts Options) ([][]eval.Value, error) {
	leaves, legal := ParamLeaves(m), ParamLeaves(lm)
	n := len(leaves)
	perDevice := false
	switch {
	case len(inputs) == n:
	case devices > 1 && len(inputs) == n*devices:
		perDevice = true
	default:
		want := fmt.Sprint(n)
		if devices > 1 {
			want = fmt.Sprintf("%d (or %d for %d devices)", n, n*devices, devices)
		}
		return nil, &InputError{Param: -1, Input: -1, Err: fmt.Errorf("wrong number of inputs"),
			Want: want, Got: fmt.Sprint(len(inputs))}
	}
	args := make([][]eval.Value, devices)
	var shared []*tensor.Tensor
	for d := range devices {
		var prepared []*tensor.Tensor
		if perDevice || d == 0 {
			base := 0
			if perDevice {
				base = d * n
			}
			prepared = make([]*tensor.Tensor, n)
			for i := range n {
				t, err := prepareInput(leaves[i], legal[i], inputs[base+i], opts)
				if err != nil {
					if ie, ok := err.(*InputError); ok {
						ie.Input = base + i
					}
					return nil, err
				}
				prepared[i] = t
			}
			shared = prepared
		} else {
			prepared = shared
		}
		args[d] = assembleParams(lm, prepared)
	}
	return args, nil
}

// prepareInput checks one input against its parameter leaf and returns it in
// the legalized type.
func prepareInput(orig, legal ParamLeaf, t *tensor.Tensor, opts Options) (*tensor.Tensor, error) {
	fail := func(err error, want, got string) error {
		return &InputError{Param: orig.Param, Index: orig.Index, Input: -1, Name: orig.Name, Err: err, Want: want, Got: got}
	}
	if t == nil {
		return nil, fail(fmt.Errorf("missing"), hloShapeString(orig.Shape), "nothing")
	}
	if !slices.Equal(t.Dims, orig.Shape.Dims) {
		return nil, fail(fmt.Errorf("wrong shape"), hloShapeString(orig.Shape), shapeString(t))
	}
	if opts.FP8E4M3FNAsE4M3 && orig.Shape.Elem == dtype.F8E4M3FN {
		t = relabelTensor(t)
	}
	mid := orig.Shape.Elem
	if opts.FP8E4M3FNAsE4M3 {
		mid = fp8Relabel(mid)
	}
	if t.Type != mid && t.Type != legal.Shape.Elem {
		if !opts.UnsafeDtypeCast {
			return nil, fail(fmt.Errorf("wrong dtype (-u/--unsafe-dtype-cast converts it)"), hloShapeString(orig.Shape), shapeString(t))
		}
		var err error
		if t, err = castTensor(t, mid); err != nil {
			return nil, fail(err, "", "")
		}
	}
	if t.Type != legal.Shape.Elem {
		var err error
		if t, err = castTensor(t, legal.Shape.Elem); err != nil {
			return nil, fail(err, "", "")
		}
	}
	return t, nil
}

// assembleParams builds the entry computation's parameter values from the
// flattened leaves (in ParamLeaves order), rebuilding tuples and tokens.
func assembleParams(m *hlo.Module, leaves []*tensor.Tensor) []eval.Value {
	next := 0
	var build func(s hlo.Shape) eval.Value
	build = func(s hlo.Shape) eval.Value {
		switch {
		case s.IsTuple():
			elems := make([]eval.Value, len(s.Tuple))
			for i, e := range s.Tuple {
				elems[i] = build(e)
			}
			return eval.TupleValue(elems...)
		case s.IsArray():
			t := leaves[next]
			next++
			return eval.ArrayValue(t)
		}
		return eval.Value{Token: true}
	}
	out := make([]eval.Value, len(m.Entry.Params))
	for i, p := range m.Entry.Params {
		out[i] = build(p.Shape)
	}
	return out
}
