"""goldtrace.nki.compiler: compiler directives and the allocation API.

The directives change how the real compiler schedules a kernel, never what it
computes, so here they only record themselves on the kernel. Allocators place
on-chip tensors in physical memory; the simulator then models SBUF/PSUM as
per-partition bytes so overlapping placements alias as on the device."""

import numpy as np

from ._trace import PSUM, SBUF, Buffer
from . import _dtypes
from .errors import KernelError, user_location


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
        """A fixed placement. Callback form: func(idx, pdim_size, fdim_size) is
        called with idx=() (the tensor's one block), its partition count and
        its bytes per partition, and returns (start_partition, byte_addr) for
        SBUF or (bank, start_partition, byte_addr_in_bank) for PSUM."""
        if callable(func):
            return _CallbackAllocator(self.memory, func)
        return _Allocator(self.memory, "fixed", kwargs.get("base_partition", 0), kwargs.get("base_addr", 0))


class _CallbackAllocator(_Allocator):
    def __init__(self, memory, func):
        super().__init__(memory, "fixed")
        self.func = func

    def allocation(self, shape, dtype):
        dt = _dtypes.storage(_dtypes.canonical(dtype))
        per_part = int(np.prod(shape[1:])) * dt.itemsize if len(shape) > 1 else dt.itemsize
        got = tuple(int(v) for v in self.func((), int(shape[0]), per_part))
        if self.memory == PSUM and len(got) == 3:
            bank, part, addr = got
            addr += bank * 2048
        elif len(got) == 2:
            part, addr = got
        else:
            raise KernelError(f"{user_location()}: the {self.memory} allocation callback returned {got}; expected "
                              + ("(bank, start_partition, byte_addr)" if self.memory == PSUM else "(start_partition, byte_addr)"))
        self.base_partition, self.base_addr = part, addr
        return super().allocation(shape, dtype)


sbuf = _Space(SBUF)
psum = _Space(PSUM)
