package hlo

import (
	"reflect"
	"strings"
	"testing"
)

const meshModuleTmpl = `HloModule m, num_partitions=8

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  p = f32[4] parameter(0)
  ROOT r = f32[4] all-reduce(p), channel_id=1, replica_groups=GROUPS, use_global_device_ids=true, to_apply=add
}
`

// TestMeshAxesReplicaGroups parses the mesh-axes spellings of XLA's printer
// (MeshAxesReplicaGroupList::ToString, Mesh::ToString, AxisRef::ToString)
// and expands them to the device groups XLA's flattened_replica_groups
// computes; the sub-axis cases are the examples in XLA's replica_group.cc.
func TestMeshAxesReplicaGroups(t *testing.T) {
	cases := []struct {
		groups string
		want   [][]int64
	}{
		{`mesh['x'=8] {'x'}`, [][]int64{{0, 1, 2, 3, 4, 5, 6, 7}}},
		{`mesh[x=8] {x}`, [][]int64{{0, 1, 2, 3, 4, 5, 6, 7}}},
		{`mesh['x'=2,'y'=4] {'y'}`, [][]int64{{0, 1, 2, 3}, {4, 5, 6, 7}}},
		{`mesh['x'=2,'y'=4] {'x'}`, [][]int64{{0, 4}, {1, 5}, {2, 6}, {3, 7}}},
		{`mesh['axis_0'=2,'axis_1'=1,'axis_2'=4] {'axis_0'}`, [][]int64{{0, 4}, {1, 5}, {2, 6}, {3, 7}}},
		{`mesh['x'=2,'y'=4] {'y','x'}`, [][]int64{{0, 4, 1, 5, 2, 6, 3, 7}}},
		{`mesh['a'=8] {'a':(1)2}`, [][]int64{{0, 4}, {1, 5}, {2, 6}, {3, 7}}},
		{`mesh[a=8] {a:(4)2}`, [][]int64{{0, 1}, {2, 3}, {4, 5}, {6, 7}}},
		{`mesh['a'=8] {'a':(1)2,'a':(4)2}`, [][]int64{{0, 1, 4, 5}, {2, 3, 6, 7}}},
		{`mesh['a'=8] {'a':(4)2,'a':(1)2}`, [][]int64{{0, 4, 1, 5}, {2, 6, 3, 7}}},
		{`mesh['x'=4,'y'=2], device_ids=([2,4]T(1,0)) {'y'}`, [][]int64{{0, 4}, {1, 5}, {2, 6}, {3, 7}}},
		{`mesh['x'=4,'y'=2], device_ids=([2,4]T(1,0)) {'x'}`, [][]int64{{0, 1, 2, 3}, {4, 5, 6, 7}}},
		{`mesh['x'=4,'y'=2], device_ids=([4,2]<=[2,4]T(1,0)) {'x'}`, [][]int64{{0, 1, 2, 3}, {4, 5, 6, 7}}},
		{`mesh['x'=2,'y'=4], device_ids=(7,6,5,4,3,2,1,0) {'y'}`, [][]int64{{7, 6, 5, 4}, {3, 2, 1, 0}}},
		{`mesh['x'=8] {}`, [][]int64{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}}},
	}
	for _, c := range cases {
		src := strings.Replace(meshModuleTmpl, "GROUPS", c.groups, 1)
		m, err := ParseText([]byte(src), "mesh.hlo")
		if err != nil {
			t.Errorf("%s: %v", c.groups, err)
			continue
		}
		rg := m.Entry.Root.ReplicaGroups
		if rg == nil || rg.Mesh == nil {
			t.Fatalf("%s: not parsed as mesh axes", c.groups)
		}
		got, err := rg.Mesh.Expand()
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: groups %v, %v; want %v", c.groups, got, err, c.want)
		}
		text := Print(m)
		if !strings.Contains(text, "replica_groups="+c.groups+",") {
			t.Errorf("%s: printed as\n%s", c.groups, text)
		}
		m2, err := ParseText([]byte(text), "printed")
		if err != nil {
			t.Fatalf("%s: reparse: %v", c.groups, err)
		}
		if ok, d := Equal(m, m2); !ok {
			t.Errorf("%s: round trip differs: %s", c.groups, d)
		}
	}
}

func TestMeshAxesReplicaGroupsErrors(t *testing.T) {
	for _, g := range []string{
		`mesh['x'=4] {'y'}`,
		`mesh['x'=4] {'x','x'}`,
		`mesh['x'=8] {'x':(1)3}`,
		`mesh['x'=8] {'x':(1)8}`,
		`mesh['x'=8] {'x':(1)4,'x':(2)2}`,
		`mesh['x'=0] {}`,
		`mesh['x'=2,'x'=2] {}`,
		`mesh['x'=4], device_ids=(0,1,2) {'x'}`,
		`mesh['x'=4], device_ids=(0,1,1,2) {'x'}`,
		`mesh['x'=4], device_ids=([2,3]T(1,0)) {'x'}`,
		`mesh['x'=4 {'x'}`,
	} {
		src := strings.Replace(meshModuleTmpl, "GROUPS", g, 1)
		if _, err := ParseText([]byte(src), "mesh.hlo"); err == nil {
			t.Errorf("%s: parsed without error", g)
		} else if !strings.Contains(err.Error(), "mesh.hlo:11:") {
			t.Errorf("%s: error without its line: %v", g, err)
		}
	}
}

func TestComparisonOrderSpellings(t *testing.T) {
	tmpl := "HloModule m\nENTRY e {\n  a = T[3] parameter(0)\n  b = T[3] parameter(1)\n  ROOT c = pred[3] compare(a, b), direction=LT, ATTRS\n}\n"
	cases := []struct {
		typ, attrs, want string
		bad              bool
	}{
		{"f32", "order=TOTAL", "TOTALORDER", false},
		{"f32", "order=PARTIAL", "FLOAT", false},
		{"f32", "type=TOTALORDER", "TOTALORDER", false},
		{"f32", "type=TOTALORDER, order=TOTAL", "TOTALORDER", false},
		{"s32", "order=TOTAL", "", false},
		{"u8", "type=UNSIGNED, order=TOTAL", "UNSIGNED", false},
		{"f32", "type=FLOAT, order=TOTAL", "", true},
		{"f32", "order=WEAK", "", true},
		{"s32", "order=PARTIAL", "", true},
		{"f32", "type=TOTAL", "", true},
	}
	for _, c := range cases {
		src := strings.NewReplacer("T[", c.typ+"[", "ATTRS", c.attrs).Replace(tmpl)
		m, err := ParseText([]byte(src), "cmp.hlo")
		if err != nil {
			t.Fatalf("%s %s: %v", c.typ, c.attrs, err)
		}
		got, err := m.Entry.Root.EffectiveComparisonType()
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("%s %s: %q, %v", c.typ, c.attrs, got, err)
		}
		m2, err := ParseText([]byte(Print(m)), "printed")
		if err != nil {
			t.Fatal(err)
		}
		if ok, d := Equal(m, m2); !ok {
			t.Errorf("%s: round trip: %s", c.attrs, d)
		}
	}
	src := strings.NewReplacer("T[", "f32[", "ATTRS", "order=SOMETIMES").Replace(tmpl)
	if _, err := ParseText([]byte(src), "cmp.hlo"); err == nil || !strings.Contains(err.Error(), "cmp.hlo:5:") {
		t.Errorf("unknown order: %v", err)
	}
}
