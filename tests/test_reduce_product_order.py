"""Products (multiply-reductions) in XLA:CPU's order (engine/eval/reduce_order.go):
XLA's TreeReductionRewriter cuts every reduced dimension longer than 32 into
windows of 32 at any size (YNNPACK, which takes large sums, never takes
products), so jnp.prod is a tree of window products, not a left-to-right fold.
Bit for bit against jax.jit; before the tree order was applied to products,
every case here but the 16-long rows differed on most of its elements."""

import numpy as np
import pytest
from reference import require

jax = require("jax")
require("goldtrace.golden")
import jax.numpy as jnp  # noqa: E402
from goldtrace.golden import golden  # noqa: E402


def _near_one(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return (1 + rng.standard_normal(shape) * 0.01).astype(dtype)


CASES = {
    "rows_16": (lambda x: jnp.prod(x, -1), (64, 16)),
    "rows_33": (lambda x: jnp.prod(x, -1), (8, 33)),
    "rows_100": (lambda x: jnp.prod(x, -1), (64, 100)),
    "rows_1000": (lambda x: jnp.prod(x, -1), (16, 1000)),
    "rows_4096": (lambda x: jnp.prod(x, -1), (64, 4096)),
    "full_100000": (lambda x: jnp.prod(x), (100000,)),
    "columns_100": (lambda x: jnp.prod(x, 0), (100, 64)),
    "columns_4096": (lambda x: jnp.prod(x, 0), (4096, 64)),
    "middle_axis": (lambda x: jnp.prod(x, 1), (4, 300, 8)),
    "fused_producer": (lambda x: jnp.prod(x * 0.5 + 0.5, -1), (256, 2048)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_product_matches_xla_order(name):
    fn, shape = CASES[name]
    x = _near_one(shape)
    (ours,) = golden(jax.jit(fn).lower(x).as_text(dialect="hlo"), x)
    want = np.asarray(jax.jit(fn)(x))
    differ = np.count_nonzero(np.asarray(ours).view(np.uint32) != want.view(np.uint32))
    assert differ == 0, f"{name}: {differ} of {want.size} products differ from jax.jit"


def test_complex_product_matches_xla_order():
    rng = np.random.default_rng(1)
    x = (1 + 0.01 * (rng.standard_normal((16, 200)) + 1j * rng.standard_normal((16, 200)))).astype(np.complex64)
    fn = lambda v: jnp.prod(v, -1)  # noqa: E731
    (ours,) = golden(jax.jit(fn).lower(x).as_text(dialect="hlo"), x)
    want = np.asarray(jax.jit(fn)(x))
    assert np.array_equal(np.asarray(ours).view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("n", [4, 40, 5000])
def test_subnormal_partial_products_flush(n):
    """XLA's reduce loop runs under FTZ: a partial product that falls below
    the smallest normal is zero, whatever the later factors."""
    x = np.ones((2, n), np.float32)
    x[:, :3] = [[1e-20, 1e-20, 1e30], [-1e-20, 1e-20, 1e30]]
    fn = lambda v: jnp.prod(v, -1)  # noqa: E731
    (ours,) = golden(jax.jit(fn).lower(x).as_text(dialect="hlo"), x)
    want = np.asarray(jax.jit(fn)(x))
    assert np.array_equal(np.asarray(ours).view(np.uint32), want.view(np.uint32))
