"""Differential reference cases for engine/eval part 2 (dot, convolution,
gather/scatter, sort/top-k, fft, linalg, rng, custom calls).

Usage: python3 gen_part2.py OUTDIR [NAME_PREFIX...]

Writes each case's HLO text, raw input/output bytes and OUTDIR/manifest.json
with jaxcases.py; a manifest entry also says how to compare: bit-exact
(rtol null) or within rtol/atol.
"""
import jax
import jaxcases  # enables x64, pins jax to the CPU
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import lax

rng = np.random.default_rng(1234)
CASES = []


def case(name, fn, args, rtol=None, atol=0.0):
    """rtol None means bit-exact comparison."""
    CASES.append((name, fn, args, dict(rtol=rtol, atol=atol)))


def randf(shape, dtype=np.float32, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def randi(shape, lo, hi, dtype=np.int32):
    return rng.integers(lo, hi, size=shape).astype(dtype)


def randc(shape, dtype=np.complex64):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


# ---------------------------------------------------------------- dot
def dg(dims, pet=None):
    return lambda a, b: lax.dot_general(a, b, dims, preferred_element_type=pet)


case("dot_f32_mm", jnp.matmul, [randf((64, 48)), randf((48, 33))], 1e-5, 1e-5)
case("dot_f32_vec", jnp.dot, [randf((7,)), randf((7,))], 1e-5, 1e-5)
case("dot_f32_mv", jnp.dot, [randf((9, 7)), randf((7,))], 1e-5, 1e-5)
case("dot_f32_outer", dg(((( ), ()), ((), ()))), [randf((5,)), randf((6,))], 1e-6, 0)
case("dot_f32_batch", lambda a, b: jnp.einsum("bij,bjk->bik", a, b), [randf((3, 5, 6)), randf((3, 6, 4))], 1e-5, 1e-5)
case("dot_f32_batch_mid", dg((((2,), (1,)), ((1,), (0,)))), [randf((4, 3, 5)), randf((3, 5, 6))], 1e-5, 1e-5)
case("dot_f32_multi_contract", lambda a, b: jnp.einsum("abc,cbd->ad", a, b), [randf((4, 3, 5)), randf((5, 3, 6))], 1e-5, 1e-5)
case("dot_f32_two_batch", dg((((3,), (2,)), ((0, 2), (1, 0)))), [randf((2, 3, 4, 5)), randf((4, 2, 5, 3))], 1e-5, 1e-5)
case("dot_f32_big", jnp.matmul, [randf((130, 300)), randf((300, 70))], 1e-4, 1e-4)
case("dot_f64", jnp.matmul, [randf((17, 9), np.float64), randf((9, 11), np.float64)], 1e-12, 1e-12)
case("dot_s8_s32", dg((((1,), (0,)), ((), ())), jnp.int32), [randi((16, 40), -128, 128, np.int8), randi((40, 8), -128, 128, np.int8)])
case("dot_s32_wrap", jnp.matmul, [randi((6, 5), -2**31, 2**31 - 1, np.int32), randi((5, 4), -2**31, 2**31 - 1, np.int32)])
case("dot_u8", jnp.matmul, [randi((6, 5), 0, 256, np.uint8), randi((5, 4), 0, 256, np.uint8)])
case("dot_s64", jnp.matmul, [randi((6, 5), -1000, 1000, np.int64), randi((5, 4), -1000, 1000, np.int64)])
case("dot_bf16", jnp.matmul, [randf((32, 64), ml_dtypes.bfloat16), randf((64, 16), ml_dtypes.bfloat16)], 2 ** -7, 1e-2)
case("dot_bf16_f32", dg((((1,), (0,)), ((), ())), jnp.float32), [randf((32, 64), ml_dtypes.bfloat16), randf((64, 16), ml_dtypes.bfloat16)], 1e-5, 1e-5)
case("dot_f16", jnp.matmul, [randf((12, 20), np.float16), randf((20, 8), np.float16)], 2 ** -10, 1e-3)
case("dot_f8_f32", dg((((1,), (0,)), ((), ())), jnp.float32), [randf((8, 16), ml_dtypes.float8_e4m3fn), randf((16, 8), ml_dtypes.float8_e4m3fn)], 1e-5, 1e-5)
case("dot_c64", jnp.matmul, [randc((5, 6)), randc((6, 3))], 1e-5, 1e-5)
case("dot_c128", jnp.matmul, [randc((5, 6), np.complex128), randc((6, 3), np.complex128)], 1e-12, 1e-12)

# ---------------------------------------------------------------- gather / scatter
x45 = randf((4, 5))
case("gather_rows", lambda x, i: x[i], [x45, np.array([3, 0, 1, 3], np.int32)])
case("gather_cols", lambda x, i: x[:, i], [x45, np.array([[4, 0], [2, 2]], np.int32)])
case("gather_clip", lambda x, i: x.at[i].get(mode="clip"), [x45, np.array([-3, 9, 2], np.int32)])
case("gather_fill", lambda x, i: x.at[i].get(mode="fill", fill_value=-1.0), [x45, np.array([-3, 9, 2, 3], np.int32)])
case("gather_take_along", lambda x, i: jnp.take_along_axis(x, i, axis=1), [randf((3, 6)), randi((3, 4), 0, 6)])
case("gather_2d_points", lambda x, i, j: x[i, j], [randf((5, 6, 3)), randi((7,), 0, 5), randi((7,), 0, 6)])
case("gather_vmap", jax.vmap(lambda x, i: x[i]), [randf((3, 6, 2)), randi((3, 4), 0, 6)])
case("gather_u8_idx_s64", lambda x, i: x[i], [randi((10,), 0, 255, np.uint8), randi((3, 2), 0, 10, np.int64)])
upd = randf((4,))
case("scatter_add_dup", lambda x, i, u: x.at[i].add(u), [randf((6,)), np.array([1, 3, 1, 1], np.int32), upd], 1e-6, 1e-6)
case("scatter_set", lambda x, i, u: x.at[i].set(u), [randf((6,)), np.array([1, 3, 2, 5], np.int32), upd])
case("scatter_max", lambda x, i, u: x.at[i].max(u), [randf((6,)), np.array([1, 3, 1, 1], np.int32), upd])
case("scatter_min_int", lambda x, i, u: x.at[i].min(u), [randi((6,), -9, 9), np.array([1, 3, 1, 1], np.int32), randi((4,), -9, 9)])
case("scatter_mul", lambda x, i, u: x.at[i].mul(u), [randf((6,)), np.array([1, 3, 1, 1], np.int32), upd], 1e-6, 0)
case("scatter_drop", lambda x, i, u: x.at[i].add(u, mode="drop"), [randf((6,)), np.array([-1, 3, 7, 1], np.int32), upd], 1e-6, 1e-6)
case("scatter_clip", lambda x, i, u: x.at[i].set(u, mode="clip"), [randf((6,)), np.array([-4, 3, 70, 1], np.int32), upd])
case("scatter_rows", lambda x, i, u: x.at[i, :].add(u), [randf((5, 3)), np.array([4, 0, 4], np.int32), randf((3, 3))], 1e-6, 1e-6)
case("scatter_2d_points", lambda x, i, j, u: x.at[i, j].add(u), [randf((4, 5)), randi((6,), 0, 4), randi((6,), 0, 5), randf((6,))], 1e-6, 1e-6)
case("scatter_vmap", jax.vmap(lambda x, i, u: x.at[i].add(u)), [randf((3, 6)), randi((3, 4), 0, 6), randf((3, 4))], 1e-6, 1e-6)
case("scatter_bf16_add", lambda x, i, u: x.at[i].add(u), [randf((5,), ml_dtypes.bfloat16), np.array([1, 1, 1, 2, 1, 1], np.int32), randf((6,), ml_dtypes.bfloat16)])
case("scatter_apply", lambda x, i: x.at[i].apply(lambda v: v * 2 + 1), [randf((6,)), np.array([1, 3, 1], np.int32)], 1e-6, 0)

# ---------------------------------------------------------------- convolution
def conv(strides=(1, 1), padding="VALID", lhs_dil=None, rhs_dil=None, fgc=1, bgc=1, dn=("NCHW", "OIHW", "NCHW"), pet=None):
    return lambda x, k: lax.conv_general_dilated(x, k, strides, padding, lhs_dil, rhs_dil, dn, fgc, bgc, preferred_element_type=pet)


case("conv_basic", conv(), [randf((2, 3, 7, 6)), randf((4, 3, 3, 2))], 1e-5, 1e-5)
case("conv_stride_pad", conv((2, 1), ((1, 2), (0, 1))), [randf((2, 3, 7, 6)), randf((4, 3, 3, 2))], 1e-5, 1e-5)
case("conv_neg_pad", conv((1, 1), ((-1, 2), (1, -2))), [randf((1, 2, 7, 6)), randf((3, 2, 2, 2))], 1e-5, 1e-5)
case("conv_dilations", conv((1, 2), ((1, 1), (0, 2)), (2, 1), (1, 2)), [randf((2, 3, 5, 6)), randf((4, 3, 3, 2))], 1e-5, 1e-5)
case("conv_groups", conv(fgc=3), [randf((2, 6, 5, 5)), randf((9, 2, 2, 3))], 1e-5, 1e-5)
case("conv_batch_groups", conv(bgc=2), [randf((4, 3, 5, 5)), randf((6, 3, 2, 2))], 1e-5, 1e-5)
case("conv_nhwc", conv((1, 1), "SAME", dn=("NHWC", "HWIO", "NHWC")), [randf((2, 6, 5, 3)), randf((3, 3, 3, 4))], 1e-5, 1e-5)
case("conv_1d", lambda x, k: lax.conv_general_dilated(x, k, (2,), ((1, 1),), None, (2,)), [randf((2, 3, 11)), randf((5, 3, 3))], 1e-5, 1e-5)
case("conv_3d", lambda x, k: lax.conv_general_dilated(x, k, (1, 1, 2), "SAME"), [randf((1, 2, 4, 5, 6)), randf((3, 2, 2, 3, 2))], 1e-5, 1e-5)
case("conv_0d", lambda x, k: lax.conv_general_dilated(x, k, (), ()), [randf((3, 4)), randf((5, 4))], 1e-5, 1e-5)
case("conv_s8_s32", conv(pet=jnp.int32), [randi((1, 2, 5, 5), -128, 128, np.int8), randi((3, 2, 2, 2), -128, 128, np.int8)])
case("conv_bf16", conv(), [randf((1, 4, 6, 6), ml_dtypes.bfloat16), randf((2, 4, 3, 3), ml_dtypes.bfloat16)], 2 ** -7, 1e-2)
case("conv_f64", conv((2, 2), "SAME"), [randf((1, 2, 6, 6), np.float64), randf((2, 2, 3, 3), np.float64)], 1e-12, 1e-12)


def conv_loss(x, k):
    return jnp.sum(lax.conv_general_dilated(x, k, (2, 1), ((1, 1), (2, 0)), None, (1, 2), feature_group_count=2) ** 2)


case("conv_grad", jax.grad(conv_loss, argnums=(0, 1)), [randf((2, 4, 7, 6)), randf((4, 2, 3, 2))], 1e-4, 1e-4)

# ---------------------------------------------------------------- sort / top-k
xs = randf((4, 9))
xs[0, 2] = np.nan
xs[1, 3] = -0.0
xs[1, 4] = 0.0
case("sort_f32", lambda x: jnp.sort(x, axis=1), [xs])
case("sort_axis0", lambda x: jnp.sort(x, axis=0), [randf((6, 3))])
case("sort_int_desc", lambda x: -jnp.sort(-x), [randi((20,), -5, 5)])
case("sort_argsort", lambda x: jnp.argsort(x, axis=1), [randi((3, 12), 0, 4)])
case("sort_multi", lambda a, b, c: lax.sort((a, b, c), num_keys=2), [randi((15,), 0, 3), randi((15,), 0, 3), randf((15,))])
case("sort_lax_simple", lambda a: lax.sort(a, dimension=0, is_stable=False), [randi((5, 3), 0, 100, np.uint32)])
case("topk", lambda x: lax.top_k(x, 3), [randi((4, 7), 0, 4).astype(np.float32)])
case("topk_nan", lambda x: lax.top_k(x, 4), [xs])
case("topk_int", lambda x: lax.top_k(x, 5), [randi((2, 3, 6), -3, 3)])

# ---------------------------------------------------------------- fft
case("fft_c64", jnp.fft.fft, [randc((3, 8))], 1e-5, 1e-5)
case("fft_c64_odd", jnp.fft.fft, [randc((2, 7))], 1e-5, 1e-5)
case("fft_ifft2", jnp.fft.ifft2, [randc((2, 6, 5), np.complex128)], 1e-12, 1e-12)
case("fft_rfft", jnp.fft.rfft, [randf((3, 10))], 1e-5, 1e-5)
case("fft_rfft_pad", lambda x: jnp.fft.rfft(x, n=12), [randf((3, 9))], 1e-5, 1e-5)
case("fft_irfft", jnp.fft.irfft, [randc((3, 6))], 1e-5, 1e-5)
case("fft_irfft_odd", lambda x: jnp.fft.irfft(x, n=9), [randc((2, 5))], 1e-5, 1e-5)
case("fft_rfftn3", jnp.fft.rfftn, [randf((2, 4, 3, 6), np.float64)], 1e-12, 1e-12)
case("fft_irfft2", jnp.fft.irfft2, [randc((4, 5))], 1e-5, 1e-5)
case("fft_fftn3", jnp.fft.fftn, [randc((3, 4, 5))], 1e-5, 1e-5)

# ---------------------------------------------------------------- linalg
def spd(n, batch=(), dtype=np.float32):
    a = rng.standard_normal(batch + (n, n))
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)


case("chol_f32", jnp.linalg.cholesky, [spd(5)], 1e-5, 1e-5)
case("chol_f64_batch", jnp.linalg.cholesky, [spd(4, (3,), np.float64)], 1e-12, 1e-12)
case("chol_not_pd", jnp.linalg.cholesky, [-spd(3)], 1e-5, 1e-5)
case("chol_c64", jnp.linalg.cholesky, [(spd(4) + 1j * (lambda m: m - m.T)(randf((4, 4)))).astype(np.complex64)], 1e-5, 1e-5)
tri = randf((5, 5)) + 5 * np.eye(5, dtype=np.float32)
for left in (True, False):
    for lower in (True, False):
        for ta in (0, 1, 2):
            for unit in (False, True):
                case("trsm_%d%d%d%d" % (left, lower, ta, unit),
                     lambda a, b, left=left, lower=lower, ta=ta, unit=unit: lax.linalg.triangular_solve(
                         a, b, left_side=left, lower=lower, transpose_a=ta > 0, conjugate_a=ta == 2, unit_diagonal=unit),
                     [tri, randf((5, 3) if left else (3, 5))], 1e-4, 1e-5)
case("trsm_batch_c64", lambda a, b: lax.linalg.triangular_solve(a, b, left_side=True, lower=True, transpose_a=True, conjugate_a=True),
     [(randc((2, 4, 4)) + 4 * np.eye(4)).astype(np.complex64), randc((2, 4, 3))], 1e-4, 1e-5)
case("solve_triangular_f64", lambda a, b: jax.scipy.linalg.solve_triangular(a, b, lower=False), [tri.astype(np.float64), randf((5,), np.float64)], 1e-10, 1e-10)

# Sizes past the 64-wide diagonal blocks of the real blocked paths
# (linalg_real.go): a ragged last block, several right-hand-side chunks.
case("chol_f32_blocked", jnp.linalg.cholesky, [spd(150)], 1e-5, 1e-5)
case("chol_f64_blocked_upper", lambda a: jnp.linalg.cholesky(a, upper=True),
     [spd(131, (2,), np.float64)], 1e-12, 1e-12)
trib = np.tril(randf((150, 150))) + 12 * np.eye(150, dtype=np.float32)
for left in (True, False):
    for lower in (True, False):
        for ta in (0, 1):
            case("trsm_blocked_%d%d%d" % (left, lower, ta),
                 lambda a, b, left=left, lower=lower, ta=ta: lax.linalg.triangular_solve(
                     a, b, left_side=left, lower=lower, transpose_a=ta > 0),
                 [trib if lower else trib.T.copy(), randf((150, 97) if left else (97, 150))], 1e-4, 1e-5)
case("trsm_blocked_f64_unit_batch", lambda a, b: lax.linalg.triangular_solve(a, b, left_side=True, lower=True, unit_diagonal=True),
     [np.tril(0.1 * randf((3, 100, 100), np.float64)), randf((3, 100, 40), np.float64)],
     1e-10, 1e-10)


if __name__ == "__main__":
    jaxcases.main(CASES)
