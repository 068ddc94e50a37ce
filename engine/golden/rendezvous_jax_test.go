package golden

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"goldtrace/engine/tensor"
)

// collectivesScript builds jax.shard_map programs over 4 CPU devices (1-D
// and 2-D meshes) using psum, pmax, pmin, all_gather, psum_scatter,
// all_to_all, ppermute and axis_index; it writes each program as XLA:CPU
// compiled it (the SPMD-partitioned per-device module, num_partitions=4, run
// with -e),
// every device's input shards and the output shards XLA computed, and a
// manifest.
const collectivesScript = `
import os, sys, json
os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
import numpy as np
import jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
jax.config.update("jax_enable_x64", False)

rng = np.random.default_rng(7)
devs = np.array(jax.devices()[:4])
mesh1 = Mesh(devs, ("x",))
mesh2 = Mesh(devs.reshape(2, 2), ("x", "y"))

def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)

cases = {}
def case(name, mesh, in_specs, out_specs, *inputs):
    def deco(f):
        cases[name] = (f, mesh, in_specs, out_specs, inputs)
        return f
    return deco

lx = jax.lax

@case("psum", mesh1, P("x"), P("x"), f32(16, 3))
def _(a): return lx.psum(a, "x")

specials = np.array([[-0.0, 1.0], [-0.0, np.nan], [-0.0, -np.inf], [-0.0, 2.0]] * 2, np.float32)
@case("pmax_pmin_specials", mesh1, P("x"), (P("x"), P("x"), P("x")), specials)
def _(a): return lx.pmax(a, "x"), lx.pmin(a, "x"), lx.psum(a, "x")

@case("psum_bf16", mesh1, P("x"), P("x"), f32(8, 5).astype(ml_dtypes.bfloat16) * 100)
def _(a): return lx.psum(a, "x")

@case("psum_f16", mesh1, P("x"), P("x"), (f32(8, 5) * 1000).astype(np.float16))
def _(a): return lx.psum(a, "x")

@case("psum_int32_wraps", mesh1, P("x"), (P("x"), P("x")), rng.integers(-2**31, 2**31 - 1, size=(8, 3), dtype=np.int32))
def _(a): return lx.psum(a, "x"), lx.pmin(a, "x")

@case("pmax_int8", mesh1, P("x"), P("x"), rng.integers(-128, 127, size=(8, 3), dtype=np.int8))
def _(a): return lx.pmax(a, "x")

@case("psum_tuple", mesh1, (P("x"), P("x")), (P("x"), P("x")), f32(8, 2), f32(4, 3))
def _(a, b): return lx.psum((a, b), "x")

@case("all_gather", mesh1, P("x"), (P("x"),) * 4, f32(8, 3))
def _(a): return (lx.all_gather(a, "x", tiled=True), lx.all_gather(a, "x"),
                  lx.all_gather(a, "x", axis=1, tiled=True), lx.all_gather(a, "x", axis=1))

@case("psum_scatter", mesh1, P("x"), (P("x"), P("x")), f32(32, 3))
def _(a): return (lx.psum_scatter(a, "x", scatter_dimension=0, tiled=True),
                  lx.psum_scatter(a.reshape(4, 2, 3), "x", scatter_dimension=0))

@case("psum_scatter_dim1", mesh1, P("x"), P("x"), f32(8, 8))
def _(a): return lx.psum_scatter(a, "x", scatter_dimension=1, tiled=True)

@case("all_to_all", mesh1, P("x"), (P("x"), P("x")), f32(16, 8))
def _(a): return lx.all_to_all(a, "x", 0, 0, tiled=True), lx.all_to_all(a, "x", 1, 0, tiled=True)

@case("ppermute", mesh1, P("x"), (P("x"), P("x")), f32(8, 3))
def _(a): return (lx.ppermute(a, "x", [(i, (i + 1) % 4) for i in range(4)]),
                  lx.ppermute(a, "x", [(0, 2), (3, 1)]))

@case("axis_index", mesh1, P("x"), P("x"), f32(8, 2))
def _(a): return a * lx.axis_index("x").astype(jnp.float32)

@case("loop_psum", mesh1, P("x"), P("x"), f32(8, 2))
def _(a): return lx.fori_loop(0, 3, lambda i, c: lx.psum(c, "x") * 0.5 + c, a)

@case("mesh2_psum", mesh2, P("x", "y"), (P("x", "y"),) * 3, f32(4, 6))
def _(a): return lx.psum(a, "x"), lx.psum(a, "y"), lx.psum(a, ("x", "y"))

@case("mesh2_gather_permute", mesh2, P("x", "y"), (P("x", "y"),) * 3, f32(4, 6))
def _(a): return (lx.all_gather(a, "y", axis=1, tiled=True),
                  lx.ppermute(a, "x", [(0, 1), (1, 0)]),
                  a + 10 * lx.axis_index("y").astype(jnp.float32) + 100 * lx.axis_index("x").astype(jnp.float32))

@case("mesh2_scatter_alltoall", mesh2, P("x", "y"), (P("x", "y"), P("x", "y")), f32(8, 8))
def _(a): return (lx.psum_scatter(a, "x", scatter_dimension=1, tiled=True),
                  lx.all_to_all(a, "y", 1, 0, tiled=True))

only = sys.argv[1:]
manifest = []
for name, (f, mesh, in_specs, out_specs, inputs) in cases.items():
    if only and name not in only:
        continue
    specs = in_specs if isinstance(in_specs, tuple) else (in_specs,)
    args = [jax.device_put(x, NamedSharding(mesh, s)) for x, s in zip(inputs, specs)]
    sm = jax.jit(jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs))
    compiled = sm.lower(*args).compile()
    with open(name + ".hlo", "w") as fh:
        fh.write(compiled.as_text())
    outs = jax.tree.leaves(sm(*args))
    flat = list(mesh.devices.flat)
    def shard_of(arr, d):
        for s in arr.addressable_shards:
            if s.device == d:
                return np.asarray(s.data)
        raise KeyError(d)
    for p, d in enumerate(flat):
        for i, a in enumerate(args):
            save(f"{name}.in{i}.dev{p}.npy", shard_of(a, d))
        for k, o in enumerate(outs):
            save(f"{name}.out{k}.dev{p}.npy", shard_of(o, d))
    manifest.append({"name": name, "inputs": len(args), "outputs": len(outs), "devices": len(flat)})
with open("manifest.json", "w") as fh:
    json.dump(manifest, fh)
`

// collectiveModesScript compiles hand-written HLO modules with XLA:CPU for
// replica_count × num_partitions devices and runs them with one input per
// device: the group modes jax's shard_map never emits (cross-replica,
// cross-replica-and-partition, flattened ids with unordered groups), iota
// replica groups, the async -start/-done forms, and the reduction of every
// kind of element type.
const collectiveModesScript = `
import os, json
os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
import numpy as np
import jax
jax.config.update("jax_enable_x64", True)
import ml_dtypes
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from jax._src.lib import xla_client as xc
from jax._src import xla_bridge
from jaxlib import _hlo as xhlo
rng = np.random.default_rng(3)
manifest = []

REDUCERS = """
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] maximum(a, b)
}
"""

HLO_CASES = [
("cross_replica", 4, 1, [("f32", (4, 2))], REDUCERS + """
ENTRY e {
  p = f32[4,2] parameter(0)
  ar = f32[4,2] all-reduce(p), replica_groups={{0,2},{1,3}}, to_apply=add_f32
  mx = f32[4,2] all-reduce(p), replica_groups={}, to_apply=max_f32
  ag = f32[8,2] all-gather(p), replica_groups={{1,0},{3,2}}, dimensions={0}
  rs = f32[1,2] reduce-scatter(p), replica_groups={{0,1,2,3}}, dimensions={0}, to_apply=add_f32
  a2a = f32[4,2] all-to-all(p), replica_groups={{0,1},{2,3}}, dimensions={0}
  cp = f32[4,2] collective-permute(p), source_target_pairs={{0,3},{3,0},{1,2}}
  r = u32[] replica-id()
  ROOT t = (f32[4,2], f32[4,2], f32[8,2], f32[1,2], f32[4,2], f32[4,2], u32[]) tuple(ar, mx, ag, rs, a2a, cp, r)
}"""),
("iota_groups", 4, 1, [("f32", (2, 4))], REDUCERS + """
ENTRY e {
  p = f32[2,4] parameter(0)
  a = f32[2,4] all-reduce(p), replica_groups=[2,2]<=[2,2]T(1,0), to_apply=add_f32
  b = f32[4,4] all-gather(p), replica_groups=[2,2]<=[4], dimensions={0}
  c = f32[2,16] all-gather(p), replica_groups=[1,4]<=[2,2]T(1,0), dimensions={1}
  ROOT t = (f32[2,4], f32[4,4], f32[2,16]) tuple(a, b, c)
}"""),
("replica_and_partition", 2, 2, [("f32", (2, 4))], REDUCERS + """
ENTRY e {
  p = f32[2,4] parameter(0)
  everyone = f32[2,4] all-reduce(p), channel_id=1, replica_groups={{0,1}}, to_apply=add_f32
  per_replica = f32[2,4] all-reduce(p), channel_id=2, replica_groups={{0},{1}}, to_apply=add_f32
  gather_rp = f32[4,4] all-gather(p), channel_id=3, replica_groups={{0},{1}}, dimensions={0}
  cross_replica = f32[2,4] all-reduce(p), replica_groups={}, to_apply=add_f32
  cross_partition_a2a = f32[2,4] all-to-all(p), channel_id=4, replica_groups={{0,1}}, dimensions={1}
  permute_partitions = f32[2,4] collective-permute(p), channel_id=5, source_target_pairs={{0,1}}
  permute_replicas = f32[2,4] collective-permute(p), source_target_pairs={{1,0}}
  flat = f32[2,4] all-reduce(p), channel_id=6, replica_groups={{0,3},{1,2}}, use_global_device_ids=true, to_apply=add_f32
  flat_gather = f32[8,4] all-gather(p), channel_id=7, replica_groups={{3,2,1,0}}, dimensions={0}, use_global_device_ids=true
  r = u32[] replica-id()
  ROOT t = (f32[2,4], f32[2,4], f32[4,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[8,4], u32[]) tuple(everyone, per_replica, gather_rp, cross_replica, cross_partition_a2a, permute_partitions, permute_replicas, flat, flat_gather, r)
}"""),
("async_all_reduce", 4, 1, [("f32", (2, 3))], REDUCERS + """
ENTRY e {
  p = f32[2,3] parameter(0)
  ars = f32[2,3] all-reduce-start(p), replica_groups={}, to_apply=add_f32
  ard = f32[2,3] all-reduce-done(ars)
  ROOT t = (f32[2,3]) tuple(ard)
}"""),
("async_gather_permute", 4, 1, [("f32", (2, 3))], """
ENTRY e {
  p = f32[2,3] parameter(0)
  ags = (f32[2,3], f32[8,3]) all-gather-start(p), replica_groups={}, dimensions={0}
  agd = f32[8,3] all-gather-done(ags)
  cps = (f32[2,3], f32[2,3], u32[], u32[]) collective-permute-start(p), source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  cpd = f32[2,3] collective-permute-done(cps)
  ROOT t = (f32[8,3], f32[2,3]) tuple(agd, cpd)
}"""),
("dtypes", 4, 1, [("bf16", (3, 5)), ("pred", (6,)), ("s8", (6,)), ("u8", (6,)), ("f64", (4,)), ("c64", (4,)), ("f16", (5,)), ("f8e5m2", (8,)), ("f8e4m3fn", (8,)), ("bf16", (8,))], """
add_bf16 {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT s = bf16[] add(a, b)
}
and_pred {
  a = pred[] parameter(0)
  b = pred[] parameter(1)
  ROOT s = pred[] and(a, b)
}
or_pred {
  a = pred[] parameter(0)
  b = pred[] parameter(1)
  ROOT s = pred[] or(a, b)
}
mul_s8 {
  a = s8[] parameter(0)
  b = s8[] parameter(1)
  ROOT s = s8[] multiply(a, b)
}
min_u8 {
  a = u8[] parameter(0)
  b = u8[] parameter(1)
  ROOT s = u8[] minimum(a, b)
}
add_f64 {
  a = f64[] parameter(0)
  b = f64[] parameter(1)
  ROOT s = f64[] add(a, b)
}
mul_c64 {
  a = c64[] parameter(0)
  b = c64[] parameter(1)
  ROOT s = c64[] multiply(a, b)
}
add_f8e5m2 {
  a = f8e5m2[] parameter(0)
  b = f8e5m2[] parameter(1)
  ROOT s = f8e5m2[] add(a, b)
}
add_f8e4m3fn {
  a = f8e4m3fn[] parameter(0)
  b = f8e4m3fn[] parameter(1)
  ROOT s = f8e4m3fn[] add(a, b)
}
max_f16 {
  a = f16[] parameter(0)
  b = f16[] parameter(1)
  ROOT s = f16[] maximum(a, b)
}
ENTRY e {
  x = bf16[3,5] parameter(0)
  b = pred[6] parameter(1)
  i = s8[6] parameter(2)
  u = u8[6] parameter(3)
  d = f64[4] parameter(4)
  c = c64[4] parameter(5)
  h = f16[5] parameter(6)
  e5 = f8e5m2[8] parameter(7)
  e4 = f8e4m3fn[8] parameter(8)
  rb = bf16[8] parameter(9)
  se5 = f8e5m2[8] all-reduce(e5), replica_groups={}, to_apply=add_f8e5m2
  se4 = f8e4m3fn[8] all-reduce(e4), replica_groups={}, to_apply=add_f8e4m3fn
  rsb = bf16[2] reduce-scatter(rb), replica_groups={}, dimensions={0}, to_apply=add_bf16
  sx = bf16[3,5] all-reduce(x), replica_groups={}, to_apply=add_bf16
  ab = pred[6] all-reduce(b), replica_groups={}, to_apply=and_pred
  ob = pred[6] all-reduce(b), replica_groups={}, to_apply=or_pred
  mi = s8[6] all-reduce(i), replica_groups={}, to_apply=mul_s8
  mu = u8[6] all-reduce(u), replica_groups={}, to_apply=min_u8
  sd = f64[4] all-reduce(d), replica_groups={}, to_apply=add_f64
  mc = c64[4] all-reduce(c), replica_groups={}, to_apply=mul_c64
  mh = f16[5] all-reduce(h), replica_groups={}, to_apply=max_f16
  ROOT t = (bf16[3,5], pred[6], pred[6], s8[6], u8[6], f64[4], c64[4], f16[5], f8e5m2[8], f8e4m3fn[8], bf16[2]) tuple(sx, ab, ob, mi, mu, sd, mc, mh, se5, se4, rsb)
}"""),
]

def rand(dt, shape):
    if dt == "pred":
        return rng.random(shape) < 0.7
    if dt in ("s8", "u8"):
        return rng.integers(0 if dt == "u8" else -128, 128 if dt == "s8" else 256, size=shape).astype(np.int8 if dt == "s8" else np.uint8)
    if dt == "c64":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    x = rng.standard_normal(shape) * 30
    x.flat[0] = -0.0
    if dt.startswith("f8"):
        x = x / 3
    return x.astype({"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16, "f16": np.float16,
                     "f8e5m2": ml_dtypes.float8_e5m2, "f8e4m3fn": ml_dtypes.float8_e4m3fn}[dt])

be = xla_bridge.get_backend("cpu")
devs = be.devices()[:4]
mesh = Mesh(np.array(devs), ("x",))
for name, R, Pn, params, body in HLO_CASES:
    text = "HloModule %s, replica_count=%d, num_partitions=%d\n%s\n" % (name, R, Pn, body)
    with open(name + ".hlo", "w") as fh:
        fh.write(text)
    comp = xc.XlaComputation(xhlo.hlo_module_from_text(text).as_serialized_hlo_module_proto())
    opts = xc.CompileOptions()
    ebo = opts.executable_build_options
    ebo.num_replicas, ebo.num_partitions = R, Pn
    ebo.device_assignment = xc.DeviceAssignment.create(np.arange(4).reshape(R, Pn))
    if Pn > 1:
        ebo.use_spmd_partitioning = True
    exe = be.compile_and_load(xc._xla.mlir.xla_computation_to_mlir_module(comp), xc.DeviceList(tuple(devs)), opts)
    globals_ = []
    for k, (dt, shape) in enumerate(params):
        per = [rand(dt, shape) for _ in range(4)]
        for d in range(4):
            save(f"{name}.in{k}.dev{d}.npy", per[d])
        single = [jax.device_put(per[d], devs[d]) for d in range(4)]
        gshape = (4 * shape[0],) + tuple(shape[1:])
        globals_.append(jax.make_array_from_single_device_arrays(gshape, NamedSharding(mesh, P("x")), single))
    outs = exe.execute_sharded(globals_).disassemble_into_single_device_arrays()
    for k, o in enumerate(outs):
        for d in range(4):
            save(f"{name}.out{k}.dev{d}.npy", np.asarray(o[d]))
    manifest.append({"name": name, "inputs": len(params), "outputs": len(outs), "devices": 4})
with open("manifest.json", "w") as fh:
    json.dump(manifest, fh)
`

// TestCollectivesAgainstJAX runs the partitioned modules of jax.shard_map
// programs on 4 emulated devices (-e) with each device's input shards and
// compares every device's outputs bit for bit with the shards XLA:CPU
// computed.
func TestCollectivesAgainstJAX(t *testing.T) { compareCollectiveCases(t, collectivesScript, 10) }

// TestCollectiveModesAgainstXLA does the same for hand-written modules
// compiled and run by XLA:CPU directly.
func TestCollectiveModesAgainstXLA(t *testing.T) { compareCollectiveCases(t, collectiveModesScript, 5) }

// compareCollectiveCases runs a generator script that writes, per case,
// <name>.hlo, <name>.in<i>.dev<d>.npy, <name>.out<k>.dev<d>.npy and a
// manifest; it runs every module on all its devices and compares.
func compareCollectiveCases(t *testing.T, script string, minCases int) {
	needJAX(t)
	dir := t.TempDir()
	python(t, dir, script)
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name                     string
		Inputs, Outputs, Devices int
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < minCases {
		t.Fatalf("the generator produced only %d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			path := filepath.Join(dir, c.Name+".hlo")
			l, err := LoadModule(path, ModuleAuto)
			if err != nil {
				t.Fatal(err)
			}
			m := l.Module
			var inputs []*tensor.Tensor
			for d := range c.Devices {
				for i := range c.Inputs {
					inputs = append(inputs, readNpy(t, filepath.Join(dir, fmt.Sprintf("%s.in%d.dev%d.npy", c.Name, i, d))))
				}
			}
			res, err := Run(m, inputs, Options{EmulateDevices: AllDevices})
			if err != nil {
				t.Fatal(err)
			}
			if res.Devices != c.Devices || res.OutputsPerDevice != c.Outputs {
				t.Fatalf("ran %d devices with %d outputs each, want %d and %d", res.Devices, res.OutputsPerDevice, c.Devices, c.Outputs)
			}
			for d := range c.Devices {
				for k := range c.Outputs {
					want := readNpy(t, filepath.Join(dir, fmt.Sprintf("%s.out%d.dev%d.npy", c.Name, k, d)))
					sameTensor(t, fmt.Sprintf("device %d output %d", d, k), res.Outputs[d*c.Outputs+k], want)
				}
			}
		})
	}
}
