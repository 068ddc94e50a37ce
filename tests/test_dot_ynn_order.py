"""Matrix-matrix dots in XLA:CPU's order, bit for bit.

jaxlib 0.10.2 hands f32 matrix-matrix dots (and bf16/f16 ones with a narrow
result, converted to f32 around it) to YNNPACK, whose summation order depends
on the shape: the micro-kernel its cost model picks (one FMA chain per
element, or 2 or 4 lanes over k added pairwise), K blocks sized from the
packed B block, and whether B is packed at all (engine/eval/dot_ynn.go). The
order also depends on the host's vector width (AVX-512 or AVX2), which jax
and goldtrace read from the same CPU in this process; run under
bench/avx2only's CPUID shim to check the AVX2 order here.

Each case is compared byte for byte against jax on the same inputs. Before
dot_ynn.go, contractions deeper than 256 (and tile_k 4 shapes at any depth)
were off by an ulp on about a quarter of the elements.
"""

import numpy as np
import pytest

import goldtrace

jax = pytest.importorskip("jax")
jnp = jax.numpy
ml_dtypes = pytest.importorskip("ml_dtypes")

if goldtrace.build_info().get("gemm_kernel") not in ("avx512", "avx2"):
    pytest.skip("YNNPACK's order needs the assembly FMA GEMM (the SIMD build on an AVX2/AVX-512 CPU)",
                allow_module_level=True)

KS = [1, 7, 8, 63, 255, 256, 257, 511, 512, 513, 1023, 1024, 1025, 2048, 3000, 4097, 5000]
MN = [(64, 64), (16, 16), (48, 32), (100, 37), (9, 200), (130, 70), (33, 17), (60, 8), (70, 5), (200, 300)]

CASES = []
for i, k in enumerate(KS):
    for j in range(3):
        m, n = MN[(3 * i + j) % len(MN)]
        CASES.append(("f32", (m, k), (k, n)))
CASES += [
    ("f32", (256, 2048), (2048, 256)),
    ("f32", (64, 1024), (1024, 1000)),
    ("f32", (128, 4096), (4096, 96)),
    ("f32", (8, 2048), (2048, 512)),
    ("f32", (40, 5000), (5000, 64)),
    ("f32", (3, 999), (999, 3)),
    ("f32", (2, 300), (300, 2)),
    ("f32", (51, 2048), (2048, 100)),
    ("bT", (40, 3000), (64, 3000)),
    ("bT", (300, 1500), (200, 1500)),
    ("bT", (16, 257), (48, 257)),
    ("batch", (4, 64, 1500), (4, 1500, 48)),
    ("batch", (3, 20, 1030), (3, 1030, 20)),
    ("3d", (4, 64, 1100), (1100, 96)),
    ("bf16", (96, 2000), (2000, 80)),
    ("bf16", (64, 300), (300, 64)),
    ("f16", (96, 2000), (2000, 80)),
    ("f16", (33, 1025), (1025, 40)),
    ("const", (20, 1500), (1500, 64)),
]

FNS = {
    "f32": lambda a, b: a @ b,
    "bT": lambda a, b: a @ b.T,
    "batch": lambda a, b: jnp.einsum("bij,bjk->bik", a, b),
    "3d": lambda a, b: a @ b,
    "bf16": lambda a, b: a @ b,
    "f16": lambda a, b: a @ b,
}


@pytest.mark.parametrize("kind,ashape,bshape", CASES, ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else v)
def test_dot_matches_xla_bit_for_bit(kind, ashape, bshape):
    rng = np.random.default_rng(hash((kind, ashape, bshape)) % 2**32)
    dt = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}.get(kind, np.float32)
    a = rng.standard_normal(ashape).astype(dt)
    b = rng.standard_normal(bshape).astype(dt)
    if kind == "const":
        fn, args = (lambda x: x @ b), (a,)
    else:
        fn, args = FNS[kind], (a, b)
    text = jax.jit(fn).lower(*args).as_text(dialect="hlo")
    want = np.asarray(jax.jit(fn)(*args))
    got = np.asarray(goldtrace.golden(text, *args)[0])
    assert got.dtype == want.dtype and got.shape == want.shape
    bad = got.view(np.uint8) != want.view(np.uint8)
    assert not bad.any(), (
        f"{kind} {ashape}x{bshape}: {int(bad.sum())} of {want.nbytes} bytes differ from jax "
        f"(max abs diff {float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))})")


def test_lhs_transposed_keeps_xla_dot_emitter():
    """a.T @ b is not given to YNNPACK (its lhs is column-major); it must not
    take YNNPACK's order, and is compared within an ulp here."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((300, 40)).astype(np.float32)
    b = rng.standard_normal((300, 50)).astype(np.float32)
    fn = lambda a, b: a.T @ b
    text = jax.jit(fn).lower(a, b).as_text(dialect="hlo")
    want = np.asarray(jax.jit(fn)(a, b))
    got = np.asarray(goldtrace.golden(text, a, b)[0])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("kind,ashape,bshape", [
    ("f32", (48, 1030), (1030, 32)), ("f32", (100, 1000), (1000, 37)),
    ("bT", (40, 3000), (64, 3000)), ("f32", (256, 2048), (2048, 256))],
    ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else v)
def test_xla_optimized_text_matches_bit_for_bit(kind, ashape, bshape):
    """The same order from XLA's optimized HLO (the dot inside its
    __ynn_fusion, a transposed rhs already folded into the dot)."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal(ashape).astype(np.float32)
    b = rng.standard_normal(bshape).astype(np.float32)
    fn = FNS[kind]
    text = jax.jit(fn).lower(a, b).compile().as_text()
    assert "ynn" in text
    want = np.asarray(jax.jit(fn)(a, b))
    got = np.asarray(goldtrace.golden(text, a, b)[0])
    bad = got.view(np.uint8) != want.view(np.uint8)
    assert not bad.any(), f"{kind} {ashape}x{bshape}: {int(bad.sum())} of {want.nbytes} bytes differ from jax"


def _dg(lc, rc, lb, rb):
    return lambda a, b: jax.lax.dot_general(a, b, ((lc, rc), (lb, rb)))


# Dots XLA's DotDecomposer rewrites (batch dims not leading, several free or
# contracting dims): it copies the operands into [batch, M, K] and
# [batch, K, N], so YNNPACK reads a K x N rhs (left unpacked when A is small)
# where the dot's own dims say N x K, and a transposed operand whose batch
# dims move is a copy of its own, not folded into the dot.
DECOMPOSED = [
    # jax.nn.dot_product_attention's dots on [B, T, N, H]: scores, then
    # dot(v, probs) with v as the lhs (M = H).
    ("qk", _dg((3,), (3,), (0, 2), (0, 2)), (2, 96, 4, 700), (2, 80, 4, 700)),
    ("pv", _dg((1,), (3,), (0, 2), (0, 1)), (2, 600, 4, 64), (2, 4, 96, 600)),
    ("bsnh,bnts", lambda v, p: jnp.einsum("bsnh,bnts->btnh", v, p), (2, 600, 4, 64), (2, 4, 96, 600)),
    ("rhs_two_free", lambda a, b: jnp.einsum("bmk,bnpk->bmnp", a, b), (3, 40, 700), (3, 8, 12, 700)),
    ("two_contracting", lambda a, b: jnp.einsum("bmkl,bnkl->bmn", a, b), (2, 50, 30, 40), (2, 60, 30, 40)),
    ("transposed_batch", lambda a, b: jax.lax.dot_general(
        jnp.transpose(a, (1, 0, 2)), jnp.transpose(b, (1, 2, 0)), (((2,), (1,)), ((0,), (0,)))),
     (96, 4, 600), (80, 4, 600)),
]


@pytest.mark.parametrize("name,fn,ashape,bshape", DECOMPOSED, ids=[c[0] for c in DECOMPOSED])
def test_decomposed_dot_layout_matches_xla(name, fn, ashape, bshape):
    rng = np.random.default_rng(21)
    a = rng.standard_normal(ashape).astype(np.float32)
    b = rng.standard_normal(bshape).astype(np.float32)
    text = jax.jit(fn).lower(a, b).as_text(dialect="hlo")
    want = np.asarray(jax.jit(fn)(a, b))
    got = np.asarray(goldtrace.golden(text, a, b)[0])
    bad = got.view(np.uint32) != want.view(np.uint32)
    assert not bad.any(), f"{name}: {int(bad.sum())} of {want.size} elements differ from jax"


def _einsum_attention(q, k, v):
    q, k, v = (x.astype(jnp.bfloat16) for x in (q, k, v))
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / 8
    return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1), v)


# The operands XLA copies stay out of the YNNPACK fusion around the dots
# (the bf16 casts of q, k and v round before the copy), while the fusion's
# own f32 values reach the dots unrounded: the scores a bf16 dot computes,
# and the probabilities whose f32 widening joins the softmax's fusion.
ATTENTION = [
    ("f32", lambda q, k, v: jax.nn.dot_product_attention(q, k, v)),
    ("bf16_causal", lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=True)),
    ("f32_cast_bf16", lambda q, k, v: jax.nn.dot_product_attention(
        q.astype(jnp.bfloat16), k.astype(jnp.bfloat16), v.astype(jnp.bfloat16))),
    ("f32_einsum_bf16", _einsum_attention),
]


@pytest.mark.parametrize("name,fn", ATTENTION, ids=[c[0] for c in ATTENTION])
def test_dot_product_attention_matches_xla(name, fn):
    rng = np.random.default_rng(5)
    dtype = ml_dtypes.bfloat16 if name.startswith("bf16") else np.float32
    q, k, v = (rng.standard_normal((2, 512, 4, 64)).astype(dtype) for _ in range(3))
    text = jax.jit(fn).lower(q, k, v).as_text(dialect="hlo")
    want = np.asarray(jax.jit(fn)(q, k, v))
    got = np.asarray(goldtrace.golden(text, q, k, v)[0])
    bad = got.view(np.uint8) != want.view(np.uint8)
    assert not bad.any(), f"{int(bad.sum())} of {want.nbytes} bytes differ from jax"


@pytest.fixture
def x64():
    # Restores the previous setting: tests/jax_programs.py turns x64 on for
    # the whole session when imported.
    with jax.enable_x64(True):
        yield


# f64 dots go to YNNPACK too, on its f64 kernels (every one a tile_k 1 FMA
# chain): K blocks of 131072 / (8 · packed B block) elements, or of the
# task's column count where B is left unpacked (few row blocks of A). Before
# dot_ynn_f64.go ~91% of a 1024³ product's elements differed.
F64_CASES = [
    ("f64", (256, 2048), (2048, 256)),
    ("f64", (64, 1000), (1000, 300)),
    ("f64", (33, 777), (777, 129)),  # unpacked B, one column task on another block
    ("f64", (8, 3000), (3000, 40)),  # unpacked B: blocks of 131072 / (8 * 40)
    ("f64", (512, 1500), (1500, 70)),
    ("f64", (30, 50), (50, 3)),
    ("f64", (2, 300), (300, 2)),
    ("f64", (100, 5000), (5000, 16)),
    ("bT", (40, 3000), (64, 3000)),
    ("bT", (300, 1025), (100, 1025)),
    ("batch", (3, 20, 1030), (3, 1030, 20)),
    ("batch", (2, 64, 2500), (2, 2500, 48)),
    ("3d", (4, 32, 1100), (1100, 96)),
]


@pytest.mark.parametrize("kind,ashape,bshape", F64_CASES, ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else v)
@pytest.mark.parametrize("optimized", [False, True], ids=["hlo", "optimized"])
def test_f64_dot_matches_xla_bit_for_bit(x64, kind, ashape, bshape, optimized):
    rng = np.random.default_rng(hash(("f64", ashape, bshape)) % 2**32)
    a = rng.standard_normal(ashape)
    b = rng.standard_normal(bshape)
    fn = FNS.get(kind, FNS["f32"])
    lowered = jax.jit(fn).lower(a, b)
    text = lowered.compile().as_text() if optimized else lowered.as_text(dialect="hlo")
    want = np.asarray(jax.jit(fn)(a, b))
    got = np.asarray(goldtrace.golden(text, a, b)[0])
    assert got.dtype == want.dtype == np.float64 and got.shape == want.shape
    bad = got.view(np.uint64) != want.view(np.uint64)
    assert not bad.any(), f"{kind} {ashape}x{bshape}: {int(bad.sum())} of {want.size} elements differ from jax"


@pytest.mark.parametrize("name,fn,ashape,bshape", DECOMPOSED[:3], ids=[c[0] for c in DECOMPOSED[:3]])
def test_f64_decomposed_dot_matches_xla(x64, name, fn, ashape, bshape):
    rng = np.random.default_rng(22)
    a = rng.standard_normal(ashape)
    b = rng.standard_normal(bshape)
    text = jax.jit(fn).lower(a, b).as_text(dialect="hlo")
    want = np.asarray(jax.jit(fn)(a, b))
    got = np.asarray(goldtrace.golden(text, a, b)[0])
    bad = got.view(np.uint64) != want.view(np.uint64)
    assert not bad.any(), f"{name}: {int(bad.sum())} of {want.size} elements differ from jax"


# Many small products (jax.vmap of a matmul, batched einsums) run eight
# products at a time across the vector lanes or one output row vector at a
# time, without a GEMM set-up per product; each element keeps its order:
# YNNPACK's for the dots it takes, the GEMM's kc chains for XLA's own
# (max(m, k, n) < 8). NaN operands go product by product.
SMALL_BATCHED = [
    ("bmm", (4096, 3, 3), (4096, 3, 3)),
    ("bmm", (1000, 4, 4), (1000, 4, 1)),
    ("bmm", (2048, 2, 64), (2048, 64, 2)),
    ("bmm", (512, 64, 16), (512, 16, 16)),
    ("bmm", (777, 8, 8), (777, 8, 8)),
    ("bmm", (300, 5, 37), (300, 37, 11)),
    ("bmm", (256, 33, 20), (256, 20, 24)),
    ("rot", (1024, 3, 3), (1024, 64, 3)),
]
SMALL_FNS = {
    "bmm": jax.vmap(lambda a, b: a @ b),
    "rot": lambda r, p: jnp.einsum("bij,bnj->bni", r, p),
}


@pytest.mark.parametrize("nan", [False, True], ids=["finite", "nan"])
@pytest.mark.parametrize("kind,ashape,bshape", SMALL_BATCHED, ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else v)
def test_batched_small_dots_match_xla(kind, ashape, bshape, nan):
    rng = np.random.default_rng(hash((kind, ashape, bshape)) % 2**32)
    a = rng.standard_normal(ashape).astype(np.float32)
    b = rng.standard_normal(bshape).astype(np.float32)
    if nan:
        a.reshape(-1)[rng.integers(0, a.size, 5)] = np.nan
        b.reshape(-1)[rng.integers(0, b.size, 5)] = np.inf
    fn = SMALL_FNS[kind]
    text = jax.jit(fn).lower(a, b).as_text(dialect="hlo")
    want = np.asarray(jax.jit(fn)(a, b))
    got = np.asarray(goldtrace.golden(text, a, b)[0])
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), f"{kind} {ashape}x{bshape}: {int((~same).sum())} of {want.size} elements differ from jax"
