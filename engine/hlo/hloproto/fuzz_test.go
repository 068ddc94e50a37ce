package hloproto

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"goldtrace/engine/hlo"
	"goldtrace/engine/hlo/hlopb"
)

// FuzzReadProto feeds arbitrary bytes to every reader. They must return an
// error or a consistent module, never panic or allocate unboundedly. Seeds
// are the JAX/XLA-made protos (when python3 and jax are available) and a
// small snapshot built here.
func FuzzReadProto(f *testing.F) {
	f32 := &hlopb.ShapeProto{ElementType: hlopb.PrimitiveType_F32, Dimensions: []int64{2, 2}, Layout: &hlopb.LayoutProto{MinorToMajor: []int64{0, 1}}}
	mp := &hlopb.HloModuleProto{Name: "m", EntryComputationId: 1, Computations: []*hlopb.HloComputationProto{{
		Name: "e", Id: 1, RootId: 2, Instructions: []*hlopb.HloInstructionProto{
			{Name: "p", Opcode: "parameter", Id: 1, Shape: f32},
			{Name: "c", Opcode: "constant", Id: 3, Shape: f32, Literal: &hlopb.LiteralProto{Shape: f32, F32S: []float32{1, 2, 3, 4}}},
			{Name: "a", Opcode: "add", Id: 2, Shape: f32, OperandIds: []int64{1, 3}},
		}}}}
	snap, _ := proto.Marshal(&hlopb.HloSnapshot{Hlo: &hlopb.HloProto{HloModule: mp}, Arguments: []*hlopb.LiteralProto{{Shape: f32, F32S: []float32{5, 6, 7, 8}}}})
	f.Add(snap)
	mod, _ := proto.Marshal(mp)
	f.Add(mod)
	// Without python the fuzz run still has the seeds above.
	if dir, cases, _, err := runGenerator(); err == nil {
		for _, c := range cases {
			if b, err := os.ReadFile(filepath.Join(dir, c.PB)); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if m, err := ReadModule(data); err == nil {
			checkConsistent(t, m)
		}
		if m, _, err := ReadSnapshot(data); err == nil {
			checkConsistent(t, m)
		}
		if m, _, _, err := Load(data); err == nil && m != nil {
			checkConsistent(t, m)
		}
	})
}

// checkConsistent verifies the invariants the evaluator relies on.
func checkConsistent(t *testing.T, m *hlo.Module) {
	if m.Entry == nil || !m.Entry.IsEntry {
		t.Fatal("module without entry")
	}
	for _, c := range m.Computations {
		if c.Root == nil || c.Root.Parent != c {
			t.Fatalf("computation %q: bad root", c.Name)
		}
		for i, p := range c.Params {
			if p == nil || p.ParameterNumber != int64(i) {
				t.Fatalf("computation %q: bad parameter %d", c.Name, i)
			}
		}
		for _, in := range c.Instructions {
			if in.Parent != c {
				t.Fatalf("instruction %q: wrong parent", in.Name)
			}
			for _, op := range in.Operands {
				if op.Parent != c {
					t.Fatalf("instruction %q: operand from another computation", in.Name)
				}
			}
			if in.Literal != nil && in.Literal.Tensor != nil {
				tt := in.Literal.Tensor
				if int64(len(tt.Data)) != tt.NumElements()*int64(tt.Type.Size()) {
					t.Fatalf("instruction %q: literal size mismatch", in.Name)
				}
			}
		}
	}
}
