"""A catalog of small JAX programs for differential tests of goldtrace against XLA:CPU.

Each `Program` has a readable `id` (used as the pytest id), a function `fn` of numpy
arrays only (static parameters are closed over), and an input factory that builds
deterministic numpy inputs, special values included where they mean something
(signed zeros, infinities, NaNs, extreme integers, ties for rounding).

`cmp` says how goldens are compared with JAX (see test_golden_vs_jax.py):
  "exact"  bit-exact, same dtype, NaN-aware (integers, bit ops, converts, data
           movement, IEEE-exact arithmetic, rng bits);
  "elem"   per-element tolerance of the output dtype (transcendental functions);
  "accum"  tolerance scaled by the output's largest magnitude (sums, dots, convs,
           fft, linalg, models), because summation order is free.
`k` multiplies the per-dtype tolerance. Tag "zeros" marks functions evaluated near
their zeros (lgamma at 1 and 2, digamma near 1.46), whose absolute error there is
ulps of 1, not of the result.

The session-wide cache functions at the bottom (`lowered`, `inputs`, `expected`,
`unopt_text`, `opt_text`) lower and compile each program once per pytest session.
"""

import dataclasses
import functools
import zlib
from typing import Callable

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

F8 = {
    "f8e4m3fn": ml_dtypes.float8_e4m3fn,
    "f8e5m2": ml_dtypes.float8_e5m2,
    "f8e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "f8e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "f8e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz,
    "f8e4m3": ml_dtypes.float8_e4m3,
    "f8e3m4": ml_dtypes.float8_e3m4,
}
DT = {
    "pred": np.bool_, "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64,
    "c64": np.complex64, "c128": np.complex128,
    "s4": ml_dtypes.int4, "u4": ml_dtypes.uint4,
    "f8e8m0fnu": ml_dtypes.float8_e8m0fnu, "f4e2m1fn": ml_dtypes.float4_e2m1fn,
    **F8,
}
FLOATS = ["f32", "f64", "bf16", "f16"]
INTS = ["s8", "s32", "s64", "u8", "u16", "u32"]


@dataclasses.dataclass(frozen=True)
class Program:
    id: str
    fn: Callable
    make_args: Callable  # rng -> tuple of numpy arrays
    cmp: str = "exact"
    k: float = 1.0
    tags: tuple = ()

    def args(self):
        return tuple(self.make_args(np.random.default_rng(zlib.crc32(self.id.encode()))))


PROGRAMS = []


def prog(id, fn, make_args, cmp="exact", k=1.0, tags=()):
    assert all(p.id != id for p in PROGRAMS), f"duplicate program id {id}"
    PROGRAMS.append(Program(id, fn, make_args, cmp, k, tuple(tags)))


# ---------------------------------------------------------------- input helpers

def _has_inf(dt):
    return np.isinf(np.array(np.inf).astype(dt).astype(np.float64))


def _has_nan(dt):
    return np.isnan(np.array(np.nan).astype(dt).astype(np.float64))


def float_specials(dt, huge=True):
    """Special values representable in float dtype dt (values it cannot hold are dropped),
    the smallest subnormal of either sign among them (XLA:CPU runs with flush-to-zero and
    denormals-are-zero; the "ftz" programs, ids ftz-* and subnormal-*, go further)."""
    fi = ml_dtypes.finfo(dt)
    big = [float(fi.max), -float(fi.max)] if huge else [4.0, -4.0]
    sub = float(fi.smallest_subnormal)
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.5, *big,
            float(fi.tiny), -float(fi.tiny), 2.0, 10.0, -7.25, sub, -sub]
    if _has_inf(dt):
        vals += [np.inf, -np.inf]
    if _has_nan(dt):
        vals += [np.nan]
    return np.array(vals, np.float64).astype(dt)


def floats(rng, shape, dt, lo=-3.0, hi=3.0, special=True, huge=True):
    dt = DT.get(dt, dt)
    n = int(np.prod(shape))
    x = rng.uniform(lo, hi, n).astype(dt)
    if special:
        s = float_specials(dt, huge)[:n]
        x[: len(s)] = s
    return x.reshape(shape)


def ints(rng, shape, dt, lo=None, hi=None, special=True):
    dt = np.dtype(DT.get(dt, dt))
    ii = np.iinfo(dt) if dt != np.bool_ else None
    if dt == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    lo = ii.min if lo is None else lo
    hi = ii.max if hi is None else hi
    n = int(np.prod(shape))
    x = rng.integers(lo, hi, n, dtype=dt, endpoint=True)
    if special:
        s = np.array([v for v in [0, 1, -1, ii.min, ii.max, 2, -2, ii.min + 1, ii.max - 1, 7]
                      if lo <= v <= hi], dtype=object)
        s = np.array([int(v) for v in s][:n], dtype=dt)
        x[: len(s)] = s
    return x.reshape(shape)


def values(rng, shape, dt, **kw):
    name = dt if isinstance(dt, str) else np.dtype(dt).name
    d = np.dtype(DT.get(name, dt))
    if d == np.bool_ or np.issubdtype(d, np.integer):
        return ints(rng, shape, d, **kw)
    if np.issubdtype(d, np.complexfloating):
        part = np.float32 if d == np.complex64 else np.float64
        return (floats(rng, shape, part, **kw) + 1j * floats(rng, shape, part, special=False)).astype(d)
    return floats(rng, shape, d, **kw)


def normal(rng, shape, dt="f32", scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(DT.get(dt, dt))


# ---------------------------------------------------------------- elementwise

# name, fn, (lo, hi) random domain, cmp
UNARY_FLOAT = [
    ("abs", lax.abs, (-3, 3), "exact"),
    ("neg", lax.neg, (-3, 3), "exact"),
    ("sign", lax.sign, (-3, 3), "exact"),
    ("floor", lax.floor, (-5, 5), "exact"),
    ("ceil", lax.ceil, (-5, 5), "exact"),
    ("round_afz", lambda x: lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO), (-5, 5), "exact"),
    ("round_even", lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), (-5, 5), "exact"),
    ("is_finite", lax.is_finite, (-3, 3), "exact"),
    ("sqrt", lax.sqrt, (0, 10), "exact"),
    ("rsqrt", lax.rsqrt, (0, 10), "elem"),
    ("cbrt", lax.cbrt, (-10, 10), "elem"),
    ("exp", lax.exp, (-10, 10), "elem"),
    ("exp2", lax.exp2, (-10, 10), "elem"),
    ("expm1", lax.expm1, (-3, 3), "elem"),
    ("log", lax.log, (0, 10), "elem"),
    ("log1p", lax.log1p, (-0.9, 3), "elem"),
    ("logistic", lax.logistic, (-10, 10), "elem"),
    ("tanh", lax.tanh, (-5, 5), "elem"),
    ("sin", lax.sin, (-7, 7), "elem"),
    ("cos", lax.cos, (-7, 7), "elem"),
    ("tan", lax.tan, (-1.5, 1.5), "elem"),
    ("asin", lax.asin, (-1, 1), "elem"),
    ("acos", lax.acos, (-1, 1), "elem"),
    ("atan", lax.atan, (-5, 5), "elem"),
    ("sinh", lax.sinh, (-5, 5), "elem"),
    ("cosh", lax.cosh, (-5, 5), "elem"),
    ("asinh", lax.asinh, (-5, 5), "elem"),
    ("acosh", lax.acosh, (1, 6), "elem"),
    ("atanh", lax.atanh, (-1, 1), "elem"),
    ("erf", lax.erf, (-3, 3), "elem"),
    ("erfc", lax.erfc, (-3, 3), "elem"),
    ("erf_inv", lax.erf_inv, (-1, 1), "elem"),
    ("lgamma", lax.lgamma, (0.1, 6), "elem"),
    ("digamma", lax.digamma, (0.1, 6), "elem"),
    ("square", lax.square, (-3, 3), "exact"),
    ("reciprocal", lax.reciprocal, (-3, 3), "exact"),
]



def _host_libm():
    """Whether goldtrace calls the host's libm for what XLA:CPU hands to it
    (sin, cos, tan, cbrt, pow, atan2; f64 log and erf): then those, and the
    functions jax builds from them and from XLA's own approximations, are
    bit-exact; a build without it uses Go's math, within a few ulp."""
    try:
        import goldtrace
        return not goldtrace.build_info()["host_libm"].startswith("none")
    except Exception:  # noqa: BLE001 - no goldtrace: the programs still list
        return False


HOST_LIBM = _host_libm()


def _build_flag(key):
    """goldtrace.build_info()[key], False without goldtrace."""
    try:
        import goldtrace
        return bool(goldtrace.build_info()[key])
    except Exception:  # noqa: BLE001 - no goldtrace: the programs still list
        return False


# Transcendentals compared bit for bit (with the host's libm): XLA's own
# approximations reproduced (f32 exp, log, tanh, erf, ...; f64 exp, tanh,
# expm1, log1p, logistic), libm's functions called, and jax's compositions of
# both. rsqrt (the CPU's estimate instruction refined: f32, and f64 on AVX-512
# hosts) is compared bit for bit where the build runs that instruction
# (build_info()["rsqrt_matches_xla"]). atanh's two log1p share x*x/2 in
# XLA's fusion, which moves an FMA (eval.Log1pPairTarget). Left within a
# tolerance: atan (atan2(x, 1): XLA:CPU takes another path for some array
# sizes).
BIT_EXACT_TRANSCENDENTALS = {
    **{name: FLOATS for name in ("sin", "cos", "tan", "cbrt", "asin", "acos", "atan2", "log", "erf", "pow",
                                 "exp", "exp2", "expm1", "log1p", "logistic", "tanh", "sinh", "cosh", "asinh",
                                 "acosh", "atanh", "erfc", "erf_inv", "lgamma", "digamma")},
    **({"rsqrt": FLOATS} if _build_flag("rsqrt_matches_xla") else {}),
} if HOST_LIBM else {}


def _cmp_of(name, dt, cmp):
    return "exact" if dt in BIT_EXACT_TRANSCENDENTALS.get(name, ()) else cmp


for _name, _fn, (_lo, _hi), _cmp in UNARY_FLOAT:
    for _dt in FLOATS:
        # 1/max is subnormal, which XLA:CPU flushes; that case lives with the "ftz" programs.
        prog(f"unary-{_name}-{_dt}", _fn,
             lambda rng, dt=_dt, lo=_lo, hi=_hi, huge=_name != "reciprocal": (floats(rng, (6, 8), dt, lo, hi,
                                                                                    huge=huge),), _cmp_of(_name, _dt, _cmp),
             k=4.0 if _name in ("lgamma", "digamma", "erf_inv", "acosh", "asinh", "atanh", "erfc") else 1.0,
             tags=("zeros",) if _name in ("lgamma", "digamma") else ())

for _dt in ["f8e4m3fn", "f8e5m2"]:
    # exp computes in f32 (XLA's kernel, reproduced) and rounds once: bit-exact.
    prog(f"unary-exp-{_dt}", lax.exp, lambda rng, dt=_dt: (floats(rng, (32,), dt, -2, 2),))
    prog(f"unary-neg-{_dt}", lax.neg, lambda rng, dt=_dt: (floats(rng, (32,), dt),))
    prog(f"unary-abs-{_dt}", lax.abs, lambda rng, dt=_dt: (floats(rng, (32,), dt),))

# Sign-bit ops work on eight storage bytes at a time: lengths that leave a few
# elements over, and every narrow format with a plain sign bit (NaN, inf, ±0 included).
for _dt in ["bf16", "f16", "f8e4m3fn", "f8e5m2", "f8e4m3", "f8e3m4", "f8e4m3fnuz", "f8e5m2fnuz", "f4e2m1fn"]:
    prog(f"unary-neg-odd-{_dt}", lax.neg, lambda rng, dt=_dt: (floats(rng, (7, 3), dt),))
    prog(f"unary-abs-odd-{_dt}", lax.abs, lambda rng, dt=_dt: (floats(rng, (5, 9), dt),))

BINARY_FLOAT = [
    ("add", lax.add, "exact"), ("sub", lax.sub, "exact"), ("mul", lax.mul, "exact"),
    ("div", lax.div, "exact"), ("max", lax.max, "exact"), ("min", lax.min, "exact"),
    ("rem", lax.rem, "exact"), ("pow", lax.pow, "elem"), ("atan2", lax.atan2, "elem"),
    ("nextafter", lax.nextafter, "exact"),
]


def _pair_floats(rng, dt, lo=-3, hi=3):
    a = floats(rng, (8, 8), dt, lo, hi)
    b = floats(rng, (8, 8), dt, lo, hi)
    # Every special against every special in the first rows: ±0, ±1, ±0.5 and the
    # smallest subnormals.
    s = float_specials(DT[dt])
    tiny = float(ml_dtypes.finfo(DT[dt]).tiny)
    s = np.concatenate([s[:6], s[(s.astype(np.float64) != 0) & (np.abs(s.astype(np.float64)) < tiny)]])
    m = min(len(s), 8)
    a[:m, :m] = s[:m, None]
    b[:m, :m] = s[None, :m]
    return a, b


for _name, _fn, _cmp in BINARY_FLOAT:
    for _dt in FLOATS:
        if _name == "nextafter" and _dt in ("bf16", "f16"):
            continue  # jax has no nextafter lowering for these
        prog(f"binary-{_name}-{_dt}", _fn, lambda rng, dt=_dt: _pair_floats(rng, dt), _cmp_of(_name, _dt, _cmp))
for _name, _fn in [("add", lax.add), ("mul", lax.mul), ("div", lax.div), ("max", lax.max)]:
    for _dt in ["f8e4m3fn", "f8e5m2", "f8e4m3fnuz", "f8e4m3"]:
        prog(f"binary-{_name}-{_dt}", _fn, lambda rng, dt=_dt: _pair_floats(rng, dt))

prog("binary-pow-f32-positive-base", lax.pow,
     lambda rng: (floats(rng, (64,), "f32", 0.01, 5, special=False), floats(rng, (64,), "f32", -4, 4)), _cmp_of("pow", "f32", "elem"))
prog("binary-max-f32-nan-order", lambda a, b: (lax.max(a, b), lax.min(a, b), lax.max(b, a), lax.min(b, a)),
     lambda rng: (np.array([np.nan, 1, np.nan, 0.0, -0.0, np.inf], np.float32),
                  np.array([1, np.nan, np.nan, -0.0, 0.0, np.nan], np.float32)))

INT_BINARY = [
    ("add", lax.add), ("sub", lax.sub), ("mul", lax.mul), ("div", lax.div), ("rem", lax.rem),
    ("max", lax.max), ("min", lax.min), ("and", lax.bitwise_and), ("or", lax.bitwise_or),
    ("xor", lax.bitwise_xor),
]


def _pair_ints(rng, dt):
    a = ints(rng, (8, 8), dt)
    b = ints(rng, (8, 8), dt)
    ii = np.iinfo(DT[dt])
    s = np.array([v for v in [0, 1, -1, ii.min, ii.max, 2, -2, 3] if ii.min <= v <= ii.max], DT[dt])
    m = len(s)
    a[:m, :m] = s[:, None]
    b[:m, :m] = s[None, :]
    return a, b


for _name, _fn in INT_BINARY:
    for _dt in INTS:
        prog(f"int-{_name}-{_dt}", _fn, lambda rng, dt=_dt: _pair_ints(rng, dt))


def _divmod_args(rng, dt):
    # jnp's floor_divide and remainder: division, remainder, sign and compare
    # fix-ups (fused with pred logic), on the edge pairs of _pair_ints, small
    # divisors near multiples and random bits, long enough for whole vectors.
    ii = np.iinfo(DT[dt])
    a, b = ints(rng, (8, 96), dt), ints(rng, (8, 96), dt)
    e = _pair_ints(rng, dt)
    a[:, :8], b[:, :8] = e[0], e[1]
    small = ints(rng, (8, 32), dt, max(ii.min, -40), min(ii.max, 40), special=False)
    a[:, 8:40] = (small.astype(np.int64) * ints(rng, (8, 32), dt, 0, min(ii.max, 1000), special=False)
                  + rng.integers(-1, 2, (8, 32))).clip(ii.min, ii.max).astype(DT[dt])
    b[:, 8:40] = small
    return a, b


for _dt in INTS:
    prog(f"int-floordiv-mod-{_dt}", lambda a, b: (a // b, a % b, jnp.divmod(a, b)[1]),
         lambda rng, dt=_dt: _divmod_args(rng, dt))


def _shift_args(rng, dt):
    bits = np.iinfo(DT[dt]).bits
    a = ints(rng, (4, 2 * bits + 4), dt)
    b = np.tile(np.arange(-2, 2 * bits + 2), (4, 1)).astype(DT[dt])
    return a, b


for _name, _fn in [("shl", lax.shift_left), ("sra", lax.shift_right_arithmetic),
                   ("srl", lax.shift_right_logical)]:
    for _dt in ["s8", "s32", "s64", "u8", "u16", "u32"]:
        prog(f"int-{_name}-{_dt}", _fn, lambda rng, dt=_dt: _shift_args(rng, dt))

for _dt in ["s8", "s32", "s64", "u8", "u32", "u64"]:
    prog(f"int-not-{_dt}", lax.bitwise_not, lambda rng, dt=_dt: (ints(rng, (32,), dt),))
    prog(f"int-popcnt-{_dt}", lax.population_count, lambda rng, dt=_dt: (ints(rng, (32,), dt),))
    prog(f"int-clz-{_dt}", lax.clz, lambda rng, dt=_dt: (ints(rng, (32,), dt),))
for _dt in ["s8", "s16", "s32", "s64"]:
    prog(f"int-neg-{_dt}", lax.neg, lambda rng, dt=_dt: (ints(rng, (32,), dt),))
    prog(f"int-abs-{_dt}", lax.abs, lambda rng, dt=_dt: (ints(rng, (32,), dt),))
    prog(f"int-sign-{_dt}", lax.sign, lambda rng, dt=_dt: (ints(rng, (32,), dt),))
prog("pred-and-or-xor-not", lambda a, b: (a & b, a | b, a ^ b, ~a),
     lambda rng: (ints(rng, (16,), "pred"), ints(rng, (16,), "pred")))
for _dt in ["s32", "s64", "u32", "s8"]:
    prog(f"int-pow-{_dt}", jnp.power,
         lambda rng, dt=_dt: (ints(rng, (8, 8), dt, 0 if dt[0] == "u" else -3, 4),
                              ints(rng, (8, 8), dt, 0, 40)))
prog("int-pow-s32-edge", jnp.power,
     lambda rng: (np.array([0, 0, 1, -1, -1, 2, 2, 3, 0, 2], np.int32),
                  np.array([0, 64, 100, 7, 8, 31, 32, 5, 63, -1], np.int32)))
for _n in [0, 1, 2, 3, 5, -1, -2, 7]:
    prog(f"integer_pow-{_n}-f32", lambda x, n=_n: lax.integer_pow(x, n),
         lambda rng: (floats(rng, (32,), "f32"),), "elem")
for _n in [2, 3, 5]:
    prog(f"integer_pow-{_n}-s32", lambda x, n=_n: lax.integer_pow(x, n), lambda rng: (ints(rng, (32,), "s32"),))
    prog(f"integer_pow-{_n}-bf16", lambda x, n=_n: lax.integer_pow(x, n),
         lambda rng: (floats(rng, (32,), "bf16"),), "elem")

CMP = [("eq", lax.eq), ("ne", lax.ne), ("lt", lax.lt), ("le", lax.le), ("gt", lax.gt), ("ge", lax.ge)]
for _name, _fn in CMP:
    for _dt in ["f32", "bf16", "f64"]:
        prog(f"compare-{_name}-{_dt}", _fn, lambda rng, dt=_dt: _pair_floats(rng, dt))
    for _dt in ["s32", "u32", "s8", "u64"]:
        prog(f"compare-{_name}-{_dt}", _fn, lambda rng, dt=_dt: _pair_ints(rng, dt))
    prog(f"compare-{_name}-pred", _fn, lambda rng: (ints(rng, (16,), "pred"), ints(rng, (16,), "pred")))
prog("compare-totalorder-sort-keys-f32", lambda a: jnp.sort(a),
     lambda rng: (np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1, -1], np.float32),))

for _dt in ["f32", "s32", "bf16", "u8"]:
    prog(f"select-{_dt}", lax.select,
         lambda rng, dt=_dt: (ints(rng, (32,), "pred"), values(rng, (32,), dt), values(rng, (32,), dt)))
    prog(f"clamp-{_dt}", lambda lo, x, hi: lax.clamp(lo, x, hi),
         lambda rng, dt=_dt: (values(rng, (), dt, special=False), values(rng, (32,), dt),
                              values(rng, (), dt, special=False)))
prog("clamp-f32-nan-bounds", lambda lo, x, hi: lax.clamp(lo, x, hi),
     lambda rng: (np.float32(np.nan), floats(rng, (16,), "f32"), np.float32(1.0)))
prog("clamp-f32-arrays", lambda lo, x, hi: lax.clamp(lo, x, hi),
     lambda rng: (floats(rng, (16,), "f32", -3, 0), floats(rng, (16,), "f32"), floats(rng, (16,), "f32", 0, 3)))
prog("select-n-s32-case", lambda i, a, b, c: lax.select_n(i, a, b, c),
     lambda rng: (ints(rng, (16,), "s32", 0, 2, special=False), floats(rng, (16,), "f32"),
                  floats(rng, (16,), "f32"), floats(rng, (16,), "f32")))

# complex
def _complex_specials(dt):
    """Every pair of special parts (zeros, infinities, NaN, huge, tiny), and the
    same pairs against their reversal, for the NaN limits of division."""
    part = np.dtype(DT[_PART[dt]]).type
    big = np.finfo(part).max / 2
    s = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.5, big, 1e-3, 7.0], part)
    z = (s.repeat(len(s)) + 1j * np.tile(s, len(s))).astype(DT[dt])
    return z, z[::-1].copy()


for _dt in ["c64", "c128"]:
    _c = lambda rng, dt=_dt: (values(rng, (16,), dt, special=False),)  # noqa: E731
    _cc = lambda rng, dt=_dt: (values(rng, (16,), dt, special=False), values(rng, (16,), dt, special=False))  # noqa: E731,E501
    prog(f"complex-real-imag-conj-{_dt}", lambda z: (lax.real(z), lax.imag(z), lax.conj(z)), _c)
    # abs, multiply and divide are XLA's formulas with its FMAs, reproduced bit for bit.
    prog(f"complex-abs-{_dt}", lax.abs, _c)
    prog(f"complex-add-{_dt}", lax.add, _cc)
    prog(f"complex-mul-{_dt}", lax.mul, _cc)
    prog(f"complex-div-{_dt}", lax.div, _cc)
    prog(f"complex-sign-{_dt}", lax.sign, _c)
    prog(f"complex-abs-div-specials-{_dt}", lambda z, w: (lax.abs(z), lax.div(z, w), lax.div(w, z)),
         lambda rng, dt=_dt: _complex_specials(dt))
    # XLA's elemental complex sin/cos/tan/tanh (and jax's real-arithmetic exp and
    # sqrt) are bit-exact, on XLA's own f32 or f64 exp and expm1.
    _exact_cplx = "exact" if HOST_LIBM else "elem"
    prog(f"complex-exp-{_dt}", lax.exp, _c, _exact_cplx, k=4)
    prog(f"complex-log-{_dt}", lax.log, _c, "elem", k=4)
    prog(f"complex-sqrt-{_dt}", lax.sqrt, _c, "exact" if HOST_LIBM else "elem", k=4)
    for _name, _fn in [("sin", lax.sin), ("cos", lax.cos), ("tan", lax.tan), ("tanh", lax.tanh)]:
        prog(f"complex-{_name}-{_dt}", _fn, _c, _exact_cplx, k=4)
    prog(f"complex-trig-specials-{_dt}", lambda z, w: (lax.sin(z), lax.cos(z), lax.tan(z), lax.tanh(z)),
         lambda rng, dt=_dt: _complex_specials(dt), _exact_cplx, k=4)
    prog(f"complex-neg-{_dt}", lax.neg, _c)
    prog(f"complex-eq-{_dt}", lax.eq, _cc)
_PART = {"c64": "f32", "c128": "f64"}
for _dt in ["c64", "c128"]:
    prog(f"complex-make-{_dt}", lax.complex,
         lambda rng, dt=_dt: (floats(rng, (16,), _PART[dt]), floats(rng, (16,), _PART[dt])))

# ---------------------------------------------------------------- converts

CONVERT_SRC = ["f32", "f64", "bf16", "f16", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "pred"]
CONVERT_DST = ["f32", "f64", "bf16", "f16", "s8", "s32", "s64", "u8", "u32", "u64", "pred"]


@np.errstate(over="ignore", invalid="ignore")
def _convert_src(rng, dt):
    d = np.dtype(DT[dt])
    if d == np.bool_:
        return ints(rng, (48,), dt)
    if np.issubdtype(d, np.integer):
        return ints(rng, (48,), dt)
    x = floats(rng, (48,), dt, -300, 300)
    extra = np.array([1e10, -1e10, 127.5, 128.5, -128.5, 255.5, 256.0, -129.0, 4294967296.0,
                      2147483648.0, -2147483649.0, 0.49999997, 65520.0, 3.0e38, 1 + 2 ** -8, 1 + 3 * 2 ** -9],
                     np.float64).astype(d)
    x[-len(extra):] = extra
    return x


for _s in CONVERT_SRC:
    for _d in CONVERT_DST:
        if _s != _d:
            prog(f"convert-{_s}-to-{_d}", lambda x, d=_d: x.astype(DT[d]), lambda rng, s=_s: (_convert_src(rng, s),))


@np.errstate(over="ignore", invalid="ignore")
def _f32_to_small(rng, dt):
    """Values around dt's representable grid: exact points, ties, near-overflow, overflow."""
    d = DT[dt]
    grid = np.unique(np.arange(256, dtype=np.uint8).view(d).astype(np.float32))
    grid = grid[np.isfinite(grid)]
    mids = (grid[:-1] + grid[1:]) / 2  # ties: round half to even
    fi = ml_dtypes.finfo(d)
    over = np.array([float(fi.max) * 1.0625, float(fi.max) * 1.2, float(fi.max) * 4, 1e30,
                     np.inf, -np.inf, np.nan, -0.0], np.float32)
    x = np.concatenate([grid, mids, mids + mids * 1e-3, over]).astype(np.float32)
    return (x,)


for _dt in list(F8) + ["f8e8m0fnu", "f4e2m1fn"]:
    prog(f"convert-f32-to-{_dt}", lambda x, d=_dt: x.astype(DT[d]), lambda rng, dt=_dt: _f32_to_small(rng, dt))
    prog(f"convert-{_dt}-to-f32", lambda x: x.astype(jnp.float32),
         lambda rng, dt=_dt: (np.arange(256, dtype=np.uint8).view(DT[dt]) if dt != "f4e2m1fn"
                              else np.arange(16, dtype=np.uint8).astype(DT[dt]),))
for _dt in ["bf16", "f16"]:
    prog(f"convert-f32-to-{_dt}-ties", lambda x, d=_dt: x.astype(DT[d]),
         lambda rng, dt=_dt: (np.concatenate([
             (np.arange(1024, dtype=np.uint16).view(DT[dt]).astype(np.float32)),
             np.array([65504, 65520, 65519.99, 1e6, 3.4e38, -3.4e38, 6e-8, 3e-8, 2.9802322e-08], np.float32),
             np.frombuffer(rng.integers(0, 2 ** 32, 256, dtype=np.uint32).tobytes(), np.float32)]),))
prog("convert-f64-to-f32-ties", lambda x: x.astype(jnp.float32),
     lambda rng: (np.array([1 + 2 ** -24, 1 + 3 * 2 ** -24, 1e39, -1e39, 1e-46, 2 ** -150, 2 ** -126 * (1 + 2 ** -24)],
                           np.float64),))
prog("convert-f8e4m3fn-to-bf16", lambda x: x.astype(jnp.bfloat16),
     lambda rng: (np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn),))
prog("convert-bf16-to-f8e5m2", lambda x: x.astype(ml_dtypes.float8_e5m2),
     lambda rng: (np.frombuffer(rng.integers(0, 2 ** 16, 512, dtype=np.uint16).tobytes(), ml_dtypes.bfloat16),))
prog("convert-s32-to-f8e4m3fn", lambda x: x.astype(ml_dtypes.float8_e4m3fn),
     lambda rng: (np.arange(-600, 600, 7, dtype=np.int32),))
for _dt in ["s4", "u4"]:
    prog(f"convert-s32-to-{_dt}", lambda x, d=_dt: x.astype(DT[d]), lambda rng: (np.arange(-20, 20, dtype=np.int32),))
    prog(f"convert-f32-to-{_dt}", lambda x, d=_dt: x.astype(DT[d]),
         lambda rng: (np.linspace(-20, 20, 33).astype(np.float32),))
    prog(f"convert-{_dt}-to-s32", lambda x: x.astype(jnp.int32),
         lambda rng, dt=_dt: (np.arange(16, dtype=np.int8).astype(DT[dt]) if dt == "u4"
                              else np.arange(-8, 8, dtype=np.int8).astype(DT[dt]),))
for _s, _d in [("c64", "c128"), ("c128", "c64"), ("f32", "c64"), ("s32", "c64"), ("f64", "c128")]:
    prog(f"convert-{_s}-to-{_d}", lambda x, d=_d: x.astype(DT[d]), lambda rng, s=_s: (values(rng, (16,), s),))

# bitcast_convert_type: same width and width-changing
for _s, _d in [("f32", "s32"), ("f32", "u32"), ("s32", "f32"), ("f64", "u64"), ("bf16", "s16"),
               ("f16", "u16"), ("u8", "s8"), ("f8e4m3fn", "u8"), ("u8", "f8e5m2"), ("u16", "bf16")]:
    prog(f"bitcast-{_s}-to-{_d}", lambda x, d=_d: lax.bitcast_convert_type(x, DT[d]),
         lambda rng, s=_s: (values(rng, (4, 6), s),))
for _s, _d, _shape in [("f32", "u8", (3, 4)), ("f32", "bf16", (5,)), ("u8", "f32", (3, 4)), ("s16", "f32", (6, 2)),
                       ("f64", "s32", (4,)), ("u32", "u64", (3, 2))]:
    prog(f"bitcast-{_s}-to-{_d}-resize", lambda x, d=_d: lax.bitcast_convert_type(x, DT[d]),
         lambda rng, s=_s, shape=_shape: (values(rng, shape, s),))

for _e, _m in [(8, 7), (5, 10), (5, 2), (4, 3), (8, 23), (11, 52), (8, 0), (3, 1)]:
    for _dt in ["f32", "f64"]:
        prog(f"reduce_precision-e{_e}m{_m}-{_dt}", lambda x, e=_e, m=_m: lax.reduce_precision(x, e, m),
             lambda rng, dt=_dt: (np.concatenate([floats(rng, (64,), dt, -70000, 70000),
                                                  floats(rng, (32,), dt, -1e-5, 1e-5, special=False),
                                                  np.array([1e-40, 6e-8, 2 ** -14, 2 ** -15, 1 + 2 ** -8],
                                                           DT[dt])]),))

# ---------------------------------------------------------------- subnormals (XLA:CPU flushes them)

def _subnormals(rng, dt, n=16):
    """Subnormals of dt (both signs), then a few normals."""
    fi = ml_dtypes.finfo(DT[dt])
    sub = float(fi.smallest_subnormal)
    v = [sub, -sub, sub * 3, float(fi.tiny) / 2, -float(fi.tiny) / 4, float(fi.tiny) - sub]
    return np.array(v + [1.0, -2.0, 0.0, -0.0][: n - len(v)], np.float64).astype(DT[dt])


for _dt in ["f32", "f64", "bf16"]:
    _sub = lambda rng, dt=_dt: (_subnormals(rng, dt),)  # noqa: E731
    for _name, _fn in [("sign", lax.sign), ("ceil", lax.ceil), ("sqrt", lax.sqrt), ("log", lax.log),
                       ("gt0", lambda x: x > 0), ("max0", lambda x: lax.max(x, 0 * x))]:
        prog(f"ftz-{_name}-{_dt}", _fn, _sub, tags=("ftz",))
    prog(f"ftz-add-{_dt}", lax.add, lambda rng, dt=_dt: (_subnormals(rng, dt), np.zeros(10, DT[dt])), tags=("ftz",))
    if _dt != "f64":
        prog(f"ftz-to-f64-{_dt}", lambda x: x.astype(jnp.float64), _sub, tags=("ftz",))
    # Pure data movement keeps subnormal bits even under FTZ/DAZ.
    prog(f"subnormal-transpose-{_dt}", lambda x: jnp.flip(x), _sub)
prog("ftz-reciprocal-of-max-f32", lax.reciprocal, lambda rng: (np.array([3e38, -3e38, 1e38, 2.0], np.float32),),
     tags=("ftz",))
prog("ftz-mul-underflow-f32", lambda a, b: a * b,
     lambda rng: (np.array([1e-20, 1e-30, 2 ** -100, 1.0], np.float32), np.array([1e-20, 1e-10, 2 ** -30, 1e-38],
                                                                                  np.float32)), tags=("ftz",))
prog("ftz-convert-f64-to-f32", lambda x: x.astype(jnp.float32),
     lambda rng: (np.array([1e-40, -3 * 2 ** -151, 2 ** -149, 1e-45, 1.0], np.float64),), tags=("ftz",))
prog("subnormal-f16-sqrt", lax.sqrt, lambda rng: (np.array([6e-8, 1e-6, 3e-5, 1.0], np.float16),))
prog("subnormal-convert-f32-to-bf16", lambda x: x.astype(jnp.bfloat16),
     lambda rng: (np.array([1e-39, -1e-40, 1e-45, 1.17e-38], np.float32),))

# ---------------------------------------------------------------- data movement

def _a(shape, dt="f32"):
    return lambda rng: (values(rng, shape, dt),)


prog("broadcast_in_dim-f32", lambda x: lax.broadcast_in_dim(x, (3, 4, 5), (0, 2)), _a((3, 5)))
prog("broadcast-scalar-s32", lambda x: jnp.broadcast_to(x, (2, 3)), _a((), "s32"))
prog("reshape-f32", lambda x: x.reshape(6, 4), _a((2, 3, 4)))
prog("reshape-bf16-rank0", lambda x: x.reshape(()), _a((1, 1), "bf16"))
prog("transpose-3d-s32", lambda x: jnp.transpose(x, (2, 0, 1)), _a((2, 3, 4), "s32"))
prog("transpose-4d-f64", lambda x: jnp.transpose(x, (3, 1, 0, 2)), _a((2, 3, 2, 5), "f64"))
prog("rev-f32", lambda x: lax.rev(x, (0, 2)), _a((2, 3, 4)))
prog("slice-strided-u8", lambda x: lax.slice(x, (1, 0), (7, 9), (2, 3)), _a((8, 10), "u8"))
prog("slice-neg-step-f32", lambda x: x[::-2, 1:-1], _a((7, 6)))
prog("dynamic_slice-clamp-f32", lambda x, i, j: lax.dynamic_slice(x, (i, j), (3, 2)),
     lambda rng: (values(rng, (5, 6), "f32"), np.int32(4), np.int32(-3)))
prog("dynamic_slice-inrange-s64", lambda x, i: lax.dynamic_slice_in_dim(x, i, 3, axis=1),
     lambda rng: (values(rng, (4, 8), "s64"), np.int64(2)))
prog("dynamic_update_slice-clamp-f32", lambda x, u, i, j: lax.dynamic_update_slice(x, u, (i, j)),
     lambda rng: (values(rng, (5, 6), "f32"), values(rng, (2, 3), "f32"), np.int32(7), np.int32(-1)))
prog("dynamic_update_slice-bf16", lambda x, u, i: lax.dynamic_update_slice_in_dim(x, u, i, axis=0),
     lambda rng: (values(rng, (6, 4), "bf16"), values(rng, (2, 4), "bf16"), np.int32(3)))
prog("pad-edge-interior-f32", lambda x: lax.pad(x, np.float32(-1), [(1, 2, 1), (0, 3, 2)]), _a((3, 4)))
prog("pad-negative-s32", lambda x: lax.pad(x, np.int32(9), [(-1, 2, 0), (2, -3, 1)]), _a((4, 6), "s32"))
prog("pad-jnp-reflect-f32", lambda x: jnp.pad(x, ((2, 1), (1, 2)), mode="reflect"), _a((4, 5)))
prog("concatenate-f32", lambda a, b, c: jnp.concatenate([a, b, c], axis=1),
     lambda rng: (values(rng, (2, 3), "f32"), values(rng, (2, 1), "f32"), values(rng, (2, 4), "f32")))
prog("concatenate-pred", lambda a, b: jnp.concatenate([a, b]),
     lambda rng: (values(rng, (5,), "pred"), values(rng, (3,), "pred")))
prog("iota-2d-s32", lambda x: x + lax.broadcasted_iota(jnp.int32, (3, 5), 1), _a((3, 5), "s32"))
prog("iota-f32-arange", lambda x: x * jnp.arange(7, dtype=jnp.float32), _a((7,)))
prog("iota-u8", lambda x: x + lax.iota(jnp.uint8, 10), _a((10,), "u8"))
prog("copy-tuple-passthrough", lambda a, b: (b, a, a), lambda rng: (values(rng, (3,), "f32"), values(rng, (2,), "s8")))

# gather / scatter through jnp indexing
_x45 = lambda rng: values(rng, (6, 5), "f32")  # noqa: E731
prog("gather-take-rows", lambda x, i: x[i], lambda rng: (_x45(rng), np.array([0, 5, 2, 2], np.int32)))
prog("gather-neg-index", lambda x, i: x[i], lambda rng: (_x45(rng), np.array([-1, -6, 3], np.int32)))
prog("gather-2d-points", lambda x, i, j: x[i, j],
     lambda rng: (_x45(rng), np.array([0, 1, 5], np.int32), np.array([4, 0, 2], np.int32)))
prog("gather-clip", lambda x, i: jnp.take(x, i, axis=1, mode="clip"),
     lambda rng: (_x45(rng), np.array([-3, 0, 4, 9], np.int32)))
prog("gather-fill", lambda x, i: jnp.take(x, i, axis=0, mode="fill", fill_value=-7.0),
     lambda rng: (_x45(rng), np.array([-9, 0, 5, 6, 100], np.int32)))
prog("gather-promise-in-bounds", lambda x, i: x.at[i].get(mode="promise_in_bounds"),
     lambda rng: (_x45(rng), np.array([1, 3], np.int32)))
prog("gather-take_along_axis", lambda x, i: jnp.take_along_axis(x, i, axis=1),
     lambda rng: (_x45(rng), rng.integers(0, 5, (6, 3)).astype(np.int32)))
prog("gather-vmap-dynamic-slice", lambda x, i: jax.vmap(lambda r, s: lax.dynamic_slice(r, (s,), (2,)))(x, i),
     lambda rng: (_x45(rng), np.array([0, 1, 3, 4, 9, -2], np.int32)))
prog("gather-vmap-batched-index", lambda x, i: jax.vmap(lambda r, k: r[k])(x, i),
     lambda rng: (_x45(rng), np.array([[0, 4], [1, 1], [2, 0], [3, 3], [4, 2], [0, 0]], np.int32)))
prog("gather-s64-index-u8", lambda x, i: x[i], lambda rng: (values(rng, (10,), "u8"), np.array([9, 0, 3], np.int64)))
prog("gather-bool-mask-where", lambda x: jnp.where(x > 0, x, 0.0), _a((16,)))
prog("scatter-set", lambda x, i, u: x.at[i].set(u),
     lambda rng: (_x45(rng), np.array([1, 4], np.int32), values(rng, (2, 5), "f32")))
prog("scatter-add-dup", lambda x, i, u: x.at[i].add(u),
     lambda rng: (_x45(rng), np.array([1, 1, 3, 1], np.int32), values(rng, (4, 5), "f32", special=False)), "accum")
prog("scatter-add-s32-dup", lambda x, i, u: x.at[i].add(u),
     lambda rng: (values(rng, (8,), "s32"), np.array([1, 1, 3, 7, 7], np.int32), values(rng, (5,), "s32")))
prog("scatter-mul", lambda x, i, u: x.at[i].multiply(u),
     lambda rng: (values(rng, (8,), "s32", lo=-5, hi=5), np.array([2, 2, 0], np.int32),
                  values(rng, (3,), "s32", lo=-5, hi=5)))
prog("scatter-min", lambda x, i, u: x.at[i].min(u),
     lambda rng: (_x45(rng), np.array([0, 5, 0], np.int32), values(rng, (3, 5), "f32")))
prog("scatter-max", lambda x, i, u: x.at[i].max(u),
     lambda rng: (_x45(rng), np.array([2, 2], np.int32), values(rng, (2, 5), "f32")))
prog("scatter-drop", lambda x, i, u: x.at[i].set(u, mode="drop"),
     lambda rng: (values(rng, (8,), "f32"), np.array([-1, 3, 8, 100, 7], np.int32), values(rng, (5,), "f32")))
prog("scatter-clip", lambda x, i, u: x.at[i].set(u, mode="clip"),
     lambda rng: (values(rng, (8,), "s8"), np.array([-4, 3, 80], np.int32), values(rng, (3,), "s8")))
prog("scatter-promise-in-bounds", lambda x, i, u: x.at[i].add(u, mode="promise_in_bounds"),
     lambda rng: (values(rng, (8,), "s32"), np.array([0, 7], np.int32), values(rng, (2,), "s32")))
prog("scatter-2d-points", lambda x, i, j, u: x.at[i, j].set(u),
     lambda rng: (_x45(rng), np.array([0, 5, 2], np.int32), np.array([4, 0, 2], np.int32), values(rng, (3,), "f32")))
prog("scatter-slice-set", lambda x, u: x.at[1:4, ::2].set(u),
     lambda rng: (_x45(rng), values(rng, (3, 3), "f32")))
prog("scatter-vmap", lambda x, i, u: jax.vmap(lambda r, k, v: r.at[k].add(v))(x, i, u),
     lambda rng: (values(rng, (4, 6), "s32"), np.array([0, 5, 5, 2], np.int32), values(rng, (4,), "s32")))
prog("scatter-rows-3d-add-dup", lambda x, i, u: x.at[i].add(u),
     lambda rng: (values(rng, (6, 3, 4), "f32", special=False), np.array([5, 0, 5, 2, 5, -1], np.int32),
                  values(rng, (6, 3, 4), "f32", special=False)), "accum")
prog("scatter-partial-window-max", lambda x, i, u: x.at[i, 1:4].max(u),
     lambda rng: (_x45(rng), np.array([3, 0, 3], np.int32), values(rng, (3, 3), "f32")))
prog("scatter-rows-s32-set-dup", lambda x, i, u: x.at[i].set(u),
     lambda rng: (values(rng, (5, 7), "s32"), np.array([4, 1, 4, 4], np.int32), values(rng, (4, 7), "s32")))
prog("scatter-bf16-add", lambda x, i, u: x.at[i].add(u),
     lambda rng: (values(rng, (8,), "bf16", special=False), np.array([1, 2, 1], np.int32),
                  values(rng, (3,), "bf16", special=False)), "accum")

# ---------------------------------------------------------------- reductions

for _dt in ["f32", "f64", "bf16", "s32", "u8", "s64"]:
    _cmpk = "accum" if _dt in ("f32", "f64", "bf16") else "exact"
    _mk = lambda rng, dt=_dt: (values(rng, (4, 6, 5), dt, special=False, **({"lo": -3, "hi": 3} if dt not in ("u8",) else {"lo": 0, "hi": 9})),)  # noqa: E731,E501
    prog(f"reduce-sum-all-{_dt}", lambda x: jnp.sum(x, dtype=x.dtype), _mk, _cmpk)
    prog(f"reduce-sum-axis1-{_dt}", lambda x: jnp.sum(x, axis=1, dtype=x.dtype), _mk, _cmpk)
    prog(f"reduce-prod-axis2-{_dt}", lambda x: jnp.prod(x, axis=2, dtype=x.dtype), _mk, _cmpk)
    prog(f"reduce-max-axes02-{_dt}", lambda x: jnp.max(x, axis=(0, 2)), _mk)
    prog(f"reduce-min-axis0-{_dt}", lambda x: jnp.min(x, axis=0), _mk)
    prog(f"reduce-argmax-{_dt}", lambda x: jnp.argmax(x, axis=1), _mk)
    prog(f"reduce-argmin-{_dt}", lambda x: jnp.argmin(x, axis=2), _mk)
prog("reduce-max-nan-f32", lambda x: (jnp.max(x, axis=1), jnp.min(x, axis=1), jnp.argmax(x, axis=1)),
     lambda rng: (np.array([[1, np.nan, 3], [-np.inf, -1, -0.0], [0.0, -0.0, 0.0]], np.float32),))
prog("reduce-argmax-argmin-blocks-special-f32", lambda x: (jnp.argmax(x, axis=0), jnp.argmin(x, axis=1),
                                                           jnp.argmax(x.reshape(8, 5, 30), axis=1)), _a((40, 30)))
prog("reduce-columns-wide-f32", lambda x: (jnp.sum(x, axis=0), jnp.max(x, axis=(0, 1)), jnp.min(x, axis=1)),
     lambda rng: (normal(rng, (40, 9, 300)),), "accum")
prog("reduce-columns-s32", lambda x: (jnp.sum(x, axis=0), jnp.sum(x, axis=2), jnp.max(x, axis=(0, 1)),
                                      jnp.prod(x, axis=1)), _a((40, 9, 300), "s32"))
prog("reduce-any-all", lambda x: (jnp.any(x, axis=0), jnp.all(x, axis=1), jnp.any(x), jnp.all(x)),
     lambda rng: (values(rng, (5, 4), "pred"),))
prog("reduce-variadic-argmax-pair", lambda x, y: lax.reduce(
    (x, y), (np.float32(-np.inf), np.int32(0)),
    lambda a, b: (lax.select(a[0] >= b[0], a[0], b[0]), lax.select(a[0] >= b[0], a[1], b[1])), (1,)),
    lambda rng: (values(rng, (4, 7), "f32", special=False), values(rng, (4, 7), "s32")))
prog("reduce-sum-f16-accum-f32", lambda x: jnp.sum(x, axis=-1), _a((8, 64), "f16"), "accum")
prog("reduce-mean-var-f32", lambda x: (jnp.mean(x, axis=0), jnp.var(x, axis=0)), lambda rng: (normal(rng, (16, 5)),),
     "accum", k=2)
prog("reduce-logsumexp", lambda x: jax.nn.logsumexp(x, axis=-1), lambda rng: (normal(rng, (4, 32), scale=5),), "accum")
prog("reduce-softmax", lambda x: jax.nn.softmax(x, axis=-1), lambda rng: (normal(rng, (4, 16), scale=3),), "accum")
prog("reduce-log_softmax-bf16", lambda x: jax.nn.log_softmax(x, axis=-1),
     lambda rng: (normal(rng, (4, 16), "bf16", scale=3),), "accum", k=2)
prog("reduce-norm", lambda x: jnp.linalg.norm(x, axis=1), lambda rng: (normal(rng, (6, 9)),), "accum")

_img = lambda rng: (normal(rng, (2, 9, 8, 3)),)  # noqa: E731
prog("reduce_window-maxpool-valid", lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1),
                                                                "VALID"), _img)
prog("reduce_window-maxpool-same", lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1),
                                                               "SAME"), _img)
prog("reduce_window-sumpool-pad", lambda x: lax.reduce_window(x, 0.0, lax.add, (1, 2, 3, 1), (1, 1, 2, 1),
                                                              ((0, 0), (1, 2), (2, 0), (0, 0))), _img, "accum")
prog("reduce_window-avgpool", lambda x: lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4,
     _img, "accum")
prog("reduce_window-dilated", lambda x: lax.reduce_window(
    x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 1, 1, 1), ((0, 0), (1, 1), (0, 0), (0, 0)),
    base_dilation=(1, 2, 1, 1), window_dilation=(1, 1, 2, 1)), _img)
prog("reduce_window-min-s32", lambda x: lax.reduce_window(x, np.int32(2 ** 31 - 1), lax.min, (2, 3), (1, 2), "SAME"),
     _a((5, 7), "s32"))
prog("reduce_window-variadic", lambda x, y: lax.reduce_window(
    (x, y), (np.float32(-np.inf), np.int32(-1)),
    lambda a, b: (lax.max(a[0], b[0]), lax.max(a[1], b[1])), (2,), (1,), "VALID"),
    lambda rng: (values(rng, (8,), "f32"), values(rng, (8,), "s32")))
for _name, _fn, _dt, _c in [("cumsum", jnp.cumsum, "f32", "accum"), ("cumsum", jnp.cumsum, "s32", "exact"),
                            ("cumprod", jnp.cumprod, "f32", "accum"), ("cummax", lax.cummax, "f32", "exact"),
                            ("cummin", lax.cummin, "s8", "exact"), ("cumlogsumexp", lax.cumlogsumexp, "f32", "elem")]:
    prog(f"cumulative-{_name}-{_dt}", lambda x, f=_fn: f(x, axis=1),
         lambda rng, dt=_dt: (values(rng, (3, 17), dt, special=False, **({"lo": -2, "hi": 2})),), _c, k=4)
prog("cumsum-reverse-f64", lambda x: lax.cumsum(x, axis=0, reverse=True), lambda rng: (normal(rng, (9, 2), "f64"),),
     "accum")
def _cum_specials(rng):
    x = normal(rng, (40, 6))
    x[rng.integers(0, 40, 6), rng.integers(0, 6, 6)] = np.nan
    x[rng.integers(0, 40, 6), rng.integers(0, 6, 6)] = -0.0
    x[rng.integers(0, 40, 4), rng.integers(0, 6, 4)] = np.inf
    return (x,)


prog("cumulative-cummax-axis0-special-f32", lambda x: lax.cummax(x, axis=0), _cum_specials)
prog("cumulative-cummin-axis0-special-f32", lambda x: lax.cummin(x, axis=0), _cum_specials)
prog("cumulative-cumsum-axis0-wide-f32", lambda x: jnp.cumsum(x, axis=0), lambda rng: (normal(rng, (33, 2100)),),
     "accum")
prog("cumsum-associative_scan", lambda x: lax.associative_scan(jnp.add, x), lambda rng: (normal(rng, (33,)),), "accum")


def _maxpool(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


prog("select_and_scatter-maxpool-grad", lambda x: jax.grad(lambda y: jnp.sum(_maxpool(y) ** 2))(x),
     lambda rng: (normal(rng, (1, 6, 6, 2)),), "accum")
prog("select_and_scatter-overlap-grad", lambda x, g: jax.vjp(
    lambda y: lax.reduce_window(y, -jnp.inf, lax.max, (3, 3), (1, 2), "SAME"), x)[1](g)[0],
    lambda rng: (normal(rng, (7, 7)), normal(rng, (7, 4))), "accum")

# ---------------------------------------------------------------- dot_general

prog("dot-matmul-f32", jnp.matmul, lambda rng: (normal(rng, (8, 16)), normal(rng, (16, 12))), "accum")
prog("dot-matvec-f64", jnp.matmul, lambda rng: (normal(rng, (8, 16), "f64"), normal(rng, (16,), "f64")), "accum")
prog("dot-vecvec-f32", jnp.dot, lambda rng: (normal(rng, (33,)), normal(rng, (33,))), "accum")
prog("dot-batched-f32", lambda a, b: jnp.einsum("bij,bjk->bik", a, b),
     lambda rng: (normal(rng, (3, 4, 5)), normal(rng, (3, 5, 6))), "accum")
prog("dot-general-transposed", lambda a, b: lax.dot_general(a, b, (((0,), (1,)), ((), ()))),
     lambda rng: (normal(rng, (7, 4)), normal(rng, (5, 7))), "accum")
prog("dot-general-batch-middle", lambda a, b: lax.dot_general(a, b, (((2,), (0,)), ((1,), (2,)))),
     lambda rng: (normal(rng, (3, 4, 5)), normal(rng, (5, 6, 4))), "accum")
prog("dot-multi-contract", lambda a, b: jnp.einsum("abc,cbd->ad", a, b),
     lambda rng: (normal(rng, (4, 3, 5)), normal(rng, (5, 3, 2))), "accum")
prog("dot-int8-to-int32", lambda a, b: lax.dot(a, b, preferred_element_type=jnp.int32),
     lambda rng: (values(rng, (8, 16), "s8"), values(rng, (16, 4), "s8")))
prog("dot-int32-wrap", jnp.matmul, lambda rng: (values(rng, (4, 8), "s32"), values(rng, (8, 3), "s32")))
prog("dot-u8-to-u32", lambda a, b: lax.dot(a, b, preferred_element_type=jnp.uint32),
     lambda rng: (values(rng, (4, 8), "u8"), values(rng, (8, 3), "u8")))
prog("dot-bf16", jnp.matmul, lambda rng: (normal(rng, (8, 16), "bf16"), normal(rng, (16, 4), "bf16")), "accum")
prog("dot-bf16-to-f32", lambda a, b: lax.dot(a, b, preferred_element_type=jnp.float32),
     lambda rng: (normal(rng, (8, 16), "bf16"), normal(rng, (16, 4), "bf16")), "accum")
prog("dot-f16", jnp.matmul, lambda rng: (normal(rng, (8, 16), "f16"), normal(rng, (16, 4), "f16")), "accum")
prog("dot-c64", jnp.matmul, lambda rng: (values(rng, (4, 5), "c64", special=False),
                                         values(rng, (5, 3), "c64", special=False)), "accum")
prog("dot-c128", jnp.matmul, lambda rng: (values(rng, (4, 5), "c128", special=False),
                                          values(rng, (5, 3), "c128", special=False)), "accum")
for _dt in ["f8e4m3fn", "f8e5m2"]:
    prog(f"dot-{_dt}-to-f32", lambda a, b: lax.dot(a, b, preferred_element_type=jnp.float32),
         lambda rng, dt=_dt: (normal(rng, (8, 16), dt), normal(rng, (16, 4), dt)), "accum")
prog("dot-f32-precision-highest", lambda a, b: jnp.matmul(a, b, precision=lax.Precision.HIGHEST),
     lambda rng: (normal(rng, (6, 7)), normal(rng, (7, 5))), "accum")
prog("dot-mixed-f32-bf16", lambda a, b: jnp.matmul(a, b.astype(jnp.float32)),
     lambda rng: (normal(rng, (6, 7)), normal(rng, (7, 5), "bf16")), "accum")
prog("dot-large-128", jnp.matmul, lambda rng: (normal(rng, (64, 128)), normal(rng, (128, 96))), "accum", k=2)

# ---------------------------------------------------------------- convolution


def _conv(dn, **kw):
    return lambda x, w: lax.conv_general_dilated(x, w, dimension_numbers=dn, **kw)


prog("conv-1d-nwc", _conv(("NWC", "WIO", "NWC"), window_strides=(1,), padding="SAME"),
     lambda rng: (normal(rng, (2, 11, 3)), normal(rng, (3, 3, 4))), "accum")
prog("conv-2d-nchw-valid", _conv(("NCHW", "OIHW", "NCHW"), window_strides=(1, 1), padding="VALID"),
     lambda rng: (normal(rng, (2, 3, 8, 7)), normal(rng, (4, 3, 3, 2))), "accum")
prog("conv-2d-nhwc-stride-pad", _conv(("NHWC", "HWIO", "NHWC"), window_strides=(2, 2), padding=((1, 2), (0, 1))),
     lambda rng: (normal(rng, (1, 9, 8, 3)), normal(rng, (3, 3, 3, 5))), "accum")
prog("conv-2d-rhs-dilation", _conv(("NHWC", "HWIO", "NHWC"), window_strides=(1, 1), padding="SAME",
                                   rhs_dilation=(2, 2)),
     lambda rng: (normal(rng, (1, 9, 9, 2)), normal(rng, (3, 3, 2, 3))), "accum")
prog("conv-2d-lhs-dilation", _conv(("NCHW", "OIHW", "NCHW"), window_strides=(1, 1), padding=((1, 1), (2, 2)),
                                   lhs_dilation=(2, 1)),
     lambda rng: (normal(rng, (1, 2, 5, 5)), normal(rng, (3, 2, 3, 3))), "accum")
prog("conv-2d-depthwise", _conv(("NHWC", "HWIO", "NHWC"), window_strides=(1, 1), padding="SAME",
                                feature_group_count=4),
     lambda rng: (normal(rng, (2, 6, 6, 4)), normal(rng, (3, 3, 1, 8))), "accum")
prog("conv-2d-depthwise-strided-wide", _conv(("NHWC", "HWIO", "NHWC"), window_strides=(2, 2), padding="SAME",
                                            feature_group_count=48),
     lambda rng: (normal(rng, (2, 33, 31, 48)), normal(rng, (5, 5, 1, 48))), "accum")
prog("conv-2d-grouped", _conv(("NCHW", "OIHW", "NCHW"), window_strides=(1, 1), padding="VALID",
                              feature_group_count=2),
     lambda rng: (normal(rng, (1, 4, 5, 5)), normal(rng, (6, 2, 2, 2))), "accum")
prog("conv-3d", _conv(("NDHWC", "DHWIO", "NDHWC"), window_strides=(1, 2, 1), padding="SAME"),
     lambda rng: (normal(rng, (1, 4, 5, 6, 2)), normal(rng, (2, 3, 2, 2, 3))), "accum")
prog("conv-2d-odd-layout", _conv(("HNCW", "WOIH", "CWNH"), window_strides=(1, 1), padding="VALID"),
     lambda rng: (normal(rng, (6, 2, 3, 5)), normal(rng, (2, 4, 3, 3))), "accum")
prog("conv-grad-kernel-batch-groups", lambda x, w, g: jax.vjp(
    lambda k: lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
    w)[1](g)[0],
    lambda rng: (normal(rng, (2, 5, 5, 3)), normal(rng, (3, 3, 3, 4)), normal(rng, (2, 5, 5, 4))), "accum")
prog("conv-grad-kernel-depthwise", lambda x, w, g: jax.vjp(
    lambda k: lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                       feature_group_count=3), w)[1](g)[0],
    lambda rng: (normal(rng, (2, 5, 5, 3)), normal(rng, (3, 3, 1, 3)), normal(rng, (2, 5, 5, 3))), "accum")
prog("conv-grad-input-strided", lambda x, w, g: jax.vjp(
    lambda y: lax.conv_general_dilated(y, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
    x)[1](g)[0],
    lambda rng: (normal(rng, (1, 6, 6, 2)), normal(rng, (3, 3, 2, 3)), normal(rng, (1, 3, 3, 3))), "accum")
prog("conv-bf16", _conv(("NHWC", "HWIO", "NHWC"), window_strides=(1, 1), padding="SAME"),
     lambda rng: (normal(rng, (1, 5, 5, 2), "bf16"), normal(rng, (3, 3, 2, 2), "bf16")), "accum", k=2)
prog("conv-f64", _conv(("NCHW", "OIHW", "NCHW"), window_strides=(1, 1), padding="SAME"),
     lambda rng: (normal(rng, (1, 2, 5, 5), "f64"), normal(rng, (2, 2, 3, 3), "f64")), "accum")
prog("conv-int8-to-int32", lambda x, w: lax.conv_general_dilated(
    x, w, (1,), "VALID", dimension_numbers=("NWC", "WIO", "NWC"), preferred_element_type=jnp.int32),
    lambda rng: (values(rng, (1, 8, 3), "s8"), values(rng, (3, 3, 2), "s8")))

# ---------------------------------------------------------------- sort / top_k

prog("sort-f32-nan", jnp.sort, _a((40,)))
prog("sort-s32-axis0", lambda x: jnp.sort(x, axis=0), _a((9, 4), "s32"))
prog("sort-descending-f32", lambda x: jnp.sort(x, descending=True), _a((3, 13)))
prog("sort-bf16", jnp.sort, _a((25,), "bf16"))
prog("sort-u64", jnp.sort, _a((25,), "u64"))
prog("argsort-stable-dups", lambda x: jnp.argsort(x, stable=True), lambda rng: (rng.integers(0, 4, 30).astype(np.int32),))
prog("argsort-f32-nan", lambda x: jnp.argsort(x, stable=True), _a((20,)))
prog("sort-multi-operand", lambda k, v, w: lax.sort((k, v, w), num_keys=1, is_stable=True),
     lambda rng: (rng.integers(0, 5, 20).astype(np.int32), values(rng, (20,), "f32"), values(rng, (20,), "u8")))
prog("sort-two-keys", lambda k1, k2, v: lax.sort((k1, k2, v), num_keys=2, is_stable=True),
     lambda rng: (rng.integers(0, 3, 24).astype(np.int32), rng.integers(0, 3, 24).astype(np.int8),
                  np.arange(24, dtype=np.int32)))
prog("top_k-f32", lambda x: lax.top_k(x, 4), _a((3, 10)))
prog("top_k-s32-ties", lambda x: lax.top_k(x, 5), lambda rng: (rng.integers(0, 3, 12).astype(np.int32),))
prog("top_k-rows-special-f32", lambda x: lax.top_k(x, 7), _a((24, 300)))
prog("top_k-smallest-ties-s32", lambda x: lax.top_k(-x, 9), lambda rng: (rng.integers(-3, 3, (16, 200)).astype(np.int32),))
prog("sort-complex", jnp.sort, lambda rng: (values(rng, (10,), "c64", special=False),))

# ---------------------------------------------------------------- control flow

prog("while-fori-sum", lambda x: lax.fori_loop(0, 10, lambda i, c: c * 0.5 + i, x), _a((4,)), "elem")
prog("while-dynamic-trip", lambda n, x: lax.while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1, s[1] * 2 + 1), (0, x))[1],
     lambda rng: (np.int32(5), values(rng, (3,), "s32")))
prog("while-collatz", lambda n: lax.while_loop(lambda s: s[0] != 1, lambda s: (
    lax.select(s[0] % 2 == 0, s[0] // 2, 3 * s[0] + 1), s[1] + 1), (n, 0)),
    lambda rng: (np.int64(27),))
prog("cond-pred", lambda p, x: lax.cond(p, lambda v: v * 2, lambda v: v - 1, x),
     lambda rng: (np.bool_(False), values(rng, (4,), "f32")))
prog("cond-pred-true", lambda p, x: lax.cond(p, lambda v: jnp.sin(v), lambda v: v - 1, x),
     lambda rng: (np.bool_(True), values(rng, (4,), "f32")), "elem")
for _i in [-3, 0, 1, 2, 7]:
    prog(f"switch-index-{_i}", lambda i, x: lax.switch(i, [lambda v: v + 1, lambda v: v * 3, lambda v: -v], x),
         lambda rng, i=_i: (np.int32(i), values(rng, (4,), "s32")))
prog("scan-cumsum-carry", lambda x: lax.scan(lambda c, v: (c + v, c * v), 0.0, x),
     lambda rng: (normal(rng, (12,)),), "accum")
prog("scan-reverse-unroll", lambda x: lax.scan(lambda c, v: (c * 0.9 + v, c), jnp.zeros(3, jnp.float32), x,
                                               reverse=True, unroll=2),
     lambda rng: (normal(rng, (7, 3)),), "accum")
prog("map-rows", lambda x: lax.map(lambda r: jnp.sort(r)[::-1], x), _a((5, 6)))
prog("nested-while-cond", lambda x: lax.fori_loop(0, 4, lambda i, c: lax.cond(i % 2 == 0, lambda v: v + i,
                                                                              lambda v: v * 2, c), x),
     _a((3,), "s32"))

# Loops of many small steps (issue 12: frames, operand slices, storage and the
# scalar counter ops reused from step to step must not change a value).
prog("while-many-steps-small", lambda x: lax.fori_loop(0, 3000, lambda i, c: c * 0.999 + jnp.maximum(c, 0.25) * 1e-3, x),
     lambda rng: (normal(rng, (16,)),))
prog("while-counter-u32-wrap", lambda x: lax.fori_loop(jnp.uint32(4294967000), jnp.uint32(4294967295),
                                                       lambda i, c: c ^ (i * jnp.uint32(2654435761)), x),
     _a((4,), "u32"))
prog("while-counter-s32-scaled", lambda x: lax.fori_loop(0, 500, lambda i, c: c + (i * 7 - 3) % 11 + jnp.minimum(i, 200), x),
     _a((4,), "s32"))
prog("while-swap-carry", lambda x, y: lax.fori_loop(0, 301, lambda i, c: (c[1], (c[0] + 3.0) * 3.0, c[2]), (x, y, x)),
     lambda rng: (normal(rng, (2048,)) * 1e-3, normal(rng, (2048,)) * 1e-3))
prog("scan-stacked-and-passthrough", lambda xs, w: lax.scan(lambda c, x: ((c[0] * 0.5 + x * w, c[1]), (c[0], x * 2.0)),
                                                            (w, w * 3.0), xs),
     lambda rng: (normal(rng, (400, 32)), normal(rng, (32,))))
prog("nested-fori-small", lambda x: lax.fori_loop(0, 40, lambda i, c: lax.fori_loop(
    i, 45, lambda j, d: d * 0.75 + (j - i).astype(jnp.float32), c), x), lambda rng: (normal(rng, (8,)),))

# ---------------------------------------------------------------- random


def _wrap(k, impl=None):
    return jax.random.wrap_key_data(k, impl=impl) if impl else jax.random.wrap_key_data(k)


for _impl, _kshape in [(None, 2), ("rbg", 4), ("unsafe_rbg", 4)]:
    _iname = _impl or "threefry"
    _key = lambda rng, n=_kshape: (np.arange(1, n + 1, dtype=np.uint32) * np.uint32(2654435761),)  # noqa: E731
    prog(f"random-bits-u32-{_iname}", lambda k, i=_impl: jax.random.bits(_wrap(k, i), (5, 7), jnp.uint32),
         _key, tags=("rng",))
    prog(f"random-bits-u8-{_iname}", lambda k, i=_impl: jax.random.bits(_wrap(k, i), (9,), jnp.uint8), _key,
         tags=("rng",))
    prog(f"random-bits-u64-{_iname}", lambda k, i=_impl: jax.random.bits(_wrap(k, i), (3, 2), jnp.uint64), _key,
         tags=("rng",))
    prog(f"random-uniform-{_iname}", lambda k, i=_impl: jax.random.uniform(_wrap(k, i), (4, 5)), _key,
         tags=("rng",))
    prog(f"random-normal-{_iname}", lambda k, i=_impl: jax.random.normal(_wrap(k, i), (4, 5)), _key, "elem", k=4,
         tags=("rng",))
    prog(f"random-split-{_iname}", lambda k, i=_impl: jax.random.key_data(jax.random.split(_wrap(k, i), 3)), _key,
         tags=("rng",))
prog("random-categorical", lambda k, l: jax.random.categorical(_wrap(k), l, axis=-1, shape=(6, 3)),
     lambda rng: (np.array([7, 9], np.uint32), normal(rng, (3, 5))), tags=("rng",))
prog("random-permutation", lambda k: jax.random.permutation(_wrap(k), 16), lambda rng: (np.array([3, 1], np.uint32),),
     tags=("rng",))
prog("random-randint", lambda k: jax.random.randint(_wrap(k), (20,), -5, 17), lambda rng: (np.array([5, 5], np.uint32),),
     tags=("rng",))
prog("random-bernoulli-fold_in", lambda k: jax.random.bernoulli(jax.random.fold_in(_wrap(k), 7), 0.3, (16,)),
     lambda rng: (np.array([0, 1], np.uint32),), tags=("rng",))
for _alg in ["RNG_DEFAULT", "RNG_THREE_FRY", "RNG_PHILOX"]:
    for _dt, _shape in [("u32", (4, 6)), ("u64", (5,)), ("u8", (3, 4)), ("u32", (7,))]:
        prog(f"rng_bit_generator-{_alg}-{_dt}-{'x'.join(map(str, _shape))}",
             lambda k, a=_alg, dt=_dt, s=_shape: lax.rng_bit_generator(k, s, dtype=DT[dt],
                                                                       algorithm=getattr(lax.RandomAlgorithm, a)),
             lambda rng: (np.array([0x0123456789ABCDEF, 42], np.uint64),), tags=("rng",))

# ---------------------------------------------------------------- fft

prog("fft-c64", jnp.fft.fft, lambda rng: (values(rng, (3, 16), "c64", special=False),), "accum")
prog("fft-c64-odd", jnp.fft.fft, lambda rng: (values(rng, (12,), "c64", special=False),), "accum")
prog("ifft-c128", jnp.fft.ifft, lambda rng: (values(rng, (8,), "c128", special=False),), "accum")
prog("rfft-f32", jnp.fft.rfft, lambda rng: (normal(rng, (2, 16)),), "accum")
prog("irfft-c64", lambda z: jnp.fft.irfft(z, n=14), lambda rng: (values(rng, (8,), "c64", special=False),), "accum")
prog("fft2-c64", jnp.fft.fft2, lambda rng: (values(rng, (4, 8), "c64", special=False),), "accum")
prog("fftn-3d-c64", jnp.fft.fftn, lambda rng: (values(rng, (2, 4, 6), "c64", special=False),), "accum")
prog("rfft2-f64", jnp.fft.rfft2, lambda rng: (normal(rng, (6, 8), "f64"),), "accum")

# ---------------------------------------------------------------- linalg (lapack custom calls)


def _spd(rng, n, dt="f32"):
    a = rng.standard_normal((n, n))
    return (a @ a.T + n * np.eye(n)).astype(DT[dt])


prog("linalg-cholesky-f32", jnp.linalg.cholesky, lambda rng: (_spd(rng, 5),), "accum", k=4)
prog("linalg-cholesky-f64", jnp.linalg.cholesky, lambda rng: (_spd(rng, 4, "f64"),), "accum")
prog("linalg-triangular_solve", lambda a, b: lax.linalg.triangular_solve(a, b, left_side=True, lower=True),
     lambda rng: (np.tril(normal(rng, (4, 4))) + 4 * np.eye(4, dtype=np.float32), normal(rng, (4, 3))), "accum", k=4)
prog("linalg-qr-reconstruct", lambda a: (lambda q, r: (q @ r, jnp.abs(jnp.diag(r))))(*jnp.linalg.qr(a)),
     lambda rng: (normal(rng, (5, 4)),), "accum", k=8)
prog("linalg-eigh-values", lambda a: jnp.linalg.eigh(a)[0], lambda rng: (_spd(rng, 5),), "accum", k=8)
prog("linalg-svd-values", lambda a: jnp.linalg.svd(a, compute_uv=False), lambda rng: (normal(rng, (5, 3)),), "accum",
     k=8)
prog("linalg-inv", jnp.linalg.inv, lambda rng: (_spd(rng, 4),), "accum", k=8)
prog("linalg-solve-lu", jnp.linalg.solve, lambda rng: (normal(rng, (4, 4)) + 4 * np.eye(4, dtype=np.float32),
                                                       normal(rng, (4, 2))), "accum", k=8)

# ---------------------------------------------------------------- model blocks


def _attention(q, k, v):
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(q.shape[-1]).astype(np.float32)
    mask = jnp.tril(jnp.ones((q.shape[1], k.shape[1]), bool))
    s = jnp.where(mask, s, -1e9)
    return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, axis=-1), v)


prog("model-attention", _attention, lambda rng: tuple(normal(rng, (2, 8, 2, 16)) for _ in range(3)), "accum", k=4)
prog("model-attention-bf16", _attention,
     lambda rng: tuple(normal(rng, (1, 8, 2, 16), "bf16") for _ in range(3)), "accum", k=4)


def _mlp(params, x):
    w1, b1, w2, b2 = params
    return jax.nn.gelu(x @ w1 + b1) @ w2 + b2


def _mlp_params(rng):
    return (normal(rng, (16, 32), scale=0.3), normal(rng, (32,)), normal(rng, (32, 8), scale=0.3), normal(rng, (8,)))


prog("model-mlp-forward", lambda w1, b1, w2, b2, x: _mlp((w1, b1, w2, b2), x),
     lambda rng: (*_mlp_params(rng), normal(rng, (4, 16))), "accum", k=4)
prog("model-mlp-grad", lambda w1, b1, w2, b2, x, y: jax.grad(
    lambda p: jnp.mean((_mlp(p, x) - y) ** 2))((w1, b1, w2, b2)),
    lambda rng: (*_mlp_params(rng), normal(rng, (4, 16)), normal(rng, (4, 8))), "accum", k=8)


def _cnn(w1, w2, x):
    y = lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    y = _maxpool(jax.nn.relu(y))
    y = lax.conv_general_dilated(y, w2, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jnp.mean(y, axis=(1, 2))


prog("model-cnn", _cnn, lambda rng: (normal(rng, (3, 3, 1, 4), scale=0.5), normal(rng, (2, 2, 4, 3), scale=0.5),
                                     normal(rng, (2, 8, 8, 1))), "accum", k=4)
prog("model-cnn-grad", lambda w1, w2, x: jax.grad(lambda a, b: jnp.sum(_cnn(a, b, x) ** 2), argnums=(0, 1))(w1, w2),
     lambda rng: (normal(rng, (3, 3, 1, 4), scale=0.5), normal(rng, (2, 2, 4, 3), scale=0.5),
                  normal(rng, (2, 8, 8, 1))), "accum", k=8)


def _layernorm(x, g):
    m = jnp.mean(x, -1, keepdims=True)
    v = jnp.mean((x - m) ** 2, -1, keepdims=True)
    return (x - m) * lax.rsqrt(v + 1e-5) * g


def _transformer(x, wq, wk, wv, wo, w1, w2, g):
    h = _layernorm(x, g)
    b, t, d = x.shape
    q, k, v = (jnp.reshape(h @ w, (b, t, 2, d // 2)) for w in (wq, wk, wv))
    x = x + jnp.reshape(_attention(q, k, v), (b, t, d)) @ wo
    return x + jax.nn.relu(_layernorm(x, g) @ w1) @ w2


prog("model-transformer-layer", _transformer,
     lambda rng: (normal(rng, (2, 8, 16)), *(normal(rng, (16, 16), scale=0.25) for _ in range(4)),
                  normal(rng, (16, 32), scale=0.25), normal(rng, (32, 16), scale=0.25), 1 + normal(rng, (16,), scale=0.1)),
     "accum", k=8)


def _rnn(wx, wh, xs):
    def step(h, x):
        h = jnp.tanh(x @ wx + h @ wh)
        return h, h
    return lax.scan(step, jnp.zeros(wh.shape[0], jnp.float32), xs)


prog("model-rnn-scan", _rnn, lambda rng: (normal(rng, (4, 6), scale=0.5), normal(rng, (6, 6), scale=0.5),
                                          normal(rng, (10, 4))), "accum", k=8)


def _int8_matmul(x, w, sx, sw):
    qx = jnp.clip(jnp.round(x / sx), -127, 127).astype(jnp.int8)
    acc = lax.dot(qx, w, preferred_element_type=jnp.int32)
    return acc.astype(jnp.float32) * (sx * sw)


prog("model-int8-matmul", _int8_matmul, lambda rng: (normal(rng, (4, 16)), values(rng, (16, 8), "s8"),
                                                     np.float32(0.05), np.float32(0.01)), "accum")


def _fp8_matmul(x, w):
    xs = jnp.max(jnp.abs(x)) / 448.0
    q = (x / xs).astype(ml_dtypes.float8_e4m3fn)
    return lax.dot(q, w, preferred_element_type=jnp.float32) * xs


prog("model-fp8-matmul", _fp8_matmul, lambda rng: (normal(rng, (4, 16)), normal(rng, (16, 8), "f8e4m3fn")), "accum",
     k=4)
prog("model-dropout", lambda k, x: jnp.where(jax.random.bernoulli(_wrap(k), 0.8, x.shape), x / 0.8, 0.0),
     lambda rng: (np.array([1, 2], np.uint32), normal(rng, (6, 8))), "accum", tags=("rng",))
prog("model-sample-gumbel", lambda k, logits: jnp.argmax(logits - jnp.log(-jnp.log(
    jax.random.uniform(_wrap(k), logits.shape, minval=1e-6, maxval=1.0))), axis=-1),
    lambda rng: (np.array([4, 2], np.uint32), normal(rng, (5, 9))), tags=("rng",))


# ---------------------------------------------------------------- more compositions

for _name, _fn, _init in [("xor", lax.bitwise_xor, 0), ("and", lax.bitwise_and, -1), ("or", lax.bitwise_or, 0)]:
    prog(f"reduce-bitwise-{_name}-u32", lambda x, f=_fn, i=_init: lax.reduce(x, np.uint32(i & 0xFFFFFFFF), f, (1,)),
         _a((5, 9), "u32"))
prog("reduce-sum-c64", lambda z: jnp.sum(z, axis=0), lambda rng: (values(rng, (7, 3), "c64", special=False),), "accum")
prog("reduce-max-f16", lambda x: jnp.max(x, axis=-1), _a((4, 9), "f16"))
for _dt in ["bf16", "f16"]:
    for _e, _m in [(5, 2), (4, 3), (8, 3)]:
        prog(f"reduce_precision-e{_e}m{_m}-{_dt}", lambda x, e=_e, m=_m: lax.reduce_precision(x, e, m),
             lambda rng, dt=_dt: (floats(rng, (64,), dt, -300, 300),))
prog("nn-gelu-exact", lambda x: jax.nn.gelu(x, approximate=False), lambda rng: (normal(rng, (32,), scale=3),), "elem",
     k=2)
# x/2*(1+tanh(.)) cancels for negative x: an ulp of tanh is an absolute error of the
# order eps*|x|, so judge it against the output scale ("accum").
prog("nn-gelu-tanh", jax.nn.gelu, lambda rng: (normal(rng, (32,), scale=3),), "accum", k=2)
prog("nn-silu-softplus", lambda x: (jax.nn.silu(x), jax.nn.softplus(x)), lambda rng: (normal(rng, (32,), scale=5),),
     "elem", k=2)
prog("einsum-three-operands", lambda a, b, c: jnp.einsum("ij,jk,kl->il", a, b, c),
     lambda rng: (normal(rng, (3, 4)), normal(rng, (4, 5)), normal(rng, (5, 2))), "accum")
prog("dot-s64", jnp.matmul, lambda rng: (values(rng, (3, 4), "s64"), values(rng, (4, 2), "s64")))
prog("conv-f16", _conv(("NHWC", "HWIO", "NHWC"), window_strides=(1, 1), padding="SAME"),
     lambda rng: (normal(rng, (1, 4, 4, 2), "f16"), normal(rng, (3, 3, 2, 2), "f16")), "accum", k=2)
prog("dynamic_slice-u32-index", lambda x, i: lax.dynamic_slice(x, (i,), (3,)),
     lambda rng: (values(rng, (8,), "f32"), np.uint32(4000000000)))
prog("dynamic_slice-s8-index", lambda x, i: lax.dynamic_slice(x, (i, i), (2, 2)),
     lambda rng: (values(rng, (5, 5), "s32"), np.int8(-100)))
prog("top_k-bf16", lambda x: lax.top_k(x, 3), _a((2, 9), "bf16"))
prog("sort-descending-nan-f64", lambda x: jnp.sort(x, descending=True), _a((20,), "f64"))
prog("roll-tile-repeat", lambda x: (jnp.roll(x, 3, axis=1), jnp.tile(x, (2, 1)), jnp.repeat(x, 2, axis=0)),
     _a((3, 5), "s32"))
prog("tril-eye", lambda x: jnp.tril(x) + jnp.eye(4, 5, k=1, dtype=x.dtype), _a((4, 5)))
prog("searchsorted", lambda a, v: jnp.searchsorted(a, v), lambda rng: (np.sort(normal(rng, (16,))), normal(rng, (7,))))
prog("cond-tuple-mixed", lambda p, x, i: lax.cond(p, lambda a, b: (a * 2, b + 1), lambda a, b: (a - 1, b * 3), x, i),
     lambda rng: (np.bool_(True), values(rng, (3,), "f32"), values(rng, (2,), "s8")))
prog("while-mixed-carry", lambda x, n: lax.while_loop(
    lambda c: c[2] < n, lambda c: (c[0] * 1.5, c[1] ^ jnp.uint8(0x5A), c[2] + 1), (x, jnp.uint8(3), jnp.int32(0))),
    lambda rng: (values(rng, (2,), "bf16", special=False), np.int32(4)))
prog("linalg-det-f64", jnp.linalg.det, lambda rng: (normal(rng, (4, 4), "f64"),), "accum", k=8)
prog("linalg-inv-c64", jnp.linalg.inv,
     lambda rng: ((normal(rng, (3, 3)) + 1j * normal(rng, (3, 3)) + 3 * np.eye(3)).astype(np.complex64),), "accum", k=8)
def _herm(rng, n):
    a = normal(rng, (n, n)) + 1j * normal(rng, (n, n))
    return (a @ a.conj().T + n * np.eye(n)).astype(np.complex64)


prog("linalg-eigh-c64-values", lambda a: jnp.linalg.eigh(a)[0], lambda rng: (_herm(rng, 4),), "accum", k=8)
prog("linalg-svd-c64-values", lambda a: jnp.linalg.svd(a, compute_uv=False), lambda rng: (_herm(rng, 3),), "accum", k=8)
prog("linalg-svd-reconstruct-f64", lambda a: (lambda u, s, vt: (u * s) @ vt)(*jnp.linalg.svd(a, full_matrices=False)),
     lambda rng: (normal(rng, (5, 3), "f64"),), "accum", k=8)
prog("linalg-cholesky-solve", lambda a, b: jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(a), b),
     lambda rng: (_spd(rng, 4), normal(rng, (4, 2))), "accum", k=8)
prog("random-gamma", lambda k: jax.random.gamma(_wrap(k), np.float32(2.5), (6,)),
     lambda rng: (np.array([11, 12], np.uint32),), "elem", k=16, tags=("rng",))
prog("random-choice-no-replace", lambda k: jax.random.choice(_wrap(k), 20, (5,), replace=False),
     lambda rng: (np.array([5, 6], np.uint32),), tags=("rng",))
prog("random-truncated-normal", lambda k: jax.random.truncated_normal(_wrap(k), -1.0, 2.0, (8,)),
     lambda rng: (np.array([8, 9], np.uint32),), "elem", k=8, tags=("rng",))
prog("random-bits-rbg-bf16-uniform", lambda k: jax.random.uniform(_wrap(k, "rbg"), (6,), dtype=jnp.bfloat16),
     lambda rng: (np.array([1, 2, 3, 4], np.uint32),), tags=("rng",))

# ---------------------------------------------------------------- multiply-add contraction

# jax traces a repeated Python expression once per use; XLA's CSE merges the
# copies, so each product has one use again and contracts into an FMA.
prog("fma-repeated-expression", lambda m, g: (0.9 * m + 0.1 * g, 0.9 * m + 0.1 * g),
     lambda rng: (normal(rng, (64, 64)), normal(rng, (64, 64))))
prog("fma-repeated-expression-reused", lambda m, g: ((0.9 * m + 0.1 * g) * 3.0, 0.9 * m + 0.1 * g),
     lambda rng: (normal(rng, (64, 64)), normal(rng, (64, 64))))
prog("fma-adam-update", lambda p, g, m, v: (p - 1e-3 * (0.9 * m + 0.1 * g) / (jnp.sqrt(0.999 * v + 0.001 * g * g) + 1e-8),
                                            0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g),
     lambda rng: (normal(rng, (64, 64)), normal(rng, (64, 64)), normal(rng, (64, 64)), jnp.abs(normal(rng, (64, 64)))))

# A GRU's update (1 - z) * h + z * hh, z a sigmoid jax traces twice (CSE merges the copies,
# so the second's loads rank as the first's) and hh a tanh: LLVM ranks z * tanh(.) lower (the
# tanh's inlined chain is shorter than the exp's under z), and that product is the one fused.
prog("fma-gru-update-repeated-sigmoid",
     lambda x, w, h, u, hh: (1 - jax.nn.sigmoid(x @ w + h @ u)) * h + jax.nn.sigmoid(x @ w + h @ u) * hh,
     lambda rng: (normal(rng, (32, 128)), normal(rng, (128, 256), scale=0.1), normal(rng, (32, 256)),
                  normal(rng, (256, 256), scale=0.1), normal(rng, (32, 256))))
prog("fma-gru-update-tanh",
     lambda a, b, c, d, h: (1 - jax.nn.sigmoid(a + b)) * h + jax.nn.sigmoid(a + b) * jnp.tanh(c + d),
     lambda rng: tuple(normal(rng, (32, 256)) for _ in range(5)))

# The tanh-approximate gelu's backward (every MLP's training step): ranking an add whose
# operand is an add contracted already counts that FMA as the multiply and the add LLVM still
# sees when it ranks (treated as a load, it ranked low and the other product was fused: 35% of
# elements differed).
prog("fma-gelu-tanh-vjp", lambda a, c: jax.vjp(jax.nn.gelu, a)[1](c)[0],
     lambda rng: (normal(rng, (64, 256)), normal(rng, (64, 256))))

# A negated product in an add (golden/xla_rewrites.go negatedProduct): with a negative constant
# factor the sign moves into it and the two products rank as usual (the exact gelu's backward,
# 20% of elements differed); otherwise the add is other - P, fusing other when it is a product.
prog("fma-gelu-erf-vjp", lambda a, c: jax.vjp(lambda x: jax.nn.gelu(x, approximate=False), a)[1](c)[0],
     lambda rng: (normal(rng, (64, 256)), normal(rng, (64, 256))))
prog("fma-negated-product-plus-product", lambda a, b, c, d: (-(a * b * 0.7) + c * d, -(a * b) + c * jnp.exp(d)),
     lambda rng: tuple(normal(rng, (64, 256)) for _ in range(4)))
prog("fma-negated-product-plus-value", lambda a, b, c, d: (-(a * b) + c, d + -(c * b * 0.7), -(a * jnp.exp(d) * 0.7) + c * 0.5),
     lambda rng: tuple(normal(rng, (64, 256)) for _ in range(4)))

# Layer norm and batch norm backward: a product both summed by a YNNPACK reduce and added into
# the gradient is materialized for the reduce and copied into the loop fusion, where it has one
# use and contracts (golden/xla_rewrites.go copiedForLoop; 23-40% of elements differed).
def _ln(x, g, b, var=False):
    m = x.mean(-1, keepdims=True)
    v = x.var(-1, keepdims=True) if var else ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b


prog("fma-layernorm-backward", jax.grad(lambda x, g, b: jnp.sum(_ln(x, g, b) ** 2)),
     lambda rng: (normal(rng, (64, 1024)), normal(rng, (1024,)), normal(rng, (1024,))))
prog("fma-layernorm-var-backward", jax.grad(lambda x, g, b: jnp.sum(_ln(x, g, b, var=True))),
     lambda rng: (normal(rng, (64, 1024)), normal(rng, (1024,)), normal(rng, (1024,))))
prog("fma-batchnorm-backward", jax.grad(lambda x, g, b: jnp.sum(((x - x.mean((0, 1, 2))) * jax.lax.rsqrt(
    x.var((0, 1, 2)) + 1e-5) * g + b) ** 2)),
     lambda rng: (normal(rng, (4, 16, 16, 64)), normal(rng, (64,)), normal(rng, (64,))))

# jnp.var divides in a select on n > ddof, a constant predicate XLA folds away: var + eps then
# contracts the 1/n product into an FMA (batch norm's rsqrt(var + eps)).
prog("fma-var-plus-eps", lambda x: jnp.var(x, 0) + 1e-5, lambda rng: (normal(rng, (96, 256)),))

# YNNPACK's sum(a*b) -> dot rewrite (golden/ynn_sum_dot.go): top-2 routing's weighted sum of
# the selected experts is one FMA chain over k per element.
prog("ynn-sum-dot-moe-k2", lambda o, w: jnp.sum(o * w[:, :, None], 1),
     lambda rng: (normal(rng, (512, 2, 64)), normal(rng, (512, 2))))
prog("ynn-sum-dot-k16", lambda o, w: jnp.sum(o * w[:, :, None], 1),
     lambda rng: (normal(rng, (64, 16, 128)), normal(rng, (64, 16))))

# ---------------------------------------------------------------- compares converted to numbers
# A compare whose only use converts it to a number (one_hot, relu masks) ends a fused group;
# shapes span several fusion blocks.


def _labels(rng, n, classes):
    return rng.integers(0, classes, (n,)).astype(np.int32)


def _with_subnormals(rng, x):
    return np.where(rng.random(x.shape) < 0.1, np.float32(1e-40) * np.sign(x), x).astype(x.dtype)


prog("onehot-xent-f32", lambda x, l: -(jax.nn.log_softmax(x) * jax.nn.one_hot(l, 100, dtype=jnp.float32)).sum(-1).mean(),
     lambda rng: (normal(rng, (300, 100)), _labels(rng, 300, 100)), "accum")
prog("onehot-xent-grad-f32", jax.grad(lambda x, l: -(jax.nn.log_softmax(x) * jax.nn.one_hot(l, 100, dtype=jnp.float32)).sum()),
     lambda rng: (normal(rng, (300, 100)), _labels(rng, 300, 100)), "accum")
prog("onehot-times-bf16", lambda x, l: x * jax.nn.one_hot(l, 100, dtype=jnp.bfloat16),
     lambda rng: (normal(rng, (300, 100), "bf16"), _labels(rng, 300, 100)))
prog("onehot-s32-counts", lambda a, b: (a[:, None] == b[None, :]).astype(jnp.int32) * 3 + 1,
     lambda rng: (_labels(rng, 200, 7), _labels(rng, 150, 7)))
prog("relu-mask-f32-subnormal", lambda x, g: (x > 0).astype(jnp.float32) * g,
     lambda rng: (_with_subnormals(rng, normal(rng, (60, 100))), normal(rng, (60, 100))))
prog("mask-lt-f16", lambda x, y: (x < 0.5).astype(jnp.float16) + y,
     lambda rng: (normal(rng, (70, 90), "f16"), normal(rng, (70, 90), "f16")))
prog("mask-gt-s8", lambda x: (x > 0).astype(jnp.int8), lambda rng: (normal(rng, (50, 100)),))
# XLA rewrites A * convert(P) to select(P, A, 0) for f32/f16/f64/integer products (+0, never
# NaN, where P is false), not for bf16 (computed in f32) nor through a broadcast of the convert.
def _specials(rng, shape, dt="f32"):
    x = normal(rng, shape, dt)
    flat = x.reshape(-1)
    flat[::7] = np.inf
    flat[3::11] = -np.inf
    flat[5::13] = np.nan
    return x


prog("mask-times-specials-f32", lambda x, g: g * (x > 0).astype(jnp.float32),
     lambda rng: (normal(rng, (40, 64)), _specials(rng, (40, 64))))
prog("mask-times-specials-f16", lambda x, g: (x < 0).astype(jnp.float16) * g,
     lambda rng: (normal(rng, (40, 64), "f16"), _specials(rng, (40, 64), "f16")))
prog("mask-times-specials-bf16", lambda x, g: g * (x > 0).astype(jnp.bfloat16),
     lambda rng: (normal(rng, (40, 64), "bf16"), _specials(rng, (40, 64), "bf16")))
prog("mask-broadcast-times-f32", lambda x, g: g * (x[:1] > 0).astype(jnp.float32),
     lambda rng: (normal(rng, (40, 64)), _specials(rng, (40, 64))))
prog("mask-times-f64", lambda x, g: g * (x > 0).astype(jnp.float64),
     lambda rng: (normal(rng, (40, 64), "f64"), _specials(rng, (40, 64), "f64")))
prog("mask-output-pred-s32", lambda a, b: a[:, None] < b[None, :],
     lambda rng: (_labels(rng, 200, 50), _labels(rng, 120, 50)))
prog("mask-select-other-type", lambda a, b, x: jnp.where(a[:, None] == b[None, :], x, -x),
     lambda rng: (_labels(rng, 200, 9), _labels(rng, 120, 9), normal(rng, (200, 120))))
prog("mask-ne-bf16-compare", lambda x, y: (x != y).astype(jnp.float32),
     lambda rng: (normal(rng, (40, 120), "bf16"), normal(rng, (40, 120), "bf16")))

# real and imag keep a part's bits, signaling NaN payloads included.
prog("complex-real-imag-snan", lambda c: (jnp.real(c), jnp.imag(c)),
     lambda rng: (np.frombuffer(np.array([0x7f800001, 0x3f800000, 0x7fa00000, 0xff800123] * 600, np.uint32).tobytes(),
                                np.complex64).copy(),))

# ---------------------------------------------------------------- session cache

BY_ID = {p.id: p for p in PROGRAMS}
IDS = [p.id for p in PROGRAMS]


@functools.lru_cache(maxsize=None)
def inputs(pid):
    return BY_ID[pid].args()


@functools.lru_cache(maxsize=None)
def lowered(pid):
    return jax.jit(BY_ID[pid].fn, keep_unused=True).lower(*inputs(pid))


@functools.lru_cache(maxsize=None)
def compiled(pid):
    return lowered(pid).compile()


@functools.lru_cache(maxsize=None)
def expected(pid):
    """JAX's outputs on CPU, as numpy arrays (result leaves in order)."""
    out = compiled(pid)(*inputs(pid))
    return [np.asarray(a) for a in jax.tree_util.tree_leaves(out)]


@functools.lru_cache(maxsize=None)
def unopt_text(pid):
    return lowered(pid).as_text(dialect="hlo")


@functools.lru_cache(maxsize=None)
def opt_text(pid):
    return compiled(pid).as_text()


def in_avals(pid):
    return [(tuple(a.shape), np.dtype(a.dtype)) for a in jax.tree_util.tree_leaves(lowered(pid).in_avals)]


def out_avals(pid):
    return [(tuple(a.shape), np.dtype(a.dtype)) for a in jax.tree_util.tree_leaves(lowered(pid).out_info)]


if __name__ == "__main__":
    import sys
    import time

    bad = 0
    t0 = time.time()
    for p in PROGRAMS:
        try:
            expected(p.id)
            opt_text(p.id)
        except Exception as e:  # noqa: BLE001
            bad += 1
            print(f"{p.id}: {type(e).__name__}: {str(e).splitlines()[0][:200]}", file=sys.stderr)
    print(f"{len(PROGRAMS)} programs, {bad} failed in jax, {time.time() - t0:.1f}s")
