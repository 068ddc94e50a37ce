"""A wider net of real-sized JAX programs than programs_large.py, for finding
the modules where goldtrace's time-to-golden falls behind XLA:CPU's
compile-and-run (issue 12 is judged on held-out modules of this scale). Not
part of `make bench`. For each module: in-process `goldtrace.golden` on the
lowered HLO text against `jax.jit(f).lower(...).compile()(...)` after
`jax.clear_caches()`, interleaved, best of N (BENCH_REPEATS, default 3), and
the fraction of output elements whose bits differ from XLA:CPU's (NaNs equal).

Run: `python3 bench/probe.py [substring...]`; `PROBE_JSON=path` also writes
the rows as JSON."""

import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402

import goldtrace  # noqa: E402


def probe_programs():
    """(name, function, argument factory) of each module."""
    rng = np.random.default_rng(2026)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    bf16 = lambda *s: rng.standard_normal(s).astype(ml_dtypes.bfloat16)
    i32 = lambda hi, *s: rng.integers(0, hi, s).astype(np.int32)

    def layernorm(x, g, b):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b

    def xent(logits, labels):
        lp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.sum(jax.nn.one_hot(labels, logits.shape[-1]) * lp, -1))

    def attention(q, k, v):
        s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / np.float32(8.0)
        return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, -1), v)

    def mlp(params, x):
        for w in params:
            x = jnp.tanh(x @ w)
        return x

    def mlp_loss(params, x, y):
        return jnp.mean((mlp(params, x) - y) ** 2)

    def batchnorm_train(x, g, b):
        m = x.mean((0, 1, 2))
        v = x.var((0, 1, 2))
        return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b

    def conv(x, k, stride=(1, 1), dil=(1, 1), pad="SAME"):
        return jax.lax.conv_general_dilated(x, k, stride, pad, rhs_dilation=dil,
                                            dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def gru_scan(xs, h0, wx, wh):
        def step(h, x):
            n = h.shape[-1]
            zx, zh = x @ wx, h @ wh
            r = jax.nn.sigmoid(zx[:, :n] + zh[:, :n])
            u = jax.nn.sigmoid(zx[:, n:2 * n] + zh[:, n:2 * n])
            c = jnp.tanh(zx[:, 2 * n:] + r * zh[:, 2 * n:])
            h = (1 - u) * c + u * h
            return h, h
        return jax.lax.scan(step, h0, xs)

    def fori_small(x):
        return jax.lax.fori_loop(0, 20000, lambda i, c: c * 0.999 + jnp.sin(c) * 0.001, x)

    def embed_grad(table, ids, g):
        return jax.grad(lambda t: jnp.sum(t[ids] * g))(table)

    P = []
    add = lambda name, fn, mk: P.append((name, fn, mk))
    add("softmax_f32", lambda x: jax.nn.softmax(x, -1), lambda: (f32(4096, 4096),))
    add("softmax_bf16", lambda x: jax.nn.softmax(x, -1), lambda: (bf16(4096, 4096),))
    add("log_softmax_f32", lambda x: jax.nn.log_softmax(x, -1), lambda: (f32(4096, 4096),))
    add("layernorm_f32", layernorm, lambda: (f32(8192, 1024), f32(1024), f32(1024)))
    add("layernorm_bf16", layernorm, lambda: (bf16(8192, 1024), bf16(1024), bf16(1024)))
    add("rmsnorm_f32", lambda x, g: x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * g,
        lambda: (f32(8192, 1024), f32(1024)))
    add("xent", xent, lambda: (f32(8192, 1000), i32(1000, 8192)))
    add("xent_grad", jax.grad(xent), lambda: (f32(8192, 1000), i32(1000, 8192)))
    add("attn_f32", attention, lambda: (f32(4, 8, 512, 64), f32(4, 8, 512, 64), f32(4, 8, 512, 64)))
    add("attn_bf16", attention, lambda: (bf16(4, 8, 512, 64), bf16(4, 8, 512, 64), bf16(4, 8, 512, 64)))
    add("mlp_grad", jax.grad(mlp_loss), lambda: ([f32(1024, 1024) * 0.03 for _ in range(3)], f32(1024, 1024),
                                                 f32(1024, 1024)))
    add("matmul_f32_rect", lambda a, b: a @ b, lambda: (f32(4096, 512), f32(512, 2048)))
    add("matmul_f32_xwt", lambda a, b: a @ b.T, lambda: (f32(2048, 1024), f32(1024, 1024)))
    add("matmul_atb", lambda a, b: a.T @ b, lambda: (f32(1024, 1024), f32(1024, 1024)))
    add("bmm_f32", lambda a, b: jnp.einsum("bij,bjk->bik", a, b), lambda: (f32(64, 256, 256), f32(64, 256, 256)))
    add("bmm_bf16_f32acc", lambda a, b: jnp.einsum("bij,bjk->bik", a, b, preferred_element_type=jnp.float32),
        lambda: (bf16(32, 256, 256), bf16(32, 256, 256)))
    add("int8_matmul", lambda a, b: jnp.matmul(a, b, preferred_element_type=jnp.int32),
        lambda: (rng.integers(-128, 128, (1024, 1024)).astype(np.int8),
                 rng.integers(-128, 128, (1024, 1024)).astype(np.int8)))
    add("complex_exp", lambda x: jnp.exp(x) * x, lambda: ((f32(2048, 2048) + 1j * f32(2048, 2048)).astype(np.complex64),))
    add("cumsum_axis0", lambda x: jnp.cumsum(x, 0), lambda: (f32(2048, 2048),))
    add("cumlogsumexp", lambda x: jax.lax.cumlogsumexp(x, axis=1), lambda: (f32(256, 2048),))
    add("cumprod", lambda x: jnp.cumprod(x * 0.01 + 1, 1), lambda: (f32(1024, 2048),))
    add("searchsorted", lambda s, q: jnp.searchsorted(s, q), lambda: (np.sort(f32(1 << 16)), f32(1 << 20)))
    add("sort_1m", jnp.sort, lambda: (f32(1 << 20),))
    add("argsort_rows", lambda x: jnp.argsort(x, -1), lambda: (f32(1024, 1024),))
    add("top_k_64", lambda x: jax.lax.top_k(x, 64), lambda: (f32(2048, 4096),))
    add("fori_20000_small", fori_small, lambda: (f32(16),))
    add("gru_scan", gru_scan, lambda: (f32(512, 32, 128), f32(32, 256), f32(128, 768) * 0.1, f32(256, 768) * 0.1))
    add("conv1x1", lambda x, k: conv(x, k), lambda: (f32(8, 56, 56, 256), f32(1, 1, 256, 64) * 0.05))
    add("conv3x3_s2", lambda x, k: conv(x, k, (2, 2)), lambda: (f32(8, 112, 112, 64), f32(3, 3, 64, 128) * 0.05))
    add("conv3x3_dil2", lambda x, k: conv(x, k, dil=(2, 2)), lambda: (f32(8, 56, 56, 64), f32(3, 3, 64, 64) * 0.05))
    add("conv7x7_stem", lambda x, k: conv(x, k, (2, 2)), lambda: (f32(8, 224, 224, 3), f32(7, 7, 3, 64) * 0.05))
    add("conv_dgrad", lambda x, k, g: jax.vjp(lambda a: conv(a, k), x)[1](g)[0],
        lambda: (f32(8, 56, 56, 64), f32(3, 3, 64, 64) * 0.05, f32(8, 56, 56, 64)))
    add("conv_bf16", lambda x, k: conv(x, k), lambda: (bf16(8, 56, 56, 64), bf16(3, 3, 64, 64)))
    add("avgpool", lambda x: jax.lax.reduce_window(x, 0.0, jax.lax.add, (1, 3, 3, 1), (1, 2, 2, 1), "SAME") / 9,
        lambda: (f32(8, 112, 112, 64),))
    add("maxpool_grad", jax.grad(lambda x: jnp.sum(jax.lax.reduce_window(
        x, -jnp.inf, jax.lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME") ** 2)), lambda: (f32(8, 56, 56, 64),))
    add("batchnorm_train", batchnorm_train, lambda: (f32(32, 56, 56, 64), f32(64), f32(64)))
    add("embed_grad", embed_grad, lambda: (f32(32000, 512), i32(32000, 4096), f32(4096, 512)))
    add("gather_rows", lambda t, i: t[i], lambda: (f32(65536, 256), i32(65536, 65536)))
    add("scatter_add", lambda x, i, u: x.at[i].add(u), lambda: (f32(8192, 512), i32(8192, 16384), f32(16384, 512)))
    add("transpose_0213", lambda x: x.transpose(0, 2, 1, 3) * 2, lambda: (f32(16, 512, 16, 128),))
    add("transpose_2d", lambda x: x.T + 1, lambda: (f32(4096, 4096),))
    add("concat_pad", lambda a, b: jnp.pad(jnp.concatenate([a, b], 1), ((1, 1), (2, 2))),
        lambda: (f32(2048, 2048), f32(2048, 2048)))
    add("reduce_axis0", lambda x: (x.sum(0), x.max(0), (x * x).mean(0)), lambda: (f32(4096, 4096),))
    add("var_axis0", lambda x: jnp.var(x, 0), lambda: (f32(8192, 1024),))
    add("logsumexp_axis0", lambda x: jax.nn.logsumexp(x, 0), lambda: (f32(4096, 2048),))
    add("prod_rows", lambda x: jnp.prod(x * 0.001 + 1, -1), lambda: (f32(4096, 4096),))
    add("gelu_bf16", lambda x: jax.nn.gelu(x), lambda: (bf16(4096, 4096),))
    add("silu_mul", lambda x, y: jax.nn.silu(x) * y, lambda: (f32(4096, 4096), f32(4096, 4096)))
    add("elementwise_chain", lambda x: jnp.sqrt(jnp.abs(x)) * jnp.sin(x) + jnp.log1p(x * x) - jnp.cos(x) / 3,
        lambda: (f32(4096, 4096),))
    add("pow_f32", lambda x, y: jnp.abs(x) ** y, lambda: (f32(2048, 2048), f32(2048, 2048)))
    add("erf_inv", lambda x: jax.scipy.special.erfinv(jnp.tanh(x)) + jax.lax.erf(x), lambda: (f32(4096, 2048),))
    add("lgamma_digamma", lambda x: jax.lax.lgamma(jnp.abs(x) + 1) + jax.lax.digamma(jnp.abs(x) + 1),
        lambda: (f32(2048, 2048),))
    add("clip_where_bf16", lambda x: jnp.where(x > 0, jnp.clip(x, -1, 1), x * 0.1), lambda: (bf16(4096, 4096),))
    add("bitwise_u32", lambda x, y: ((x ^ y) >> 3) + (x & 0xFFFF) * (y | 1),
        lambda: (rng.integers(0, 2**32, (4096, 4096), dtype=np.uint32),
                 rng.integers(0, 2**32, (4096, 4096), dtype=np.uint32)))
    add("int_div_mod", lambda x, y: (x // (y + 1), x % (y + 1)), lambda: (i32(1 << 20, 4096, 2048), i32(1000, 4096, 2048)))
    add("random_normal", lambda k: jax.random.normal(jax.random.wrap_key_data(k), (4096, 4096)),
        lambda: (np.array([0, 42], np.uint32),))
    add("random_uniform_bf16", lambda k: jax.random.uniform(jax.random.wrap_key_data(k), (4096, 4096), jnp.bfloat16),
        lambda: (np.array([0, 7], np.uint32),))
    add("dropout", lambda k, x: jnp.where(jax.random.bernoulli(jax.random.wrap_key_data(k), 0.9, x.shape), x / 0.9, 0),
        lambda: (np.array([1, 2], np.uint32), f32(4096, 4096)))
    add("fft2", lambda x: jnp.fft.fft2(x), lambda: ((f32(1024, 1024) + 1j * f32(1024, 1024)).astype(np.complex64),))
    add("one_hot_matmul", lambda i, w: jax.nn.one_hot(i, 4096) @ w, lambda: (i32(4096, 2048), f32(4096, 512)))
    add("mixed_precision_mlp", lambda x, w1, w2: (jax.nn.relu(x @ w1) @ w2).astype(jnp.float32),
        lambda: (bf16(2048, 1024), bf16(1024, 4096), bf16(4096, 1024)))
    return P


def differing_fraction(a, b):
    """The fraction of elements whose bits differ (any NaN equals any NaN);
    1.0 when the shapes or types differ."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return 1.0
    if a.size == 0:
        return 0.0
    a, b = np.ascontiguousarray(a).reshape(-1), np.ascontiguousarray(b).reshape(-1)
    same = (a.view(np.uint8).reshape(a.size, -1) == b.view(np.uint8).reshape(b.size, -1)).all(-1)
    if a.dtype.kind in "fcV" or "float" in a.dtype.name:
        try:
            kind = np.complex128 if a.dtype.kind == "c" else np.float64
            same |= np.isnan(a.astype(kind)) & np.isnan(b.astype(kind))
        except (TypeError, ValueError):
            pass
    return float(1 - same.mean())


def main(programs=probe_programs):
    """Measures each of programs() named on the command line (all when none)."""
    repeats = int(os.environ.get("BENCH_REPEATS", "3"))
    wanted = sys.argv[1:]
    rows = []
    for name, fn, mk in programs():
        if wanted and not any(w in name for w in wanted):
            continue
        args = mk()
        flat = jax.tree_util.tree_leaves(args)
        flat_fn = lambda *a, fn=fn, tree=jax.tree_util.tree_structure(args): fn(*jax.tree_util.tree_unflatten(tree, a))
        text = jax.jit(flat_fn, keep_unused=True).lower(*flat).as_text(dialect="hlo")
        np_args = [np.asarray(a) for a in flat]
        try:
            ours_out = goldtrace.golden(text, *np_args)
        except Exception as e:  # noqa: BLE001 -- a probe reports every failure and goes on
            print(f"{name:22s} FAILED: {type(e).__name__}: {str(e)[:200]}", flush=True)
            rows.append(dict(name=name, error=str(e)[:500]))
            continue
        xla_out = jax.tree_util.tree_leaves(jax.jit(flat_fn, keep_unused=True)(*flat))
        differ = 1.0 if len(xla_out) != len(ours_out) else max(
            [differing_fraction(o, x) for o, x in zip(ours_out, xla_out)] + [0.0])
        ours = peer = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            goldtrace.golden(text, *np_args)
            ours = min(ours, time.perf_counter() - t0)
            jax.clear_caches()
            t0 = time.perf_counter()
            jax.block_until_ready(jax.jit(flat_fn, keep_unused=True).lower(*flat).compile()(*flat))
            peer = min(peer, time.perf_counter() - t0)
        rows.append(dict(name=name, ours=ours, peer=peer, ratio=ours / peer, differ=differ))
        print(f"{name:22s} goldtrace {ours*1e3:8.1f} ms  xla {peer*1e3:8.1f} ms  ratio {ours/peer:5.2f}"
              f"  {'bit-exact' if differ == 0 else f'differs on {differ:.2%}'}", flush=True)
    ok = [r for r in rows if "ratio" in r]
    if ok:
        geo = float(np.exp(np.mean([np.log(r["ratio"]) for r in ok])))
        print(f"geometric mean {geo:.3f} over {len(ok)}; over 1.0: "
              + ", ".join(f"{r['name']} {r['ratio']:.2f}" for r in ok if r["ratio"] > 1.0))
    if os.environ.get("PROBE_JSON"):
        with open(os.environ["PROBE_JSON"], "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
