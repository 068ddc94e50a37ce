"""Non-overlapping f32 sum reduce-windows (average pools), which XLA:CPU
hands to YNNPACK as a reduce over the window dims of a reshaped view
(engine/golden/ynn_reduce_window.go), bit for bit against jax.jit: padded
and cropped windows, NHWC and NCHW, 1-D and 3-D windows, special values,
and a max pool, which is left alone."""

import functools

import numpy as np
import pytest
from reference import require

jax = require("jax")
require("goldtrace.golden")
import jax.numpy as jnp  # noqa: E402
from goldtrace.golden import golden as _golden  # noqa: E402

golden = functools.partial(_golden, xla_compat="0.10" if jax.__version__.startswith("0.10.") else None)


def _x(seed, shape, specials=False):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    if specials:
        flat = x.reshape(-1)
        flat[::97] = -0.0
        flat[5::997] = np.nan
        flat[11::1009] = np.inf
        flat[13::1013] = 1e-40
    return x


def pool(window, pad="VALID", op=jax.lax.add, init=0.0):
    return lambda x: jax.lax.reduce_window(x, init, op, window, window, pad)


def padded_avg2(x):
    x = jnp.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    return jax.lax.reduce_window(x, 0.0, jax.lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") * 0.25


CASES = {
    "avg2x2_padded_nhwc": (padded_avg2, lambda: (_x(1, (8, 112, 112, 64)),)),
    "sum2x2_valid_nhwc": (pool((1, 2, 2, 1)), lambda: (_x(2, (4, 64, 64, 32)),)),
    "sum3x3_cropped": (pool((1, 3, 3, 1)), lambda: (_x(3, (4, 100, 100, 16)),)),
    "sum2x2_same_odd": (pool((1, 2, 2, 1), "SAME"), lambda: (_x(4, (4, 63, 63, 16)),)),
    "sum2x2_nchw": (pool((1, 1, 2, 2)), lambda: (_x(5, (8, 32, 56, 56)),)),
    "sum4_last_axis": (pool((1, 4)), lambda: (_x(6, (512, 4096)),)),
    "sum2x2x2_3d": (pool((1, 2, 2, 2, 1)), lambda: (_x(7, (4, 32, 32, 32, 8)),)),
    "sum2x2_specials": (pool((1, 2, 2, 1)), lambda: (_x(8, (4, 64, 64, 32), specials=True),)),
    "max2x2_not_rewritten": (pool((1, 2, 2, 1), op=jax.lax.max, init=-np.inf), lambda: (_x(10, (4, 64, 64, 32)),)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_reduce_window_matches_jax(name):
    fn, make = CASES[name]
    args = make()
    text = jax.jit(fn).lower(*args).as_text(dialect="hlo")
    want = np.asarray(jax.jit(fn)(*args))
    got = np.asarray(golden(text, *args)[0])
    assert got.dtype == want.dtype and got.shape == want.shape
    bad = got.view(np.uint32) != want.view(np.uint32)
    assert not bad.any(), f"{name}: {int(bad.sum())} of {bad.size} differ, first at {np.argwhere(bad)[0]}"
