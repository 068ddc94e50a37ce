"""More real-sized JAX programs for the held-out-module hunt, beside
bench/probe.py and bench/programs_large.py: the kinds of module users commonly
check that those sets do not cover (ViT patch embedding, layernorm backward,
Adam, rotary embeddings, 1-D/3-D/grouped/NCHW convolutions, f64, f16, int32
and complex64 matmuls, segment sums, row sorts of bf16, top_k with a large k,
reduce_precision, loops with dynamic slices, small batched matmuls, int8
quantization, pooling, image resizing, FFT convolution, masked reductions).
Not part of `make bench`. Each module is measured as bench/probe.py does (its
main(), imported): in-process `goldtrace.golden` on the lowered HLO text
against `jax.jit(f).lower(...).compile()(...)` after `jax.clear_caches()`,
interleaved, best of N (BENCH_REPEATS, default 3), and the fraction of output
elements whose bits differ from XLA:CPU's (NaNs equal). Inputs are 4-64 MB,
from fixed seeds.

Run: `python3 bench/probe_more.py [substring...]`; `PROBE_JSON=path` also
writes the rows as JSON (the f64 modules, run under jax_enable_x64, to
path.x64.json)."""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402

import probe  # noqa: E402


def more_programs():
    """(name, function, argument factory) of each module."""
    rng = np.random.default_rng(2027)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    f16 = lambda *s: rng.standard_normal(s).astype(np.float16)
    bf16 = lambda *s: rng.standard_normal(s).astype(ml_dtypes.bfloat16)
    i32 = lambda lo, hi, *s: rng.integers(lo, hi, s).astype(np.int32)
    c64 = lambda *s: (rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(np.complex64)

    def layernorm(x, g, b):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b

    def conv(x, k, stride=1, pad="SAME", dn=("NHWC", "HWIO", "NHWC"), groups=1):
        nsp = len(dn[0]) - 2
        return jax.lax.conv_general_dilated(x, k, (stride,) * nsp, pad, dimension_numbers=dn,
                                            feature_group_count=groups)

    def vit_patch_embed(img, k, bias, pos, g, b):
        y = conv(img, k, 16, "VALID") + bias
        y = y.reshape(y.shape[0], -1, y.shape[-1]) + pos
        return layernorm(y, g, b)

    def layernorm_grad(x, g, b, dy):
        return jax.grad(lambda x, g, b: jnp.sum(layernorm(x, g, b) * dy), (0, 1, 2))(x, g, b)

    def adam(params, grads, ms, vs, step):
        b1, b2, lr, eps = 0.9, 0.999, 1e-3, 1e-8
        out = []
        for p, g, m, v in zip(params, grads, ms, vs):
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            mh = m / (1 - b1 ** step)
            vh = v / (1 - b2 ** step)
            out.append((p - lr * (mh / (jnp.sqrt(vh) + eps) + 0.01 * p), m, v))
        return out

    def rope(x):
        _, t, _, d = x.shape
        inv = 1.0 / (10000 ** (jnp.arange(0, d, 2, dtype=jnp.float32) / d))
        ang = jnp.arange(t, dtype=jnp.float32)[:, None] * inv[None, :]
        sin, cos = jnp.sin(ang)[None, :, None, :], jnp.cos(ang)[None, :, None, :]
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        return jnp.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)

    def gelu_mlp_bf16(x, w1, b1, w2, b2):
        return jax.nn.gelu(x @ w1 + b1, approximate=True) @ w2 + b2

    def clip_global_norm(grads):
        n = jnp.sqrt(sum(jnp.sum(g * g) for g in grads))
        return [g * jnp.minimum(1.0, 1.0 / (n + 1e-6)) for g in grads]

    def quant_int8(x):
        scale = jnp.max(jnp.abs(x), -1, keepdims=True) / 127.0
        q = jnp.clip(jnp.round(x / scale), -128, 127).astype(jnp.int8)
        return q, q.astype(jnp.float32) * scale

    def dus_fori(buf, rows):
        def body(i, b):
            r = jax.lax.dynamic_slice_in_dim(rows, i * 64, 64, 0)
            prev = jax.lax.dynamic_slice_in_dim(b, (i * 37) % 4000, 64, 0)
            return jax.lax.dynamic_update_slice_in_dim(b, jnp.tanh(r + prev), i * 64, 0)
        return jax.lax.fori_loop(0, 64, body, buf)

    def while_matmul(x, w):
        return jax.lax.fori_loop(0, 50, lambda i, c: jnp.tanh(c @ w), x)

    def avgpool2x2(x):
        x = jnp.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
        return jax.lax.reduce_window(x, 0.0, jax.lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") * 0.25

    def fft_conv(x, k):
        n = x.shape[-1] + k.shape[-1]
        return jnp.fft.irfft(jnp.fft.rfft(x, n) * jnp.fft.rfft(k, n), n)[..., : x.shape[-1]]

    def mask_reduce(x, y):
        m = x > 0.5
        return (jnp.sum(m, -1), jnp.any(m & (y < -2), -1), jnp.all(x > -4, 0),
                jnp.sum(jnp.where(m, y, 0), -1) / jnp.maximum(jnp.sum(m, -1), 1))

    def where_heavy(x):
        return jnp.where(x < -1, -x * x, jnp.where(x < 0, x * 0.5, jnp.where(x < 1, jnp.sqrt(x), jnp.log(x) + 1)))

    def causal_attn(q, k, v):
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(8.0)
        t = q.shape[1]
        s = jnp.where(jnp.tril(jnp.ones((t, t), bool)), s, -1e30)
        return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1), v)

    def pairwise_dist(a, b):
        return jnp.sqrt(jnp.maximum((a * a).sum(-1)[:, None] + (b * b).sum(-1)[None, :] - 2 * a @ b.T, 0))

    P = []
    add = lambda name, fn, mk: P.append((name, fn, mk))
    add("vit_patch_embed", vit_patch_embed, lambda: (f32(16, 224, 224, 3), f32(16, 16, 3, 768) * 0.02, f32(768),
                                                     f32(196, 768) * 0.02, f32(768), f32(768)))
    add("layernorm_grad", layernorm_grad, lambda: (f32(8192, 1024), f32(1024), f32(1024), f32(8192, 1024)))
    add("adam_update", adam, lambda: ([f32(1024, 1024) for _ in range(4)], [f32(1024, 1024) for _ in range(4)],
                                      [f32(1024, 1024) * 0.1 for _ in range(4)],
                                      [np.abs(f32(1024, 1024)) * 0.01 for _ in range(4)], np.float32(10)))
    add("clip_global_norm", clip_global_norm, lambda: ([f32(2048, 1024), f32(1024, 4096), f32(4096), f32(1024)],))
    add("rope_f32", rope, lambda: (f32(4, 2048, 16, 64),))
    add("gelu_tanh_mlp_bf16", gelu_mlp_bf16, lambda: (bf16(2048, 1024), bf16(1024, 4096) * 0.03, bf16(4096),
                                                      bf16(4096, 1024) * 0.03, bf16(1024)))
    add("conv1d_seq", lambda x, k: conv(x, k, dn=("NWC", "WIO", "NWC")), lambda: (f32(16, 4096, 128),
                                                                                 f32(5, 128, 128) * 0.05))
    add("conv_grouped8", lambda x, k: conv(x, k, groups=8), lambda: (f32(8, 56, 56, 128), f32(3, 3, 16, 128) * 0.1))
    add("conv3d", lambda x, k: conv(x, k, dn=("NDHWC", "DHWIO", "NDHWC")),
        lambda: (f32(4, 32, 64, 64, 16), f32(3, 3, 3, 16, 32) * 0.05))
    add("conv_c8", lambda x, k: conv(x, k), lambda: (f32(16, 128, 128, 8), f32(3, 3, 8, 16) * 0.1))
    add("conv_nchw", lambda x, k: conv(x, k, dn=("NCHW", "OIHW", "NCHW")),
        lambda: (f32(16, 64, 56, 56), f32(64, 64, 3, 3) * 0.05))
    add("conv_dgrad_s2", lambda x, k, g: jax.vjp(lambda a: conv(a, k, 2), x)[1](g)[0],
        lambda: (f32(8, 112, 112, 64), f32(3, 3, 64, 128) * 0.05, f32(8, 56, 56, 128)))
    add("matmul_f16", lambda a, b: a @ b, lambda: (f16(1024, 1024), f16(1024, 1024)))
    add("elementwise_f16", lambda x, y: jax.nn.sigmoid(x) * y + jnp.tanh(y), lambda: (f16(4096, 2048), f16(4096, 2048)))
    add("matmul_i32", lambda a, b: a @ b, lambda: (i32(-100, 100, 1024, 1024), i32(-100, 100, 1024, 1024)))
    add("einsum_odd_batch", lambda a, b: jnp.einsum("ibj,jbk->kbi", a, b),
        lambda: (f32(256, 32, 512), f32(512, 32, 256)))
    add("complex64_matmul", lambda a, b: a @ b, lambda: (c64(1024, 1024), c64(1024, 1024)))
    add("segment_sum", lambda d, s: jax.ops.segment_sum(d, s, num_segments=100),
        lambda: (f32(131072, 64), i32(0, 100, 131072)))
    add("bincount_dups", lambda i, w: jnp.zeros(1000, jnp.float32).at[i].add(w),
        lambda: (i32(0, 1000, 1 << 22), f32(1 << 22)))
    add("argmax_rows", lambda x: jnp.argmax(x, -1), lambda: (f32(4096, 4096),))
    add("cumsum_last_bf16", lambda x: jnp.cumsum(x, -1), lambda: (bf16(4096, 2048),))
    add("sort_rows_bf16", lambda x: jnp.sort(x, -1), lambda: (bf16(2048, 2048),))
    add("top_k_1000", lambda x: jax.lax.top_k(x, 1000), lambda: (f32(256, 32768),))
    add("reduce_precision", lambda x: (jax.lax.reduce_precision(x, 5, 10), jax.lax.reduce_precision(x * 100, 4, 3)),
        lambda: (f32(4096, 4096),))
    add("dus_fori", dus_fori, lambda: (f32(4096, 1024), f32(4096, 1024)))
    add("while_matmul_50", while_matmul, lambda: (f32(512, 512), f32(512, 512) * 0.05))
    add("vmap_8x8_matmul", jax.vmap(lambda a, b: a @ b), lambda: (f32(65536, 8, 8), f32(65536, 8, 8)))
    add("logsumexp_last", lambda x: jax.nn.logsumexp(x, -1), lambda: (f32(4096, 4096),))
    add("softplus_silu", lambda x, y: jax.nn.softplus(x) * jax.nn.silu(y) + jax.nn.log_sigmoid(x - y),
        lambda: (f32(4096, 2048), f32(4096, 2048)))
    add("quant_int8", quant_int8, lambda: (f32(4096, 4096),))
    add("avgpool2x2_pad", avgpool2x2, lambda: (f32(8, 112, 112, 64),))
    add("resize_bilinear", lambda x: jax.image.resize(x, (8, 256, 256, 16), "bilinear"),
        lambda: (f32(8, 128, 128, 16),))
    add("resize_down", lambda x: jax.image.resize(x, (8, 112, 112, 16), "bilinear"), lambda: (f32(8, 224, 224, 16),))
    add("fft_conv", fft_conv, lambda: (f32(1024, 4096), f32(1024, 64)))
    add("mask_reduce", mask_reduce, lambda: (f32(4096, 2048), f32(4096, 2048)))
    add("where_heavy", where_heavy, lambda: (f32(4096, 4096),))
    add("causal_attn", causal_attn, lambda: (f32(4, 1024, 8, 64), f32(4, 1024, 8, 64), f32(4, 1024, 8, 64)))
    add("pairwise_dist", pairwise_dist, lambda: (f32(4096, 256), f32(4096, 256)))
    return P


def x64_programs():
    """The modules that need jax_enable_x64 (run under it, after the rest)."""
    rng = np.random.default_rng(2028)
    f64 = lambda *s: rng.standard_normal(s)
    return [
        ("matmul_f64", lambda a, b: a @ b, lambda: (f64(1024, 1024), f64(1024, 1024))),
        ("matmul_f64_2048", lambda a, b: a @ b, lambda: (f64(2048, 2048), f64(2048, 2048))),
        ("matmul_f64_wT", lambda x, w: x @ w.T, lambda: (f64(2048, 1024), f64(1024, 1024))),
        ("elementwise_f64",
         lambda x: jnp.exp(-x * x) * jnp.log1p(jnp.abs(x)) + jnp.sqrt(jnp.abs(x)) / (1 + x * x),
         lambda: (f64(2048, 2048),)),
        ("softmax_f64", lambda x: jax.nn.softmax(x, -1), lambda: (f64(2048, 2048),)),
    ]


if __name__ == "__main__":
    probe.main(more_programs)
    if os.environ.get("PROBE_JSON"):
        os.environ["PROBE_JSON"] += ".x64.json"
    with jax.enable_x64(True):
        probe.main(x64_programs)
