"""Representative JAX programs shared by the benchmarks and the demo-style checks:
each entry is (name, function, example-argument factory)."""

import numpy as np


def _programs():
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(7)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)

    def mlp(x, w1, w2):
        return jax.nn.relu(x @ w1) @ w2

    def mlp_grad(x, w1, w2):
        return jax.grad(lambda a, b: jnp.sum(mlp(x, a, b) ** 2), argnums=(0, 1))(w1, w2)

    def attention(q, k, v):
        s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / 8.0
        return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, axis=-1), v)

    def cnn(x, k1, k2):
        y = jax.lax.conv_general_dilated(x, k1, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        y = jax.nn.relu(y)
        y = jax.lax.reduce_window(y, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        return jax.lax.conv_general_dilated(y, k2, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def layernorm(x, g, b):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b

    def rnn(xs, h0, w, u):
        def step(h, x):
            h = jnp.tanh(x @ w + h @ u)
            return h, h
        return jax.lax.scan(step, h0, xs)

    def int8_matmul(a, b):
        return jax.lax.dot(a, b, preferred_element_type=jnp.int32)

    def bf16_matmul(a, b):
        return jnp.dot(a.astype(jnp.bfloat16), b.astype(jnp.bfloat16)).astype(jnp.float32)

    def embedding(table, ids, upd):
        return table[ids].sum(0), table.at[ids].add(upd)

    def sort_topk(x):
        return jnp.sort(x, axis=-1), jax.lax.top_k(x, 8)

    def fft(x):
        return jnp.fft.rfft(x, axis=-1)

    def elementwise(x):
        return jnp.tanh(x) * jax.nn.sigmoid(x) + jnp.exp(-x * x) + jnp.log1p(jnp.abs(x))

    i8 = lambda *s: rng.integers(-128, 128, size=s).astype(np.int8)
    return [
        ("mlp", mlp, lambda: (f32(64, 512), f32(512, 1024), f32(1024, 256))),
        ("mlp_grad", mlp_grad, lambda: (f32(64, 512), f32(512, 1024), f32(1024, 256))),
        ("attention", attention, lambda: (f32(2, 8, 128, 64), f32(2, 8, 128, 64), f32(2, 8, 128, 64))),
        ("cnn", cnn, lambda: (f32(8, 32, 32, 16), f32(3, 3, 16, 32), f32(3, 3, 32, 32))),
        ("layernorm", layernorm, lambda: (f32(256, 1024), f32(1024), f32(1024))),
        ("rnn_scan", rnn, lambda: (f32(32, 16, 128), f32(16, 128), f32(128, 128), f32(128, 128))),
        ("int8_matmul", int8_matmul, lambda: (i8(256, 512), i8(512, 256))),
        ("bf16_matmul", bf16_matmul, lambda: (f32(256, 512), f32(512, 256))),
        ("embedding", embedding, lambda: (f32(1000, 64), rng.integers(0, 1000, 256).astype(np.int32), f32(256, 64))),
        ("sort_topk", sort_topk, lambda: (f32(64, 1024),)),
        ("rfft", fft, lambda: (f32(64, 1024),)),
        ("elementwise", elementwise, lambda: (f32(1024, 1024),)),
    ]


PROGRAMS = None


def programs():
    global PROGRAMS
    if PROGRAMS is None:
        PROGRAMS = _programs()
    return PROGRAMS
