"""f32 sums XLA:CPU hands to YNNPACK (engine/eval/reduce_ynn.go) through the
whole golden path, bit for bit against jax.jit, from the lowered module, the
unoptimized text and the XLA:CPU-optimized text (where the reduce sits in a
__ynn_fusion computation). The evaluator's own catalog is
engine/eval/testdata/gen_ynn_order.py; these add the legalization and the
optimized form. Same bits natively and under the AVX2-only CPUID shim
(bench/avx2only): YNNPACK's AVX kernel keeps the AVX-512 kernel's lanes."""

import functools

import numpy as np
import ml_dtypes
import pytest
from reference import require

jax = require("jax")
require("goldtrace.golden")
import jax.numpy as jnp  # noqa: E402
from goldtrace.golden import golden as _golden  # noqa: E402

golden = functools.partial(_golden, xla_compat="0.10" if jax.__version__.startswith("0.10.") else None)


@pytest.fixture(autouse=True, scope="module")
def _x64():
    with jax.enable_x64(True):
        yield


def _mixed(seed, shape, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 10.0 ** rng.uniform(-3, 3, shape)).astype(dtype)


CASES = {
    "rows_64x100": (lambda x: jnp.sum(x, -1), (64, 100), np.float32),
    "rows_4096x77": (lambda x: jnp.sum(x, -1), (4096, 77), np.float32),
    "rows_8x5000": (lambda x: jnp.sum(x, -1), (8, 5000), np.float32),
    "cols_300x300": (lambda x: jnp.sum(x, 0), (300, 300), np.float32),
    "full_40000": (lambda x: jnp.sum(x), (40000,), np.float32),
    "full_128x128": (lambda x: jnp.sum(x), (128, 128), np.float32),
    "sumsq_128x255": (lambda x: jnp.sum(x * x, -1), (128, 255), np.float32),
    "mean_var_64x1000": (lambda x: (jnp.mean(x, -1), jnp.var(x, -1)), (64, 1000), np.float32),
    "logsumexp_shift_64x1000": (lambda x: jnp.sum(x - jnp.max(x, -1, keepdims=True), -1), (64, 1000), np.float32),
    "bf16_rows_256x1000": (lambda x: jnp.sum(x.astype(jnp.float32), -1), (256, 1000), ml_dtypes.bfloat16),
    "f64_rows_64x1000": (lambda x: jnp.sum(x, -1), (64, 1000), np.float64),
    "f64_full_40000": (lambda x: jnp.sum(x), (40000,), np.float64),
    # Any reduced set (reduce_ynn_general.go): YNNPACK's split factors, the
    # partial reduce on few tasks, its zero partials on many, and the second
    # reduce's own tiling.
    "groupnorm_8x32x32x32x4": (lambda x: jnp.sum(x, (1, 2, 4)), (8, 32, 32, 32, 4), np.float32),
    "k1_n_k2_64x128x64": (lambda x: jnp.sum(x, (0, 2)), (64, 128, 64), np.float32),
    "rows_between_2x40x8x2000": (lambda x: jnp.sum(x, (1, 3)), (2, 40, 8, 2000), np.float32),
    "serial_split_22x7x90x6x14": (lambda x: jnp.sum(x, (0, 1, 2, 3)), (22, 7, 90, 6, 14), np.float32),
    "cols_wide_25x40000": (lambda x: jnp.sum(x, 0), (25, 40000), np.float32),
    "cols_batched_2x3000x100": (lambda x: jnp.sum(x, 1), (2, 3000, 100), np.float32),
    "rows_8x40000": (lambda x: jnp.sum(x, -1), (8, 40000), np.float32),
    "full_300000": (lambda x: jnp.sum(x), (300000,), np.float32),
    "mean_var_nchw_8x64x28x28": (lambda x: (jnp.mean(x, (0, 2, 3)), jnp.var(x, (0, 2, 3))), (8, 64, 28, 28), np.float32),
    # A producer in the fusion (|x|, x - m) makes every split reduced dimension
    # parallel; a centered value XLA's CSE shares with an output is computed
    # outside (YNNPACK's sum_squared then reads it).
    "producer_var_nhwc_8x28x28x128": (lambda x: jnp.var(x, (0, 1, 2)), (8, 28, 28, 128), np.float32),
    "producer_abs_cols_8x784x128": (lambda x: jnp.sum(jnp.abs(x), (0, 1)), (8, 784, 128), np.float32),
    "producer_abs_rows_4x70000": (lambda x: jnp.sum(jnp.abs(x), -1), (4, 70000), np.float32),
    "shared_centered_var_8x28x28x128": (lambda x: (jnp.var(x, (0, 1, 2)), x - jnp.mean(x, (0, 1, 2))), (8, 28, 28, 128), np.float32),
    "groupnorm_norm_8x32x32x128": (lambda x: (x.reshape(8, 32, 32, 32, 4) - x.reshape(8, 32, 32, 32, 4).mean((1, 2, 4), keepdims=True))
                                   / jnp.sqrt(x.reshape(8, 32, 32, 32, 4).var((1, 2, 4), keepdims=True) + 1e-5), (8, 32, 32, 128), np.float32),
}


@pytest.mark.parametrize("form", ["lowered", "unopt", "opt"])
@pytest.mark.parametrize("name", list(CASES))
def test_ynn_sum_matches_jax(name, form):
    fn, shape, dt = CASES[name]
    x = _mixed(len(name), shape, dt)
    low = jax.jit(fn).lower(x)
    mod = {"lowered": low, "unopt": low.as_text(dialect="hlo"), "opt": low.compile().as_text()}[form]
    want = jax.tree_util.tree_leaves(jax.jit(fn)(x))
    got = golden(mod, x)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.atleast_1d(np.asarray(g)), np.atleast_1d(np.asarray(w))
        assert g.dtype == w.dtype and g.shape == w.shape, f"{name} {form} output {i}: {g.dtype}{g.shape} vs {w.dtype}{w.shape}"
        bad = g.view(np.uint8) != w.view(np.uint8)
        assert not bad.any(), f"{name} {form} output {i}: {int(bad.sum())} of {bad.size} differ, first at {np.argwhere(bad)[0]}"
