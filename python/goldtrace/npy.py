"""Saving and loading .npy files, including ml_dtypes arrays.

numpy cannot name ml_dtypes types in a .npy header, so such arrays are stored as
their raw bits (`|V1` / `|V2`) beside a sidecar `<file>.npy.meta` holding
`{"ml_dtype": "<name>"}` -- the convention of the original xla_infergoldens."""

import json
import os
import tempfile

import ml_dtypes
import numpy as np

from . import dtypes
from .errors import GoldtraceIOError, ParseError


def _meta_path(path):
    return os.fspath(path) + ".meta"


def _atomic_write(path, write):
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npy", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save_npy(path, array):
    """Write `array` to `path` (.npy). ml_dtypes arrays get a `.meta` sidecar;
    a stale sidecar is removed for plain dtypes. Writes are atomic."""
    path = os.fspath(path)
    a = np.asarray(array)
    meta = _meta_path(path)
    if a.dtype in dtypes.ML_DTYPES:
        raw = np.ascontiguousarray(a).view(np.dtype(f"V{a.dtype.itemsize}"))
        _atomic_write(path, lambda f: np.lib.format.write_array(f, raw, allow_pickle=False))
        body = json.dumps({"ml_dtype": a.dtype.name}).encode()
        _atomic_write(meta, lambda f: f.write(body))
    else:
        dtypes.code_of(a.dtype)  # refuse dtypes XLA has no type for
        _atomic_write(path, lambda f: np.lib.format.write_array(f, a, allow_pickle=False))
        if os.path.exists(meta):
            os.unlink(meta)


def _read_meta(path):
    meta = _meta_path(path)
    if not os.path.exists(meta):
        return None
    try:
        with open(meta, "rb") as f:
            doc = json.loads(f.read())
        name = doc["ml_dtype"]
        return np.dtype(getattr(ml_dtypes, name) if hasattr(ml_dtypes, name) else name)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ParseError(f"{meta}: not a valid .meta sidecar ({exc})") from None


def load_npy(path, dtype=None):
    """Read a .npy file, honouring its `.meta` sidecar. `dtype` forces the element
    type of a raw-bits (`|V`) file that has no sidecar."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise GoldtraceIOError(f"{path}: no such file")
    forced = _read_meta(path) or (np.dtype(dtype) if dtype is not None else None)
    with open(path, "rb") as f:
        head = f.read(1024)
        f.seek(0)
        if b"'<f1'" in head:
            # ml_dtypes writes float8_e5m2 as '<f1', which numpy refuses to parse.
            return _load_f1(f, path)
        try:
            data = np.lib.format.read_array(f, allow_pickle=False)
        except (ValueError, EOFError, OSError) as exc:
            raise ParseError(f"{path}: not a valid .npy file: {exc}") from None
    if forced is not None:
        if data.dtype.itemsize != forced.itemsize:
            raise ParseError(f"{path}: element size {data.dtype.itemsize} does not match {forced.name}")
        data = np.ascontiguousarray(data).view(forced)
    elif data.dtype.kind == "V":
        raise ParseError(f"{path}: raw-bits dtype {data.dtype} without a .meta sidecar; pass dtype=")
    return np.ascontiguousarray(data)


def _load_f1(f, path):
    import ast

    version = np.lib.format.read_magic(f)
    hlen = int.from_bytes(f.read(2 if version == (1, 0) else 4), "little")
    header = ast.literal_eval(f.read(hlen).decode("latin1"))
    shape = tuple(header["shape"])
    data = np.fromfile(f, dtype=np.uint8)
    n = int(np.prod(shape, dtype=np.int64))
    if data.size < n:
        raise ParseError(f"{path}: truncated data")
    return data[:n].reshape(shape, order="F" if header["fortran_order"] else "C").view(ml_dtypes.float8_e5m2).copy()
