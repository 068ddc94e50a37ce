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
// compiled it (the SPMD-partitioned per-device module, num_partitions=4),
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

// TestCollectivesAgainstJAX runs the partitioned modules on 4 emulated
// devices (-S) with each device's input shards and compares every device's
// outputs bit for bit with the shards XLA:CPU computed.
func TestCollectivesAgainstJAX(t *testing.T) {
	needJAX(t)
	dir := t.TempDir()
	python(t, dir, collectivesScript)
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
	if len(cases) < 10 {
		t.Fatalf("the generator produced only %d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			l, err := LoadModule(filepath.Join(dir, c.Name+".hlo"), ModuleAuto)
			if err != nil {
				t.Fatal(err)
			}
			var inputs []*tensor.Tensor
			for d := range c.Devices {
				for i := range c.Inputs {
					inputs = append(inputs, readNpy(t, filepath.Join(dir, fmt.Sprintf("%s.in%d.dev%d.npy", c.Name, i, d))))
				}
			}
			res, err := Run(l.Module, inputs, Options{SPMD: true})
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
