"""Real-sized attention through the whole golden path, bit for bit against
jax.jit: XLA:CPU's YNNPACK dot orders at these sizes, the softmax's fused
numerics, masks built from iotas, K transposed by swapaxes (folded into the
dot, engine/golden/dot_fold.go), the raw scores also returned, and work
after the attention."""

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


def _x(seed, shape, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def attention(q, k, v):
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / np.float32(8.0)
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, -1), v)


def causal(q, k, v):
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / np.float32(8.0)
    t = q.shape[2]
    s = jnp.where(jnp.tril(jnp.ones((t, t), bool)), s, -1e9)
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, -1), v)


def bilinear_bf16(q, k, v):
    """bf16 products around an f32 softmax, K transposed by swapaxes."""
    s = (q @ jnp.swapaxes(k, -1, -2)).astype(jnp.float32) / 8
    return jax.nn.softmax(s, -1).astype(jnp.bfloat16) @ v


def attention_layernorm(q, k, v):
    o = attention(q, k, v)
    m = o.mean(-1, keepdims=True)
    return (o - m) * jax.lax.rsqrt(((o - m) ** 2).mean(-1, keepdims=True) + 1e-5)


def scores_and_mass(q, k):
    """The raw scores are a result too: a region value read outside it."""
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k)
    return s, jax.nn.softmax(s, -1).sum(-1)


CASES = {
    "attention_f32": (attention, lambda: tuple(_x(1 + i, (4, 8, 256, 64)) for i in range(3))),
    "attention_bf16": (attention, lambda: tuple(_x(4 + i, (4, 8, 256, 64), bf16) for i in range(3))),
    "causal_f32": (causal, lambda: tuple(_x(7 + i, (2, 8, 512, 64)) for i in range(3))),
    "bilinear_bf16": (bilinear_bf16, lambda: tuple(_x(10 + i, (8, 12, 256, 64), bf16) for i in range(3))),
    "attention_layernorm": (attention_layernorm, lambda: tuple(_x(13 + i, (4, 8, 256, 64)) for i in range(3))),
    "scores_and_mass": (scores_and_mass, lambda: tuple(_x(16 + i, (4, 8, 256, 64)) for i in range(2))),
}


@pytest.mark.parametrize("name", list(CASES))
def test_attention_matches_jax(name):
    fn, make = CASES[name]
    args = make()
    text = jax.jit(fn).lower(*args).as_text(dialect="hlo")
    want = jax.tree_util.tree_leaves(jax.jit(fn)(*args))
    got = golden(text, *args)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        bad = (g.view(np.uint8).reshape(g.size, -1) != w.view(np.uint8).reshape(w.size, -1)).any(-1)
        assert not bad.any(), f"{name} output {i}: {int(bad.sum())} of {bad.size} differ"
