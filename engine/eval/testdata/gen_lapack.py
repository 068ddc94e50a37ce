"""Differential reference cases for the LAPACK typed-FFI custom calls
(lapack_?getrf_ffi, ?geqrf, ?orgqr, ?syevd/?heevd, ?gesdd/?gesvd) that jax
lowers jnp.linalg / jax.scipy.linalg to on CPU.

Usage: python3 gen_lapack.py OUTDIR [NAME_PREFIX...]

Writes each case's HLO text, raw input/output bytes and OUTDIR/manifest.json
with jaxcases.py, and rtol/atol as gen_part2.py does. Each entry also carries
"signs": a list of {"out": i, "axis": "col"|"row"} naming eigen/singular
vector outputs whose columns (rows) are only determined up to sign (phase);
the test aligns them to jax's before comparing. Only cases where LAPACK
cannot be followed get it: divide and conquer (n > 25) and f32 runs whose
rounding (we compute in f64) may tip a sign; elsewhere signs must match.

Complex SVD cases (computed by Jacobi, not LAPACK's algorithm) also carry
"svd": {"pairs": r}: the test checks U diag(s) V^H against the input and
U, V^H for unitarity, and compares only the first r (phase-aligned) singular
vector pairs with jax; the rest (null-space completions, vectors of zero
singular values) are determined only as a subspace, which unitarity and the
matching leading vectors pin down.
"""
import jax
import jaxcases  # enables x64, pins jax to the CPU
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
from jax import lax
from jax._src.lax import linalg as lax_linalg  # (geqrf is not re-exported)

rng = np.random.default_rng(20240611)
CASES = []


def case(name, fn, args, rtol=None, atol=0.0, signs=None, **extra):
    """rtol None means bit-exact comparison."""
    CASES.append((name, fn, args, dict(rtol=rtol, atol=atol, signs=signs or [], **extra)))


def randm(shape, dtype=np.float64):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def sym(n, batch=(), dtype=np.float64):
    a = randm(batch + (n, n), dtype)
    return ((a + np.conj(np.swapaxes(a, -1, -2))) / 2).astype(dtype)


def wellcond(n, batch=(), dtype=np.float64):
    return (randm(batch + (n, n), dtype) + 2 * np.sqrt(n) * np.eye(n)).astype(dtype)


F64 = dict(rtol=1e-11, atol=1e-12)
F32 = dict(rtol=2e-4, atol=2e-5)
EIG = [{"out": 1, "axis": "col"}]               # (w, v)
SVD = [{"out": 0, "axis": "col"}, {"out": 2, "axis": "row"}]  # (u, s, vh)

# ---------------------------------------------------------------- getrf
lu_factor = lambda a: lax.linalg.lu(a)  # (lu, pivots, permutation)  # noqa: E731
for dt, tol in ((np.float64, F64), (np.float32, F32), (np.complex128, F64), (np.complex64, F32)):
    t = np.dtype(dt).char
    case("getrf_%s_sq" % t, lu_factor, [randm((6, 6), dt)], **tol)
    case("getrf_%s_tall" % t, lu_factor, [randm((7, 4), dt)], **tol)
    case("getrf_%s_wide" % t, lu_factor, [randm((3, 5), dt)], **tol)
    case("getrf_%s_batch" % t, lu_factor, [randm((2, 3, 4, 4), dt)], **tol)
case("getrf_d_big", lu_factor, [randm((70, 70))], 1e-9, 1e-11)
sing = randm((5, 5))
sing[:, 2] = 0  # an exactly zero pivot: info > 0, jax keeps the factors
case("getrf_d_singular", lu_factor, [sing], **F64)
case("getrf_d_zero", lu_factor, [np.zeros((3, 3))], **F64)
case("getrf_scipy_lu", jsl.lu, [randm((5, 5))], **F64)
case("solve_d", jnp.linalg.solve, [wellcond(5), randm((5, 3))], **F64)
case("solve_s_batch", jnp.linalg.solve, [wellcond(4, (3,), np.float32), randm((3, 4, 2), np.float32)], **F32)
case("inv_d", jnp.linalg.inv, [wellcond(6)], **F64)
case("inv_s_batch", jnp.linalg.inv, [wellcond(5, (2,), np.float32)], **F32)
case("inv_z", jnp.linalg.inv, [wellcond(4, (), np.complex128)], **F64)
case("det_d", jnp.linalg.det, [randm((5, 5))], **F64)
case("det_s", jnp.linalg.det, [randm((4, 4), np.float32)], **F32)
case("slogdet_d", jnp.linalg.slogdet, [randm((6, 6))], **F64)
case("slogdet_s_batch", jnp.linalg.slogdet, [randm((2, 5, 5), np.float32)], **F32)

# ---------------------------------------------------------------- geqrf / orgqr
for dt, tol in ((np.float64, F64), (np.float32, F32), (np.complex128, F64), (np.complex64, F32)):
    t = np.dtype(dt).char
    case("qr_%s_tall" % t, jnp.linalg.qr, [randm((6, 4), dt)], **tol)
    case("qr_%s_complete" % t, lambda a: jnp.linalg.qr(a, mode="complete"), [randm((6, 4), dt)], **tol)
    case("qr_%s_wide" % t, jnp.linalg.qr, [randm((3, 5), dt)], **tol)
    case("qr_%s_batch" % t, jnp.linalg.qr, [randm((2, 5, 5), dt)], **tol)
case("qr_d_r", lambda a: jnp.linalg.qr(a, mode="r"), [randm((7, 5))], **F64)
case("qr_d_big", jnp.linalg.qr, [randm((80, 50))], 1e-9, 1e-11)
zcol = randm((5, 4))
zcol[:, 1] = 0  # H1 keeps a zero column exactly zero: the tau = 0 (H = I) branch
case("qr_d_zero_column", jnp.linalg.qr, [zcol], **F64)
case("qr_z_zero_column", jnp.linalg.qr, [zcol.astype(np.complex128)], **F64)
case("geqrf_d_raw", lax_linalg.geqrf, [randm((5, 4))], **F64)

# ---------------------------------------------------------------- syevd / heevd
for dt, tol in ((np.float64, F64), (np.float32, F32)):
    t = np.dtype(dt).char
    loose = dt == np.float32  # f32 LAPACK rounding may tip a sign
    case("eigh_%s" % t, jnp.linalg.eigh, [sym(6, (), dt)], signs=loose and EIG, **tol)
    case("eigh_%s_upper" % t, lambda a: jnp.linalg.eigh(a, UPLO="U"), [sym(5, (), dt)], signs=loose and EIG, **tol)
    case("eigh_%s_batch" % t, jnp.linalg.eigh, [sym(4, (2, 3), dt)], signs=loose and EIG, **tol)
    case("eigvalsh_%s" % t, jnp.linalg.eigvalsh, [sym(7, (), dt)], **tol)
# Unsymmetrized input: only the uplo triangle may be read.
for lower in (True, False):
    case("eigh_d_triangle_%s" % ("L" if lower else "U"),
         lambda a, lower=lower: lax.linalg.eigh(a, lower=lower, symmetrize_input=False), [randm((5, 5))], **F64)
for dt, tol in ((np.complex128, F64), (np.complex64, F32)):
    t = np.dtype(dt).char
    loose = dt == np.complex64
    case("eigh_%s" % t, jnp.linalg.eigh, [sym(6, (), dt)], signs=loose and EIG, **tol)
    case("eigh_%s_batch" % t, jnp.linalg.eigh, [sym(4, (2,), dt)], signs=loose and EIG, **tol)
    case("eigvalsh_%s" % t, jnp.linalg.eigvalsh, [sym(5, (), dt)], **tol)
# zhetrd's upper reduction is not followed: phases may differ.
case("eigh_z_upper", lambda a: jnp.linalg.eigh(a, UPLO="U"), [sym(5, (), np.complex128)], signs=EIG, **F64)
case("eigh_z_triangle_L", lambda a: lax.linalg.eigh(a, lower=True, symmetrize_input=False),
     [randm((5, 5), np.complex128)], signs=[{"out": 0, "axis": "col"}], **F64)
case("eigh_d_big", jnp.linalg.eigh, [sym(40)], 1e-9, 1e-11, signs=EIG)
case("eigh_d_1x1", jnp.linalg.eigh, [sym(1)], **F64)

# ---------------------------------------------------------------- gesdd / gesvd
def svd_qr(full=True, uv=True):
    return lambda a: lax.linalg.svd(a, full_matrices=full, compute_uv=uv, algorithm=lax.linalg.SvdAlgorithm.QR)


for dt, tol in ((np.float64, F64), (np.float32, F32)):
    t = np.dtype(dt).char
    loose = dt == np.float32  # f32 LAPACK rounding may tip a sign
    case("svd_%s_tall_full" % t, jnp.linalg.svd, [randm((6, 4), dt)], signs=loose and SVD, **tol)
    case("svd_%s_tall" % t, lambda a: jnp.linalg.svd(a, full_matrices=False), [randm((6, 4), dt)], signs=loose and SVD, **tol)
    case("svd_%s_wide_full" % t, jnp.linalg.svd, [randm((3, 5), dt)], signs=loose and SVD, **tol)
    case("svd_%s_wide" % t, lambda a: jnp.linalg.svd(a, full_matrices=False), [randm((3, 5), dt)], signs=loose and SVD, **tol)
    case("svd_%s_novec" % t, lambda a: jnp.linalg.svd(a, compute_uv=False), [randm((5, 4), dt)], **tol)
    case("svd_%s_batch" % t, jnp.linalg.svd, [randm((2, 4, 4), dt)], signs=loose and SVD, **tol)
    case("gesvd_%s_full" % t, svd_qr(), [randm((5, 3), dt)], signs=loose and SVD, **tol)
    case("gesvd_%s_wide" % t, svd_qr(False), [randm((3, 6), dt)], signs=loose and SVD, **tol)
    case("gesvd_%s_novec" % t, svd_qr(uv=False), [randm((4, 4), dt)], **tol)
# 4x6: dgesvd (and gonum) would reduce by LQ first, dgesdd does not.
case("svd_d_wide_band_full", jnp.linalg.svd, [randm((4, 6))], **F64)
case("svd_d_wide_band", lambda a: jnp.linalg.svd(a, full_matrices=False), [randm((4, 6))], **F64)
case("svd_d_very_tall", lambda a: jnp.linalg.svd(a, full_matrices=False), [randm((12, 3))], **F64)
case("svd_d_big", lambda a: jnp.linalg.svd(a, full_matrices=False), [randm((40, 30))], 1e-9, 1e-11, signs=SVD)
# Complex: values compared tightly; vectors after per-pair phase alignment.
def csvd(full=True, uv=True, qr=False):
    alg = lax.linalg.SvdAlgorithm.QR if qr else lax.linalg.SvdAlgorithm.DEFAULT
    return lambda a: lax.linalg.svd(a, full_matrices=full, compute_uv=uv, algorithm=alg)


for dt, tol, t in ((np.complex128, F64, "z"), (np.complex64, F32, "c")):
    for shape, label in (((4, 4), "sq"), ((6, 4), "tall"), ((3, 5), "wide"), ((4, 6), "wide_band"),
                         ((12, 3), "very_tall"), ((3, 12), "very_wide"), ((2, 3, 4, 4), "batch"),
                         ((2, 3, 5), "batch_wide"), ((1, 1), "1x1")):
        k = min(shape[-2:])
        for qr in (False, True):
            pre = "gesvd" if qr else "svd"
            for full in (True, False):
                case("%s_%s_%s%s" % (pre, t, label, "_full" if full else ""), csvd(full, True, qr),
                     [randm(shape, dt)], signs=SVD, svd={"pairs": k}, **tol)
            case("%s_%s_%s_novec" % (pre, t, label), csvd(True, False, qr), [randm(shape, dt)], **tol)
case("svd_c_jnp", jnp.linalg.svd, [randm((5, 3), np.complex64)], signs=SVD, svd={"pairs": 3}, **F32)
case("svd_z_jnp_values", lambda a: jnp.linalg.svd(a, compute_uv=False), [randm((3, 4), np.complex128)], **F64)
case("svd_z_big", csvd(False), [randm((30, 20), np.complex128)], 1e-9, 1e-11, signs=SVD, svd={"pairs": 20})
# Rank 2 of 4: the zero singular values' vectors are any completion.
low = randm((6, 2), np.complex128) @ randm((2, 4), np.complex128)
case("svd_z_rank2", csvd(), [low], 1e-11, 1e-13, signs=SVD, svd={"pairs": 2})
case("svd_z_zero", csvd(), [np.zeros((3, 2), np.complex128)], 1e-11, 1e-13, signs=SVD, svd={"pairs": 0})
# Graded singular values down to 1e-12: zgesdd's bidiagonalization gets the
# small ones only to ~eps*s_max absolutely, hence the atol.
qa, _ = np.linalg.qr(randm((6, 6), np.complex128))
qb, _ = np.linalg.qr(randm((5, 5), np.complex128))
graded = qa[:, :5] @ np.diag(np.logspace(0, -12, 5)) @ qb
case("svd_z_graded_values", csvd(uv=False), [graded], 1e-11, 1e-14)
case("svd_z_scaled_values", csvd(uv=False), [1e200 * randm((4, 3), np.complex128)], **F64)
nan = randm((3, 3), np.complex128)
nan[1, 2] = np.nan
case("svd_z_nan", csvd(), [nan], **F64)
case("pinv_z", jnp.linalg.pinv, [randm((5, 3), np.complex128)], **F64)
case("pinv_d", jnp.linalg.pinv, [randm((5, 3))], **F64)
case("matrix_rank_d", jnp.linalg.matrix_rank, [np.outer(randm((5,)), randm((4,)))])
case("lstsq_d", lambda a, b: jnp.linalg.lstsq(a, b)[0], [randm((6, 3)), randm((6,))], **F64)

# Past dsteqr's range (n > 25): eigenvectors by recorded QL rotations
# (customcall_lapack_eig_real.go); signs aligned, as for divide and conquer.
case("eigh_s_ql", jnp.linalg.eigh, [sym(100, (), np.float32)], signs=EIG, **F32)
case("eigh_d_ql_upper", lambda a: jnp.linalg.eigh(a, UPLO="U"), [sym(130)], 1e-9, 1e-11, signs=EIG)
case("eigh_d_ql_batch", jnp.linalg.eigh, [sym(60, (2,))], 1e-9, 1e-11, signs=EIG)
# Past k = 25 on gesdd's direct path: recorded-rotation bidiagonal QR
# (linalg_bidiag_qr.go); pair signs aligned.
case("svd_s_bidiag_qr", jnp.linalg.svd, [randm((100, 80), np.float32)], signs=SVD, **F32)
case("svd_d_bidiag_qr_square", lambda a: jnp.linalg.svd(a, full_matrices=False), [randm((130, 130))], 1e-9, 1e-11, signs=SVD)

if __name__ == "__main__":
    jaxcases.main(CASES)
