"""Inputs that tell XLA:CPU's convert roundings from their nearest wrong
alternatives (engine/eval/convert.go), compared bit for bit.

Usage: python3 gen_convert_rounding.py OUTDIR [NAME_PREFIX...]

For a target with m mantissa bits, 1 + 2^-(m+1) is the midpoint between two
neighbours; a few bits more (2^-40 from f64, 2^-20 from f32) put the value
just above it. Rounded once it goes up; rounded first to f32 (from f64) or
f16 (from f32) the extra bits vanish, the midpoint ties to even and it goes
down. Values just below and exactly at the midpoint, at other exponents, in
the target's subnormal range and flushed subnormal sources complete the
set. The Go test also runs this under XLA_FLAGS=--xla_cpu_max_isa=AVX2,
where f64 -> f16 rounds twice.
"""
import jaxcases  # enables x64, pins jax to the CPU
import ml_dtypes
import numpy as np
from jax import lax

TARGETS = {  # name -> (dtype, mantissa bits)
    "f16": (np.float16, 10), "bf16": (ml_dtypes.bfloat16, 7),
    "f8e4m3fn": (ml_dtypes.float8_e4m3fn, 3), "f8e5m2": (ml_dtypes.float8_e5m2, 2),
    "f8e3m4": (ml_dtypes.float8_e3m4, 4), "f8e4m3fnuz": (ml_dtypes.float8_e4m3fnuz, 3),
    "f8e4m3": (ml_dtypes.float8_e4m3, 3), "f8e5m2fnuz": (ml_dtypes.float8_e5m2fnuz, 2),
    "f4e2m1fn": (ml_dtypes.float4_e2m1fn, 1),
}


def near_midpoints(m, extra, tiny):
    """Midpoints 2^e (1 + j 2^-(m+1)) (odd j: between two neighbours of a
    type with m mantissa bits), each also nudged up and down by a relative
    extra, plus the same around the type's smallest subnormal; both signs."""
    out = []
    for e in (0, -2, 3):
        for j in (1, 3):
            mid = 2.0 ** e * (1 + j * 2.0 ** -(m + 1))
            out += [mid, mid * (1 + extra), mid * (1 - extra)]
    for k in (0.5, 1.5):
        out += [k * tiny, k * tiny * (1 + extra), k * tiny * (1 - extra)]
    vals = np.array(out)
    return np.concatenate([vals, -vals])


CASES = []
for name, (dt, m) in TARGETS.items():
    tiny = float(ml_dtypes.finfo(dt).smallest_subnormal)
    x64 = near_midpoints(m, 2.0 ** -40, tiny).astype(np.float64)
    CASES.append((f"f64_to_{name}", lambda a, dt=dt: lax.convert_element_type(a, dt), [x64], {}))
    if name not in ("f16", "bf16"):  # f32 -> f16/bf16 have no intermediate type to skip
        x32 = near_midpoints(m, 2.0 ** -20, tiny).astype(np.float32)
        CASES.append((f"f32_to_{name}", lambda a, dt=dt: lax.convert_element_type(a, dt), [x32], {}))
# f32 subnormals survive f32 -> bf16 and f32 -> f8e8m0fnu (bit manipulation);
# f64 -> f32 flushes them; bf16 -> f32 keeps bf16 subnormals.
sub32 = np.array([2.0 ** -127, -(2.0 ** -127), 2.0 ** -130, 2.0 ** -149, 3 * 2.0 ** -140, 2.0 ** -126, 1.0], np.float32)
CASES.append(("f32_sub_to_bf16", lambda a: lax.convert_element_type(a, ml_dtypes.bfloat16), [sub32], {}))
CASES.append(("f32_sub_to_f8e8m0fnu", lambda a: lax.convert_element_type(a, ml_dtypes.float8_e8m0fnu), [sub32], {}))
CASES.append(("f64_sub_to_f32", lambda a: lax.convert_element_type(a, np.float32),
              [np.array([2.0 ** -127, -(2.0 ** -130), 2.0 ** -149, 2.0 ** -126, 1e-310, 1.0])], {}))
CASES.append(("bf16_sub_to_f32", lambda a: lax.convert_element_type(a, np.float32),
              [np.array([0x0001, 0x8001, 0x007f, 0x0080, 0x3f80], np.uint16).view(ml_dtypes.bfloat16)], {}))

if __name__ == "__main__":
    jaxcases.main(CASES)
