"""FrameworkKernel: a traced kernel as a framework custom-call.

dump_config(*args) binds the arguments, looks the specialization up in the
per-instance cache, and on a miss traces the kernel with shape/dtype
placeholders for framework tensors (other arguments are compile-time
constants), then assembles the KernelConfig a framework needs to emit the
custom-call: the base64-JSON backend_config (the IR inside), operand and
output names, operand->output aliases and the return types.
"""

import collections
import json
import os
import threading
import warnings

import numpy as np

from .. import _bridge
from ..errors import InvalidArgumentError, UnsupportedError
from . import _dtypes, _platform
from . import typing as nt
from ._kernel import Kernel, Placeholder, arg_of, expand_args, trace_kernel, tensor_spec, _is_torch_tensor
from .errors import KernelError

KernelConfig = collections.namedtuple(
    "KernelConfig",
    ["backend_config", "input_names", "output_names", "operand_output_aliases", "constant_values", "return_types",
     "has_collectives", "cache_key", "kernel_return", "result_is_sequence"],
)

CACHE_ATTR = "__neuron_kernel_interface_kernel_cache__"


class FrameworkKernel(Kernel):
    """A kernel a framework calls as a custom-call. Integrators implement the
    three hooks for their tensor type and call dump_config once per shape set."""

    def __init__(self, func=None, func_name=None, grid=None, enable_cache=True, cache_size=None, mode="auto", **kwargs):
        if func is None:
            raise InvalidArgumentError("FrameworkKernel needs func=")
        super().__init__(func, mode=mode, grid=grid, **kwargs)
        self.func_name = func_name or self.__name__
        self.enable_cache = enable_cache
        if cache_size is not None and int(cache_size) < 1:
            raise InvalidArgumentError(f"cache_size must be >= 1, got {cache_size}")
        self.cache_size = None if cache_size is None else int(cache_size)
        setattr(self, CACHE_ATTR, collections.OrderedDict())
        self._cache_lock = threading.RLock()
        self._evict_warned = False
        self._fast_map = {}
        self._arg_kinds = self._new_arg_kinds()

    def _new_arg_kinds(self):
        # Types are remembered as tensors or constants only when the
        # is_framework_tensor hook decides by type alone (goldtrace's own
        # hooks, or an integrator's class that says so); otherwise the fast
        # path asks the hook about every argument.
        cls = type(self)
        if cls.framework_tensors_by_type or cls.is_framework_tensor in _TYPE_BASED_HOOKS:
            return {}
        return None

    def __getitem__(self, grid):
        k = super().__getitem__(grid)
        setattr(k, CACHE_ATTR, collections.OrderedDict())
        k._cache_lock = threading.RLock()
        k._evict_warned = False
        k._fast_map = {}
        k._arg_kinds = k._new_arg_kinds()
        return k

    # ---- integrator hooks ----
    # True when is_framework_tensor's answer depends on the argument's type
    # alone; dump_config's cache hits are then cheaper.
    framework_tensors_by_type = False

    def is_framework_tensor(self, t):
        """True when t is a tensor of this framework."""
        raise NotImplementedError

    def map_framework_tensor(self, t):
        """(shape, framework dtype) of a framework tensor."""
        raise NotImplementedError

    def translate_to_neuron_dtype(self, dtype):
        """The kernel (numpy / ml_dtypes) dtype of a framework dtype."""
        return _dtypes.canonical(dtype)

    # ---- the pipeline ----
    def dump_config(self, *args, **kwargs):
        """The KernelConfig of this kernel for these arguments (cached)."""
        fast_map = self._fast_map if self.enable_cache else None
        fast = None
        if fast_map is not None:
            # The hit path is the hot one (integrators call dump_config on every
            # framework call), so the raw call is keyed without binding the
            # signature; dict.get hashes the key and an unhashable argument
            # falls through to the slow path, which names it.
            try:
                fast = _fast_key(self._arg_kinds, self._is_tensor_arg, args, kwargs)
                hit = fast_map.get(fast)
            except (TypeError, AttributeError):
                hit = fast = None
            if hit is not None:
                if self.cache_size is None:
                    return hit
                with self._cache_lock:
                    c = getattr(self, CACHE_ATTR)
                    if hit.cache_key in c:
                        c.move_to_end(hit.cache_key)
                        return hit
        cfg = self.dump_config_with_boundargs(self.bind(args, kwargs))
        if fast_map is not None:
            with self._cache_lock:
                self._learn_arg_kinds(args, kwargs)
                if fast is not None:
                    fast_map[fast] = cfg
        return cfg

    def _learn_arg_kinds(self, args, kwargs):
        # Which argument types are tensors (keyed by shape and dtype) and which
        # are constants (keyed by value), as the slow path decided. A type whose
        # objects were classified both ways (a value-dependent
        # is_framework_tensor) is marked UNKEYED and always takes the slow path.
        kinds = self._arg_kinds
        if kinds is None:
            return
        for a in (*args, *kwargs.values()):
            t = type(a)
            try:
                is_tensor = self._spec(a) is not None
            except Exception:
                kinds[t] = _UNKEYED
                continue
            if kinds.setdefault(t, is_tensor) != is_tensor:
                kinds[t] = _UNKEYED

    def _is_tensor_arg(self, a):
        try:
            return self._spec(a) is not None
        except Exception:
            return None

    @property
    def _fast_hits(self):
        return self._fast_map

    def _spec(self, v):
        if isinstance(v, Placeholder):
            return v.shape, v.dtype
        if nt.is_placeholder(v):
            return v.shape, v.dtype
        if self.is_framework_tensor(v):
            shape, dt = self.map_framework_tensor(v)
            return tuple(shape), self.translate_to_neuron_dtype(dt)
        return None

    def _platform(self):
        if self.platform_target:
            return self.platform_target, False
        return _platform.platform_target()

    def cache_key(self, bound, fallback):
        """Per argument (shape, dtype) for tensors, (type, value) for constants;
        then the grid, the compile options and platform_target_is_fallback."""
        parts = []
        for pname, v in expand_args(bound):
            spec = self._spec(v)
            if spec is not None:
                parts.append((tuple(spec[0]), _dtypes.name_of(_dtypes.canonical(spec[1]))))
                continue
            try:
                hash(v)
            except TypeError:
                raise InvalidArgumentError(
                    f"{self.func_name}: argument {pname!r} ({type(v).__name__}) is not hashable; compile-time constant "
                    "arguments must be hashable (pass a tuple instead of a list, or a tensor)"
                ) from None
            parts.append((type(v), v))
        opts = tuple(sorted((k, str(v)) for k, v in self._compile_opts().items()))
        return (tuple(parts), _grid_key(self.grid), opts, bool(fallback))

    def dump_config_with_boundargs(self, bound):
        target, fallback = self._platform()
        key = self.cache_key(bound, fallback)
        cache = getattr(self, CACHE_ATTR)
        if self.enable_cache:
            with self._cache_lock:
                hit = cache.get(key)
                if hit is not None:
                    cache.move_to_end(key)
                    return hit
        with self._cache_lock:
            if self.enable_cache and key in cache:
                return cache[key]
            mapped, constants = self.map_args(bound)
            self._check_cores(target)
            traced = self.specialize_and_call(mapped)
            return_types = self.translate_return_types(traced)
            aliases = self.generate_operand_output_aliases(traced)
            backend_config = self.encode_backend_config(traced, target, fallback, constants)
            result = self.assemble_result(traced, backend_config, aliases, constants, return_types, key)
            if self.enable_cache:
                cache[key] = result
                if self.cache_size is not None and len(cache) > self.cache_size:
                    if not self._evict_warned:
                        self._evict_warned = True
                        warnings.warn(
                            f"kernel {self.func_name}: specialization cache is full ({self.cache_size} entries); "
                            "evicting the least recently used (raise cache_size= to keep more)", UserWarning, stacklevel=3)
                    old_key, old = cache.popitem(last=False)
                    for fk in [fk for fk, v in self._fast_hits.items() if v is old]:
                        del self._fast_hits[fk]
            self._traced_by_config[backend_config] = traced
            return result

    @property
    def _traced_by_config(self):
        d = self.__dict__.get("_traced_map")
        if d is None:
            d = self.__dict__["_traced_map"] = {}
        return d

    def map_args(self, bound):
        """Framework tensors become shape/dtype placeholders; everything else is a compile-time constant."""
        import inspect

        mapped = inspect.BoundArguments(bound.signature, collections.OrderedDict(bound.arguments))
        constants = {}
        for pname, v in bound.arguments.items():
            kind = bound.signature.parameters[pname].kind
            if kind == inspect.Parameter.VAR_POSITIONAL:
                items = []
                for i, x in enumerate(v):
                    spec = self._spec(x)
                    items.append(Placeholder(spec[0], spec[1]) if spec is not None else x)
                    if spec is None:
                        constants[f"{pname}[{i}]"] = x
                mapped.arguments[pname] = tuple(items)
                continue
            spec = self._spec(v)
            if spec is not None:
                mapped.arguments[pname] = Placeholder(spec[0], spec[1])
            else:
                constants[pname] = v
        return mapped, constants

    def _check_cores(self, target):
        from . import language as nl

        for g in _grid_tuple(self.grid):
            cores = g.n if isinstance(g, nl.nc) else (g.cores if isinstance(g, nl.spmd_dim) else 1)
            if cores > 1 and target not in _platform.MULTI_CORE_TARGETS:
                raise KernelError(
                    f"{self.func_name}: the launch grid spans {cores} physical cores (nl.nc), which platform target "
                    f"{target!r} does not have (multi-core targets: {', '.join(sorted(_platform.MULTI_CORE_TARGETS))}; "
                    "set NEURON_PLATFORM_TARGET_OVERRIDE)"
                )

    def specialize_and_call(self, mapped):
        """Trace the kernel on placeholders; returns the traced specialization."""
        return trace_kernel(self.func, mapped, self.grid, name=self.func_name, options=self._compile_opts(),
                            spec_of=tensor_spec, onchip_returns=self.mode == "simulation")

    def translate_return_types(self, traced):
        return tuple((tuple(shape), _dtypes.storage(dt)) for _, shape, dt, _ in traced.outputs)

    def generate_operand_output_aliases(self, traced):
        return {pidx: j for j, (_, _, _, pidx) in enumerate(traced.outputs) if pidx is not None}

    def encode_backend_config(self, traced, target, fallback, constants):
        cvals = []
        for name, v in constants.items():
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating, np.ndarray)):
                continue
            a = np.asarray(v)
            if a.dtype == np.float64:
                a = a.astype(np.float32)
            elif a.dtype == np.int64:
                if np.all((a >= -2**31) & (a < 2**31)):
                    a = a.astype(np.int32)
            import base64

            cvals.append({"name": name, "dtype": a.dtype.name, "shape": list(a.shape),
                          "data": base64.b64encode(np.ascontiguousarray(a).tobytes()).decode()})
        extras = {
            "func_name": self.func_name, "platform_target": target, "platform_target_is_fallback": bool(fallback),
            "opts": {k: str(v) for k, v in self._compile_opts().items()}, "has_collectives": bool(traced.has_collectives),
            "constant_values": cvals, "kernel_return": not traced.old_style,
            "result_is_sequence": bool(traced.result_is_sequence),
        }
        out = _bridge.ffi.new("char **")
        _bridge.call(_bridge.lib.gt_kernel_config_encode, traced.handle, json.dumps(extras).encode(), out)
        try:
            return _bridge.ffi.string(out[0]).decode()
        finally:
            _bridge.lib.gt_free(out[0])

    def assemble_result(self, traced, backend_config, aliases, constants, return_types, key):
        return KernelConfig(
            backend_config=backend_config,
            input_names=tuple(traced.param_names),
            output_names=tuple(name for name, _, _, _ in traced.outputs),
            operand_output_aliases=dict(aliases),
            constant_values=dict(constants),
            return_types=return_types,
            has_collectives=bool(traced.has_collectives),
            cache_key=key,
            kernel_return=not traced.old_style,
            result_is_sequence=bool(traced.result_is_sequence),
        )


# The platform-target override is part of every key. os.environ.get encodes the
# name on each call (microseconds); its bytes mapping is read directly when present.
_ENV_BYTES = getattr(os.environ, "_data", None)
_OVERRIDE = "NEURON_PLATFORM_TARGET_OVERRIDE"
_OVERRIDE_B = os.fsencode(_OVERRIDE)


if _ENV_BYTES is not None and all(type(k) is bytes for k in list(_ENV_BYTES)[:1]):
    def _override():
        return _ENV_BYTES.get(_OVERRIDE_B)
else:  # not CPython's POSIX os.environ
    def _override():
        return os.environ.get(_OVERRIDE)


_UNKEYED = "unkeyed"


def _fast_key(kinds, is_tensor, args, kwargs):
    """The raw call as a flat tuple: the platform-target override, then per
    argument (shape, dtype) for tensors and (type, value) for constants (so
    that 1, 1.0 and True stay apart, and np.float32(2) is not np.float32(3)).
    Whether an argument is a tensor comes from kinds (by type, learnt on the
    slow path; a type not seen there yet gives None) or, when kinds is None,
    from is_tensor. The first of each pair is a tuple for a tensor and a type
    for a constant, so the two kinds never collide. Not hashed here: an
    unhashable value makes the caller's lookup fail."""
    if kinds is not None and not kwargs and len(args) == 1:  # the common call
        a = args[0]
        kind = kinds.get(type(a))
        if kind is True:
            return (_override(), a.shape, a.dtype)
        if kind is False:
            return (_override(), type(a), a)
        return None
    key = [_override()]
    push = key.append
    names = sorted(kwargs) if kwargs else ()
    for i, a in enumerate((*args, *[kwargs[n] for n in names])):
        if i >= len(args):
            push(names[i - len(args)])
        kind = kinds.get(type(a)) if kinds is not None else is_tensor(a)
        if kind is True:
            push(a.shape)
            push(a.dtype)
        elif kind is False:
            push(type(a))
            push(a)
        else:
            return None
    return tuple(key)


def _grid_tuple(grid):
    if grid is None:
        return ()
    return grid if isinstance(grid, tuple) else (grid,)


def _grid_key(grid):
    out = []
    for g in _grid_tuple(grid):
        if hasattr(g, "parts"):
            out.append(("spmd", g.size, g.cores))
        elif hasattr(g, "n") and not isinstance(g, int):
            out.append(("nc", g.n))
        else:
            out.append(int(g))
    return tuple(out)


# ---------------------------------------------------------------------------
# framework detection


def _is_jax(x):
    m = type(x).__module__
    if not (m.startswith("jax") or m.startswith("jaxlib")):
        return False
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _is_torch_xla(x):
    if not _is_torch_tensor(x):
        return False
    return getattr(getattr(x, "device", None), "type", "") == "xla"


class NumpyKernel(FrameworkKernel):
    """numpy arrays are the tensors (the simulator's path)."""

    def is_framework_tensor(self, t):
        return isinstance(t, np.ndarray)

    def map_framework_tensor(self, t):
        return t.shape, t.dtype


class JaxKernel(FrameworkKernel):
    """JAX arrays, tracers and jax.ShapeDtypeStruct are the tensors."""

    def is_framework_tensor(self, t):
        return _is_jax(t) or isinstance(t, np.ndarray)

    def map_framework_tensor(self, t):
        return tuple(t.shape), np.dtype(t.dtype)

    def call_jax(self, args, kwargs):
        from . import _jax

        return _jax.call(self, args, kwargs)


class UnifiedKernel(JaxKernel):
    """What @nki.jit returns: dispatches on the argument types — numpy → the
    simulator, JAX → the JAX custom-call, torch XLA tensors → the torch-xla
    custom-call, CPU torch tensors → the simulator (torch in, torch out)."""

    def is_framework_tensor(self, t):
        return isinstance(t, np.ndarray) or _is_jax(t) or _is_torch_tensor(t)

    def map_framework_tensor(self, t):
        if _is_torch_tensor(t):
            from . import _torch_xla

            return _torch_xla.map_torch_tensor(t)
        return tuple(t.shape), np.dtype(t.dtype)

    def __call__(self, *args, **kwargs):
        from ._trace import current

        tr = current()
        if tr is not None:
            return self._inline(tr, args, kwargs)
        vals = list(args) + list(kwargs.values())
        if any(_is_jax(v) for v in vals):
            return self.call_jax(args, kwargs)
        if any(_is_torch_xla(v) for v in vals):
            from . import _torch_xla

            return _torch_xla.run_torch_xla(self, args, kwargs)
        if any(_is_torch_tensor(v) for v in vals):
            from . import _torch_xla

            return _torch_xla.run_torch_cpu(self, args, kwargs)
        return self.run_numpy(args, kwargs)


def decode_backend_config(s):
    """The dict of a backend_config string, its IR decoded: the 14 keys, with
    serialize_ir_string replaced by the IR's printable listing. A newer or
    foreign config raises UnsupportedError."""
    if isinstance(s, bytes):
        s = s.decode()
    out = _bridge.ffi.new("char **")
    handle = _bridge.ffi.new("uint64_t *")
    _bridge.call(_bridge.lib.gt_kernel_config_decode, s.encode(), out, handle)
    try:
        decoded = json.loads(_bridge.ffi.string(out[0]).decode())
    finally:
        _bridge.lib.gt_free(out[0])
        _bridge.lib.gt_handle_free(handle[0])
    keys = dict(decoded["keys"])
    keys["serialize_ir_string"] = decoded["ir_text"]
    return keys


def simulate_backend_config(s, *arrays):
    """Rebuild the kernel inside a backend_config and run it on numpy arrays."""
    from ._kernel import simulate

    if isinstance(s, bytes):
        s = s.decode()
    out = _bridge.ffi.new("char **")
    handle = _bridge.ffi.new("uint64_t *")
    _bridge.call(_bridge.lib.gt_kernel_config_decode, s.encode(), out, handle)
    _bridge.lib.gt_free(out[0])

    class _H:
        pass

    h = _H()
    h.handle = handle[0]
    try:
        return simulate(h, arrays)
    finally:
        _bridge.lib.gt_handle_free(handle[0])


# goldtrace's own hooks decide by type (ndarray, JAX array or tracer, torch
# tensor), so their kernels key cache hits by type.
_TYPE_BASED_HOOKS = {NumpyKernel.is_framework_tensor, JaxKernel.is_framework_tensor,
                     UnifiedKernel.is_framework_tensor}
