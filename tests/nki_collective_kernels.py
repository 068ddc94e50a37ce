"""Kernels with collectives for test_nki_multidevice.py and its generator
(nki_multidevice_gen.py): nl.all_reduce within one launch, and
nki.collectives across devices."""

import numpy as np

from goldtrace import nki
import goldtrace.nki.collectives as cc
import goldtrace.nki.language as nl


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


@nki.jit
def device_collectives(a):
    """nki.collectives on a (256, 64) shard, HBM to HBM except the SBUF min."""
    n = a.shape[0]
    s = nl.ndarray((n, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    mx = nl.ndarray((n, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    g = nl.ndarray((2 * n, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    r = nl.ndarray((n // 2, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((n, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    p = nl.ndarray((n, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    mn = nl.ndarray((n, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    everyone = cc.ReplicaGroup([[0, 1, 2, 3]])
    cc.all_reduce([a], [s], everyone, nl.add)
    cc.all_reduce([a], [mx], None, nl.maximum)
    cc.all_gather([a], [g], cc.ReplicaGroup([[0, 1], [2, 3]]), 0)
    cc.reduce_scatter([a], [r], cc.ReplicaGroup.from_partition_op(4, cc.rg_partition_op.mod, 2), 0, nl.add)
    cc.all_to_all([a], [t], everyone, 0)
    cc.collective_permute([a], [p], [(0, 1), (1, 2), (2, 3), (3, 0)])
    for i in nl.affine_range(n // 128):
        x = nl.load(a[i * 128:(i + 1) * 128, :])
        y = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.sbuf)
        cc.all_reduce(x, y, everyone, nl.minimum)
        nl.store(mn[i * 128:(i + 1) * 128, :], value=y)
    return s, mx, g, r, t, p, mn


@nki.jit
def alone(a):
    """nki.collectives over a rank list of device 0 alone: the identity on one device."""
    s = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    g = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    me = cc.ReplicaGroup([[0]])
    cc.all_reduce([a], [s], me, nl.add)
    cc.all_gather([a], [g], me, 0)
    return s, g


@nki.jit
def across_x(a):
    """all_reduce over devices 0 and 2 (mesh x=2, y=2: the devices with y = 0)."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    cc.all_reduce([a], [out], cc.ReplicaGroup([[0, 2]]), nl.add)
    return out
