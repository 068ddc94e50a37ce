"""bf16 x bf16 -> f32 dots (preferred_element_type=float32) in XLA:CPU's order, bit for bit.

jaxlib 0.10.2 gives a bf16 dot with an f32 result to YNNPACK's bf16 kernel when
both operands are in the canonical layout ([batch, M, K] x [batch, K, N], after
XLA transposes operands whose batch dims do not lead). On a host with
AVX512-BF16 that kernel is VDPBF16PS: each element one f32 accumulator taking
the products in pairs, the odd one first, in K blocks sized from the packed B
block (engine/eval/dot_bf16_ynn.go). x @ w.T and a.T @ b are converted to f32
and take the f32 dot's order. Before dot_bf16_ynn.go, goldtrace summed these in
one chain and differed on 5-95% of the elements (more with deeper K).
"""

import numpy as np
import pytest

import goldtrace

jax = pytest.importorskip("jax")
jnp = jax.numpy
ml_dtypes = pytest.importorskip("ml_dtypes")

info = goldtrace.build_info()
if info.get("gemm_kernel") not in ("avx512", "avx2"):
    pytest.skip("YNNPACK's order needs the assembly FMA GEMM (the SIMD build on an AVX2/AVX-512 CPU)",
                allow_module_level=True)
PAIRS = "avx512_bf16" in info.get("cpu_features", [])
needs_pairs = pytest.mark.skipif(not PAIRS, reason="YNNPACK's bf16 kernel without AVX512-BF16 is not modelled")

XLA_COMPAT = "0.10" if jax.__version__.startswith("0.10.") else None


def mm(a, b):
    return jnp.matmul(a, b, preferred_element_type=jnp.float32)


CANONICAL = [
    ("mm", mm, [(64, 300), (300, 48)]),
    ("tiny", mm, [(3, 7), (7, 5)]),
    ("odd-k", mm, [(40, 33), (33, 24)]),
    ("k-blocks-2048", mm, [(64, 4096), (4096, 64)]),
    ("k-block-whole-n16", mm, [(16, 8192), (8192, 16)]),
    ("k-blocks-n80", mm, [(16, 4096), (4096, 80)]),
    ("k-1000-n300", mm, [(8, 1000), (1000, 300)]),
    ("square", mm, [(256, 2048), (2048, 256)]),
    ("rows-1000", mm, [(1000, 100), (100, 37)]),
    ("bmm", lambda a, b: jnp.einsum("bij,bjk->bik", a, b, preferred_element_type=jnp.float32),
     [(4, 64, 200), (4, 200, 32)]),
    ("attention-qk", lambda q, k: jnp.einsum("bqhd,bkhd->bhqk", q, k, preferred_element_type=jnp.float32),
     [(2, 64, 4, 32), (2, 64, 4, 32)]),
    ("attention-pv", lambda p, v: jnp.einsum("bhqk,bkhd->bhqd", p, v, preferred_element_type=jnp.float32),
     [(2, 4, 64, 64), (2, 64, 4, 32)]),
]
CONVERTED = [
    ("x-wT", lambda a, b: mm(a, b.T), [(64, 300), (48, 300)]),
    ("x-wT-deep", lambda a, b: mm(a, b.T), [(64, 3000), (80, 3000)]),
    ("aT-b", lambda a, b: mm(a.T, b), [(1024, 256), (1024, 128)]),
    ("bmm-aT", lambda a, b: jnp.einsum("bji,bjk->bik", a, b, preferred_element_type=jnp.float32),
     [(4, 200, 64), (4, 200, 32)]),
    ("gemv", mm, [(1, 256), (256, 64)]),
    ("n-1", mm, [(64, 256), (256, 1)]),
]


def _check(fn, shapes, seed):
    rng = np.random.default_rng(seed)
    args = [rng.standard_normal(s).astype(ml_dtypes.bfloat16) for s in shapes]
    want = np.asarray(jax.jit(fn)(*args))
    (got,) = goldtrace.golden(jax.jit(fn).lower(*args), *args, xla_compat=XLA_COMPAT)
    got = np.asarray(got)
    assert got.dtype == want.dtype == np.float32
    bad = got.view(np.uint32) != want.view(np.uint32)
    assert not bad.any(), f"{int(bad.sum())} of {bad.size} elements differ from jax.jit"


@needs_pairs
@pytest.mark.parametrize("name,fn,shapes", CANONICAL, ids=[c[0] for c in CANONICAL])
def test_canonical_bf16_dot_takes_vdpbf16ps_pairs(name, fn, shapes):
    _check(fn, shapes, seed=len(name))


@pytest.mark.parametrize("name,fn,shapes", CONVERTED, ids=[c[0] for c in CONVERTED])
def test_other_layouts_take_the_f32_order(name, fn, shapes):
    _check(fn, shapes, seed=len(name))
