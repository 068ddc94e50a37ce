"""FFT results are the exact DFT rounded once to the result type.

goldtrace computes every fft in float64 and rounds once, so a c64/f32 result
is within half a float32 ulp of numpy's float64 np.fft (plus float64 noise
far below it) on each value, and a c128/f64 result within float64 noise of
it: every fft type, 1-D to 3-D fft_length, lengths that are powers of two,
odd, prime and composite, long lines (transformed as matrices) too.
"""

import numpy as np
import pytest

import goldtrace

LENGTHS = [1, 2, 3, 5, 7, 8, 12, 16, 17, 30, 31, 64, 97, 100, 128, 243, 256, 360, 500, 512, 1000,
           1009, 1024, 1536, 2048, 2062, 4096, 4099, 65536, 98304, 131072]
MULTI = [(4, 8), (6, 5), (16, 12), (3, 32), (2, 4, 6), (5, 3, 8), (8, 1, 9)]
TYPES = ["FFT", "IFFT", "RFFT", "IRFFT"]


def _shape(ty, dims):
    return f"{ty}[{','.join(map(str, dims))}]"


def _module(typ, lens, rows, wide):
    ct, rt = ("c128", "f64") if wide else ("c64", "f32")
    n = lens[-1]
    ind = [rows, *lens]
    outd = [rows, *lens]
    it = ot = ct
    if typ == "RFFT":
        it, outd[-1] = rt, n // 2 + 1
    if typ == "IRFFT":
        ot, ind[-1] = rt, n // 2 + 1
    text = (f"HloModule m\nENTRY e {{\n  x = {_shape(it, ind)} parameter(0)\n"
            f"  ROOT f = {_shape(ot, outd)} fft(x), fft_type={typ}, fft_length={{{','.join(map(str, lens))}}}\n}}\n")
    return text, it, ind


def _exact(typ, lens, x):
    axes = tuple(range(-len(lens), 0))
    x = x.astype(np.complex128) if np.iscomplexobj(x) else x.astype(np.float64)
    if typ == "FFT":
        return np.fft.fftn(x, axes=axes)
    if typ == "IFFT":
        return np.fft.ifftn(x, axes=axes)
    if typ == "RFFT":
        return np.fft.rfftn(x, axes=axes)
    return np.fft.irfftn(x, s=lens, axes=axes)


def _within(got, exact, wide):
    """Each real and imaginary part of got against exact: half a float32
    ulp (2^-24 relative) plus 2^-36 of the largest value for 32-bit
    results; 2^-40 of the largest value for 64-bit ones."""
    g = np.asarray(got)
    g = np.stack([g.real, g.imag]) if np.iscomplexobj(g) else g
    e = np.asarray(exact)
    e = np.stack([e.real, e.imag]) if np.iscomplexobj(e) else e
    g, e = g.astype(np.float64), e.astype(np.float64)
    norm = np.max(np.abs(e)) if e.size else 0.0
    bound = 2.0**-40 * norm if wide else 2.0**-24 * np.abs(e) + 2.0**-36 * norm
    bad = ~(np.abs(g - e) <= bound)
    return not bad.any(), (np.argwhere(bad)[:1], g[bad][:1], e[bad][:1])


def _inputs(rng, it, dims):
    if it in ("c64", "c128"):
        x = rng.standard_normal(dims) + 1j * rng.standard_normal(dims)
        return x.astype(np.complex64 if it == "c64" else np.complex128)
    return rng.standard_normal(dims).astype(np.float32 if it == "f32" else np.float64)


CASES = [(t, (n,), w) for n in LENGTHS for t in TYPES for w in (False, True)]
CASES += [(t, m, w) for m in MULTI for t in TYPES for w in (False, True)]


@pytest.mark.parametrize("typ,lens,wide", CASES, ids=[f"{t}-{'x'.join(map(str, m))}-{'64' if w else '32'}" for t, m, w in CASES])
def test_fft_is_exact_dft_rounded_once(typ, lens, wide):
    rng = np.random.default_rng(hash((typ, lens, wide)) % 2**32)
    rows = 2 if lens[-1] >= 32768 else 3 if lens[-1] >= 1000 else 9
    text, it, ind = _module(typ, list(lens), rows, wide)
    x = _inputs(rng, it, ind)
    (got,) = goldtrace.golden(text, x)
    exact = _exact(typ, list(lens), x)
    assert got.shape == exact.shape
    ok, where = _within(got, exact, wide)
    assert ok, f"{typ} {lens}: first value out of bound at {where}"


@pytest.mark.parametrize("wide", [False, True])
def test_bound_rejects_a_planted_twiddle_error(wide):
    """The bound above fails a DFT computed with one twiddle off by 1e-6
    (relative), and passes the same DFT done right."""
    rng = np.random.default_rng(5)
    n = 64
    x = rng.standard_normal((4, n)) + 1j * rng.standard_normal((4, n))
    k = np.arange(n)
    w = np.exp(-2j * np.pi * np.outer(k, k) / n)
    good = x @ w.T
    w[3, 5] *= 1 + 1e-6
    bad = x @ w.T
    cast = (lambda a: a) if wide else (lambda a: a.astype(np.complex64))
    exact = np.fft.fft(x)
    assert _within(cast(good), exact, wide)[0]
    assert not _within(cast(bad), exact, wide)[0]
