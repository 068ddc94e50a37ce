"""Builds small jax programs for the evaluator's differential tests.

Usage: gen_elementwise.py OUTDIR

For every case it writes OUTDIR/<name>.hlo (jax.jit(f).lower(...).as_text(
dialect="hlo")), raw little-endian input/output bytes computed by jax.jit on
CPU, and a manifest.json describing dtypes, shapes and the comparison mode:
"exact" (bit-exact, NaN payloads aside) or "approx" (a few ulp, for
transcendental math).
"""
import sys
import warnings

warnings.filterwarnings("ignore")
import jax  # noqa: E402
import jaxcases  # noqa: E402  (enables x64, pins jax to the CPU)
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

OUT = sys.argv[1]
RNG = np.random.default_rng(1234)
N = 48
cases = []

F_LOW = [ml_dtypes.bfloat16, np.float16]
F8 = [ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz]
FLOATS = [np.float32, np.float64] + F_LOW
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
COMPLEX = [np.complex64, np.complex128]


def floats(dt, n=N, scale=3.0, positive=False):
    dt = np.dtype(dt)
    fi = ml_dtypes.finfo(dt)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 1.5,
               float(fi.max), float(-fi.max), float(fi.smallest_subnormal), float(fi.tiny)]
    vals = np.concatenate([np.array(special), RNG.standard_normal(n - len(special)) * scale])
    if positive:
        vals = np.abs(vals)
    with np.errstate(all="ignore"):
        return vals.astype(np.float32).astype(dt) if dt.itemsize < 4 else vals.astype(dt)


def ints(dt, n=N):
    ii = np.iinfo(dt)
    special = [0, 1, ii.max, ii.min, ii.max - 1, 2, 3]
    if ii.min < 0:
        special += [-1, -2, ii.min + 1]
    r = RNG.integers(ii.min, ii.max, n - len(special), dtype=dt, endpoint=True)
    return np.concatenate([np.array(special, dtype=dt), r])


def small_ints(dt, n=N, hi=70):
    lo = 0 if np.iinfo(dt).min == 0 else -8
    return RNG.integers(lo, min(hi, np.iinfo(dt).max), n, dtype=dt)


def cplx(dt, n=N):
    f = np.float32 if dt == np.complex64 else np.float64
    re, im = floats(f, n, 2.0), floats(f, n, 2.0)
    re[:4], im[:4] = [0, 1, -1, 0.5], [0, 0.25, 2, -1]
    re, im = np.nan_to_num(re, nan=0.3, posinf=3, neginf=-3), np.nan_to_num(im, nan=0.3, posinf=3, neginf=-3)
    re, im = np.clip(re, -5, 5), np.clip(im, -5, 5)
    return (re + 1j * im).astype(dt)


def name_of(dt):
    return np.dtype(dt).name


def group(name, fns, args, mode="exact"):
    """One program computing every fn in fns (name -> f(*args)); fewer compiles."""
    keys = list(fns)
    add(name, lambda *a: tuple(fns[k](*a) for k in keys), args, mode, labels=keys)


def add(name, f, args, mode="exact", labels=None):
    name = name.replace("/", "_")
    cases.append(jaxcases.write_case(OUT, name, f, args, mode=mode, labels=labels or []))

def rsq(x):
    return x.reshape(6, 8)


EXACT_UNARY = {"abs": lax.abs, "neg": lax.neg, "sign": lax.sign, "floor": lax.floor, "ceil": lax.ceil,
               "round_afz": lambda x: lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO),
               "round_even": lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
               "sqrt": lax.sqrt, "is_finite": lax.is_finite}
APPROX_UNARY = {"exp": lax.exp, "expm1": lax.expm1, "log": lax.log, "log1p": lax.log1p, "sin": lax.sin,
                "cos": lax.cos, "tan": lax.tan, "tanh": lax.tanh, "logistic": lax.logistic,
                "rsqrt": lax.rsqrt, "cbrt": lax.cbrt, "erf": lax.erf, "atan2": None,
                "sinh": lax.sinh, "cosh": lax.cosh, "asin": lax.asin, "acos": lax.acos,
                "atanh": lax.atanh, "asinh": lax.asinh, "acosh": lax.acosh}
for dt in FLOATS:
    x = rsq(floats(dt))
    group(f"unary_{name_of(dt)}", EXACT_UNARY, [x])
    group(f"transcendental_{name_of(dt)}", {k: f for k, f in APPROX_UNARY.items() if f}, [x], "approx")
    y = rsq(floats(dt))
    group(f"binary_{name_of(dt)}", {"add": lax.add, "sub": lax.sub, "mul": lax.mul, "div": lax.div,
                                    "rem": lax.rem, "max": lax.max, "min": lax.min,
                                    **{f"cmp_{d}": getattr(lax, d) for d in ["eq", "ne", "lt", "le", "gt", "ge"]},
                                    "select": lambda a, b: lax.select(a > b, a, b)}, [x, y])
    group(f"binary_approx_{name_of(dt)}", {"pow": lax.pow, "atan2": lax.atan2}, [x, y], "approx")
    # Every pair of specials, subnormals among them: glibc's paths under DAZ
    # (atan2: NaN for two subnormals in f32, -pi for f64 (5e-324, -1); pow:
    # a subnormal base acts as 2^-150 / 2^-1075; rem: NaN for a subnormal
    # divisor, a subnormal dividend kept).
    fi = ml_dtypes.finfo(dt)
    sp = np.array([0.0, -0.0, float(fi.smallest_subnormal), -float(fi.smallest_subnormal), float(fi.tiny) / 2,
                   -float(fi.tiny) / 2, float(fi.tiny), 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 1e-30, -1e-30, 2.0 ** -120,
                   -(2.0 ** -120), 1e-300, -1e-300, np.inf, -np.inf, np.nan])
    with np.errstate(all="ignore"):
        sp = sp.astype(np.float32).astype(dt) if np.dtype(dt).itemsize < 4 else sp.astype(dt)
    gy, gx = np.meshgrid(sp, sp, indexing="ij")
    gy, gx = gy.ravel().copy(), gx.ravel().copy()
    group(f"specials_approx_{name_of(dt)}", {"atan2": lax.atan2, "pow": lax.pow}, [gy, gx], "approx")
    group(f"specials_exact_{name_of(dt)}", {"rem": lax.rem, "add": lax.add, "mul": lax.mul, "div": lax.div,
                                            "max": lax.max, "min": lax.min, "lt": lax.lt, "eq": lax.eq}, [gy, gx])
    group(f"zeros_{name_of(dt)}", {"max": lax.max, "min": lax.min},
          [np.array([0, -0.0, 0, -0.0], dt), np.array([-0.0, 0, 0, -0.0], dt)])
    group(f"misc_{name_of(dt)}", {"clamp": lambda a: lax.clamp(np.array(-1.5, dt), a, np.array(2.0, dt)),
                                  "rp_5_10": lambda a: lax.reduce_precision(a, 5, 10),
                                  "rp_4_2": lambda a: lax.reduce_precision(a, 4, 2),
                                  "rp_5_0": lambda a: lax.reduce_precision(a, 5, 0)}, [x])

# bf16 EQ/NE against a constant: folded to bit tests (subnormals kept) unless
# something reads the compare and the value together (then they flush).
xb = np.array([1e-40, -1e-40, 0, -0.0, 1, 2, 9.2e-41, -3e-39], ml_dtypes.bfloat16)
group("bf16_eq_const", {"ne": lambda a: a != 0, "astype_bool": lambda a: a.astype(bool),
                        "where_eq": lambda a: jnp.where(a == 0, 0, a), "where_ne": lambda a: jnp.where(a != 0, a, 7),
                        "sort": jnp.sort, "gt": lambda a: a > 0}, [xb])

# f8e8m0fnu computes in f32 (its range does not fit f16) and rounds once.
group("unary_float8_e8m0fnu", {"exp": lax.exp, "tanh": lax.tanh},
      [np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e8m0fnu)])

for dt in F8:
    x, y = rsq(floats(dt, scale=2)), rsq(floats(dt, scale=2))
    group(f"binary_{name_of(dt)}", {"add": lax.add, "mul": lax.mul, "div": lax.div, "max": lax.max,
                                    "neg": lambda a, b: -a, "abs": lambda a, b: lax.abs(a)}, [x, y])
    # exp computes in f32 (XLA's kernel, reproduced) and rounds to f8 once: bit-exact.
    add(f"exp_{name_of(dt)}", lax.exp, [x])

for dt in INTS:
    x, y = rsq(ints(dt)), rsq(ints(dt))
    group(f"binary_{name_of(dt)}", {"add": lax.add, "sub": lax.sub, "mul": lax.mul, "div": lax.div,
                                    "rem": lax.rem, "max": lax.max, "min": lax.min, "and": lax.bitwise_and,
                                    "or": lax.bitwise_or, "xor": lax.bitwise_xor,
                                    **{f"cmp_{d}": getattr(lax, d) for d in ["eq", "ne", "lt", "le", "gt", "ge"]}},
          [x, y])
    zeros = np.zeros_like(x)
    zeros[::2] = y[::2]
    group(f"div0_{name_of(dt)}", {"div": lax.div, "rem": lax.rem}, [x, zeros])
    if np.iinfo(dt).min < 0:
        mn = np.iinfo(dt).min
        add(f"divmin_{name_of(dt)}", lambda a, b: (lax.div(a, b), lax.rem(a, b)),
            [np.array([mn, mn, 7, -7], dt), np.array([-1, 1, -1, 2], dt)])
    s = rsq(small_ints(dt))
    group(f"shift_{name_of(dt)}", {"shl": lax.shift_left, "shra": lax.shift_right_arithmetic,
                                   "shrl": lax.shift_right_logical}, [x, s])
    signed_only = {"abs": lax.abs, "sign": lax.sign} if np.iinfo(dt).min < 0 else {}
    group(f"unary_{name_of(dt)}", {"neg": lax.neg, "not": lax.bitwise_not, **signed_only,
                                   "popcnt": lax.population_count, "clz": lax.clz,
                                   "clamp": lambda a: lax.clamp(np.array(-5 if np.iinfo(dt).min < 0 else 5, dt),
                                                                a, np.array(100, dt))}, [x])

for dt in [ml_dtypes.int4, ml_dtypes.uint4]:
    ii = ml_dtypes.iinfo(dt)
    x = np.arange(ii.min, ii.max + 1).astype(dt)
    y = np.roll(x, 3)
    group(f"binary_{name_of(dt)}", {"add": lax.add, "mul": lax.mul, "div": lax.div, "rem": lax.rem,
                                    "max": lax.max, "xor": lax.bitwise_xor, "shl": lax.shift_left,
                                    "shrl": lax.shift_right_logical, "shra": lax.shift_right_arithmetic,
                                    "neg": lambda a, b: -a, "not": lambda a, b: ~a,
                                    "popcnt": lambda a, b: lax.population_count(a),
                                    "clz": lambda a, b: lax.clz(a)}, [x, y])

p, q = RNG.integers(0, 2, N).astype(bool), RNG.integers(0, 2, N).astype(bool)
group("binary_bool", {"and": lax.bitwise_and, "or": lax.bitwise_or, "xor": lax.bitwise_xor,
                      "not": lambda a, b: ~a, "eq": lax.eq, "lt": lax.lt, "max": lax.max}, [p, q])

for dt in COMPLEX:
    x, y = rsq(cplx(dt)), rsq(cplx(dt))
    group(f"binary_{name_of(dt)}", {"add": lax.add, "sub": lax.sub, "mul": lax.mul,
                                    "neg": lambda a, b: -a, "real": lambda a, b: lax.real(a),
                                    "imag": lambda a, b: lax.imag(a), "eq": lax.eq, "ne": lax.ne}, [x, y])
    group(f"approx_{name_of(dt)}", {"div": lax.div, "pow": lax.pow,
                                    **{k: (lambda f: lambda a, b: f(a))(f) for k, f in {
                                        "abs": lax.abs, "exp": lax.exp, "log": lax.log, "sqrt": lax.sqrt,
                                        "rsqrt": lax.rsqrt, "tanh": lax.tanh, "sin": lax.sin, "cos": lax.cos,
                                        "expm1": lax.expm1, "log1p": lax.log1p, "sign": lax.sign,
                                        "tan": lax.tan}.items()}}, [x, y], "approx")
    add(f"complex_{name_of(dt)}", lax.complex, [np.real(x).copy(), np.imag(x).copy()])

# convert between every pair of a representative set of types.
CONV = [np.bool_, np.int8, np.int32, np.int64, np.uint8, np.uint32, np.uint64, ml_dtypes.int4,
        np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.complex64,
        ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e3m4,
        ml_dtypes.float4_e2m1fn]
for src in CONV:
    sd = np.dtype(src)
    if sd.kind == "b":
        x = RNG.integers(0, 2, N).astype(bool)
    elif sd.kind in "iu" or src in (ml_dtypes.int4,):
        x = ints(src) if src != ml_dtypes.int4 else np.arange(-8, 8).astype(src)
    elif sd.kind == "c":
        x = cplx(src)
    else:
        x = np.concatenate([floats(src, N, 3.0), floats(src, N, 300.0), floats(src, N, 1e-3 if sd.itemsize >= 2 else 0.1)])
    dsts = [d for d in CONV if d != src and not (np.dtype(d).kind == "c" and sd.kind not in "cf")
            and not (sd.kind == "c" and np.dtype(d).kind != "c")]
    if not dsts:
        continue
    group(f"convert_{name_of(src)}", {name_of(d): (lambda d: lambda a: lax.convert_element_type(a, d))(d)
                                      for d in dsts}, [x])
v32 = floats(np.float32).reshape(6, 8)
group("bitcast_f32", {"u8": lambda a: lax.bitcast_convert_type(a, np.uint8),
                      "s32": lambda a: lax.bitcast_convert_type(a, np.int32)}, [v32])
add("bitcast_u16_f32", lambda a: lax.bitcast_convert_type(a, np.float32), [ints(np.uint16).reshape(24, 2)])
add("bitcast_f64_bf16", lambda a: lax.bitcast_convert_type(a, ml_dtypes.bfloat16), [floats(np.float64)])

# Data movement, reductions and control flow.
m = RNG.standard_normal((4, 6)).astype(np.float32)
mi = RNG.integers(-100, 100, (4, 6)).astype(np.int32)
group("movement_f32", {
    "broadcast": lambda a, b: lax.broadcast_in_dim(a[:, 0], (4, 3, 6), (0,)),
    "reshape": lambda a, b: a.reshape(3, 8),
    "transpose": lambda a, b: a.T,
    "transpose3": lambda a, b: lax.transpose(a.reshape(2, 3, 4), (2, 0, 1)),
    "reverse": lambda a, b: lax.rev(a, (0, 1)),
    "slice": lambda a, b: lax.slice(a, (1, 0), (4, 6), (2, 3)),
    "dyn_slice": lambda a, b: lax.dynamic_slice(a, (b[0, 0], b[0, 1]), (2, 3)),
    "dyn_update": lambda a, b: lax.dynamic_update_slice(a, a[:2, :2] * 2, (b[1, 0], b[1, 1])),
    "pad": lambda a, b: lax.pad(a, np.float32(-1), ((1, 2, 1), (-1, 3, 0))),
    "pad_neg": lambda a, b: lax.pad(a, np.float32(7), ((-1, -2, 2), (2, -3, 1))),
    "concat": lambda a, b: jnp.concatenate([a, a * 2, a[:, :1]], axis=1),
    "iota": lambda a, b: lax.broadcasted_iota(np.int32, (3, 5), 1) + lax.broadcasted_iota(np.int32, (3, 5), 0),
    "iota_bf16": lambda a, b: lax.iota(ml_dtypes.bfloat16, 300),
}, [m, np.array([[1, 9], [-3, 4]], np.int32)])
group("reduce_exact", {
    "max": lambda a, b: lax.reduce_max(a, (1,)),
    "min0": lambda a, b: lax.reduce_min(a, (0,)),
    "isum": lambda a, b: lax.reduce_sum(b, (0, 1)),
    "imax": lambda a, b: lax.reduce_max(b, (0,)),
    "argmax": lambda a, b: jnp.argmax(a, axis=1),
    "maxpool": lambda a, b: lax.reduce_window(a, -np.inf, lax.max, (2, 3), (1, 2), ((1, 0), (1, 1))),
    "dilated": lambda a, b: lax.reduce_window(a, -np.inf, lax.max, (2, 2), (1, 1), ((0, 0), (0, 0)),
                                              base_dilation=(2, 1), window_dilation=(1, 2)),
    "pool_grad": lambda a, b: jax.grad(lambda x: lax.reduce_window(x, -np.inf, lax.max, (2, 2), (2, 2),
                                                                   "VALID").sum())(a),
}, [m, mi])
group("reduce_sum", {
    "sum": lambda a: lax.reduce_sum(a, (1,)),
    "sum_all": lambda a: lax.reduce_sum(a, (0, 1)),
    "prod": lambda a: lax.reduce_prod(a, (0,)),
    "window_sum": lambda a: lax.reduce_window(a, 0.0, lax.add, (2, 2), (1, 1), "SAME"),
}, [m], "approx")
group("control", {
    "fori": lambda a, n: lax.fori_loop(0, n, lambda i, x: x * 1.5 + i, a),
    "cond": lambda a, n: lax.cond(n > 2, lambda x: x + 1, lambda x: x - 1, a),
    "switch": lambda a, n: lax.switch(n, [lambda x: x, lambda x: x * 2, lambda x: -x], a),
    "while": lambda a, n: lax.while_loop(lambda c: c[0] < 100, lambda c: (c[0] * 2 + n, c[1] + 1), (n, 0)),
    "scan": lambda a, n: lax.scan(lambda c, x: (c + x, c * x), np.float32(0), a[0])[1],
    "map": lambda a, n: lax.map(lambda r: r.sum() * 2, a),
}, [m, np.int32(5)], "approx")
group("bf16_sum", {"sum": lambda a: lax.reduce(a, ml_dtypes.bfloat16(0), lax.add, (0,))},
      [RNG.standard_normal(64).astype(ml_dtypes.bfloat16)], "approx")

jaxcases.write_manifest(OUT, cases)
print(len(cases), "cases")
