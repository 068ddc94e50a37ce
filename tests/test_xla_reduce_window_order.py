"""f32 sum reduce-windows XLA:CPU computes with its own loop emitter (windows
that overlap, or fewer than 4096 elements, so not YNNPACK), bit for bit
against jax.jit: the emitter's split of the innermost window dimension when
only its last offset (or, for 2 offsets, any) can fall outside the operand,
and LLVM's vectorization over the next window dimension for 2-wide windows
(engine/eval/reduce_window_xla_order.go, docs/xla-cpu-semantics.md)."""

import functools

import numpy as np
import pytest
from reference import require

jax = require("jax")
require("goldtrace.golden")
import jax.numpy as jnp  # noqa: E402
from goldtrace.golden import golden as _golden  # noqa: E402

golden = functools.partial(_golden, xla_compat="0.10" if jax.__version__.startswith("0.10.") else None)


def rw(window, strides, pad, dtype=np.float32):
    return lambda x: jax.lax.reduce_window(x, dtype(0), jax.lax.add, window, strides, pad)


def P(*pairs):
    return [tuple(p) for p in pairs]


NHWC = [
    # (shape, window, strides, padding)
    ((2, 8, 8, 4), (1, 2, 2, 1), (1, 2, 2, 1), "VALID"),  # lanes: (a00+a01)+(a10+a11)
    ((2, 8, 8, 4), (1, 2, 2, 1), (1, 1, 1, 1), "VALID"),
    ((2, 8, 8, 4), (1, 4, 2, 1), (1, 1, 1, 1), "VALID"),  # 4 lanes
    ((2, 16, 8, 4), (1, 8, 2, 1), (1, 8, 2, 1), "VALID"),  # 8 lanes
    ((2, 16, 8, 4), (1, 16, 2, 1), (1, 1, 1, 1), "VALID"),  # 16: not vectorized
    ((2, 9, 9, 4), (1, 2, 2, 1), (1, 2, 2, 1), "VALID"),  # row stride 36: plain
    ((2, 8, 8, 3), (1, 2, 2, 1), (1, 1, 1, 1), "VALID"),  # row stride 24: plain
    ((2, 8, 8, 4), (1, 2, 4, 1), (1, 1, 1, 1), "VALID"),
    ((2, 8, 8, 4), (1, 2, 2, 1), (1, 1, 1, 1), "SAME"),  # split
    ((2, 9, 9, 4), (1, 2, 2, 1), (1, 2, 2, 1), "SAME"),
    ((2, 9, 9, 4), (1, 3, 3, 1), (1, 2, 2, 1), "SAME"),  # pads (1,1): plain
    ((2, 9, 9, 4), (1, 3, 3, 1), (1, 3, 3, 1), "VALID"),
    ((2, 8, 8, 4), (1, 3, 3, 1), (1, 2, 2, 1), "SAME"),  # pads (0,1): split
    ((2, 10, 10, 4), (1, 5, 5, 1), (1, 5, 5, 1), "SAME"),
    ((2, 9, 9, 4), (1, 5, 5, 1), (1, 1, 1, 1), "SAME"),
    ((2, 9, 9, 4), (1, 3, 4, 1), (1, 1, 1, 1), P((0, 0), (0, 0), (0, 1), (0, 0))),
    ((2, 10, 10, 4), (1, 3, 3, 1), (1, 1, 2, 1), P((0, 0), (0, 0), (0, 2), (0, 0))),
    ((2, 9, 9, 4), (1, 3, 3, 1), (1, 1, 1, 1), P((0, 0), (0, 0), (1, 0), (0, 0))),
    ((2, 9, 9, 4), (1, 3, 2, 1), (1, 1, 1, 1), P((0, 0), (0, 0), (1, 1), (0, 0))),
    ((2, 9, 9, 4), (1, 3, 2, 1), (1, 1, 1, 1), P((0, 0), (1, 1), (0, 2), (0, 0))),
    ((2, 8, 8, 4), (1, 2, 2, 1), (1, 1, 1, 1), P((0, 0), (1, 0), (0, 0), (0, 0))),
    ((2, 8, 8, 4), (1, 4, 4, 1), (1, 1, 1, 1), "SAME"),
]
NCHW = [
    ((2, 4, 8, 8), (1, 1, 2, 2), (1, 1, 2, 2), "VALID"),
    ((2, 4, 8, 8), (1, 1, 4, 2), (1, 1, 1, 1), "VALID"),
    ((2, 4, 8, 6), (1, 1, 2, 2), (1, 1, 2, 2), "VALID"),
    ((2, 4, 9, 9), (1, 1, 3, 3), (1, 1, 2, 2), "SAME"),
    ((2, 4, 8, 8), (1, 1, 3, 3), (1, 1, 2, 2), "SAME"),
    ((2, 4, 8, 8), (1, 1, 2, 2), (1, 1, 1, 1), "SAME"),
]
OTHER = [
    ((2, 8, 8, 8, 4), (1, 3, 2, 2, 1), (1, 1, 1, 1, 1), "VALID"),  # 3-D: lanes per outer offset
    ((2, 8, 8, 8, 4), (1, 2, 2, 2, 1), (1, 1, 1, 1, 1), "VALID"),
    ((2, 6, 6, 6, 4), (1, 2, 2, 2, 1), (1, 1, 1, 1, 1), "SAME"),
    ((2, 6, 6, 6, 4), (1, 3, 3, 3, 1), (1, 2, 2, 2, 1), "SAME"),
    ((4, 30), (1, 3), (1, 1), "SAME"),
    ((4, 30), (2, 3), (1, 2), "SAME"),
    ((16, 8), (2, 2), (1, 1), "VALID"),
    # a check-free main nest whose last results' windows lie wholly in the padding
    ((2, 4, 12, 16, 8), (1, 1, 2, 3, 1), (1, 1, 3, 1, 1), P((0, 0), (0, 0), (0, 2), (0, 1), (0, 0))),
    ((16, 3, 5, 16), (1, 3, 5, 2), (1, 3, 3, 2), P((0, 0), (0, 1), (1, 1), (0, 1))),  # one result: range
    ((5, 8, 2, 2), (4, 2, 2, 1), (1, 2, 2, 1), P((0, 1), (0, 1), (0, 2), (0, 0))),
    ((4, 16, 2, 9, 7), (4, 2, 2, 1, 1), (3, 1, 1, 1, 1), P((2, 1), (1, 1), (1, 2), (0, 0), (0, 0))),
    ((4, 9, 9, 4), (1, 1, 4, 4), (1, 1, 4, 1), "VALID"),  # whole rows
    ((2, 7, 3, 2), (1, 1, 2, 2), (1, 1, 1, 2), "VALID"),
    ((5, 16, 6, 4), (1, 5, 2, 4), (1, 1, 1, 2), "VALID"),
    ((9, 2, 2), (1, 2, 2), (1, 1, 1), "VALID"),
    ((6, 3, 7, 5, 1), (1, 1, 2, 5, 1), (1, 1, 1, 1, 1), "VALID"),
    # an outer window dim's check wraps the vectorized loop
    ((12, 4, 4, 8), (5, 2, 3, 1), (2, 2, 2, 1), "SAME"),
    ((1, 12, 4, 16, 3), (1, 1, 3, 4, 3), (1, 1, 1, 2, 1), P((0, 0), (0, 0), (2, 1), (0, 1), (0, 0))),
    ((12, 5, 4, 4, 2), (1, 5, 2, 1, 2), (1, 2, 2, 1, 2), P((0, 0), (1, 1), (0, 1), (0, 0), (0, 1))),
    ((8, 56, 56, 64), (1, 3, 3, 1), (1, 2, 2, 1), "SAME"),  # the resnet max-pool shape, summed
]
CASES = NHWC + NCHW + OTHER


def _id(c):
    shape, w, s, p = c
    return f"{'x'.join(map(str, shape))}-w{''.join(map(str, w))}-s{''.join(map(str, s))}-{p if isinstance(p, str) else 'pad'}"


def _check(fn, x):
    text = jax.jit(fn).lower(x).as_text(dialect="hlo")
    want = np.asarray(jax.jit(fn)(x))
    got = np.asarray(golden(text, x)[0])
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_f32_sum_window_order(case):
    shape, w, s, p = case
    x = np.random.default_rng(len(shape) * 7 + sum(w)).standard_normal(shape).astype(np.float32)
    _check(rw(w, s, p), x)


@pytest.mark.parametrize("case", [c for c in CASES if c[0] != (8, 56, 56, 64)], ids=_id)
def test_f64_sum_window_order(case):
    with jax.enable_x64(True):  # restores the setting other modules rely on
        shape, w, s, p = case
        x = np.random.default_rng(sum(shape)).standard_normal(shape)
        _check(rw(w, s, p, np.float64), x)


def test_avg_pool_special_values():
    x = np.random.default_rng(3).standard_normal((2, 8, 8, 4)).astype(np.float32)
    x.reshape(-1)[::7] = -0.0
    x.reshape(-1)[3::41] = np.inf
    x.reshape(-1)[5::53] = np.nan
    _check(lambda a: rw((1, 2, 2, 1), (1, 1, 1, 1), "VALID")(a) * 0.25, x)
    _check(rw((1, 3, 3, 1), (1, 2, 2, 1), "SAME"), x)
