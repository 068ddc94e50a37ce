"""Sweeps YNNPACK's f32 elementwise kernels as XLA:CPU runs them inside a
__ynn_fusion, for TestYNNMathAgainstJax (engine/eval/ynn_math.go).

Usage: gen_ynn_math.py OUTDIR [STRIDE]

Each op runs on the row sums of an [n, 2] array whose second column is 0:
the sum is a reduction XLA:CPU hands to YNNPACK, and the op after it joins
the fusion, so YNNPACK computes it (the compiled HLO is checked). The sums
are the values themselves, except that -0 becomes +0 and subnormals 0
(flush-to-zero), so the inputs written are those. f32 inputs are every
STRIDE-th bit pattern (default 1024) with pseudo-random low bits, special
values and dense runs around the kernels' branch points. Writes
OUTDIR/<op>.in and OUTDIR/<op>.out (raw little-endian f32) and
manifest.json.
"""
import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")
import jax  # noqa: E402

jax.config.update("jax_platforms", "cpu")
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

OUT = sys.argv[1]
STRIDE = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
RNG = np.random.default_rng(11)

OPS = {
    "exp": lax.exp,
    "expm1": lax.expm1,
    "tanh": lax.tanh,
    "log": lax.log,
    "log1p": lax.log1p,
    "erf": lax.erf,
    "rsqrt": lax.rsqrt,
    "logistic": lax.logistic,
}


def inputs():
    n = (1 << 32) // STRIDE
    base = np.arange(n, dtype=np.uint64) * STRIDE
    low = RNG.integers(0, STRIDE, n, dtype=np.uint64) if STRIDE > 1 else 0
    bits = (base + low).astype(np.uint32)
    special = [0, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F7FFFFF, 0xFF7FFFFF, 0x00800000,
               0x80800000, 0x3F800000, 0xBF800000]
    points = [1.0, -1.0, 0.5, 2.0, 1e-8, -1e-8, 80.0, 40.0, -40.0, 88.02969, -88.02969, 88.72284,
              -87.5, -87.3, 0.8, -0.8, 1.6, -1.6, 3.8, -3.8, 1.4142135, 0.70710677, -0.29289323,
              0.41421357, 9.0, -9.0]
    runs = [np.float32(p).view(np.uint32) + np.arange(-512, 512, dtype=np.int64) for p in points]
    x = np.concatenate([np.array(special, dtype=np.uint32)] + [r.astype(np.uint32) for r in runs] + [bits])
    v = x.view(np.float32).copy()
    v[np.abs(v) < np.float32(2.0 ** -126)] = 0  # -0 and subnormals: what the sum gives
    return v


def main():
    x = inputs()
    two = np.stack([x, np.zeros_like(x)], -1)
    manifest = []
    for op, f in OPS.items():
        g = jax.jit(lambda t, f=f: f(jnp.sum(t, -1)))
        text = g.lower(two).compile().as_text()
        entry = text[text.index("\nENTRY"):]
        calls = [line for line in entry.splitlines() if " fusion(" in line]
        if len(calls) != 1 or "__ynn_fusion" not in calls[0]:
            sys.exit(f"{op}: not one __ynn_fusion in the compiled module:\n{entry}")
        y = np.asarray(g(two))
        x.tofile(os.path.join(OUT, op + ".in"))
        y.tofile(os.path.join(OUT, op + ".out"))
        manifest.append({"op": op, "n": int(x.size)})
    with open(os.path.join(OUT, "manifest.json"), "w") as fh:
        json.dump(manifest, fh)


main()
