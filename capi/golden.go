package main

/*
#include <stdlib.h>
#include "goldtrace.h"
*/
import "C"

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"unsafe"

	"goldtrace/engine/eval"
	"goldtrace/engine/golden"
	"goldtrace/engine/tensor"
)

// goldenOptions is the JSON the Python API passes to gt_golden.
type goldenOptions struct {
	Upcast            bool   `json:"upcast"`
	FP8E4M3FNAsE4M3   bool   `json:"fp8e4m3fn_as_e4m3"`
	UnsafeDtypeCast   bool   `json:"unsafe_dtype_cast"`
	SaveIntermediates bool   `json:"save_intermediates"`
	Synthesize        bool   `json:"synthesize"`
	Seed              uint64 `json:"seed"`
	Verbose           int    `json:"verbose"`
	OutputDir         string `json:"output_dir"`
	EmulateDevices    int    `json:"emulate_devices"`
	SPMD              bool   `json:"spmd"`
	XLACompat         string `json:"xla_compat"`
}

// gt_golden evaluates a loaded module on inputs (one per parameter leaf). The
// result set holds the outputs (unnamed) and, with save_intermediates, the
// intermediates named by their instruction.
//
//export gt_golden
func gt_golden(h C.uint64_t, views *C.gt_tensor_view, n C.int32_t, optsJSON *C.char, out *C.uint64_t, errOut **C.char) C.gt_status {
	return guard(errOut, func() error {
		lm, err := lookupHandle[*loadedModule](uint64(h))
		if err != nil {
			return err
		}
		var o goldenOptions
		if optsJSON != nil {
			if err := json.Unmarshal([]byte(C.GoString(optsJSON)), &o); err != nil {
				return withStatus(statusInvalidArgument, "bad options: %v", err)
			}
		}
		// The inputs are read in place (numpy's memory, valid for the call);
		// whatever the result set keeps is copied out of it below.
		inputs, err := borrowTensors(views, n)
		if err != nil {
			return err
		}
		borrowed := inputs
		if o.Synthesize && len(inputs) == 0 {
			inputs = lm.Args
			if inputs == nil {
				inputs = golden.SynthesizeInputs(lm.Module, o.Seed)
			}
		}
		opts := golden.Options{
			Upcast: o.Upcast, FP8E4M3FNAsE4M3: o.FP8E4M3FNAsE4M3, UnsafeDtypeCast: o.UnsafeDtypeCast,
			SaveIntermediates: o.SaveIntermediates, Verbose: o.Verbose,
			EmulateDevices: o.EmulateDevices, SPMD: o.SPMD, XLACompat: o.XLACompat,
		}
		if o.Verbose > 1 {
			opts.Progress = os.Stderr
		}
		res, err := golden.Run(lm.Module, inputs, opts)
		if err != nil {
			return err
		}
		if o.OutputDir != "" {
			if err := golden.WriteOutputs(o.OutputDir, res, nil); err != nil {
				return err
			}
		}
		rs := &resultSet{tensors: append([]*tensor.Tensor{}, res.Outputs...)}
		rs.names = make([]string, len(rs.tensors))
		for _, im := range res.Intermediates {
			name := im.Instruction
			if im.TupleIndex != nil {
				name = fmt.Sprintf("%s%v", name, im.TupleIndex)
			}
			if res.Devices > 1 {
				name = fmt.Sprintf("device%d/%s", im.Device, name)
			}
			rs.tensors = append(rs.tensors, im.Value)
			rs.names = append(rs.names, name)
		}
		unaliasBorrowed(rs.tensors, borrowed)
		*out = C.uint64_t(newHandle(rs))
		return nil
	})
}

// unaliasBorrowed replaces every tensor of ts whose storage lies in one of
// the borrowed inputs' (an output that is a parameter, or a view of one) by
// a copy, so the result set outlives the caller's memory.
func unaliasBorrowed(ts, borrowed []*tensor.Tensor) {
	span := func(t *tensor.Tensor) (uintptr, uintptr) {
		if t == nil || len(t.Data) == 0 {
			return 0, 0
		}
		p := uintptr(unsafe.Pointer(&t.Data[0]))
		return p, p + uintptr(len(t.Data))
	}
	for i, t := range ts {
		lo, hi := span(t)
		if lo == hi {
			continue
		}
		for _, b := range borrowed {
			if blo, bhi := span(b); blo < hi && lo < bhi {
				ts[i] = t.Clone()
				break
			}
		}
	}
}

// gt_cli_main runs the infergoldens command line in process and returns its
// exit code (the Python console script calls it).
//
//export gt_cli_main
func gt_cli_main(argc C.int, argv **C.char) (code C.int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "infergoldens: internal error: %v\n", r)
			code = golden.ExitInternal
		}
	}()
	args := make([]string, 0, int(argc))
	for _, a := range unsafe.Slice(argv, int(argc)) {
		args = append(args, C.GoString(a))
	}
	if len(args) > 0 {
		args = args[1:]
	}
	return C.int(golden.Main(args, os.Stdout, os.Stderr))
}

// classifyEngineError maps the golden driver's typed errors to statuses.
func classifyEngineError(err error) C.gt_status {
	var (
		ue *golden.UsageError
		me *golden.ModuleError
		ie *golden.InputError
		ee *golden.EvalError
		oe *golden.OutputError
		ne *golden.InternalError
	)
	switch {
	case errors.As(err, &ne):
		return statusInternal
	case errors.As(err, &me):
		var pe *os.PathError
		if errors.As(err, &pe) {
			return statusIO
		}
		return statusParse
	case errors.As(err, &ie), errors.As(err, &ue):
		return statusInvalidArgument
	case errors.As(err, &oe):
		return statusIO
	case errors.As(err, &ee):
		var unsupported *eval.UnsupportedError
		if errors.As(err, &unsupported) {
			return statusUnsupported
		}
		return statusEval
	}
	return statusInternal
}
