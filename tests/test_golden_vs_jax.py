"""Differential test: goldtrace.golden(module, *inputs) against jax.jit(fn)(*inputs) on CPU.

Every catalog program runs from its Lowered (HloModuleProto); a subset also runs from
the unoptimized HLO text and from the XLA:CPU-optimized text (fusions, bitcasts,
layouts, schedules).

Comparison rules (goldens follow XLA:CPU, so a mismatch is a goldtrace bug unless
listed below as a known failure):

* Always: same number of outputs, same shapes, same dtypes.
* cmp="exact": bit-exact. Integers and booleans by value; floats by bit pattern
  (so +0 and -0 differ), except that any NaN matches any NaN (payload and sign of
  NaN are not part of the contract). Used for integer and bit ops, converts, data
  movement, IEEE correctly-rounded arithmetic (add/sub/mul/div/sqrt/rem), compare,
  select, sort, and rng bits.
* cmp="elem" (transcendental functions): NaN positions equal, infinities equal with
  sign, and elsewhere |got - want| <= rtol*|want| + rtol*ELEM_ATOL where
  rtol = k * RTOL[dtype]; the small absolute term admits results near a zero of
  the function (sin near pi), where relative error is meaningless; programs tagged
  "zeros" (lgamma, digamma, computed by series whose error is ulps of 1) use
  rtol*1 instead.
* cmp="accum" (sums, dots, convolutions, fft, linalg, whole models): as "elem" but the
  absolute term is rtol * max(1, max|want|), because the summation order is free and
  errors scale with the operands, not the individual result.

RTOL per dtype (k=1): f64 1e-12, f32 2e-6 (16 ulp), f16 2 ulp (2**-9), bf16 2 ulp
(2**-6), complex as their component type. 8-bit and narrower float results are always
compared bit for bit: XLA:CPU computes them in f32 and rounds once, as goldtrace does
(assert_close refuses them).
Measured when written: the worst f32 program used 1/10 of its tolerance (sinh, about
2 ulp), the worst f64 under 1/100, bf16 sums 2/5, f16 expm1 1/2. For
low-precision results, one step of output rounding can move a value by an ulp of the
type when the reference and the golden differ by less than an f32 ulp before rounding,
hence 2 ulp.
"""

import numpy as np
import ml_dtypes
import pytest
from reference import require  # noqa: E402  (tests/reference.py)

jax = require("jax")
import jax_programs as jp  # noqa: E402

goldtrace = require("goldtrace")
require("goldtrace.golden")
from goldtrace.golden import golden as _golden  # noqa: E402
import functools  # noqa: E402
import jax  # noqa: E402

# The references come from the installed JAX; where XLA:CPU versions differ,
# goldtrace follows the newest by default and the installed one on request.
XLA_COMPAT = "0.10" if jax.__version__.startswith("0.10.") else None
golden = functools.partial(_golden, xla_compat=XLA_COMPAT)

RTOL = {
    np.dtype(np.float64): 1e-12,
    np.dtype(np.float32): 2e-6,
    np.dtype(np.float16): 2.0 ** -9,
    np.dtype(ml_dtypes.bfloat16): 2.0 ** -6,
    np.dtype(np.complex64): 2e-6,
    np.dtype(np.complex128): 1e-12,
}

ELEM_ATOL = 1e-3

# Program id -> precise reason, for every form; each is an xfail(strict=True).
KNOWN_BUGS = {}
# (form, program id) -> reason, for failures of one form only.
KNOWN_FAILURES = {}

# Programs also run from text: every fifth one plus every model block.
TEXT_SUBSET = [pid for i, pid in enumerate(jp.IDS) if i % 5 == 0 or pid.startswith("model-")]


def _params(form, ids):
    out = []
    for pid in ids:
        reason = KNOWN_FAILURES.get((form, pid)) or KNOWN_BUGS.get(pid)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(pid, marks=marks, id=pid))
    return out


def _is_float(dt):
    dt = np.dtype(dt)
    if dt.kind in "fc":
        return True
    try:
        ml_dtypes.finfo(dt)
        return True
    except ValueError:
        return False


def _as_f64(x):
    """Complex to pairs, everything else float64, for tolerance checks."""
    if x.dtype.kind == "c":
        return np.stack([x.real.astype(np.float64), x.imag.astype(np.float64)], axis=-1)
    with np.errstate(invalid="ignore"):  # NaN payloads of ml_dtypes warn on cast
        return x.astype(np.float64)


def _bits(x):
    return np.ascontiguousarray(x).view(np.dtype(f"u{x.dtype.itemsize}"))


def assert_exact(got, want, where):
    if want.dtype.kind in "biu" or want.dtype == np.bool_ or not _is_float(want.dtype):
        if not np.array_equal(got, want):
            bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
            raise AssertionError(f"{where}: {bad.size} of {want.size} elements differ, first at flat index "
                                 f"{bad[0]}: got {got.reshape(-1)[bad[0]]!r}, want {want.reshape(-1)[bad[0]]!r}")
        return
    g, w = _as_f64(got), _as_f64(want)
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    if got.dtype.kind == "c":
        part = np.float32 if got.dtype == np.complex64 else np.float64
        gb = _bits(np.ascontiguousarray(got).view(part).reshape(g.shape))
        wb = _bits(np.ascontiguousarray(want).view(part).reshape(w.shape))
    else:
        gb, wb = _bits(got), _bits(want)
    bad = (nan_g != nan_w) | (~nan_w & (gb != wb))
    if bad.any():
        idx = np.argwhere(bad)[0]
        raise AssertionError(f"{where}: {int(bad.sum())} of {bad.size} elements differ bitwise, first at "
                             f"{tuple(idx)}: got {g[tuple(idx)]!r} (0x{int(gb[tuple(idx)]):x}), "
                             f"want {w[tuple(idx)]!r} (0x{int(wb[tuple(idx)]):x})")


def assert_close(got, want, where, scaled, k, elem_atol=ELEM_ATOL):
    if not _is_float(want.dtype):
        return assert_exact(got, want, where)
    if np.dtype(want.dtype) not in RTOL:
        raise AssertionError(f"{where}: {want.dtype} results are compared bit for bit (cmp='exact'), "
                             "never within a tolerance")
    rtol = k * RTOL[np.dtype(want.dtype)]
    g, w = _as_f64(got), _as_f64(want)
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    if (nan_g != nan_w).any():
        idx = np.argwhere(nan_g != nan_w)[0]
        raise AssertionError(f"{where}: NaN positions differ, first at {tuple(idx)}: got {g[tuple(idx)]}, "
                             f"want {w[tuple(idx)]}")
    inf = np.isinf(w) | np.isinf(g)
    if (inf & (g != w)).any():
        idx = np.argwhere(inf & (g != w))[0]
        raise AssertionError(f"{where}: infinities differ at {tuple(idx)}: got {g[tuple(idx)]}, want {w[tuple(idx)]}")
    fin = ~nan_w & ~inf
    if scaled:
        atol = rtol * max(1.0, float(np.max(np.abs(w[fin]), initial=0.0)))
    else:
        atol = rtol * elem_atol
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.where(fin, np.abs(g - w), 0.0)
    lim = rtol * np.abs(np.where(fin, w, 0.0)) + atol
    bad = fin & (err > lim)
    if bad.any():
        idx = np.argwhere(bad)[0]
        worst = np.max(np.where(fin, err / lim, 0))
        raise AssertionError(f"{where}: {int(bad.sum())} of {bad.size} elements off tolerance (rtol={rtol:.3g}, "
                             f"atol={atol:.3g}, worst {worst:.3g}x), first at {tuple(idx)}: got {g[tuple(idx)]!r}, "
                             f"want {w[tuple(idx)]!r}")


def compare(pid, outs):
    p = jp.BY_ID[pid]
    want = jp.expected(pid)
    assert len(outs) == len(want), f"{len(outs)} outputs, JAX has {len(want)}"
    for i, (g, w) in enumerate(zip(outs, want)):
        where = f"{pid} output {i}"
        assert g.dtype == w.dtype, f"{where}: dtype {g.dtype}, JAX has {w.dtype}"
        assert g.shape == w.shape, f"{where}: shape {g.shape}, JAX has {w.shape}"
        if p.cmp == "exact":
            assert_exact(g, w, where)
        else:
            assert_close(g, w, where, scaled=p.cmp == "accum", k=p.k,
                         elem_atol=1.0 if "zeros" in p.tags else ELEM_ATOL)


@pytest.mark.parametrize("pid", _params("proto", jp.IDS))
def test_golden_from_proto(pid):
    compare(pid, golden(jp.lowered(pid), *jp.inputs(pid)))


@pytest.mark.parametrize("pid", _params("unopt", TEXT_SUBSET))
def test_golden_from_unoptimized_text(pid):
    compare(pid, golden(jp.unopt_text(pid), *jp.inputs(pid)))


@pytest.mark.parametrize("pid", _params("opt", TEXT_SUBSET))
def test_golden_from_optimized_text(pid):
    compare(pid, golden(jp.opt_text(pid), *jp.inputs(pid)))


# Asking for intermediates must not change the outputs, and yields named values.
@pytest.mark.parametrize("pid", [i for i in jp.IDS if i.startswith("model-")][:6])
def test_save_intermediates_keeps_outputs(pid):
    outs = golden(jp.lowered(pid), *jp.inputs(pid), save_intermediates=True)
    compare(pid, outs)
    assert outs.intermediates, "no intermediates reported"
    for name, value in outs.intermediates.items():
        assert isinstance(name, str) and name
        assert isinstance(value, np.ndarray)
