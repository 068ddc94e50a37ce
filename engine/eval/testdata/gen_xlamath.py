"""Sweeps XLA:CPU's float transcendentals for the bit-exact tests.

Usage: gen_xlamath.py OUTDIR [STRIDE]

For every op it writes OUTDIR/<op>.<dtype>.in (one or two operands) and
OUTDIR/<op>.<dtype>.out: raw little-endian bits of the inputs and of
jax.jit(op) on CPU. f32 inputs are every STRIDE-th bit pattern (default
256, 2^24 values) with pseudo-random low bits, plus special values
(zeros, subnormals, infinities, NaN, the boundaries of each range);
bf16 and f16 inputs are every bit pattern. Binary ops pair random bit
patterns with structured pairs. manifest.json lists the files.
"""
import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")
import jax  # noqa: E402

jax.config.update("jax_platforms", "cpu")
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

OUT = sys.argv[1]
STRIDE = int(sys.argv[2]) if len(sys.argv) > 2 else 256
ONLY = sys.argv[3].split(",") if len(sys.argv) > 3 else None
RNG = np.random.default_rng(7)

UNARY = {
    "tanh": lax.tanh,
    "exponential": lax.exp,
    "log": lax.log,
    "log-plus-one": lax.log1p,
    "logistic": lax.logistic,
    "exponential-minus-one": lax.expm1,
    "erf": lax.erf,
    "rsqrt": lax.rsqrt,
    "sqrt": lax.sqrt,
    "sine": lax.sin,
    "cosine": lax.cos,
    "tan": lax.tan,
    "cbrt": lax.cbrt,
}
BINARY = {"atan2": lax.atan2, "power": lax.pow}


def f32_sweep():
    n = (1 << 32) // STRIDE
    base = np.arange(n, dtype=np.uint64) * STRIDE
    low = RNG.integers(0, STRIDE, n, dtype=np.uint64) if STRIDE > 1 else 0
    bits = (base + low).astype(np.uint32)
    special = [0, 0x80000000, 1, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000,
               0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7F7FFFFF, 0xFF7FFFFF,
               0x3F800000, 0xBF800000]
    # Dense runs around the points where the approximations switch branches.
    points = [1.0, -1.0, 0.5, 2.0, 4e-4, -4e-4, 9.0, -9.0, 20.0, -20.0, 87.8, -87.8, 88.8,
              88.72, -103.97, 0.7071067811865476, 1e-4, -1e-4, 0.0625, -0.0625, 1e-8, 3.832, -3.832,
              0.3, -0.3, 0.6, -0.6, 0.65, -0.65, 0.9, -0.9, 1e-3, -1e-3]
    runs = [np.float32(p).view(np.uint32) + np.arange(-2048, 2048, dtype=np.int64) for p in points]
    return np.concatenate([np.array(special, dtype=np.uint32)] +
                          [r.astype(np.uint32) for r in runs] + [bits])


def write(name, arrays):
    for suffix, a in arrays:
        a.tofile(os.path.join(OUT, f"{name}.{suffix}"))


def main():
    manifest = []
    xf = f32_sweep()
    x32 = xf.view(np.float32)
    all16 = np.arange(1 << 16, dtype=np.uint16)
    for op, f in UNARY.items():
        if ONLY and op not in ONLY:
            continue
        g = jax.jit(f)
        y = np.asarray(g(x32))
        write(op + ".float32", [("in", xf), ("out", y)])
        manifest.append({"op": op, "dtype": "float32", "arity": 1, "n": int(xf.size)})
        for dt in (ml_dtypes.bfloat16, np.float16):
            x = all16.view(dt)
            y = np.asarray(g(x))
            write(f"{op}.{np.dtype(dt).name}", [("in", all16), ("out", y)])
            manifest.append({"op": op, "dtype": np.dtype(dt).name, "arity": 1, "n": int(all16.size)})
    n = xf.size
    for op, f in BINARY.items():
        if ONLY and op not in ONLY:
            continue
        a = RNG.permutation(xf)
        b = RNG.permutation(xf)
        # Structured pairs: moderate bases and exponents, integer exponents.
        m = n // 4
        a[:m] = np.abs(RNG.standard_normal(m).astype(np.float32) * 4).view(np.uint32)
        b[:m] = (RNG.standard_normal(m).astype(np.float32) * 8).view(np.uint32)
        b[m:2 * m] = np.round(RNG.standard_normal(m) * 6).astype(np.float32).view(np.uint32)
        y = np.asarray(jax.jit(f)(a.view(np.float32), b.view(np.float32)))
        write(op + ".float32", [("in", np.stack([a, b])), ("out", y)])
        manifest.append({"op": op, "dtype": "float32", "arity": 2, "n": int(n)})
    with open(os.path.join(OUT, "manifest.json"), "w") as fh:
        json.dump(manifest, fh)


main()
