"""Real-sized JAX programs for `make bench` (issue 12): each entry is
(name, function, example-argument factory, flops) where flops is the
multiply-add work of the big dots/convs (2 per MAC) or 0 when GFLOP/s is not
reported for the module."""

import numpy as np


def _programs():
    import jax
    import jax.numpy as jnp
    import ml_dtypes

    rng = np.random.default_rng(12)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    bf16 = lambda *s: rng.standard_normal(s).astype(ml_dtypes.bfloat16)

    def layernorm(x, g, b):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b

    def gpt2_block(x, g1, b1, wqkv, bqkv, wo, bo, g2, b2, w1, c1, w2, c2):
        bsz, t, d = x.shape
        h = 12
        y = layernorm(x, g1, b1)
        qkv = y @ wqkv + bqkv
        q, k, v = jnp.split(qkv, 3, axis=-1)
        q = q.reshape(bsz, t, h, d // h).transpose(0, 2, 1, 3)
        k = k.reshape(bsz, t, h, d // h).transpose(0, 2, 1, 3)
        v = v.reshape(bsz, t, h, d // h).transpose(0, 2, 1, 3)
        s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / np.float32(np.sqrt(d // h))
        mask = jnp.tril(jnp.ones((t, t), bool))
        s = jnp.where(mask, s, np.float32(-1e10))
        a = jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, axis=-1), v)
        a = a.transpose(0, 2, 1, 3).reshape(bsz, t, d)
        x = x + a @ wo + bo
        y = layernorm(x, g2, b2)
        y = jax.nn.gelu(y @ w1 + c1, approximate=True)
        return x + y @ w2 + c2

    def conv2(x, k1, k2):
        dn = ("NHWC", "HWIO", "NHWC")
        y = jax.lax.conv_general_dilated(x, k1, (1, 1), "SAME", dimension_numbers=dn)
        y = jax.nn.relu(y)
        return jax.lax.conv_general_dilated(y, k2, (1, 1), "SAME", dimension_numbers=dn)

    def conv2_wgrad(x, k1, k2):
        return jax.grad(lambda a, b: jnp.sum(conv2(x, a, b) ** 2), argnums=(0, 1))(k1, k2)

    def matmul(a, b):
        return a @ b

    def tanh_exp_sum(x):
        return jnp.sum(jnp.tanh(x) * jnp.exp(-x * x), -1)

    def mlp16(x, ws):
        for i in range(ws.shape[0]):
            x = jax.nn.relu(x @ ws[i])
        return x

    def lstm_scan(xs, h0, c0, wx, wh, b):
        def step(carry, x):
            h, c = carry
            z = x @ wx + h @ wh + b
            i, f, g, o = jnp.split(z, 4, axis=-1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h
        return jax.lax.scan(step, (h0, c0), xs)

    def maxpool(x):
        return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")

    def embedding_ln(table, ids, g, b):
        return layernorm(table[ids], g, b)

    def depthwise_block(x, kd, kp):
        dn = ("NHWC", "HWIO", "NHWC")
        y = jax.lax.conv_general_dilated(x, kd, (1, 1), "SAME", dimension_numbers=dn,
                                         feature_group_count=x.shape[-1])
        y = jax.lax.conv_general_dilated(jax.nn.relu6(y), kp, (1, 1), "SAME", dimension_numbers=dn)
        return jax.nn.relu6(y)

    def argmax_topk(x):
        v, i = jax.lax.top_k(x, 16)
        return jnp.argmax(x, -1), jnp.argmin(x, 0), v, i

    def cumsum_rows(x):
        return jnp.cumsum(x, axis=1)

    def gelu_exact(x):
        return jax.nn.gelu(x, approximate=False) + jax.nn.softplus(x)

    def conv_transpose(x, k):
        return jax.lax.conv_transpose(x, k, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def rfft_rows(x):
        return jnp.fft.rfft(x)

    def round_fmod(x, y):
        return jnp.round(x * 3) + jnp.floor(x * 7) - jnp.ceil(x * 5) + jnp.fmod(x * 10, y)

    d, t, bsz = 768, 256, 4
    gpt_flops = 2 * bsz * t * (d * 3 * d + d * d + 2 * d * 4 * d) + 2 * 2 * bsz * t * t * d
    conv_flops = 2 * 2 * 8 * 56 * 56 * 64 * 64 * 9
    return [
        ("gpt2_block", gpt2_block, lambda: (
            f32(bsz, t, d), f32(d), f32(d), f32(d, 3 * d) * 0.03, f32(3 * d), f32(d, d) * 0.03, f32(d),
            f32(d), f32(d), f32(d, 4 * d) * 0.03, f32(4 * d), f32(4 * d, d) * 0.03, f32(d)), gpt_flops),
        ("conv2", conv2, lambda: (f32(8, 56, 56, 64), f32(3, 3, 64, 64) * 0.05, f32(3, 3, 64, 64) * 0.05),
         conv_flops),
        ("conv2_wgrad", conv2_wgrad, lambda: (f32(8, 56, 56, 64), f32(3, 3, 64, 64) * 0.05,
                                              f32(3, 3, 64, 64) * 0.05), 3 * conv_flops),
        ("matmul_f32", matmul, lambda: (f32(2048, 2048), f32(2048, 2048)), 2 * 2048**3),
        ("matmul_bf16", matmul, lambda: (bf16(2048, 2048), bf16(2048, 2048)), 2 * 2048**3),
        ("tanh_exp_sum", tanh_exp_sum, lambda: (f32(4096, 4096),), 0),
        ("mlp16", mlp16, lambda: (f32(512, 1024), f32(16, 1024, 1024) * 0.04), 16 * 2 * 512 * 1024 * 1024),
        ("lstm_scan", lstm_scan, lambda: (f32(512, 16, 128), f32(16, 256), f32(16, 256), f32(128, 1024) * 0.1,
                                          f32(256, 1024) * 0.1, f32(1024)), 0),
        ("maxpool", maxpool, lambda: (f32(8, 112, 112, 64),), 0),
        ("depthwise_conv", depthwise_block, lambda: (f32(8, 56, 56, 128), f32(3, 3, 1, 128) * 0.3,
                                                     f32(1, 1, 128, 128) * 0.1), 2 * 8 * 56 * 56 * 128 * (9 + 128)),
        ("argmax_topk", argmax_topk, lambda: (f32(4096, 1024),), 0),
        ("cumsum_rows", cumsum_rows, lambda: (f32(1024, 4096),), 0),
        ("gelu_exact", gelu_exact, lambda: (f32(2048, 4096),), 0),
        ("conv_transpose", conv_transpose, lambda: (f32(8, 56, 56, 64), f32(4, 4, 64, 64) * 0.05), 0),
        ("rfft_rows", rfft_rows, lambda: (f32(2048, 4096),), 0),
        ("round_fmod", round_fmod, lambda: (f32(2048, 4096), f32(2048, 4096) + 3), 0),
        ("embedding_ln", embedding_ln, lambda: (f32(32000, 768), rng.integers(0, 32000, (8, 512)).astype(np.int32),
                                                f32(768), f32(768)), 0),
    ]


PROGRAMS = None


def programs():
    global PROGRAMS
    if PROGRAMS is None:
        PROGRAMS = _programs()
    return PROGRAMS
