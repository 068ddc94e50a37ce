package ir

import (
	"errors"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"goldtrace/engine/dtype"
	"goldtrace/kernel/ir/irpb"
)

func TestMarshalRoundTrip(t *testing.T) {
	b := tiledMatmul(256, 1024, 384)
	b.k.Grid = []int64{2, 3}
	b.k.Options = map[string]string{"O": "2", "x": "y"}
	b.k.Tensors[3].Allocation = &irpb.Allocation{PartitionOffset: 0, ByteOffset: 1024, LoopVar: 1, NumFreeTiles: 2, BytesPerTile: 256, Kind: "mod"}
	c := b.param("const", dtype.S8, 2, 2)
	b.k.Tensors[c].Role = irpb.TensorRole_CONSTANT
	b.k.Tensors[c].Data = []byte{1, 2, 3, 4}
	in := op("iota", 30, accs(tile(b.sbuf("io", dtype.S32, 128, 4), sh(128, 4))), nil, attrs{"f": af(math.Inf(-1)), "l": aints(1, -2)})
	in.Exprs = []*irpb.Affine{aff(-3, ax(0), ax(1))}
	in.Mask = []*irpb.Predicate{{Expr: aff(-100, ax(0), pid(1, 128)), Cmp: irpb.Cmp_LT}}
	b.add(st(in))
	data, err := Marshal(b.k)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, b.k) {
		t.Fatalf("round trip differs:\n%s\nvs\n%s", Format(got), Format(b.k))
	}
	again, _ := Marshal(got)
	if string(again) != string(data) {
		t.Fatal("Marshal is not deterministic")
	}
}

func mustMarshalRaw(t *testing.T, k *irpb.Kernel) []byte {
	t.Helper()
	data, err := proto.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestUnmarshalErrors(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(k *irpb.Kernel)
		rule   string
		want   string
	}{
		{"no version", func(k *irpb.Kernel) { k.SchemaVersion = 0 }, "schema-version", "schema_version is missing"},
		{"newer version", func(k *irpb.Kernel) { k.SchemaVersion = 7 }, "schema-version", "schema_version 7 is newer"},
		{"id mismatch", func(k *irpb.Kernel) { k.Tensors[1].Id = 5 }, "ir-structure", "tensors[1] has id 5"},
		{"input range", func(k *irpb.Kernel) { k.Inputs[0] = 99 }, "ir-structure", "inputs[0] = 99: no such tensor"},
		{"output range", func(k *irpb.Kernel) { k.Outputs[0] = -1 }, "ir-structure", "outputs[0] = -1"},
		{"access tensor", func(k *irpb.Kernel) {
			firstInst(k, "matmul").Src[1].Tensor = 42
		}, "ir-structure", "src[1]: tensor 42 does not exist"},
		{"loop var term", func(k *irpb.Kernel) {
			firstInst(k, "dma").Src[0].Index[0].Terms[1].Id = 9
		}, "ir-structure", "loop variable 9 out of range"},
		{"tile axis term", func(k *irpb.Kernel) {
			firstInst(k, "dma").Src[0].Index[0].Terms[0].Id = 2
		}, "ir-structure", "tile axis 2 out of range"},
		{"loop step", func(k *irpb.Kernel) { k.Body[0].GetLoop().Step = 0 }, "ir-structure", "loop step 0 must be > 0"},
		{"loop var", func(k *irpb.Kernel) { k.Body[0].GetLoop().Var = 3 }, "ir-structure", "loop variable 3 out of range"},
		{"dtype", func(k *irpb.Kernel) { k.Tensors[0].Dtype = 999 }, "ir-structure", "unknown dtype 999"},
		{"memory", func(k *irpb.Kernel) { k.Tensors[0].Memory = 0 }, "ir-structure", "unknown memory"},
		{"file", func(k *irpb.Kernel) { firstInst(k, "matmul").Loc.File = 4 }, "ir-structure", "source file index 4 out of range"},
		{"index count", func(k *irpb.Kernel) {
			a := firstInst(k, "matmul").Src[0]
			a.Index = a.Index[:1]
		}, "ir-structure", "1 index expressions for tensor t3 (lhsT_tile) of rank 2"},
		{"empty stmt", func(k *irpb.Kernel) { k.Body = append(k.Body, &irpb.Stmt{}) }, "ir-structure", "empty statement"},
		{"attr no value", func(k *irpb.Kernel) { firstInst(k, "matmul").Attrs["accumulate"] = &irpb.Attr{} }, "ir-structure", `attribute "accumulate" has no value`},
		{"grid", func(k *irpb.Kernel) { k.Grid = []int64{2, 0} }, "ir-structure", "grid[1] = 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := tiledMatmul(256, 512, 256).k
			c.mutate(k)
			_, err := Unmarshal(mustMarshalRaw(t, k))
			if err == nil {
				t.Fatal("no error")
			}
			var e *Error
			if !errors.As(err, &e) || e.Rule != c.rule {
				t.Fatalf("want rule %s, got %v", c.rule, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not contain %q", err, c.want)
			}
			if _, err := Marshal(k); err == nil {
				t.Fatal("Marshal accepted a kernel Unmarshal rejects")
			}
		})
	}
}

func TestUnmarshalGarbage(t *testing.T) {
	_, err := Unmarshal([]byte{0xff, 0xff, 0xff})
	var e *Error
	if !errors.As(err, &e) || e.Rule != "ir-decode" {
		t.Fatalf("want ir-decode, got %v", err)
	}
	// A foreign protobuf (valid wire format, not our message) has no version.
	_, err = Unmarshal([]byte{0x0a, 0x03, 'a', 'b', 'c'})
	if !errors.As(err, &e) || e.Rule != "schema-version" {
		t.Fatalf("want schema-version, got %v", err)
	}
}

func TestErrorText(t *testing.T) {
	e := &Error{Rule: "matmul-stationary-free", Loc: "kernel.py:12", Op: "nc_matmul", Msg: "stationary free size 256 exceeds the tensor engine's limit of 128"}
	want := "kernel.py:12: nc_matmul: stationary free size 256 exceeds the tensor engine's limit of 128 (rule: matmul-stationary-free)"
	if e.Error() != want {
		t.Fatalf("got %q", e.Error())
	}
}

// firstInst finds the first instruction with opcode name, depth first.
func firstInst(k *irpb.Kernel, name string) *irpb.Instruction {
	var find func([]*irpb.Stmt) *irpb.Instruction
	find = func(body []*irpb.Stmt) *irpb.Instruction {
		for _, s := range body {
			if in := s.GetInst(); in != nil && in.Op == name {
				return in
			}
			if l := s.GetLoop(); l != nil {
				if in := find(l.Body); in != nil {
					return in
				}
			}
		}
		return nil
	}
	return find(k.Body)
}

func TestMatmulMACs(t *testing.T) {
	for _, c := range []struct{ M, N, K int64 }{{1024, 1024, 1024}, {128, 512, 128}, {256, 2048, 640}} {
		b := tiledMatmul(c.M, c.N, c.K)
		if got := MatmulMACs(b.k); got != c.M*c.N*c.K {
			t.Errorf("%v: MACs %d, want %d", c, got, c.M*c.N*c.K)
		}
		b.k.Grid = []int64{3, 2}
		if got := MatmulMACs(b.k); got != 6*c.M*c.N*c.K {
			t.Errorf("%v grid 3x2: MACs %d, want %d", c, got, 6*c.M*c.N*c.K)
		}
	}
	// A stepped loop: start 1, stop 10, step 4 runs i = 1, 5, 9.
	b := newKernel("steps")
	a := b.sbuf("a", dtype.F32, 64, 32)
	m := b.sbuf("m", dtype.F32, 64, 100)
	p := b.psum("p", 32, 100)
	v := b.newVar()
	b.add(loop(v, 1, 10, 4, 3, st(op("matmul", 4, accs(tile(p, sh(32, 100))), accs(tile(a, sh(64, 32)), tile(m, sh(64, 100))), nil))))
	if got, want := MatmulMACs(b.k), int64(3*64*32*100); got != want {
		t.Errorf("stepped loop: %d, want %d", got, want)
	}
	// Saturates rather than wraps.
	b.k.Grid = []int64{math.MaxInt64 / 2, 4}
	if got := MatmulMACs(b.k); got != math.MaxInt64 {
		t.Errorf("overflow: %d", got)
	}
}
