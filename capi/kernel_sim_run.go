package main

import (
	"errors"

	"goldtrace/engine/tensor"
	"goldtrace/kernel/ir/irpb"
	"goldtrace/kernel/sim"
)

// Kernel custom-calls run in kernel/sim, in process.
func init() {
	runKernelSim = func(k *irpb.Kernel, inputs []*tensor.Tensor, opts kernelRunOptions) ([]*tensor.Tensor, error) {
		outs, err := sim.Run(k, inputs, sim.Options{Stdout: opts.Stdout, Parallel: opts.Parallel})
		var se *sim.Error
		if errors.As(err, &se) && se.Rule == "invalid" {
			// An IR the simulator cannot run (an op or attribute it does
			// not know): goldtrace cannot read this kernel.
			return nil, &configError{err}
		}
		return outs, err
	}
}
