package main

/*
#include <stdlib.h>
#include <string.h>
#include "goldtrace.h"
*/
import "C"

import (
	"encoding/json"
	"unsafe"

	"goldtrace/kernel/ir"
	"goldtrace/kernel/ir/irpb"
)

// The kernel path's exports: a builder the Python tracer streams events into,
// and kernel handles (a finished, validated IR) to serialize, print and run.

func goBytes(p unsafe.Pointer, n C.int64_t) []byte {
	if p == nil || n <= 0 {
		return nil
	}
	return C.GoBytes(p, C.int(n))
}

// gt_kb_new starts a kernel builder.
//
//export gt_kb_new
func gt_kb_new(name *C.char, out *C.uint64_t, errOut **C.char) C.gt_status {
	return guard(errOut, func() error {
		*out = C.uint64_t(newHandle(ir.NewBuilder(C.GoString(name))))
		return nil
	})
}

// gt_kb_append applies a batch of events: an event tape (a JSON array, see
// kernel/ir/tape.go) or a BuildBatch in protobuf JSON. Tensor ids and loop
// variables are assigned in declaration order, so the caller can count them.
//
//export gt_kb_append
func gt_kb_append(h C.uint64_t, js unsafe.Pointer, n C.int64_t, errOut **C.char) C.gt_status {
	return guard(errOut, func() error {
		b, err := lookupHandle[*ir.Builder](uint64(h))
		if err != nil {
			return err
		}
		data := goBytes(js, n)
		appendEvents := b.AppendJSON
		if len(data) > 0 && data[0] == '[' {
			appendEvents = b.AppendTape // the tracer's compact form (kernel/ir/tape.go)
		}
		if _, _, err := appendEvents(data); err != nil {
			return withStatus(statusInvalidArgument, "%v", err)
		}
		return nil
	})
}

// gt_kb_finish completes the kernel with its signature (JSON), validates it,
// and returns a kernel handle. The builder handle stays valid (and finished)
// until freed.
//
//export gt_kb_finish
func gt_kb_finish(h C.uint64_t, sigJSON *C.char, out *C.uint64_t, errOut **C.char) C.gt_status {
	return guard(errOut, func() error {
		b, err := lookupHandle[*ir.Builder](uint64(h))
		if err != nil {
			return err
		}
		var sig ir.Signature
		if err := json.Unmarshal([]byte(C.GoString(sigJSON)), &sig); err != nil {
			return withStatus(statusInvalidArgument, "kernel signature: %v", err)
		}
		k, err := b.Finish(sig)
		if err != nil {
			return withStatus(statusInvalidArgument, "%v", err)
		}
		if err := validateKernel(k); err != nil {
			return err
		}
		*out = C.uint64_t(newHandle(k))
		return nil
	})
}

// gt_kernel_serialize returns the kernel's protobuf bytes (malloc'ed).
//
//export gt_kernel_serialize
func gt_kernel_serialize(h C.uint64_t, data *unsafe.Pointer, n *C.int64_t, errOut **C.char) C.gt_status {
	return guard(errOut, func() error {
		k, err := lookupHandle[*irpb.Kernel](uint64(h))
		if err != nil {
			return err
		}
		b, err := marshalKernel(k)
		if err != nil {
			return err
		}
		*data = C.CBytes(b)
		*n = C.int64_t(len(b))
		return nil
	})
}

// gt_kernel_load reads a kernel from protobuf bytes (validating it).
//
//export gt_kernel_load
func gt_kernel_load(data unsafe.Pointer, n C.int64_t, out *C.uint64_t, errOut **C.char) C.gt_status {
	return guard(errOut, func() error {
		k, err := unmarshalKernel(goBytes(data, n))
		if err != nil {
			return err
		}
		if err := validateKernel(k); err != nil {
			return err
		}
		*out = C.uint64_t(newHandle(k))
		return nil
	})
}

// gt_kernel_format prints the kernel as text (malloc'ed).
//
//export gt_kernel_format
func gt_kernel_format(h C.uint64_t, out **C.char, errOut **C.char) C.gt_status {
	return guard(errOut, func() error {
		k, err := lookupHandle[*irpb.Kernel](uint64(h))
		if err != nil {
			return err
		}
		*out = C.CString(formatKernel(k))
		return nil
	})
}
