package ir

import (
	"math"

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

func (e *wireEncoder) tag(num protowire.Number, typ protowire.Type) {
	e.b = protowire.AppendTag(e.b, num, typ)
}

// The proto3 scalar writers omit zero values, as implicit presence requires.

func (e *wireEncoder) uint(num protowire.Number, v uint64) {
	if v != 0 {
		e.tag(num, protowire.VarintType)
		e.b = protowire.AppendVarint(e.b, v)
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
		e.b = protowire.AppendString(e.b, s)
	}
}

func (e *wireEncoder) bytes(num protowire.Number, s []byte) {
	if len(s) != 0 {
		e.tag(num, protowire.BytesType)
		e.b = protowire.AppendBytes(e.b, s)
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
	e.b = protowire.AppendVarint(e.b, uint64(n))
	for _, v := range vs {
		e.b = protowire.AppendVarint(e.b, uint64(int64(v)))
	}
}

func (e *wireEncoder) packedDoubles(num protowire.Number, vs []float64) {
	if len(vs) == 0 {
		return
	}
	e.tag(num, protowire.BytesType)
	e.b = protowire.AppendVarint(e.b, uint64(8*len(vs)))
	for _, v := range vs {
		e.b = protowire.AppendFixed64(e.b, math.Float64bits(v))
	}
}

// message writes field num as a length-delimited sub-message whose body fn
// appends. The length is not known in advance: one byte is reserved and the
// body moved when its length needs more.
func (e *wireEncoder) message(num protowire.Number, fn func()) {
	e.tag(num, protowire.BytesType)
	at := len(e.b)
	e.b = append(e.b, 0)
	fn()
	n := len(e.b) - at - 1
	if n < 0x80 {
		e.b[at] = byte(n)
		return
	}
	w := protowire.SizeVarint(uint64(n))
	e.b = append(e.b, make([]byte, w-1)...)
	copy(e.b[at+w:], e.b[at+1:at+1+n])
	protowire.AppendVarint(e.b[at:at], uint64(n))
}

func (e *wireEncoder) unknown(m protoreflect.ProtoMessage) {
	if u := m.ProtoReflect().GetUnknown(); len(u) > 0 {
		e.b = append(e.b, u...)
	}
}

func (e *wireEncoder) kernel(k *irpb.Kernel) {
	e.uint(1, uint64(k.SchemaVersion))
	e.str(2, k.Name)
	packedInts(e, 3, k.Grid)
	for _, t := range k.Tensors {
		e.message(4, func() { e.tensor(t) })
	}
	packedInts(e, 5, k.Inputs)
	packedInts(e, 6, k.Outputs)
	e.stmts(7, k.Body)
	e.int(8, int64(k.NumVars))
	e.int(9, int64(k.NumCores))
	e.int(10, int64(k.CoreGridDim))
	for _, f := range k.Files {
		e.tag(11, protowire.BytesType)
		e.b = protowire.AppendString(e.b, f)
	}
	for _, key := range sortedKeys(k.Options) {
		v := k.Options[key]
		e.message(12, func() {
			e.tag(1, protowire.BytesType)
			e.b = protowire.AppendString(e.b, key)
			e.tag(2, protowire.BytesType)
			e.b = protowire.AppendString(e.b, v)
		})
	}
	e.unknown(k)
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
		e.message(9, func() {
			e.int(1, a.PartitionOffset)
			e.int(2, a.ByteOffset)
			e.int(3, int64(a.LoopVar))
			e.int(4, a.NumFreeTiles)
			e.int(5, a.BytesPerTile)
			e.str(6, a.Kind)
			e.unknown(a)
		})
	}
	e.bytes(10, t.Data)
	e.loc(11, t.Loc)
	e.unknown(t)
}

func (e *wireEncoder) loc(num protowire.Number, l *irpb.Loc) {
	if l != nil {
		e.message(num, func() {
			e.int(1, int64(l.File))
			e.int(2, int64(l.Line))
			e.unknown(l)
		})
	}
}

func (e *wireEncoder) stmts(num protowire.Number, body []*irpb.Stmt) {
	for _, s := range body {
		e.message(num, func() {
			switch kind := s.Kind.(type) {
			case *irpb.Stmt_Inst:
				e.message(1, func() { e.inst(kind.Inst) })
			case *irpb.Stmt_Loop:
				e.message(2, func() { e.loop(kind.Loop) })
			}
			e.unknown(s)
		})
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
	e.unknown(l)
}

func (e *wireEncoder) inst(in *irpb.Instruction) {
	if in == nil {
		return
	}
	e.str(1, in.Op)
	for _, a := range in.Dst {
		e.message(2, func() { e.access(a) })
	}
	for _, a := range in.Src {
		e.message(3, func() { e.access(a) })
	}
	if len(in.Attrs) > 0 {
		for _, key := range sortedKeys(in.Attrs) {
			v := in.Attrs[key]
			e.message(4, func() {
				e.tag(1, protowire.BytesType)
				e.b = protowire.AppendString(e.b, key)
				e.message(2, func() { e.attr(v) })
			})
		}
	}
	for _, p := range in.Mask {
		e.message(5, func() { e.pred(p) })
	}
	for _, a := range in.Exprs {
		e.message(6, func() { e.affine(a) })
	}
	for _, p := range in.Preds {
		e.message(7, func() { e.pred(p) })
	}
	e.str(8, in.Engine)
	e.loc(9, in.Loc)
	e.unknown(in)
}

func (e *wireEncoder) access(a *irpb.Access) {
	if a == nil {
		return
	}
	e.int(1, int64(a.Tensor))
	packedInts(e, 2, a.Shape)
	for _, x := range a.Index {
		e.message(3, func() { e.affine(x) })
	}
	packedInts(e, 4, a.DynamicDim)
	for _, d := range a.Dynamic {
		e.message(5, func() { e.access(d) })
	}
	e.unknown(a)
}

func (e *wireEncoder) affine(a *irpb.Affine) {
	if a == nil {
		return
	}
	e.int(1, a.Constant)
	for _, t := range a.Terms {
		e.message(2, func() {
			if t != nil {
				e.int(1, int64(t.Kind))
				e.int(2, int64(t.Id))
				e.int(3, t.Coef)
				e.unknown(t)
			}
		})
	}
	e.unknown(a)
}

func (e *wireEncoder) pred(p *irpb.Predicate) {
	if p == nil {
		return
	}
	if p.Expr != nil {
		e.message(1, func() { e.affine(p.Expr) })
	}
	e.int(2, int64(p.Cmp))
	e.unknown(p)
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
		e.b = protowire.AppendVarint(e.b, uint64(v.I))
	case *irpb.Attr_F:
		e.tag(2, protowire.Fixed64Type)
		e.b = protowire.AppendFixed64(e.b, math.Float64bits(v.F))
	case *irpb.Attr_S:
		e.tag(3, protowire.BytesType)
		e.b = protowire.AppendString(e.b, v.S)
	case *irpb.Attr_Ints:
		e.message(4, func() {
			if v.Ints != nil {
				packedInts(e, 1, v.Ints.V)
				e.unknown(v.Ints)
			}
		})
	case *irpb.Attr_Floats:
		e.message(5, func() {
			if v.Floats != nil {
				e.packedDoubles(1, v.Floats.V)
				e.unknown(v.Floats)
			}
		})
	case *irpb.Attr_B:
		e.tag(6, protowire.VarintType)
		e.b = protowire.AppendVarint(e.b, protowire.EncodeBool(v.B))
	}
	e.unknown(a)
}
