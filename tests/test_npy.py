"""goldtrace.save_npy / load_npy against numpy and ml_dtypes."""

import json
import os

import ml_dtypes
import numpy as np
import pytest

import goldtrace
from goldtrace import dtypes


def sample(dt, rng, shape=(3, 5)):
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dt.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    if "int" in dt.name:
        info = ml_dtypes.iinfo(dt) if dt in dtypes.ML_DTYPES else np.iinfo(dt)
        return rng.integers(max(info.min, -100), min(info.max, 100) + 1, size=shape).astype(dt)
    return (rng.standard_normal(shape) * 2).astype(dt)


@pytest.mark.parametrize("dt", dtypes.all_dtypes(), ids=lambda d: d.name)
@pytest.mark.parametrize("order", ["C", "F"])
def test_save_load_every_dtype(tmp_path, dt, order, rng):
    a = np.asarray(sample(dt, rng), order=order)
    path = tmp_path / "x.npy"
    goldtrace.save_npy(path, a)
    b = goldtrace.load_npy(path)
    assert b.dtype == dt and b.shape == a.shape
    assert b.tobytes() == np.ascontiguousarray(a).tobytes()
    has_meta = os.path.exists(str(path) + ".meta")
    assert has_meta == (dt in dtypes.ML_DTYPES)
    if has_meta:
        assert json.load(open(str(path) + ".meta")) == {"ml_dtype": dt.name}
        # The file itself is plain numpy: raw bits of the right width.
        raw = np.load(path)
        assert raw.dtype.kind == "V" and raw.dtype.itemsize == dt.itemsize


def test_numpy_written_files_load(tmp_path, rng):
    a = rng.standard_normal((4, 3)).astype(np.float32)
    for version in [(1, 0), (2, 0), (3, 0)]:
        p = tmp_path / f"v{version[0]}.npy"
        with open(p, "wb") as f:
            np.lib.format.write_array(f, np.asfortranarray(a), version=version)
        np.testing.assert_array_equal(goldtrace.load_npy(p), a)


def test_ml_dtypes_np_save_without_meta_needs_dtype(tmp_path):
    a = np.arange(6, dtype=np.float32).astype(ml_dtypes.bfloat16)
    p = tmp_path / "b.npy"
    np.save(p, a)  # numpy writes '|V2': the type is lost
    with pytest.raises(goldtrace.ParseError, match="meta"):
        goldtrace.load_npy(p)
    b = goldtrace.load_npy(p, dtype=ml_dtypes.bfloat16)
    assert b.dtype == ml_dtypes.bfloat16 and b.tobytes() == a.tobytes()


def test_f1_descr_reads_as_float8_e5m2(tmp_path):
    a = np.array([1.0, -2.5, 0.125], dtype=ml_dtypes.float8_e5m2)
    p = tmp_path / "e5m2.npy"
    np.save(p, a)
    b = goldtrace.load_npy(p)
    assert b.dtype == ml_dtypes.float8_e5m2 and b.tobytes() == a.tobytes()


def test_stale_meta_removed_for_plain_dtype(tmp_path):
    p = tmp_path / "x.npy"
    goldtrace.save_npy(p, np.zeros(2, ml_dtypes.bfloat16))
    goldtrace.save_npy(p, np.zeros(2, np.float32))
    assert not os.path.exists(str(p) + ".meta")
    assert goldtrace.load_npy(p).dtype == np.float32


def test_errors_are_typed(tmp_path):
    with pytest.raises(goldtrace.GoldtraceIOError):
        goldtrace.load_npy(tmp_path / "missing.npy")
    bad = tmp_path / "bad.npy"
    bad.write_bytes(b"\x93NUMPY\x01\x00garbage")
    with pytest.raises(goldtrace.ParseError, match="bad.npy"):
        goldtrace.load_npy(bad)
    trunc = tmp_path / "trunc.npy"
    np.save(trunc, np.arange(100, dtype=np.float64))
    trunc.write_bytes(trunc.read_bytes()[:-10])
    with pytest.raises(goldtrace.ParseError, match="trunc.npy"):
        goldtrace.load_npy(trunc)
    meta = tmp_path / "m.npy"
    np.save(meta, np.zeros(2, np.uint16))
    (tmp_path / "m.npy.meta").write_text("{not json")
    with pytest.raises(goldtrace.ParseError, match="meta"):
        goldtrace.load_npy(meta)
