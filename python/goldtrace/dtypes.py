"""The XLA element types goldtrace carries, and their numpy / ml_dtypes twins."""

import ml_dtypes
import numpy as np

# XLA PrimitiveType number -> numpy dtype. Numbers are xla_data.proto's.
_BY_CODE = {
    1: np.dtype(np.bool_),
    2: np.dtype(np.int8), 3: np.dtype(np.int16), 4: np.dtype(np.int32), 5: np.dtype(np.int64),
    6: np.dtype(np.uint8), 7: np.dtype(np.uint16), 8: np.dtype(np.uint32), 9: np.dtype(np.uint64),
    10: np.dtype(np.float16), 11: np.dtype(np.float32), 12: np.dtype(np.float64),
    15: np.dtype(np.complex64), 18: np.dtype(np.complex128),
    16: np.dtype(ml_dtypes.bfloat16),
    19: np.dtype(ml_dtypes.float8_e5m2), 20: np.dtype(ml_dtypes.float8_e4m3fn),
    21: np.dtype(ml_dtypes.int4), 22: np.dtype(ml_dtypes.uint4),
    23: np.dtype(ml_dtypes.float8_e4m3b11fnuz), 24: np.dtype(ml_dtypes.float8_e5m2fnuz),
    25: np.dtype(ml_dtypes.float8_e4m3fnuz),
    26: np.dtype(ml_dtypes.int2), 27: np.dtype(ml_dtypes.uint2),
    28: np.dtype(ml_dtypes.float8_e4m3), 29: np.dtype(ml_dtypes.float8_e3m4),
    32: np.dtype(ml_dtypes.float4_e2m1fn), 33: np.dtype(ml_dtypes.float8_e8m0fnu),
}
if hasattr(ml_dtypes, "int1"):
    _BY_CODE[30] = np.dtype(ml_dtypes.int1)
    _BY_CODE[31] = np.dtype(ml_dtypes.uint1)

_BY_DTYPE = {dt: code for code, dt in _BY_CODE.items()}

#: dtypes numpy cannot describe in a .npy header (saved as raw bits plus a .meta sidecar).
ML_DTYPES = frozenset(dt for dt in _BY_CODE.values() if dt.type.__module__.startswith("ml_dtypes"))

#: HLO text name of each dtype.
HLO_NAMES = {
    "pred": 1, "s8": 2, "s16": 3, "s32": 4, "s64": 5, "u8": 6, "u16": 7, "u32": 8, "u64": 9,
    "f16": 10, "f32": 11, "f64": 12, "c64": 15, "bf16": 16, "c128": 18, "f8e5m2": 19,
    "f8e4m3fn": 20, "s4": 21, "u4": 22, "f8e4m3b11fnuz": 23, "f8e5m2fnuz": 24, "f8e4m3fnuz": 25,
    "s2": 26, "u2": 27, "f8e4m3": 28, "f8e3m4": 29, "s1": 30, "u1": 31, "f4e2m1fn": 32,
    "f8e8m0fnu": 33,
}


def all_dtypes():
    """Every numpy dtype goldtrace supports, in XLA number order."""
    return [_BY_CODE[c] for c in sorted(_BY_CODE)]


def code_of(dtype) -> int:
    """The XLA PrimitiveType number of a numpy dtype; ValueError if unsupported."""
    dt = np.dtype(dtype)
    if dt.byteorder == ">":
        dt = dt.newbyteorder("<")
    try:
        return _BY_DTYPE[dt]
    except KeyError:
        raise ValueError(f"goldtrace does not support dtype {dt!r}") from None


def dtype_of(code: int) -> np.dtype:
    """The numpy dtype of an XLA PrimitiveType number."""
    try:
        return _BY_CODE[code]
    except KeyError:
        raise ValueError(f"no numpy dtype for XLA element type number {code}") from None


def from_hlo_name(name: str) -> np.dtype:
    """The numpy dtype of an HLO element type name such as 'bf16'."""
    try:
        return _BY_CODE[HLO_NAMES[name]]
    except KeyError:
        raise ValueError(f"no numpy dtype for HLO element type {name!r}") from None
