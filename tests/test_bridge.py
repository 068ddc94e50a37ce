"""The Go <-> Python bridge: every dtype crosses bit-exactly, errors become typed
exceptions, a Go panic does not kill the interpreter, memory stays flat."""

import gc
import os
import resource

import ml_dtypes
import numpy as np
import pytest

import goldtrace
from goldtrace import _bridge, dtypes


def random_array(dt, shape, rng):
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * dt.itemsize, dtype=np.uint8)
    a = raw.view(np.dtype(f"V{dt.itemsize}")).reshape(shape) if dt.itemsize else raw
    a = raw.view(dt) if dt.kind != "b" else (raw % 2).astype(bool)
    if dt.itemsize == 1 and dt.type.__module__.startswith("ml_dtypes") and "int" in dt.name:
        # sub-byte ints: valid values only (ml_dtypes masks on construction)
        info = ml_dtypes.iinfo(dt)
        a = rng.integers(info.min, info.max + 1, size=raw.size).astype(dt)
    if dt.name == "float4_e2m1fn":
        a = (raw & 0x0F).view(dt)
    return a.reshape(shape)


@pytest.mark.parametrize("dt", dtypes.all_dtypes(), ids=lambda d: d.name)
def test_roundtrip_every_dtype_is_bit_exact(dt, rng):
    for shape in [(), (0,), (7,), (3, 4, 5)]:
        a = random_array(dt, shape, rng)
        (b,) = goldtrace.roundtrip(a)
        assert b.dtype == a.dtype and b.shape == a.shape
        assert np.ascontiguousarray(a).tobytes() == b.tobytes()


def test_roundtrip_non_contiguous_and_big_endian(rng):
    a = rng.standard_normal((4, 6)).astype(np.float32)
    fortran = np.asfortranarray(a)
    strided = a[:, ::2]
    big = a.astype(">f4")
    outs = goldtrace.roundtrip(a.T, fortran, strided, big)
    for want, got in zip([a.T, a, strided, a], outs):
        np.testing.assert_array_equal(got, want)
        assert got.dtype == np.float32


def test_unsupported_dtype_is_invalid_argument():
    with pytest.raises(goldtrace.InvalidArgumentError, match="argument 0"):
        goldtrace.roundtrip(np.array(["x"], dtype=object))
    with pytest.raises(goldtrace.InvalidArgumentError):
        goldtrace.roundtrip(np.zeros(2, dtype="datetime64[s]"))


def test_go_panic_becomes_exception_and_interpreter_survives():
    for _ in range(3):
        with pytest.raises(goldtrace.InternalError, match="Go panic"):
            _bridge._test_panic()
    (b,) = goldtrace.roundtrip(np.arange(3, dtype=np.int32))
    np.testing.assert_array_equal(b, [0, 1, 2])
    assert issubclass(goldtrace.InternalError, goldtrace.GoldtraceError)


def _rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def test_memory_is_flat_over_100k_roundtrips():
    arrays = [np.ones((16, 16), np.float32), np.arange(10, dtype=ml_dtypes.bfloat16)]
    for _ in range(5000):  # warm up allocators and the Go heap
        goldtrace.roundtrip(arrays[0])
    gc.collect()
    before = _rss_mb()
    for i in range(100_000):
        goldtrace.roundtrip(arrays[i % 2])
    gc.collect()
    grown = _rss_mb() - before
    assert _bridge.live_handles() == 0
    assert grown < 32, f"resident memory grew by {grown:.1f} MiB over 100k round trips"


# The fork is the point of the test; JAX (imported by other tests) warns about any fork.
@pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")
def test_forked_child_gets_clear_error():
    pid = os.fork()
    if pid == 0:  # child: must not enter Go
        code = 1
        try:
            goldtrace.roundtrip(np.zeros(1, np.float32))
        except goldtrace.ForkedProcessError as exc:
            code = 0 if "spawn" in str(exc) else 2
        except BaseException:
            code = 3
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def test_long_native_calls_release_the_gil():
    """While Go evaluates a large module on another thread, Python keeps running."""
    import threading
    import time

    n = 1536
    module = f"""HloModule big_dot
ENTRY e {{
  a = f32[{n},{n}] parameter(0)
  b = f32[{n},{n}] parameter(1)
  d = f32[{n},{n}] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  ROOT e = f32[{n},{n}] dot(d, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"""
    a = np.full((n, n), 1.0 / n, np.float32)
    mod = goldtrace.hlo.load(module)

    def spin(seconds):
        ticks, end = 0, time.perf_counter() + seconds
        while time.perf_counter() < end:
            ticks += 1
        return ticks

    rate = spin(0.2) / 0.2  # main-thread loop iterations per second, alone
    done = threading.Event()
    elapsed = []

    def worker():
        t0 = time.perf_counter()
        for _ in range(3):
            goldtrace.golden(mod, a, a)
        elapsed.append(time.perf_counter() - t0)
        done.set()

    t = threading.Thread(target=worker)
    ticks = 0
    t.start()
    while not done.is_set():
        ticks += 1
        time.perf_counter()  # same loop body cost as the calibration
    t.join()
    # If the native call held the GIL, this loop would only run in the brief
    # Python gaps between calls: a tiny fraction of rate * elapsed.
    print(f"GIL test: main thread ran {ticks / (rate * elapsed[0]):.0%} of its solo rate")
    assert ticks > 0.05 * rate * elapsed[0], f"main thread ran {ticks} loops in {elapsed[0]:.2f}s (alone: {rate:.0f}/s)"
