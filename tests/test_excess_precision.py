"""bf16 results converted to f32 by the program keep XLA:CPU's excess
precision (engine/golden/excess_precision.go): XLA computes bf16 arithmetic
in f32 and drops the f32 -> bf16 -> f32 pair when the program's own convert
to f32 follows the op, so that convert sees the unrounded f32 value. Bit for
bit against jax.jit on CPU; each case here differed before the rewrite
(the goldens rounded to bf16 first)."""

import numpy as np
import pytest
from reference import require

jax = require("jax")
require("goldtrace.golden")
import jax.numpy as jnp  # noqa: E402
from goldtrace.golden import golden  # noqa: E402

B, F = jnp.bfloat16, jnp.float32


def _inputs(seed=0, shape=(48, 64)):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 2).astype(np.float32)
    y = (rng.standard_normal(shape) + 3).astype(np.float32)  # positive: log, sqrt, rsqrt
    return x, y


def _wide(op):
    return lambda a, b: op(a.astype(B), b.astype(B)).astype(F)


CASES = {
    "add": _wide(lambda a, b: a + b),
    "subtract": _wide(lambda a, b: a - b),
    "multiply": _wide(lambda a, b: a * b),
    "divide": _wide(lambda a, b: a / b),
    "divide_by_constant": _wide(lambda a, b: a / 3),
    "exp": _wide(lambda a, b: jnp.exp(a)),
    "log": _wide(lambda a, b: jnp.log(b)),
    "log1p": _wide(lambda a, b: jnp.log1p(b)),
    "tanh": _wide(lambda a, b: jnp.tanh(a)),
    "sqrt": _wide(lambda a, b: jnp.sqrt(b)),
    "rsqrt": _wide(lambda a, b: jax.lax.rsqrt(b)),
    "erf": _wide(lambda a, b: jax.lax.erf(a)),
    "sigmoid": _wide(lambda a, b: jax.nn.sigmoid(a)),
    "dot": _wide(lambda a, b: a @ b.T),
    "dot_square": _wide(lambda a, b: a[:, :48] @ b[:, :48].T),
    "broadcast_add": _wide(lambda a, b: a[0] + b),
    "batched_dot": _wide(lambda a, b: jnp.einsum("bij,bjk->bik", a.reshape(4, 12, 64), b.reshape(4, 64, 12))),
    "batched_dot_nt": _wide(lambda a, b: jnp.einsum("bij,bkj->bik", a.reshape(4, 12, 64), b.reshape(4, 12, 64))),
    "attention_scores": _wide(lambda a, b: jnp.einsum("bhqd,bhkd->bhqk", a.reshape(2, 2, 12, 64),
                                                      b.reshape(2, 2, 12, 64))),
    # XLA transposes this dot into its canonical form and reshapes its
    # result, which keeps the rounding.
    "attention_scores_bqhd": _wide(lambda a, b: jnp.einsum("bqhd,bkhd->bhqk", a.reshape(2, 12, 2, 64),
                                                           b.reshape(2, 12, 2, 64))),
    "conv_3x3": _wide(lambda a, b: jax.lax.conv_general_dilated(
        a.reshape(1, 12, 16, 16), b.reshape(-1)[:2304].reshape(3, 3, 16, 16), (1, 1), "SAME",
        dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    # Roundings between bf16 ops stay; only the last op's is dropped.
    "chain": _wide(lambda a, b: (a + b) * b - a),
    # The bf16 result's other users still see it rounded.
    "two_users": lambda a, b: ((a.astype(B) * b.astype(B)).astype(F), a.astype(B) * b.astype(B) + 1),
    # A movement op between the op and the convert keeps the rounding.
    "reshape_between": _wide(lambda a, b: (a + b).reshape(-1)),
    "transpose_between": _wide(lambda a, b: (a + b).T),
    # The program's own f32 -> bf16 -> f32 converts are kept.
    "user_round_trip": lambda a, b: (a * 3).astype(B).astype(F),
    "plus_f32": lambda a, b: (a.astype(B) * b.astype(B)).astype(F) + a,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_convert_to_f32_keeps_xla_excess_precision(name):
    fn = CASES[name]
    x, y = _inputs()
    text = jax.jit(fn, keep_unused=True).lower(x, y).as_text(dialect="hlo")
    ours = golden(text, x, y)
    want = jax.tree_util.tree_leaves(jax.jit(fn)(x, y))
    assert len(ours) == len(want)
    for i, (o, w) in enumerate(zip(ours, want)):
        o, w = np.asarray(o), np.asarray(w)
        assert o.dtype == w.dtype and o.shape == w.shape
        differ = np.count_nonzero(o.view(np.uint8) != w.view(np.uint8))
        assert differ == 0, f"{name} output {i}: {differ} bytes differ from jax.jit"


def test_mixed_precision_mlp_matches_jax():
    """A bf16 MLP whose last layer is read as f32: the dot's f32 value."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 96)).astype(jnp.bfloat16)
    w1 = (rng.standard_normal((96, 128)) * 0.1).astype(jnp.bfloat16)
    w2 = (rng.standard_normal((128, 32)) * 0.1).astype(jnp.bfloat16)

    def mlp(x, w1, w2):
        return (jax.nn.relu(x @ w1) @ w2).astype(F)

    text = jax.jit(mlp).lower(x, w1, w2).as_text(dialect="hlo")
    (ours,) = golden(text, x, w1, w2)
    want = np.asarray(jax.jit(mlp)(x, w1, w2))
    assert np.array_equal(np.asarray(ours).view(np.uint32), want.view(np.uint32))
