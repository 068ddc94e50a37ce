"""Dots carrying an `algorithm=` attribute, against jax bit for bit.

jax writes `algorithm=` when a dot names a jax.lax.DotAlgorithmPreset
(jax.nn.dot_product_attention does, for bf16 inputs). XLA:CPU (jaxlib
0.10.2) computes the ones it accepts as the plain dot of the operand types
the module gives them: dot_bf16_bf16_f32 on f32 or bf16 operands (mixed
ones too: the f32 dot of the widened operands), the x3
and x6 forms on f32 ones, dot_f16_f16_f16 on f16 ones; goldtrace does the
same and refuses every other algorithm and operand type
(engine/eval/attrs.go)."""

import numpy as np
import pytest

import goldtrace

jax = pytest.importorskip("jax")
jnp = jax.numpy
ml_dtypes = pytest.importorskip("ml_dtypes")

P = jax.lax.DotAlgorithmPreset
DTYPES = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f16": np.float16}
# (lhs shape, rhs shape): a YNNPACK-sized product, a batched one, a matrix-vector one.
SHAPES = [((96, 300), (300, 80)), ((4, 33, 700), (4, 700, 20)), ((256, 513), (513,))]


@pytest.mark.parametrize("shapes", SHAPES, ids=["mm", "bmm", "mv"])
@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("preset", ["BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "F16_F16_F16",
                                    "F32_F32_F32"])
def test_dot_algorithm_matches_xla(preset, dtype, shapes):
    rng = np.random.default_rng(3)
    a = rng.standard_normal(shapes[0]).astype(DTYPES[dtype])
    b = rng.standard_normal(shapes[1]).astype(DTYPES[dtype])
    _assert_same_bits(lambda a, b: jnp.matmul(a, b, precision=getattr(P, preset)), a, b, "algorithm=")


def _assert_same_bits(f, a, b, marker):
    """f's lowered module carries marker, and goldtrace gives jax.jit's bits."""
    text = jax.jit(f).lower(a, b).as_text(dialect="hlo")
    assert marker in text
    want = np.asarray(jax.jit(f)(a, b))
    got = np.asarray(goldtrace.golden(text, a, b)[0])
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("shapes", SHAPES[:2], ids=["mm", "bmm"])
@pytest.mark.parametrize("order", ["f32_bf16", "bf16_f32"])
def test_mixed_operands_are_the_f32_dot(order, shapes):
    """An f32 operand times a bf16 one under dot_bf16_bf16_f32 (jax.grad of
    bf16 attention writes such dots): XLA:CPU computes the f32 dot of the
    widened operands; it was refused before."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal(shapes[0]).astype(np.float32 if order == "f32_bf16" else ml_dtypes.bfloat16)
    b = rng.standard_normal(shapes[1]).astype(ml_dtypes.bfloat16 if order == "f32_bf16" else np.float32)
    nb = len(shapes[0]) - 2
    dims = (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb))))
    f = lambda a, b: jax.lax.dot_general(a, b, dims, precision=P.BF16_BF16_F32, preferred_element_type=jnp.float32)
    _assert_same_bits(f, a, b, "algorithm=dot_bf16_bf16_f32")


def test_bf16_attention_gradient_runs():
    """jax.grad of bf16 dot_product_attention multiplies f32 cotangents by
    bf16 operands under dot_bf16_bf16_f32; it was refused before."""
    rng = np.random.default_rng(6)
    q, k, v = (rng.standard_normal((2, 128, 4, 32)).astype(ml_dtypes.bfloat16) for _ in range(3))
    f = jax.grad(lambda q, k, v: jnp.sum(jax.nn.dot_product_attention(q, k, v).astype(jnp.float32)), argnums=(0, 1, 2))
    text = jax.jit(f).lower(q, k, v).as_text(dialect="hlo")
    got = goldtrace.golden(text, q, k, v)
    for g, w in zip(got, jax.jit(f)(q, k, v)):
        np.testing.assert_allclose(np.asarray(g).astype(np.float32), np.asarray(w).astype(np.float32), rtol=1e-2, atol=1e-4)


def test_causal_bf16_attention_runs():
    """jax.nn.dot_product_attention on bf16 writes algorithm=dot_bf16_bf16_f32
    on its score dot; the module was refused before."""
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((2, 64, 4, 32)).astype(ml_dtypes.bfloat16) for _ in range(3))
    f = lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=True)
    text = jax.jit(f).lower(q, k, v).as_text(dialect="hlo")
    assert "algorithm=dot_bf16_bf16_f32" in text
    got = np.asarray(goldtrace.golden(text, q, k, v)[0]).astype(np.float32)
    want = np.asarray(jax.jit(f)(q, k, v)).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)


def test_other_algorithms_are_refused():
    text = """HloModule m
ENTRY e {
  a = f32[8,16] parameter(0)
  b = f32[16,4] parameter(1)
  ROOT d = f32[8,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, algorithm=dot_tf32_tf32_f32
}
"""
    a, b = np.ones((8, 16), np.float32), np.ones((16, 4), np.float32)
    with pytest.raises(goldtrace.UnsupportedError, match="dot_tf32_tf32_f32"):
        goldtrace.golden(text, a, b)
