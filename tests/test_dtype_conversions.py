"""goldtrace's Go conversions, called through the bridge, against ml_dtypes:
every bit pattern of every 8-bit and 4-bit float decodes to the same f32, and
f32 -> each type agrees on over a million values including every tie, the
subnormal boundaries and the overflow thresholds."""

import ml_dtypes
import numpy as np
import pytest

from goldtrace import _bridge

SMALL = [ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3b11fnuz,
         ml_dtypes.float8_e3m4, ml_dtypes.float8_e5m2fnuz, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e8m0fnu,
         ml_dtypes.float4_e2m1fn]
WIDE = [np.float16, ml_dtypes.bfloat16]

# The probes deliberately overflow and cast NaN; numpy warns about exactly that.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def same_bits_or_both_nan(got, want):
    got_nan, want_nan = np.isnan(got), np.isnan(want)
    assert np.array_equal(got_nan, want_nan)
    ok = ~want_nan
    assert np.array_equal(got[ok].view(np.uint32), want[ok].view(np.uint32)), \
        f"first mismatch at {np.flatnonzero(got[ok].view(np.uint32) != want[ok].view(np.uint32))[:5]}"


def all_patterns(dt):
    dt = np.dtype(dt)
    width = 4 if dt.name == "float4_e2m1fn" else 8 * dt.itemsize
    bits = np.arange(2**width, dtype=np.uint16 if dt.itemsize == 2 else np.uint8)
    return bits.view(dt)


@pytest.mark.parametrize("dt", SMALL + WIDE, ids=lambda d: np.dtype(d).name)
def test_every_bit_pattern_decodes_like_ml_dtypes(dt):
    x = all_patterns(dt)
    same_bits_or_both_nan(_bridge.convert(x, np.float32), x.astype(np.float32))


def f32_probe_values(dt, rng):
    """Every representable value of dt, the midpoints between neighbours (ties),
    one f32 ulp either side of each, the type's edges, specials and randoms."""
    x = all_patterns(dt).astype(np.float32)
    finite = np.unique(x[np.isfinite(x)])
    mids = ((finite[:-1].astype(np.float64) + finite[1:]) / 2).astype(np.float32)
    edges = np.concatenate([finite, mids])
    near = np.concatenate([np.nextafter(edges, np.float32(np.inf)), np.nextafter(edges, np.float32(-np.inf))])
    info = ml_dtypes.finfo(dt)
    specials = np.array([np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0, float(info.max) * 2, float(info.max) * 1.0625,
                         float(info.tiny) / 2, float(info.smallest_subnormal) / 2 if hasattr(info, "smallest_subnormal") else 0],
                        np.float32)
    scaled = (rng.standard_normal(200_000) * min(float(info.max), 1e37) / 4).astype(np.float32)
    raw = rng.integers(0, 2**32, size=1_000_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate([edges, near, specials, scaled, raw])


@pytest.mark.parametrize("dt", SMALL + WIDE, ids=lambda d: np.dtype(d).name)
def test_f32_encodes_like_ml_dtypes(dt, rng):
    x = f32_probe_values(dt, rng)
    assert x.size > 1_000_000
    got = _bridge.convert(x, dt)
    want = x.astype(dt)
    assert got.dtype == want.dtype
    # Compare decoded values: NaN encodings may differ only where ml_dtypes has several.
    same_bits_or_both_nan(got.astype(np.float32), want.astype(np.float32))
    width_mask = 0x0F if np.dtype(dt).name == "float4_e2m1fn" else (0xFFFF if got.itemsize == 2 else 0xFF)
    gb = got.view(np.uint16 if got.itemsize == 2 else np.uint8) & width_mask
    wb = want.view(np.uint16 if want.itemsize == 2 else np.uint8) & width_mask
    nan = np.isnan(want.astype(np.float32))
    assert np.array_equal(gb[~nan], wb[~nan])
