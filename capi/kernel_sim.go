package main

/*
#include <stdlib.h>
#include "goldtrace.h"
*/
import "C"

import (
	"bytes"
	"encoding/json"
	"errors"
	"runtime"

	"goldtrace/kernel/ir/irpb"
	"goldtrace/kernel/sim"
)

// kernelSimOptions is the JSON gt_kernel_simulate takes.
type kernelSimOptions struct {
	Parallel int `json:"parallel"`
}

// gt_kernel_simulate runs a kernel on inputs (one per kernel parameter) and
// returns its outputs as a result set; what nl.device_print printed comes back
// in *printed (malloc'ed, NULL when nothing was printed).
//
//export gt_kernel_simulate
func gt_kernel_simulate(h C.uint64_t, views *C.gt_tensor_view, n C.int32_t, optsJSON *C.char, out *C.uint64_t, printed **C.char, errOut **C.char) C.gt_status {
	var buf bytes.Buffer
	status := guard(errOut, func() error {
		k, err := lookupHandle[*irpb.Kernel](uint64(h))
		if err != nil {
			return err
		}
		var o kernelSimOptions
		if optsJSON != nil {
			if s := C.GoString(optsJSON); s != "" {
				if err := json.Unmarshal([]byte(s), &o); err != nil {
					return withStatus(statusInvalidArgument, "bad simulator options: %v", err)
				}
			}
		}
		if o.Parallel <= 0 {
			o.Parallel = runtime.GOMAXPROCS(0)
		}
		inputs, err := viewTensors(views, n)
		if err != nil {
			return err
		}
		outs, err := sim.Run(k, inputs, sim.Options{Stdout: &buf, Parallel: o.Parallel})
		if err != nil {
			return classifySimError(err)
		}
		*out = C.uint64_t(newHandle(&resultSet{tensors: outs}))
		return nil
	})
	if printed != nil {
		*printed = nil
		if buf.Len() > 0 {
			*printed = C.CString(buf.String())
		}
	}
	return status
}

// classifySimError: a kernel the simulator refuses (bad inputs, an invalid
// kernel, an out-of-bounds access) is an invalid argument; anything else failed
// while running.
func classifySimError(err error) error {
	var se *sim.Error
	if sim.IsInvalidKernel(err) || (errors.As(err, &se) && se.Rule == "bounds") {
		return withStatus(statusInvalidArgument, "%v", err)
	}
	return withStatus(statusEval, "%v", err)
}
