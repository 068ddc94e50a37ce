"""Dots carrying an `algorithm=` attribute, against jax bit for bit.

jax writes `algorithm=` when a dot names a jax.lax.DotAlgorithmPreset
(jax.nn.dot_product_attention does, for bf16 inputs). XLA:CPU (jaxlib
0.10.2) computes the ones it accepts as the plain dot of the operand types
the module gives them: dot_bf16_bf16_f32 on f32 or bf16 operands, the x3
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
    f = lambda a, b: jnp.matmul(a, b, precision=getattr(P, preset))
    text = jax.jit(f).lower(a, b).as_text(dialect="hlo")
    assert "algorithm=" in text
    want = np.asarray(jax.jit(f)(a, b))
    got = np.asarray(goldtrace.golden(text, a, b)[0])
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


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
