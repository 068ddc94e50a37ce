"""Kernel objects: binding arguments, tracing specializations, launch grids,
and running on numpy arrays in the simulator."""

import functools
import inspect
import json
import sys
import threading

import numpy as np

from .. import _bridge
from ..errors import EvaluationError, InvalidArgumentError
from . import _dtypes
from . import typing as nt
from ._trace import OUTPUT, PARAM, PRIVATE_HBM, PSUM, SBUF, SHARED_HBM, TEMP, KTensor, Trace, current, is_tile
from .errors import KernelError, KernelRuntimeError, user_location


class Placeholder:
    """A tensor argument known only by shape and dtype (tracing without data)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(int(s) for s in shape), dtype

    def __repr__(self):
        return f"Placeholder({list(self.shape)}, {_dtypes.name_of(self.dtype)})"


class Traced:
    """One traced specialization: the Go kernel handle and its signature."""

    def __init__(self, handle, name, param_names, input_ids, outputs, old_style, has_collectives, grid, written):
        self.handle = handle
        self.name = name
        self.param_names = param_names  # names of the tensor parameters, in order
        self.input_ids = input_ids
        self.outputs = outputs  # list of (name, shape, dtype, param index or None)
        self.old_style = old_style
        self.has_collectives = has_collectives
        self.grid = grid
        self.written_params = written

    def __del__(self):
        try:
            _bridge.lib.gt_handle_free(self.handle)
        except Exception:
            pass

    def serialize(self):
        data = _bridge.ffi.new("void **")
        n = _bridge.ffi.new("int64_t *")
        _bridge.call(_bridge.lib.gt_kernel_serialize, self.handle, data, n)
        try:
            return bytes(_bridge.ffi.buffer(data[0], n[0]))
        finally:
            _bridge.lib.gt_free(data[0])

    def text(self):
        return kernel_text(self.handle)


def arg_of(bound, name):
    """The bound value of a traced parameter name ("a", or "args[2]" for *args)."""
    if name.endswith("]") and "[" in name:
        base, idx = name[:-1].split("[", 1)
        return bound.arguments[base][int(idx)]
    return bound.arguments[name]


def expand_args(bound):
    """(name, value) of every argument, *args expanded as name[i]."""
    out = []
    for pname, v in bound.arguments.items():
        kind = bound.signature.parameters[pname].kind
        if kind == inspect.Parameter.VAR_POSITIONAL:
            out.extend((f"{pname}[{i}]", x) for i, x in enumerate(v))
        elif kind == inspect.Parameter.VAR_KEYWORD:
            out.extend(sorted(v.items()))
        else:
            out.append((pname, v))
    return out


def kernel_text(handle):
    out = _bridge.ffi.new("char **")
    _bridge.call(_bridge.lib.gt_kernel_format, handle, out)
    try:
        return _bridge.ffi.string(out[0]).decode()
    finally:
        _bridge.lib.gt_free(out[0])


def _grid_tuple(grid):
    if grid is None:
        return ()
    if not isinstance(grid, tuple):
        grid = (grid,)
    return grid


def tensor_spec(x):
    """(shape, dtype) of a tensor-like argument, or None for a constant."""
    if isinstance(x, Placeholder):
        return x.shape, x.dtype
    if nt.is_placeholder(x):
        return x.shape, _dtypes.canonical(x.dtype)
    if isinstance(x, np.ndarray):
        return x.shape, x.dtype
    return None


def trace_kernel(func, bound, grid, name=None, options=None, spec_of=tensor_spec, onchip_returns=False):
    """Trace func with bound arguments (an inspect.BoundArguments); returns Traced."""
    from ..nki import language as nl

    name = name or callable_name(func)
    sig_grid, num_cores, core_dim = [], 1, -1
    for k, g in enumerate(_grid_tuple(grid)):
        if isinstance(g, nl.spmd_dim):
            sig_grid.append(g.size)
            if g.cores > 1:
                num_cores, core_dim = g.cores, k
        elif isinstance(g, nl.nc):
            sig_grid.append(g.n)
            num_cores, core_dim = g.n, k
        else:
            try:
                sig_grid.append(int(g))
            except (TypeError, ValueError):
                raise KernelError(f"{name}: launch grid entry {g!r} is not an integer") from None
    for g in sig_grid:
        if g <= 0:
            raise KernelError(f"{name}: launch grid {tuple(sig_grid)} has a non-positive dimension")
    tr = Trace(name, sig_grid)
    tr.num_cores, tr.core_grid_dim = num_cores, core_dim
    annotations = getattr(func, "__annotations__", {})
    call_args = {}
    inputs, param_names = [], []
    with tr:
        for pname, value in bound.arguments.items():
            param = bound.signature.parameters[pname]
            if param.kind == param.VAR_POSITIONAL:
                # *args: each tensor among them is a parameter named args[i].
                items = []
                for i, v in enumerate(value):
                    spec = spec_of(v)
                    if spec is None:
                        items.append(v)
                        continue
                    t = tr.declare(spec[0] if spec[0] else (1,), _dtypes.canonical(spec[1]), SHARED_HBM, PARAM, name=f"{pname}[{i}]")
                    inputs.append(t)
                    param_names.append(f"{pname}[{i}]")
                    items.append(t)
                call_args[pname] = tuple(items)
                continue
            if param.kind == param.VAR_KEYWORD:
                call_args[pname] = value
                continue
            spec = spec_of(value)
            if spec is None:
                call_args[pname] = value
                continue
            shape, dtype = spec
            try:
                dt = _dtypes.canonical(dtype)
            except KernelError as exc:
                raise KernelError(f"{name}: argument {pname!r}: {str(exc).split(': ', 1)[-1]}") from None
            mutable = nt.is_mutable_annotation(annotations.get(pname))
            t = tr.declare(shape if shape else (1,), dt, SHARED_HBM, PARAM, name=pname, mutable=mutable)
            inputs.append(t)
            param_names.append(pname)
            call_args[pname] = t
        args, kwargs = [], {}
        for pname, value in call_args.items():
            param = bound.signature.parameters[pname]
            if param.kind == param.VAR_POSITIONAL:
                args.extend(value)
            elif param.kind == param.VAR_KEYWORD:
                kwargs.update(value)
            elif param.kind == param.KEYWORD_ONLY:
                kwargs[pname] = value
            else:
                args.append(value)
        try:
            ret = func(*args, **kwargs)
        except Exception:
            tr.close()
            raise
    outputs = []
    old_style = ret is None
    if old_style:
        # The pre-2.21 style: outputs were passed as arguments and written with nl.store.
        for i, t in enumerate(inputs):
            if t.id in tr.written_params:
                outputs.append(t)
        if not outputs:
            tr.close()
            raise KernelError(f"{name}: the kernel returns nothing and writes none of its arguments, so it has no outputs")
    else:
        rets = list(ret) if isinstance(ret, (tuple, list)) else [ret]
        for j, r in enumerate(rets):
            if not isinstance(r, KTensor):
                tr.close()
                raise KernelError(f"{name}: return value {j} is a {type(r).__name__}; kernels return tensors allocated with nl.ndarray(..., buffer=nl.shared_hbm)")
            if ((r.memory == PRIVATE_HBM or (onchip_returns and r.memory in (SBUF, PSUM))) and r.role == TEMP
                    and all(g == 1 for g in sig_grid)):
                # A returned nl.hbm tensor (as the simulate_kernel examples
                # do), or under @nki.jit(mode="simulation") an on-chip tile (as
                # API examples run in simulation do): with one program instance
                # its final contents are the result; they are copied to a
                # shared-HBM output at the end.
                o = tr.declare(r.shape, r.dtype, SHARED_HBM, OUTPUT, name=r.name)
                tr.emit("dma", [o.full_tile()], [r.full_tile()])
                outputs.append(o)
                continue
            if r.memory != SHARED_HBM or r.role not in (OUTPUT, PARAM):
                tr.close()
                raise KernelError(
                    f"{tr.where(r.decl)}: {name}: return value {j} ({r.name}, declared here) is in {r.memory}; kernel outputs "
                    f"must be nl.shared_hbm tensors (an nl.hbm tensor, or under mode=\"simulation\" an on-chip one, can be returned "
                    f"only from a launch with one program instance)"
                )
            if r.role == PARAM and not r.mutable:
                tr.close()
                raise KernelError(f"{name}: returns parameter {r.name!r}, which is not declared nt.mutable_tensor")
            outputs.append(r)
        for tid, loc in tr.written_params.items():
            t = tr.tensors[tid]
            if not t.mutable:
                tr.close()
                raise KernelError(
                    f"{loc}: cannot update immutable parameter {t.name!r} (declare it `{t.name}: nt.mutable_tensor` and return it)"
                )
            if not any(o is t for o in outputs):
                tr.close()
                raise KernelError(f"{loc}: mutable parameter {t.name!r} is written but not returned (a mutable parameter must be returned)")
    # Old-style kernels write their output arguments: those parameters are mutable.
    handle = tr.finish(inputs, outputs, options, mutable=outputs if old_style else ())
    outs = []
    for t in outputs:
        pidx = next((i for i, x in enumerate(inputs) if x is t), None)
        outs.append((t.name, t.shape, t.dtype, pidx))
    traced = Traced(handle, name, param_names, [t.id for t in inputs], outs, old_style, tr.has_collectives, tuple(sig_grid),
                    dict(tr.written_params))
    traced.result_is_sequence = isinstance(ret, (tuple, list))
    traced.num_cores = num_cores
    return traced


def simulate(traced, arrays, stdout=True):
    """Run a traced kernel on numpy arrays; returns the output arrays."""
    views = _bridge.Views([np.asarray(a) for a in arrays], "kernel argument")
    out = _bridge.ffi.new("uint64_t *")
    printed = _bridge.ffi.new("char **")
    try:
        _bridge.call(_bridge.lib.gt_kernel_simulate, traced.handle, views.c, views.n, b"{}", out, printed)
    except InvalidArgumentError as exc:
        raise KernelError(str(exc)) from None
    except EvaluationError as exc:
        if isinstance(exc, KernelRuntimeError):
            raise
        raise KernelRuntimeError(str(exc)) from None
    finally:
        if printed[0] != _bridge.ffi.NULL:
            text = _bridge.ffi.string(printed[0]).decode("utf-8", "replace")
            _bridge.lib.gt_free(printed[0])
            if text and stdout:
                sys.stdout.write(text)
    arrays_out, _ = _bridge.take_results(out[0])
    return arrays_out


def callable_name(func):
    """A kernel function's name; a functools.partial (nki_call(partial(k,
    size=...))) is named after the function it wraps."""
    while isinstance(func, functools.partial):
        func = func.func
    return getattr(func, "__name__", None) or "kernel"


class Kernel:
    """A kernel function plus its launch grid and options. Calling it with numpy
    arrays traces (once per shape/dtype/constant set) and simulates."""

    def __init__(self, func, mode="auto", grid=None, platform_target=None, additional_compile_opt=None, **options):
        functools.update_wrapper(self, func)
        if not isinstance(self.__dict__.get("__name__"), str):
            self.__name__ = callable_name(func)
        self.func = func
        self.mode = mode
        self.grid = grid
        self.platform_target = platform_target
        self.additional_compile_opt = additional_compile_opt
        self.options = options
        self._sim_cache = {}
        self._lock = threading.Lock()

    def _clone(self, **changes):
        k = object.__new__(type(self))
        k.__dict__.update(self.__dict__)
        k.__dict__.update(changes)
        return k

    def __getitem__(self, grid):
        """kernel[g0, g1](...): launch over an SPMD grid."""
        return self._clone(grid=grid if isinstance(grid, tuple) else (grid,), _sim_cache={}, _lock=threading.Lock())

    def bind(self, args, kwargs):
        sig = inspect.signature(self.func)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise InvalidArgumentError(f"{self.__name__}: {exc}") from None
        bound.apply_defaults()
        return bound

    def __call__(self, *args, **kwargs):
        tr = current()
        if tr is not None:
            return self._inline(tr, args, kwargs)
        return self.run_numpy(args, kwargs)

    def _inline(self, tr, args, kwargs):
        if self.grid:
            raise KernelError(f"{user_location()}: kernel {self.__name__} is called from another kernel with its own launch grid {self.grid}; a nested kernel cannot carry an SPMD grid")
        return self.func(*args, **kwargs)

    def _compile_opts(self):
        opts = dict(self.options)
        if self.additional_compile_opt:
            opts["additional_compile_opt"] = self.additional_compile_opt
        if self.platform_target:
            opts["platform_target"] = self.platform_target
        opts.update(getattr(self.func, "__goldtrace_compiler_directives__", {}))
        return opts

    def specialize_numpy(self, bound):
        key = []
        for pname, v in expand_args(bound):
            spec = tensor_spec(v)
            if spec is not None:
                key.append((pname, tuple(spec[0]), str(spec[1])))
            else:
                try:
                    hash(v)
                except TypeError:
                    raise InvalidArgumentError(
                        f"{self.__name__}: argument {pname!r} of type {type(v).__name__} is not hashable, so it cannot be a compile-time constant"
                    ) from None
                key.append((pname, "const", type(v).__name__, v))
        key = tuple(key)
        with self._lock:
            hit = self._sim_cache.get(key)
        if hit is not None:
            return hit
        traced = trace_kernel(self.func, bound, self.grid, options=self._compile_opts(),
                              onchip_returns=self.mode == "simulation")
        with self._lock:
            self._sim_cache[key] = traced
        return traced

    def run_numpy(self, args, kwargs):
        bound = self.bind(args, kwargs)
        arrays_in = {}
        for pname, v in bound.arguments.items():
            if _is_torch_tensor(v):
                from ._torch_xla import torch_to_numpy

                bound.arguments[pname] = torch_to_numpy(v.detach().cpu())
        traced = self.specialize_numpy(bound)
        arrays = []
        for pname in traced.param_names:
            a = arg_of(bound, pname)
            if isinstance(a, Placeholder) or nt.is_placeholder(a):
                raise InvalidArgumentError(f"{self.__name__}: argument {pname!r} is a shape-only placeholder; pass data to run the kernel")
            arrays.append(np.asarray(a))
        outs = simulate(traced, arrays)
        if traced.old_style:
            for (oname, _, _, pidx), res in zip(traced.outputs, outs):
                dst = arg_of(bound, traced.param_names[pidx])
                np.copyto(dst, res.astype(dst.dtype, copy=False))
            return None
        return outs[0] if len(outs) == 1 and not _returns_sequence(traced) else tuple(outs)

    def trace(self, *args, **kwargs):
        """Trace without running; returns the printable IR text."""
        bound = self.bind(args, kwargs)
        return trace_kernel(self.func, bound, self.grid, options=self._compile_opts()).text()


def _returns_sequence(traced):
    return traced.result_is_sequence


def _is_torch_tensor(x):
    t = type(x)
    return t.__module__.startswith("torch") and t.__name__ == "Tensor"
