"""goldtrace.nki.compiler: compiler directives and the allocation API.

The directives change how the real compiler schedules a kernel, never what it
computes, so here they only record themselves on the kernel. Allocators place
on-chip tensors in physical memory; the simulator then models SBUF/PSUM as
per-partition bytes so overlapping placements alias as on the device."""

import numpy as np

from ._trace import PSUM, SBUF, Buffer
from . import _dtypes


def _directive(name):
    def deco(func=None, **kwargs):
        def mark(f):
            opts = dict(getattr(f, "__goldtrace_compiler_directives__", {}))
            opts[name] = True
            try:
                f.__goldtrace_compiler_directives__ = opts
            except AttributeError:
                pass
            return f

        return mark(func) if callable(func) else mark

    deco.__name__ = name
    deco.__doc__ = f"Compiler directive `{name}` (scheduling only; recorded, no effect on results)."
    return deco


skip_middle_end_transformations = _directive("skip_middle_end_transformations")
no_reorder = _directive("no_reorder")
enable_stack_allocator = _directive("enable_stack_allocator")
force_auto_alloc = _directive("force_auto_alloc")


class _Allocator(Buffer):
    """An explicit placement in SBUF or PSUM."""

    def __init__(self, memory, kind, base_partition=0, base_addr=0, num_free_tiles=None, base_bank=None):
        super().__init__(memory.lower(), memory)
        self.kind, self.base_partition, self.base_addr = kind, int(base_partition), int(base_addr)
        self.num_free_tiles = num_free_tiles
        if base_bank is not None:
            self.base_addr += int(base_bank) * 2048

    def allocation(self, shape, dtype):
        dt = _dtypes.storage(_dtypes.canonical(dtype))
        per_part = int(np.prod(shape[1:])) * dt.itemsize if len(shape) > 1 else dt.itemsize
        a = {"partition_offset": self.base_partition, "byte_offset": self.base_addr, "kind": self.kind}
        if self.num_free_tiles:
            n = int(np.prod(self.num_free_tiles)) if not isinstance(self.num_free_tiles, int) else self.num_free_tiles
            a["num_free_tiles"] = n
            a["bytes_per_tile"] = per_part
        return a

    def __repr__(self):
        return f"<{self.memory} {self.kind}_alloc partition {self.base_partition} byte {self.base_addr}>"


class _Space:
    def __init__(self, memory):
        self.memory = memory

    def auto_alloc(self):
        """Automatic placement (the default of nl.sbuf / nl.psum)."""
        return Buffer(self.memory.lower(), self.memory)

    def mod_alloc(self, *, base_addr=0, base_partition=0, num_par_tiles=(), num_free_tiles=(), base_bank=None, **kwargs):
        """Round-robin placement from base_addr over num_free_tiles tiles."""
        n = None
        if num_free_tiles:
            n = int(np.prod(num_free_tiles))
        return _Allocator(self.memory, "mod", base_partition, base_addr, n, base_bank)

    def alloc(self, func=None, **kwargs):
        """A fixed placement (callback form: func(idx, pdim_size, fdim_size) -> (partition, byte) is called once with idx=())."""
        if callable(func):
            p, b = func((), 128, 0)
            return _Allocator(self.memory, "fixed", p, b)
        return _Allocator(self.memory, "fixed", kwargs.get("base_partition", 0), kwargs.get("base_addr", 0))


sbuf = _Space(SBUF)
psum = _Space(PSUM)
