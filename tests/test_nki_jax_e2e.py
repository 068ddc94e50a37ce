"""End to end: a JAX function mixing ordinary ops with two kernels (one
returning a tuple, one writing into an aliased input) gives the same numbers
four ways — jax.jit on CPU (typed FFI into libgoldtrace), goldens of its
exported HLO in the Neuron form (text and proto), simulate_kernel, numpy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import goldtrace
from goldtrace import nki
import goldtrace.nki.language as nl


@pytest.fixture(autouse=True)
def _target(monkeypatch):
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn1")


@nki.jit
def scale_and_exp(a, s):
    """Two outputs: a * s and exp(a)."""
    o1 = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    o2 = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(a.shape[0] // 128):
        x = nl.load(a[t * 128:(t + 1) * 128, :])
        nl.store(o1[t * 128:(t + 1) * 128, :], value=nl.multiply(x, s))
        nl.store(o2[t * 128:(t + 1) * 128, :], value=nl.exp(x))
    return o1, o2


@nki.jit
def accumulate_into(acc: nki.typing.mutable_tensor, x):
    """acc += x * x, written into acc's own buffer."""
    for t in nl.affine_range(acc.shape[0] // 128):
        a = nl.load(acc[t * 128:(t + 1) * 128, :])
        b = nl.load(x[t * 128:(t + 1) * 128, :])
        nl.store(acc[t * 128:(t + 1) * 128, :], value=nl.add(a, nl.multiply(b, b)))
    return acc


def model(a, b):
    h = jnp.tanh(a) + 1.0
    p, q = scale_and_exp(h, 0.5)
    r = accumulate_into(b * 2.0, p)
    return r - q, p.sum(axis=1)


def numpy_model(a, b):
    h = (np.tanh(a) + np.float32(1.0)).astype(np.float32)
    p = h * np.float32(0.5)
    q = np.exp(h)
    r = b * np.float32(2.0) + p * p
    return r - q, p.sum(axis=1)


A = np.random.default_rng(0).standard_normal((256, 96)).astype(np.float32)
B = np.random.default_rng(1).standard_normal((256, 96)).astype(np.float32)


def test_jit_on_cpu_runs_the_kernels():
    r, s = jax.jit(model)(A, B)
    wr, ws = numpy_model(A, B)
    np.testing.assert_allclose(np.asarray(r), wr, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(np.asarray(s), ws, rtol=2e-5, atol=2e-5)


def test_four_ways_agree():
    cpu_r, cpu_s = (np.asarray(v) for v in jax.jit(model)(A, B))
    with nki.lowering("neuron"):
        lowered = jax.jit(model).lower(A, B)
        text = lowered.as_text(dialect="hlo")
        proto = lowered.compiler_ir("hlo").as_serialized_hlo_module_proto()
    assert text.count('custom_call_target="AwsNeuronCustomNativeKernel"') == 2
    g_text = goldtrace.golden(text, A, B)
    g_proto = goldtrace.golden(proto, A, B)
    for g in (g_text, g_proto):
        np.testing.assert_array_equal(np.asarray(g[0]), cpu_r)
        np.testing.assert_allclose(np.asarray(g[1]), cpu_s, rtol=1e-6, atol=1e-6)
    # The kernels alone, in the simulator, on the same intermediate values.
    h = np.asarray(jnp.tanh(A) + 1.0)
    p, q = nki.simulate_kernel(scale_and_exp, h, 0.5)
    r = nki.simulate_kernel(accumulate_into, B * np.float32(2.0), p)
    np.testing.assert_array_equal(r - q, cpu_r)
    wr, _ = numpy_model(A, B)
    np.testing.assert_allclose(cpu_r, wr, rtol=2e-6, atol=2e-6)


def test_kernel_called_eagerly_and_under_vmap():
    p, q = scale_and_exp(jnp.asarray(A), 0.5)
    np.testing.assert_array_equal(np.asarray(p), A * np.float32(0.5))
    stacked = jnp.stack([jnp.asarray(A), jnp.asarray(B)])
    vp, vq = jax.vmap(lambda x: scale_and_exp(x, 0.5))(stacked)
    np.testing.assert_array_equal(np.asarray(vp[1]), B * np.float32(0.5))


def test_thousand_calls_of_a_cached_kernel_retrace_nothing():
    calls = []

    def body(a):
        calls.append(1)
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.add(nl.load(a), 1.0))
        return out

    k = nki.jit(body)
    f = jax.jit(lambda x: k(x) * 2)
    x = jnp.ones((128, 64), jnp.float32)
    for _ in range(1000):
        y = f(x)
    assert len(calls) == 1
    np.testing.assert_array_equal(np.asarray(y), np.full((128, 64), 4.0, np.float32))
