"""The CPU side of kernels inside ``jax.jit``: registers libgoldtrace's typed-FFI
handler (``gt_xla_ffi_nki_kernel``, capi/xla_ffi.c) with XLA:CPU as the
custom-call target ``goldtrace_nki_kernel``.

A lowering emits the call as a typed-FFI custom-call (``api_version=4``) whose
string attribute ``kernel`` is the kernel's base64 backend_config::

    jax.ffi.ffi_call(TARGET, out_shapes)(x, y, kernel=config)

The handler decodes the config (once per distinct config string), runs the
kernel in goldtrace's simulator on XLA's buffers and writes the results.
Operands are the kernel's parameters in order (optionally followed by its
constant_values); results are its outputs in order.
"""

import ctypes
import os
import threading

from ..errors import GoldtraceError

TARGET = "goldtrace_nki_kernel"
_SYMBOL = "gt_xla_ffi_nki_kernel"

_lock = threading.Lock()
_registered = False
_lib = None  # keeps the ctypes handle (the library is never unloaded anyway)


def library_path():
    """The libgoldtrace.so the cffi extension goldtrace._native links (it sits
    next to the extension, found through an $ORIGIN rpath)."""
    from .. import _native

    path = os.path.join(os.path.dirname(os.path.abspath(_native.__file__)), "libgoldtrace.so")
    if not os.path.exists(path):
        raise GoldtraceError(f"libgoldtrace.so is not next to goldtrace._native (looked for {path}); reinstall goldtrace")
    return path


def handler():
    """The handler as a ctypes function pointer into the already-loaded
    libgoldtrace.so (dlopen of the same file returns the loaded library, so
    the Go runtime is not started twice)."""
    global _lib
    if _lib is None:
        _lib = ctypes.CDLL(library_path())
    try:
        return getattr(_lib, _SYMBOL)
    except AttributeError:
        raise GoldtraceError(f"{library_path()} does not export {_SYMBOL}; rebuild goldtrace") from None


def ensure_registered():
    """Register TARGET for XLA:CPU (typed FFI, registration api_version=1).
    Idempotent and thread-safe; returns TARGET. jax defers the registration
    until its CPU client exists, so errors in the handshake surface then."""
    global _registered
    if _registered:
        return TARGET
    with _lock:
        if not _registered:
            import jax

            jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(handler()), platform="cpu", api_version=1)
            _registered = True
    return TARGET
