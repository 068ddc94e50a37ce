"""f32 dots XLA:CPU runs as an Eigen contraction, bit for bit.

jaxlib 0.10.2 gives YNNPACK only the matrix-matrix dots whose lhs is
[batch..., M, K]. The others, above all `a.T @ b` (every weight gradient
`x.T @ g` of a backward pass), run as an Eigen tensor contraction whose block
products are oneDNN's sgemm (TensorFlow's custom contraction kernel), in the
order engine/eval/dot_f32_eigen.go reproduces: Eigen's threads, sharding and
(TensorFlow-refined) blocking, one FMA chain per element per K block (halved
past 384), oneDNN's n == 1 path for a row alone in its block and its gemv_t
lanes for a column alone in its block, and the K slices of a contraction
sharded over K added as Eigen adds them. Dots whose operands both have a side
of at most 3 run XLA's naive loop (one FMA chain).

The order depends on the thread count of XLA's pool (the host's cores) and
was measured on a 2-core AVX-512 host. Before dot_f32_eigen.go, 81% of an
[300,200]^T x [300,100] product and 88-89.5% of the weight gradients of the
mse_adam_step and mlp_bwd probes differed from jax.
"""

import numpy as np
import pytest

import goldtrace

jax = pytest.importorskip("jax")
jnp = jax.numpy
ml_dtypes = pytest.importorskip("ml_dtypes")

if goldtrace.build_info().get("gemm_kernel") not in ("avx512", "avx2") or \
        "avx512f" not in goldtrace.build_info().get("cpu_features", []):
    pytest.skip("the Eigen order is modelled for AVX-512 hosts with the assembly FMA GEMM (the SIMD build); "
                "oneDNN's AVX2 kernels sum otherwise", allow_module_level=True)


def _compare(fn, *args):
    text = jax.jit(fn).lower(*args).as_text(dialect="hlo")
    want = jax.jit(fn)(*args)
    got = goldtrace.golden(text, *args)
    want = [np.asarray(w) for w in (want if isinstance(want, (tuple, list)) else [want])]
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape
        bad = g.view(np.uint8) != w.view(np.uint8)
        assert not bad.any(), (
            f"{int(bad.sum())} of {w.nbytes} bytes differ from jax "
            f"(max abs diff {float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64))))})")


# (K, M, N) of a.T @ b with a [K, M], b [K, N].
ATB = [
    (300, 200, 100),   # 81% differed before
    (2048, 1024, 512),  # mse_adam_step's weight gradient
    (2048, 1024, 2048),  # mlp_bwd's
    (64, 784, 128), (128, 128, 10), (256, 512, 256), (32, 3, 64),  # MLP layers
    (1000, 64, 64), (500, 64, 64), (5000, 17, 33), (3000, 500, 7),  # sharded over K
    (5847, 30, 2), (5168, 34, 2),  # just sharded (3000 cycles per thread)
    (800, 40, 30), (401, 50, 60), (399, 70, 80),  # one thread; K blocks past 384 halved
    (2552, 40, 193), (5, 51, 145), (641, 49, 2),  # a column or a row alone in its block
    (130, 129, 131), (777, 333, 222), (4096, 128, 256), (1024, 1024, 64), (64, 2000, 100),
    (7, 5, 6), (9, 2, 5), (5, 3, 9), (2, 30, 40),
    (424, 2, 2), (1000, 3, 3), (2, 25, 49),  # XLA's naive loop
]


@pytest.mark.parametrize("k,m,n", ATB, ids=lambda v: str(v))
def test_lhs_transposed_dot_matches_xla(k, m, n):
    rng = np.random.default_rng(k * 1000003 + m * 1009 + n)
    a = rng.standard_normal((k, m)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    _compare(lambda a, b: a.T @ b, a, b)


@pytest.mark.parametrize("seed", range(6))
def test_random_shapes(seed):
    rng = np.random.default_rng(100 + seed)
    for _ in range(6):
        while True:
            k = int(np.exp(rng.uniform(0, np.log(5000))))
            m = int(np.exp(rng.uniform(np.log(2), np.log(2000))))
            n = int(np.exp(rng.uniform(np.log(2), np.log(2000))))
            if m * n * k <= 5e7:
                break
        a = rng.standard_normal((k, m)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        _compare(lambda a, b: a.T @ b, a, b)


@pytest.mark.parametrize("kind,shapes", [
    ("aT@bT", ((700, 90), (65, 700))),
    ("batched", ((3, 300, 70), (3, 300, 50))),
    ("batched_long", ((2, 1000, 33), (2, 1000, 65))),
    ("batched_naive", ((2, 500, 3), (2, 500, 3))),
    ("bf16", ((700, 200), (700, 129))),
    ("f16", ((1000, 33), (1000, 65))),
    ("bf16_to_f32", ((700, 200), (700, 129))),
])
def test_other_dots_taking_eigen(kind, shapes):
    rng = np.random.default_rng(7)
    dt = {"bf16": ml_dtypes.bfloat16, "bf16_to_f32": ml_dtypes.bfloat16, "f16": np.float16}.get(kind, np.float32)
    a, b = (rng.standard_normal(s).astype(dt) for s in shapes)
    fn = {
        "aT@bT": lambda a, b: a.T @ b.T,
        "batched": lambda a, b: jnp.einsum("bki,bkj->bij", a, b),
        "batched_long": lambda a, b: jnp.einsum("bki,bkj->bij", a, b),
        "batched_naive": lambda a, b: jnp.einsum("bki,bkj->bij", a, b),
        "bf16": lambda a, b: a.T @ b,
        "f16": lambda a, b: a.T @ b,
        "bf16_to_f32": lambda a, b: jax.lax.dot_general(
            a, b, (((0,), (0,)), ((), ())), preferred_element_type=jnp.float32),
    }[kind]
    _compare(fn, a, b)


def test_mlp_grad():
    rng = np.random.default_rng(5)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)
    params = (f(784, 300) * 0.05, f(300) * 0.1, f(300, 100) * 0.05, f(100) * 0.1, f(100, 10) * 0.1, f(10) * 0.1)
    x, y = f(128, 784), f(128, 10)

    def loss(p, x, y):
        w1, b1, w2, b2, w3, b3 = p
        h = jnp.tanh(x @ w1 + b1)
        h = jax.nn.relu(h @ w2 + b2)
        return jnp.mean((h @ w3 + b3 - y) ** 2)

    _compare(lambda w1, b1, w2, b2, w3, b3, x, y: jax.grad(loss)((w1, b1, w2, b2, w3, b3), x, y), *params, x, y)


def test_mse_adam_step_probe():
    rng = np.random.default_rng(9)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)
    w, x, y = f(1024, 512) * .05, f(2048, 1024), f(2048, 512)
    m = v = np.zeros((1024, 512), np.float32)

    def step(w, x, y, m, v):
        g = jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
        m2, v2 = m * .9 + .1 * g, v * .999 + .001 * g * g
        return m2, v2, w - 1e-3 * m2 / (jnp.sqrt(v2) + 1e-8)

    _compare(step, w, x, y, m, v)


@pytest.mark.parametrize("m,k,n", [(7, 7450, 5), (6, 7687, 6)])
def test_c64_sharded_over_k_at_the_threshold(m, k, n):
    """numThreadsInnerDim charges 3000 cycles per thread: these c64 products,
    just past the threshold, are two K slices in jax (dot_c64_eigen.go had
    4000: 97-100% differed)."""
    rng = np.random.default_rng(m * k + n)
    a = (rng.standard_normal((m, k)) + 1j * rng.standard_normal((m, k))).astype(np.complex64)
    b = (rng.standard_normal((k, n)) + 1j * rng.standard_normal((k, n))).astype(np.complex64)
    _compare(lambda a, b: a @ b, a, b)
