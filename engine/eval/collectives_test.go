package eval

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"

	"goldtrace/internal/pyref"
)

// Iota replica groups expand as numpy does
// arange(n).reshape(dims).transpose(perm).reshape(G, S).
func TestExpandIotaReplicaGroupsMatchesNumpy(t *testing.T) {
	pyref.Require(t, "numpy")
	specs := []hlo.IotaReplicaGroups{
		{GroupShape: [2]int64{1, 4}, ReshapeDims: []int64{4}},
		{GroupShape: [2]int64{2, 2}, ReshapeDims: []int64{4}},
		{GroupShape: [2]int64{2, 2}, ReshapeDims: []int64{2, 2}, Transpose: []int64{1, 0}},
		{GroupShape: [2]int64{4, 2}, ReshapeDims: []int64{2, 4}, Transpose: []int64{1, 0}},
		{GroupShape: [2]int64{3, 8}, ReshapeDims: []int64{2, 3, 4}, Transpose: []int64{1, 0, 2}},
		{GroupShape: [2]int64{6, 4}, ReshapeDims: []int64{2, 3, 4}, Transpose: []int64{2, 0, 1}},
		{GroupShape: [2]int64{2, 12}, ReshapeDims: []int64{2, 3, 4}, Transpose: []int64{0, 2, 1}},
		{GroupShape: [2]int64{8, 2}, ReshapeDims: []int64{2, 2, 2, 2}, Transpose: []int64{3, 1, 2, 0}},
	}
	var script strings.Builder
	script.WriteString("import json, numpy as np\nout = []\n")
	for _, s := range specs {
		perm := s.Transpose
		if perm == nil {
			perm = []int64{0}
		}
		fmt.Fprintf(&script, "out.append(np.arange(%d).reshape(%s).transpose(%s).reshape(%d, %d).tolist())\n",
			s.GroupShape[0]*s.GroupShape[1], pyTuple(s.ReshapeDims), pyTuple(perm), s.GroupShape[0], s.GroupShape[1])
	}
	script.WriteString("print(json.dumps(out))\n")
	raw, err := pyref.Command("-c", script.String()).Output()
	if err != nil {
		t.Fatalf("numpy reference: %v", err)
	}
	var want [][][]int64
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	for i, s := range specs {
		got, err := ExpandReplicaGroups(&hlo.ReplicaGroups{Iota: &s})
		if err != nil {
			t.Fatalf("%v: %v", s, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want[i]) {
			t.Errorf("%v<=%vT%v: got %v, want %v", s.GroupShape, s.ReshapeDims, s.Transpose, got, want[i])
		}
	}
}

func pyTuple(xs []int64) string {
	var b strings.Builder
	b.WriteString("(")
	for _, x := range xs {
		fmt.Fprintf(&b, "%d,", x)
	}
	b.WriteString(")")
	return b.String()
}

func TestExpandReplicaGroupsRejectsBadIota(t *testing.T) {
	for _, s := range []hlo.IotaReplicaGroups{
		{GroupShape: [2]int64{2, 3}, ReshapeDims: []int64{4}},
		{GroupShape: [2]int64{2, 2}, ReshapeDims: []int64{2, 2}, Transpose: []int64{0, 0}},
		{GroupShape: [2]int64{2, 2}, ReshapeDims: []int64{2, 2}, Transpose: []int64{1}},
		{GroupShape: [2]int64{0, 0}, ReshapeDims: []int64{0}},
	} {
		if _, err := ExpandReplicaGroups(&hlo.ReplicaGroups{Iota: &s}); err == nil {
			t.Errorf("%v<=%vT%v: no error", s.GroupShape, s.ReshapeDims, s.Transpose)
		}
	}
}

// Participants on a 2 replicas × 2 partitions grid follow XLA's
// GetParticipatingDevices: device r*2+p; cross-replica groups hold replica
// ids within one partition, cross-partition ones partition ids within one
// replica, cross-replica-and-partition ones replica ids with every partition
// (replica-major), flattened ones device ids.
func TestCollectiveParticipants(t *testing.T) {
	groups := func(gs ...[]int64) *hlo.ReplicaGroups { return &hlo.ReplicaGroups{Groups: gs} }
	cases := []struct {
		name string
		in   hlo.Instruction
		want [4][]int64 // per device
	}{
		{"cross-replica, all", hlo.Instruction{Opcode: "all-reduce"},
			[4][]int64{{0, 2}, {1, 3}, {0, 2}, {1, 3}}},
		{"cross-replica, reversed group", hlo.Instruction{Opcode: "all-gather", ReplicaGroups: groups([]int64{1, 0})},
			[4][]int64{{2, 0}, {3, 1}, {2, 0}, {3, 1}}},
		{"cross-partition (all-to-all with channel)", hlo.Instruction{Opcode: "all-to-all", ChannelID: 1},
			[4][]int64{{0, 1}, {0, 1}, {2, 3}, {2, 3}}},
		{"cross-replica-and-partition", hlo.Instruction{Opcode: "all-reduce", ChannelID: 1, ReplicaGroups: groups([]int64{0}, []int64{1})},
			[4][]int64{{0, 1}, {0, 1}, {2, 3}, {2, 3}}},
		{"cross-replica-and-partition, everyone", hlo.Instruction{Opcode: "reduce-scatter-start", ChannelID: 1, ReplicaGroups: groups([]int64{1, 0})},
			[4][]int64{{2, 3, 0, 1}, {2, 3, 0, 1}, {2, 3, 0, 1}, {2, 3, 0, 1}}},
		{"flattened ids", hlo.Instruction{Opcode: "all-reduce", ChannelID: 1, UseGlobalDeviceIDs: true, ReplicaGroups: groups([]int64{3, 0}, []int64{1, 2})},
			[4][]int64{{3, 0}, {1, 2}, {1, 2}, {3, 0}}},
		{"flattened iota", hlo.Instruction{Opcode: "all-gather", ChannelID: 1, UseGlobalDeviceIDs: true,
			ReplicaGroups: &hlo.ReplicaGroups{Iota: &hlo.IotaReplicaGroups{GroupShape: [2]int64{2, 2}, ReshapeDims: []int64{2, 2}, Transpose: []int64{1, 0}}}},
			[4][]int64{{0, 2}, {1, 3}, {0, 2}, {1, 3}}},
		{"collective-broadcast with channel", hlo.Instruction{Opcode: "collective-broadcast", ChannelID: 3, ReplicaGroups: groups([]int64{1, 0})},
			[4][]int64{{1, 0}, {1, 0}, {3, 2}, {3, 2}}},
	}
	for _, c := range cases {
		for d := range int64(4) {
			g := DeviceGrid{Replicas: 2, Partitions: 2, Replica: d / 2, Partition: d % 2}
			got, rank, err := CollectiveParticipants(&c.in, g)
			if err != nil {
				t.Errorf("%s, device %d: %v", c.name, d, err)
				continue
			}
			if !slices.Equal(got, c.want[d]) || got[rank] != d {
				t.Errorf("%s, device %d: got %v rank %d, want %v", c.name, d, got, rank, c.want[d])
			}
		}
	}
}

func TestCollectiveParticipantsErrors(t *testing.T) {
	g := DeviceGrid{Replicas: 2, Partitions: 2}
	for _, c := range []struct {
		in   hlo.Instruction
		want string
	}{
		{hlo.Instruction{Opcode: "all-reduce", UseGlobalDeviceIDs: true}, "needs a channel_id"},
		{hlo.Instruction{Opcode: "all-reduce", ReplicaGroups: &hlo.ReplicaGroups{Groups: [][]int64{{1}}}}, "in no replica group"},
		{hlo.Instruction{Opcode: "all-reduce", ReplicaGroups: &hlo.ReplicaGroups{Groups: [][]int64{{0, 5}}}}, "ids go up to 1"},
		{hlo.Instruction{Opcode: "all-reduce", ReplicaGroups: &hlo.ReplicaGroups{Groups: [][]int64{{0, 1}, {0}}}}, "more than one replica group"},
	} {
		_, _, err := CollectiveParticipants(&c.in, g)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error containing %q", c.in, err, c.want)
		}
	}
}

// A collective over several devices in an evaluator without an exchange
// fails clearly instead of pretending to be alone.
func TestMultiDeviceCollectiveNeedsExchange(t *testing.T) {
	m, err := hlo.ParseText([]byte(`HloModule m, replica_count=2
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[2] parameter(0)
  ROOT ar = f32[2] all-reduce(p), replica_groups={}, to_apply=add
}`), "m.hlo")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Evaluate(m, []Value{ArrayValue(tensor.New(dtype.F32, []int64{2}))}, Options{})
	if err == nil || !strings.Contains(err.Error(), "spans devices [0 1]") || !strings.Contains(err.Error(), "%ar") {
		t.Fatalf("got %v", err)
	}
}

// runDevices evaluates m on n devices (replicas) with a minimal in-test
// exchange: every device of a group blocks until all members arrived.
func runDevices(t *testing.T, src string, n int, inputs func(d int) []Value) []Value {
	t.Helper()
	m, err := hlo.ParseText([]byte(src), "m.hlo")
	if err != nil {
		t.Fatal(err)
	}
	type meeting struct {
		vals  []Value
		count int
		done  chan struct{}
	}
	var mu sync.Mutex
	meetings := map[string]*meeting{}
	exchange := func(in *hlo.Instruction, group []int64, self int, v Value) ([]Value, error) {
		key := in.Name + fmt.Sprint(group)
		mu.Lock()
		mt := meetings[key]
		if mt == nil {
			mt = &meeting{vals: make([]Value, len(group)), done: make(chan struct{})}
			meetings[key] = mt
		}
		mt.vals[slices.Index(group, int64(self))] = v
		mt.count++
		if mt.count == len(group) {
			close(mt.done)
		}
		mu.Unlock()
		<-mt.done
		return mt.vals, nil
	}
	outs := make([]Value, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for d := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opts := Options{ReplicaID: int64(d), ReplicaCount: int64(n),
				Exchange: func(in *hlo.Instruction, group []int64, v Value) ([]Value, error) {
					return exchange(in, group, d, v)
				}}
			outs[d], errs[d] = Evaluate(m, inputs(d), opts)
		}()
	}
	wg.Wait()
	for d, err := range errs {
		if err != nil {
			t.Fatalf("device %d: %v", d, err)
		}
	}
	return outs
}

func f32Value(xs ...float32) Value {
	t := tensor.New(dtype.F32, []int64{int64(len(xs))})
	copy(t.F32(), xs)
	return ArrayValue(t)
}

// XLA:CPU has no collective-broadcast; its semantics (every member gets the
// first member's operand) are from the StableHLO/XLA operation semantics.
func TestCollectiveBroadcast(t *testing.T) {
	outs := runDevices(t, `HloModule m, replica_count=4
ENTRY e {
  p = f32[2] parameter(0)
  ROOT b = f32[2] collective-broadcast(p), replica_groups={{2,0},{3,1}}
}`, 4, func(d int) []Value { return []Value{f32Value(float32(d), float32(10*d))} })
	want := [][]float32{{2, 20}, {3, 30}, {2, 20}, {3, 30}}
	for d, o := range outs {
		if !slices.Equal(o.T.F32(), want[d]) {
			t.Errorf("device %d got %v, want %v", d, o.T.F32(), want[d])
		}
	}
}

// A reducer XLA:CPU cannot pattern-match (it rejects such modules) is folded
// with the computation from the first member on, as HloEvaluator would:
// here acc*x + x over members 1, 2, 3, 4 is ((1*2+2)*3+3)*4+4 = 64.
func TestAllReduceGeneralReducer(t *testing.T) {
	outs := runDevices(t, `HloModule m, replica_count=4
r {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = f32[] multiply(a, b)
  ROOT s = f32[] add(c, b)
}
ENTRY e {
  p = f32[1] parameter(0)
  ROOT x = f32[1] all-reduce(p), replica_groups={}, to_apply=r
}`, 4, func(d int) []Value { return []Value{f32Value(float32(d + 1))} })
	for d, o := range outs {
		if got := o.T.F32()[0]; got != 64 {
			t.Errorf("device %d got %v, want 64", d, got)
		}
	}
}
