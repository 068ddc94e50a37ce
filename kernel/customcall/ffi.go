package customcall

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
	"goldtrace/kernel/sim"
)

// The typed-FFI CPU handler behind the custom-call target
// goldtrace_nki_kernel (python/goldtrace/nki/_jax_ffi.py registers it with
// jax): XLA calls the C function gt_xla_ffi_nki_kernel (capi/xla_ffi.c),
// which answers the metadata handshake and hands the EXECUTE stage, through
// capi's gtFFIExecute, to ExecuteFFI here. The kernel travels as the string attribute `kernel`
// (the base64 backend_config); operands are the kernel's parameters
// (optionally followed by its constant_values), results its outputs. An
// XLA_FFI_Buffer carries no layout: buffers are read as row-major, which is
// what jax.ffi's lowerings ask for (operand_layouts / result_layouts
// default to row-major).

// FFI error codes ExecuteFFI reports (absl status codes, as XLA_FFI_Error_Code).
const (
	FFIInvalidArgument = 3
	FFIInternal        = 13
)

// FFITarget is the custom-call target of goldtrace's typed-FFI CPU handler.
const FFITarget = "goldtrace_nki_kernel"

// Buffer is one XLA_FFI_Buffer: dtype (the FFI DataType number, which is
// XLA's PrimitiveType number and so goldtrace's dtype.Type), data and dims.
// Data and Dims point into XLA's memory for the duration of the call.
type Buffer struct {
	Dtype int32
	Data  unsafe.Pointer
	Dims  []int64
}

// ffiView wraps an FFI buffer as a tensor over XLA's memory (no copy).
func ffiView(b Buffer, what string) (*tensor.Tensor, error) {
	t := dtype.Type(b.Dtype)
	if b.Dtype < 0 || !t.Valid() || !t.IsArray() {
		return nil, bindErrorf("%s has FFI data type %d, which goldtrace does not know", what, b.Dtype)
	}
	if t.IsSubByte() {
		return nil, bindErrorf("%s is %v: sub-byte types are not supported by kernels", what, t)
	}
	if err := tensor.CheckShape(t, b.Dims); err != nil {
		return nil, bindErrorf("%s: %v", what, err)
	}
	n := int(tensor.NumElements(b.Dims)) * t.Size()
	var data []byte
	switch {
	case n == 0:
		data = []byte{}
	case b.Data == nil:
		return nil, bindErrorf("%s (%s) has no data", what, tensor.ShapeString(t, b.Dims))
	default:
		data = unsafe.Slice((*byte)(b.Data), n)
	}
	return &tensor.Tensor{Type: t, Dims: append([]int64(nil), b.Dims...), Data: data}, nil
}

// ExecuteFFI runs one EXECUTE stage of the typed-FFI handler: decodes the
// kernel config cfg (cached), binds the operand buffers, simulates and writes
// the result buffers. On failure it returns the FFI error code and an error
// naming the target, the kernel and the problem; nothing is written then.
// Callers recover panics.
func ExecuteFFI(cfg string, args, rets []Buffer) (int, error) {
	if cfg == "" {
		return FFIInvalidArgument, fmt.Errorf("%s: the attribute 'kernel' is empty (expected the kernel's base64 backend_config)", FFITarget)
	}
	kc, err := lookupKernel(cfg)
	if err != nil {
		return FFIInvalidArgument, fmt.Errorf("%s: cannot read the kernel's backend_config: %v", FFITarget, err)
	}
	fail := func(code int, format string, a ...any) (int, error) {
		return code, fmt.Errorf("%s: kernel %q: %s", FFITarget, kc.name(), fmt.Sprintf(format, a...))
	}
	in := make([]*tensor.Tensor, len(args))
	for i, b := range args {
		if in[i], err = ffiView(b, fmt.Sprintf("operand %d", i)); err != nil {
			return fail(FFIInvalidArgument, "%v", err)
		}
	}
	inputs, err := kc.bindInputs(in)
	if err != nil {
		return fail(FFIInvalidArgument, "%v", err)
	}
	if len(rets) != len(kc.k.Outputs) {
		return fail(FFIInvalidArgument, "the custom-call has %d results but the kernel returns %d outputs", len(rets), len(kc.k.Outputs))
	}
	out := make([]*tensor.Tensor, len(rets))
	for i, b := range rets {
		if out[i], err = ffiView(b, fmt.Sprintf("result %d", i)); err != nil {
			return fail(FFIInvalidArgument, "%v", err)
		}
		if err := kc.checkResult(i, out[i].Type, out[i].Dims); err != nil {
			return fail(FFIInvalidArgument, "%v", err)
		}
	}
	res, err := kc.run(inputs, sim.Options{Stdout: os.Stdout})
	if err != nil {
		code := FFIInternal
		var ce *configError
		if errors.As(err, &ce) {
			code = FFIInvalidArgument
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
			return fail(FFIInternal, "output %d has %d bytes, its buffer %d", i, len(r.Data), len(out[i].Data))
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
