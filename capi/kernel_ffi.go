package main

/*
#include <stdlib.h>
#include "xla_ffi.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// The typed-FFI CPU handler behind the custom-call target
// goldtrace_nki_kernel (python/goldtrace/nki/_jax_ffi.py registers it with
// jax): XLA calls the C function gt_xla_ffi_nki_kernel (xla_ffi.c), which
// answers the metadata handshake and hands the EXECUTE stage to
// gtFFIExecute here. The kernel travels as the string attribute `kernel`
// (the base64 backend_config); operands are the kernel's parameters
// (optionally followed by its constant_values), results its outputs.

// The FFI error codes the handler reports (absl status codes).
const (
	ffiInvalidArgument = 3
	ffiUnimplemented   = 12
	ffiInternal        = 13
)

// ffiTarget is the custom-call target name, for messages.
const ffiTarget = "goldtrace_nki_kernel"

// ffiBuffer is one XLA_FFI_Buffer: dtype, data and dims (dims alias XLA's
// memory for the duration of the call).
type ffiBuffer struct {
	dtype int32
	data  unsafe.Pointer
	dims  []int64
}

// gtFFIExecute runs one EXECUTE stage. It returns NULL on success, else a
// malloc'ed message (freed by the C side) with *errc set to the FFI error
// code. No Go panic leaves it.
//
//export gtFFIExecute
func gtFFIExecute(cfg *C.char, cfgLen C.size_t, args **C.XLA_FFI_Buffer, nargs C.int64_t, rets **C.XLA_FFI_Buffer, nrets C.int64_t, errc *C.int) (msg *C.char) {
	defer func() {
		if r := recover(); r != nil {
			*errc = ffiInternal
			msg = C.CString(fmt.Sprintf("%s: internal error (Go panic): %v", ffiTarget, r))
		}
	}()
	var s string
	if cfg != nil && cfgLen > 0 {
		s = unsafe.String((*byte)(unsafe.Pointer(cfg)), int(cfgLen))
	}
	code, err := ffiExecute(s, ffiBuffers(args, nargs), ffiBuffers(rets, nrets))
	if err == nil {
		return nil
	}
	*errc = C.int(code)
	return C.CString(err.Error())
}

func ffiBuffers(p **C.XLA_FFI_Buffer, n C.int64_t) []ffiBuffer {
	if p == nil || n <= 0 {
		return nil
	}
	ptrs := unsafe.Slice(p, int(n))
	out := make([]ffiBuffer, len(ptrs))
	for i, b := range ptrs {
		if b == nil {
			out[i] = ffiBuffer{dtype: -1}
			continue
		}
		out[i] = ffiBuffer{dtype: int32(b.dtype), data: b.data}
		if b.rank > 0 && b.dims != nil {
			out[i].dims = unsafe.Slice((*int64)(unsafe.Pointer(b.dims)), int(b.rank))
		} else if b.rank != 0 {
			out[i].dims = []int64{-1} // reported as invalid below
		}
	}
	return out
}

// ffiView wraps an FFI buffer as a tensor over XLA's memory (no copy).
func ffiView(b ffiBuffer, what string) (*tensor.Tensor, error) {
	t := dtype.Type(b.dtype)
	if b.dtype < 0 || !t.Valid() || !t.IsArray() {
		return nil, bindErrorf("%s has FFI data type %d, which goldtrace does not know", what, b.dtype)
	}
	if t.IsSubByte() {
		return nil, bindErrorf("%s is %v: sub-byte types are not supported by kernels", what, t)
	}
	if err := tensor.CheckShape(t, b.dims); err != nil {
		return nil, bindErrorf("%s: %v", what, err)
	}
	n := int(tensor.NumElements(b.dims)) * t.Size()
	var data []byte
	switch {
	case n == 0:
		data = []byte{}
	case b.data == nil:
		return nil, bindErrorf("%s (%s) has no data", what, tensor.ShapeString(t, b.dims))
	default:
		data = unsafe.Slice((*byte)(b.data), n)
	}
	return &tensor.Tensor{Type: t, Dims: append([]int64(nil), b.dims...), Data: data}, nil
}

// ffiExecute decodes the kernel (cached), binds the operands, simulates and
// writes the results. It returns the FFI error code with the error.
func ffiExecute(cfg string, args, rets []ffiBuffer) (int, error) {
	if cfg == "" {
		return ffiInvalidArgument, fmt.Errorf("%s: the attribute 'kernel' is empty (expected the kernel's base64 backend_config)", ffiTarget)
	}
	kc, err := lookupKernel(cfg)
	if err != nil {
		return ffiInvalidArgument, fmt.Errorf("%s: cannot read the kernel's backend_config: %v", ffiTarget, err)
	}
	fail := func(code int, format string, a ...any) (int, error) {
		return code, fmt.Errorf("%s: kernel %q: %s", ffiTarget, kc.name(), fmt.Sprintf(format, a...))
	}
	in := make([]*tensor.Tensor, len(args))
	for i, b := range args {
		if in[i], err = ffiView(b, fmt.Sprintf("operand %d", i)); err != nil {
			return fail(ffiInvalidArgument, "%v", err)
		}
	}
	inputs, err := kc.bindInputs(in)
	if err != nil {
		return fail(ffiInvalidArgument, "%v", err)
	}
	if len(rets) != len(kc.k.Outputs) {
		return fail(ffiInvalidArgument, "the custom-call has %d results but the kernel returns %d outputs", len(rets), len(kc.k.Outputs))
	}
	out := make([]*tensor.Tensor, len(rets))
	for i, b := range rets {
		if out[i], err = ffiView(b, fmt.Sprintf("result %d", i)); err != nil {
			return fail(ffiInvalidArgument, "%v", err)
		}
		if err := kc.checkResult(i, out[i].Type, out[i].Dims); err != nil {
			return fail(ffiInvalidArgument, "%v", err)
		}
	}
	res, err := kc.run(inputs, kernelRunOptions{Stdout: os.Stdout})
	if err != nil {
		code := ffiInternal
		var ce *configError
		switch {
		case errors.Is(err, errNoSimulator):
			code = ffiUnimplemented
		case errors.As(err, &ce):
			code = ffiInvalidArgument
		}
		return fail(code, "%v", err)
	}
	// A result buffer may alias an operand (input_output_aliases): a
	// simulator output that still shares an operand's memory is copied out
	// before any result is written.
	for i, r := range res {
		for _, a := range in {
			if overlaps(r.Data, a.Data) {
				res[i] = r.Clone()
				break
			}
		}
	}
	for i, r := range res {
		if len(r.Data) != len(out[i].Data) {
			return fail(ffiInternal, "output %d has %d bytes, its buffer %d", i, len(r.Data), len(out[i].Data))
		}
		copy(out[i].Data, r.Data)
	}
	return 0, nil
}

// overlaps reports whether two byte slices share memory.
func overlaps(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	a0, b0 := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	return a0 < b0+uintptr(len(b)) && b0 < a0+uintptr(len(a))
}
