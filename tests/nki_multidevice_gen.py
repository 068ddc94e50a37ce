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
import goldtrace.nki.language as nl  # noqa: E402


@nki.jit
def blocksum(a):
    """Program instance i loads row block i; nl.all_reduce sums the blocks
    across the launch's instances; every block of the output is that sum."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i = nl.program_id(0)
    ip, jf = nl.mgrid[0:128, 0:64]
    s = nl.all_reduce(nl.load(a[i * 128 + ip, jf]), op=np.add)
    nl.store(out[i * 128 + ip, jf], value=nl.multiply(s, 2.0))
    return out


def launch_local(a):
    k = blocksum[2](a)
    return k, jax.lax.psum(k, "x")


PROGRAMS = {
    # name: (shard_map body, input, in_specs, out_specs)
    "launch_local": (launch_local, (1024, 64), P("x"), (P("x"), P())),
}


def save(out, name, body, shape, in_specs, out_specs):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    mesh = Mesh(np.array(jax.devices()), ("x",))
    f = jax.jit(shard_map(body, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False))
    a = np.random.default_rng(len(name)).standard_normal(shape).astype(np.float32)
    np.save(os.path.join(d, "a.npy"), a)
    for k, o in enumerate(f(a)):
        np.save(os.path.join(d, f"jax_out{k}.npy"), np.asarray(o))
    with nki.lowering("neuron"):
        open(os.path.join(d, "neuron.hlo"), "w").write(f.lower(a).as_text(dialect="hlo"))
    co = f.lower(a).compile()
    open(os.path.join(d, "partitioned.hlo"), "w").write(co.as_text())
    x = jax.device_put(a, co.input_shardings[0][0])
    order = list(co.input_shardings[0][0]._device_assignment)
    for sh in x.addressable_shards:
        np.save(os.path.join(d, f"in.dev{order.index(sh.device)}.npy"), np.asarray(sh.data))
    for k, r in enumerate(co(x)):
        for sh in r.addressable_shards:
            np.save(os.path.join(d, f"jax_out{k}.dev{order.index(sh.device)}.npy"), np.asarray(sh.data))


if __name__ == "__main__":
    for name, prog in PROGRAMS.items():
        save(sys.argv[1], name, *prog)
