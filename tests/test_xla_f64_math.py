"""f64 transcendentals that XLA:CPU computes with its own kernels, not libm:
exp, tanh, expm1, log1p's small-|x| branch, logistic and (on AVX-512 hosts)
rsqrt, reproduced in engine/eval/xlamath64*.go, and what jax builds from them
(exp2, sinh, cosh, asinh, acosh, atanh, erfc, erf_inv, lgamma, digamma, gelu,
softplus, silu, ...). Swept against jax.jit with x64 enabled, bit for bit,
over normal values at several scales, uniform ranges around each kernel's
switch points, random bit patterns, subnormals, zeros, infinities and NaN
(any NaN matches any NaN). Go's math (what goldtrace used before) differed
on 7-53% of these values."""

import numpy as np
import pytest
from reference import require

jax = require("jax")
require("goldtrace.golden")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import goldtrace  # noqa: E402
from goldtrace.golden import golden  # noqa: E402

jax.config.update("jax_enable_x64", True)

INFO = goldtrace.build_info()
HOST_LIBM = not INFO["host_libm"].startswith("none")

# The kernels that need nothing but XLA's own arithmetic; the rest also go
# through libm (log1p's other branch, log, erf, ...), bit-exact only where
# goldtrace calls the host's libm.
OWN = {
    "exp": lax.exp,
    "tanh": lax.tanh,
    "expm1": lax.expm1,
    "logistic": lax.logistic,
    "exp2": lax.exp2,
    "sinh": jnp.sinh,
    "cosh": jnp.cosh,
    "gelu_tanh": lambda x: jax.nn.gelu(x, approximate=True),
    "silu": jax.nn.silu,
    "selu": jax.nn.selu,
    "tanh_scaled": lambda x: jnp.tanh(0.5 * x) * 2,
}
WITH_LIBM = {
    "log1p": lax.log1p,
    "asinh": jnp.arcsinh,
    "acosh": jnp.arccosh,
    "atanh": jnp.arctanh,
    "erfc": lax.erfc,
    "erf_inv": lax.erf_inv,
    "lgamma": lax.lgamma,
    "digamma": lax.digamma,
    "gelu_erf": lambda x: jax.nn.gelu(x, approximate=False),
    "softplus": jax.nn.softplus,
    "mish": lambda x: x * jnp.tanh(jax.nn.softplus(x)),
    "logaddexp": lambda x: jnp.logaddexp(x, 0.5 * x),
    "bessel_i0e": lax.bessel_i0e,
}


def inputs(n=40000, seed=7):
    rng = np.random.default_rng(seed)
    parts = [rng.standard_normal(n // 16) * s for s in (1e-3, 0.1, 0.5, 1, 3, 10, 30, 100, 700)]
    # Around the switch points: log1p's +-(sqrt(2)-1), expm1's +-1/2, tanh's
    # clamp (17.7) and 20, exp's underflow (-708.4) and overflow (709.8).
    for c in (0.41421356237309503, 0.5, 17.714, 20, 708.396, 709.78, 745.13):
        parts.append(rng.uniform(c - 1e-3 * max(c, 1), c + 1e-3 * max(c, 1), n // 64) * rng.choice([-1, 1], n // 64))
    parts.append(rng.uniform(-1, 1, n // 16))
    tiny = np.ldexp(rng.uniform(0.5, 1, n // 32), rng.integers(-1074, -900, n // 32))  # subnormals and tiny normals
    parts.append(tiny * rng.choice([-1, 1], n // 32))
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 2.2250738585072014e-308, 1e-300, 1e308, -1e308,
             709.782712893384, 709.7827128933841, -708.3964185322641, -708.396418532264, 1.0, -1.0, -0.9999999999999999]
    parts.append(np.array(edges))
    used = sum(len(p) for p in parts)
    parts.append(rng.integers(0, 2**64, max(n - used, 0), dtype=np.uint64).view(np.float64))
    return np.concatenate(parts)


def _differing(fn, x):
    text = jax.jit(fn).lower(x).as_text(dialect="hlo")
    want = np.asarray(jax.jit(fn)(x))
    (got,) = golden(text, x)
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(got) & np.isnan(want)
    return (got.view(np.uint64) != want.view(np.uint64)) & ~nan


def _check(name, fn, x):
    d = _differing(fn, x)
    idx = np.flatnonzero(d)[:5]
    assert not d.any(), f"{name}: {d.sum()} of {d.size} differ from jax.jit, e.g. at x = {x[idx].tolist()}"


@pytest.mark.parametrize("name", sorted(OWN))
def test_xla_own_f64_kernels_match_jax(name):
    _check(name, OWN[name], inputs())


@pytest.mark.parametrize("name", sorted(WITH_LIBM))
def test_xla_f64_kernels_with_libm_match_jax(name):
    if not HOST_LIBM:
        pytest.skip("goldtrace does not call the host's libm here (build_info()['host_libm'])")
    _check(name, WITH_LIBM[name], inputs())


def test_f64_rsqrt_matches_jax():
    """XLA:CPU's f64 rsqrt is VRSQRT14PD's estimate plus two Newton steps on
    AVX-512 hosts and 1/sqrt(x) elsewhere: bit for bit where goldtrace runs
    that instruction (rsqrt_matches_xla), within an ulp otherwise."""
    x = np.abs(inputs())
    x = np.concatenate([x, -x[:1000]])
    d = _differing(lax.rsqrt, x)
    if INFO["rsqrt_matches_xla"]:
        assert not d.any(), f"{d.sum()} of {d.size} differ, e.g. at x = {x[d][:5].tolist()}"
    else:
        want, got = np.asarray(jax.jit(lax.rsqrt)(x)), np.asarray(golden(jax.jit(lax.rsqrt).lower(x), x)[0])
        fin = np.isfinite(want)
        assert np.all(np.abs(want[fin].view(np.int64) - got[fin].view(np.int64)) <= 1)


# exp and logistic end in selects with constant arms (0 and inf, 1 and 0):
# LLVM moves a constant factor into them, and the product then does not
# contract into the add that reads it (engine/golden/xla_math64.go); a
# factor that is not a constant, or an exp read twice, does contract.
CONTRACTION = {
    "exp_times_c_plus_x": lambda x: jnp.exp(x) * 0.3 + x,
    "c_times_exp_plus_x": lambda x: 0.3 * jnp.exp(x) + x,
    "x_minus_exp_times_c": lambda x: x - jnp.exp(x) * 0.3,
    "exp_over_c_plus_x": lambda x: jnp.exp(x) / 3 + x,
    "exp_plus_1_times_c": lambda x: (jnp.exp(x) + 1) * 0.3 + x,
    "folded_factors": lambda x: (jnp.exp(x) * 2.5) * 0.3 + x,
    "max_exp_times_c": lambda x: jnp.maximum(jnp.exp(x), 0.5) * 0.3 + x,
    "logistic_times_c": lambda x: jax.nn.sigmoid(x) * 0.3 + x,
    "exp_times_x_plus_c": lambda x: jnp.exp(x) * x + 0.3,
    "exp_read_twice": lambda x: (jnp.exp(x) * 0.3 + x) * jnp.exp(x),
    "tanh_times_c": lambda x: jnp.tanh(x) * 0.3 + x,
    "expm1_times_c": lambda x: jnp.expm1(x) * 0.3 + x,
}


@pytest.mark.parametrize("name", sorted(CONTRACTION))
def test_f64_products_of_kernels_contract_as_xla(name):
    x = inputs(8000)
    x = x[~((np.abs(x) < 2.2250738585072014e-308) & (x != 0))]  # a subnormal addend: FMA flushing, another matter
    _check(name, CONTRACTION[name], x)


def test_f64_kernels_fused_with_arithmetic():
    """The kernels inside one XLA fusion with other arithmetic (the exp of
    logistic's expansion fuses its last product into the +1) and in the
    complex exp, sin and tanh XLA builds from them (with libm's sin and
    cos)."""
    x = inputs(8000)
    _check("fused", lambda v: jnp.exp(v) * 0.5 + jnp.tanh(v) - jax.nn.sigmoid(v) * jnp.expm1(v * 0.1), x)
    rng = np.random.default_rng(3)
    z = (rng.standard_normal(4000) * 3 + 1j * rng.standard_normal(4000) * 3).astype(np.complex128)
    for name, fn in (("exp", lax.exp), ("sin", lax.sin), ("tanh", lax.tanh)) if HOST_LIBM else ():
        want = np.asarray(jax.jit(fn)(z)).view(np.float64)
        got = np.asarray(golden(jax.jit(fn).lower(z), z)[0]).view(np.float64)
        nan = np.isnan(want) & np.isnan(got)
        d = (want.view(np.uint64) != got.view(np.uint64)) & ~nan
        assert not d.any(), f"c128 {name}: {d.sum()} parts differ"
