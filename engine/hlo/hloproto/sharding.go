package hloproto

import (
	"fmt"
	"strconv"
	"strings"

	"goldtrace/engine/hlo"
	"goldtrace/engine/hlo/hlopb"
)

// shardingText renders an OpSharding the way XLA prints sharding={...}, braces
// included, so a module read from a proto carries the same raw sharding text
// as one parsed from HLO text. Sharding metadata is not printed.
func shardingText(s *hlopb.OpSharding, depth int) (string, error) {
	if depth > maxDepth {
		return "", fmt.Errorf("sharding nested deeper than %d", maxDepth)
	}
	var b strings.Builder
	b.WriteString("{")
	switch s.GetType() {
	case hlopb.OpSharding_TUPLE:
		for i, e := range s.GetTupleShardings() {
			if i > 0 {
				b.WriteString(", ")
			}
			t, err := shardingText(e, depth+1)
			if err != nil {
				return "", err
			}
			b.WriteString(t)
		}
	case hlopb.OpSharding_REPLICATED, hlopb.OpSharding_MANUAL, hlopb.OpSharding_UNKNOWN, hlopb.OpSharding_UNREDUCED:
		b.WriteString(strings.ToLower(s.GetType().String()))
	case hlopb.OpSharding_MAXIMAL:
		devs := s.GetTileAssignmentDevices()
		if len(devs) != 1 {
			return "", fmt.Errorf("maximal sharding with %d devices", len(devs))
		}
		fmt.Fprintf(&b, "maximal device=%d", devs[0])
	case hlopb.OpSharding_OTHER:
		fmt.Fprintf(&b, "devices=[%s]", joinInts(s.GetTileAssignmentDimensions(), ","))
		if r := s.GetIotaReshapeDims(); len(r) > 0 {
			fmt.Fprintf(&b, "<=[%s]", joinInts(r, ","))
			perm := s.GetIotaTransposePerm()
			identity := true
			for i, p := range perm {
				if int(p) != i {
					identity = false
				}
			}
			if !identity {
				p64 := make([]int64, len(perm))
				for i, p := range perm {
					p64[i] = int64(p)
				}
				fmt.Fprintf(&b, "T(%s)", joinInts(p64, ","))
			}
		} else {
			b.WriteString(joinInts(s.GetTileAssignmentDevices(), ","))
		}
		if s.GetReplicateOnLastTileDim() {
			b.WriteString(" last_tile_dim_replicate")
		}
		if lt := s.GetLastTileDims(); len(lt) > 0 {
			names := make([]string, len(lt))
			for i, t := range lt {
				names[i] = strings.ToLower(t.String())
			}
			fmt.Fprintf(&b, " last_tile_dims={%s}", strings.Join(names, ", "))
		}
	default:
		return "", fmt.Errorf("unknown sharding type %d", int32(s.GetType()))
	}
	if s.GetIsShardGroup() {
		kind := "shard_as"
		if s.GetShardGroupType() == hlopb.OpSharding_LIKE {
			kind = "shard_like"
		}
		fmt.Fprintf(&b, " %s %d", kind, s.GetShardGroupId())
	}
	b.WriteString("}")
	return b.String(), nil
}

// convertMetadata keeps the fields the model names and renders the rest as
// raw attributes in XLA's printing order.
func convertMetadata(m *hlopb.OpMetadata) *hlo.Metadata {
	if m == nil {
		return nil
	}
	out := &hlo.Metadata{
		OpType:     m.GetOpType(),
		OpName:     m.GetOpName(),
		SourceFile: m.GetSourceFile(),
		SourceLine: int64(m.GetSourceLine()),
	}
	addInt := func(name string, v int64) {
		if v != 0 {
			out.Extra = append(out.Extra, hlo.RawAttr{Name: name, Value: strconv.FormatInt(v, 10)})
		}
	}
	addStr := func(name, v string) {
		if v != "" {
			out.Extra = append(out.Extra, hlo.RawAttr{Name: name, Value: strconv.Quote(v)})
		}
	}
	addInt("source_end_line", int64(m.GetSourceEndLine()))
	addInt("source_column", int64(m.GetSourceColumn()))
	addInt("source_end_column", int64(m.GetSourceEndColumn()))
	addStr("deduplicated_name", m.GetDeduplicatedName())
	addStr("scheduling_name", m.GetSchedulingName())
	addInt("stack_frame_id", int64(m.GetStackFrameId()))
	if out.OpType == "" && out.OpName == "" && out.SourceFile == "" && out.SourceLine == 0 && len(out.Extra) == 0 {
		return nil
	}
	return out
}
