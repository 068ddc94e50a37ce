package main

/*
#include <stdlib.h>
#include "xla_ffi.h"
*/
import "C"

import (
	"fmt"
	"runtime/debug"
	"unsafe"

	"goldtrace/kernel/customcall"
)

// The typed-FFI CPU handler behind the custom-call target
// goldtrace_nki_kernel (python/goldtrace/nki/_jax_ffi.py registers it with
// jax): XLA calls the C function gt_xla_ffi_nki_kernel (xla_ffi.c), which
// answers the metadata handshake, finds the `kernel` attribute and hands the
// EXECUTE stage to gtFFIExecute; kernel/customcall.ExecuteFFI does the work.

// Kernels inside goldens: the evaluator runs kernel custom-calls in process.
func init() { customcall.Register() }

// gtFFIExecute runs one EXECUTE stage. It returns NULL on success, else a
// malloc'ed message (freed by the C side) with *errc set to the FFI error
// code. No Go panic leaves it.
//
//export gtFFIExecute
func gtFFIExecute(cfg *C.char, cfgLen C.size_t, args **C.XLA_FFI_Buffer, nargs C.int64_t, rets **C.XLA_FFI_Buffer, nrets C.int64_t, errc *C.int) (msg *C.char) {
	defer func() {
		if r := recover(); r != nil {
			*errc = customcall.FFIInternal
			msg = C.CString(fmt.Sprintf("%s: internal error (Go panic): %v\n%s", customcall.FFITarget, r, debug.Stack()))
		}
	}()
	var s string
	if cfg != nil && cfgLen > 0 {
		s = unsafe.String((*byte)(unsafe.Pointer(cfg)), int(cfgLen))
	}
	code, err := customcall.ExecuteFFI(s, ffiBuffers(args, nargs), ffiBuffers(rets, nrets))
	if err == nil {
		return nil
	}
	*errc = C.int(code)
	return C.CString(err.Error())
}

// ffiBuffers reads n XLA_FFI_Buffer pointers (no copy of the data).
func ffiBuffers(p **C.XLA_FFI_Buffer, n C.int64_t) []customcall.Buffer {
	if p == nil || n <= 0 {
		return nil
	}
	ptrs := unsafe.Slice(p, int(n))
	out := make([]customcall.Buffer, len(ptrs))
	for i, b := range ptrs {
		if b == nil {
			out[i] = customcall.Buffer{Dtype: -1}
			continue
		}
		out[i] = customcall.Buffer{Dtype: int32(b.dtype), Data: b.data}
		switch {
		case b.rank > 0 && b.dims != nil:
			out[i].Dims = unsafe.Slice((*int64)(unsafe.Pointer(b.dims)), int(b.rank))
		case b.rank != 0:
			out[i].Dims = []int64{-1} // reported as invalid dimensions
		}
	}
	return out
}
