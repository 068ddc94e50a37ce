"""Writes HloModuleProtos made by JAX/XLA, with XLA's own text printing and
structure of the same modules, for the hloproto Go tests.

usage: python3 gen_protos.py OUTDIR

For every case it writes OUTDIR/<case>.pb (serialized HloModuleProto) and
OUTDIR/<case>.txt (XLA's text of the module rebuilt from that very proto, so
names and ids agree), and a manifest OUTDIR/manifest.json with, per case, the
computations and instructions as XLA's Python API reports them. Constants
whose values the test checks are listed with their expected row-major bytes
(numpy / ml_dtypes) in OUTDIR/<case>.<instr>.bin.
"""
import json
import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jaxlib import _hlo as xhlo  # noqa: E402

jax.config.update("jax_enable_x64", True)

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
manifest = []


def print_options():
    o = xhlo.HloPrintOptions()
    o.print_large_constants = True
    o.print_metadata = True
    return o


def record(name, module, consts=()):
    pb = module.as_serialized_hlo_module_proto()
    # Rebuild from the proto so the text is of exactly what the proto holds.
    again = xhlo.HloModule.from_serialized_hlo_module_proto(pb)
    with open(os.path.join(OUT, name + ".pb"), "wb") as f:
        f.write(pb)
    with open(os.path.join(OUT, name + ".txt"), "w") as f:
        f.write(again.to_string(print_options()))
    comps = []
    for c in again.computations():
        comps.append({
            "name": c.name,
            "instructions": [{
                "name": i.name,
                "opcode": str(i.opcode).split(".")[-1],
                "operands": [o.name for o in i.operands()],
                "text": i.to_string(),
            } for i in c.instructions()],
        })
    entry = []
    for cname, instr, arr in consts:
        fn = f"{name}.{instr}.bin"
        with open(os.path.join(OUT, fn), "wb") as f:
            f.write(np.ascontiguousarray(arr).tobytes())
        entry.append({"computation": cname, "instruction": instr, "dtype": arr.dtype.name,
                      "dims": list(arr.shape), "file": fn})
    manifest.append({"name": name, "pb": name + ".pb", "txt": name + ".txt",
                     "computations": comps, "constants": entry})


def jax_case(name, fn, *args):
    lowered = jax.jit(fn).lower(*args)
    record(name, lowered.compiler_ir("hlo").get_hlo_module())


def text_case(name, text, consts=()):
    record(name, xhlo.hlo_module_from_text(text), consts)


f32 = jnp.float32
x23 = jnp.arange(6, dtype=f32).reshape(2, 3)
x34 = jnp.arange(12, dtype=f32).reshape(3, 4)
key = jax.random.key(0)

jax_case("elementwise", lambda x, y: jnp.sin(x) * y + 1, x23, x23)
jax_case("dot", lambda x, y: x @ y, x23, x34)
jax_case("batched_dot", lambda x, y: jnp.einsum("bij,bjk->bik", x, y),
         jnp.ones((2, 2, 3), f32), jnp.ones((2, 3, 4), jnp.bfloat16))
jax_case("conv", lambda x, w: lax.conv_general_dilated(
    x, w, window_strides=(2, 1), padding=((1, 1), (0, 2)), lhs_dilation=(1, 2),
    rhs_dilation=(2, 1), feature_group_count=2,
    dimension_numbers=("NHWC", "HWIO", "NCHW"),
    precision=lax.Precision.HIGHEST),
    jnp.ones((1, 8, 8, 4), f32), jnp.ones((3, 3, 2, 6), f32))
jax_case("reduce", lambda x: (x.sum(axis=1), x.max(), jnp.argmax(x, axis=0)), x23)
jax_case("reduce_window", lambda x: lax.reduce_window(
    x, -jnp.inf, lax.max, (1, 2), (1, 1), ((0, 0), (1, 0))), x23)
jax_case("maxpool_grad", jax.grad(lambda x: lax.reduce_window(
    x, -jnp.inf, lax.max, (2, 2), (2, 2), "VALID").sum()), jnp.ones((4, 4), f32))
jax_case("while", lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2 + i, x), x23)
jax_case("while_dynamic", lambda x: lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2), (0, x)), x23)
jax_case("cond", lambda p, x: lax.cond(p, jnp.sin, jnp.cos, x), True, x23)
jax_case("switch", lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, jnp.tan], x), 1, x23)
jax_case("sort", lambda x, y: (jnp.sort(x, axis=0), lax.sort((x, y), num_keys=1, is_stable=True)), x23, x23)
jax_case("top_k", lambda x: lax.top_k(x, 2), x23)
jax_case("gather_scatter", lambda x, i, v: (x[i], x.at[i].add(v), x.at[:, i].set(0)),
         jnp.ones((5, 3), f32), jnp.array([0, 2, 4]), jnp.ones((3, 3), f32))
jax_case("batched_gather", jax.vmap(lambda x, i: x[i]), jnp.ones((4, 5), f32), jnp.arange(4))
jax_case("rng", lambda k: (jax.random.normal(k, (3,)), jax.random.bits(k, (2, 2), jnp.uint8)), key)
jax_case("rng_bit_generator", lambda s: lax.rng_bit_generator(s, (2, 3), jnp.uint32, algorithm=lax.RandomAlgorithm.RNG_PHILOX),
         jnp.zeros((4,), jnp.uint32))
jax_case("fft", lambda x: (jnp.fft.fft(x), jnp.fft.rfft(x.real), jnp.fft.irfft(x, n=4), jnp.fft.ifft2(x)),
         jnp.ones((4, 4), jnp.complex64))
jax_case("shapes", lambda x: (jnp.pad(x, ((1, 2), (0, 1))), x[:, ::2], lax.dynamic_slice(x, (1, 0), (1, 2)),
                              lax.dynamic_update_slice(x, jnp.zeros((1, 1), f32), (1, 1)),
                              jnp.concatenate([x, x], axis=1), x.T, jnp.flip(x, 1),
                              jnp.clip(x, 1, 3), jnp.where(x > 2, x, 0), x.reshape(3, 2),
                              lax.broadcasted_iota(jnp.int32, (2, 3), 1), jnp.cumsum(x, axis=1),
                              lax.pad(x, f32(0), ((1, -1, 1), (0, 0, 2)))), x23)
jax_case("converts", lambda x: (x.astype(jnp.bfloat16), x.astype(jnp.float8_e4m3fn), x.astype(jnp.int4),
                                x.astype(jnp.float16), x.astype(jnp.uint8), lax.bitcast_convert_type(x, jnp.int32),
                                lax.reduce_precision(x, 5, 10), x.astype(jnp.complex128)), x23)
jax_case("linalg", lambda a, b: (lax.linalg.triangular_solve(a, b, left_side=True, lower=True, transpose_a=True),
                                 jnp.linalg.cholesky(a)), jnp.eye(3, dtype=f32) * 2, jnp.ones((3, 2), f32))
jax_case("f64_ints", lambda x, i, u: (x * 2, i // 3, u >> 1, i.astype(jnp.uint64), lax.population_count(i)),
         jnp.ones((2,), jnp.float64), jnp.arange(3, dtype=jnp.int64), jnp.arange(3, dtype=jnp.uint32))


def shard_cases():
    from jax.sharding import Mesh, PartitionSpec as P
    mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("a", "b"))

    def body(x):
        s = lax.psum(x, "a")
        g = lax.all_gather(x, "b", axis=0, tiled=True)
        p = lax.ppermute(x, "a", perm=[(0, 1), (1, 0)])
        t = lax.all_to_all(x, "b", 0, 0, tiled=True)
        r = lax.psum_scatter(x, ("a", "b"), scatter_dimension=1, tiled=True)
        i = lax.axis_index("b")
        return s, g, p, t, r, i

    shard_map = getattr(jax, "shard_map", None)
    if shard_map is None:
        from jax.experimental.shard_map import shard_map
    f = shard_map(body, mesh=mesh, in_specs=P("a", "b"),
                  out_specs=(P("a", "b"), P("a", "b"), P("a", "b"), P("a", "b"), P("a", "b"), P()),
                  check_vma=False) if "check_vma" in shard_map.__code__.co_varnames else \
        shard_map(body, mesh=mesh, in_specs=P("a", "b"),
                  out_specs=(P("a", "b"), P("a", "b"), P("a", "b"), P("a", "b"), P("a", "b"), P()))
    jax_case("collectives", f, jnp.ones((4, 8), f32))


try:
    shard_cases()
except Exception as e:  # noqa: BLE001 - collectives are optional coverage
    print("skipping collectives:", e, file=sys.stderr)

# Constants of every element type (but s1/u1: XLA cannot read those from a
# proto), in a non-default layout {0,1}, so the proto
# holds them column-major; the test compares the decoded row-major bytes with
# numpy's.
VALUES = {
    "pred": [True, False, True, True, False, False],
    "s2": [-2, -1, 0, 1, 1, -2], "u2": [0, 1, 2, 3, 3, 1],
    "s4": [-8, -1, 0, 7, 3, -5], "u4": [0, 15, 7, 8, 1, 2],
    "s8": [-128, -1, 0, 127, 5, -7], "u8": [0, 255, 7, 8, 1, 2],
    "s16": [-32768, -1, 0, 32767, 5, -7], "u16": [0, 65535, 7, 8, 1, 2],
    "s32": [-2**31, -1, 0, 2**31 - 1, 5, -7], "u32": [0, 2**32 - 1, 7, 8, 1, 2],
    "s64": [-2**63, -1, 0, 2**63 - 1, 5, -7], "u64": [0, 2**64 - 1, 7, 8, 1, 2],
}
FLOATS = [0, 1, -2, 0.5, 3, -1.5]
NP = {"pred": np.bool_, "s8": np.int8, "u8": np.uint8, "s16": np.int16, "u16": np.uint16,
      "s32": np.int32, "u32": np.uint32, "s64": np.int64, "u64": np.uint64,
      "s2": ml_dtypes.int2, "u2": ml_dtypes.uint2,
      "s4": ml_dtypes.int4, "u4": ml_dtypes.uint4,
      "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64,
      "c64": np.complex64, "c128": np.complex128,
      "f8e5m2": ml_dtypes.float8_e5m2, "f8e4m3": ml_dtypes.float8_e4m3, "f8e4m3fn": ml_dtypes.float8_e4m3fn,
      "f8e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz, "f8e3m4": ml_dtypes.float8_e3m4,
      "f8e5m2fnuz": ml_dtypes.float8_e5m2fnuz, "f8e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
      "f4e2m1fn": ml_dtypes.float4_e2m1fn, "f8e8m0fnu": ml_dtypes.float8_e8m0fnu}


def literal_text(t, vals):
    def one(v):
        if t == "pred":
            return "true" if v else "false"
        if t in ("c64", "c128"):
            return f"({v}, {-v})"
        return repr(v)
    rows = [vals[0:3], vals[3:6]]
    return "{ " + ", ".join("{ " + ", ".join(one(v) for v in r) + " }" for r in rows) + " }"


def constants_case():
    lines, consts, roots = [], [], []
    for t, np_t in NP.items():
        if t in VALUES:
            vals = VALUES[t]
        elif t == "f8e8m0fnu":
            vals = [1, 2, 0.5, 4, 0.25, 8]
        else:
            vals = FLOATS
        name = "c_" + t
        lines.append(f"  {name} = {t}[2,3]{{0,1}} constant({literal_text(t, vals)})")
        roots.append(name)
        if t in ("c64", "c128"):
            arr = np.array([complex(v, -v) for v in vals], np_t).reshape(2, 3)
        else:
            arr = np.array(vals, dtype=np.float64 if t not in VALUES else None).astype(np_t).reshape(2, 3) \
                if t not in VALUES else np.array(vals, dtype=object).astype(np_t).reshape(2, 3)
        consts.append(("e", name, arr))
    shapes = ", ".join(l.split(" = ")[1].split(" constant")[0] for l in lines)
    text = "HloModule all_constants\n\nENTRY e {\n" + "\n".join(lines) + \
        f"\n  ROOT t = ({shapes}) tuple({', '.join(roots)})\n}}\n"
    text_case("constants", text, consts)


constants_case()

text_case("handwritten", r"""
HloModule handwritten, input_output_alias={ {0}: (0, {}, must-alias) }, buffer_donor={ (1, {}) }, frontend_attributes={fa="1"}

add_c {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}

ge_c {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=GE, type=TOTALORDER
}

true_c {
  a = f32[4,2] parameter(0)
  ROOT n = f32[4,2] negate(a)
}

false_c {
  a = f32[4,2] parameter(0)
  ROOT n = f32[4,2] abs(a)
}

ENTRY e {
  p = f32[4,2]{0,1} parameter(0), sharding={devices=[2,1]<=[2]}, metadata={op_type="x" op_name="y/z" source_file="f.py" source_line=3}
  q = f32[4,2] parameter(1), frontend_attributes={k="v"}
  pr = pred[] parameter(2)
  dyn = f32[<=4,2] parameter(3)
  ar = f32[4,2] all-reduce(p), replica_groups=[2,2]<=[2,2]T(1,0), to_apply=add_c, channel_id=1, use_global_device_ids=true
  ar2 = f32[4,2] all-reduce(q), replica_groups={{0,2},{1,3}}, to_apply=add_c, control-predecessors={ar}
  cp = f32[4,2] collective-permute(q), source_target_pairs={{0,1},{1,2},{2,3},{3,0}}, channel_id=2
  cmp = pred[4,2] compare(p, ar), direction=LT, type=TOTALORDER
  cond = f32[4,2] conditional(pr, p, q), true_computation=true_c, false_computation=false_c
  s = f32[4,2] select(cmp, cond, ar2)
  rp = f32[4,2] reduce-precision(s), exponent_bits=5, mantissa_bits=2
  st = u64[2] constant({1, 2})
  rbg = (u64[2], u32[4,2]) rng-bit-generator(st), algorithm=rng_three_fry
  tk = token[] after-all()
  cc = (f32[4,2], f32[4,2]) custom-call(rp, q), custom_call_target="my_target", api_version=API_VERSION_TYPED_FFI, custom_call_has_side_effect=true, output_to_operand_aliasing={{0}: (1, {})}, backend_config="{\"k\": 1}"
  gte = f32[4,2] get-tuple-element(cc), index=0
  init = f32[] constant(0)
  sas = f32[4,2] select-and-scatter(p, gte, init), window={size=2x1 stride=2x1}, select=ge_c, scatter=add_c
  tupc = (s32[], (f32[2], pred[])) constant((1, ({2.5, -1}, true)))
  gdim = s32[] get-dimension-size(dyn), dimensions={0}
  topk = (f32[4,1], s32[4,1]) topk(sas), k=1, largest=true
  init2 = f32[2] constant({1, 1})
  init3 = f32[2] constant({0, 0})
  bn = (f32[4,2], f32[2], f32[2]) batch-norm-training(p, init2, init3), epsilon=0.001, feature_index=1
  ROOT t = (f32[4,2], pred[4,2], (u64[2], u32[4,2]), token[], f32[4,2], (s32[], (f32[2], pred[])), s32[], (f32[4,1], s32[4,1]), (f32[4,2], f32[2], f32[2]), f32[4,2]) tuple(ar, cmp, rbg, tk, sas, tupc, gdim, topk, bn, cp)
}
""", [("e", "init2", np.array([1, 1], np.float32))])

with open(os.path.join(OUT, "manifest.json"), "w") as f:
    json.dump(manifest, f, indent=1)
