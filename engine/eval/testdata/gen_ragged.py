"""Differential reference cases for ragged-dot.

Usage: python3 gen_ragged.py OUTDIR [NAME_PREFIX...]

jax lowers lax.ragged_dot_general on CPU to a masked dense dot, so the HLO
text of a case comes from lowering for TPU with
jax_ragged_dot_use_ragged_dot_instruction set, which keeps one ragged-dot
instruction (batch-mode ragged dots still become plain dots); the expected
outputs come from jax.jit on CPU. Besides the files jaxcases.py writes, each
case gets <name>.pb, the serialized HloModuleProto of the same lowering.
"""
import os
import sys

import jax
import jaxcases  # enables x64, pins jax to the CPU
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import lax

rng = np.random.default_rng(4321)
CASES = []
BF16 = ml_dtypes.bfloat16


def rdg(contract, batch, ragged, group, pet=None):
    dn = lax.RaggedDotDimensionNumbers(
        dot_dimension_numbers=(contract, batch),
        lhs_ragged_dimensions=[ragged], rhs_group_dimensions=group)
    return lambda a, b, g: lax.ragged_dot_general(a, b, g, dn, preferred_element_type=pet)


def randf(shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def case(name, fn, lshape, rshape, gs, dtype=np.float32):
    """f32 results are compared within the dot tolerance of gen_part2.py
    (the evaluator's f32 dot order is not XLA:CPU's for these shapes), the
    others bit-exactly."""
    args = [randf(lshape, dtype), randf(rshape, dtype), np.asarray(gs, np.int32)]
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=None, atol=0.0)
    CASES.append((name, fn, args, tol))


for dt, tag in ((np.float32, "f32"), (BF16, "bf16")):
    # Mode 1: ragged free lhs dim, rhs picks a matrix per group. Group sizes
    # with zeros, summing to less than the ragged dim (trailing rows zero).
    case("ragged_m1_basic_" + tag, rdg(([1], [1]), ([], []), 0, [0]), (10, 6), (4, 6, 5), [3, 0, 4, 1], dt)
    case("ragged_m1_full_" + tag, rdg(([1], [1]), ([], []), 0, [0]), (9, 7), (3, 7, 4), [2, 5, 2], dt)
    case("ragged_m1_empty_" + tag, rdg(([1], [1]), ([], []), 0, [0]), (5, 3), (2, 3, 4), [0, 0], dt)
    # Group dim in the middle of rhs, contracting dim first in lhs.
    case("ragged_m1_layout_" + tag, rdg(([0], [0]), ([], []), 1, [1]), (6, 8), (6, 3, 5), [2, 3, 1], dt)
    # Batched, with [g] and with [b, g] group sizes.
    case("ragged_m1_batch_" + tag, rdg(([2], [2]), ([0], [0]), 1, [1]), (2, 7, 4), (2, 3, 4, 5), [3, 1, 2], dt)
    case("ragged_m1_batchgs_" + tag, rdg(([2], [2]), ([0], [0]), 1, [1]), (2, 7, 4), (2, 3, 4, 5),
         [[3, 0, 4], [1, 2, 2]], dt)
    # A free lhs dim before the ragged one indexes group_sizes too.
    case("ragged_m1_prefix_" + tag, rdg(([2], [1]), ([], []), 1, [0]), (3, 6, 4), (2, 4, 5),
         [[1, 5], [6, 0], [2, 2]], dt)
    # Mode 2: ragged contracting dim, one partial product per group.
    case("ragged_m2_basic_" + tag, rdg(([1], [0]), ([], []), 1, []), (5, 9), (9, 4), [2, 0, 4, 1], dt)
    case("ragged_m2_batchgs_" + tag, rdg(([1], [1]), ([0], [0]), 1, []), (2, 8, 3), (2, 8, 4),
         [[3, 5], [0, 6]], dt)
    case("ragged_m2_twok_" + tag, rdg(([1, 2], [0, 1]), ([], []), 2, []), (3, 2, 6), (2, 6, 4),
         [[1, 4], [3, 3]], dt)

# Mixed precision: bf16 operands accumulated into f32.
case("ragged_m1_pet", rdg(([1], [1]), ([], []), 0, [0], jnp.float32), (10, 6), (4, 6, 5), [3, 0, 4, 1], BF16)
case("ragged_m2_pet", rdg(([1], [0]), ([], []), 1, [], jnp.float32), (5, 9), (9, 4), [2, 0, 4, 1], BF16)


def main():
    out, only = sys.argv[1], sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    entries = []
    for name, fn, args, fields in CASES:
        if only and not any(name.startswith(p) for p in only):
            continue
        entries.append(jaxcases.write_case(out, name, fn, args, **fields))
        with _flag():
            lo = jax.jit(fn).trace(*args).lower(lowering_platforms=("tpu",))
        with open(os.path.join(out, name + ".hlo"), "w") as f:
            f.write(lo.as_text(dialect="hlo"))
        with open(os.path.join(out, name + ".pb"), "wb") as f:
            f.write(lo.compiler_ir("hlo").as_serialized_hlo_module_proto())
    jaxcases.write_manifest(out, entries)


class _flag:
    def __enter__(self):
        jax.config.update("jax_ragged_dot_use_ragged_dot_instruction", True)

    def __exit__(self, *exc):
        jax.config.update("jax_ragged_dot_use_ragged_dot_instruction", False)


if __name__ == "__main__":
    main()
