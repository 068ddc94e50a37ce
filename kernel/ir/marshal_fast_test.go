package ir

import (
	"bytes"
	"math"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"goldtrace/engine/dtype"
	"goldtrace/kernel/ir/irpb"
)

// sampleKernels covers every field of the schema: the round-trip kernel of
// codec_test, the tape sample, tiled matmuls, a masked SPMD kernel.
func sampleKernels(t testing.TB) []*irpb.Kernel {
	ks := []*irpb.Kernel{tiledMatmul(256, 1024, 384).k, tiledMatmul(128, 512, 128).k}
	b := tiledMatmul(256, 1024, 384)
	b.k.Grid = []int64{2, 3}
	b.k.NumCores, b.k.CoreGridDim = 2, 0
	b.k.Options = map[string]string{"O": "2", "x": "y", "": "empty key", "e": ""}
	b.k.Tensors[3].Allocation = &irpb.Allocation{PartitionOffset: 0, ByteOffset: 1024, LoopVar: 1, NumFreeTiles: 2, BytesPerTile: 256, Kind: "mod"}
	c := b.param("const", dtype.S8, 2, 2)
	b.k.Tensors[c].Role = irpb.TensorRole_CONSTANT
	b.k.Tensors[c].Data = []byte{1, 2, 3, 4}
	b.k.Tensors[c].Tf32 = true
	in := op("iota", 30, accs(tile(b.sbuf("io", dtype.S32, 128, 4), sh(128, 4))), nil,
		attrs{"f": af(math.Inf(-1)), "z": af(0), "nz": af(math.Copysign(0, -1)), "nan": af(math.NaN()), "l": aints(1, -2),
			"e": aints(), "fl": &irpb.Attr{Value: &irpb.Attr_Floats{Floats: &irpb.FloatList{V: []float64{0, -1.5}}}},
			"i0": &irpb.Attr{Value: &irpb.Attr_I{I: 0}}, "b0": ab(false), "s0": as(""), "empty": {}})
	in.Exprs = []*irpb.Affine{aff(-3, ax(0), ax(1))}
	in.Mask = []*irpb.Predicate{{Expr: aff(-100, ax(0), pid(1, 128)), Cmp: irpb.Cmp_LT}}
	in.Preds = []*irpb.Predicate{{Cmp: irpb.Cmp_GE}}
	in.Engine = "gpsimd"
	in.Src = []*irpb.Access{{Tensor: c, Shape: sh(2, 2), Index: []*irpb.Affine{aff(0, ax(0)), {}}, DynamicDim: []int32{1, -1},
		Dynamic: []*irpb.Access{{Tensor: c, Shape: sh(1)}}}}
	b.add(st(in))
	ks = append(ks, b.k)
	tb := NewBuilder("tape")
	if _, _, err := tb.AppendTape([]byte(tapeSample)); err != nil {
		t.Fatal(err)
	}
	k, err := tb.Finish(Signature{Files: []string{"f.py"}})
	if err != nil {
		t.Fatal(err)
	}
	return append(ks, k)
}

func TestMarshalMatchesProto(t *testing.T) {
	for i, k := range sampleKernels(t) {
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		if got := marshalDeterministic(k); !bytes.Equal(got, want) {
			t.Fatalf("kernel %d (%s): fast encoder differs from protobuf-go (%d vs %d bytes)", i, k.Name, len(got), len(want))
		}
	}
}

// Unknown fields (a newer producer's IR read by this goldtrace) are kept
// after the known ones, as protobuf-go does.
func TestMarshalKeepsUnknownFields(t *testing.T) {
	k := sampleKernels(t)[0]
	data := marshalDeterministic(k)
	extra := protowire.AppendTag(nil, 99, protowire.VarintType)
	extra = protowire.AppendVarint(extra, 5)
	var got irpb.Kernel
	if err := proto.Unmarshal(append(data, extra...), &got); err != nil {
		t.Fatal(err)
	}
	// and one inside a nested message
	inst := got.Body[0].GetLoop()
	if inst == nil {
		t.Fatal("expected a loop first")
	}
	inst.ProtoReflect().SetUnknown(protoreflect.RawFields(extra))
	want, _ := proto.MarshalOptions{Deterministic: true}.Marshal(&got)
	if fast := marshalDeterministic(&got); !bytes.Equal(fast, want) {
		t.Fatal("unknown fields are not written as protobuf-go writes them")
	}
}

// The encoder is written by hand: a field added to the schema must be added
// to it too. This lists the fields it writes, per message.
func TestMarshalCoversSchema(t *testing.T) {
	written := map[protoreflect.FullName]int{
		"goldtrace.kernel.ir.Kernel": 12, "goldtrace.kernel.ir.Tensor": 11, "goldtrace.kernel.ir.Allocation": 6,
		"goldtrace.kernel.ir.Loc": 2, "goldtrace.kernel.ir.Stmt": 2, "goldtrace.kernel.ir.Loop": 7,
		"goldtrace.kernel.ir.Instruction": 9, "goldtrace.kernel.ir.Access": 5, "goldtrace.kernel.ir.Affine": 2,
		"goldtrace.kernel.ir.Term": 3, "goldtrace.kernel.ir.Predicate": 2, "goldtrace.kernel.ir.Attr": 6,
		"goldtrace.kernel.ir.IntList": 1, "goldtrace.kernel.ir.FloatList": 1,
	}
	seen := map[protoreflect.FullName]bool{}
	var walk func(md protoreflect.MessageDescriptor)
	walk = func(md protoreflect.MessageDescriptor) {
		if seen[md.FullName()] || md.IsMapEntry() {
			if md.IsMapEntry() {
				walk0(md, walk)
			}
			return
		}
		seen[md.FullName()] = true
		n, ok := written[md.FullName()]
		if !ok {
			t.Errorf("message %s is reachable from Kernel but marshal_fast.go does not write it", md.FullName())
		} else if md.Fields().Len() != n {
			t.Errorf("message %s has %d fields; marshal_fast.go writes %d", md.FullName(), md.Fields().Len(), n)
		}
		walk0(md, walk)
	}
	walk((&irpb.Kernel{}).ProtoReflect().Descriptor())
}

func walk0(md protoreflect.MessageDescriptor, walk func(protoreflect.MessageDescriptor)) {
	for i := 0; i < md.Fields().Len(); i++ {
		if m := md.Fields().Get(i).Message(); m != nil {
			walk(m)
		}
	}
}

// The encoder reads each message's unknown fields straight from the
// generated struct; a protobuf-go that lays them out otherwise still works
// (through protoreflect) but slowly: this says so.
func TestMarshalFindsUnknownFieldsDirectly(t *testing.T) {
	for name, off := range map[string]uintptr{
		"Kernel": unknownKernel, "Tensor": unknownTensor, "Allocation": unknownAllocation, "Loc": unknownLoc,
		"Stmt": unknownStmt, "Loop": unknownLoop, "Instruction": unknownInstruction, "Access": unknownAccess,
		"Affine": unknownAffine, "Term": unknownTerm, "Predicate": unknownPredicate, "Attr": unknownAttr,
		"IntList": unknownIntList, "FloatList": unknownFloatList,
	} {
		if off == noOffset {
			t.Errorf("irpb.%s has no unknownFields []byte field", name)
		}
	}
}
