// Command capi is goldtrace's C ABI, built with -buildmode=c-shared into
// libgoldtrace.so. The declarations are in goldtrace.h; pybind/ binds them into
// the Python extension goldtrace._native.
package main

/*
#include <stdlib.h>
#include <string.h>
#include "goldtrace.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"unsafe"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

func main() {}

// abiVersion must equal GT_ABI_VERSION in goldtrace.h.
const abiVersion = 1

// Status codes, mirrored from goldtrace.h.
const (
	statusOK              = C.GT_OK
	statusInvalidArgument = C.GT_ERR_INVALID_ARGUMENT
	statusParse           = C.GT_ERR_PARSE
	statusEval            = C.GT_ERR_EVAL
	statusIO              = C.GT_ERR_IO
	statusUnsupported     = C.GT_ERR_UNSUPPORTED
	statusNotFound        = C.GT_ERR_NOT_FOUND
	statusInternal        = C.GT_ERR_INTERNAL
)

// statusError carries a status code chosen where the error arises.
type statusError struct {
	status C.gt_status
	err    error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

func withStatus(status C.gt_status, format string, args ...any) error {
	return &statusError{status, fmt.Errorf(format, args...)}
}

// ---- handles ----

var (
	handleMu   sync.Mutex
	handles    = map[uint64]any{}
	nextHandle atomic.Uint64
)

func newHandle(v any) uint64 {
	h := nextHandle.Add(1)
	handleMu.Lock()
	handles[h] = v
	handleMu.Unlock()
	return h
}

func lookupHandle[T any](h uint64) (T, error) {
	handleMu.Lock()
	v, ok := handles[h]
	handleMu.Unlock()
	t, isT := v.(T)
	if !ok || !isT {
		var zero T
		return zero, withStatus(statusNotFound, "handle %d is not a live %T", h, zero)
	}
	return t, nil
}

// ---- the error boundary ----

// guard runs f, turning a returned error or a panic into a status plus a
// malloc'ed message in *errOut. No Go panic crosses into C.
func guard(errOut **C.char, f func() error) (status C.gt_status) {
	defer func() {
		if r := recover(); r != nil {
			status = statusInternal
			setError(errOut, fmt.Sprintf("internal error (Go panic): %v\n%s", r, debug.Stack()))
		}
	}()
	err := f()
	if err == nil {
		return statusOK
	}
	setError(errOut, err.Error())
	return classify(err)
}

func setError(errOut **C.char, msg string) {
	if errOut != nil {
		*errOut = C.CString(msg)
	}
}

// classify maps an error to the status a script can rely on.
func classify(err error) C.gt_status {
	var se *statusError
	if errors.As(err, &se) {
		return se.status
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return statusIO
	}
	return classifyEngineError(err)
}

// ---- tensor views ----

// viewTensor copies a caller's view into a Go tensor.
func viewTensor(v *C.gt_tensor_view, what string) (*tensor.Tensor, error) {
	return viewTensorAs(v, what, false)
}

// viewTensorAs is viewTensor; with borrow set, a view whose memory is
// 16-byte aligned (as tensor storage is) becomes a tensor over the caller's
// memory itself, with no copy. Borrowed tensors must not outlive the call
// and are never written (see unaliasBorrowed).
func viewTensorAs(v *C.gt_tensor_view, what string, borrow bool) (*tensor.Tensor, error) {
	t := dtype.Type(v.dtype)
	if !t.IsArray() {
		return nil, withStatus(statusInvalidArgument, "%s: unsupported dtype code %d", what, int32(v.dtype))
	}
	if v.rank < 0 || v.rank > 64 {
		return nil, withStatus(statusInvalidArgument, "%s: invalid rank %d", what, int32(v.rank))
	}
	dims := make([]int64, int(v.rank))
	if v.rank > 0 {
		copy(dims, unsafe.Slice((*int64)(unsafe.Pointer(v.dims)), int(v.rank)))
	}
	var data []byte
	if v.nbytes > 0 {
		data = unsafe.Slice((*byte)(v.data), int(v.nbytes))
	}
	if borrow && len(data) > 0 && uintptr(unsafe.Pointer(&data[0]))%16 == 0 {
		if err := tensor.CheckShape(t, dims); err != nil {
			return nil, withStatus(statusInvalidArgument, "%s: %v", what, err)
		}
		if want := tensor.NumElements(dims) * int64(t.Size()); int64(len(data)) != want {
			return nil, withStatus(statusInvalidArgument, "%s: %v%v needs %d bytes, got %d", what, t, dims, want, len(data))
		}
		return &tensor.Tensor{Type: t, Dims: dims, Data: data}, nil
	}
	out, err := tensor.FromBytes(t, dims, data)
	if err != nil {
		return nil, withStatus(statusInvalidArgument, "%s: %v", what, err)
	}
	return out, nil
}

func viewTensors(views *C.gt_tensor_view, n C.int32_t) ([]*tensor.Tensor, error) {
	return viewTensorsAs(views, n, false)
}

// borrowTensors is viewTensors over the caller's memory (viewTensorAs).
func borrowTensors(views *C.gt_tensor_view, n C.int32_t) ([]*tensor.Tensor, error) {
	return viewTensorsAs(views, n, true)
}

func viewTensorsAs(views *C.gt_tensor_view, n C.int32_t, borrow bool) ([]*tensor.Tensor, error) {
	if n < 0 {
		return nil, withStatus(statusInvalidArgument, "negative tensor count %d", int32(n))
	}
	if n == 0 {
		return nil, nil
	}
	vs := unsafe.Slice(views, int(n))
	out := make([]*tensor.Tensor, len(vs))
	for i := range vs {
		t, err := viewTensorAs(&vs[i], fmt.Sprintf("argument %d", i), borrow)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// resultSet is what a call hands back: tensors and optional names.
type resultSet struct {
	tensors []*tensor.Tensor
	names   []string
}

// lookupResult returns result set h and its tensor i.
func lookupResult(h C.uint64_t, i C.int64_t) (*resultSet, *tensor.Tensor, error) {
	rs, err := lookupHandle[*resultSet](uint64(h))
	if err != nil {
		return nil, nil, err
	}
	if i < 0 || int(i) >= len(rs.tensors) {
		return nil, nil, withStatus(statusInvalidArgument, "result index %d out of range [0,%d)", int64(i), len(rs.tensors))
	}
	return rs, rs.tensors[i], nil
}

//export gt_abi_version
func gt_abi_version() C.int32_t { return abiVersion }

//export gt_free
func gt_free(p unsafe.Pointer) { C.free(p) }

//export gt_handle_free
func gt_handle_free(h C.uint64_t) { freeHandle(uint64(h)) }

func freeHandle(h uint64) {
	handleMu.Lock()
	forgetKernel(handles[h])
	delete(handles, h)
	handleMu.Unlock()
}

//export gt_live_handles
func gt_live_handles() C.int64_t {
	handleMu.Lock()
	defer handleMu.Unlock()
	return C.int64_t(len(handles))
}

//export gt_result_count
func gt_result_count(h C.uint64_t, n *C.int64_t, errOut **C.char) C.gt_status {
	return guard(errOut, func() error {
		rs, err := lookupHandle[*resultSet](uint64(h))
		if err != nil {
			return err
		}
		*n = C.int64_t(len(rs.tensors))
		return nil
	})
}

// gt_result_info reports tensor i's dtype, rank, byte size and dims (dims must
// hold 64 entries) and its name (malloc'ed, NULL when unnamed).
//
//export gt_result_info
func gt_result_info(h C.uint64_t, i C.int64_t, dt *C.int32_t, rank *C.int32_t, dims *C.int64_t, nbytes *C.int64_t, name **C.char, errOut **C.char) C.gt_status {
	return guard(errOut, func() error {
		rs, t, err := lookupResult(h, i)
		if err != nil {
			return err
		}
		if len(t.Dims) > 64 {
			return withStatus(statusInternal, "result rank %d exceeds 64", len(t.Dims))
		}
		*dt = C.int32_t(t.Type)
		*rank = C.int32_t(len(t.Dims))
		copy(unsafe.Slice((*int64)(unsafe.Pointer(dims)), 64), t.Dims)
		*nbytes = C.int64_t(len(t.Data))
		if name != nil {
			*name = nil
			if int(i) < len(rs.names) && rs.names[i] != "" {
				*name = C.CString(rs.names[i])
			}
		}
		return nil
	})
}

//export gt_result_copy
func gt_result_copy(h C.uint64_t, i C.int64_t, dst unsafe.Pointer, nbytes C.int64_t, errOut **C.char) C.gt_status {
	return guard(errOut, func() error {
		_, t, err := lookupResult(h, i)
		if err != nil {
			return err
		}
		if int64(nbytes) != int64(len(t.Data)) {
			return withStatus(statusInvalidArgument, "result %d holds %d bytes, destination has %d", int64(i), len(t.Data), int64(nbytes))
		}
		if nbytes > 0 {
			copyParallel(unsafe.Slice((*byte)(dst), int(nbytes)), t.Data)
		}
		return nil
	})
}

// copyParallel copies src into dst (of src's length) on all cores when it
// is large: a 64 MB result copied by one core into numpy's fresh memory
// took 16-19 ms, a sixth of pairwise distances' whole golden.
func copyParallel(dst, src []byte) {
	const chunk = 4 << 20
	n := min(runtime.GOMAXPROCS(0), len(src)/chunk)
	if n <= 1 {
		copy(dst, src)
		return
	}
	var wg sync.WaitGroup
	for i := range n {
		lo, hi := i*len(src)/n&^63, (i+1)*len(src)/n&^63
		if i == n-1 {
			hi = len(src)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			copy(dst[lo:hi], src[lo:hi])
		}()
	}
	wg.Wait()
}

// gt_roundtrip copies tensors into Go and hands them back as a result set: the
// bridge's own test of dtype and layout fidelity.
//
//export gt_roundtrip
func gt_roundtrip(views *C.gt_tensor_view, n C.int32_t, out *C.uint64_t, errOut **C.char) C.gt_status {
	return guard(errOut, func() error {
		ts, err := viewTensors(views, n)
		if err != nil {
			return err
		}
		*out = C.uint64_t(newHandle(&resultSet{tensors: ts}))
		return nil
	})
}

// gt_convert converts a tensor between f32/f64 and any float type with
// goldtrace's bit-exact conversions (one side must be f32 or f64).
//
//export gt_convert
func gt_convert(view *C.gt_tensor_view, dst C.int32_t, out *C.uint64_t, errOut **C.char) C.gt_status {
	return guard(errOut, func() error {
		src, err := viewTensor(view, "input")
		if err != nil {
			return err
		}
		res, err := convertTensor(src, dtype.Type(dst))
		if err != nil {
			return err
		}
		*out = C.uint64_t(newHandle(&resultSet{tensors: []*tensor.Tensor{res}}))
		return nil
	})
}

// gt_internal_test_panic panics inside Go on purpose, so tests can prove that a
// Go panic becomes an error status and the host process survives.
//
//export gt_internal_test_panic
func gt_internal_test_panic(errOut **C.char) C.gt_status {
	return guard(errOut, func() error {
		var m map[string]int
		m["boom"] = 1 // nil map write: a genuine runtime panic
		return nil
	})
}
