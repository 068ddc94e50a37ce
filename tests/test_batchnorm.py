"""batch-norm-{inference,training,grad}: jax never emits them (XLA:CPU expands them
before codegen), so the reference is the same math written in jnp: the forward
pass directly and the gradient by jax.grad."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import goldtrace

EPS = 0.001
SHAPE, FEATURE = (4, 5, 3, 6), 1  # feature dimension 1 (NCHW-style)


def module(op, operands, result, extra=""):
    params = "\n".join(f"  p{i} = {s} parameter({i})" for i, s in enumerate(operands))
    names = ", ".join(f"p{i}" for i in range(len(operands)))
    return f"""HloModule bn
ENTRY e {{
{params}
  ROOT r = {result} {op}({names}), epsilon={EPS}, feature_index={FEATURE}{extra}
}}
"""


def bcast(v):
    shape = [1] * len(SHAPE)
    shape[FEATURE] = -1
    return v.reshape(shape)


def reference_training(x, scale, offset):
    axes = tuple(i for i in range(x.ndim) if i != FEATURE)
    mean = jnp.mean(x, axis=axes)
    var = jnp.mean((x - bcast(mean)) ** 2, axis=axes)
    y = (x - bcast(mean)) * jax.lax.rsqrt(bcast(var) + EPS) * bcast(scale) + bcast(offset)
    return y, mean, var


@pytest.fixture
def data(rng):
    x = rng.standard_normal(SHAPE).astype(np.float32) * 3 + 1
    c = SHAPE[FEATURE]
    return x, (rng.random(c) + 0.5).astype(np.float32), rng.standard_normal(c).astype(np.float32)


def test_training_matches_the_formula(data):
    x, scale, offset = data
    c = SHAPE[FEATURE]
    text = module("batch-norm-training", [f"f32{list(SHAPE)}", f"f32[{c}]", f"f32[{c}]"],
                  f"(f32{list(SHAPE)}, f32[{c}], f32[{c}])".replace(" ", ""))
    got = goldtrace.golden(text, x, scale, offset)
    want = jax.jit(reference_training)(x, scale, offset)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=2e-5, atol=2e-5)


def test_inference_matches_the_formula(data, rng):
    x, scale, offset = data
    c = SHAPE[FEATURE]
    mean, var = rng.standard_normal(c).astype(np.float32), (rng.random(c) + 0.1).astype(np.float32)
    text = module("batch-norm-inference", [f"f32{list(SHAPE)}"] + [f"f32[{c}]"] * 4, f"f32{list(SHAPE)}")
    (got,) = goldtrace.golden(text, x, scale, offset, mean, var)
    want = (x - bcast(mean)) / np.sqrt(bcast(var) + EPS) * bcast(scale) + bcast(offset)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


def test_grad_matches_jax_autodiff(data, rng):
    x, scale, offset = data
    c = SHAPE[FEATURE]
    dy = rng.standard_normal(SHAPE).astype(np.float32)
    _, mean, var = jax.jit(reference_training)(x, scale, offset)

    def loss(x, scale, offset):
        return jnp.sum(reference_training(x, scale, offset)[0] * dy)

    want = jax.grad(loss, argnums=(0, 1, 2))(x, scale, offset)
    text = module("batch-norm-grad", [f"f32{list(SHAPE)}", f"f32[{c}]", f"f32[{c}]", f"f32[{c}]", f"f32{list(SHAPE)}"],
                  f"(f32{list(SHAPE)}, f32[{c}], f32[{c}])".replace(" ", ""))
    got = goldtrace.golden(text, x, scale, np.asarray(mean), np.asarray(var), dy)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-4, atol=1e-4)


def test_bad_scale_shape_names_the_operand(data):
    x, scale, offset = data
    c = SHAPE[FEATURE]
    text = module("batch-norm-training", [f"f32{list(SHAPE)}", f"f32[{c + 1}]", f"f32[{c}]"],
                  f"(f32{list(SHAPE)}, f32[{c}], f32[{c}])".replace(" ", ""))
    with pytest.raises(goldtrace.GoldtraceError, match="scale|operand|shape"):
        goldtrace.golden(text, x, np.ones(c + 1, np.float32), offset)
