"""goldtrace.nki.language (`nl`): the legacy neuronxcc.nki.language surface.

Every function checks its arguments and appends instructions to the kernel
being traced; the numbers come from goldtrace's simulator (kernel/sim), which
computes in float32 and rounds to each output's dtype.
"""

import builtins
import math

import ml_dtypes
import numpy as np

from .. import _dtypes
from .._dtypes import tfloat32
from .._sym import PROGRAM_ID, TILE_AXIS, LOOP_VAR, Mask, Pred, Sym, broadcast_shapes
from .._trace import (
    PARAM, OUTPUT, TEMP, CONSTANT, SBUF, PSUM, SHARED_HBM, PRIVATE_HBM, HBM_SPACES,
    Buffer, DynSlice, Tile, as_tile, assign, current, is_tile, require, _reshape_like,
)
from ..errors import KernelError, KernelUnsupportedError, user_location

# ---- dtypes ----
bfloat16 = ml_dtypes.bfloat16
# The legacy API documents nl.float8_e4m3 as dtype(float8_e4m3): ml_dtypes' IEEE-style
# e4m3 (largest finite 240, with infinities), not the "fn" variant (448, no inf).
float8_e4m3 = ml_dtypes.float8_e4m3
float8_e5m2 = ml_dtypes.float8_e5m2
float16 = np.float16
float32 = np.float32
int8, int16, int32 = np.int8, np.int16, np.int32
uint8, uint16, uint32 = np.uint8, np.uint16, np.uint32
bool_ = np.bool_


class fp32:
    """float32 limits (nl.fp32.min is the most negative finite value)."""

    min = float(np.finfo(np.float32).min)
    max = float(np.finfo(np.float32).max)


class bfp16:
    min = float(ml_dtypes.finfo(ml_dtypes.bfloat16).min)
    max = float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)


def finfo(dtype):
    """Machine limits of a float kernel dtype (numpy / ml_dtypes finfo)."""
    dt = _dtypes.storage(_dtypes.canonical(dtype))
    return ml_dtypes.finfo(dt)


# ---- buffers ----
sbuf = Buffer("sbuf", SBUF)
psum = Buffer("psum", PSUM)
shared_hbm = Buffer("shared_hbm", SHARED_HBM)
private_hbm = Buffer("private_hbm", PRIVATE_HBM)
hbm = private_hbm


class _ParDim(int):
    """A dimension marked as the partition dimension (nl.par_dim)."""


def par_dim(n):
    """Mark n as the partition dimension of a shape."""
    return _ParDim(n)


class tile_size:
    """Hardware tile limits (NeuronCore-v2)."""

    pmax = 128
    psum_fmax = 512
    gemm_stationary_fmax = 128
    gemm_moving_fmax = 512
    bn_stats_fmax = 512
    psum_min_align = 4
    sbuf_min_align = 1
    total_available_sbuf_size = 192 * 1024


# ---- helpers ----


def _shape(shape):
    if type(shape) is tuple and builtins.all(type(s) is int for s in shape):
        return shape
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        shape = tuple(shape)
    except TypeError:
        raise KernelError(f"{user_location()}: shape must be a tuple of integers, got {shape!r}") from None
    out = []
    for i, s in enumerate(shape):
        try:
            out.append(int(s))
        except (TypeError, ValueError):
            raise KernelError(f"{user_location()}: shape entry {s!r} is not an integer") from None
    return tuple(out)


def _buffer(buffer, default=sbuf):
    if buffer is None:
        return default
    if isinstance(buffer, Buffer):
        return buffer
    raise KernelError(f"{user_location()}: buffer= must be nl.sbuf, nl.psum, nl.hbm, nl.shared_hbm or an allocator, got {buffer!r}")


def _par_axis(shape):
    for i, s in enumerate(shape if isinstance(shape, (tuple, list)) else ()):
        if isinstance(s, _ParDim):
            return i
    return 0


def _new(shape, dtype, buffer=None, name=None, init=True):
    """A fresh tensor in buffer (SBUF default); on-chip tensors start as garbage
    (the simulator's NaN sentinel) via an alloc instruction.

    Block dimensions (dims before nl.par_dim in an on-chip shape) are kept by
    storing the partition dimension first: the kernel indexes the tensor in its
    own order, the IR sees a tensor whose dim 0 is the partition dim."""
    tr = require("creating a tensor")
    buf = _buffer(buffer)
    pax = _par_axis(shape)
    shape = _shape(shape)
    if buf.memory in HBM_SPACES:
        role = OUTPUT if buf.memory == SHARED_HBM else TEMP
        return tr.declare(shape, dtype, buf.memory, role, name=name)
    stored = (shape[pax],) + shape[:pax] + shape[pax + 1:] if pax else shape
    alloc = _placement(buf, stored, dtype, pax)
    if alloc is not None and alloc.pop("_shared_blocks", False):
        # All blocks share one physical block: store one block; the block
        # indices select nothing (every block reads and writes the same memory).
        t = tr.declare((shape[pax],) + shape[pax + 1:], dtype, buf.memory, TEMP, name=name, allocation=alloc)
        t.perm = tuple(None if u < pax else (0 if u == pax else u - pax) for u in range(len(shape)))
        t.shape = shape
        if init:
            _emit_alloc(tr, t)
        return t
    t = tr.declare(stored, dtype, buf.memory, TEMP, name=name, allocation=alloc)
    if pax:
        # user dim u is stored at: pax -> 0, u < pax -> u + 1, u > pax -> u
        t.perm = tuple(0 if u == pax else (u + 1 if u < pax else u) for u in range(len(shape)))
        t.shape = shape
        t.nblock = pax
    if init:
        _emit_alloc(tr, t)
    return t


def _whole_tiles(t):
    """Tiles covering all of t: its full tile, or, for a PSUM tensor whose
    blocks together exceed a bank, one tile per block (an instruction's PSUM
    tile must fit a bank; each block does)."""
    full = t.full_tile()
    nblock = getattr(t, "nblock", 0)
    if t.memory != PSUM or not nblock:
        return [full]
    itemsize = _dtypes.storage(t.dtype).itemsize
    per_part = int(np.prod(full.shape[1:])) * itemsize
    if per_part <= 2048:
        return [full]
    import itertools

    blocks, free = full.shape[1:1 + nblock], full.shape[1 + nblock:]
    shape = (full.shape[0],) + tuple(free)
    tiles = []
    for idx in itertools.product(*[range(b) for b in blocks]):
        index = [Sym.axis(0, shape)] + [Sym(i) for i in idx] + [Sym.axis(1 + k, shape) for k in range(len(free))]
        tiles.append(Tile(t, shape, [Sym(s.const, s.terms, ()) for s in index]))
    return tiles


def _emit_alloc(tr, t):
    tiles = _whole_tiles(t)
    for tl in tiles:
        tr.emit("alloc", [tl])
    if t.memory == PSUM and len(tiles) == 1 and tr.events and tr.events[-1][0] == 1 and tr.events[-1][1] == "alloc":
        t._fresh_alloc = (tr.events[-1],)
        tr.note_fresh_alloc(tr.events[-1])


def _placement(buf, stored, dtype, nblock):
    try:
        return buf.allocation(stored, dtype, nblock)
    except TypeError:  # a Buffer without block-aware placement
        return buf.allocation(stored, dtype)


def _result(shape, dtype, buffer=None):
    """The destination of an op: a new on-chip tile (no alloc; the op writes it)."""
    tr = require("a kernel operation")
    buf = _buffer(buffer)
    shape = _shape(shape)
    # The plain memory spaces place nothing; allocators (nki.compiler) do.
    alloc = None if type(buf) is Buffer else buf.allocation(shape, dtype)
    t = tr.declare(shape, dtype, buf.memory, TEMP, allocation=alloc)
    t.implicit = True  # placed by goldtrace (as the compiler would), not declared by the kernel
    return t


def _is_scalar(x):
    return isinstance(x, (int, float, bool, np.integer, np.floating, np.bool_)) or (isinstance(x, Sym) and x.is_const() and not x.shape)


def _scalar(x):
    if isinstance(x, Sym):
        return x.const
    return float(x) if isinstance(x, (float, np.floating)) else x


def _axes(axis, rank, what):
    if axis is None:
        raise KernelError(f"{user_location()}: {what}: axis= is required (free axes only)")
    if isinstance(axis, (int, np.integer)):
        axis = [axis]
    out = sorted({int(a) % rank if int(a) < 0 else int(a) for a in axis})
    for a in out:
        if a >= rank:
            raise KernelError(f"{user_location()}: {what}: axis {a} out of range for a rank-{rank} tile")
    if 0 in out:
        raise KernelError(f"{user_location()}: {what}: cannot reduce the partition axis 0 (reduction axes must be free axes)")
    return out


# ---- op names (for nisa op= arguments, which take these functions or numpy ufuncs) ----

OP_NAMES = {}


def _register(name, *fns):
    for f in fns:
        OP_NAMES[f] = name


# ---- elementwise ----


_F32 = np.dtype(np.float32)


def _binary(op, x, y, dtype=None, mask=None, engine="", out=None):
    tx, ty = is_tile(x), is_tile(y)
    if not tx and not ty:
        raise KernelError(f"{user_location()}: {op}: at least one operand must be a tile")
    tr = require(op)
    if tx and ty:
        a, b = as_tile(x), as_tile(y)
        if a.shape == b.shape and out is None and mask is None and not engine:
            # Equal shapes (most calls): nothing to align, broadcast or replicate.
            da, db = a.dtype, b.dtype
            dt = dtype or (da if da is db and da is not _dtypes.tfloat32 else _dtypes.promote(da, db))
            return tr.result_inst("tensor_tensor", a.shape, dt, (a, b), {"op": op})
        sa, sb = a.shape, b.shape
        if len(sa) == len(sb) and sa and sa[0] == sb[0] and out is None and mask is None and not engine:
            # Free-axis broadcasting at equal rank and partition size (a row
            # statistic against its rows): no alignment or partition replication.
            shape = []
            for m, n in zip(sa, sb):
                if m == n or n == 1:
                    shape.append(m)
                elif m == 1:
                    shape.append(n)
                else:
                    break  # the general path reports it
            else:
                da, db = a.dtype, b.dtype
                dt = dtype or (da if da is db and da is not _dtypes.tfloat32 else _dtypes.promote(da, db))
                return tr.result_inst("tensor_tensor", tuple(shape), dt, (a, b), {"op": op})
        a, b = _align_ranks(a, b)
        try:
            shape = broadcast_shapes(a.shape, b.shape)
        except KernelError:
            raise KernelError(f"{user_location()}: {op}: tile shapes {list(a.shape)} and {list(b.shape)} do not broadcast") from None
        dt = dtype or _dtypes.promote(a.dtype, b.dtype)
        a, b = _partition_broadcast(a, shape), _partition_broadcast(b, shape)
        if out is None and mask is None and not engine:
            return tr.result_inst("tensor_tensor", shape, dt, (a, b), {"op": op})
        out = out if out is not None else _result(shape, dt)
        tr.emit("tensor_tensor", [out.tile()], [a, b], {"op": op}, mask=mask, engine=engine)
        return out
    t, s, rev = (as_tile(x), y, False) if tx else (as_tile(y), x, True)
    ts = type(s)
    if (ts is float or ts is int) and out is None and mask is None and not engine:
        # A Python number (most calls): promote_scalar's rule, inline.
        td = t.dtype
        dt = dtype or (_F32 if ts is float and _dtypes.is_int(td) else td)
        return tr.result_inst("tensor_scalar", t.shape, dt, (t,), {"op0": op, "scalar0": float(s), "reverse0": rev})
    if isinstance(s, Sym) and not s.is_const():
        # An index expression (loop variables, program ids, arange) as a value:
        # materialize it with iota (int32), one value per partition when scalar.
        e = s if s.shape else Sym(s.const, dict(s.terms), (t.shape[0] if t.shape else 1, 1))
        v = _result(e.shape, np.int32)
        tr.emit("iota", [v.tile()], exprs=[e])
        return _binary(op, v, t, dtype, mask, engine, out) if rev else _binary(op, t, v, dtype, mask, engine, out)
    if not _is_scalar(s):
        raise KernelError(f"{user_location()}: {op}: operand must be a tile or a scalar, got {type(s).__name__}")
    dt = dtype or _dtypes.promote_scalar(t.dtype, s)
    if out is None and mask is None and not engine:
        return tr.result_inst("tensor_scalar", t.shape, dt, (t,), {"op0": op, "scalar0": float(_scalar(s)), "reverse0": rev})
    out = out if out is not None else _result(t.shape, dt)
    tr.emit("tensor_scalar", [out.tile()], [t], {"op0": op, "scalar0": float(_scalar(s)), "reverse0": rev}, mask=mask, engine=engine)
    return out


def _mk_binary(name, opname=None, numpy_fn=None):
    opname = opname or name

    def f(x, y, *, dtype=None, mask=None, **kwargs):
        return _binary(opname, x, y, dtype, mask)

    f.__name__ = name
    f.__qualname__ = name
    f.__doc__ = f"Element-wise {opname} of two tiles (or a tile and a scalar), computed in float32 and rounded to dtype."
    _register(opname, f, *( [numpy_fn] if numpy_fn is not None else []))
    return f


add = _mk_binary("add", numpy_fn=np.add)
subtract = _mk_binary("subtract", numpy_fn=np.subtract)
multiply = _mk_binary("multiply", numpy_fn=np.multiply)
divide = _mk_binary("divide", numpy_fn=np.divide)
maximum = _mk_binary("maximum", numpy_fn=np.maximum)
minimum = _mk_binary("minimum", numpy_fn=np.minimum)
power = _mk_binary("power", numpy_fn=np.power)
fmod = _mk_binary("fmod", numpy_fn=np.fmod)
mod = _mk_binary("mod", numpy_fn=np.mod)
equal = _mk_binary("equal", numpy_fn=np.equal)
not_equal = _mk_binary("not_equal", numpy_fn=np.not_equal)
greater = _mk_binary("greater", numpy_fn=np.greater)
greater_equal = _mk_binary("greater_equal", numpy_fn=np.greater_equal)
less = _mk_binary("less", numpy_fn=np.less)
less_equal = _mk_binary("less_equal", numpy_fn=np.less_equal)
logical_and = _mk_binary("logical_and", numpy_fn=np.logical_and)
logical_or = _mk_binary("logical_or", numpy_fn=np.logical_or)
logical_xor = _mk_binary("logical_xor", numpy_fn=np.logical_xor)
bitwise_and = _mk_binary("bitwise_and", numpy_fn=np.bitwise_and)
bitwise_or = _mk_binary("bitwise_or", numpy_fn=np.bitwise_or)
bitwise_xor = _mk_binary("bitwise_xor", numpy_fn=np.bitwise_xor)
left_shift = _mk_binary("left_shift", numpy_fn=np.left_shift)
right_shift = _mk_binary("right_shift", "right_shift_arithmetic", numpy_fn=np.right_shift)
_register("right_shift_logical", "right_shift_logical")
_register("abs_diff")
_register("bypass")

_INT_ONLY_UNARY = {"invert"}
_FLOAT_FUNCS = {"exp", "log", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tan", "arctan", "tanh", "sigmoid",
                "gelu", "gelu_apprx_tanh", "gelu_dx", "gelu_apprx_sigmoid", "silu", "silu_dx", "erf", "erf_dx",
                "softplus", "mish"}


def _align_ranks(*tiles):
    """Tiles are [partition, free...]: a lower-rank tile (a reduction's (P,)
    result) lines up by its partition axis, so it gains trailing size-1 axes."""
    r = builtins.max(len(t.shape) for t in tiles)
    out = []
    for t in tiles:
        if 0 < len(t.shape) < r:
            t = _reshape_like(t, tuple(t.shape) + (1,) * (r - len(t.shape)))
        out.append(t)
    return out if len(out) > 1 else out[0]


def _partition_broadcast(t, shape):
    """A tile of partition size 1 meeting a wider one: engines work per
    partition, so the row is first replicated across partitions by DMA (as the
    hardware does it); free-axis broadcasting stays in the access pattern."""
    if not shape or not t.shape or t.shape[0] != 1 or shape[0] == 1 or len(t.shape) != len(shape):
        return t
    rep = _result((shape[0],) + tuple(t.shape[1:]), t.dtype)
    require("broadcast").emit("dma", [rep.tile()], [_stretch_partitions(t, shape[0])])
    return rep.tile()


def _stretch_partitions(t, n):
    """The (1, F...) tile t read n times: an access of shape (n, F...) whose
    partition index does not move."""
    idx = [Sym(s.const, {k: c for k, c in s.terms.items() if k != (TILE_AXIS, 0)}, ()) for s in t.index]
    return Tile(t.tensor, (n,) + tuple(t.shape[1:]), idx, t.dynamic)


def _unary(func, x, dtype=None, mask=None):
    tr = require(func)
    t = as_tile(x, f"{func} input")
    if func in _INT_ONLY_UNARY and not _dtypes.is_int(t.dtype):
        raise KernelError(f"{user_location()}: {func} needs an integer tile, got {_dtypes.name_of(t.dtype)}")
    dt = dtype or (np.dtype(np.float32) if (func in _FLOAT_FUNCS and _dtypes.is_int(t.dtype)) else t.dtype)
    if mask is None:
        return tr.result_inst("activation", t.shape, dt, (t,), {"func": func})
    out = _result(t.shape, dt)
    tr.emit("activation", [out.tile()], [t], {"func": func}, mask=mask)
    return out


def _mk_unary(name, func=None, numpy_fn=None):
    func = func or name

    def f(x, *, dtype=None, mask=None, **kwargs):
        return _unary(func, x, dtype, mask)

    f.__name__ = name
    f.__qualname__ = name
    f.__doc__ = f"Element-wise {func} of a tile, computed in float32 and rounded to dtype."
    _register(func, f, *([numpy_fn] if numpy_fn is not None else []))
    return f


exp = _mk_unary("exp", numpy_fn=np.exp)
log = _mk_unary("log", numpy_fn=np.log)
sqrt = _mk_unary("sqrt", numpy_fn=np.sqrt)
rsqrt = _mk_unary("rsqrt")
reciprocal = _mk_unary("reciprocal", numpy_fn=np.reciprocal)
abs = _mk_unary("abs", numpy_fn=np.abs)
negative = _mk_unary("negative", numpy_fn=np.negative)
sign = _mk_unary("sign", numpy_fn=np.sign)
square = _mk_unary("square", numpy_fn=np.square)
sin = _mk_unary("sin", numpy_fn=np.sin)
cos = _mk_unary("cos", numpy_fn=np.cos)
tan = _mk_unary("tan", numpy_fn=np.tan)
arctan = _mk_unary("arctan", numpy_fn=np.arctan)
tanh = _mk_unary("tanh", numpy_fn=np.tanh)
ceil = _mk_unary("ceil", numpy_fn=np.ceil)
floor = _mk_unary("floor", numpy_fn=np.floor)
trunc = _mk_unary("trunc", numpy_fn=np.trunc)
rint = _mk_unary("rint", numpy_fn=np.rint)
invert = _mk_unary("invert", numpy_fn=np.invert)
bitwise_not = invert
logical_not = _mk_unary("logical_not", numpy_fn=np.logical_not)
sigmoid = _mk_unary("sigmoid")
relu = _mk_unary("relu")
gelu = _mk_unary("gelu")
gelu_dx = _mk_unary("gelu_dx")
gelu_apprx_tanh = _mk_unary("gelu_apprx_tanh")
gelu_apprx_sigmoid = _mk_unary("gelu_apprx_sigmoid")
silu = _mk_unary("silu")
silu_dx = _mk_unary("silu_dx")
erf = _mk_unary("erf")
erf_dx = _mk_unary("erf_dx")
softplus = _mk_unary("softplus")
mish = _mk_unary("mish")
copy_func = _mk_unary("identity")
_register("identity", copy_func)


def where(condition, x, y, *, dtype=None, mask=None, **kwargs):
    """x where condition is nonzero, else y (either may be a scalar)."""
    tr = require("where")
    c = as_tile(condition, "where condition")
    tiles = [c] + [as_tile(v) for v in (x, y) if is_tile(v)]
    aligned = _align_ranks(*tiles) if len(tiles) > 1 else [c]
    c = aligned[0]
    it = iter(aligned[1:])
    x = next(it) if is_tile(x) else x
    y = next(it) if is_tile(y) else y
    shapes = [c.shape] + [as_tile(v).shape for v in (x, y) if is_tile(v)]
    shape = broadcast_shapes(*shapes)
    dts = [as_tile(v).dtype for v in (x, y) if is_tile(v)]
    dt = dtype or (dts[0] if len(dts) == 1 else (_dtypes.promote(*dts) if dts else np.dtype(np.float32)))
    out = _result(shape, dt)
    src = [c]
    attrs = {}
    for v, key in ((x, "true"), (y, "false")):
        if is_tile(v):
            src.append(as_tile(v))
            attrs[f"has_{key}_tile"] = True
        else:
            attrs[f"{key}_value"] = float(_scalar(v))
            attrs[f"has_{key}_tile"] = False
    tr.emit("select", [out.tile()], src, attrs, mask=mask)
    return out


# ---- reductions ----


def _reduce(op, x, axis, dtype=None, mask=None, keepdims=False, negate=False):
    tr = require(op)
    t = as_tile(x)
    rank = len(t.shape)
    if type(axis) is int and mask is None and rank > 1 and (axis == rank - 1 or axis == -1):
        # The last free axis (most calls): _axes and the trailing-axes test, inline.
        shape = t.shape[:-1] + (1,) if keepdims else t.shape[:-1]
        return tr.result_inst("tensor_reduce", shape, dtype or t.dtype, (t,),
                              {"op": op, "axes": [rank - 1], "keepdims": bool(keepdims), "negate": bool(negate)},
                              domain=t.shape)
    axes = _axes(axis, rank, op)
    shape = tuple(1 if k in axes else s for k, s in enumerate(t.shape)) if keepdims else tuple(
        s for k, s in enumerate(t.shape) if k not in axes)
    if mask is None and axes == list(range(rank - len(axes), rank)):
        return tr.result_inst("tensor_reduce", shape, dtype or t.dtype, (t,),
                              {"op": op, "axes": axes, "keepdims": bool(keepdims), "negate": bool(negate)}, domain=t.shape)
    out = _result(shape, dtype or t.dtype)
    dst = out.tile()
    trailing = list(range(rank - len(axes), rank))
    if axes != trailing:
        # The engines reduce trailing free axes; other axes are moved to the end
        # in the access pattern (a free reordering, no data movement).
        if mask is not None:
            raise KernelUnsupportedError(f"{user_location()}: a masked reduction over non-trailing axes {axes} is not supported; reduce trailing axes")
        order = [k for k in range(rank) if k not in axes] + axes
        amap = {old: new for new, old in enumerate(order)}
        t = t.with_shape(tuple(t.shape[o] for o in order), amap)
        if keepdims:
            dst = _reshape_like(dst, tuple(t.shape[:rank - len(axes)]) + (1,) * len(axes))
        axes = trailing
    tr.emit("tensor_reduce", [dst], [t], {"op": op, "axes": axes, "keepdims": bool(keepdims), "negate": bool(negate)},
            mask=mask, domain=t.shape)
    return out


def sum(x, axis, *, dtype=None, mask=None, keepdims=False, **kwargs):
    """Sum along free axes."""
    return _reduce("add", x, axis, dtype, mask, keepdims)


def max(x, axis, *, dtype=None, mask=None, keepdims=False, **kwargs):
    """Maximum along free axes."""
    return _reduce("maximum", x, axis, dtype, mask, keepdims)


def min(x, axis, *, dtype=None, mask=None, keepdims=False, **kwargs):
    """Minimum along free axes."""
    return _reduce("minimum", x, axis, dtype, mask, keepdims)


def prod(x, axis, *, dtype=None, mask=None, keepdims=False, **kwargs):
    """Product along free axes."""
    return _reduce("multiply", x, axis, dtype, mask, keepdims)


def all(x, axis, *, dtype=None, mask=None, keepdims=False, **kwargs):
    """Logical and along free axes."""
    return _reduce("logical_and", x, axis, dtype, mask, keepdims)


_register("add", sum, np.sum)
_register("maximum", max, np.max, np.amax)
_register("minimum", min, np.min, np.amin)
_register("multiply", prod, np.prod)
_register("logical_and", all, np.all)


def _count(t, axis):
    axes = _axes(axis, len(t.shape), "mean")
    n = 1
    for a in axes:
        n *= t.shape[a]
    return n


def mean(x, axis, *, dtype=None, mask=None, keepdims=False, **kwargs):
    """Arithmetic mean along free axes (sum in float32, divided by the count)."""
    t = as_tile(x)
    s = _reduce("add", t, axis, np.float32, mask, keepdims)
    return _binary("divide", s, float(_count(t, axis)), dtype or (t.dtype if _dtypes.is_float(t.dtype) else np.float32), None)


def var(x, axis, *, dtype=None, mask=None, keepdims=False, **kwargs):
    """Population variance along free axes: mean((x - mean(x))**2)."""
    t = as_tile(x)
    m = mean(t, axis, dtype=np.float32, mask=mask, keepdims=True)
    d = _binary("subtract", t, m, np.float32, None)
    sq = _binary("multiply", d, d, np.float32, None)
    return mean(sq, axis, dtype=dtype or t.dtype, mask=mask, keepdims=keepdims)


# ---- creation ----


def ndarray(shape, dtype, *, buffer=None, name="", **kwargs):
    """A new tensor (uninitialised: on-chip memory reads as garbage until written)."""
    return _new(shape, dtype, buffer, name or None)


def empty_like(a, *, buffer=None, name="", **kwargs):
    """A new tensor with a's shape and dtype."""
    return ndarray(a.shape, a.dtype, buffer=buffer, name=name)


def full(shape, fill_value, dtype, *, buffer=None, name="", **kwargs):
    """A new tensor filled with fill_value."""
    t = _new(shape, dtype, buffer, name or None, init=False)
    tr = require("full")
    for tl in _whole_tiles(t):
        tr.emit("memset", [tl], attrs={"value": float(fill_value)})
    return t


def zeros(shape, dtype, *, buffer=None, name="", **kwargs):
    """A new tensor of zeros."""
    return full(shape, 0.0, dtype, buffer=buffer, name=name)


def ones(shape, dtype, *, buffer=None, name="", **kwargs):
    """A new tensor of ones."""
    return full(shape, 1.0, dtype, buffer=buffer, name=name)


def zeros_like(a, dtype=None, *, buffer=None, name="", **kwargs):
    """A tensor of zeros with a's shape."""
    return zeros(a.shape, dtype or a.dtype, buffer=buffer, name=name)


def rand(shape, dtype=np.float32, **kwargs):
    """Uniform random values in [0, 1) from the program instance's generator."""
    t = _result(shape, dtype)
    require("rand").emit("rand", [t.tile()], attrs={"distribution": "uniform", "low": 0.0, "high": 1.0})
    return t


def random_seed(seed, *, mask=None, **kwargs):
    """Seed the program instance's random generator from a (1,1) tile."""
    require("random_seed").emit("random_seed", src=[as_tile(seed, "seed")], mask=mask)


def shared_constant(constant, dtype=None, **kwargs):
    """A kernel constant in HBM, from a numpy array known at trace time."""
    tr = require("shared_constant")
    arr = np.asarray(constant)
    dt = _dtypes.canonical(dtype if dtype is not None else (np.float32 if arr.dtype == np.float64 else (np.int32 if arr.dtype == np.int64 else arr.dtype)))
    data = np.ascontiguousarray(arr.astype(_dtypes.storage(dt)))
    return tr.declare(arr.shape or (1,), dt, SHARED_HBM, CONSTANT, data=data.tobytes())


def shared_identity_matrix(n, dtype=ml_dtypes.bfloat16, **kwargs):
    """An n×n identity matrix constant in HBM."""
    return shared_constant(np.eye(int(n)), dtype=dtype)


# ---- memory ----


def load(src, *, mask=None, dtype=None, **kwargs):
    """Load a tile from HBM into SBUF."""
    tr = require("load")
    s = as_tile(src, "load source")
    if s.memory not in HBM_SPACES:
        raise KernelError(f"{user_location()}: nl.load expects a tensor in HBM, got one in {s.memory} (use nl.copy for on-chip tiles)")
    if not s.shape:  # a single element loads as a [1, 1] tile
        s = _reshape_like(s, (1, 1))
    if mask is None:
        return tr.result_inst("dma", s.shape, dtype or s.dtype, (s,), None)
    out = _result(s.shape, dtype or s.dtype)
    tr.emit("dma", [out.tile()], [s], mask=mask)
    return out


def store(dst, value, *, mask=None, **kwargs):
    """Store a tile (or a scalar) into HBM."""
    tr = require("store")
    d = as_tile(dst, "store destination")
    if d.memory not in HBM_SPACES:
        raise KernelError(f"{user_location()}: nl.store expects a destination in HBM, got one in {d.memory}")
    if not is_tile(value):
        tr.emit("memset", [d], attrs={"value": float(value)}, mask=mask)
        return
    v = as_tile(value, "store value")
    if v.memory == PSUM:
        # DMA engines do not reach PSUM: the value goes through SBUF first, as
        # the compiler stages it for nl.store.
        v = _to_sbuf(v)
    if v.shape != d.shape:
        from .._trace import _squeeze

        if _squeeze(v.shape) == _squeeze(d.shape):
            v = _reshape_like(v, d.shape)
    tr.emit("dma", [d], [v], mask=mask)


def load_transpose2d(src, *, mask=None, dtype=None, **kwargs):
    """Load a 2-D HBM tile transposed: result[a, b] = src[b, a]."""
    tr = require("load_transpose2d")
    s = as_tile(src)
    if len(s.shape) != 2:
        raise KernelError(f"{user_location()}: load_transpose2d needs a 2-D tile, got {list(s.shape)}")
    out = _result((s.shape[1], s.shape[0]), dtype or s.dtype)
    tr.emit("dma_transpose", [out.tile()], [s], mask=mask)
    return out


def copy(src, *, mask=None, dtype=None, **kwargs):
    """Copy a tile (to SBUF), converting to dtype."""
    tr = require("copy")
    s = as_tile(src)
    if mask is None:
        return tr.result_inst("tensor_copy", s.shape, dtype or s.dtype, (s,), None)
    out = _result(s.shape, dtype or s.dtype)
    tr.emit("tensor_copy", [out.tile()], [s], mask=mask)
    return out


_register("identity", copy)


def static_cast(x, dtype, **kwargs):
    """Convert a tile to dtype. Outside a kernel, on host arrays (numpy, lists,
    scalars), it converts them with numpy / ml_dtypes, as test harnesses do to
    build inputs of a kernel dtype."""
    if current() is None and not is_tile(x):
        return np.asarray(x).astype(_dtypes.storage(_dtypes.canonical(dtype)))
    return copy(x, dtype=dtype)


def atomic_rmw(dst, value, op, *, mask=None, **kwargs):
    """dst = op(dst, value), atomically across program instances (dst in HBM)."""
    tr = require("atomic_rmw")
    d = as_tile(dst)
    tr.emit("atomic_rmw", [d], [as_tile(value)], {"op": op_name(op)}, mask=mask)


def broadcast_to(src, shape, **kwargs):
    """Broadcast a tile's size-1 axes to shape (a copy)."""
    tr = require("broadcast_to")
    s = as_tile(src)
    shape = _shape(shape)
    if 0 < len(s.shape) < len(shape):
        s = _reshape_like(s, tuple(s.shape) + (1,) * (len(shape) - len(s.shape)))
    out = _result(shape, s.dtype)
    # Replicating across partitions is a DMA; along free axes an engine copy.
    if s.shape and s.shape[0] == 1 and shape[0] != 1:
        tr.emit("dma", [out.tile()], [_stretch_partitions(s, shape[0])])
    else:
        tr.emit("tensor_copy", [out.tile()], [s])
    return out


def expand_dims(data, axis, **kwargs):
    """A view of data with a size-1 axis inserted at axis."""
    t = as_tile(data)
    r = len(t.shape) + 1
    a = axis % r if axis < 0 else axis
    shape = t.shape[:a] + (1,) + t.shape[a:]
    amap = {k: (k if k < a else k + 1) for k in range(len(t.shape))}
    return t.with_shape(shape, amap)


def _reshape(x, shape):
    from .._trace import ReshapeView, _squeeze

    shape = _shape(shape)
    if isinstance(x, ReshapeView):
        if int(np.prod(shape)) != int(np.prod(x.tensor.shape)):
            raise KernelError(f"{user_location()}: cannot reshape {list(x.shape)} ({int(np.prod(x.shape))} elements) to {list(shape)}")
        return ReshapeView(x.tensor, shape)
    t = as_tile(x)
    if _squeeze(shape) == _squeeze(t.shape):
        return _reshape_like(t, shape)
    if t.memory in HBM_SPACES and _is_whole(t) and t.tensor.perm is None:
        if int(np.prod(shape)) != int(np.prod(t.shape)):
            raise KernelError(f"{user_location()}: cannot reshape {list(t.shape)} ({int(np.prod(t.shape))} elements) to {list(shape)}")
        return ReshapeView(t.tensor, shape)
    raise KernelUnsupportedError(
        f"{user_location()}: reshape {list(t.shape)} -> {list(shape)} changes more than size-1 axes of an on-chip tile or of part of a tensor; goldtrace supports "
        "those only for reshapes that add or remove size-1 axes (whole HBM tensors reshape freely; index the tensor instead)"
    )


def _is_whole(t):
    """t is its tensor's whole tile in row-major order."""
    if tuple(t.shape) != tuple(t.tensor.shape) or t.dynamic:
        return False
    for k, s in enumerate(t.index):
        want = {(TILE_AXIS, k): 1} if t.shape[k] > 1 else {}
        if s.const != 0 or {kk: c for kk, c in s.terms.items() if c} != want:
            return False
    return True


def transpose(x, *, dtype=None, mask=None, **kwargs):
    """2-D transpose on the tensor engine (result in PSUM)."""
    tr = require("transpose")
    t = as_tile(x)
    if len(t.shape) != 2:
        raise KernelError(f"{user_location()}: transpose needs a 2-D tile, got {list(t.shape)}")
    out = _result((t.shape[1], t.shape[0]), dtype or t.dtype, psum)
    tr.emit("transpose", [out.tile()], [t], {"engine": "tensor"}, mask=mask, engine="tensor")
    return out


def matmul(x, y, *, transpose_x=False, mask=None, **kwargs):
    """x @ y on the tensor engine, f32 result in PSUM. With transpose_x, x is
    already stored transposed ([K, M])."""
    tr = require("matmul")
    a, b = as_tile(x, "matmul x"), as_tile(y, "matmul y")
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise KernelError(f"{user_location()}: matmul needs 2-D tiles, got {list(a.shape)} and {list(b.shape)}")
    if not transpose_x:
        at = transpose(a)
        st = _result(at.shape, a.dtype)
        tr.emit("tensor_copy", [st.tile()], [at.tile()])
        a = st.tile()
    if a.shape[0] != b.shape[0]:
        raise KernelError(
            f"{user_location()}: matmul contraction sizes differ: x gives K={a.shape[0]}, y has K={b.shape[0]} "
            f"(shapes {list(a.shape)}{' transposed' if transpose_x else ''} and {list(b.shape)})"
        )
    a = _to_sbuf(a)
    b = _to_sbuf(b)
    out = _result((a.shape[1], b.shape[1]), np.float32, psum)
    tr.emit("matmul", [out.tile()], [a, b], mask=mask, engine="tensor")
    return out


def _to_sbuf(t, what="matmul operands"):
    """t staged in SBUF: a PSUM tile is copied out (keeping its dtype), as the
    compiler does for operands an engine cannot read where they are."""
    if t.memory == SBUF:
        return t
    if t.memory in HBM_SPACES:
        raise KernelError(f"{user_location()}: {what} must be on chip (SBUF); load them first")
    c = _result(t.shape, t.dtype)
    require("copy").emit("tensor_copy", [c.tile()], [t])
    return c.tile()


def softmax(x, axis, *, dtype=None, compute_dtype=None, mask=None, **kwargs):
    """exp(x - max(x)) / sum(exp(x - max(x))) along a free axis, in float32."""
    t = as_tile(x)
    m = max(t, axis, dtype=np.float32, keepdims=True, mask=mask)
    d = subtract(t, m, dtype=np.float32, mask=mask)
    e = exp(d, dtype=np.float32, mask=mask)
    s = sum(e, axis, dtype=np.float32, keepdims=True, mask=mask)
    return divide(e, s, dtype=dtype or t.dtype, mask=mask)


def rms_norm(x, w, axis, n, epsilon=1e-6, *, dtype=None, compute_dtype=None, mask=None, **kwargs):
    """x / sqrt(mean(x**2) + epsilon) * w along a free axis; n is the element count."""
    t = as_tile(x)
    sq = multiply(t, t, dtype=np.float32, mask=mask)
    s = sum(sq, axis, dtype=np.float32, keepdims=True, mask=mask)
    ms = divide(s, float(n), dtype=np.float32)
    r = rsqrt(add(ms, float(epsilon), dtype=np.float32), dtype=np.float32)
    y = multiply(t, r, dtype=np.float32, mask=mask)
    return multiply(y, w, dtype=dtype or t.dtype, mask=mask)


def dropout(x, rate, *, dtype=None, mask=None, **kwargs):
    """Zero elements with probability rate (the program instance's generator)."""
    tr = require("dropout")
    t = as_tile(x)
    out = _result(t.shape, dtype or t.dtype)
    if is_tile(rate):
        tr.emit("dropout", [out.tile()], [t, as_tile(rate)], mask=mask)
    else:
        tr.emit("dropout", [out.tile()], [t], {"prob": float(rate)}, mask=mask)
    return out


def device_print(prefix, x, *, mask=None, **kwargs):
    """Print a tile when the kernel runs (simulation)."""
    require("device_print").emit("print", src=[as_tile(x)], attrs={"prefix": str(prefix)})


def all_reduce(x, op, program_axes=None, *, dtype=None, mask=None, parallel_reduce=True, asynchronous=False, **kwargs):
    """Reduce x across the program instances of program_axes (all by default)."""
    tr = require("all_reduce")
    t = as_tile(x)
    tr.has_collectives = True
    out = _result(t.shape, dtype or t.dtype)
    axes = list(range(len(tr.grid))) if program_axes is None else ([program_axes] if isinstance(program_axes, int) else list(program_axes))
    tr.emit("all_reduce", [out.tile()], [t], {"op": op_name(op), "program_axes": axes}, mask=mask)
    return out


def loop_reduce(x, op, loop_indices, *, dtype=None, mask=None, **kwargs):
    """Reduce x with op across the iterations of loop_indices into the tile
    the result is assigned to: `acc[i] = nl.loop_reduce(x, op=np.add,
    loop_indices=[k])` makes acc[i] = op(acc[i], x) in every iteration (acc
    keeps its value from before the loop, as on the device)."""
    from .._trace import LoopReduce

    require("loop_reduce")
    as_tile(x, "loop_reduce input")
    for v in (loop_indices if isinstance(loop_indices, (list, tuple)) else [loop_indices]):
        if not (isinstance(v, Sym) and not v.shape and builtins.all(k == LOOP_VAR for k, _ in v.terms)) and not isinstance(v, (int, np.integer)):
            raise KernelError(f"{user_location()}: loop_reduce loop_indices must be loop variables, got {v!r}")
    return LoopReduce(x, op_name(op), dtype, mask)


def gather_flattened(data, indices, *, mask=None, dtype=None, **kwargs):
    """out[p, j] = data[p, indices[p, j]] over the flattened free axis of a 2-D tile (per partition)."""
    tr = require("gather_flattened")
    d, ix = as_tile(data, "data"), as_tile(indices, "indices")
    if len(d.shape) != 2 or len(ix.shape) != 2 or ix.shape[0] != d.shape[0]:
        raise KernelUnsupportedError(
            f"{user_location()}: gather_flattened supports a 2-D data tile and a (P, J) index tile with the same partitions; "
            f"got {list(d.shape)} and {list(ix.shape)}")
    if not _dtypes.is_int(ix.dtype):
        raise KernelError(f"{user_location()}: gather_flattened indices must be integers, got {_dtypes.name_of(ix.dtype)}")
    # The data tile read at (p, index[p, j]): a dynamic index on its free dimension.
    src_idx = [d.index[0], Sym(0)]
    dyn_dim = [k for k, e in enumerate(d.index) if (TILE_AXIS, 1) in e.terms]
    if len(dyn_dim) != 1 or d.index[dyn_dim[0]].terms[(TILE_AXIS, 1)] != 1:
        raise KernelUnsupportedError(f"{user_location()}: gather_flattened needs a unit-stride free axis in its data tile")
    idx = []
    for k, e in enumerate(d.index):
        terms = {kk: c for kk, c in e.terms.items() if kk != (TILE_AXIS, 1)}
        idx.append(Sym(e.const, terms, ()))
    src = Tile(d.tensor, ix.shape, idx, list(d.dynamic) + [(dyn_dim[0], ix)])
    out = _result(ix.shape, dtype or d.dtype)
    tr.emit("tensor_copy", [out.tile()], [src], mask=mask, engine="gpsimd")
    return out


def op_name(op):
    """The ALU/activation name of an op argument (an nl function, a numpy ufunc or a name)."""
    if isinstance(op, str):
        return op
    name = OP_NAMES.get(op)
    if name is None:
        n = getattr(op, "__name__", None)
        if n in OP_NAMES.values():
            return n
        raise KernelError(f"{user_location()}: {op!r} is not an operator the engines support")
    return name


# ---- indexing ----


def arange(*args):
    """A 1-D index expression over a tile axis: arange(stop) or arange(start, stop)."""
    if len(args) == 1:
        start, stop = 0, int(args[0])
    elif len(args) == 2:
        start, stop = int(args[0]), int(args[1])
    else:
        raise KernelError(f"{user_location()}: arange takes (stop) or (start, stop)")
    n = stop - start
    if n <= 0:
        raise KernelError(f"{user_location()}: arange({start}, {stop}) is empty")
    return Sym(start, {(TILE_AXIS, 0): 1} if n > 1 else {}, (n,))


class _MGridResult(tuple):
    @property
    def p(self):
        return self[0]

    @property
    def x(self):
        return self[1]

    @property
    def y(self):
        return self[2]

    @property
    def z(self):
        return self[3]


class _MGrid:
    """nl.mgrid[0:128, 0:512]: broadcast index grids (like numpy's ogrid)."""

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        r = len(key)
        out = []
        for k, sl in enumerate(key):
            if not isinstance(sl, slice) or sl.step not in (None, 1):
                raise KernelError(f"{user_location()}: mgrid takes unit-step slices, got {sl!r}")
            start = 0 if sl.start is None else int(sl.start)
            n = int(sl.stop) - start
            shape = tuple(n if j == k else 1 for j in range(r))
            out.append(Sym(start, {(TILE_AXIS, k): 1} if n > 1 else {}, shape))
        return _MGridResult(out)


mgrid = _MGrid()


def ds(start, size):
    """A dynamic slice: `size` elements from `start` (which may be a loop expression)."""
    return DynSlice(start, size)


# ---- loops ----

AFFINE, SEQUENTIAL = 1, 2


class _Range:
    def __init__(self, kind, args, name):
        if len(args) == 1:
            start, stop, step = 0, args[0], 1
        elif len(args) == 2:
            (start, stop), step = args, 1
        elif len(args) == 3:
            start, stop, step = args
        else:
            raise KernelError(f"{user_location()}: {name} takes 1 to 3 arguments")
        try:
            self.start, self.stop, self.step = int(start), int(stop), int(step)
        except SymbolicValueError:
            raise
        if self.step <= 0:
            raise KernelError(f"{user_location()}: {name} step must be positive")
        self.kind, self.name = kind, name

    def __iter__(self):
        tr = current()
        if tr is None or self.kind is None:
            yield from range(self.start, self.stop, self.step)
            return
        var = tr.loop_begin(self.start, self.stop, self.step, self.kind)
        try:
            yield Sym(0, {(LOOP_VAR, var): 1}, ())
        finally:
            tr.loop_end()

    def __len__(self):
        return len(range(self.start, self.stop, self.step))


from ..errors import SymbolicValueError  # noqa: E402


def affine_range(*args, **kwargs):
    """A parallel loop: traced once, its variable symbolic; iterations must be
    independent (except `+=` accumulation into PSUM)."""
    return _Range(AFFINE, args, "affine_range")


def sequential_range(*args, **kwargs):
    """A loop whose iterations may depend on each other; traced once."""
    return _Range(SEQUENTIAL, args, "sequential_range")


def static_range(*args, **kwargs):
    """A loop Python unrolls at trace time (its variable is a plain int)."""
    return _Range(None, args, "static_range")


# ---- SPMD ----


def program_id(axis):
    """The index of this program instance along launch-grid axis `axis`."""
    tr = require("program_id")
    axis = int(axis)
    if axis < 0:
        raise KernelError(f"{user_location()}: program_id({axis}): axis must be non-negative")
    # An axis the launch grid does not have has one instance (index 0).
    if axis >= len(tr.grid) or tr.grid[axis] == 1:
        return Sym(0)
    return Sym(0, {(PROGRAM_ID, axis): 1}, ())


def num_programs(axes=None):
    """The launch grid's size along axes (all axes: their product)."""
    tr = require("num_programs")
    grid = tr.grid or (1,)
    if axes is None:
        return int(np.prod(grid))
    if isinstance(axes, (int, np.integer)):
        return grid[int(axes)] if int(axes) < len(grid) else 1
    return tuple(grid[a] for a in axes)


def program_ndim():
    """The launch grid's rank."""
    return len(require("program_ndim").grid)


class nc:
    """nl.nc(n): a launch-grid dimension of n physical NeuronCores (trn2)."""

    def __init__(self, n):
        self.n = int(n)

    def __repr__(self):
        return f"nc({self.n})"

    def __int__(self):
        return self.n

    __index__ = __int__


class spmd_dim:
    """nl.spmd_dim(size, nl.nc(k)): a grid dimension of `size` instances spread over k cores."""

    def __init__(self, *args):
        self.parts = args
        n = 1
        cores = 1
        for a in args:
            if isinstance(a, nc):
                n *= a.n
                cores *= a.n
            else:
                n *= int(a)
        self.size, self.cores = n, cores

    def __int__(self):
        return self.size

    __index__ = __int__


# The constants submodule (neuronxcc.nki.language.constants).
from . import constants  # noqa: E402,F401


def __getattr__(name):
    # A name the legacy neuronxcc.nki.language surface has no counterpart for here: say so
    # (an AttributeError, so hasattr() and getattr(..., default) still work).
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(
        f"{user_location()}: neuronxcc.nki.language.{name} is not part of the legacy neuronxcc.nki.language API goldtrace implements "
        "(newer NKI releases' additions are not supported)")
