"""goldtrace.golden: the reference outputs XLA:CPU would compute for an HLO module."""

import json

import numpy as np

from . import _bridge, hlo
from ._bridge import ffi, lib


class Goldens(list):
    """The output arrays (leaves of the result tuple, depth-first). With
    `save_intermediates=True`, `.intermediates` maps instruction names to values
    (prefixed `device<d>/` when several devices ran). With several emulated
    devices the list holds device 0's outputs, then device 1's, ...; `.per_device`
    groups them."""

    intermediates: dict
    per_device: list


def golden(module, *inputs, upcast_fp32=False, save_intermediates=False, fp8e4m3fn_as_e4m3=False,
           unsafe_dtype_cast=False, seed=0, verbose=0, output_dir=None, emulate_devices=0, spmd=False,
           xla_compat=None):
    """Compute the goldens of `module` on `inputs`.

    module: HLO text, HloModuleProto/HloSnapshot bytes, a path, a JAX `Lowered`,
        or a `goldtrace.hlo.Module`.
    inputs: one numpy array (any XLA dtype, ml_dtypes included) per entry
        parameter. With none, inputs are synthesized deterministically from the
        parameter shapes (snapshot modules use their recorded arguments).
    upcast_fp32: compute every low-precision float in f32 (the CLI's -U).
    fp8e4m3fn_as_e4m3: treat f8e4m3fn as f8e4m3 (-F). unsafe_dtype_cast: cast
        inputs of another dtype to the parameter's dtype instead of failing (-u).
    output_dir: also write value_output<i>.npy (and intermediates) there, atomically.
    emulate_devices: run this many devices (-1: all replica_count x num_partitions
        the module declares); collectives exchange data between them. Inputs are
        either one set shared by every device or one set per device, concatenated.
    spmd: global inputs in, global outputs out (-S) for a sharded module JAX
        lowered but XLA has not partitioned: shard_map regions (Shardy or
        GSPMD) run once per device on each device's block, their results
        assembled by their output shardings. A module XLA partitioned runs per
        device with emulate_devices instead.
    xla_compat: "0.10" follows the XLA:CPU of JAX 0.10 where it differs from the
        newest (--xla-compat; see docs/xla-cpu-semantics.md); None, the newest.
    """
    mod = hlo.load(module)
    views = _bridge.Views(inputs, what="input")
    opts = json.dumps({
        "upcast": bool(upcast_fp32),
        "fp8e4m3fn_as_e4m3": bool(fp8e4m3fn_as_e4m3),
        "unsafe_dtype_cast": bool(unsafe_dtype_cast),
        "save_intermediates": bool(save_intermediates),
        "synthesize": len(inputs) == 0,
        "seed": int(seed),
        "verbose": int(verbose),
        "output_dir": "" if output_dir is None else str(output_dir),
        "emulate_devices": int(emulate_devices),
        "spmd": bool(spmd),
        "xla_compat": "" if xla_compat is None else str(xla_compat),
    }).encode()
    out = ffi.new("uint64_t *")
    _bridge.call(lib.gt_golden, mod.handle, views.c, views.n, opts, out)
    arrays, names = _bridge.take_results(out[0])
    result = Goldens(a for a, n in zip(arrays, names) if n is None)
    result.intermediates = {n: a for a, n in zip(arrays, names) if n is not None}
    per = len(mod.results) or 1
    result.per_device = [list(result[i:i + per]) for i in range(0, len(result), per)]
    return result
