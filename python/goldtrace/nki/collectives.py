"""goldtrace.nki.collectives: device collectives, the newer NKI API's
`nki.collectives` (the legacy neuronxcc.nki API has none: its only collective is
nl.all_reduce, across the program instances of one launch).

These leave the device: ranks are device ids, and an operation meets the same
instruction of the same kernel on the other devices. Inside a multi-device
golden (goldtrace.golden(..., spmd=True) on a shard_map program, or
emulate_devices on a partitioned one) the ranks are the emulated devices and
the results follow the HLO collectives of the same names (reductions from the
op's identity, folded in replica-group order in float32, rounded once to the
destination's dtype). Run anywhere else (simulate_kernel, jax.jit on one CPU
device) the kernel is on one device, rank 0: a group of that device alone is
the identity, and a group naming other devices is a KernelRuntimeError naming
the instruction.

Every function takes lists of tensors (`srcs`, `dsts`; one tensor alone is
accepted too) and emits one instruction per (src, dst) pair, in order.
`priority` (DMA quality of service) and `name` are accepted and do not change
results.
"""

from enum import Enum

import numpy as np

from ._trace import as_tile, require
from .errors import KernelError, KernelUnsupportedError, user_location
from .language import op_name

__all__ = ["ReplicaGroup", "rg_partition_op", "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
           "collective_permute"]


class rg_partition_op(Enum):
    """How ReplicaGroup.from_partition_op maps a rank to its rank-list id."""

    bitwise_and = "bitwise_and"
    div = "div"
    mod = "mod"


class ReplicaGroup:
    """The rank-lists a collective runs in: ReplicaGroup([[0, 1], [2, 3]]) runs
    it within ranks 0-1 and within ranks 2-3. No rank may be in two lists, and
    the lists must be of one size. ReplicaGroup() (or None where a group is
    expected) is one list of every device."""

    def __init__(self, groups=None):
        if groups is None:
            self.groups = None
            return
        try:
            gs = [[int(r) for r in g] for g in groups]
        except TypeError:
            raise KernelError(f"{user_location()}: ReplicaGroup takes a list of rank lists, got {groups!r}") from None
        if not gs or any(not g for g in gs):
            raise KernelError(f"{user_location()}: ReplicaGroup {groups!r} has an empty rank list")
        if len({len(g) for g in gs}) != 1:
            raise KernelError(f"{user_location()}: ReplicaGroup {gs} mixes rank lists of different sizes")
        seen = set()
        for r in (r for g in gs for r in g):
            if r < 0:
                raise KernelError(f"{user_location()}: ReplicaGroup {gs} names rank {r}; ranks are device ids, from 0")
            if r in seen:
                raise KernelError(f"{user_location()}: rank {r} is in two rank lists of ReplicaGroup {gs}")
            seen.add(r)
        self.groups = gs

    @staticmethod
    def from_partition_op(world_size, op, operand):
        """Partition ranks [0, world_size): ranks with equal op(rank, operand) form one list."""
        ops = {rg_partition_op.bitwise_and: lambda r: r & operand, rg_partition_op.div: lambda r: r // operand,
               rg_partition_op.mod: lambda r: r % operand}
        if op not in ops:
            raise KernelError(f"{user_location()}: from_partition_op: op must be an rg_partition_op, got {op!r}")
        lists = {}
        for r in range(int(world_size)):
            lists.setdefault(ops[op](r), []).append(r)
        return ReplicaGroup([lists[k] for k in sorted(lists)])

    def _attrs(self):
        if self.groups is None:
            return {}
        return {"replica_groups": [r for g in self.groups for r in g], "group_size": len(self.groups[0])}

    def __eq__(self, other):
        return isinstance(other, ReplicaGroup) and self.groups == other.groups

    def __repr__(self):
        return f"ReplicaGroup({self.groups!r})" if self.groups is not None else "ReplicaGroup()"


def _group(replica_group, fn):
    if replica_group is None:
        return ReplicaGroup()
    if isinstance(replica_group, ReplicaGroup):
        return replica_group
    if isinstance(replica_group, (list, tuple)):
        return ReplicaGroup(replica_group)
    raise KernelError(f"{user_location()}: {fn}: replica_group must be a ReplicaGroup, got {type(replica_group).__name__}")


def _pairs(srcs, dsts, fn):
    s = list(srcs) if isinstance(srcs, (list, tuple)) else [srcs]
    d = list(dsts) if isinstance(dsts, (list, tuple)) else [dsts]
    if not s or len(s) != len(d):
        raise KernelError(f"{user_location()}: {fn}: srcs and dsts must be lists of one length, got {len(s)} and {len(d)}")
    return [(as_tile(x, f"{fn} src"), as_tile(y, f"{fn} dst")) for x, y in zip(s, d)]


def _reduce_op(op, fn):
    name = op_name(op)
    if name not in ("add", "maximum", "minimum"):
        raise KernelError(f"{user_location()}: {fn}: op must be nl.add, nl.minimum or nl.maximum, got {name}")
    return name


def _dim(collective_dim, fn):
    if not isinstance(collective_dim, (int, np.integer)) or isinstance(collective_dim, bool):
        raise KernelError(f"{user_location()}: {fn}: collective_dim must be an int, got {collective_dim!r}")
    return int(collective_dim)


def _emit(fn, op, srcs, dsts, attrs):
    tr = require(f"nki.collectives.{fn}")
    tr.has_collectives = True
    for s, d in _pairs(srcs, dsts, fn):
        tr.emit(op, [d], [s], attrs)


def all_reduce(srcs, dsts, replica_group, op, priority=None, name=None):
    """dst = the reduction (op: nl.add / nl.minimum / nl.maximum) of src over the devices of this device's rank list."""
    _emit("all_reduce", "cc_all_reduce", srcs, dsts, {"op": _reduce_op(op, "all_reduce"), **_group(replica_group, "all_reduce")._attrs()})


def all_gather(srcs, dsts, replica_group, collective_dim, priority=None, name=None):
    """dst = the rank list's srcs concatenated along collective_dim, in rank-list order."""
    _emit("all_gather", "cc_all_gather", srcs, dsts,
          {"collective_dim": _dim(collective_dim, "all_gather"), **_group(replica_group, "all_gather")._attrs()})


def reduce_scatter(srcs, dsts, replica_group, collective_dim, op, priority=None, name=None):
    """dst = block i (along collective_dim) of the rank list's reduction, i = this device's position in its list."""
    _emit("reduce_scatter", "cc_reduce_scatter", srcs, dsts,
          {"op": _reduce_op(op, "reduce_scatter"), "collective_dim": _dim(collective_dim, "reduce_scatter"),
           **_group(replica_group, "reduce_scatter")._attrs()})


def all_to_all(srcs, dsts, replica_group, collective_dim, priority=None, name=None):
    """Block j of src (along collective_dim) goes to member j; dst = the blocks received, in rank-list order (HBM)."""
    _emit("all_to_all", "cc_all_to_all", srcs, dsts,
          {"collective_dim": _dim(collective_dim, "all_to_all"), **_group(replica_group, "all_to_all")._attrs()})


def collective_permute(srcs, dsts, source_target_pairs, priority=None, name=None):
    """dst = src of the device whose (source, target) pair targets this one; a device
    no pair targets leaves dst as it was (HBM)."""
    try:
        pairs = [(int(a), int(b)) for a, b in source_target_pairs]
    except (TypeError, ValueError):
        raise KernelError(f"{user_location()}: collective_permute: source_target_pairs must be (source, target) pairs, got {source_target_pairs!r}") from None
    _emit("collective_permute", "cc_collective_permute", srcs, dsts, {"source_target_pairs": [r for p in pairs for r in p]})


def _unsupported(name):
    def f(*args, **kwargs):
        raise KernelUnsupportedError(
            f"{user_location()}: nki.collectives.{name} is not implemented by goldtrace "
            "(all_reduce, all_gather, reduce_scatter, all_to_all and collective_permute are)")

    f.__name__ = name
    return f


all_to_all_v = _unsupported("all_to_all_v")
collective_permute_implicit = _unsupported("collective_permute_implicit")
collective_permute_implicit_reduce = _unsupported("collective_permute_implicit_reduce")
collective_permute_implicit_current_processing_rank_id = _unsupported("collective_permute_implicit_current_processing_rank_id")
rank_id = _unsupported("rank_id")
