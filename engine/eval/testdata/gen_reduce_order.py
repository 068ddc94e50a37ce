"""Differential cases for XLA:CPU's summation order (engine/eval/reduce_order.go).

Usage: python3 gen_reduce_order.py OUTDIR [NAME_PREFIX...]

Every case is compared bit for bit. The inputs mix magnitudes over several
decades so that a different association of the adds almost surely changes
the rounded sum. Cases cover the shape classes reduce_order.go claims: one
non-trivial reduced dimension, f32/f64 operands under 4096 elements, complex
operands of any size, bf16/f16 sums (jax converts them to f32 first), a
non-zero init value, and sums feeding other ops. (A full softmax is not
here: XLA:CPU rewrites its divide into a multiply by the reciprocal, which
is not about the summation order.)"""
import jax
import jaxcases  # enables x64, pins jax to the CPU
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import lax

rng = np.random.default_rng(20240611)
CASES = []


def case(name, fn, args):
    CASES.append((name, fn, args, dict(rtol=None, atol=0.0)))


def mixed(shape, dtype=np.float32):
    """Normal values scaled by 10^U(-3, 3): partial sums round differently
    under different groupings."""
    v = rng.standard_normal(shape) * 10.0 ** rng.uniform(-3, 3, shape)
    if np.issubdtype(np.dtype(dtype), np.complexfloating):
        v = v + 1j * rng.standard_normal(shape) * 10.0 ** rng.uniform(-3, 3, shape)
    return v.astype(dtype)


def sums_of_prefixes(lengths):
    """One module with a 1-D sum of every prefix length (slice then reduce)."""
    return lambda x: [jnp.sum(x[:n]) for n in lengths]


# 1-D full sums: every length up to 300 (in three modules), then long ones.
for lo, hi in ((1, 101), (101, 201), (201, 301)):
    case("f32_1d_len%d_%d" % (lo, hi - 1), sums_of_prefixes(range(lo, hi)), [mixed(hi - 1)])
case("f32_1d_long", sums_of_prefixes([511, 512, 513, 1000, 1023, 1024, 1025, 2000, 3000, 4095]), [mixed(4095)])
case("f64_1d", sums_of_prefixes([1, 31, 32, 33, 64, 300, 1000, 1025, 4095]), [mixed(4095, np.float64)])
case("c64_1d", sums_of_prefixes([7, 33, 300, 1000, 4096, 65537]), [mixed(65537, np.complex64)])
case("c128_1d", sums_of_prefixes([40, 1000, 5000]), [mixed(5000, np.complex128)])

# Reduction over the minor dimension of [R, N] (softmax / layernorm rows).
for shape in [(4, 300), (10, 200), (7, 33), (3, 1000), (64, 63), (2, 2047)]:
    case("f32_minor_%dx%d" % shape, lambda x: jnp.sum(x, axis=1), [mixed(shape)])
# Over the major dimension of [N, C].
for shape in [(300, 4), (64, 63), (33, 5), (1000, 3), (2047, 2)]:
    case("f32_major_%dx%d" % shape, lambda x: jnp.sum(x, axis=0), [mixed(shape)])
# Over a middle dimension, and with extra reduced dimensions of size 1.
case("f32_middle_3x100x7", lambda x: jnp.sum(x, axis=1), [mixed((3, 100, 7))])
case("f32_middle_8x40x8", lambda x: jnp.sum(x, axis=1), [mixed((8, 40, 8))])
case("f32_unit_dims_3x1x300", lambda x: jnp.sum(x, axis=(1, 2)), [mixed((3, 1, 300))])
case("f64_minor_5x700", lambda x: jnp.sum(x, axis=1), [mixed((5, 700), np.float64)])
case("c64_minor_4x3000", lambda x: jnp.sum(x, axis=1), [mixed((4, 3000), np.complex64)])
case("c128_major_3000x2", lambda x: jnp.sum(x, axis=0), [mixed((3000, 2), np.complex128)])

# A non-zero init is added once per window.
case("f32_init_1d_300", lambda x: lax.reduce(x, np.float32(1.5), lax.add, (0,)), [mixed(300)])
case("f32_init_minor_4x1000", lambda x: lax.reduce(x, np.float32(-0.75), lax.add, (1,)), [mixed((4, 1000))])

# Narrow floats: jax sums them in f32 (convert, reduce, convert back).
case("bf16_1d_1000", lambda x: jnp.sum(x), [mixed(1000, ml_dtypes.bfloat16)])
case("f16_minor_4x300", lambda x: jnp.sum(x, axis=1), [mixed((4, 300), np.float16)])
case("bf16_to_f32_1d_1000", lambda x: jnp.sum(x, dtype=jnp.float32), [mixed(1000, ml_dtypes.bfloat16)])

# Sums feeding other ops: softmax denominators, mean of rows.
case("f32_softmax_denominator_8x100", lambda x: jnp.sum(jnp.exp(x - jnp.max(x, axis=-1, keepdims=True)), axis=-1),
     [rng.standard_normal((8, 100)).astype(np.float32) * 4])
case("f32_sum_then_scale_6x500", lambda x: jnp.sum(x, axis=1) * 3.0, [mixed((6, 500))])

if __name__ == "__main__":
    jaxcases.main(CASES)
