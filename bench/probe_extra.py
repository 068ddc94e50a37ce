"""A third set of real-sized JAX programs for the held-out-module hunt
(issue 12), beside bench/probe.py and bench/probe_more.py: jax.nn's
dot_product_attention (f32, causal bf16), a scan RNN, pooling and
upsampling, take_along_axis, argsort, label-smoothed cross-entropy and its
gradient over a 32000-word vocabulary, cummax and cumlogsumexp rows,
segment_max, top_k, a SwiGLU MLP, histogram, batched solves, a BERT encoder
layer, a llama block (RMSNorm, RoPE, causal attention, SwiGLU), a ResNet
block in training mode, a MobileNet block, top-2 mixture-of-experts routing,
a GRU, a strided transposed convolution, a VAE loss, an Adam step on an MSE
gradient, embedding bags, group norm, bf16 attention with an f32 softmax.
Not part of `make bench`. Each module is measured as bench/probe.py does
(its main(), imported): in-process `goldtrace.golden` on the lowered HLO text
against `jax.jit(f).lower(...).compile()(...)` after `jax.clear_caches()`,
interleaved, best of N (BENCH_REPEATS, default 3), and the fraction of
output elements whose bits differ from XLA:CPU's.

Run: `python3 bench/probe_extra.py [substring...]`."""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402

import probe  # noqa: E402


def _makers(seed):
    """A seeded generator and its f32, bf16 and int32 array makers."""
    rng = np.random.default_rng(seed)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    bf16 = lambda *s: rng.standard_normal(s).astype(ml_dtypes.bfloat16)
    i32 = lambda lo, hi, *s: rng.integers(lo, hi, s).astype(np.int32)
    return rng, f32, bf16, i32


def _batch_one():
    rng, f32, bf16, i32 = _makers(99)
    P = []
    add = lambda n, f, m: P.append((n, f, m))
    add("dpa_f32", lambda q, k, v: jax.nn.dot_product_attention(q, k, v), lambda: (f32(4, 512, 8, 64), f32(4, 512, 8, 64), f32(4, 512, 8, 64)))
    add("dpa_causal_bf16", lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=True), lambda: (bf16(4, 512, 8, 64), bf16(4, 512, 8, 64), bf16(4, 512, 8, 64)))
    def rnn(xs, h0, w, u):
        def step(h, x):
            h = jnp.tanh(x @ w + h @ u)
            return h, h
        return jax.lax.scan(step, h0, xs)[1]
    add("rnn_scan_256", rnn, lambda: (f32(256, 64, 256), f32(64, 512), f32(256, 512) * 0.05, f32(512, 512) * 0.05))
    add("maxpool2x2", lambda x: jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"), lambda: (f32(16, 112, 112, 64),))
    add("upsample_nearest", lambda x: jnp.repeat(jnp.repeat(x, 2, 1), 2, 2), lambda: (f32(8, 64, 64, 128),))
    add("take_along_axis", lambda x, i: jnp.take_along_axis(x, i, 1), lambda: (f32(4096, 1024), i32(0, 1024, 4096, 256)))
    add("argsort_1m", lambda x: jnp.argsort(x), lambda: (f32(1 << 20),))
    add("xent_smooth", lambda l, y: -jnp.mean(jnp.sum(jax.nn.log_softmax(l) * (0.9 * jax.nn.one_hot(y, 1000) + 0.1 / 1000), -1)), lambda: (f32(4096, 1000), i32(0, 1000, 4096)))
    add("einsum_qk_bf16", lambda q, k: jnp.einsum("bhqd,bhkd->bhqk", q, k), lambda: (bf16(4, 8, 512, 64), bf16(4, 8, 512, 64)))
    add("depthwise5x5", lambda x, k: jax.lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=64), lambda: (f32(8, 56, 56, 64), f32(5, 5, 1, 64)))
    add("cummax", lambda x: jax.lax.cummax(x, 1), lambda: (f32(4096, 2048),))
    add("segment_max", lambda d, s: jax.ops.segment_max(d, s, num_segments=512), lambda: (f32(131072, 64), i32(0, 512, 131072)))
    add("top_k_rows8", lambda x: jax.lax.top_k(x, 8), lambda: (f32(8192, 1024),))
    def swiglu(x, w1, w3, w2):
        return (jax.nn.silu(x @ w1) * (x @ w3)) @ w2
    add("swiglu_bf16", swiglu, lambda: (bf16(2048, 1024), bf16(1024, 2816) * 0.03, bf16(1024, 2816) * 0.03, bf16(2816, 1024) * 0.03))
    def ln_mm(x, g, w):
        m = x.mean(-1, keepdims=True); v = ((x - m) ** 2).mean(-1, keepdims=True)
        return ((x - m) * jax.lax.rsqrt(v + 1e-5) * g) @ w
    add("layernorm_matmul", ln_mm, lambda: (f32(4096, 768), f32(768), f32(768, 768) * 0.03))
    add("norm_axis0", lambda x: jnp.linalg.norm(x, axis=0), lambda: (f32(4096, 2048),))
    add("conv_bn_relu_nchw", lambda x, k, s, b: jax.nn.relu(jax.lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW")) * s[None, :, None, None] + b[None, :, None, None]), lambda: (f32(8, 64, 56, 56), f32(64, 64, 3, 3) * 0.05, f32(64), f32(64)))
    add("histogram", lambda x: jnp.histogram(x, bins=256, range=(-4, 4))[0], lambda: (f32(1 << 22),))
    add("batched_inv_solve", lambda a, b: jnp.linalg.solve(a + 8 * jnp.eye(8), b), lambda: (f32(16384, 8, 8), f32(16384, 8, 1)))
    add("mlp_bwd", lambda x, w1, w2: jax.grad(lambda a, b: jnp.sum(jax.nn.gelu(x @ a) @ b))(w1, w2), lambda: (f32(2048, 1024), f32(1024, 2048) * 0.03, f32(2048, 1024) * 0.03))
    add("l2_normalize", lambda x: x / jnp.linalg.norm(x, axis=-1, keepdims=True), lambda: (f32(8192, 1024),))
    add("clip_round_int8", lambda x: jnp.clip(jnp.round(x * 20), -128, 127).astype(jnp.int8), lambda: (f32(4096, 4096),))
    add("logcumsumexp_rows", lambda x: jax.lax.cumlogsumexp(x, axis=1), lambda: (f32(2048, 2048),))
    add("gather_2d_embed", lambda t, i: t[i], lambda: (f32(50000, 512), i32(0, 50000, 16, 512)))
    add("scatter_rows_add", lambda t, i, u: t.at[i].add(u), lambda: (f32(10000, 256), i32(0, 10000, 65536), f32(65536, 256)))
    return P


def _batch_two():
    rng, f32, bf16, i32 = _makers(7)
    P = []
    add = lambda n, f, m: P.append((n, f, m))
    def ln(x, g, b):
        m = x.mean(-1, keepdims=True); v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b
    def rms(x, g):
        return x * jax.lax.rsqrt((x * x).mean(-1, keepdims=True) + 1e-6) * g
    def bert_layer(x, mask, wqkv, wo, g1, b1, w1, w2, g2, b2):
        B, T, D = x.shape; H = 12
        qkv = (x @ wqkv).reshape(B, T, 3, H, D // H)
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / 8.0 + jnp.where(mask[:, None, None, :], 0.0, -1e9)
        a = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1), v).reshape(B, T, D)
        x = ln(x + a @ wo, g1, b1)
        return ln(x + jax.nn.gelu(x @ w1) @ w2, g2, b2)
    D = 768
    add("bert_layer", bert_layer, lambda: (f32(4, 256, D), rng.random((4, 256)) > 0.1, f32(D, 3 * D) * 0.03, f32(D, D) * 0.03,
                                          f32(D), f32(D), f32(D, 4 * D) * 0.03, f32(4 * D, D) * 0.03, f32(D), f32(D)))
    def llama_block(x, g1, wq, wk, wv, wo, g2, w1, w3, w2, cos, sin):
        B, T, D = x.shape; H = 8; hd = D // H
        h = rms(x, g1)
        def rope(t):
            t = t.reshape(B, T, H, hd); t1, t2 = t[..., : hd // 2], t[..., hd // 2:]
            return jnp.concatenate([t1 * cos - t2 * sin, t1 * sin + t2 * cos], -1)
        q, k, v = rope(h @ wq), rope(h @ wk), (h @ wv).reshape(B, T, H, hd)
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(hd)
        s = jnp.where(jnp.tril(jnp.ones((T, T), bool)), s, -jnp.inf)
        a = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1), v).reshape(B, T, D)
        x = x + a @ wo
        h = rms(x, g2)
        return x + (jax.nn.silu(h @ w1) * (h @ w3)) @ w2
    D2 = 512
    add("llama_block", llama_block, lambda: (f32(2, 256, D2), f32(D2), f32(D2, D2) * .04, f32(D2, D2) * .04, f32(D2, D2) * .04,
                                              f32(D2, D2) * .04, f32(D2), f32(D2, 1376) * .04, f32(D2, 1376) * .04, f32(1376, D2) * .04,
                                              f32(256, 1, 32), f32(256, 1, 32)))
    def resblock_train(x, k1, k2, g1, b1, g2, b2):
        dn = ("NHWC", "HWIO", "NHWC")
        def bn(y, g, b):
            m = y.mean((0, 1, 2)); v = y.var((0, 1, 2))
            return (y - m) * jax.lax.rsqrt(v + 1e-5) * g + b
        y = jax.nn.relu(bn(jax.lax.conv_general_dilated(x, k1, (1, 1), "SAME", dimension_numbers=dn), g1, b1))
        y = bn(jax.lax.conv_general_dilated(y, k2, (1, 1), "SAME", dimension_numbers=dn), g2, b2)
        return jax.nn.relu(x + y)
    add("resblock_train", resblock_train, lambda: (f32(8, 28, 28, 128), f32(3, 3, 128, 128) * .03, f32(3, 3, 128, 128) * .03,
                                                    f32(128), f32(128), f32(128), f32(128)))
    def mobilenet_block(x, kd, kp, g, b):
        y = jax.lax.conv_general_dilated(x, kd, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=x.shape[-1])
        y = jax.nn.relu6(y * g + b)
        return jax.lax.conv_general_dilated(y, kp, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    add("mobilenet_block", mobilenet_block, lambda: (f32(8, 56, 56, 128), f32(3, 3, 1, 128) * .3, f32(1, 1, 128, 256) * .1, f32(128), f32(128)))
    def moe_route(x, wg, we):
        logits = x @ wg
        w, idx = jax.lax.top_k(jax.nn.softmax(logits, -1), 2)
        outs = jnp.einsum("td,edf->tef", x, we)
        sel = jnp.take_along_axis(outs, idx[:, :, None], 1)
        return jnp.sum(sel * w[:, :, None], 1)
    add("moe_top2", moe_route, lambda: (f32(1024, 256), f32(256, 8) * .1, f32(8, 256, 256) * .05))
    def gru_scan(xs, h0, wz, uz, wr, ur, wh, uh):
        def step(h, x):
            z = jax.nn.sigmoid(x @ wz + h @ uz); r = jax.nn.sigmoid(x @ wr + h @ ur)
            hh = jnp.tanh(x @ wh + (r * h) @ uh)
            h = (1 - z) * h + z * hh
            return h, h
        return jax.lax.scan(step, h0, xs)[1]
    add("gru_scan_big", gru_scan, lambda: (f32(256, 32, 128), f32(32, 256), *[f32(128, 256) * .1 if i % 2 == 0 else f32(256, 256) * .1 for i in range(6)]))
    add("conv_transpose_s2", lambda x, k: jax.lax.conv_transpose(x, k, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
        lambda: (f32(8, 28, 28, 128), f32(3, 3, 128, 64) * .05))
    add("vae_reparam", lambda mu, lv, eps: jnp.sum(-0.5 * (1 + lv - mu ** 2 - jnp.exp(lv))) + jnp.sum((mu + jnp.exp(0.5 * lv) * eps) ** 2),
        lambda: (f32(4096, 512), f32(4096, 512) * .1, f32(4096, 512)))
    add("sdpa_grad", lambda q, k, v: jax.grad(lambda q: jnp.sum(jax.nn.softmax(q @ k.T / 8, -1) @ v))(q), lambda: (f32(1024, 64), f32(1024, 64), f32(1024, 64)))
    add("mse_adam_step", lambda w, x, y, m, v: (lambda g: (m * .9 + .1 * g, v * .999 + .001 * g * g, w - 1e-3 * (m * .9 + .1 * g) / (jnp.sqrt(v * .999 + .001 * g * g) + 1e-8)))(jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)),
        lambda: (f32(1024, 512) * .05, f32(2048, 1024), f32(2048, 512), f32(1024, 512) * 0, f32(1024, 512) * 0))
    add("embedding_bag", lambda t, i: jnp.sum(t[i], 1), lambda: (f32(100000, 128), i32(0, 100000, 4096, 20)))
    add("groupnorm", lambda x, g, b: ((x.reshape(8, 32, 32, 32, 4) - x.reshape(8, 32, 32, 32, 4).mean((1, 2, 4), keepdims=True)) / jnp.sqrt(x.reshape(8, 32, 32, 32, 4).var((1, 2, 4), keepdims=True) + 1e-5)).reshape(8, 32, 32, 128) * g + b,
        lambda: (f32(8, 32, 32, 128), f32(128), f32(128)))
    add("bilinear_attn_bf16", lambda q, k, v: jax.nn.softmax((q @ jnp.swapaxes(k, -1, -2)).astype(jnp.float32) / 8, -1).astype(jnp.bfloat16) @ v,
        lambda: (bf16(8, 12, 256, 64), bf16(8, 12, 256, 64), bf16(8, 12, 256, 64)))
    add("cross_entropy_bwd", lambda l, y: jax.grad(lambda l: -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(l), y[:, None], 1)))(l),
        lambda: (f32(2048, 32000) * 2, i32(0, 32000, 2048)))
    return P


def extra_programs():
    """(name, function, argument factory) of each module."""
    return _batch_one() + _batch_two()


if __name__ == "__main__":
    probe.main(extra_programs)
