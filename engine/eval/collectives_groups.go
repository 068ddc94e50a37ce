package eval

// Who takes part in a collective: XLA's group modes (collective_ops_utils.cc)
// turn replica_groups into lists of devices. Devices are numbered by their
// flattened id replica*num_partitions+partition, which is also the order in
// which the golden driver runs them.

import (
	"fmt"
	"strings"

	"goldtrace/engine/hlo"
)

// DeviceGrid is the replica × partition grid of a run and one device in it.
type DeviceGrid struct {
	Replicas, Partitions int64 // both ≥ 1
	Replica, Partition   int64 // this device
}

// Self is this device's flattened id.
func (g DeviceGrid) Self() int64 { return g.Replica*g.Partitions + g.Partition }

// Grid is the device grid the evaluator runs in and its device (what
// replica-id, partition-id and the collectives use).
func (ev *Evaluator) Grid() DeviceGrid { return ev.grid() }

// grid is the device grid an evaluator runs in: Options' counts when set,
// else the module's.
func (ev *Evaluator) grid() DeviceGrid {
	g := DeviceGrid{Replicas: ev.Options.ReplicaCount, Partitions: ev.Options.NumPartitions,
		Replica: ev.Options.ReplicaID, Partition: ev.Options.PartitionID}
	if g.Replicas <= 0 {
		g.Replicas = 1
		if ev.Module != nil {
			g.Replicas = max(ev.Module.ReplicaCount, 1)
		}
	}
	if g.Partitions <= 0 {
		g.Partitions = 1
		if ev.Module != nil {
			g.Partitions = max(ev.Module.NumPartitions, 1)
		}
	}
	return g
}

// GroupMode is how a collective's replica_groups name devices.
type GroupMode uint8

// The group modes of xla::CollectiveOpGroupMode.
const (
	// CrossReplica: groups hold replica ids; each partition meets separately.
	CrossReplica GroupMode = iota
	// CrossPartition: groups hold partition ids; each replica meets separately.
	CrossPartition
	// CrossReplicaAndPartition: groups hold replica ids, and every partition
	// of those replicas takes part.
	CrossReplicaAndPartition
	// FlattenedID: groups hold flattened ids replica*num_partitions+partition.
	FlattenedID
)

func (m GroupMode) String() string {
	return [...]string{"cross-replica", "cross-partition", "cross-replica-and-partition", "flattened-id"}[m]
}

// collectiveBase strips the async suffix: all-reduce-start is an all-reduce.
func collectiveBase(opcode string) string {
	base, _ := strings.CutSuffix(opcode, "-start")
	return base
}

// CollectiveGroupMode is the group mode of a collective instruction: without
// channel_id cross-replica; with it, cross-partition for the ops that have no
// use_global_device_ids attribute (all-to-all, collective-permute,
// collective-broadcast), else cross-replica-and-partition or, with
// use_global_device_ids=true, flattened ids.
func CollectiveGroupMode(in *hlo.Instruction) (GroupMode, error) {
	hasGlobalIDs := false
	switch collectiveBase(in.Opcode) {
	case "all-reduce", "all-gather", "reduce-scatter":
		hasGlobalIDs = true
	}
	switch {
	case in.ChannelID == 0 && in.UseGlobalDeviceIDs:
		return 0, fmt.Errorf("use_global_device_ids=true needs a channel_id")
	case in.ChannelID == 0:
		return CrossReplica, nil
	case !hasGlobalIDs:
		return CrossPartition, nil
	case !in.UseGlobalDeviceIDs:
		return CrossReplicaAndPartition, nil
	}
	return FlattenedID, nil
}

// ExpandReplicaGroups returns replica_groups as explicit groups, expanding
// the iota form [G,S]<=[dims]T(perm): an iota over prod(dims), reshaped to
// dims, transposed by perm and read row-major in groups of S. Nil or empty
// groups return nil (one group of everyone).
func ExpandReplicaGroups(rg *hlo.ReplicaGroups) ([][]int64, error) {
	if rg == nil {
		return nil, nil
	}
	if rg.Mesh != nil {
		// Mesh-axes groups name device ids of the mesh.
		return rg.Mesh.Expand()
	}
	if rg.Iota == nil {
		if len(rg.Groups) == 0 {
			return nil, nil
		}
		return rg.Groups, nil
	}
	io := rg.Iota
	n := int64(1)
	for _, d := range io.ReshapeDims {
		if d <= 0 {
			return nil, fmt.Errorf("iota replica groups: reshape dimension %d is not positive", d)
		}
		n *= d
	}
	g, s := io.GroupShape[0], io.GroupShape[1]
	if g <= 0 || s <= 0 || g*s != n {
		return nil, fmt.Errorf("iota replica groups: [%d,%d] does not hold the %d ids of %v", g, s, n, io.ReshapeDims)
	}
	perm := io.Transpose
	if len(perm) == 0 {
		perm = make([]int64, len(io.ReshapeDims))
		for i := range perm {
			perm[i] = int64(i)
		}
	}
	if !isPermutation(perm, len(io.ReshapeDims)) {
		return nil, fmt.Errorf("iota replica groups: T%v is not a permutation of %d dimensions", perm, len(io.ReshapeDims))
	}
	// Walk the transposed array in row-major order; the value at each
	// position is the row-major index of the source element it came from.
	rank := len(perm)
	tdims := make([]int64, rank)
	srcStride := make([]int64, rank) // stride in the source of each transposed dim
	stride := int64(1)
	strides := make([]int64, rank)
	for i := rank - 1; i >= 0; i-- {
		strides[i] = stride
		stride *= io.ReshapeDims[i]
	}
	for i, p := range perm {
		tdims[i] = io.ReshapeDims[p]
		srcStride[i] = strides[p]
	}
	ids := make([]int64, 0, n)
	idx := make([]int64, rank)
	for range n {
		v := int64(0)
		for i, x := range idx {
			v += x * srcStride[i]
		}
		ids = append(ids, v)
		for i := rank - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < tdims[i] {
				break
			}
			idx[i] = 0
		}
	}
	groups := make([][]int64, g)
	for i := range groups {
		groups[i] = ids[int64(i)*s : int64(i+1)*s : int64(i+1)*s]
	}
	return groups, nil
}

func isPermutation(p []int64, n int) bool {
	if len(p) != n {
		return false
	}
	seen := make([]bool, n)
	for _, x := range p {
		if x < 0 || x >= int64(n) || seen[x] {
			return false
		}
		seen[x] = true
	}
	return true
}

// CollectiveParticipants returns the flattened ids of the devices that take
// part with device g.Self() in one execution of the collective in, in group
// order (which fixes concatenation and reduction order), and the device's
// position among them.
func CollectiveParticipants(in *hlo.Instruction, g DeviceGrid) ([]int64, int, error) {
	mode, err := CollectiveGroupMode(in)
	if err != nil {
		return nil, 0, err
	}
	groups, err := ExpandReplicaGroups(in.ReplicaGroups)
	if err != nil {
		return nil, 0, err
	}
	// The id this device has in the groups, and how many such ids exist.
	var id, domain int64
	switch mode {
	case CrossReplica, CrossReplicaAndPartition:
		id, domain = g.Replica, g.Replicas
	case CrossPartition:
		id, domain = g.Partition, g.Partitions
	case FlattenedID:
		id, domain = g.Self(), g.Replicas*g.Partitions
	}
	group, err := groupOf(groups, id, domain, mode)
	if err != nil {
		return nil, 0, err
	}
	var devs []int64
	for _, m := range group {
		switch mode {
		case CrossReplica:
			devs = append(devs, m*g.Partitions+g.Partition)
		case CrossPartition:
			devs = append(devs, g.Replica*g.Partitions+m)
		case CrossReplicaAndPartition:
			for p := range g.Partitions {
				devs = append(devs, m*g.Partitions+p)
			}
		case FlattenedID:
			devs = append(devs, m)
		}
	}
	self := g.Self()
	rank := -1
	for i, d := range devs {
		if d == self {
			rank = i
		}
	}
	if rank < 0 {
		return nil, 0, fmt.Errorf("device %d is not among its group's devices %v", self, devs)
	}
	return devs, rank, nil
}

// groupOf finds the group holding id, checking every member is in range;
// no groups means one group of all domain ids.
func groupOf(groups [][]int64, id, domain int64, mode GroupMode) ([]int64, error) {
	if len(groups) == 0 {
		all := make([]int64, domain)
		for i := range all {
			all[i] = int64(i)
		}
		return all, nil
	}
	var found []int64
	for _, grp := range groups {
		for _, m := range grp {
			if m < 0 || m >= domain {
				return nil, fmt.Errorf("replica group %v names id %d, but %s ids go up to %d", grp, m, mode, domain-1)
			}
			if m == id {
				if found != nil {
					return nil, fmt.Errorf("id %d is in more than one replica group", id)
				}
				found = grp
			}
		}
	}
	if found == nil {
		return nil, fmt.Errorf("id %d (%s) is in no replica group of %v", id, mode, groups)
	}
	return found, nil
}

// permuteLine returns, for collective-permute, the devices that share this
// device's other coordinate (all replicas of this partition without
// channel_id, all partitions of this replica with it) indexed by the id the
// source_target_pairs use, and this device's id. Pairs naming ids beyond the
// line name no device: nothing is sent from or to them.
func permuteLine(in *hlo.Instruction, g DeviceGrid) ([]int64, int64, error) {
	mode, err := CollectiveGroupMode(in)
	if err != nil {
		return nil, 0, err
	}
	var devs []int64
	var self int64
	if mode == CrossReplica {
		for r := range g.Replicas {
			devs = append(devs, r*g.Partitions+g.Partition)
		}
		self = g.Replica
	} else {
		for p := range g.Partitions {
			devs = append(devs, g.Replica*g.Partitions+p)
		}
		self = g.Partition
	}
	return devs, self, nil
}
