"""2-D convolutions in XLA:CPU's order, bit for bit.

jaxlib 0.10.2 hands f32 2-D convolutions (bf16 and f16 ones converted to f32
around them) with more than 16 input or output features, no input dilation
and an output and kernel no larger than the input to YNNPACK, which runs
them as a dot over a stencil of the padded input with three reduction dims
(kh, kw, ci): its kernel choice (priced on ci alone, the SSE2 and AVX
multiply-add kernels among the candidates), K blocks of input features
spanning the whole window, 2 or 4 lanes over ci, the features past the last
multiple of the lanes added one window position at a time, B packed or not
(engine/eval/conv_ynn.go). The order also depends on the host's vector width
(AVX-512 or AVX2), which jax and goldtrace read from the same CPU in this
process; run under bench/avx2only's CPUID shim to check the AVX2 order here.

Each case is compared byte for byte against jax on the same inputs. Before
conv_ynn.go, convolutions with more than a few input features were off by an
ulp on ~90% of the elements (the im2col GEMM's 256-deep chains), depthwise
ones on about half.
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


def conv(x, k, stride=(1, 1), pad="SAME", dil=(1, 1), groups=1, dn=("NHWC", "HWIO", "NHWC")):
    return jax.lax.conv_general_dilated(x, k, stride, pad, rhs_dilation=dil, dimension_numbers=dn,
                                        feature_group_count=groups)


# (name, input shape, kernel shape, keyword arguments of conv)
CASES = [
    ("c64_3x3", (2, 28, 28, 64), (3, 3, 64, 64), {}),                       # two K blocks of features
    ("c16_3x3", (2, 28, 28, 16), (3, 3, 16, 64), {}),
    ("c32_3x3", (2, 28, 28, 32), (3, 3, 32, 64), {}),
    ("c128_3x3", (2, 14, 14, 128), (3, 3, 128, 128), {}),
    ("c512_3x3", (1, 7, 7, 512), (3, 3, 512, 256), {}),                    # many blocks, feature tasks
    ("s2", (2, 28, 28, 64), (3, 3, 64, 128), {"stride": (2, 2)}),
    ("s2_valid", (2, 29, 29, 64), (3, 3, 64, 64), {"stride": (2, 2), "pad": "VALID"}),
    ("dil2", (2, 28, 28, 64), (3, 3, 64, 64), {"dil": (2, 2)}),
    ("asym_pad", (2, 13, 16, 96), (5, 4, 96, 48), {"pad": ((2, 1), (0, 3))}),
    ("1x1", (2, 28, 28, 256), (1, 1, 256, 64), {}),
    ("1x1_1000", (1, 8, 8, 256), (1, 1, 256, 1000), {}),                   # 4 lanes, several tasks
    ("stem_7x7", (2, 64, 64, 3), (7, 7, 3, 64), {"stride": (2, 2)}),
    ("lanes4_tail", (2, 13, 13, 65), (3, 3, 65, 17), {}),                  # tile_k 4, one tail feature
    ("lanes2", (1, 16, 16, 17), (2, 3, 17, 96), {}),
    ("lanes2_c192", (2, 14, 14, 192), (3, 3, 192, 96), {}),
    ("co1", (2, 28, 28, 64), (3, 3, 64, 1), {}),
    ("tiny_unpacked", (1, 5, 5, 64), (3, 4, 64, 32), {"pad": "VALID"}),     # B left unpacked
    ("tiny_mixed_tasks", (2, 5, 5, 100), (3, 3, 100, 300), {}),             # tasks of different K blocks
    ("tiny_mixed_fma", (2, 3, 3, 128), (3, 3, 128, 130), {}),               # multiply-add task (AVX kernel)
    ("nchw", (2, 64, 14, 14), (64, 64, 3, 3), {"dn": ("NCHW", "OIHW", "NCHW")}),
    ("groups2", (2, 14, 14, 64), (3, 3, 32, 64), {"groups": 2}),
    ("groups16_cg2", (2, 14, 14, 32), (3, 3, 2, 32), {"groups": 16}),
    ("groups32_cg4", (2, 14, 14, 128), (3, 3, 4, 128), {"groups": 32}),
    ("depthwise", (2, 28, 28, 64), (3, 3, 1, 64), {"groups": 64}),         # rounded products added
    ("depthwise_s2", (2, 28, 28, 96), (5, 5, 1, 96), {"groups": 96, "stride": (2, 2)}),
    ("depthwise_x2", (1, 14, 14, 32), (3, 3, 1, 64), {"groups": 32}),
    ("depthwise_x16", (1, 14, 14, 32), (3, 3, 1, 512), {"groups": 32}),    # FMA chains
    ("depthwise_x8_tiny", (1, 4, 9, 32), (3, 1, 1, 256), {"groups": 32, "stride": (2, 2)}),
    ("groups_cg17_co1_tiny", (1, 5, 7, 544), (2, 3, 17, 32), {"groups": 32, "stride": (2, 1), "pad": "VALID"}),
]


@pytest.mark.parametrize("name,xshape,kshape,kw", CASES, ids=[c[0] for c in CASES])
def test_conv_matches_xla_bit_for_bit(name, xshape, kshape, kw):
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    x = rng.standard_normal(xshape).astype(np.float32)
    k = rng.standard_normal(kshape).astype(np.float32)
    fn = lambda x, k: conv(x, k, **kw)
    _check(fn, x, k)


def _check(fn, *args):
    text = jax.jit(fn).lower(*args).as_text(dialect="hlo")
    wants = jax.tree_util.tree_leaves(jax.jit(fn)(*args))
    gots = goldtrace.golden(text, *args)
    assert len(gots) == len(wants)
    for i, (got, want) in enumerate(zip(gots, wants)):
        got, want = np.asarray(got), np.asarray(want)
        assert got.dtype == want.dtype and got.shape == want.shape
        bad = got.view(np.uint8) != want.view(np.uint8)
        assert not bad.any(), (
            f"result {i}: {int(bad.sum())} of {want.nbytes} bytes differ from jax "
            f"(max abs diff {float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))})")


@pytest.mark.parametrize("stride", [(1, 1), (2, 2)], ids=["s1", "s2"])
def test_conv_gradients_match_xla(stride):
    """jax.grad's input- and weight-gradient convolutions (the weight gradient
    a window as large as the image, its K one long block; the input gradient
    of a strided convolution has input dilation and stays off YNNPACK, so only
    the weight gradient is compared there)."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 16, 16, 64)).astype(np.float32)
    k = rng.standard_normal((3, 3, 64, 48)).astype(np.float32)
    out = conv(x, k, stride)
    g = rng.standard_normal(out.shape).astype(np.float32)
    _check(lambda x, g: jax.vjp(lambda b: conv(x, b, stride), k)[1](g)[0], x, g)
    if stride == (1, 1):
        _check(lambda k, g: jax.vjp(lambda a: conv(a, k, stride), x)[1](g)[0], k, g)
        _check(lambda x, k: jax.grad(lambda a, b: jnp.sum(jnp.tanh(conv(a, b))), (0, 1))(x, k), x, k)


@pytest.mark.parametrize("batch", [8, 5], ids=["b8", "b5"])
def test_weight_gradient_at_size_matches_xla(batch):
    """A weight gradient whose operands pass a million elements: its input
    (batch innermost) is gathered a few images at a time and its B packed in
    K chunks instead of whole (conv_ynn.go, convYnnWholeByImages), which must
    not change a bit; an odd batch leaves a ragged last group of images."""
    rng = np.random.default_rng(11)
    side = 48 if batch == 8 else 64  # K (side² × batch) past 2^14 either way
    x = rng.standard_normal((batch, side, side, 96)).astype(np.float32)
    k = rng.standard_normal((3, 3, 96, 64)).astype(np.float32)
    g = rng.standard_normal((batch, side, side, 64)).astype(np.float32)
    _check(lambda x, g: jax.vjp(lambda b: conv(x, b), k)[1](g)[0], x, g)


@pytest.mark.parametrize("dt", ["bf16", "f16"])
def test_half_conv_matches_xla(dt):
    """bf16/f16 convolutions run as f32 ones between converts."""
    typ = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}[dt]
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 14, 14, 64)).astype(typ)
    k = (rng.standard_normal((3, 3, 64, 64)) * 0.1).astype(typ)
    _check(lambda x, k: conv(x, k), x, k)
    _check(lambda x, k: jax.lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                                     preferred_element_type=jnp.float32), x, k)


def test_xla_optimized_text_matches_bit_for_bit():
    """The same order from XLA's optimized HLO (the convolution inside its
    __ynn_fusion, an NCHW one between transposes)."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 64, 14, 14)).astype(np.float32)
    k = rng.standard_normal((96, 64, 3, 3)).astype(np.float32)
    fn = lambda x, k: conv(x, k, dn=("NCHW", "OIHW", "NCHW"))
    text = jax.jit(fn).lower(x, k).compile().as_text()
    assert "__ynn_fusion" in text
    want = np.asarray(jax.jit(fn)(x, k))
    got = np.asarray(goldtrace.golden(text, x, k)[0])
    bad = got.view(np.uint8) != want.view(np.uint8)
    assert not bad.any(), f"{int(bad.sum())} of {want.nbytes} bytes differ from jax"
