"""goldtrace.golden on sharded JAX programs: spmd=True takes global inputs and
returns global outputs for the unpartitioned module, emulate_devices runs the
XLA:CPU-partitioned one per device; checked against jax on 8 host devices
(run in a subprocess, since the device count is fixed when jax starts)."""

import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import goldtrace

GEN = r"""
import os, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import numpy as np, jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from jax import shard_map
out = sys.argv[1]
devs = np.array(jax.devices())
mesh = Mesh(devs.reshape(2, 4), ("x", "y"))
rng = np.random.default_rng(5)
a = rng.standard_normal((8, 8)).astype(np.float32)
c = rng.integers(-50, 50, size=(8,)).astype(np.int32)
def body(a, c):
    return jax.lax.psum(a, "x") * 2, jax.lax.psum(c, "y"), jax.lax.all_gather(a, "y", axis=1, tiled=True)
f = jax.jit(shard_map(body, mesh=mesh, in_specs=(P("x", "y"), P("y")), out_specs=(P(None, "y"), P(), P("x", None)), check_vma=False))
lo = f.lower(a, c)
open(os.path.join(out, "lowered.hlo"), "w").write(lo.as_text(dialect="hlo"))
co = lo.compile()
open(os.path.join(out, "compiled.hlo"), "w").write(co.as_text())
np.save(os.path.join(out, "a.npy"), a); np.save(os.path.join(out, "c.npy"), c)
for k, o in enumerate(f(a, c)):
    np.save(os.path.join(out, f"out{k}.npy"), np.asarray(o))
ins = [jax.device_put(x, s) for x, s in zip((a, c), co.input_shardings[0])]
order = list(co.input_shardings[0][0]._device_assignment)
for i, x in enumerate(ins):
    for sh in x.addressable_shards:
        np.save(os.path.join(out, f"in{i}.dev{order.index(sh.device)}.npy"), np.asarray(sh.data))
for k, r in enumerate(co(*ins)):
    for sh in r.addressable_shards:
        np.save(os.path.join(out, f"out{k}.dev{order.index(sh.device)}.npy"), np.asarray(sh.data))
"""


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    d = tmp_path_factory.mktemp("spmd")
    subprocess.run([sys.executable, "-c", GEN, str(d)], check=True, capture_output=True)
    return d


def test_spmd_global_in_global_out(sharded):
    d = sharded
    a, c = np.load(d / "a.npy"), np.load(d / "c.npy")
    out = goldtrace.golden((d / "lowered.hlo").read_text(), a, c, spmd=True)
    assert len(out) == 3 and len(out.per_device) == 1
    for k, got in enumerate(out):
        want = np.load(d / f"out{k}.npy")
        assert got.shape == want.shape and got.dtype == want.dtype
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        else:
            np.testing.assert_array_equal(got, want)


def test_partitioned_module_per_device(sharded, tmp_path):
    d = sharded
    shards = [np.load(d / f"in{i}.dev{p}.npy") for p in range(8) for i in range(2)]
    out = goldtrace.golden((d / "compiled.hlo").read_text(), *shards, emulate_devices=-1, output_dir=tmp_path)
    assert len(out.per_device) == 8
    for p, outs in enumerate(out.per_device):
        for k, got in enumerate(outs):
            want = np.load(d / f"out{k}.dev{p}.npy")
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
            # Every device's outputs are also under dev<p>/, device 0 too.
            np.testing.assert_array_equal(np.load(tmp_path / f"dev{p}" / f"value_output{k}.npy"), got)


def test_spmd_needs_global_inputs(sharded):
    d = sharded
    a, c = np.load(d / "a.npy"), np.load(d / "c.npy")
    with pytest.raises(goldtrace.GoldtraceError, match="shape"):
        goldtrace.golden((d / "lowered.hlo").read_text(), a[:4], c, spmd=True)


def test_xla_compat_bf16_maximum():
    text = """HloModule m
ENTRY e {
  a = bf16[3] parameter(0)
  b = bf16[3] parameter(1)
  ROOT r = bf16[3] maximum(a, b)
}
"""
    bf = ml_dtypes.bfloat16
    a = np.array([1e-40, -1e-40, 2.0], bf)
    b = np.zeros(3, bf)
    newest = goldtrace.golden(text, a, b)[0]
    old = goldtrace.golden(text, a, b, xla_compat="0.10")[0]
    # JAX 0.11.2's XLA:CPU keeps the subnormal, JAX 0.10's flushes it.
    assert newest.view(np.uint16).tolist() == [a[0].view(np.uint16), 0, a[2].view(np.uint16)]
    assert old.view(np.uint16).tolist() == [0, 0, a[2].view(np.uint16)]
    with pytest.raises(goldtrace.GoldtraceError, match="0.9"):
        goldtrace.golden(text, a, b, xla_compat="0.9")
