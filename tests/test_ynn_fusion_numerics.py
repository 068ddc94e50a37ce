"""Elementwise ops XLA:CPU hands to YNNPACK together with a reduction (a
__ynn_fusion), through the whole golden path, bit for bit against jax.jit.

Inside such a fusion YNNPACK computes the ops itself: its own exp, tanh, log,
log1p, expm1 and erf, rsqrt as 1/sqrt, MAXPS semantics for maximum, no FMA
contraction, scalar multiply-adds folded into tanh/erf, and bf16 without
intermediate roundings (engine/golden/ynn.go, engine/eval/ynn_math.go);
which ops join is eval.PredictYNNFusions (engine/eval/ynn_fusion.go) on the
unoptimized module, the fusion itself in the optimized one. Each YNN case
differs from jax.jit with GOLDTRACE_NO_YNN_NUMERICS=1; the "xla_*" cases are
ones XLA keeps out of YNNPACK (too small, an unsupported op, several users)
and must keep XLA's own numerics."""

import functools

import ml_dtypes
import numpy as np
import pytest
from reference import require

jax = require("jax")
require("goldtrace.golden")
import jax.numpy as jnp  # noqa: E402
from goldtrace.golden import golden as _golden  # noqa: E402

golden = functools.partial(_golden, xla_compat="0.10" if jax.__version__.startswith("0.10.") else None)
bf16 = ml_dtypes.bfloat16


@pytest.fixture(autouse=True, scope="module")
def _x64():
    with jax.enable_x64(True):
        yield


def layernorm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b


def rmsnorm(x, g):
    return x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * g


def attention(q, k, v):
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / np.float32(8.0)
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, -1), v)


def attention_f32_softmax(q, k, v):
    """bf16 products around an f32 softmax whose probabilities the program
    rounds to bf16: inside the fusion the f32 -> bf16 -> f32 pair goes, so
    both dots read unrounded f32 values."""
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k).astype(jnp.float32) / 8
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, -1).astype(jnp.bfloat16), v)


def rowsum(x):
    """Sums of [n, 2] rows whose second column is 0: the values themselves,
    as a reduction XLA hands to YNNPACK when n*2 >= 4096."""
    return jnp.sum(x, -1)


def _x(seed, shape, dtype=np.float32, scale=1.0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * scale).astype(dtype)


def _cols(seed, n, lo, hi, specials=()):
    rng = np.random.default_rng(seed)
    v = rng.uniform(lo, hi, n).astype(np.float32)
    v[: len(specials)] = specials
    return np.stack([v, np.zeros_like(v)], -1)


def _cols64(seed, n):
    v = np.random.default_rng(seed).standard_normal(n)  # full f64 mantissas: products round
    return np.stack([v, np.zeros_like(v)], -1)


SPECIAL = (0.0, np.inf, -np.inf, np.nan, 88.5, -87.5, 1e-30, -1e-30, 20.0, -20.0)

# name: (function, argument factory)
CASES = {
    # Whole modules: every elementwise op of the fusion is YNNPACK's.
    "layernorm_f32_8192x1024": (layernorm, lambda: (_x(1, (8192, 1024)), _x(2, 1024), _x(3, 1024))),
    "layernorm_f32_4096x256": (layernorm, lambda: (_x(4, (4096, 256)), _x(5, 256), _x(6, 256))),
    "layernorm_bf16_4096x512": (layernorm, lambda: (_x(7, (4096, 512), bf16), _x(8, 512, bf16), _x(9, 512, bf16))),
    "rmsnorm_f32_8192x256": (rmsnorm, lambda: (_x(10, (8192, 256)), _x(11, 256))),
    "rmsnorm_bf16_8192x256": (rmsnorm, lambda: (_x(12, (8192, 256), bf16), _x(13, 256, bf16))),
    "softmax_f32_4096x512": (lambda x: jax.nn.softmax(x, -1), lambda: (_x(14, (4096, 512), scale=4.0),)),
    "softmax_bf16_4096x512": (lambda x: jax.nn.softmax(x, -1), lambda: (_x(15, (4096, 512), bf16, 4.0),)),
    "log_softmax_f32_4096x512": (lambda x: jax.nn.log_softmax(x, -1), lambda: (_x(16, (4096, 512), scale=4.0),)),
    "log_softmax_bf16_4096x256": (lambda x: jax.nn.log_softmax(x, -1), lambda: (_x(17, (4096, 256), bf16, 4.0),)),
    "attention_f32": (attention, lambda: tuple(_x(18 + i, (2, 8, 256, 64)) for i in range(3))),
    "attention_bf16": (attention, lambda: tuple(_x(21 + i, (2, 8, 256, 64), bf16) for i in range(3))),
    "attention_bf16_f32_softmax": (attention_f32_softmax, lambda: tuple(_x(61 + i, (2, 8, 256, 64), bf16)
                                                                        for i in range(3))),
    # Big elementwise ops after a small row reduction: the reduction's
    # fusion takes exp(x - max) but not the [64] row ops, nor what follows
    # them (layer norm's scaling contracts into FMAs, XLA's own).
    "softmax_f32_64x4096": (lambda x: jax.nn.softmax(x, -1), lambda: (_x(24, (64, 4096), scale=4.0),)),
    "xla_layernorm_f32_64x4096": (layernorm, lambda: (_x(25, (64, 4096)), _x(26, 4096), _x(27, 4096))),
    # Column reductions with ops on the 8192 results.
    "colmean_exp": (lambda x: jnp.exp(x.mean(0)), lambda: (_x(28, (16, 8192)),)),
    # One op after a row sum (the values themselves), over a sweep with
    # special values: the kernels, the folds and MAXPS's NaN rule.
    "exp": (lambda x: jnp.exp(rowsum(x)), lambda: (_cols(30, 8192, -100, 100, SPECIAL),)),
    "exp_scaled": (lambda x: jnp.exp(-(rowsum(x) * 0.37)), lambda: (_cols(31, 8192, -100, 100, SPECIAL),)),
    "expm1": (lambda x: jnp.expm1(rowsum(x)), lambda: (_cols(32, 8192, -10, 10, SPECIAL),)),
    "tanh": (lambda x: jnp.tanh(rowsum(x)), lambda: (_cols(33, 8192, -6, 6, SPECIAL),)),
    "tanh_fma": (lambda x: jnp.tanh(rowsum(x)) * 0.3 + 0.7, lambda: (_cols(34, 8192, -3, 3),)),
    "erf": (lambda x: jax.lax.erf(rowsum(x)), lambda: (_cols(35, 8192, -5, 5, SPECIAL),)),
    "erf_fma": (lambda x: jax.lax.erf(rowsum(x) * 0.70710678) * 0.5 + 0.5, lambda: (_cols(36, 8192, -5, 5),)),
    "log": (lambda x: jnp.log(rowsum(x)), lambda: (_cols(37, 8192, 1e-6, 1e6, SPECIAL),)),
    "log1p": (lambda x: jnp.log1p(rowsum(x)), lambda: (_cols(38, 8192, -0.999, 100, SPECIAL),)),
    "rsqrt": (lambda x: jax.lax.rsqrt(rowsum(x)), lambda: (_cols(39, 8192, 1e-4, 1e4, SPECIAL),)),
    "sigmoid": (lambda x: jax.nn.sigmoid(rowsum(x)), lambda: (_cols(40, 8192, -90, 90, SPECIAL),)),
    "relu_nan": (lambda x: jnp.maximum(rowsum(x), 0.0), lambda: (_cols(41, 8192, -1, 1, SPECIAL),)),
    "min_nan": (lambda x, y: jnp.minimum(rowsum(x), rowsum(y)),
                lambda: (_cols(42, 8192, -1, 1, SPECIAL), _cols(43, 8192, -1, 1, SPECIAL[::-1]))),
    "muladd": (lambda x, y, z: rowsum(x) * rowsum(y) + rowsum(z), lambda: tuple(_cols(44 + i, 8192, -3, 3) for i in range(3))),
    "muladd_f64": (lambda x, y, z: rowsum(x) * rowsum(y) + rowsum(z),
                   lambda: tuple(_cols64(59 + i, 8192) for i in range(3))),
    "bf16_chain": (lambda x, a, b: jnp.sum(x, -1) * a + b,
                   lambda: (_x(47, (8192, 2), bf16), _x(48, 8192, bf16), _x(49, 8192, bf16))),
    # XLA's own numerics: below 4096 elements, an op YNNPACK does not take,
    # a reduction result with several users.
    "xla_exp_small": (lambda x: jnp.exp(rowsum(x)), lambda: (_cols(50, 2000, -100, 100, SPECIAL),)),
    "xla_tanh_fma_small": (lambda x: jnp.tanh(rowsum(x)) * 0.3 + 0.7, lambda: (_cols(51, 1024, -3, 3),)),
    "xla_layernorm_small": (layernorm, lambda: (_x(52, (16, 200)), _x(53, 200), _x(54, 200))),
    "xla_sin": (lambda x: jnp.sin(rowsum(x)), lambda: (_cols(55, 8192, -10, 10),)),
    "xla_two_users": (lambda x: (lambda s: (jnp.exp(s), jnp.tanh(s) * 2))(rowsum(x)), lambda: (_cols(56, 8192, -5, 5),)),
    "xla_exp_shared": (lambda x: (lambda e: (jnp.sum(e, -1), e * 0.5))(jnp.exp(x)), lambda: (_x(57, (64, 1024)),)),
    "xla_gelu": (lambda x: jax.nn.gelu(rowsum(x)), lambda: (_cols(58, 8192, -5, 5),)),
}


def _same(g, w):
    """Bits equal, or both NaN (YNNPACK's NaN payloads differ between its
    AVX2 and AVX-512 kernels)."""
    g, w = np.atleast_1d(np.asarray(g)), np.atleast_1d(np.asarray(w))
    assert g.dtype == w.dtype and g.shape == w.shape, f"{g.dtype}{g.shape} vs {w.dtype}{w.shape}"
    bad = (g.view(np.uint8).reshape(g.size, -1) != w.view(np.uint8).reshape(w.size, -1)).any(-1)
    if g.dtype.kind == "f" or g.dtype == bf16:
        bad &= ~(np.isnan(g.astype(np.float32)) & np.isnan(w.astype(np.float32))).reshape(-1)
    return bad


@pytest.mark.parametrize("form", ["unopt", "opt"])
@pytest.mark.parametrize("name", list(CASES))
def test_ynn_fusion_matches_jax(name, form):
    fn, make = CASES[name]
    args = make()
    low = jax.jit(fn).lower(*args)
    mod = {"unopt": low.as_text(dialect="hlo"), "opt": low.compile().as_text()}[form]
    want = jax.tree_util.tree_leaves(jax.jit(fn)(*args))
    got = golden(mod, *args)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        bad = _same(g, w)
        assert not bad.any(), f"{name} {form} output {i}: {int(bad.sum())} of {bad.size} differ, first at {np.argwhere(bad)[0]}"
