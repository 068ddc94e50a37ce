"""The boundary to the Go core: calls into goldtrace._native, turns statuses into
exceptions, hands numpy arrays to Go as views and copies results back.

cffi releases the GIL around every native call, so long Go calls never block
other Python threads."""

import os

import numpy as np

from . import dtypes
from .errors import STATUS_ERRORS, ForkedProcessError, GoldtraceError

try:
    from ._native import ffi, lib
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError(
        "goldtrace's native extension is missing; install the package with "
        "`pip install .` (needs Go and a C compiler) rather than importing the source tree"
    ) from exc

ABI_VERSION = 1
_LOADED_PID = os.getpid()

if lib.gt_abi_version() != ABI_VERSION:  # pragma: no cover
    raise ImportError(
        f"libgoldtrace ABI version {lib.gt_abi_version()} does not match the Python package's {ABI_VERSION}; reinstall goldtrace"
    )


def _check_process():
    # The Go runtime's threads do not exist in a forked child; entering Go there
    # can hang forever, so refuse before crossing the boundary.
    if os.getpid() != _LOADED_PID:
        raise ForkedProcessError(
            "goldtrace was loaded before this process was forked, and Go cannot run in a forked child; "
            "use multiprocessing.set_start_method('spawn') or 'forkserver' (or import goldtrace in the child only)"
        )


def call(fn, *args):
    """Call a native function whose last parameter is `char **err`."""
    _check_process()
    err = ffi.new("char **")
    status = fn(*args, err)
    if status != 0:
        msg = "unknown error"
        if err[0] != ffi.NULL:
            msg = ffi.string(err[0]).decode("utf-8", "replace")
            lib.gt_free(err[0])
        raise STATUS_ERRORS.get(status, GoldtraceError)(msg)


class Views:
    """gt_tensor_view structs over numpy arrays, keeping the arrays alive."""

    def __init__(self, arrays, what="argument"):
        self.arrays = []
        self.c = ffi.new("gt_tensor_view[]", max(len(arrays), 1))
        self._dims = []
        for i, a in enumerate(arrays):
            a = np.asarray(a)
            try:
                code = dtypes.code_of(a.dtype)
            except ValueError as exc:
                from .errors import InvalidArgumentError

                raise InvalidArgumentError(f"{what} {i}: {exc}") from None
            if a.dtype.byteorder == ">":
                a = a.astype(a.dtype.newbyteorder("<"))
            if not a.flags.c_contiguous:
                a = a.copy(order="C")
            dims = ffi.new("int64_t[]", list(a.shape) or [0])
            v = self.c[i]
            v.data = ffi.cast("void *", a.ctypes.data) if a.nbytes else ffi.NULL
            v.nbytes = a.nbytes
            v.dtype = code
            v.rank = a.ndim
            v.dims = dims
            self.arrays.append(a)
            self._dims.append(dims)
        self.n = len(arrays)


def take_results(handle):
    """Copy every tensor of a result-set handle into numpy arrays, then free it.
    Returns (arrays, names)."""
    try:
        n = ffi.new("int64_t *")
        call(lib.gt_result_count, handle, n)
        arrays, names = [], []
        dt = ffi.new("int32_t *")
        rank = ffi.new("int32_t *")
        dims = ffi.new("int64_t[64]")
        nbytes = ffi.new("int64_t *")
        name = ffi.new("char **")
        for i in range(n[0]):
            call(lib.gt_result_info, handle, i, dt, rank, dims, nbytes, name)
            label = None
            if name[0] != ffi.NULL:
                label = ffi.string(name[0]).decode()
                lib.gt_free(name[0])
            out = np.empty(tuple(dims[j] for j in range(rank[0])), dtype=dtypes.dtype_of(dt[0]))
            if out.nbytes != nbytes[0]:
                raise GoldtraceError(f"result {i}: size mismatch ({out.nbytes} vs {nbytes[0]} bytes)")
            call(lib.gt_result_copy, handle, i, ffi.cast("void *", out.ctypes.data), out.nbytes)
            arrays.append(out)
            names.append(label)
        return arrays, names
    finally:
        lib.gt_handle_free(handle)


def roundtrip(*arrays):
    """Send arrays to Go and back; returns copies made by Go."""
    views = Views(arrays)
    out = ffi.new("uint64_t *")
    call(lib.gt_roundtrip, views.c, views.n, out)
    return take_results(out[0])[0]


def convert(array, dtype):
    """Convert a float array with goldtrace's Go conversions (one side f32 or f64)."""
    views = Views([array])
    out = ffi.new("uint64_t *")
    call(lib.gt_convert, views.c, dtypes.code_of(dtype), out)
    return take_results(out[0])[0][0]


def live_handles() -> int:
    """Number of live Go handles (for leak tests)."""
    return lib.gt_live_handles()


def _test_panic():
    """Trigger a deliberate Go panic (tests prove it becomes InternalError)."""
    call(lib.gt_internal_test_panic)
