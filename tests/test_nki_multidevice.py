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
DEVICES = 4


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
