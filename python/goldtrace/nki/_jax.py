"""The JAX bridge: a kernel called with JAX arrays binds a primitive whose
abstract evaluation comes from dump_config.

Lowering: the Neuron form is a `stablehlo.custom_call @AwsNeuronCustomNativeKernel`
carrying the base64 backend_config, the operand->output aliases and the op
name `xla___op_NkiKernelCallImpl` — what a Neuron compiler consumes. On CPU, by
default, the kernel lowers instead to a typed-FFI custom-call into libgoldtrace
(target goldtrace_nki_kernel, attribute `kernel` = the backend_config), so
`jax.jit` on CPU runs it in the simulator. GOLDTRACE_KERNEL_LOWERING=neuron, or
`with goldtrace.nki.lowering("neuron"):`, selects the Neuron form on CPU too
(for export).
"""

import contextlib
import functools
import os
import threading

import numpy as np

from .errors import KernelError

NEURON_TARGET = "AwsNeuronCustomNativeKernel"
OP_NAME = "xla___op_NkiKernelCallImpl"
_API_STATUS_RETURNING = 2

_state = threading.local()
_lock = threading.Lock()
_prim = None
# Configs by id: primitive params must be hashable and compare by value; the
# config string itself would do, but an id keeps jaxpr printing short.
_configs = {}
_config_ids = {}


def lowering_mode():
    """'cpu' (typed FFI into libgoldtrace) or 'neuron' (AwsNeuronCustomNativeKernel)."""
    mode = getattr(_state, "mode", None)
    if mode is None:
        mode = os.environ.get("GOLDTRACE_KERNEL_LOWERING", "cpu").strip().lower() or "cpu"
    if mode not in ("cpu", "neuron"):
        raise KernelError(f"GOLDTRACE_KERNEL_LOWERING must be 'cpu' or 'neuron', got {mode!r}")
    return mode


@contextlib.contextmanager
def lowering(mode):
    """Select the kernel lowering ('cpu' or 'neuron') for the block (this thread)."""
    if mode not in ("cpu", "neuron"):
        raise KernelError(f"lowering must be 'cpu' or 'neuron', got {mode!r}")
    old = getattr(_state, "mode", None)
    changed = mode != lowering_mode()
    _state.mode = mode
    if changed:
        _clear_jax_caches()
    try:
        yield
    finally:
        _state.mode = old
        if changed:
            _clear_jax_caches()


def _clear_jax_caches():
    # jax caches lowerings per traced function; a kernel lowers differently per
    # mode, so a mode switch must not reuse a lowering made in the other mode.
    import sys

    if "jax" in sys.modules:
        sys.modules["jax"].clear_caches()


def _aval_type(mlir, ctx, aval):
    # jax 0.10 takes the module context first; older releases only the aval.
    try:
        return mlir.aval_to_ir_type(ctx.module_context, aval)
    except TypeError:
        return mlir.aval_to_ir_type(aval)


def _config_id(cfg):
    with _lock:
        i = _config_ids.get(cfg.backend_config)
        if i is None:
            i = len(_configs) + 1
            _configs[i] = cfg
            _config_ids[cfg.backend_config] = i
        return i


def _primitive():
    global _prim
    if _prim is not None:
        return _prim
    with _lock:
        if _prim is not None:
            return _prim
        import jax
        from jax.extend.core import Primitive
        from jax.interpreters import ad, batching, mlir, xla

        p = Primitive("nki_call")
        p.multiple_results = True
        p.def_impl(functools.partial(xla.apply_primitive, p))

        def abstract_eval(*avals, config_id):
            cfg = _configs[config_id]
            return [jax.core.ShapedArray(shape, dtype) for shape, dtype in cfg.return_types]

        p.def_abstract_eval(abstract_eval)

        def neuron_rule(ctx, *operands, config_id):
            from jax._src.interpreters import mlir as _mlir
            from jax._src.lib.mlir import ir

            cfg = _configs[config_id]
            result_types = [_aval_type(_mlir, ctx, a) for a in ctx.avals_out]
            with ir.Location.name(OP_NAME):
                op = _mlir.custom_call(
                    NEURON_TARGET, result_types=result_types, operands=list(operands),
                    backend_config=cfg.backend_config, api_version=_API_STATUS_RETURNING,
                    operand_output_aliases=dict(cfg.operand_output_aliases) or None,
                    has_side_effect=bool(cfg.has_collectives),
                )
            return op.results

        def cpu_rule(ctx, *operands, config_id):
            # The mode is read when lowering (not traced into the jaxpr), so one
            # traced function lowers either way; lowering is not cached for it.
            if lowering_mode() == "neuron":
                return neuron_rule(ctx, *operands, config_id=config_id)
            from . import _jax_ffi

            _jax_ffi.ensure_registered()
            cfg = _configs[config_id]
            rule = jax.ffi.ffi_lowering(_jax_ffi.TARGET, operand_output_aliases=dict(cfg.operand_output_aliases) or None)
            return rule(ctx, *operands, kernel=cfg.backend_config)

        mlir.register_lowering(p, neuron_rule, cacheable=False)
        mlir.register_lowering(p, cpu_rule, platform="cpu", cacheable=False)

        def jvp(primals, tangents, **params):
            raise KernelError(
                "jax.grad / jvp through an NKI kernel is not defined: the kernel has no derivative rule. "
                "Wrap the kernel call in jax.custom_vjp and give its backward pass"
            )

        ad.primitive_jvps[p] = jvp

        def batch(args, dims, *, config_id):
            # Sequential vmap: one kernel call per batch element, stacked.
            import jax.numpy as jnp

            size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
            outs = []
            for i in range(size):
                sl = [a if d is None else jnp.take(a, i, axis=d) for a, d in zip(args, dims)]
                outs.append(p.bind(*sl, config_id=config_id))
            stacked = [jnp.stack([o[j] for o in outs]) for j in range(len(outs[0]))]
            return stacked, [0] * len(stacked)

        batching.primitive_batchers[p] = batch
        _prim = p
        return p


def call(kernel, args, kwargs):
    """Call kernel on JAX arrays (inside or outside jax.jit)."""
    import jax.numpy as jnp

    bound = kernel.bind(args, kwargs)
    cfg = kernel.dump_config_with_boundargs(bound)
    operands = []
    from ._kernel import arg_of

    for name in cfg.input_names:
        v = arg_of(bound, name)
        operands.append(jnp.asarray(v))
    outs = _primitive().bind(*operands, config_id=_config_id(cfg))
    if not cfg.kernel_return:
        # Old style: the written arguments come back, in order.
        return tuple(outs) if len(outs) != 1 else outs[0]
    if cfg.result_is_sequence:
        return tuple(outs)
    return outs[0]
