package hloproto

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// TestMeshAxesReplicaGroupsInProtoFail: a collective whose groups are in
// mesh_axes_replica_group_list (field 93, unknown to the committed proto
// subset) must not read as "no groups" (one group of everyone).
func TestMeshAxesReplicaGroupsInProtoFail(t *testing.T) {
	mp, _, _ := constantsModule(t)
	in := mp.GetComputations()[len(mp.GetComputations())-1].GetInstructions()[0]
	var extra []byte
	extra = protowire.AppendTag(extra, meshAxesReplicaGroupListField, protowire.BytesType)
	extra = protowire.AppendBytes(extra, []byte{})
	in.ProtoReflect().SetUnknown(extra)
	data, err := proto.Marshal(mp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadModule(data); err == nil || !strings.Contains(err.Error(), "mesh_axes_replica_group_list") {
		t.Fatalf("ReadModule: %v", err)
	}
}
