"""Kernels inside multi-device goldens: sharded JAX programs (shard_map over 4
CPU devices) calling NKI kernels, written by nki_multidevice_gen.py in a
subprocess, run as goldens two ways — the unpartitioned module in the Neuron
form with spmd=True (global in, global out) and the XLA:CPU-partitioned module
per device (emulate_devices) — and checked against numpy math per shard and
against JAX's own run of the same program."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import goldtrace
from goldtrace import nki

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
DEVICES = 4


@pytest.fixture(autouse=True)
def _target(monkeypatch):
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn1")


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    d = tmp_path_factory.mktemp("nki_multidevice")
    r = subprocess.run([sys.executable, os.path.join(HERE, "nki_multidevice_gen.py"), str(d)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    return d


def _shards(a):
    return np.split(a, DEVICES)


def launch_local_numpy(a):
    """blocksum per device: each device's launch sums its own two 128-row
    blocks (f32, instance order), doubles; then psum across devices."""
    local = []
    for s in _shards(a):
        half = (s[:128] + s[128:]) * np.float32(2.0)
        local.append(np.concatenate([half, half]))
    total = np.zeros_like(local[0])
    for x in local:
        total = total + x
    return np.concatenate(local), total, local


def test_launch_local_all_reduce_runs_per_device_spmd(programs):
    d = programs / "launch_local"
    a = np.load(d / "a.npy")
    text = (d / "neuron.hlo").read_text()
    configs = re.findall(r'custom_call_target="AwsNeuronCustomNativeKernel".*?backend_config="([^"]+)"', text)
    assert len(configs) == 1 and nki.decode_backend_config(configs[0])["has_collectives"] is True
    out = goldtrace.golden(text, a, spmd=True)
    want_k, want_sum, _ = launch_local_numpy(a)
    np.testing.assert_array_equal(out[0], want_k)
    np.testing.assert_array_equal(out[1], want_sum)
    # JAX ran the same program (kernels through the typed-FFI handler).
    np.testing.assert_array_equal(out[0], np.load(d / "jax_out0.npy"))
    np.testing.assert_array_equal(out[1], np.load(d / "jax_out1.npy"))


def test_launch_local_all_reduce_runs_per_device_partitioned(programs):
    d = programs / "launch_local"
    text = (d / "partitioned.hlo").read_text()
    assert "num_partitions=4" in text and 'custom_call_target="goldtrace_nki_kernel"' in text
    shards = [np.load(d / f"in.dev{p}.npy") for p in range(DEVICES)]
    out = goldtrace.golden(text, *shards, emulate_devices=-1)
    _, want_sum, local = launch_local_numpy(np.concatenate(shards))
    assert len(out.per_device) == DEVICES
    for p, outs in enumerate(out.per_device):
        np.testing.assert_array_equal(outs[0], local[p])
        np.testing.assert_array_equal(outs[1], want_sum)
        for k in range(2):
            np.testing.assert_array_equal(outs[k], np.load(d / f"jax_out{k}.dev{p}.npy"))


# ---- nki.collectives: device collectives across the emulated devices ----


def device_collectives_numpy(shards):
    """What device_collectives computes on device d of 4 (mesh x=2, y=2),
    in float32: sums from +0 in rank-list order."""
    n = shards[0].shape[0]
    total = np.zeros_like(shards[0])
    for s in shards:
        total = total + s
    outs = []
    for d in range(DEVICES):
        y_list = [2 * (d // 2), 2 * (d // 2) + 1]  # {0,1}, {2,3}
        x_list = [d % 2, d % 2 + 2]  # {0,2}, {1,3}; d is at position d // 2
        scat = np.zeros_like(shards[0][: n // 2])
        for m in x_list:
            scat = scat + shards[m][(d // 2) * (n // 2):(d // 2 + 1) * (n // 2)]
        outs.append([
            total,
            np.maximum.reduce(shards),
            np.concatenate([shards[m] for m in y_list]),
            scat,
            np.concatenate([shards[m][d * n // 4:(d + 1) * n // 4] for m in range(DEVICES)]),
            shards[(d - 1) % DEVICES],
            np.minimum.reduce(shards),
        ])
    return outs


def test_device_collectives_spmd_match_jax_collectives(programs):
    d = programs / "device_collectives"
    a = np.load(d / "a.npy")
    text = (d / "neuron.hlo").read_text()
    out = goldtrace.golden(text, a, spmd=True)
    want = device_collectives_numpy(_shards(a))
    assert len(out) == 7
    for k in range(7):
        # Bit for bit what JAX's own psum / pmax / all_gather / psum_scatter /
        # all_to_all / ppermute / pmin give on 4 CPU devices.
        np.testing.assert_array_equal(out[k], np.load(d / f"jax_out{k}.npy"), err_msg=f"output {k}")
        # And the math per shard.
        np.testing.assert_array_equal(out[k], np.concatenate([w[k] for w in want]), err_msg=f"output {k}")


def test_device_collectives_partitioned_per_device(programs):
    d = programs / "device_collectives"
    shards = [np.load(d / f"in.dev{p}.npy") for p in range(DEVICES)]
    out = goldtrace.golden((d / "partitioned.hlo").read_text(), *shards, emulate_devices=-1)
    want = device_collectives_numpy(shards)
    for p, outs in enumerate(out.per_device):
        for k in range(7):
            np.testing.assert_array_equal(outs[k], np.load(d / f"jax_out{k}.dev{p}.npy"), err_msg=f"device {p} output {k}")
            np.testing.assert_array_equal(outs[k], want[p][k], err_msg=f"device {p} output {k}")


def test_device_collectives_in_a_partially_manual_region(programs):
    # shard_map over x only on a 2x2 mesh: the region runs on devices 0 and
    # 2, and the kernel's rank list [0, 2] names exactly those.
    d = programs / "partial_manual"
    a = np.load(d / "a.npy")
    out = goldtrace.golden((d / "neuron.hlo").read_text(), a, spmd=True)
    np.testing.assert_array_equal(out[0], np.load(d / "jax_out0.npy"))
    np.testing.assert_array_equal(out[0], np.float32(0) + a[:256] + a[256:])


def test_device_collectives_on_one_device():
    import jax

    from nki_collective_kernels import alone, device_collectives

    a = np.random.default_rng(3).standard_normal((256, 64)).astype(np.float32)
    # A rank list of device 0 alone is the identity, in the simulator and in
    # jax.jit on one CPU device (+0 from the sum's identity: -0 becomes +0).
    a[0, 0] = -0.0
    for s, g in (nki.simulate_kernel(alone, a), (np.asarray(x) for x in jax.jit(alone)(a))):
        np.testing.assert_array_equal(s, a + np.float32(0))
        assert not np.signbit(s[0, 0])
        np.testing.assert_array_equal(g, a)
    # Rank lists naming devices that are not there: an error naming the
    # instruction and the kernel's line, never a guess.
    with pytest.raises(nki.KernelRuntimeError, match=r"nki_collective_kernels.py:\d+: cc_all_reduce: replica group \[0 1 2 3\] names device 1, but the kernel runs on one device"):
        nki.simulate_kernel(device_collectives, a)
    with pytest.raises(Exception, match="cc_all_reduce: replica group"):
        jax.jit(device_collectives)(a)
    # A golden of one device: the same error.
    with nki.lowering("neuron"):
        text = jax.jit(device_collectives).lower(a).as_text(dialect="hlo")
    with pytest.raises(goldtrace.GoldtraceError, match="cc_all_reduce: replica group"):
        goldtrace.golden(text, a)


def test_collectives_api_errors():
    import goldtrace.nki.collectives as cc
    import goldtrace.nki.language as nl

    with pytest.raises(nki.KernelError, match="rank 1 is in two rank lists"):
        cc.ReplicaGroup([[0, 1], [1, 2]])
    with pytest.raises(nki.KernelError, match="different sizes"):
        cc.ReplicaGroup([[0, 1], [2]])
    assert cc.ReplicaGroup.from_partition_op(8, cc.rg_partition_op.div, 4) == cc.ReplicaGroup([[0, 1, 2, 3], [4, 5, 6, 7]])
    assert cc.ReplicaGroup.from_partition_op(8, cc.rg_partition_op.mod, 4) == cc.ReplicaGroup([[0, 4], [1, 5], [2, 6], [3, 7]])
    assert cc.ReplicaGroup.from_partition_op(4, cc.rg_partition_op.bitwise_and, 0) == cc.ReplicaGroup([[0, 1, 2, 3]])

    @nki.jit
    def bad_op(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        cc.all_reduce([a], [out], None, nl.multiply)
        return out

    @nki.jit
    def bad_shape(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        cc.all_gather([a], [out], cc.ReplicaGroup([[0, 1]]), 0)
        return out

    @nki.jit
    def rank(a):
        return cc.rank_id()

    x = np.zeros((8, 16), np.float32)
    with pytest.raises(nki.KernelError, match="op must be nl.add, nl.minimum or nl.maximum, got multiply"):
        nki.simulate_kernel(bad_op, x)
    with pytest.raises(nki.KernelError, match=r"test_nki_multidevice.py:\d+: cc_all_gather: src tile \(8, 16\) and dst tile \(8, 16\) do not fit"):
        nki.simulate_kernel(bad_shape, x)
    with pytest.raises(nki.KernelUnsupportedError, match="rank_id is not implemented"):
        nki.simulate_kernel(rank, x)
