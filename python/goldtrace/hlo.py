"""Loading HLO modules: text, serialized HloModuleProto, HloSnapshot, or a JAX
`Lowered` object, into the Go module model."""

import json
import os

import numpy as np

from . import _bridge, dtypes
from ._bridge import ffi, lib


class Module:
    """A parsed and verified HLO module living in Go. Free it with `close()` or
    let the garbage collector do it."""

    def __init__(self, handle):
        self._handle = handle
        info = self._info()
        self.name = info["name"]
        self.kind = info["kind"]
        self.parameters = [
            Parameter(p["name"], tuple(p["shape"]) if p["shape"] is not None else None, _dtype(p["dtype"]))
            for p in info["parameters"]
        ]
        self.results = [Result(tuple(r["shape"]), _dtype(r["dtype"])) for r in info["results"]]
        self.num_partitions = info.get("num_partitions", 1)
        self.replica_count = info.get("replica_count", 1)

    def _info(self):
        out = ffi.new("char **")
        _bridge.call(lib.gt_hlo_info, self._handle, out)
        try:
            return json.loads(ffi.string(out[0]).decode())
        finally:
            lib.gt_free(out[0])

    @property
    def handle(self):
        if not self._handle:
            raise ValueError("module is closed")
        return self._handle

    @property
    def text(self) -> str:
        """Canonical HLO text of the module."""
        out = ffi.new("char **")
        _bridge.call(lib.gt_hlo_text, self.handle, out)
        try:
            return ffi.string(out[0]).decode()
        finally:
            lib.gt_free(out[0])

    def close(self):
        if self._handle:
            lib.gt_handle_free(self._handle)
            self._handle = 0

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        params = ", ".join(f"{p.dtype}{list(p.shape) if p.shape is not None else ''}" for p in self.parameters)
        results = ", ".join(f"{r.dtype}{list(r.shape)}" for r in self.results)
        return f"<goldtrace.hlo.Module {self.name} ({params}) -> ({results})>"


class Parameter:
    def __init__(self, name, shape, dtype):
        self.name, self.shape, self.dtype = name, shape, dtype

    def __repr__(self):
        return f"Parameter({self.name!r}, {self.shape}, {self.dtype})"


class Result:
    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype

    def __repr__(self):
        return f"Result({self.shape}, {self.dtype})"


def _dtype(name):
    if name in ("token", "tuple", "opaque"):
        return name
    return dtypes.from_hlo_name(name)


def _is_lowered(obj):
    return hasattr(obj, "compiler_ir") and hasattr(obj, "as_text")


def load(module, kind: str = "") -> Module:
    """Load an HLO module.

    `module` is HLO text (str), serialized HloModuleProto or HloSnapshot (bytes),
    a path (str or os.PathLike) to any of those, a JAX `Lowered` (from
    `jax.jit(f).lower(...)`), a JAX `Compiled` (its XLA:CPU-optimized module,
    from `.compile()`), or an already loaded `Module`. `kind` forces
    "text", "proto" or "snapshot"; by default it is detected.
    """
    if isinstance(module, Module):
        return module
    path, data = ffi.NULL, b""
    if _is_lowered(module):
        data = module.compiler_ir("hlo").as_serialized_hlo_module_proto()
    elif hasattr(module, "as_text") and hasattr(module, "input_shardings"):  # jax Compiled
        data = module.as_text().encode()
    elif isinstance(module, (bytes, bytearray, memoryview)):
        data = bytes(module)
    elif isinstance(module, str) and ("HloModule" in module[:4096] or "\n" in module):
        data = module.encode()
    elif isinstance(module, (str, os.PathLike)):
        path = os.fspath(module).encode()
    else:
        raise TypeError(f"cannot load an HLO module from {type(module).__name__}")
    out = ffi.new("uint64_t *")
    _bridge.call(lib.gt_hlo_load, path, data, len(data), kind.encode(), out)
    return Module(out[0])


def equal(a, b, metadata=True):
    """Structural equality of two modules (anything `load` accepts), ignoring
    instruction ids and computation order, and with `metadata=False` also the
    instructions' metadata (op names, source lines). Returns
    (equal, first_difference)."""
    ma, mb = load(a), load(b)
    flag = ffi.new("int32_t *")
    where = ffi.new("char **")
    _bridge.call(lib.gt_hlo_equal, ma.handle, mb.handle, int(bool(metadata)), flag, where)
    try:
        return bool(flag[0]), ffi.string(where[0]).decode()
    finally:
        lib.gt_free(where[0])
