"""goldtrace.nki.isa (`nisa`): the legacy neuronxcc.nki.isa instructions.

Each function is one engine instruction of the kernel IR (kernel/ir); the
simulator computes in float32 and rounds to the result's dtype.
"""

import enum

import numpy as np

from .. import _dtypes
from .._sym import Mask, Pred, Sym
from .._trace import HBM_SPACES, PSUM, SBUF, as_tile, assign, is_tile, require
from .._trace import index as _index
from ..errors import KernelError, KernelUnsupportedError, user_location
from .. import language as nl
from . import constants
from .constants import dge_mode, engine, nc_version, oob_mode, reduce_cmd

# Engines, as module attributes (nisa.vector_engine, ...).
tensor_engine = engine.tensor
vector_engine = engine.vector
scalar_engine = engine.scalar
gpsimd_engine = engine.gpsimd
sync_engine = engine.sync
unknown_engine = engine.unknown


def _eng(e):
    if e is None:
        return ""
    if isinstance(e, engine):
        return "" if e is engine.unknown else e.name
    return str(e)


def _operand(x, what):
    """A scalar immediate or a (P,1) per-partition tile."""
    if is_tile(x):
        t = as_tile(x, what)
        if len(t.shape) == 1:  # a (P,) reduction result is a per-partition operand
            from .._trace import _reshape_like

            t = _reshape_like(t, (t.shape[0], 1))
        return None, t
    if isinstance(x, (int, float, np.integer, np.floating, bool)):
        return float(x), None
    raise KernelError(f"{user_location()}: {what} must be a scalar or a (P,1) tile, got {type(x).__name__}")


def nc_matmul(stationary, moving, *, is_stationary_onezero=False, is_moving_onezero=False, is_transpose=False,
              tile_position=(), tile_size=(), perf_mode=None, mask=None, **kwargs):
    """stationary.T @ moving on the tensor engine: a (stationary free, moving free) f32 tile in PSUM.
    tile_position / tile_size (PE-array tiling) change where the engine works,
    not the numbers. perf_mode="double_row_gen3" contracts operands of shape
    (P, 2, F) over both P and the pair axis."""
    tr = require("nc_matmul")
    s, m = as_tile(stationary, "stationary"), as_tile(moving, "moving")
    if perf_mode is not None:
        if perf_mode != "double_row_gen3":
            raise KernelUnsupportedError(f"{user_location()}: nc_matmul perf_mode={perf_mode!r} is not supported (only 'double_row_gen3')")
        if len(s.shape) != 3 or len(m.shape) != 3 or s.shape[1] != 2 or m.shape[1] != 2 or s.shape[0] != m.shape[0]:
            raise KernelError(f"{user_location()}: nc_matmul perf_mode='double_row_gen3' needs operands of shape (P, 2, F) "
                              f"with the same P, got {list(s.shape)} and {list(m.shape)}")
        out = nl._result((s.shape[2], m.shape[2]), np.float32, nl.psum)
        for r in range(2):
            sr, mr = _index(s, (slice(None), r, slice(None))), _index(m, (slice(None), r, slice(None)))
            tr.emit("matmul", [out.tile()], [sr, mr], {"accumulate": True} if r else None, mask=mask, engine="tensor")
        out._matmul_group = 2  # `psum += nc_matmul(...)` folds both into psum
        return out
    # The tensor engine reads SBUF. An operand that is the PSUM result of a
    # previous instruction (nc_transpose, nc_matmul) was placed there by the
    # toolchain, which copies it out, as the compiler does; a tensor the
    # kernel itself declared in PSUM stays an error (the validator's rule).
    s = nl._to_sbuf(s, "nc_matmul operands") if (s.memory == PSUM and s.tensor.implicit) else s
    m = nl._to_sbuf(m, "nc_matmul operands") if (m.memory == PSUM and m.tensor.implicit) else m
    if len(s.shape) != 2 or len(m.shape) != 2:
        raise KernelError(f"{user_location()}: nc_matmul needs 2-D tiles, got {list(s.shape)} and {list(m.shape)}")
    if s.shape[0] != m.shape[0]:
        raise KernelError(f"{user_location()}: nc_matmul: stationary and moving must share the partition (contraction) size, got {s.shape[0]} and {m.shape[0]}")
    if is_transpose:
        # stationary.T @ moving with moving an identity matrix (the flag's
        # contract): the tensor engine passes stationary through transposed.
        if tuple(m.shape) != (s.shape[0], s.shape[0]):
            raise KernelError(f"{user_location()}: nc_matmul(is_transpose=True) needs moving to be the ({s.shape[0]}, {s.shape[0]}) "
                              f"identity matrix, got a tile of shape {list(m.shape)}")
        out = nl._result((s.shape[1], s.shape[0]), np.float32, nl.psum)
        tr.emit("transpose", [out.tile()], [s], {"engine": "tensor"}, mask=mask, engine="tensor")
        return out
    if mask is None:
        return tr.result_inst("matmul", (s.shape[1], m.shape[1]), np.float32, (s, m), None, memory=PSUM, engine="tensor")
    out = nl._result((s.shape[1], m.shape[1]), np.float32, nl.psum)
    tr.emit("matmul", [out.tile()], [s, m], mask=mask, engine="tensor")
    return out


def nc_transpose(data, *, mask=None, dtype=None, engine=engine.unknown, **kwargs):
    """2-D transpose: on the tensor engine (≤128×128, result in PSUM) or the vector engine (≤32×32, SBUF)."""
    tr = require("nc_transpose")
    t = as_tile(data)
    if len(t.shape) != 2:
        raise KernelError(f"{user_location()}: nc_transpose needs a 2-D tile, got {list(t.shape)}")
    e = _eng(engine)
    if e == "":
        e = "vector" if (t.shape[0] <= 32 and t.shape[1] <= 32) else "tensor"
    buf = nl.psum if e == "tensor" else nl.sbuf
    if e == "tensor" and t.memory == PSUM and t.tensor.implicit:
        t = nl._to_sbuf(t, "nc_transpose input")
    out = nl._result((t.shape[1], t.shape[0]), dtype or t.dtype, buf)
    tr.emit("transpose", [out.tile()], [t], {"engine": e}, mask=mask, engine=e)
    return out


def _reg_cmd(cmd, what):
    """The reduce_cmd attribute (None for idle, which needs no registers)."""
    if cmd is None:
        return None
    if isinstance(cmd, reduce_cmd):
        v = cmd.value
    elif isinstance(cmd, enum.Enum):
        v = cmd.value  # the real package's enum, through nki.compat
    else:
        try:
            v = int(cmd)
        except (TypeError, ValueError):
            raise KernelError(f"{user_location()}: {what}: reduce_cmd must be an nisa.reduce_cmd, got {cmd!r}") from None
    if v not in (0, 1, 2, 3):
        raise KernelError(f"{user_location()}: {what}: unknown reduce_cmd {cmd!r} (idle, reset, reduce, reset_reduce)")
    return v or None


def _activation(opname, data, bias, scale, reduce_op, reduce_res, dtype, mask, reduce_required=False, cmd=None):
    tr = require(opname)
    t = as_tile(data, "data")
    func = nl.op_name(opname if isinstance(opname, str) else opname)
    src = [t]
    attrs = {"func": func, "has_bias": bias is not None}
    if bias is not None:
        src.append(_operand(bias, "bias")[1] if is_tile(bias) else as_tile(bias, "bias"))
    sv, st = _operand(scale, "scale")
    attrs["has_scale"] = st is not None
    if st is not None:
        src.append(st)
    else:
        attrs["scale"] = sv
    dst = []  # after the result: the reduction's destination, if any
    what = opname if isinstance(opname, str) else "activation"
    if cmd is not None:
        # The scalar engine's accumulator registers: reset, accumulate
        # into or overwrite them; reduce_res= reads them out.
        attrs["reduce_cmd"] = cmd
        if cmd != reduce_cmd.reset.value:
            attrs["reduce_op"] = nl.op_name(reduce_op if reduce_op is not None else np.add)
        if reduce_res is not None:
            dst.append(as_tile(reduce_res, "reduce_res"))
    elif reduce_op is not None or reduce_required or reduce_res is not None:
        # reduce_res= alone reduces with the engine's only reduction, add.
        if reduce_res is None:
            raise KernelError(f"{user_location()}: {what}: reduce_op needs reduce_res=")
        dst.append(as_tile(reduce_res, "reduce_res"))
        attrs["reduce_op"] = nl.op_name(reduce_op if reduce_op is not None else np.add)
    if mask is None and not dst:
        return tr.result_inst("activation", t.shape, dtype or t.dtype, src, attrs, engine="scalar", plain=False)
    out = nl._result(t.shape, dtype or t.dtype)
    tr.emit("activation", [out.tile()] + dst, src, attrs, mask=mask, engine="scalar", domain=t.shape)
    return out


def activation(op, data, *, bias=None, scale=1.0, reduce_op=None, reduce_res=None, reduce_cmd=None, mask=None, dtype=None, **kwargs):
    """op(data * scale + bias) on the scalar engine; optionally reduces the result along the free axes into
    reduce_res, or (reduce_cmd) into the engine's accumulator registers, which reduce_res reads out."""
    return _activation(op, data, bias, scale, reduce_op, reduce_res, dtype, mask, cmd=_reg_cmd(reduce_cmd, "activation"))


def activation_reduce(op, data, *, reduce_op, reduce_res, bias=None, scale=1.0, mask=None, dtype=None, **kwargs):
    """activation with a free-axis reduction of the result into reduce_res (P,1)."""
    return _activation(op, data, bias, scale, reduce_op, reduce_res, dtype, mask, reduce_required=True)


def tensor_tensor(data1, data2, op, *, dtype=None, mask=None, engine=engine.unknown, **kwargs):
    """op(data1, data2) element-wise on the vector (or gpsimd) engine."""
    tr = require("tensor_tensor")
    a, b = nl._align_ranks(as_tile(data1, "data1"), as_tile(data2, "data2"))
    if a.memory == PSUM and b.memory == PSUM:
        raise KernelError(f"{user_location()}: tensor_tensor: at most one input may be in PSUM")
    if mask is None:
        return tr.result_inst("tensor_tensor", a.shape, dtype or _dtypes.promote(a.dtype, b.dtype), (a, b),
                              {"op": nl.op_name(op)}, engine=_eng(engine))
    out = nl._result(a.shape, dtype or _dtypes.promote(a.dtype, b.dtype))
    tr.emit("tensor_tensor", [out.tile()], [a, b], {"op": nl.op_name(op)}, mask=mask, engine=_eng(engine))
    return out


def tensor_scalar(data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False, *, dtype=None, mask=None,
                  engine=engine.unknown, **kwargs):
    """(data op0 operand0) op1 operand1, operands scalars or (P,1) tiles."""
    tr = require("tensor_scalar")
    t = as_tile(data, "data")
    src = [t]
    attrs = {"op0": nl.op_name(op0), "reverse0": bool(reverse0)}
    v0, t0 = _operand(operand0, "operand0")
    if t0 is not None:
        src.append(t0)
        attrs["has_operand0_tile"] = True
    else:
        attrs["scalar0"] = v0
    if op1 is not None:
        attrs["op1"] = nl.op_name(op1)
        attrs["reverse1"] = bool(reverse1)
        v1, t1 = _operand(operand1, "operand1")
        if t1 is not None:
            if t0 is None:
                raise KernelError(f"{user_location()}: tensor_scalar: a tile operand1 needs a tile operand0 too")
            src.append(t1)
            attrs["has_operand1_tile"] = True
        else:
            attrs["scalar1"] = v1
    if mask is None:
        return tr.result_inst("tensor_scalar", t.shape, dtype or t.dtype, src, attrs, engine=_eng(engine), plain=False)
    out = nl._result(t.shape, dtype or t.dtype)
    tr.emit("tensor_scalar", [out.tile()], src, attrs, mask=mask, engine=_eng(engine))
    return out


def scalar_tensor_tensor(*, data, op0, operand0, op1, operand1, reverse0=False, reverse1=False, dtype=None, mask=None, **kwargs):
    """(data op0 operand0) op1 operand1, operand0 a scalar or (P,1) tile, operand1 a tile."""
    tr = require("scalar_tensor_tensor")
    t = as_tile(data, "data")
    src = [t]
    attrs = {"op0": nl.op_name(op0), "op1": nl.op_name(op1), "reverse0": bool(reverse0), "reverse1": bool(reverse1)}
    v0, t0 = _operand(operand0, "operand0")
    if t0 is not None:
        src.append(t0)
        attrs["has_operand0_tile"] = True
    else:
        attrs["scalar0"] = v0
    src.append(as_tile(operand1, "operand1"))
    out = nl._result(t.shape, dtype or t.dtype)
    tr.emit("scalar_tensor_tensor", [out.tile()], src, attrs, mask=mask)
    return out


def tensor_reduce(op, data, axis, *, mask=None, dtype=None, negate=False, keepdims=False, **kwargs):
    """Reduce along free axes (optionally negating the result)."""
    return nl._reduce(nl.op_name(op), data, axis, dtype, mask, keepdims, negate)


def tensor_partition_reduce(op, data, *, mask=None, dtype=None, **kwargs):
    """Reduce along the partition axis: a (1, F...) result."""
    tr = require("tensor_partition_reduce")
    t = as_tile(data)
    out = nl._result((1,) + tuple(t.shape[1:]), dtype or t.dtype)
    tr.emit("tensor_partition_reduce", [out.tile()], [t], {"op": nl.op_name(op)}, mask=mask, domain=t.shape)
    return out


def tensor_tensor_scan(data0, data1, initial, op0, op1, reverse0=False, reverse1=False, *, dtype=None, mask=None, **kwargs):
    """Scan along the last free axis: r[i] = (r[i-1] op0 data0[i]) op1 data1[i], r[-1] = initial."""
    tr = require("tensor_tensor_scan")
    a, b = as_tile(data0, "data0"), as_tile(data1, "data1")
    src = [a, b]
    if reverse0 or reverse1:
        from ..errors import KernelUnsupportedError

        raise KernelUnsupportedError(f"{user_location()}: tensor_tensor_scan with reverse0/reverse1 is not supported by goldtrace yet")
    attrs = {"op0": nl.op_name(op0), "op1": nl.op_name(op1)}
    iv, it = _operand(initial, "initial")
    if it is not None:
        src.append(it)
        attrs["has_initial_tile"] = True
    else:
        attrs["initial"] = iv
    out = nl._result(a.shape, dtype or _dtypes.promote(a.dtype, b.dtype))
    tr.emit("tensor_tensor_scan", [out.tile()], src, attrs, mask=mask)
    return out


def tensor_scalar_reduce(*, data, op0, operand0, reduce_op, reduce_res, reverse0=False, dtype=None, mask=None, **kwargs):
    """data op0 operand0, also reduced along the free axes into reduce_res (P,1)."""
    tr = require("tensor_scalar_reduce")
    t = as_tile(data, "data")
    src = [t]
    attrs = {"op0": nl.op_name(op0), "reverse0": bool(reverse0), "reduce_op": nl.op_name(reduce_op)}
    v0, t0 = _operand(operand0, "operand0")
    if t0 is not None:
        src.append(t0)
        attrs["has_operand0_tile"] = True
    else:
        attrs["scalar0"] = v0
    out = nl._result(t.shape, dtype or t.dtype)
    tr.emit("tensor_scalar_reduce", [out.tile(), as_tile(reduce_res, "reduce_res")], src, attrs, mask=mask, domain=t.shape)
    return out


def tensor_copy(src, *, mask=None, dtype=None, engine=engine.unknown, **kwargs):
    """Copy a tile on an engine, converting to dtype."""
    tr = require("tensor_copy")
    t = as_tile(src)
    if mask is None:
        return tr.result_inst("tensor_copy", t.shape, dtype or t.dtype, (t,), None, engine=_eng(engine))
    out = nl._result(t.shape, dtype or t.dtype)
    tr.emit("tensor_copy", [out.tile()], [t], mask=mask, engine=_eng(engine))
    return out


def tensor_copy_dynamic_src(src, *, mask=None, dtype=None, engine=engine.unknown, **kwargs):
    """Copy from a source tile addressed with a dynamic (loop- or data-dependent) index."""
    return tensor_copy(src, mask=mask, dtype=dtype, engine=engine)


def tensor_copy_dynamic_dst(*, dst, src, mask=None, dtype=None, engine=engine.unknown, **kwargs):
    """Copy into a destination addressed with a dynamic index."""
    tr = require("tensor_copy_dynamic_dst")
    tr.emit("tensor_copy", [as_tile(dst, "dst")], [as_tile(src, "src")], mask=mask, engine=_eng(engine))


def tensor_copy_predicated(*, src, dst, predicate, mask=None, dtype=None, reverse_pred=False, **kwargs):
    """dst = src where predicate is nonzero (reverse_pred: where it is zero)."""
    tr = require("tensor_copy_predicated")
    tr.emit("copy_predicated", [as_tile(dst, "dst")], [as_tile(src, "src"), as_tile(predicate, "predicate")],
            {"reverse_pred": bool(reverse_pred)}, mask=mask)


def iota(expr, dtype, *, mask=None, **kwargs):
    """A tile whose elements are the value of an affine index expression (int32 math, then dtype)."""
    tr = require("iota")
    e = Sym.coerce(expr)
    if e is None:
        raise KernelError(f"{user_location()}: iota needs an index expression built from nl.arange, got {type(expr).__name__}")
    shape = e.shape or (1,)
    out = nl._result(shape, dtype)
    tr.emit("iota", [out.tile()], exprs=[e], mask=mask)
    return out


def memset(shape, value, dtype, *, mask=None, engine=engine.unknown, **kwargs):
    """A tile filled with value."""
    tr = require("memset")
    out = nl._result(shape, dtype)
    tr.emit("memset", [out.tile()], attrs={"value": float(value)}, mask=mask, engine=_eng(engine))
    return out


def affine_select(pred, on_true_tile, on_false_value, *, dtype=None, mask=None, **kwargs):
    """on_true_tile where an affine predicate over the tile's indices holds, else on_false_value."""
    tr = require("affine_select")
    t = as_tile(on_true_tile, "on_true_tile")
    preds = pred.preds() if isinstance(pred, (Pred, Mask)) else None
    if preds is None:
        raise KernelError(f"{user_location()}: affine_select needs a predicate built from affine comparisons (e.g. i_p >= i_f)")
    out = nl._result(t.shape, dtype or t.dtype)
    tr.emit("affine_select", [out.tile()], [t], {"false_value": float(on_false_value)}, preds=preds, mask=mask)
    return out


_CMP = {np.greater: "greater", np.greater_equal: "greater_equal", np.less: "less", np.less_equal: "less_equal",
        np.equal: "equal", np.not_equal: "not_equal"}


def range_select(*, on_true_tile, comp_op0, comp_op1, bound0, bound1, reduce_cmd=reduce_cmd.idle, reduce_res=None,
                 reduce_op=np.amax, range_start=0, on_false_value=None, mask=None, dtype=None, **kwargs):
    """on_true_tile where (index comp_op0 bound0) and (index comp_op1 bound1), index = range_start + free position; else on_false_value."""
    tr = require("range_select")
    t = as_tile(on_true_tile, "on_true_tile")
    fill = nl.fp32.min if on_false_value is None else float(on_false_value)
    out = nl._result(t.shape, dtype or t.dtype)
    dst = [out.tile()]
    attrs = {"comp0": _CMP.get(comp_op0) or nl.op_name(comp_op0), "comp1": _CMP.get(comp_op1) or nl.op_name(comp_op1),
             "fill": fill, "range_start": float(range_start)}
    cmd = _reg_cmd(reduce_cmd, "range_select")
    if reduce_res is not None or cmd is not None:
        if reduce_res is not None:
            dst.append(as_tile(reduce_res))
        attrs["reduce_op"] = _max_or(reduce_op)
        if cmd is not None:
            attrs["reduce_cmd"] = cmd
    tr.emit("range_select", dst, [t, as_tile(bound0, "bound0"), as_tile(bound1, "bound1")], attrs, mask=mask, domain=t.shape)
    return out


def _max_or(reduce_op):
    return "maximum" if reduce_op in (np.amax, np.max, nl.max, np.maximum) else nl.op_name(reduce_op)


def select_reduce(dst, predicate, on_true, on_false, reduce_res=None, reduce_cmd=reduce_cmd.idle, reduce_op=np.amax,
                  reverse_pred=False, mask=None, **kwargs):
    """dst = where(predicate, on_true, on_false) (reverse_pred: where not); with reduce_res, also
    the max along the free axes into reduce_res (P,1)."""
    tr = require("select_reduce")
    d = as_tile(dst, "dst")
    src = [as_tile(predicate, "predicate"), as_tile(on_true, "on_true")]
    attrs = {"reverse_pred": bool(reverse_pred)}
    if is_tile(on_false):
        src.append(as_tile(on_false, "on_false"))
    else:
        attrs["false_value"] = float(on_false)
    dsts = [d]
    cmd = _reg_cmd(reduce_cmd, "select_reduce")
    if reduce_res is not None or cmd is not None:
        if reduce_res is not None:
            dsts.append(as_tile(reduce_res, "reduce_res"))
        attrs["reduce_op"] = _max_or(reduce_op)
        if cmd is not None:
            attrs["reduce_cmd"] = cmd
    tr.emit("select_reduce", dsts, src, attrs, mask=mask)


def bn_stats(data, *, mask=None, dtype=None, **kwargs):
    """Per-partition mean/variance statistics of a (P, F) tile (F ≤ 512 per chunk), 6 values per chunk."""
    tr = require("bn_stats")
    t = as_tile(data)
    free = int(np.prod(t.shape[1:]))
    chunks = -(-free // 512)
    out = nl._result((t.shape[0], 6 * chunks), dtype or np.float32)
    tr.emit("bn_stats", [out.tile()], [t], mask=mask, domain=t.shape)
    return out


def bn_aggr(data, *, mask=None, dtype=None, **kwargs):
    """Aggregate bn_stats outputs into (mean, variance) per partition: a (P, 2) tile."""
    tr = require("bn_aggr")
    t = as_tile(data)
    out = nl._result((t.shape[0], 2), dtype or np.float32)
    tr.emit("bn_aggr", [out.tile()], [t], mask=mask, domain=t.shape)
    return out


_RMW = {np.add: "add", np.multiply: "multiply", np.maximum: "maximum", np.minimum: "minimum", np.subtract: "subtract"}


def dma_copy(*, dst, src, mask=None, dst_rmw_op=None, oob_mode=oob_mode.error, dge_mode=dge_mode.unknown, **kwargs):
    """Copy src to dst by DMA; dst_rmw_op accumulates (dst = dst op src)."""
    tr = require("dma_copy")
    d, s = as_tile(dst, "dst"), as_tile(src, "src")
    attrs = {"oob_mode": oob_mode.name if hasattr(oob_mode, "name") else str(oob_mode)}
    if dst_rmw_op is not None:
        attrs["dst_rmw_op"] = _RMW.get(dst_rmw_op) or nl.op_name(dst_rmw_op)
    tr.emit("dma", [d], [s], attrs, mask=mask, engine="sync")


# The permutations dma_transpose supports, by rank (the stubs' list): axis i
# of the result is axis perm[i] of the source.
_DMA_TRANSPOSE_AXES = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}


def dma_transpose(src, *, axes=None, mask=None, dtype=None, **kwargs):
    """Transpose a 2-D, 3-D or 4-D tile by DMA: axis i of the result is axis
    axes[i] of src, with axes (1, 0), (2, 1, 0) or (3, 1, 2, 0) by rank."""
    tr = require("dma_transpose")
    t = as_tile(src)
    perm = _DMA_TRANSPOSE_AXES.get(len(t.shape))
    if perm is None:
        raise KernelError(f"{user_location()}: dma_transpose needs a 2-D, 3-D or 4-D tile, got {list(t.shape)}")
    if axes is not None and tuple(int(a) for a in axes) != perm:
        raise KernelError(f"{user_location()}: dma_transpose of a {len(t.shape)}-D tile supports axes={perm}, got {tuple(axes)}")
    if t.memory == PSUM:
        raise KernelError(f"{user_location()}: dma_transpose source must be in HBM or SBUF, not PSUM")
    shape = tuple(t.shape[a] for a in perm)
    out = nl._result(shape, dtype or t.dtype)
    if len(perm) == 2:
        tr.emit("dma_transpose", [out.tile()], [t], mask=mask)
        return out
    if t.dynamic:
        raise KernelUnsupportedError(f"{user_location()}: dma_transpose of a {len(perm)}-D tile with data-dependent indices")
    # A DMA moves elements with any access pattern: the source viewed with
    # its axes permuted is a plain copy (with the cast dtype asks for).
    view = t.with_shape(shape, {a: i for i, a in enumerate(perm)})
    tr.emit("dma", [out.tile()], [view], mask=mask)
    return out


def reciprocal(data, *, dtype=None, mask=None, **kwargs):
    """1/x element-wise."""
    return nl._unary("reciprocal", data, dtype, mask)


def dropout(data, prob, *, mask=None, dtype=None, **kwargs):
    """Zero elements with probability prob (scalar or (P,1) tile)."""
    return nl.dropout(data, prob, mask=mask, dtype=dtype)


def local_gather(src_buffer, index, num_elem_per_idx=1, num_valid_indices=None, *, mask=None, **kwargs):
    """Gather within each group of 16 partitions (gpsimd) by per-partition indices."""
    tr = require("local_gather")
    s, ix = as_tile(src_buffer, "src_buffer"), as_tile(index, "index")
    # Each group of 16 partitions shares its indices: every partition of the
    # group gathers num_valid_indices (default: all 16 partitions' worth)
    # groups of num_elem_per_idx elements.
    per_core = 16 * int(np.prod(ix.shape[1:]))
    valid = per_core if num_valid_indices is None else int(num_valid_indices)
    if not 0 < valid <= per_core:
        raise KernelError(f"{user_location()}: local_gather num_valid_indices={num_valid_indices} must be in 1..{per_core} "
                          f"(the indices of 16 partitions of an index tile {list(ix.shape)})")
    n = valid * int(num_elem_per_idx)
    out = nl._result((s.shape[0], n), s.dtype)
    attrs = {"num_elem_per_idx": int(num_elem_per_idx)}
    if num_valid_indices is not None:
        attrs["num_valid_indices"] = int(num_valid_indices)
    tr.emit("local_gather", [out.tile()], [s, ix], attrs, mask=mask)
    return out


def max8(*, src, mask=None, dtype=None, **kwargs):
    """The 8 largest values of each partition, descending: a (P, 8) tile."""
    tr = require("max8")
    t = as_tile(src)
    out = nl._result((t.shape[0], 8), dtype or t.dtype)
    tr.emit("max8", [out.tile()], [t], mask=mask, domain=t.shape)
    return out


def nc_find_index8(*, data, vals, mask=None, dtype=np.uint32, **kwargs):
    """Index of the first occurrence of each of 8 values per partition: a (P, 8) uint32 tile."""
    tr = require("nc_find_index8")
    t, v = as_tile(data, "data"), as_tile(vals, "vals")
    out = nl._result((t.shape[0], 8), dtype or np.uint32)
    tr.emit("nc_find_index8", [out.tile()], [t, v], mask=mask, domain=t.shape)
    return out


def nc_match_replace8(*, data, vals, imm, dst_idx=None, mask=None, dtype=None, **kwargs):
    """data with the first occurrence of each of 8 values per partition replaced by imm."""
    tr = require("nc_match_replace8")
    t, v = as_tile(data, "data"), as_tile(vals, "vals")
    out = nl._result(t.shape, dtype or t.dtype)
    tr.emit("nc_match_replace8", [out.tile()], [t, v], {"imm": float(imm)}, mask=mask)
    if dst_idx is not None:
        idx = nc_find_index8(data=data, vals=vals)
        assign(dst_idx, idx)
    return out


def nc_stream_shuffle(src, dst, shuffle_mask, *, dtype=None, mask=None, **kwargs):
    """Shuffle partitions within groups of 32: dst[k] = src[shuffle_mask[k]] (255 keeps dst)."""
    tr = require("nc_stream_shuffle")
    tr.emit("nc_stream_shuffle", [as_tile(dst, "dst")], [as_tile(src, "src")], {"shuffle_mask": [int(x) for x in shuffle_mask]}, mask=mask)


def get_nc_version():
    """The NeuronCore generation kernels are traced for."""
    from .. import _platform

    return _platform.nc_version_for_target()


__all__ = [n for n in dir() if not n.startswith("_")]


def __getattr__(name):
    # A name the legacy neuronxcc.nki.isa surface has no counterpart for here: say so
    # (an AttributeError, so hasattr() and getattr(..., default) still work).
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(
        f"{user_location()}: neuronxcc.nki.isa.{name} is not part of the legacy neuronxcc.nki.isa API goldtrace implements "
        "(newer NKI releases' additions are not supported)")
