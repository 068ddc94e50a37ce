"""f64 reductions and elementwise ops XLA:CPU hands to YNNPACK (a
__ynn_fusion) under jax_enable_x64, bit for bit against jax.jit through the
whole golden path: sum_k1_fp64 / sum_kn_fp64 in YNNPACK's schedule with
its f64 tile of 16384 elements (engine/eval/reduce_ynn.go,
reduce_ynn_general.go), from the lowered module and the XLA:CPU-optimized
text."""

import functools

import numpy as np
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


def _mixed(seed, shape):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) * 10.0 ** rng.uniform(-3, 3, shape)


SUMS = {
    "mean_cols_2048x2048": (lambda x: jnp.mean(x, 0), (2048, 2048)),
    "sum_cols_300x300": (lambda x: jnp.sum(x, 0), (300, 300)),
    "rows_64x1000": (lambda x: jnp.sum(x, -1), (64, 1000)),
    "full_8M": (lambda x: jnp.sum(x), (8_000_000,)),
    "rows_2x3M": (lambda x: jnp.sum(x, -1), (2, 3_000_000)),
    "rows_64x70000": (lambda x: jnp.sum(x, -1), (64, 70000)),
    "abs_rows_4x70000": (lambda x: jnp.sum(jnp.abs(x), -1), (4, 70000)),
    "cols_wide_25x40000": (lambda x: jnp.sum(x, 0), (25, 40000)),
    "cols_batched_2x3000x100": (lambda x: jnp.sum(x, 1), (2, 3000, 100)),
    "sumsq_cols_512x512": (lambda x: jnp.sum(x * x, 0), (512, 512)),
    "var_nhwc_8x28x28x128": (lambda x: jnp.var(x, (0, 1, 2)), (8, 28, 28, 128)),
    "mean_var_nchw_8x64x28x28": (lambda x: (jnp.mean(x, (0, 2, 3)), jnp.var(x, (0, 2, 3))), (8, 64, 28, 28)),
    "groupnorm_8x32x32x32x4": (lambda x: jnp.sum(x, (1, 2, 4)), (8, 32, 32, 32, 4)),
    "k1_n_k2_64x128x64": (lambda x: jnp.sum(x, (0, 2)), (64, 128, 64)),
    "serial_split_22x7x90x6x14": (lambda x: jnp.sum(x, (0, 1, 2, 3)), (22, 7, 90, 6, 14)),
    "layernorm_512x4096": (lambda x: (x - x.mean(-1, keepdims=True)) / jnp.sqrt(x.var(-1, keepdims=True) + 1e-5), (512, 4096)),
}


def _random_sums(seed, n):
    rng = np.random.default_rng(seed)
    out = {}
    while len(out) < n:
        r = int(rng.integers(1, 6))
        dims = tuple(int(np.exp(rng.uniform(0, np.log(5000)))) for _ in range(r))
        if not 4096 <= int(np.prod(dims)) <= 8_000_000:
            continue
        axes = tuple(int(a) for a in np.flatnonzero(rng.random(r) < 0.5)) or (int(rng.integers(r)),)
        if rng.random() < 0.25:
            out[f"abs_{dims}_{axes}"] = (lambda x, a=axes: jnp.sum(jnp.abs(x), a), dims)
        else:
            out[f"{dims}_{axes}"] = (lambda x, a=axes: jnp.sum(x, a), dims)
    return out


SUMS.update(_random_sums(1, 24))


def _check(fn, xs, form, name):
    low = jax.jit(fn).lower(*xs)
    mod = {"lowered": low, "opt": low.compile().as_text()}[form]
    want = jax.tree_util.tree_leaves(jax.jit(fn)(*xs))
    got = golden(mod, *xs)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.atleast_1d(np.asarray(g)), np.atleast_1d(np.asarray(w))
        assert g.dtype == w.dtype and g.shape == w.shape, f"{name} {form} output {i}: {g.dtype}{g.shape} vs {w.dtype}{w.shape}"
        bad = (g.view(np.uint64) != w.view(np.uint64)) & ~(np.isnan(g) & np.isnan(w))
        assert not bad.any(), f"{name} {form} output {i}: {int(bad.sum())} of {bad.size} differ, first at {np.argwhere(bad)[0]}"


@pytest.mark.parametrize("form", ["lowered", "opt"])
@pytest.mark.parametrize("name", list(SUMS))
def test_ynn_f64_sum_matches_jax(name, form):
    fn, shape = SUMS[name]
    _check(fn, [_mixed(len(name), shape)], form, name)


# f64 elementwise ops inside the fusion: YNNPACK's fp64 kernels
# (engine/eval/ynn_math64.go), with the scalars it folds into them, on
# values across the range and one special value per row (every special
# shows in its own row's sum).
_SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-310, -1e-310, 2.2250738585072014e-308,
                      -2.2250738585072014e-308, 709.78, 709.79, -709.09, -709.08, -745.2, 1e-300, 1.0, -1.0, 0.5, 2.0,
                      1e300, -1e300, 0.9, -0.9, 5.93, 300.0, 150.0, -150.0, 1e-8, 0.8999999999999999, 3.0, -3.0,
                      1e-160, 1.5e-154])


def _edge(seed, scale, rows=len(_SPECIALS) + 30, n=4096):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, n)) * 10.0 ** rng.uniform(-scale, scale, (rows, n))
    for i, s in enumerate(_SPECIALS):
        x[i, rng.integers(n)] = s
    return x


_erf = jax.scipy.special.erf
ELEMENTWISE = {
    "exp": (jnp.exp, 2.5),
    "exp_folded": (lambda x: jnp.exp(-x / 3.0) * 0.3, 2.5),
    "expm1": (jnp.expm1, 2.5),
    "expm1_folded": (lambda x: jnp.expm1(-x / 7.0) * 2.0, 2.5),
    "log": (jnp.log, 300),
    "log_folded": (lambda x: jnp.log(x * 3.0) * -0.25, 300),
    "log1p": (jnp.log1p, 300),
    "tanh": (jnp.tanh, 3),
    "tanh_affine": (lambda x: jnp.tanh(x) * 0.5 + 0.5, 3),
    "erf": (_erf, 2),
    "erf_affine": (lambda x: _erf(x * 0.7) * 0.5 + 0.5, 2),
    "rsqrt": (jax.lax.rsqrt, 300),
    "sigmoid": (jax.nn.sigmoid, 3),
    "gelu_tanh": (lambda x: jax.nn.gelu(x, approximate=True), 2),
    "gelu_erf": (lambda x: jax.nn.gelu(x, approximate=False), 2),
    "silu": (jax.nn.silu, 2),
    "softplus": (jax.nn.softplus, 2),
    # MAXPD/MINPD: the second operand unless the first is strictly
    # greater/smaller (a constant moved second by XLA's simplifier).
    "max_const": (lambda x: jnp.maximum(0.1, x), 2),
    "min_const": (lambda x: jnp.minimum(x, -0.0), 2),
    "relu": (jax.nn.relu, 2),
    "max_pair": (lambda x: jnp.maximum(x, x[::-1]), 2),
    "min_pair": (lambda x: jnp.minimum(x[::-1], x), 2),
}


@pytest.mark.parametrize("form", ["lowered", "opt"])
@pytest.mark.parametrize("name", list(ELEMENTWISE))
def test_ynn_f64_elementwise_matches_jax(name, form):
    g, scale = ELEMENTWISE[name]
    _check(lambda x: jnp.sum(g(x), -1), [_edge(len(name), scale)], form, name)


FUSIONS = {
    "sum_exp_256x4096": (lambda x: jnp.sum(jnp.exp(x), -1), (256, 4096), 1.0),
    "softmax_256x4096": (lambda x: jax.nn.softmax(x, -1), (256, 4096), 30.0),
    "log_softmax_256x4096": (lambda x: jax.nn.log_softmax(x, -1), (256, 4096), 30.0),
    "logsumexp_256x4096": (lambda x: jax.nn.logsumexp(x, -1), (256, 4096), 30.0),
    "softmax_cols_4096x64": (lambda x: jax.nn.softmax(x, 0), (4096, 64), 10.0),
    "sum_log_abs_256x4096": (lambda x: jnp.sum(jnp.log(jnp.abs(x)), -1), (256, 4096), 1.0),
    "sum_tanh_256x4096": (lambda x: jnp.sum(jnp.tanh(x), -1), (256, 4096), 1.0),
    "mean_tanh_cols_2048x64": (lambda x: jnp.mean(jnp.tanh(x), 0), (2048, 64), 3.0),
}


@pytest.mark.parametrize("form", ["lowered", "opt"])
@pytest.mark.parametrize("name", list(FUSIONS))
def test_ynn_f64_fusion_matches_jax(name, form):
    fn, shape, scale = FUSIONS[name]
    x = np.random.default_rng(len(name)).standard_normal(shape) * scale
    _check(fn, [x], form, name)


# Non-overlapping f64 sum reduce-windows (average pools): YNNPACK's reduce
# over the window dims of a reshaped view (engine/golden/ynn_reduce_window.go)
# with the f64 sum's order.
def _pool(window, pad="VALID"):
    return lambda x: jax.lax.reduce_window(x, 0.0, jax.lax.add, window, window, pad)


def _padded_avg2(x):
    x = jnp.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    return jax.lax.reduce_window(x, 0.0, jax.lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") * 0.25


def _pool_x(seed, shape, specials=False):
    x = np.random.default_rng(seed).standard_normal(shape)
    if specials:
        flat = x.reshape(-1)
        flat[::97] = -0.0
        flat[5::997] = np.nan
        flat[11::1009] = np.inf
        flat[13::1013] = 1e-310
    return x


POOLS = {
    "avg2x2_padded_nhwc": (_padded_avg2, (8, 56, 56, 64), False),
    "sum2x2_valid_nhwc": (_pool((1, 2, 2, 1)), (4, 64, 64, 32), False),
    "sum3x3_cropped": (_pool((1, 3, 3, 1)), (4, 100, 100, 16), False),
    "sum2x2_same_odd": (_pool((1, 2, 2, 1), "SAME"), (4, 63, 63, 16), False),
    "sum2x2_nchw": (_pool((1, 1, 2, 2)), (8, 32, 56, 56), False),
    "sum4_last_axis": (_pool((1, 4)), (512, 4096), False),
    "sum4x4_specials": (_pool((1, 4, 4, 1)), (4, 64, 64, 32), True),
}


@pytest.mark.parametrize("form", ["lowered", "opt"])
@pytest.mark.parametrize("name", list(POOLS))
def test_ynn_f64_pool_matches_jax(name, form):
    fn, shape, specials = POOLS[name]
    _check(fn, [_pool_x(len(name), shape, specials)], form, name)
