"""goldtrace.nki: NKI-style kernels in Python, traced into goldtrace's kernel IR
and run by its simulator on any CPU (and, through FrameworkKernel, inside JAX
and torch-xla graphs and goldens).

    from goldtrace import nki
    import goldtrace.nki.language as nl

    @nki.jit
    def add(a, b):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(a) + nl.load(b))
        return out

    add(x, y)            # numpy in, numpy out (the simulator)
"""

import time as _time

import numpy as _np

from . import errors, language, isa, typing, compiler, compat, collectives  # noqa: F401
from ._kernel import Kernel, Placeholder, simulate as _simulate
from .errors import KernelError, KernelRuntimeError, KernelUnsupportedError, SymbolicValueError

__all__ = ["jit", "trace", "baremetal", "simulate_kernel", "benchmark", "profile", "language", "isa", "typing",
           "compiler", "compat", "collectives", "Kernel", "KernelError", "KernelRuntimeError", "KernelUnsupportedError",
           "SymbolicValueError"]


def _kernel_class():
    try:
        from ._framework import UnifiedKernel

        return UnifiedKernel
    except ImportError:
        return Kernel


def jit(func=None, mode="auto", **kwargs):
    """Make a kernel. Called with numpy arrays it runs in the simulator; from
    another kernel it is inlined; with JAX or torch-xla tensors it becomes a
    custom-call. Accepts the original's keywords (mode=, platform_target=,
    additional_compile_opt=, grid=)."""
    if func is None:
        return lambda f: jit(f, mode=mode, **kwargs)
    if isinstance(func, Kernel):
        return func
    return _kernel_class()(func, mode=mode, **kwargs)


def trace(func=None, **kwargs):
    """A kernel meant to be called from other kernels (inlined into the caller)."""
    return jit(func, mode="trace", **kwargs)


def baremetal(kernel=None, **kwargs):
    """Run on numpy arrays (here: the simulator). Options of the original
    (save_neff_name, save_trace_name, artifacts_dir, additional_compile_opt) are
    accepted; nothing is compiled for a device."""
    if kernel is None:
        return lambda k: baremetal(k, **kwargs)
    k = jit(kernel)
    return k._clone(mode="baremetal")


def simulate_kernel(kernel, *args, **kwargs):
    """Run a kernel (or `baremetal(k)[grid]`) on numpy arrays in the simulator;
    nl.device_print prints. Returns the kernel's outputs as numpy arrays."""
    k = kernel if isinstance(kernel, Kernel) else jit(kernel)
    return k.run_numpy(args, kwargs)


class _Latency:
    def __init__(self, samples_us):
        self._s = _np.asarray(samples_us, dtype=_np.float64)

    def get_latency_percentile(self, p):
        """Wall-clock simulator latency percentile p (µs) on this CPU."""
        return float(_np.percentile(self._s, p))


class _BenchmarkResult:
    def __init__(self, samples_us):
        self.nc_latency = _Latency(samples_us)


def _placeholder_arrays(kernel, args, kwargs):
    from . import typing as nt

    def real(x):
        if nt.is_placeholder(x):
            dt = _np.dtype(language._dtypes.storage(language._dtypes.canonical(x.dtype)))
            return _np.zeros(x.shape, dt)
        return x

    return [real(a) for a in args], {k: real(v) for k, v in kwargs.items()}


def benchmark(kernel=None, warmup=10, iters=100, save_neff_name=None, save_trace_name=None, additional_compile_opt=None, **kw):
    """Time the kernel in the simulator. `k.benchmark_result.nc_latency` holds
    wall-clock simulator latencies on this CPU (µs) — not device latency."""
    if kernel is None:
        return lambda k: benchmark(k, warmup=warmup, iters=iters, **kw)
    base = jit(kernel)

    class _Bench(type(base)):
        def __call__(self, *args, **kwargs):
            args, kwargs = _placeholder_arrays(self, args, kwargs)
            out = None
            for _ in range(warmup):
                out = self.run_numpy(args, kwargs)
            samples = []
            for _ in range(iters):
                t0 = _time.perf_counter()
                out = self.run_numpy(args, kwargs)
                samples.append((_time.perf_counter() - t0) * 1e6)
            self.benchmark_result = _BenchmarkResult(samples)
            return out

    b = base._clone()
    b.__class__ = _Bench
    return b


def profile(func=None, working_directory=None, save_neff_name="file.neff", save_trace_name="profile.ntff",
            additional_compile_opt=None, overwrite=False, profile_nth=1, **kw):
    """Run the kernel once in the simulator and write `<working_directory>/<save_trace_name>.json`
    with the wall-clock time and the kernel IR (no device trace exists on a CPU)."""
    if func is None:
        return lambda f: profile(f, working_directory=working_directory, save_trace_name=save_trace_name, overwrite=overwrite)
    import json as _json
    import os as _os

    if not working_directory or not _os.path.isabs(working_directory):
        raise KernelError("profile: working_directory must be an absolute path")
    base = jit(func)

    class _Prof(type(base)):
        def __call__(self, *args, **kwargs):
            args, kwargs = _placeholder_arrays(self, args, kwargs)
            _os.makedirs(working_directory, exist_ok=True)
            path = _os.path.join(working_directory, save_trace_name + ".json")
            if _os.path.exists(path) and not overwrite:
                raise KernelError(f"profile: {path} exists (pass overwrite=True)")
            t0 = _time.perf_counter()
            out = self.run_numpy(args, kwargs)
            dt = _time.perf_counter() - t0
            with open(path, "w") as f:
                _json.dump({"kernel": self.func.__name__, "simulator_seconds": dt, "ir": self.trace(*args, **kwargs)}, f)
            return out

    p = base._clone()
    p.__class__ = _Prof
    return p


from ._framework import (  # noqa: E402
    FrameworkKernel, JaxKernel, KernelConfig, NumpyKernel, UnifiedKernel, decode_backend_config, simulate_backend_config,
)
from ._jax import lowering  # noqa: E402
from ._torch_xla import TorchXlaKernel  # noqa: E402  (imports torch only when used)

__all__ += ["FrameworkKernel", "JaxKernel", "KernelConfig", "NumpyKernel", "UnifiedKernel", "decode_backend_config",
            "simulate_backend_config", "lowering", "TorchXlaKernel"]
