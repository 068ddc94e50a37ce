"""The kernel language's dtypes: numpy / ml_dtypes types plus tfloat32, and
the documented type-promotion rules."""

import ml_dtypes
import numpy as np

from .. import dtypes as _xla
from .errors import KernelError, user_location


class _TF32:
    """tfloat32: stored as float32, computed with a 10-bit mantissa on the PE."""

    name = "tfloat32"
    itemsize = 4
    kind = "f"

    def __repr__(self):
        return "nl.tfloat32"


tfloat32 = _TF32()

_ALIASES = {"bfloat16": ml_dtypes.bfloat16, "float8_e4m3": ml_dtypes.float8_e4m3, "float8_e5m2": ml_dtypes.float8_e5m2,
            "float16": np.float16, "float32": np.float32, "int8": np.int8, "int16": np.int16, "int32": np.int32,
            "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "bool": np.bool_, "bool_": np.bool_,
            "fp32": np.float32, "bf16": ml_dtypes.bfloat16, "fp16": np.float16, "tfloat32": tfloat32}

SUPPORTED = {np.dtype(t) for t in (np.float32, np.float16, np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32, np.bool_)}
SUPPORTED |= {np.dtype(ml_dtypes.bfloat16), np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2),
              np.dtype(ml_dtypes.float8_e4m3)}


_CANON = {}


def canonical(dtype):
    """np.dtype of a kernel dtype (tfloat32 stays the marker); KernelError if unknown."""
    try:
        hit = _CANON.get(dtype)
    except TypeError:
        hit = None
    if hit is not None:
        return hit
    dt = _canonical(dtype)
    try:
        _CANON[dtype] = dt
    except TypeError:
        pass
    return dt


def _canonical(dtype):
    if dtype is tfloat32 or isinstance(dtype, _TF32):
        return tfloat32
    if isinstance(dtype, str) and dtype in _ALIASES:
        dtype = _ALIASES[dtype]
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise KernelError(f"{user_location()}: unknown dtype {dtype!r}") from None
    if dt == np.float64:
        # numpy's default float: kernels written against the real simulator pass it for float32 data.
        raise KernelError(f"{user_location()}: dtype float64 is not supported by the hardware; use nl.float32")
    if dt == np.int64 or dt == np.uint64:
        raise KernelError(f"{user_location()}: dtype {dt} is not supported by the hardware; use a 32-bit integer type")
    if dt not in SUPPORTED:
        raise KernelError(f"{user_location()}: dtype {dt} is not a kernel dtype")
    return dt


_CODES = {}


def code_of(dtype):
    """(XLA element-type code, is tfloat32) of a kernel dtype."""
    try:
        hit = _CODES.get(dtype)
    except TypeError:
        hit = None
    if hit is not None:
        return hit
    dt = canonical(dtype)
    out = (11, True) if dt is tfloat32 else (_xla.code_of(dt), False)
    try:
        _CODES[dtype] = out
    except TypeError:
        pass
    return out


def name_of(dt):
    if dt is tfloat32:
        return "tfloat32"
    return np.dtype(dt).name


def storage(dt):
    """The numpy dtype arrays of this kernel dtype use."""
    return np.dtype(np.float32) if dt is tfloat32 else np.dtype(dt)


def is_float(dt):
    return dt is tfloat32 or np.dtype(dt).kind == "f" or np.dtype(dt) in (np.dtype(ml_dtypes.bfloat16),) or "float8" in np.dtype(dt).name


_IS_INT = {}


def is_int(dt):
    try:
        return _IS_INT[dt]
    except (KeyError, TypeError):
        pass
    out = dt is not tfloat32 and np.dtype(dt).kind in "iub"
    try:
        _IS_INT[dt] = out
    except TypeError:
        pass
    return out


_F8 = {np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2), np.dtype(ml_dtypes.float8_e4m3)}
_FLOAT_RANK = {np.dtype(ml_dtypes.float8_e4m3fn): 1, np.dtype(ml_dtypes.float8_e5m2): 1, np.dtype(ml_dtypes.float8_e4m3): 1,
               np.dtype(ml_dtypes.bfloat16): 2, np.dtype(np.float16): 2, np.dtype(np.float32): 3}


def promote(a, b):
    """The documented promotion of two tile dtypes."""
    if a is tfloat32 or b is tfloat32:
        return np.dtype(np.float32)
    a, b = np.dtype(a), np.dtype(b)
    if a == b:
        return a
    if a == np.bool_:
        return b
    if b == np.bool_:
        return a
    fa, fb = is_float(a), is_float(b)
    if fa and not fb:
        return a
    if fb and not fa:
        return b
    if fa and fb:
        if a in _F8 and b in _F8:
            return np.dtype(ml_dtypes.bfloat16)
        if {a, b} == {np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)}:
            return np.dtype(np.float32)
        return a if _FLOAT_RANK[a] >= _FLOAT_RANK[b] else b
    # two integers
    if a.kind == b.kind:
        return a if a.itemsize >= b.itemsize else b
    s, u = (a, b) if a.kind == "i" else (b, a)
    if s.itemsize > u.itemsize:
        return s
    wider = {1: np.int16, 2: np.int32}.get(u.itemsize)
    return np.dtype(wider) if wider else np.dtype(np.float32)


def promote_scalar(t, scalar):
    """A tile dtype meeting a weak Python scalar: ints keep the tile's type,
    a float scalar turns an integer tile into float32."""
    if isinstance(scalar, (bool, np.bool_)):
        return t
    if isinstance(scalar, (float, np.floating)) and is_int(t):
        return np.dtype(np.float32)
    return t
