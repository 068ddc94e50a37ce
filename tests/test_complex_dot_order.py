"""complex64 dots in XLA:CPU's order, bit for bit.

jaxlib 0.10.2 runs c64 dots as Eigen tensor contractions (built for AVX
without FMA): each element's four real sums (Re·Re, Im·Re, Re·Im, Im·Im) are
multiplied and added in K blocks of the contraction's blocking, with the
accumulator arrangement of Eigen's row panels for the trailing columns of a
column block and its trailing single columns for the last m%4 rows, then
combined and added to the result block by block
(engine/eval/dot_c64_eigen.go). The blocking follows Eigen's heuristics for
this machine's caches and XLA's thread count (2 here): the cases below were
measured on the 2-core EPYC. Contractions Eigen shards over K (small M and N,
long K) compute each K slice as a product of its own and add the slices.
Single-row products are Eigen's column-major gemv (whole complex products
in K blocks of 16). Before dot_c64_eigen.go, 99% of the
elements of a 1024^3 product differed (complex dots ran as an f64 GEMM).
"""

import os
import zlib

import numpy as np
import pytest

from goldtrace.golden import golden

jax = pytest.importorskip("jax")
jnp = jax.numpy

if (os.cpu_count() or 1) != 2:
    pytest.skip("the blocking depends on XLA's thread count; these cases were measured with 2 CPUs",
                allow_module_level=True)


def c64(rng, *shape):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


# (name, function, operand shapes)
CASES = [
    ("square_512", lambda a, b: a @ b, ((512, 512), (512, 512))),             # two K blocks of 320
    ("tails", lambda a, b: a @ b, ((583, 43), (43, 29))),                      # 8+8+8+4 columns and one, 583 % 4 rows
    ("seq_blocking", lambda a, b: a @ b, ((12, 500), (500, 12))),              # one thread: K blocks 256 + 244
    ("col_blocks", lambda a, b: a @ b, ((64, 100), (100, 2052))),              # column blocks of 316
    ("odd", lambda a, b: a @ b, ((333, 701), (701, 155))),
    ("at_b", lambda a, b: a.T @ b, ((300, 200), (300, 170))),                  # lhs contracting dim first
    ("a_bt", lambda a, b: a @ b.T, ((130, 260), (98, 260))),
    ("batched", lambda a, b: jnp.einsum("bij,bjk->bik", a, b), ((3, 70, 90), (3, 90, 50))),
    ("kshard_narrow", lambda a, b: a @ b, ((64, 1000), (1000, 4))),           # two K slices of 504 + 496, added
    ("kshard_short", lambda a, b: a @ b, ((6, 1403), (1403, 235))),
    ("seq_long", lambda a, b: a @ b, ((25, 1098), (1098, 15))),                # not sharded: one thread, kc 280
    ("one_column", lambda a, b: a @ b, ((1000, 300), (300, 1))),               # sharded, single-column lanes
    ("gemv", lambda a, b: a @ b, ((1, 1000), (1000, 300))),                    # Eigen's gemv: K blocks of 16
    ("gemv_wide", lambda a, b: a @ b, ((1, 300), (300, 5000))),                # K blocks of 4
    ("gemv_short", lambda a, b: a @ b, ((1, 100), (100, 13))),                 # one block
]


@pytest.mark.parametrize("name,fn,shapes", CASES, ids=[c[0] for c in CASES])
def test_complex_dot_matches_xla(name, fn, shapes):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    args = [c64(rng, *s) for s in shapes]
    want = np.asarray(jax.jit(fn)(*args))
    got = np.asarray(golden(jax.jit(fn).lower(*args), *args)[0])
    assert got.dtype == want.dtype and got.shape == want.shape
    diff = got.view(np.uint32) != want.view(np.uint32)
    assert not diff.any(), f"{diff.mean():.2%} of the float parts differ"
