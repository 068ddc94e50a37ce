"""Differential cases for XLA:CPU's f32 matrix-vector dot order
(engine/eval/dot_order.go).

Usage: python3 gen_dot_order.py OUTDIR [NAME_PREFIX...]

Every case is compared bit for bit. Entries mix magnitudes over several
decades, so a different association of the products almost surely changes
the rounded result. Shapes straddle the emitter's tile of 8 rows and 8 lanes
in both M (or N) and K. (Vector-vector dots are not here: XLA rewrites
them into a multiply and a reduce.)"""
import jaxcases  # enables x64, pins jax to the CPU
import numpy as np
from jax import lax

rng = np.random.default_rng(20261130)
CASES = []


def case(name, fn, args):
    CASES.append((name, fn, args, dict(rtol=None, atol=0.0)))


def mixed(shape):
    v = rng.standard_normal(shape) * 10.0 ** rng.uniform(-2, 2, shape)
    return v.astype(np.float32)


def dg(lc, rc, lb=(), rb=()):
    return lambda a, b: lax.dot_general(a, b, ((lc, rc), (lb, rb)))


SIZES = [(2, 5), (3, 8), (7, 19), (8, 16), (9, 9), (11, 19), (16, 100), (17, 1000), (100, 3), (1000, 1000), (64, 3000)]
for m, k in SIZES:
    case("matvec_%dx%d" % (m, k), dg((1,), (0,)), [mixed((m, k)), mixed(k)])
    # The matrix transposed: K contiguous for the vector-matrix form.
    case("vec_matT_%dx%d" % (m, k), dg((0,), (1,)), [mixed(k), mixed((m, k))])
    if m % 8 == 0:  # K strided: dot_order.go claims whole tiles of 8 only
        case("vecmat_%dx%d" % (k, m), dg((0,), (0,)), [mixed(k), mixed((k, m))])
        case("matT_vec_%dx%d" % (k, m), dg((0,), (0,)), [mixed((k, m)), mixed(k)])
# Explicit unit dims (HLO [M,K]x[K,1] and [1,K]x[K,N]).
case("matvec_unit_9x19", dg((1,), (0,)), [mixed((9, 19)), mixed((19, 1))])
case("vecmat_unit_19x16", dg((1,), (0,)), [mixed((1, 19)), mixed((19, 16))])
# Batched.
case("batch_matvec_3x11x19", dg((2,), (1,), (0,), (0,)), [mixed((3, 11, 19)), mixed((3, 19))])
case("batch_vecmat_2x21x24", dg((1,), (1,), (0,), (0,)), [mixed((2, 21)), mixed((2, 21, 24))])

if __name__ == "__main__":
    jaxcases.main(CASES)
