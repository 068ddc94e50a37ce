"""The bundled example: one pre-norm transformer block (attention + MLP) in JAX.
`python3 examples/model.py` regenerates examples/transformer_block.hlo and its
inputs; the demo computes goldens for that module."""

import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BATCH, SEQ, DIM, HEADS, HIDDEN = 2, 16, 64, 4, 256


def init_inputs(seed=0):
    rng = np.random.default_rng(seed)
    f = lambda *s, scale=1.0: (rng.standard_normal(s) * scale).astype(np.float32)
    return {
        "x": f(BATCH, SEQ, DIM),
        "ln1_scale": np.ones(DIM, np.float32) + f(DIM, scale=0.1),
        "w_qkv": f(DIM, 3 * DIM, scale=DIM ** -0.5),
        "w_out": f(DIM, DIM, scale=DIM ** -0.5),
        "ln2_scale": np.ones(DIM, np.float32) + f(DIM, scale=0.1),
        "w_up": f(DIM, HIDDEN, scale=DIM ** -0.5),
        "w_down": f(HIDDEN, DIM, scale=HIDDEN ** -0.5),
    }


def block(x, ln1_scale, w_qkv, w_out, ln2_scale, w_up, w_down):
    import jax
    import jax.numpy as jnp

    def rms_norm(h, scale):
        return h * jax.lax.rsqrt(jnp.mean(h * h, axis=-1, keepdims=True) + 1e-6) * scale

    h = rms_norm(x, ln1_scale)
    q, k, v = jnp.split(h @ w_qkv, 3, axis=-1)
    split = lambda t: t.reshape(BATCH, SEQ, HEADS, DIM // HEADS).transpose(0, 2, 1, 3)
    q, k, v = split(q), split(k), split(v)
    logits = q @ k.transpose(0, 1, 3, 2) / np.sqrt(DIM // HEADS)
    causal = jnp.tril(jnp.ones((SEQ, SEQ), bool))
    logits = jnp.where(causal, logits, -1e9)
    attn = jax.nn.softmax(logits, axis=-1) @ v
    x = x + attn.transpose(0, 2, 1, 3).reshape(BATCH, SEQ, DIM) @ w_out
    h = rms_norm(x, ln2_scale)
    return x + jax.nn.gelu(h @ w_up) @ w_down


def lowered(inputs):
    import jax

    return jax.jit(block).lower(*inputs.values())


if __name__ == "__main__":
    import goldtrace

    inputs = init_inputs()
    text = lowered(inputs).as_text(dialect="hlo")
    with open(os.path.join(HERE, "transformer_block.hlo"), "w") as f:
        f.write(text)
    for i, a in enumerate(inputs.values()):
        goldtrace.save_npy(os.path.join(HERE, "inputs", f"input{i}.npy"), a)
    print(f"wrote transformer_block.hlo ({len(text)} bytes) and {len(inputs)} inputs")
