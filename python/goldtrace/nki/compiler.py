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
    """An explicit placement in SBUF or PSUM. Each logical block of a tensor
    (an index of its block dimensions, the dims before nl.par_dim; a tensor
    without block dimensions is one block) gets a (partition, byte) placement
    from `place`; the IR holds one placement per tensor, so the blocks must lie
    back to back in row-major block order (then the tensor is placed at the
    first block's address). Other layouts (blocks sharing memory, gaps,
    blocks on different partitions) are refused by name."""

    def __init__(self, memory, kind, base_partition=0, base_addr=0, base_bank=None):
        super().__init__(memory.lower(), memory)
        self.kind, self.base_partition, self.base_addr = kind, int(base_partition), int(base_addr)
        if base_bank is not None:
            self.base_addr += int(base_bank) * 2048

    def place(self, idx, pdim_size, fdim_size):
        """(partition, byte offset in the partition; PSUM: bank * 2048 + offset) of block idx."""
        return self.base_partition, self.base_addr

    def allocation(self, shape, dtype, nblock=0):
        import itertools

        dt = _dtypes.storage(_dtypes.canonical(dtype))
        blocks = tuple(int(b) for b in shape[1:1 + nblock])
        free = shape[1 + nblock:]
        block_bytes = int(np.prod(free)) * dt.itemsize if free else dt.itemsize
        first = None
        places = [self.place(tuple(idx), int(shape[0]), block_bytes) for idx in itertools.product(*[range(b) for b in blocks])]
        if len(places) > 1 and all(p == places[0] for p in places):
            # Every block in the same place (num_free_tiles=(1,), a bank map
            # of one bank...): the blocks are one physical tile the kernel
            # reuses; the tensor is stored as that one block.
            return {"partition_offset": places[0][0], "byte_offset": places[0][1], "kind": self.kind, "_shared_blocks": True}
        for k, idx in enumerate(itertools.product(*[range(b) for b in blocks])):
            part, off = places[k]
            if first is None:
                first = (part, off)
            elif part != first[0] or off != first[1] + k * block_bytes:
                from .errors import KernelUnsupportedError

                raise KernelUnsupportedError(
                    f"{user_location()}: this {self.memory} placement puts block {tuple(idx)} of a tensor with blocks "
                    f"{list(blocks)} at partition {part}, byte {off}, not right after block {k - 1} (partition "
                    f"{first[0]}, byte {first[1] + k * block_bytes}); goldtrace supports placements whose blocks lie "
                    "back to back or all in one place (blocks partly sharing memory, gaps between them, or blocks on other "
                    "partitions are not supported)")
        return {"partition_offset": first[0], "byte_offset": first[1], "kind": self.kind}

    def __repr__(self):
        return f"<{self.memory} {self.kind}_alloc partition {self.base_partition} byte {self.base_addr}>"


def _linear_mod(idx, tiles):
    """linearize(idx mod tiles) in row-major order over tiles (the stubs'
    modulo allocation; no tiles: every block maps to 0)."""
    if not tiles:
        return 0
    tiles = tuple(int(t) for t in tiles)
    out = 0
    for i, t in zip(idx, tiles):
        out = out * t + (i % t)
    return out


class _ModAllocator(_Allocator):
    def __init__(self, memory, base_partition, base_addr, base_bank, num_par_tiles, num_free_tiles, num_bank_tiles):
        super().__init__(memory, "mod", base_partition, base_addr, None)
        self.base_bank = int(base_bank or 0)
        self.num_par_tiles, self.num_free_tiles, self.num_bank_tiles = tuple(num_par_tiles), tuple(num_free_tiles), tuple(num_bank_tiles)

    def place(self, idx, pdim_size, fdim_size):
        part = self.base_partition + _linear_mod(idx, self.num_par_tiles) * pdim_size
        off = self.base_addr + _linear_mod(idx, self.num_free_tiles) * fdim_size
        if self.memory == PSUM:
            off += (self.base_bank + _linear_mod(idx, self.num_bank_tiles)) * 2048
        return part, off


class _Space:
    def __init__(self, memory):
        self.memory = memory

    def auto_alloc(self):
        """Automatic placement (the default of nl.sbuf / nl.psum)."""
        return Buffer(self.memory.lower(), self.memory)

    def mod_alloc(self, *, base_addr=0, base_partition=0, num_par_tiles=(), num_free_tiles=(), base_bank=None,
                  num_bank_tiles=(), **kwargs):
        """Modulo placement of a tensor's blocks: block idx goes to partition
        base_partition + linearize(idx mod num_par_tiles) * partitions, byte
        base_addr + linearize(idx mod num_free_tiles) * block bytes (PSUM: in
        bank base_bank + linearize(idx mod num_bank_tiles))."""
        return _ModAllocator(self.memory, base_partition, base_addr, base_bank, num_par_tiles, num_free_tiles, num_bank_tiles)

    def alloc(self, func=None, **kwargs):
        """A placement. Callback form: func(idx, pdim_size, fdim_size) is
        called for each block index of the tensor (idx=() for a tensor without
        block dimensions) with its partition count and its bytes per partition
        per block, and returns (start_partition, byte_addr) for SBUF or (bank,
        start_partition, byte_addr_in_bank) for PSUM."""
        if callable(func):
            return _CallbackAllocator(self.memory, func)
        return _Allocator(self.memory, "fixed", kwargs.get("base_partition", 0), kwargs.get("base_addr", 0))


class _CallbackAllocator(_Allocator):
    def __init__(self, memory, func):
        super().__init__(memory, "fixed")
        self.func = func

    def place(self, idx, pdim_size, fdim_size):
        got = tuple(int(v) for v in self.func(idx, pdim_size, fdim_size))
        if self.memory == PSUM and len(got) == 3:
            bank, part, addr = got
            return part, addr + bank * 2048
        if self.memory != PSUM and len(got) == 2:
            return got
        raise KernelError(f"{user_location()}: the {self.memory} allocation callback returned {got}; expected "
                          + ("(bank, start_partition, byte_addr)" if self.memory == PSUM else "(start_partition, byte_addr)"))


sbuf = _Space(SBUF)
psum = _Space(PSUM)
