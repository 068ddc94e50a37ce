"""Scan-style modules beside programs_large.py's lstm_scan (issue 12's loops
of small steps), not part of `make bench`: goldtrace's time-to-golden
against XLA:CPU's compile-and-run in the same run, interleaved, best of N
(BENCH_REPEATS, default 5). Run with `python3 bench/scans.py [name...]`;
`GODEBUG=cpu.avx512f=off` measures the AVX2 kernels; BENCH_OPTIMIZED=1 hands
goldtrace XLA:CPU's optimized module (loop fusions in the bodies) instead of
the lowered one."""

import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import goldtrace  # noqa: E402
from programs_large import programs  # noqa: E402

OPTIMIZED = os.environ.get("BENCH_OPTIMIZED") == "1"


def scan_programs():
    """(name, function, arguments) of each module."""
    rng = np.random.default_rng(7)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    out = [(name, fn, mk()) for name, fn, mk, _ in programs() if name == "lstm_scan"]

    def gru(xs, h0, wx, wh, b):
        def step(h, x):
            zx, zh, n = x @ wx + b, h @ wh, h.shape[-1]
            r = jax.nn.sigmoid(zx[:, :n] + zh[:, :n])
            u = jax.nn.sigmoid(zx[:, n:2 * n] + zh[:, n:2 * n])
            c = jnp.tanh(zx[:, 2 * n:] + r * zh[:, 2 * n:])
            h = (1 - u) * c + u * h
            return h, h
        return jax.lax.scan(step, h0, xs)

    def rnn(xs, h0, wx, wh, b):
        def step(h, x):
            h = jnp.tanh(x @ wx + h @ wh + b)
            return h, h.sum(-1)
        return jax.lax.scan(step, h0, xs)

    def rnn_t(xs, h0, wx, wh):
        # Weights read transposed (x·Wᵀ), as PyTorch-style code writes them.
        def step(h, x):
            h = jnp.tanh(x @ wx.T + h @ wh.T)
            return h, h
        return jax.lax.scan(step, h0, xs)

    def fori(xs, h0, w):
        steps = xs.shape[0]

        def body(t, st):
            h, ys = st
            h = jax.nn.relu(h @ w + jax.lax.dynamic_index_in_dim(xs, t, keepdims=False)) * 0.5
            return h, jax.lax.dynamic_update_index_in_dim(ys, h, t, 0)
        return jax.lax.fori_loop(0, steps, body, (h0, jnp.zeros((steps,) + h0.shape, h0.dtype)))

    def fori_small(x):
        # 20000 steps of a few ops on f32[16]: the interpreter's cost per step.
        return jax.lax.fori_loop(0, 20000, lambda i, c: c * 0.999 + jnp.sin(c) * 1e-3, x)

    def fori_int(x):
        return jax.lax.fori_loop(0, 10000, lambda i, c: c * 0.5 + i.astype(jnp.float32), x)

    def mlp_scan(h0, w1, w2, b1):
        def step(h, _):
            h = jnp.tanh(h @ w1 + b1) @ w2
            return h, h.sum()
        return jax.lax.scan(step, h0, None, length=1000)

    def dus_loop(x):
        def body(i, buf):
            return jax.lax.dynamic_update_slice(buf, (x * i.astype(jnp.float32))[None], (i, 0))
        return jax.lax.fori_loop(0, 2000, body, jnp.zeros((2000, 32), jnp.float32))

    out += [
        ("fori_small", fori_small, (f32(16),)),
        ("fori_int", fori_int, (f32(4),)),
        ("mlp_scan", mlp_scan, (f32(8, 64), f32(64, 64) * 0.1, f32(64, 64) * 0.1, f32(64))),
        ("dus_loop", dus_loop, (f32(32),)),
        ("gru_scan", gru, (f32(768, 32, 96), f32(32, 192), f32(96, 576) * 0.1, f32(192, 576) * 0.1, f32(576))),
        ("rnn_scan", rnn, (f32(256, 64, 128), f32(64, 512), f32(128, 512) * 0.1, f32(512, 512) * 0.05, f32(512))),
        ("rnn_t_scan", rnn_t, (f32(512, 8, 64), f32(8, 384), f32(384, 64) * 0.1, f32(384, 384) * 0.05)),
        ("fori_dus", fori, (f32(1024, 8, 256), f32(8, 256), f32(256, 256) * 0.06)),
    ]
    return out


def _time(thunk):
    t0 = time.perf_counter()
    thunk()
    return time.perf_counter() - t0


def main(only, repeats):
    for name, fn, args in scan_programs():
        if only and name not in only:
            continue
        lowered = jax.jit(fn).lower(*args)
        text = lowered.compile().as_text() if OPTIMIZED else lowered.as_text(dialect="hlo")
        np_args = [np.asarray(a) for a in args]
        goldtrace.golden(text, *np_args)  # warm the process
        ours = peer = float("inf")
        for _ in range(repeats):
            ours = min(ours, _time(lambda: goldtrace.golden(text, *np_args)))

            def xla():
                jax.clear_caches()
                jax.block_until_ready(jax.jit(fn).lower(*args).compile()(*args))
            peer = min(peer, _time(xla))
        print(f"{name:12s} goldtrace {ours*1e3:8.1f} ms   xla compile+run {peer*1e3:8.1f} ms   ratio {ours/peer:5.2f}",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:], int(os.environ.get("BENCH_REPEATS", "5")))
