"""XLA:CPU runs with denormals-are-zero and flush-to-zero: reductions,
reduce-windows (pooling, cumulative max), dots and convolutions see subnormal
inputs as signed zeros and write no subnormal result. Inputs made mostly of
f32 subnormals, where keeping them gives another answer; compared bit for bit
with jax.jit on CPU (max/min pick an element; the sums here add only zeros and
subnormals, so their order does not matter)."""

import functools

import numpy as np
import pytest
from reference import require  # noqa: E402

jax = require("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

from goldtrace.golden import golden as _golden  # noqa: E402

XLA_COMPAT = "0.10" if jax.__version__.startswith("0.10.") else None
golden = functools.partial(_golden, xla_compat=XLA_COMPAT)


def subnormals(shape, seed):
    rng = np.random.default_rng(seed)
    bits = rng.integers(1, 0x7FFFFF, size=shape).astype(np.uint32)
    sign = rng.integers(0, 2, size=shape).astype(np.uint32) << 31
    return (bits | sign).view(np.float32)


PROGRAMS = {
    "reduce_max_rows": lambda a: jnp.max(a, axis=1),
    "reduce_min_cols": lambda a: jnp.min(a, axis=0),
    "reduce_sum_rows": lambda a: jnp.sum(a, axis=1),
    "reduce_sum_all": lambda a: jnp.sum(a),
    "cummax": lambda a: lax.cummax(a, axis=1),
    "cummin": lambda a: lax.cummin(a, axis=1),
    "window_max_same": lambda a: lax.reduce_window(a, -jnp.inf, lax.max, (1, 3), (1, 1), "SAME"),
    "window_min_strided": lambda a: lax.reduce_window(a, jnp.inf, lax.min, (2, 3), (1, 2), "VALID"),
    "window_sum": lambda a: lax.reduce_window(a, 0.0, lax.add, (1, 4), (1, 1), "VALID"),
    "maxpool_2x2": lambda a: lax.reduce_window(a.reshape(1, 16, 64, 1), -jnp.inf, lax.max, (1, 2, 2, 1),
                                               (1, 2, 2, 1), "VALID"),
    "bf16_sum": lambda a: jnp.sum(a.astype(jnp.bfloat16), axis=1),
    "dot": lambda a: a @ a.T,
    "dot_with_normals": lambda a: a @ (a.T * 0 + 1.0),
    "conv1d": lambda a: lax.conv_general_dilated(a.reshape(1, 16, 64), jnp.ones((3, 64, 4), jnp.float32) * a[0, :3, None, None].T.reshape(3, 1, 1),
                                                 (1,), "SAME", dimension_numbers=("NWC", "WIO", "NWC")),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_subnormal_inputs_flush_as_xla_cpu(name):
    x = subnormals((16, 64), seed=len(name))
    f = PROGRAMS[name]
    want = np.asarray(jax.jit(f)(x))
    got = golden(jax.jit(f).lower(x), x)
    got = np.asarray(got[0] if isinstance(got, (list, tuple)) else got)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.atleast_1d(got).view(np.uint8), np.atleast_1d(want).view(np.uint8))
