package golden

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// spmdScript builds sharded JAX programs on 8 host devices (shard_map and
// jit over NamedShardings; 1-D and 2-D meshes; psum, all_gather,
// psum_scatter, all_to_all, ppermute, axis_index; partial manual axes,
// partial replication, uneven splits, collectives inside loops, a training
// step; GSPMD lowering too) and writes for each:
//
//	<name>.lowered.hlo   the unpartitioned module (Shardy custom-calls)
//	<name>.compiled.hlo  the module XLA:CPU partitioned (mesh-axes groups)
//	<name>.gin<i>.npy / <name>.gout<k>.npy  global inputs and jax's outputs
//	<name>.in<i>.dev<p>.npy / <name>.out<k>.dev<p>.npy  partition p's
//	    input and output buffers (padded to the compiled shapes)
const spmdScript = `
import os
os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
import jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from jax import shard_map
lx = jax.lax
devs = np.array(jax.devices())
mesh1 = Mesh(devs[:4], ("x",))
mesh8 = Mesh(devs, ("x",))
mesh2 = Mesh(devs.reshape(2, 4), ("x", "y"))
mesh2r = Mesh(devs[::-1].reshape(4, 2), ("a", "b"))
manifest = []

def f32(*s): return rng.standard_normal(s).astype(np.float32)
def i32(*s): return rng.integers(-1000, 1000, size=s, dtype=np.int32)

def pad_to(a, shape):
    out = np.zeros(shape, a.dtype)
    out[tuple(slice(0, n) for n in a.shape)] = a
    return out

def case(name, f, *args, compiled=True):
    lo = f.lower(*args)
    with open(name + ".lowered.hlo", "w") as fh: fh.write(lo.as_text(dialect="hlo"))
    outs = jax.tree.leaves(f(*args))
    flat = jax.tree.leaves(args)
    for i, a in enumerate(flat): save(f"{name}.gin{i}.npy", a)
    for k, o in enumerate(outs): save(f"{name}.gout{k}.npy", np.asarray(o))
    entry = {"name": name, "inputs": len(flat), "outputs": len(outs), "devices": 0}
    if compiled:
        co = lo.compile()
        with open(name + ".compiled.hlo", "w") as fh: fh.write(co.as_text())
        shardings = jax.tree.leaves(co.input_shardings[0])
        order = list(shardings[0]._device_assignment)
        ins = [jax.device_put(a, s) for a, s in zip(flat, shardings)]
        res = jax.tree.leaves(co(*jax.tree.unflatten(jax.tree.structure(args), ins)))
        for i, x in enumerate(ins):
            for sh in x.addressable_shards:
                save(f"{name}.in{i}.dev{order.index(sh.device)}.npy", np.asarray(sh.data))
        for k, r in enumerate(res):
            for sh in r.addressable_shards:
                save(f"{name}.out{k}.dev{order.index(sh.device)}.npy", np.asarray(sh.data))
        entry["devices"] = len(order)
    manifest.append(entry)

sm = lambda f, mesh, i, o, **kw: jax.jit(shard_map(f, mesh=mesh, in_specs=i, out_specs=o, **kw))

case("sm_psum_1d", sm(lambda a: lx.psum(a, "x"), mesh1, P("x"), P("x")), f32(16, 3))
case("sm_psum_int", sm(lambda a: (lx.psum(a, "x"), lx.pmax(a, "x")), mesh8, P("x"), (P("x"), P("x"))), i32(16, 3))
case("sm_2d_multi", sm(lambda a, c: (lx.psum(a, "x") + lx.psum(c.sum(), "y"), lx.all_gather(c, "y", tiled=True)),
     mesh2, (P("x", "y"), P("y")), (P(None, "y"), P(None)), check_vma=False), f32(8, 8), f32(8))
case("sm_scatter_a2a", sm(lambda a: (lx.psum_scatter(a, "y", scatter_dimension=1, tiled=True), lx.all_to_all(a, "x", 0, 1, tiled=True)),
     mesh2, P("x", None), (P("x", "y"), P("x", None))), f32(8, 16))
case("sm_ppermute", sm(lambda a: lx.ppermute(a, "y", [(i, (i + 1) % 4) for i in range(4)]) + lx.axis_index("y").astype(np.float32),
     mesh2, P("x", "y"), P("x", "y")), f32(4, 8))
case("sm_partial_manual", sm(lambda a: lx.psum(a, "x") * 2, mesh2, P("x"), P(), axis_names={"x"}), f32(8, 8))
def loop_body(a):
    def step(i, c): return c * 0.5 + lx.psum(c, "y") * 0.25 + i.astype(np.float32)
    return lx.fori_loop(0, 3, step, a)
case("sm_loop", sm(loop_body, mesh2, P("x", "y"), P("x", "y")), f32(4, 8))
case("sm_permuted_mesh", sm(lambda a: lx.psum(a, "b") + lx.axis_index("a").astype(np.float32), mesh2r, P("a", "b"), P("a", None)), f32(8, 4))
case("jit_matmul_2d", jax.jit(lambda x, y: jnp.tanh(x @ y).sum(0),
     in_shardings=(NamedSharding(mesh2, P("x", "y")), NamedSharding(mesh2, P("y", None)))), f32(8, 16), f32(16, 8))
case("jit_partial_replication", jax.jit(lambda x: (x * 2, x.sum(1)), in_shardings=NamedSharding(mesh2, P(None, "y")),
     out_shardings=(NamedSharding(mesh2, P("x", None)), NamedSharding(mesh2, P()))), f32(8, 8))
def uneven(x):
    y = lx.with_sharding_constraint(jnp.cumsum(x[:10], 0), NamedSharding(mesh1, P("x")))
    return (jnp.sin(y) * 2).sum(0), y[3:7] - y.mean(0)
case("jit_uneven", jax.jit(uneven, in_shardings=NamedSharding(mesh1, P("x")), out_shardings=NamedSharding(mesh1, P())), f32(12, 3))
def loss(w, x, y): return jnp.mean((jnp.tanh(x @ w["a"]) @ w["b"] - y) ** 2)
def train(w, x, y):
    g = jax.grad(loss)(w, x, y)
    return jax.tree.map(lambda p, q: p - 0.1 * q, w, g)
case("jit_train_step", jax.jit(train, in_shardings=({"a": NamedSharding(mesh2, P(None, "y")), "b": NamedSharding(mesh2, P("y", None))},
     NamedSharding(mesh2, P("x", None)), NamedSharding(mesh2, P("x", None)))),
     {"a": f32(6, 8), "b": f32(8, 2)}, f32(16, 6), f32(16, 2))
case("sm_no_inputs", sm(lambda: (lx.axis_index("x") * 10 + jnp.arange(2))[None], mesh1, (), P("x")), compiled=False)
jax.config.update("jax_use_shardy_partitioner", False)
case("gspmd_sm_psum", sm(lambda a: lx.psum(a, "y") + lx.axis_index("x").astype(np.float32), mesh2, P("x", "y"), P("x")), f32(8, 8))
with open("manifest.json", "w") as fh: json.dump(manifest, fh)
`

type spmdCase struct {
	Name                     string
	Inputs, Outputs, Devices int
}

func genSPMDCases(t *testing.T) (string, []spmdCase) {
	t.Helper()
	needJAX(t)
	dir := t.TempDir()
	python(t, dir, spmdScript)
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []spmdCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 12 {
		t.Fatalf("the generator produced only %d cases", len(cases))
	}
	return dir, cases
}

// TestSPMDGlobalAgainstJAX runs every unpartitioned module under -S on the
// global inputs and compares the global outputs with jax's: exactly for
// integers, within float tolerance otherwise (ops outside manual regions
// are computed globally, XLA computes them per device).
func TestSPMDGlobalAgainstJAX(t *testing.T) {
	dir, cases := genSPMDCases(t)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			l, err := LoadModule(filepath.Join(dir, c.Name+".lowered.hlo"), ModuleAuto)
			if err != nil {
				t.Fatal(err)
			}
			var inputs []*tensor.Tensor
			for i := range len(ParamLeaves(l.Module)) {
				inputs = append(inputs, readNpy(t, filepath.Join(dir, fmt.Sprintf("%s.gin%d.npy", c.Name, i))))
			}
			res, err := Run(l.Module, inputs, Options{SPMD: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.Devices != 1 || len(res.Outputs) != c.Outputs {
				t.Fatalf("%d devices, %d outputs; want 1 and %d", res.Devices, len(res.Outputs), c.Outputs)
			}
			for k := range c.Outputs {
				want := readNpy(t, filepath.Join(dir, fmt.Sprintf("%s.gout%d.npy", c.Name, k)))
				closeTensor(t, fmt.Sprintf("output %d", k), res.Outputs[k], want, 2e-5)
			}
		})
	}
}

// TestSPMDPartitionedAgainstJAX runs every XLA:CPU-partitioned module under
// -e with each partition's input buffers and compares every partition's
// outputs with XLA's.
func TestSPMDPartitionedAgainstJAX(t *testing.T) {
	dir, cases := genSPMDCases(t)
	meshGroups, withDeviceIDs := 0, 0
	for _, c := range cases {
		if c.Devices == 0 {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			path := filepath.Join(dir, c.Name+".compiled.hlo")
			l, err := LoadModule(path, ModuleAuto)
			if err != nil {
				t.Fatal(err)
			}
			for _, comp := range l.Module.Computations {
				for _, in := range comp.Instructions {
					if in.ReplicaGroups != nil && in.ReplicaGroups.Mesh != nil {
						meshGroups++
						if in.ReplicaGroups.Mesh.Mesh.DeviceIDs != nil {
							withDeviceIDs++
						}
					}
				}
			}
			leaves := ParamLeaves(l.Module)
			var inputs []*tensor.Tensor
			for d := range c.Devices {
				for i := range leaves {
					x := readNpy(t, filepath.Join(dir, fmt.Sprintf("%s.in%d.dev%d.npy", c.Name, i, d)))
					inputs = append(inputs, padTo(x, leaves[i].Shape.Dims))
				}
			}
			res, err := Run(l.Module, inputs, Options{EmulateDevices: AllDevices})
			if err != nil {
				t.Fatal(err)
			}
			if res.Devices != c.Devices || res.OutputsPerDevice != c.Outputs {
				t.Fatalf("ran %d devices with %d outputs each, want %d and %d", res.Devices, res.OutputsPerDevice, c.Devices, c.Outputs)
			}
			for d := range c.Devices {
				for k := range c.Outputs {
					want := readNpy(t, filepath.Join(dir, fmt.Sprintf("%s.out%d.dev%d.npy", c.Name, k, d)))
					got := res.Outputs[d*c.Outputs+k]
					closeTensor(t, fmt.Sprintf("device %d output %d", d, k), cropTo(got, want.Dims), want, 2e-5)
				}
			}
		})
	}
	if meshGroups == 0 || withDeviceIDs == 0 {
		t.Errorf("compiled modules used %d mesh-axes replica groups, %d with device_ids; want some of each", meshGroups, withDeviceIDs)
	}
}

// padTo zero-pads x to dims (XLA's buffers of an uneven split are padded).
func padTo(x *tensor.Tensor, dims []int64) *tensor.Tensor {
	if slices.Equal(x.Dims, dims) {
		return x
	}
	out := tensor.New(x.Type, dims)
	zero := make([]int64, len(dims))
	copyBlock(x, out, zero, x.Dims, true)
	return out
}

// cropTo cuts the padding off a partition's result.
func cropTo(x *tensor.Tensor, dims []int64) *tensor.Tensor {
	if slices.Equal(x.Dims, dims) || len(x.Dims) != len(dims) {
		return x
	}
	out := tensor.New(x.Type, dims)
	copyBlock(out, x, make([]int64, len(dims)), dims, false)
	return out
}

// closeTensor compares type and shape exactly, integers bit for bit and
// floats within rtol (relative to the largest magnitude of want; NaN
// matches NaN).
func closeTensor(t *testing.T, what string, got, want *tensor.Tensor, rtol float64) {
	t.Helper()
	if got.Type != want.Type || !slices.Equal(got.Dims, want.Dims) {
		t.Errorf("%s: got %v, want %v", what, got, want)
		return
	}
	if !got.Type.IsFloat() {
		sameTensor(t, what, got, want)
		return
	}
	n := int(got.NumElements())
	g, w := make([]float64, n), make([]float64, n)
	dtype.DecodeF64(got.Type, got.Data, g)
	dtype.DecodeF64(want.Type, want.Data, w)
	scale := 0.0
	for _, v := range w {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			scale = max(scale, math.Abs(v))
		}
	}
	for i := range g {
		if math.IsNaN(g[i]) && math.IsNaN(w[i]) || g[i] == w[i] {
			continue
		}
		if math.Abs(g[i]-w[i]) > rtol*max(scale, 1e-30) {
			t.Errorf("%s: element %d is %v, want %v (and maybe more)", what, i, g[i], w[i])
			return
		}
	}
}
