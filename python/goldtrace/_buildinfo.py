"""goldtrace.build_info(): how the native library was built and which vector
code it chose on this CPU."""

import json

from . import _bridge
from ._bridge import ffi, lib


def build_info() -> dict:
    """Describe the loaded libgoldtrace.

    Keys: go_version, goos, goarch, build_tags (``-tags`` plus
    ``goexperiment.<name>`` for each experiment), goexperiment, goamd64,
    simd_experiment (built with GOEXPERIMENT=simd on amd64), simd_level
    (``"avx512"``, ``"avx2"`` or ``"portable"``, chosen at start-up from the
    CPU), gemm_kernel, gemm_on_blas, vector_math, rsqrt_matches_xla (f32
    rsqrt is XLA:CPU's estimate plus Newton step, bit for bit), host_libm
    (the C library called for the functions XLA:CPU hands to libm: sin, cos,
    tan, cbrt, pow, atan2, f64 log and erf; "none (Go math)" where the build
    cannot reach it, and those then agree within a few ulp),
    cpu_features (from CPUID, OS support checked), cpu_model, num_cpu.
    """
    out = ffi.new("char **")
    _bridge.call(lib.gt_build_info, out)
    try:
        return json.loads(ffi.string(out[0]).decode())
    finally:
        lib.gt_free(out[0])
