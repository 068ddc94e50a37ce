package ir

import (
	"fmt"
	"slices"

	"goldtrace/engine/dtype"
	"goldtrace/kernel/ir/irpb"
)

// Static rules of the device collectives (cc_*); kernel/sim checks what
// depends on the number of devices when the kernel runs.

// ReplicaGroups splits a cc_* instruction's replica_groups attribute (flat
// ids, group_size per group; no group_size: one group) into groups. nil means
// no replica_groups: one group of every device.
func ReplicaGroups(in *irpb.Instruction) ([][]int64, error) {
	flat := in.Attrs["replica_groups"].GetInts().GetV()
	if len(flat) == 0 {
		return nil, nil
	}
	gs := int64(len(flat))
	if a := in.Attrs["group_size"]; a != nil {
		gs = a.GetI()
	}
	if gs <= 0 || int64(len(flat))%gs != 0 {
		return nil, fmt.Errorf("replica_groups of %d ids do not split into groups of %d", len(flat), gs)
	}
	seen := map[int64]bool{}
	var groups [][]int64
	for i := int64(0); i < int64(len(flat)); i += gs {
		g := slices.Clone(flat[i : i+gs])
		for _, r := range g {
			if r < 0 {
				return nil, fmt.Errorf("replica group %v names rank %d; ranks are device ids, from 0", g, r)
			}
			if seen[r] {
				return nil, fmt.Errorf("rank %d is in more than one replica group", r)
			}
			seen[r] = true
		}
		groups = append(groups, g)
	}
	return groups, nil
}

// SourceTargetPairs reads cc_collective_permute's flattened pairs; no rank
// may send twice or receive twice.
func SourceTargetPairs(in *irpb.Instruction) ([][2]int64, error) {
	flat := in.Attrs["source_target_pairs"].GetInts().GetV()
	if len(flat)%2 != 0 {
		return nil, fmt.Errorf("source_target_pairs has %d ids, not a list of (source, target) pairs", len(flat))
	}
	src, dst := map[int64]bool{}, map[int64]bool{}
	var pairs [][2]int64
	for i := 0; i < len(flat); i += 2 {
		p := [2]int64{flat[i], flat[i+1]}
		if p[0] < 0 || p[1] < 0 {
			return nil, fmt.Errorf("pair (%d, %d) names a negative rank", p[0], p[1])
		}
		if src[p[0]] {
			return nil, fmt.Errorf("rank %d is the source of two pairs", p[0])
		}
		if dst[p[1]] {
			return nil, fmt.Errorf("rank %d is the target of two pairs", p[1])
		}
		src[p[0]], dst[p[1]] = true, true
		pairs = append(pairs, p)
	}
	return pairs, nil
}

func (v *validator) deviceCollective(in *irpb.Instruction, op string) {
	d, s := in.Dst[0], in.Src[0]
	dm, sm := v.mem(d), v.mem(s)
	hbmOnly := in.Op == "cc_all_to_all" || in.Op == "cc_collective_permute"
	for _, x := range []struct {
		what string
		a    *irpb.Access
		m    irpb.Memory
	}{{"dst[0]", d, dm}, {"src[0]", s, sm}} {
		switch {
		case hbmOnly && !isHBM(x.m):
			v.errf("collective-memory", in.Loc, op, "%s %s must be in HBM", x.what, v.label(x.a.Tensor))
		case !isHBM(x.m) && x.m != irpb.Memory_SBUF:
			v.errf("collective-memory", in.Loc, op, "%s %s must be in HBM or SBUF", x.what, v.label(x.a.Tensor))
		}
	}
	if isHBM(dm) != isHBM(sm) {
		v.errf("collective-memory", in.Loc, op, "src %s and dst %s must both be in HBM or both in SBUF", v.label(s.Tensor), v.label(d.Tensor))
	}
	st, dt := v.tensor(s.Tensor), v.tensor(d.Tensor)
	if st.Dtype != dt.Dtype {
		v.errf("op-dtype", in.Loc, op, "src %s is %s but dst %s is %s; a collective does not convert", tensorLabel(st), dtypeName(st), tensorLabel(dt), dtypeName(dt))
	}
	if dt := dtype.Type(st.Dtype); hasAttr(in, "op") && !dt.IsFloat() && !dt.IsInteger() {
		v.errf("op-dtype", in.Loc, op, "reduces %s %s; device collectives reduce float and integer tensors", dtypeName(st), tensorLabel(st))
	}
	var gsize int64 // 0: every device (known when the kernel runs)
	if in.Op == "cc_collective_permute" {
		if _, err := SourceTargetPairs(in); err != nil {
			v.errf("attr-value", in.Loc, op, "%v", err)
		}
	} else if groups, err := ReplicaGroups(in); err != nil {
		v.errf("attr-value", in.Loc, op, "%v", err)
	} else if len(groups) > 0 {
		gsize = int64(len(groups[0]))
	}
	mismatch := func() {
		v.errf("shape-mismatch", in.Loc, op, "src tile %s and dst tile %s do not fit a %s", shapeString(s.Shape), shapeString(d.Shape), DisplayOp(in.Op))
	}
	if !hasAttr(in, "collective_dim") {
		if !slices.Equal(s.Shape, d.Shape) {
			mismatch()
		}
		return
	}
	c := in.Attrs["collective_dim"].GetI()
	if c < 0 || c >= int64(len(s.Shape)) {
		v.errf("attr-value", in.Loc, op, "collective_dim %d is not a dimension of the %d-D src tile %s", c, len(s.Shape), shapeString(s.Shape))
		return
	}
	if len(s.Shape) != len(d.Shape) {
		mismatch()
		return
	}
	for i := range s.Shape {
		if int64(i) != c && s.Shape[i] != d.Shape[i] {
			mismatch()
			return
		}
	}
	sc, dc := s.Shape[c], d.Shape[c]
	switch in.Op {
	case "cc_all_gather":
		if sc == 0 || dc%sc != 0 || (gsize > 0 && dc != sc*gsize) {
			mismatch()
		}
	case "cc_reduce_scatter":
		if dc == 0 || sc%dc != 0 || (gsize > 0 && sc != dc*gsize) {
			mismatch()
		}
	case "cc_all_to_all":
		if sc != dc || (gsize > 0 && sc%gsize != 0) {
			mismatch()
		}
	}
}
