"""Writes HLO text modules produced by JAX/XLA into a directory.

Usage: python3 gen_modules.py OUTDIR

For every case it writes NAME.hlo (the unoptimized module JAX hands to XLA) and
NAME.opt.hlo (the module after XLA:CPU's optimization passes). The Go tests in
engine/hlo parse, verify, print and re-parse every file.
"""
import os
import sys

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

jax.config.update("jax_enable_x64", True)

F32 = jnp.float32


def z(shape, dt=F32):
    return jax.ShapeDtypeStruct(shape, dt)


CASES = {}


def case(*args, **kw):
    def deco(f):
        CASES[f.__name__] = (f, args, kw)
        return f
    return deco


# ---- elementwise over all dtypes ----
ALL_DTYPES = [jnp.bool_, jnp.int8, jnp.int16, jnp.int32, jnp.int64, jnp.uint8, jnp.uint16,
              jnp.uint32, jnp.uint64, jnp.float16, jnp.bfloat16, jnp.float32, jnp.float64,
              jnp.complex64, jnp.complex128, jnp.int4, jnp.uint4, jnp.float8_e4m3fn,
              jnp.float8_e5m2, jnp.float8_e4m3fnuz, jnp.float8_e5m2fnuz, jnp.float8_e4m3b11fnuz,
              jnp.float8_e4m3, jnp.float8_e3m4, jnp.float8_e8m0fnu, jnp.float4_e2m1fn]


def _elementwise(dt):
    def f(x, y):
        if dt == jnp.bool_:
            return x & y, x | ~y, x ^ y, x == y
        k = jnp.array(1, dt)
        if jnp.issubdtype(dt, jnp.integer):
            return x + y * k, x - y, jnp.maximum(x, y), x < y, x.astype(F32), jnp.array([3, 1], dt)
        if dt in (jnp.float8_e8m0fnu,):
            return x.astype(F32) * 2, x.astype(F32) < 1, jnp.array([1.0, 2.0], dt)
        r = (x.astype(F32) + y.astype(F32)).astype(dt)
        return r, x.astype(F32) < 1, jnp.array([1.5, -0.25], dt), jnp.array([jnp.nan, jnp.inf], dt)
    return f


for _dt in ALL_DTYPES:
    CASES["elementwise_" + jnp.dtype(_dt).name] = (_elementwise(_dt), (z((2, 3), _dt), z((2, 3), _dt)), {})


@case(z((3, 4)), z((3, 4)))
def math_ops(x, y):
    return (jnp.sin(x) * jnp.cos(y) + jnp.exp(x) - jnp.log1p(jnp.abs(y)) / jnp.sqrt(jnp.abs(x) + 1),
            jnp.tanh(x), jnp.arctan2(x, y), jnp.clip(x, -1, 1), jnp.where(x > y, x, y),
            jnp.floor(x), jnp.round(x), jax.nn.sigmoid(x), jnp.power(x, 2.5), lax.erf(x),
            jnp.sign(y), lax.rsqrt(jnp.abs(x) + 1), jnp.expm1(x), lax.cbrt(x), lax.is_finite(x),
            lax.reduce_precision(x, exponent_bits=5, mantissa_bits=10),
            jnp.bitwise_not(x.view(jnp.int32)), lax.population_count(x.view(jnp.uint32)),
            lax.clz(x.view(jnp.int32)), x.view(jnp.int32) >> 3, lax.shift_right_logical(x.view(jnp.int32), jnp.int32(2)),
            lax.complex(x, y), jnp.real(lax.complex(x, y)), jnp.imag(lax.complex(x, y)))


@case(z((4, 8)))
def constants(x):
    c = jnp.array([[1.0, -2.5, np.inf, -np.inf], [np.nan, 1e-30, 3.4e38, 0.1]], F32)
    i = jnp.array([[-(2 ** 31), 2 ** 31 - 1]], jnp.int32)
    u = jnp.array([2 ** 64 - 1, 0], jnp.uint64)
    d = jnp.array([1e300, -1e-300, 0.1], jnp.float64)
    big = jnp.arange(40.0, dtype=F32).reshape(5, 8)
    return x[:2, :4] + c, i, u, d, jnp.array(True), jnp.array([1 + 2j, -3.5j], jnp.complex64), big


@case(z((2, 3, 4)))
def shapes(x):
    return (x.reshape(6, 4), x.transpose(2, 0, 1), jnp.flip(x, 1), x[:, 1:3, ::2],
            jnp.broadcast_to(x[:, :1, :], (2, 3, 4)), jnp.concatenate([x, x], axis=1),
            jnp.pad(x, ((1, 0), (0, 2), (0, 0))), lax.pad(x, jnp.float32(0), [(0, 0, 0), (-1, 1, 1), (1, 1, 2)]),
            lax.dynamic_slice(x, (0, 1, 1), (2, 2, 2)), lax.dynamic_update_slice(x, x[:, :1, :], (0, 2, 0)),
            jnp.expand_dims(x, 0), x.astype(jnp.bfloat16).view(jnp.uint16), x.view(jnp.uint8),
            x.astype(jnp.float64).view(jnp.float32), jnp.zeros((0, 3)), lax.broadcasted_iota(jnp.int32, (3, 5), 1))


@case(z((4, 5, 6)), z((4, 6, 7)))
def dot_general(a, b):
    return (jnp.einsum("bij,bjk->bik", a, b), jnp.einsum("bij,cjk->bick", a, b),
            jnp.dot(a[0], b[0], precision=lax.Precision.HIGHEST),
            lax.dot_general(a.astype(jnp.bfloat16), b.astype(jnp.bfloat16), (((2,), (1,)), ((0,), (0,))),
                            preferred_element_type=F32),
            lax.dot_general(a.astype(jnp.int8), b.astype(jnp.int8), (((2,), (1,)), ((0,), (0,))),
                            preferred_element_type=jnp.int32))


@case(z((2, 8, 9, 9)), z((8, 2, 3, 3)))
def conv(x, w):
    return (lax.conv_general_dilated(x, w, (1, 1), "SAME", feature_group_count=4),
            lax.conv_general_dilated(x, w[:, :1].repeat(8, 1), (2, 1), [(1, 2), (0, 1)], lhs_dilation=(1, 2),
                                     rhs_dilation=(2, 1)),
            lax.conv_general_dilated(x.transpose(0, 2, 3, 1), w[:, :1].repeat(8, 1).transpose(2, 3, 1, 0), (1, 1),
                                     "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")),
            lax.conv_general_dilated(x, jnp.ones((8, 8, 3, 3), F32), (1, 1), "VALID", batch_group_count=2),
            lax.conv_general_dilated(x[:, :, 0, :], w[:, :1, 0, :].repeat(8, 1), (1,), "SAME"))


@case(z((2, 8, 8, 3)))
def conv_grad(x):
    w = jnp.ones((3, 3, 3, 4), F32)

    def f(x, w):
        y = lax.conv_general_dilated(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jnp.sum(y ** 2)
    return jax.grad(f, argnums=(0, 1))(x, w)


@case(z((3, 4, 5)), z((3, 4, 5), jnp.int32))
def reduce(x, i):
    return (jnp.sum(x, axis=(0, 2)), jnp.max(x), jnp.min(i, axis=1), jnp.argmax(x, axis=1),
            jnp.prod(x, axis=0), jnp.all(x > 0, axis=2), jnp.mean(x.astype(jnp.bfloat16), axis=1),
            lax.reduce((x, i), (jnp.float32(0), jnp.int32(0)), lambda a, b: (a[0] + b[0], a[1] + b[1]), (1,)))


@case(z((2, 8, 8, 3)))
def reduce_window(x):
    return (lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME"),
            lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 1, 1, 1), [(0, 0), (1, 1), (0, 1), (0, 0)],
                              base_dilation=(1, 2, 1, 1), window_dilation=(1, 1, 2, 1)),
            jnp.cumsum(x, axis=1), lax.cummax(x, axis=2))


@case(z((2, 8, 8, 3)))
def select_and_scatter(x):
    def pool(x):
        return jnp.sum(lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") ** 2)
    return jax.grad(pool)(x)


@case(z((5, 4)), z((3,), jnp.int32), z((3, 2), jnp.int32))
def gather_scatter(x, i, ij):
    return (x[i], x[i, 1:3], x[ij[:, 0], ij[:, 1]], x.at[i].add(1.0), x.at[i].set(2.0, mode="drop"),
            x.at[ij[:, 0], ij[:, 1]].max(3.0), x.at[i].get(mode="fill", fill_value=-1.0),
            jnp.take_along_axis(x, jnp.argsort(x, axis=1), axis=1), x.at[i].mul(2.0, unique_indices=True,
                                                                               indices_are_sorted=True),
            jax.vmap(lambda r, k: r[k])(x[:3], i), jax.vmap(lambda r, k: r.at[k].add(1.0))(x[:3], i))


@case(z((4, 10)), z((4, 10), jnp.int32))
def sort_topk(x, k):
    return (jnp.sort(x, axis=1), jnp.argsort(x, axis=0, stable=True), lax.sort((x, k), num_keys=1),
            lax.top_k(x, 3), jnp.sort(k, axis=1, descending=True))


@case(z((4,)), z((), jnp.int32))
def control_flow(x, n):
    def body(c):
        i, v = c
        return i + 1, v * 1.5
    a = lax.while_loop(lambda c: c[0] < n, body, (0, x))
    b = lax.cond(n > 2, lambda v: v + 1, lambda v: v * 2, x)
    c = lax.switch(n, [lambda v: v, lambda v: -v, lambda v: v * v], x)
    d = lax.scan(lambda c, v: (c + v, c * v), 0.0, x)
    e = lax.fori_loop(0, 3, lambda i, v: v + i, x)
    return a, b, c, d, e


@case(z((2,), jnp.uint32))
def rng(key):
    k = jax.random.wrap_key_data(key, impl="threefry2x32")
    out = [jax.random.normal(k, (3, 4)), jax.random.uniform(k, (5,)), jax.random.randint(k, (4,), 0, 10),
           jax.random.bits(k, (2, 3), jnp.uint8), jax.random.split(k, 3)]
    k2 = jax.random.key(0, impl="rbg")
    out.append(jax.random.normal(k2, (3, 4)))
    k3 = jax.random.key(0, impl="unsafe_rbg")
    out.append(jax.random.uniform(k3, (7,)))
    return out


@case(z((4, 8)))
def fft(x):
    c = x.astype(jnp.complex64)
    return (jnp.fft.fft(c), jnp.fft.ifft(c, axis=0), jnp.fft.rfft(x), jnp.fft.irfft(jnp.fft.rfft(x), n=8),
            jnp.fft.fft2(c), jnp.fft.rfftn(x))


@case(z((4, 4)))
def linalg(a):
    s = a @ a.T + 4 * jnp.eye(4, dtype=F32)
    l = jnp.linalg.cholesky(s)
    return (l, lax.linalg.triangular_solve(l, a, left_side=True, lower=True),
            lax.linalg.triangular_solve(l, a, left_side=False, lower=True, transpose_a=True, unit_diagonal=True),
            jnp.linalg.qr(a), jnp.linalg.eigh(s), jnp.linalg.svd(a), jnp.linalg.inv(s), jnp.linalg.det(a),
            lax.linalg.cholesky(s, symmetrize_input=False))


@case(z((2, 16, 32)), z((32, 96)), z((32, 32)))
def attention(x, wqkv, wo):
    def f(x, wqkv, wo):
        q, k, v = jnp.split(x @ wqkv, 3, axis=-1)
        q = q.reshape(2, 16, 4, 8)
        k = k.reshape(2, 16, 4, 8)
        v = v.reshape(2, 16, 4, 8)
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(8.0)
        mask = jnp.tril(jnp.ones((16, 16), bool))
        s = jnp.where(mask, s, -1e9)
        p = jax.nn.softmax(s, axis=-1)
        o = jnp.einsum("bhqk,bkhd->bqhd", p, v).reshape(2, 16, 32)
        return jnp.sum((o @ wo) ** 2)
    return jax.value_and_grad(f, argnums=(0, 1, 2))(x, wqkv, wo)


@case(z((8, 16)), z((16, 32)), z((32, 4)))
def mlp_grad(x, w1, w2):
    def loss(ws):
        h = jax.nn.gelu(x @ ws[0])
        return jnp.mean(jax.nn.log_softmax(h @ ws[1]))
    return jax.value_and_grad(loss)((w1, w2))


@case(z((2, 12, 12, 1)))
def cnn(x):
    def f(x, w1, w2, wd):
        y = jax.nn.relu(lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))
        y = lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        y = jax.nn.relu(lax.conv_general_dilated(y, w2, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))
        y = jnp.mean(y, axis=(1, 2))
        return jnp.sum(jax.nn.log_softmax(y @ wd))
    w1 = jnp.ones((3, 3, 1, 4), F32) * 0.1
    w2 = jnp.ones((3, 3, 4, 8), F32) * 0.1
    wd = jnp.ones((8, 10), F32) * 0.1
    return jax.grad(f, argnums=(1, 2, 3))(x, w1, w2, wd)


@case(z((2, 8, 16)))
def transformer_layer(x):
    def layer(x, p):
        def ln(v, g):
            m = jnp.mean(v, -1, keepdims=True)
            s = jnp.var(v, -1, keepdims=True)
            return (v - m) * lax.rsqrt(s + 1e-5) * g
        h = ln(x, p["g1"])
        qkv = h @ p["wqkv"]
        q, k, v = jnp.split(qkv, 3, -1)
        a = jax.nn.softmax(jnp.einsum("bqd,bkd->bqk", q, k) / 4.0, -1)
        x = x + jnp.einsum("bqk,bkd->bqd", a, v) @ p["wo"]
        h = ln(x, p["g2"])
        return x + jax.nn.relu(h @ p["w1"]) @ p["w2"]
    p = {"g1": jnp.ones(16), "g2": jnp.ones(16), "wqkv": jnp.ones((16, 48)) * 0.01,
         "wo": jnp.ones((16, 16)) * 0.01, "w1": jnp.ones((16, 64)) * 0.01, "w2": jnp.ones((64, 16)) * 0.01}
    return jax.value_and_grad(lambda x, p: jnp.sum(layer(x, p)), argnums=(0, 1))(x, p)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    only = set(sys.argv[2:])
    failures = []
    for name, (f, args, kw) in CASES.items():
        if only and name not in only:
            continue
        try:
            lowered = jax.jit(f).lower(*args, **kw)
            with open(os.path.join(out, name + ".hlo"), "w") as fh:
                fh.write(lowered.as_text(dialect="hlo"))
        except Exception as e:  # a JAX version may not support a case; the Go test reports it
            failures.append("%s: lower: %s" % (name, str(e).splitlines()[0] if str(e) else type(e).__name__))
            continue
        try:
            with open(os.path.join(out, name + ".opt.hlo"), "w") as fh:
                fh.write(lowered.compile().as_text())
        except Exception as e:
            failures.append("%s: compile: %s" % (name, str(e).splitlines()[0] if str(e) else type(e).__name__))
    for f in failures:
        print(f, file=sys.stderr)


if __name__ == "__main__":
    main()
