"""Writes the sharded JAX programs with NKI kernels that test_nki_multidevice.py
runs as goldens. Run as a script in a fresh process (the host device count is
fixed when jax starts): python nki_multidevice_gen.py OUTDIR.

For each program it saves the global input, JAX's own outputs (jax.jit on 4 CPU
devices, the kernels running in libgoldtrace's typed-FFI handler), the
unpartitioned module in the Neuron form (for golden(..., spmd=True)), the
XLA:CPU-partitioned module (for emulate_devices) with the per-device inputs
and outputs."""

import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
os.environ.setdefault("NEURON_PLATFORM_TARGET_OVERRIDE", "trn1")

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax import shard_map  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

from goldtrace import nki  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nki_collective_kernels import across_x, blocksum, device_collectives  # noqa: E402


def launch_local(a):
    k = blocksum[2](a)
    return k, jax.lax.psum(k, "x")


def kernel_collectives(a):
    return device_collectives(a)


def lax_collectives(a):
    """The same math with JAX's own collectives (mesh x=2, y=2: device 2x+y;
    rank lists {0,1},{2,3} are axis y, {0,2},{1,3} axis x)."""
    both = ("x", "y")
    return (jax.lax.psum(a, both), jax.lax.pmax(a, both), jax.lax.all_gather(a, "y", axis=0, tiled=True),
            jax.lax.psum_scatter(a, "x", scatter_dimension=0, tiled=True),
            jax.lax.all_to_all(a, both, 0, 0, tiled=True),
            jax.lax.ppermute(a, both, perm=[(0, 1), (1, 2), (2, 3), (3, 0)]), jax.lax.pmin(a, both))


def kernel_partial(a):
    return across_x(a)


def lax_partial(a):
    return jax.lax.psum(a, "x")


BLOCKS = P(("x", "y"))
PROGRAMS = {
    # name: (shard_map body, global input shape, in_specs, out_specs, mesh shape, pure-JAX reference body,
    #        shard_map's manual axes)
    "launch_local": (launch_local, (1024, 64), P("x"), (P("x"), P()), (4,), None, None),
    "device_collectives": (kernel_collectives, (1024, 64), BLOCKS, (BLOCKS,) * 7, (2, 2), lax_collectives, None),
    # Manual over x only: the region runs on devices 0 and 2 (y = 0).
    "partial_manual": (kernel_partial, (512, 64), P("x"), P(), (2, 2), lax_partial, {"x"}),
}


def _tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def save(out, name, body, shape, in_specs, out_specs, mesh_shape, ref, manual_axes):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    axes = ("x",) if len(mesh_shape) == 1 else ("x", "y")
    mesh = Mesh(np.array(jax.devices()).reshape(mesh_shape), axes)

    def sm(fn):
        kw = {"axis_names": manual_axes} if manual_axes else {}
        return jax.jit(shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False, **kw))

    f = sm(body)
    a = np.random.default_rng(len(name)).standard_normal(shape).astype(np.float32)
    np.save(os.path.join(d, "a.npy"), a)
    # JAX runs the program itself when its kernels stay on their device;
    # kernels with device collectives cannot (each device's kernel runs
    # alone in the typed-FFI handler): then the pure-JAX program is the
    # reference.
    for k, o in enumerate(_tuple((sm(ref) if ref else f)(a))):
        np.save(os.path.join(d, f"jax_out{k}.npy"), np.asarray(o))
    with nki.lowering("neuron"):
        open(os.path.join(d, "neuron.hlo"), "w").write(f.lower(a).as_text(dialect="hlo"))
    co = f.lower(a).compile()
    open(os.path.join(d, "partitioned.hlo"), "w").write(co.as_text())
    x = jax.device_put(a, co.input_shardings[0][0])
    order = list(co.input_shardings[0][0]._device_assignment)
    for sh in x.addressable_shards:
        np.save(os.path.join(d, f"in.dev{order.index(sh.device)}.npy"), np.asarray(sh.data))
    if ref:
        rc = sm(ref).lower(a).compile()
        results = rc(jax.device_put(a, rc.input_shardings[0][0]))
        order = list(rc.input_shardings[0][0]._device_assignment)
    else:
        results = co(x)
    for k, r in enumerate(_tuple(results)):
        for sh in r.addressable_shards:
            np.save(os.path.join(d, f"jax_out{k}.dev{order.index(sh.device)}.npy"), np.asarray(sh.data))


if __name__ == "__main__":
    for name, prog in PROGRAMS.items():
        save(sys.argv[1], name, *prog)
