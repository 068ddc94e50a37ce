"""`make demo`, part two: an NKI-style kernel traced into goldtrace's IR, run by the
simulator on numpy arrays, called inside jax.jit on CPU, and computed again
inside the goldens of the exported HLO module."""

import os

import numpy as np

os.environ.setdefault("NEURON_PLATFORM_TARGET_OVERRIDE", "trn1")

import goldtrace  # noqa: E402
from goldtrace import nki  # noqa: E402
import goldtrace.nki.isa as nisa  # noqa: E402
import goldtrace.nki.language as nl  # noqa: E402


@nki.jit
def rmsnorm_matmul(x, w, g):
    """y = rmsnorm(x) * g @ w for x [rows, 128], w [128, 512]: the normalised rows
    are transposed on the tensor engine and multiplied with PSUM accumulation."""
    rows, d = x.shape
    out = nl.ndarray((rows, w.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    wt = nl.load(w)
    gt = nl.load(g.reshape((1, d))).broadcast_to((128, d))
    for t in nl.affine_range(rows // 128):
        xt = nl.load(x[t * 128:(t + 1) * 128, :])
        ms = nl.mean(nl.square(xt), axis=1, keepdims=True)
        xn = nl.multiply(nl.multiply(xt, nl.rsqrt(ms + 1e-6)), gt)
        xnT = nl.copy(nisa.nc_transpose(xn))
        acc = nl.zeros((128, w.shape[1]), nl.float32, buffer=nl.psum)
        acc += nisa.nc_matmul(xnT, wt)
        nl.store(out[t * 128:(t + 1) * 128, :], value=nl.copy(acc, dtype=out.dtype))
    return out


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 128)).astype(np.float32)
    w = (rng.standard_normal((128, 512)) / 11).astype(np.float32)
    g = rng.standard_normal(128).astype(np.float32)
    want = (x / np.sqrt((x * x).mean(1, keepdims=True) + 1e-6) * g) @ w

    body = rmsnorm_matmul.trace(x, w, g).split("body:", 1)[1].strip("\n").splitlines()
    print("kernel IR body (the loop stays a loop):")
    print("\n".join("  " + line.split("  #")[0] for line in body[:14]))
    y = rmsnorm_matmul(x, w, g)
    print(f"simulator on numpy arrays: max |y - numpy| = {np.abs(y - want).max():.2e}")

    import jax

    f = lambda a, b, c: jax.nn.relu(rmsnorm_matmul(a, b, c))  # noqa: E731
    yj = np.asarray(jax.jit(f)(x, w, g))
    print(f"inside jax.jit on CPU (typed FFI into libgoldtrace): max |diff| = {np.abs(yj - np.maximum(want, 0)).max():.2e}")
    with nki.lowering("neuron"):
        hlo = jax.jit(f).lower(x, w, g).as_text(dialect="hlo")
    (yg,) = goldtrace.golden(hlo, x, w, g)
    print(f"goldens of the exported HLO (custom_call_target=AwsNeuronCustomNativeKernel): identical to jax.jit: "
          f"{np.array_equal(np.asarray(yg), yj)}")


if __name__ == "__main__":
    main()
