package ir

import (
	"math"
	"reflect"
	"slices"
	"unsafe"

	"goldtrace/kernel/ir/irpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// marshalDeterministic writes k in the protobuf wire format, byte for byte
// what proto.MarshalOptions{Deterministic: true} writes (fields in number
// order, proto3 zero values omitted, repeated scalars packed, map entries
// sorted by key with key and value always present, unknown fields after the
// known ones). Every dump_config miss serializes its kernel into the
// backend_config, and the reflective encoder spent more there than tracing
// the kernel. TestMarshalMatchesProto holds the two encoders to the same bytes
// and TestMarshalCoversSchema fails when the schema gains a field this file
// does not write.
func marshalDeterministic(k *irpb.Kernel) []byte {
	var e wireEncoder
	e.b = make([]byte, 0, 256+64*len(k.GetTensors())+192*countStmts(k.GetBody()))
	e.kernel(k)
	return e.b
}

func countStmts(body []*irpb.Stmt) int {
	n := len(body)
	for _, s := range body {
		if l := s.GetLoop(); l != nil {
			n += countStmts(l.GetBody())
		}
	}
	return n
}

type wireEncoder struct{ b []byte }

// The writers append to e.b in place (e.b = append(e.b, ...)), which
// stores only the length unless the buffer grows; e.b = f(e.b) would store
// the pointer each time, a write barrier whenever the GC is marking.

func (e *wireEncoder) varint(v uint64) {
	for v >= 0x80 {
		e.b = append(e.b, byte(v)|0x80)
		v >>= 7
	}
	e.b = append(e.b, byte(v))
}

func (e *wireEncoder) fixed64(v uint64) {
	e.b = append(e.b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24), byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56))
}

func (e *wireEncoder) tag(num protowire.Number, typ protowire.Type) {
	e.varint(protowire.EncodeTag(num, typ))
}

func (e *wireEncoder) rawString(s string) {
	e.varint(uint64(len(s)))
	e.b = append(e.b, s...)
}

// The proto3 scalar writers omit zero values, as implicit presence requires.

func (e *wireEncoder) uint(num protowire.Number, v uint64) {
	if v != 0 {
		e.tag(num, protowire.VarintType)
		e.varint(v)
	}
}

func (e *wireEncoder) int(num protowire.Number, v int64) { e.uint(num, uint64(v)) }

func (e *wireEncoder) boolean(num protowire.Number, v bool) {
	if v {
		e.uint(num, 1)
	}
}

func (e *wireEncoder) str(num protowire.Number, s string) {
	if s != "" {
		e.tag(num, protowire.BytesType)
		e.rawString(s)
	}
}

func (e *wireEncoder) bytes(num protowire.Number, s []byte) {
	if len(s) != 0 {
		e.tag(num, protowire.BytesType)
		e.varint(uint64(len(s)))
		e.b = append(e.b, s...)
	}
}

func packedInts[T int32 | int64](e *wireEncoder, num protowire.Number, vs []T) {
	if len(vs) == 0 {
		return
	}
	n := 0
	for _, v := range vs {
		n += protowire.SizeVarint(uint64(int64(v)))
	}
	e.tag(num, protowire.BytesType)
	e.varint(uint64(n))
	for _, v := range vs {
		e.varint(uint64(int64(v)))
	}
}

func (e *wireEncoder) packedDoubles(num protowire.Number, vs []float64) {
	if len(vs) == 0 {
		return
	}
	e.tag(num, protowire.BytesType)
	e.varint(uint64(8 * len(vs)))
	for _, v := range vs {
		e.fixed64(math.Float64bits(v))
	}
}

// open starts field num as a length-delimited sub-message; close(at) ends
// it. The length is not known in advance: one byte is reserved and the body
// moved when its length needs more. (Not a closure per message: they were a
// third of the encoder's time.)
func (e *wireEncoder) open(num protowire.Number) int {
	e.tag(num, protowire.BytesType)
	e.b = append(e.b, 0)
	return len(e.b) - 1
}

func (e *wireEncoder) close(at int) {
	n := len(e.b) - at - 1
	if n < 0x80 {
		e.b[at] = byte(n)
		return
	}
	w := protowire.SizeVarint(uint64(n))
	for range w - 1 {
		e.b = append(e.b, 0)
	}
	copy(e.b[at+w:], e.b[at+1:at+1+n])
	protowire.AppendVarint(e.b[at:at], uint64(n))
}

// unknownFieldsOffset is where the generated struct T keeps the unknown
// fields it was decoded with (protoimpl.UnknownFields, a []byte), or
// noOffset when this protobuf-go lays T out otherwise. Reading the field
// directly costs a load; asking protoreflect costs more than encoding the
// message does.
func unknownFieldsOffset[T any]() uintptr {
	f, ok := reflect.TypeFor[T]().FieldByName("unknownFields")
	if !ok || f.Type != reflect.TypeFor[[]byte]() {
		return noOffset
	}
	return f.Offset
}

const noOffset = ^uintptr(0)

var (
	unknownKernel      = unknownFieldsOffset[irpb.Kernel]()
	unknownTensor      = unknownFieldsOffset[irpb.Tensor]()
	unknownAllocation  = unknownFieldsOffset[irpb.Allocation]()
	unknownLoc         = unknownFieldsOffset[irpb.Loc]()
	unknownStmt        = unknownFieldsOffset[irpb.Stmt]()
	unknownLoop        = unknownFieldsOffset[irpb.Loop]()
	unknownInstruction = unknownFieldsOffset[irpb.Instruction]()
	unknownAccess      = unknownFieldsOffset[irpb.Access]()
	unknownAffine      = unknownFieldsOffset[irpb.Affine]()
	unknownTerm        = unknownFieldsOffset[irpb.Term]()
	unknownPredicate   = unknownFieldsOffset[irpb.Predicate]()
	unknownAttr        = unknownFieldsOffset[irpb.Attr]()
	unknownIntList     = unknownFieldsOffset[irpb.IntList]()
	unknownFloatList   = unknownFieldsOffset[irpb.FloatList]()
)

// unknown appends the unknown fields m was decoded with (off: its type's
// unknownFieldsOffset).
func unknown[T any, P interface {
	*T
	protoreflect.ProtoMessage
}](e *wireEncoder, m P, off uintptr) {
	var u []byte
	if off != noOffset {
		u = *(*[]byte)(unsafe.Add(unsafe.Pointer(m), off))
	} else {
		u = m.ProtoReflect().GetUnknown()
	}
	if len(u) > 0 {
		e.b = append(e.b, u...)
	}
}

func (e *wireEncoder) kernel(k *irpb.Kernel) { e.kernelWithBody(k, nil) }

// kernelWithBody writes k; body, when not nil, is k.Body already written
// (e.stmts(7, k.Body) of an encoder of its own).
func (e *wireEncoder) kernelWithBody(k *irpb.Kernel, body []byte) {
	e.uint(1, uint64(k.SchemaVersion))
	e.str(2, k.Name)
	packedInts(e, 3, k.Grid)
	for _, t := range k.Tensors {
		at := e.open(4)
		e.tensor(t)
		e.close(at)
	}
	packedInts(e, 5, k.Inputs)
	packedInts(e, 6, k.Outputs)
	if body != nil {
		e.b = append(e.b, body...)
	} else {
		e.stmts(7, k.Body)
	}
	e.int(8, int64(k.NumVars))
	e.int(9, int64(k.NumCores))
	e.int(10, int64(k.CoreGridDim))
	for _, f := range k.Files {
		e.tag(11, protowire.BytesType)
		e.rawString(f)
	}
	for _, key := range sortedKeys(k.Options) {
		at := e.open(12)
		e.tag(1, protowire.BytesType)
		e.rawString(key)
		e.tag(2, protowire.BytesType)
		e.rawString(k.Options[key])
		e.close(at)
	}
	unknown(e, k, unknownKernel)
}

func (e *wireEncoder) tensor(t *irpb.Tensor) {
	e.int(1, int64(t.Id))
	e.str(2, t.Name)
	e.int(3, int64(t.Memory))
	e.int(4, int64(t.Role))
	packedInts(e, 5, t.Shape)
	e.int(6, int64(t.Dtype))
	e.boolean(7, t.Tf32)
	e.boolean(8, t.Mutable)
	if a := t.Allocation; a != nil {
		at := e.open(9)
		e.int(1, a.PartitionOffset)
		e.int(2, a.ByteOffset)
		e.int(3, int64(a.LoopVar))
		e.int(4, a.NumFreeTiles)
		e.int(5, a.BytesPerTile)
		e.str(6, a.Kind)
		unknown(e, a, unknownAllocation)
		e.close(at)
	}
	e.bytes(10, t.Data)
	e.loc(11, t.Loc)
	unknown(e, t, unknownTensor)
}

func (e *wireEncoder) loc(num protowire.Number, l *irpb.Loc) {
	if l != nil {
		at := e.open(num)
		e.int(1, int64(l.File))
		e.int(2, int64(l.Line))
		unknown(e, l, unknownLoc)
		e.close(at)
	}
}

func (e *wireEncoder) stmts(num protowire.Number, body []*irpb.Stmt) {
	for _, s := range body {
		at := e.open(num)
		switch kind := s.Kind.(type) {
		case *irpb.Stmt_Inst:
			in := e.open(1)
			e.inst(kind.Inst)
			e.close(in)
		case *irpb.Stmt_Loop:
			in := e.open(2)
			e.loop(kind.Loop)
			e.close(in)
		}
		unknown(e, s, unknownStmt)
		e.close(at)
	}
}

func (e *wireEncoder) loop(l *irpb.Loop) {
	if l == nil {
		return
	}
	e.int(1, int64(l.Var))
	e.int(2, l.Start)
	e.int(3, l.Stop)
	e.int(4, l.Step)
	e.int(5, int64(l.Kind))
	e.stmts(6, l.Body)
	e.loc(7, l.Loc)
	unknown(e, l, unknownLoop)
}

func (e *wireEncoder) inst(in *irpb.Instruction) {
	if in == nil {
		return
	}
	e.str(1, in.Op)
	for _, a := range in.Dst {
		at := e.open(2)
		e.access(a)
		e.close(at)
	}
	for _, a := range in.Src {
		at := e.open(3)
		e.access(a)
		e.close(at)
	}
	if len(in.Attrs) > 0 {
		var buf [8]string // the names sorted without an allocation
		keys := buf[:0]
		for key := range in.Attrs {
			keys = append(keys, key)
		}
		slices.Sort(keys)
		for _, key := range keys {
			at := e.open(4)
			e.tag(1, protowire.BytesType)
			e.rawString(key)
			v := e.open(2)
			e.attr(in.Attrs[key])
			e.close(v)
			e.close(at)
		}
	}
	for _, p := range in.Mask {
		at := e.open(5)
		e.pred(p)
		e.close(at)
	}
	for _, a := range in.Exprs {
		at := e.open(6)
		e.affine(a)
		e.close(at)
	}
	for _, p := range in.Preds {
		at := e.open(7)
		e.pred(p)
		e.close(at)
	}
	e.str(8, in.Engine)
	e.loc(9, in.Loc)
	unknown(e, in, unknownInstruction)
}

func (e *wireEncoder) access(a *irpb.Access) {
	if a == nil {
		return
	}
	e.int(1, int64(a.Tensor))
	packedInts(e, 2, a.Shape)
	for _, x := range a.Index {
		at := e.open(3)
		e.affine(x)
		e.close(at)
	}
	packedInts(e, 4, a.DynamicDim)
	for _, d := range a.Dynamic {
		at := e.open(5)
		e.access(d)
		e.close(at)
	}
	unknown(e, a, unknownAccess)
}

func (e *wireEncoder) affine(a *irpb.Affine) {
	if a == nil {
		return
	}
	e.int(1, a.Constant)
	for _, t := range a.Terms {
		at := e.open(2)
		if t != nil {
			e.int(1, int64(t.Kind))
			e.int(2, int64(t.Id))
			e.int(3, t.Coef)
			unknown(e, t, unknownTerm)
		}
		e.close(at)
	}
	unknown(e, a, unknownAffine)
}

func (e *wireEncoder) pred(p *irpb.Predicate) {
	if p == nil {
		return
	}
	if p.Expr != nil {
		at := e.open(1)
		e.affine(p.Expr)
		e.close(at)
	}
	e.int(2, int64(p.Cmp))
	unknown(e, p, unknownPredicate)
}

// attr writes the oneof member that is set, zero or not (a oneof member has
// explicit presence).
func (e *wireEncoder) attr(a *irpb.Attr) {
	if a == nil {
		return
	}
	switch v := a.Value.(type) {
	case *irpb.Attr_I:
		e.tag(1, protowire.VarintType)
		e.varint(uint64(v.I))
	case *irpb.Attr_F:
		e.tag(2, protowire.Fixed64Type)
		e.fixed64(math.Float64bits(v.F))
	case *irpb.Attr_S:
		e.tag(3, protowire.BytesType)
		e.rawString(v.S)
	case *irpb.Attr_Ints:
		at := e.open(4)
		if v.Ints != nil {
			packedInts(e, 1, v.Ints.V)
			unknown(e, v.Ints, unknownIntList)
		}
		e.close(at)
	case *irpb.Attr_Floats:
		at := e.open(5)
		if v.Floats != nil {
			e.packedDoubles(1, v.Floats.V)
			unknown(e, v.Floats, unknownFloatList)
		}
		e.close(at)
	case *irpb.Attr_B:
		e.tag(6, protowire.VarintType)
		e.varint(protowire.EncodeBool(v.B))
	}
	unknown(e, a, unknownAttr)
}
