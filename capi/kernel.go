package main

/*
#include <stdlib.h>
#include <string.h>
#include "goldtrace.h"
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
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

// kernelBuilder applies the tracer's event batches in the background, one
// after another in arrival order, so Go decodes a batch while Python traces
// the next (a dump_config miss is a trace). A batch's error (only a
// malformed tape: user errors are found by Validate at the end) is reported
// by the next append or by finish.
type kernelBuilder struct {
	b      *ir.Builder
	tailMu sync.Mutex
	tail   chan struct{} // closed once every batch queued so far is applied
	err    atomic.Pointer[error]
}

func (kb *kernelBuilder) failed() error {
	if e := kb.err.Load(); e != nil {
		return *e
	}
	return nil
}

// enqueue applies data after the batches queued before it (marshal: the
// tape in Python's marshal format, else JSON).
func (kb *kernelBuilder) enqueue(data []byte, marshal bool) {
	kb.tailMu.Lock()
	prev, next := kb.tail, make(chan struct{})
	kb.tail = next
	kb.tailMu.Unlock()
	run := func() {
		defer close(next)
		<-prev
		if kb.failed() != nil {
			return
		}
		defer func() {
			if r := recover(); r != nil {
				err := fmt.Errorf("internal error decoding a kernel event batch: %v", r)
				kb.err.Store(&err)
			}
		}()
		appendEvents := kb.b.AppendJSON
		if marshal {
			appendEvents = kb.b.AppendTapeMarshal
		} else if len(data) > 0 && data[0] == '[' {
			appendEvents = kb.b.AppendTape // the tracer's compact form (kernel/ir/tape.go)
		}
		if _, _, err := appendEvents(data); err != nil {
			err = withStatus(statusInvalidArgument, "%v", err)
			kb.err.Store(&err)
			return
		}
		kb.b.CheckAhead() // validate what is complete while Python traces on
	}
	if syncDecode {
		run()
		return
	}
	go run()
}

// syncDecode (GOLDTRACE_SYNC_DECODE=1) decodes each batch in the appending
// call instead: on a machine whose cores are busy with other work, a call
// into Go can wait for the processor a background decode holds.
var syncDecode = os.Getenv("GOLDTRACE_SYNC_DECODE") == "1"

// wait blocks until every queued batch is applied and returns the first error.
func (kb *kernelBuilder) wait() error {
	kb.tailMu.Lock()
	tail := kb.tail
	kb.tailMu.Unlock()
	<-tail
	return kb.failed()
}

// gt_kb_new starts a kernel builder.
//
//export gt_kb_new
func gt_kb_new(name *C.char, out *C.uint64_t, errOut **C.char) C.gt_status {
	return guard(errOut, func() error {
		done := make(chan struct{})
		close(done)
		*out = C.uint64_t(newHandle(&kernelBuilder{b: ir.NewBuilder(C.GoString(name)), tail: done}))
		return nil
	})
}

// gt_kb_append queues a batch of events (applied in the background, in order;
// a malformed batch fails a later append or gt_kb_finish): an event tape (a JSON array, see
// kernel/ir/tape.go) or a BuildBatch in protobuf JSON. Tensor ids and loop
// variables are assigned in declaration order, so the caller can count them.
//
//export gt_kb_append
func gt_kb_append(h C.uint64_t, js unsafe.Pointer, n C.int64_t, errOut **C.char) C.gt_status {
	return appendBatch(h, js, n, false, errOut)
}

func appendBatch(h C.uint64_t, data unsafe.Pointer, n C.int64_t, marshal bool, errOut **C.char) C.gt_status {
	return guard(errOut, func() error {
		kb, err := lookupHandle[*kernelBuilder](uint64(h))
		if err != nil {
			return err
		}
		if err := kb.failed(); err != nil {
			return err
		}
		kb.enqueue(goBytes(data, n), marshal) // a copy: the caller's buffer may go
		return nil
	})
}

// gt_kb_append_marshal is gt_kb_append for an event tape in Python's marshal
// format (kernel/ir/tape_marshal.go), which the tracer writes fastest.
//
//export gt_kb_append_marshal
func gt_kb_append_marshal(h C.uint64_t, data unsafe.Pointer, n C.int64_t, errOut **C.char) C.gt_status {
	return appendBatch(h, data, n, true, errOut)
}

// gt_kb_finish completes the kernel with its signature (JSON), validates it,
// and returns a kernel handle. The builder handle stays valid (and finished)
// until freed.
//
//export gt_kb_finish
func gt_kb_finish(h C.uint64_t, sigJSON *C.char, out *C.uint64_t, errOut **C.char) C.gt_status {
	return guard(errOut, func() error {
		kb, err := lookupHandle[*kernelBuilder](uint64(h))
		if err != nil {
			return err
		}
		k, err := finishKernel(kb, []byte(C.GoString(sigJSON)))
		if err != nil {
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
		var b []byte
		if p := preparedKernel(k); p != nil {
			b = p.irBytes
		} else if b, err = marshalKernel(k); err != nil {
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
