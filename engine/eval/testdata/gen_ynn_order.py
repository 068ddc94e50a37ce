"""Differential cases for YNNPACK's f32 summation order (engine/eval/reduce_ynn.go).

Usage: python3 gen_ynn_order.py OUTDIR [NAME_PREFIX...]

XLA:CPU (jaxlib 0.10.2) hands f32 add-reductions of 4096 or more input
elements to YNNPACK. Every case is compared bit for bit; the inputs mix
magnitudes over several decades so that another association of the adds
almost surely changes some rounded sums. Run on an AVX-512 host and under
the AVX2-only CPUID shim (bench/avx2only), the references are the same:
YNNPACK's AVX kernel keeps the AVX-512 kernel's 16 logical lanes.

Left out (the evaluator keeps its own order there, reduce_ynn.go): sums of
exp inside the fusion (YNNPACK's exp is not XLA's), bf16 rows longer
than 32768 and bf16 columns, reduced dimensions that are not one block, f64 columns
and f64 rows past 65536, and full sums
of more than 131072 elements (their chunks are grouped by XLA's thread
pool, fitted on 2 cores up to there)."""
import jax
import jaxcases  # enables x64, pins jax to the CPU
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import lax

rng = np.random.default_rng(20261202)
CASES = []


def case(name, fn, args):
    CASES.append((name, fn, args, dict(rtol=None, atol=0.0)))


def mixed(shape, dtype=np.float32):
    v = rng.standard_normal(shape) * 10.0 ** rng.uniform(-3, 3, shape)
    return v.astype(dtype)


def row_sums(widths):
    return lambda x: [jnp.sum(x[:, :n], axis=1) for n in widths]


# Row sums of every width 1..300 over 4096 rows (each reduce has 4096+
# elements), in modules of 50 widths, then longer rows.
for lo in range(1, 301, 50):
    case("rows_w%d_%d" % (lo, lo + 49), row_sums(range(lo, lo + 50)), [mixed((4096, lo + 49))])
case("rows_long", row_sums([511, 512, 513, 1000, 1023, 1024, 1025, 2047, 2048, 3000, 4095, 4096]), [mixed((64, 4096))])
case("rows_64x100", lambda x: jnp.sum(x, axis=1), [mixed((64, 100))])
case("rows_4x8192", lambda x: jnp.sum(x, axis=1), [mixed((4, 8192))])
case("rows_2x32768", lambda x: jnp.sum(x, axis=1), [mixed((2, 32768))])
case("rows_init", lambda x: lax.reduce(x, np.float32(1.5), lax.add, (1,)), [mixed((64, 300))])

# Column sums: k rows of n columns, several chunkings (32768 // n rows a call).
for k, n in [(5, 1000), (8, 512), (16, 256), (17, 300), (33, 128), (64, 64), (100, 41), (255, 17),
             (256, 16), (257, 16), (1000, 5), (4100, 1), (3, 2000), (4, 1024), (22, 1500), (64, 1000),
             (1000, 100), (300, 300)]:
    case("cols_%dx%d" % (k, n), lambda x: jnp.sum(x, axis=0), [mixed((k, n))])
case("cols_init", lambda x: lax.reduce(x, np.float32(-0.75), lax.add, (0,)), [mixed((100, 64))])
# A middle block: outer batches of columns.
case("middle_8x64x16", lambda x: jnp.sum(x, axis=1), [mixed((8, 64, 16))])
# (Not f32[2,3000,100] or f32[4,1000,64] over axis 1: batches whose columns
# would be chunked are split by jax.jit in ways no one chunk size fits;
# reduce_ynn.go leaves them to the evaluator's own order.)
case("middle_3x100x300", lambda x: jnp.sum(x, axis=1), [mixed((3, 100, 300))])
case("middle_4x2x300x8", lambda x: jnp.sum(x, axis=(1, 2)), [mixed((4, 2, 300, 8))])

# Full sums: 1-D and of several dimensions (flattened), chunked past 32768.
for n in [4096, 4097, 5000, 8191, 10000, 32768, 40000, 65536, 70000, 100000, 131072]:
    case("full_%d" % n, lambda x: jnp.sum(x), [mixed(n)])
for shape in [(64, 64), (100, 100), (8, 1024), (1024, 8), (256, 256), (16, 16, 16)]:
    case("full_%s" % "x".join(map(str, shape)), lambda x: jnp.sum(x), [mixed(shape)])

# Sums of elementwise work XLA fuses into the YNNPACK reduce.
case("sumsq_rows_256x100", lambda x: jnp.sum(x * x, axis=-1), [mixed((256, 100))])
case("centered_rows_128x255", lambda x: jnp.sum(x - jnp.max(x, axis=-1, keepdims=True), axis=-1),
     [mixed((128, 255))])
# Layernorm's two sums, without the divisions (the golden path's rewrites,
# not the evaluator, turn those into XLA's multiplications).
case("layernorm_sums_64x1000", lambda x, m: (jnp.sum(x, -1), jnp.sum((x - m[:, None]) ** 2, -1)),
     [mixed((64, 1000)), mixed(64)])
case("f16_rows_64x300", lambda x: jnp.sum(x, axis=1), [mixed((64, 300), np.float16)])

# f64 rows: sum_k1_fp64's 8-lane order, chunks of 16384 past that.
case("f64_rows_w1_200", row_sums(range(1, 201, 3)), [mixed((4096, 200), np.float64)])
case("f64_rows_long", row_sums([255, 256, 257, 1000, 1024, 1025, 4096, 5000]), [mixed((16, 5000), np.float64)])
for n in [4096, 16384, 20000, 40000, 65536]:
    case("f64_full_%d" % n, lambda x: jnp.sum(x), [mixed(n, np.float64)])

# bf16 widened inside the fusion: sum_k1_bf16_fp32's own lane order.
def bf16_row_sums(widths):
    return lambda x: [jnp.sum(x[:, :n].astype(jnp.float32), axis=1) for n in widths]


def bf16_rows(widths):
    return (lambda *xs: [jnp.sum(x.astype(jnp.float32), axis=1) for x in xs],
            [mixed((-(-4096 // n), n), ml_dtypes.bfloat16) for n in widths])


for lo in (1, 66):
    case("bf16_rows_w%d_%d" % (lo, lo + 64), *bf16_rows(range(lo, lo + 65)))
case("bf16_rows_long", *bf16_rows([255, 256, 257, 511, 512, 513, 1000, 2047, 2048, 2049, 4096, 5000, 16384, 32768]))
# A slice of bf16 rows is widened by XLA's own loop fusion before the
# YNNPACK one: the f32 order.
case("bf16_sliced_rows_w1_130", bf16_row_sums(range(1, 131)), [mixed((4096, 130), ml_dtypes.bfloat16)])
case("bf16_sum_64x1000", lambda x: jnp.sum(x, axis=-1), [mixed((64, 1000), ml_dtypes.bfloat16)])
case("bf16_mean_rows_256x1024", lambda x: jnp.sum(x.astype(jnp.float32), -1) * 3.0, [mixed((256, 1024), ml_dtypes.bfloat16)])
# A widening with two uses runs in XLA's own loop fusion: the f32 order.
case("bf16_widened_twice_256x1000", lambda x: (jnp.sum(x.astype(jnp.float32), -1), jnp.max(x.astype(jnp.float32), -1)),
     [mixed((256, 1000), ml_dtypes.bfloat16)])
# (No bf16 column sums: sum_kn_bf16_fp32 is not fitted, reduce_ynn.go.)

if __name__ == "__main__":
    jaxcases.main(CASES)
