package ir

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"goldtrace/kernel/ir/irpb"
)

// byteSource turns fuzz bytes into choices (zeros once exhausted).
type byteSource struct {
	b []byte
	i int
}

func (s *byteSource) n(k int) int {
	if k <= 0 {
		return 0
	}
	if s.i >= len(s.b) {
		return 0
	}
	v := int(s.b[s.i])
	s.i++
	return v % k
}

var fuzzDims = []int64{1, 2, 3, 8, 32, 64, 127, 128, 129, 256, 512, 513, 1024, 4096}
var fuzzDtypes = []int32{1, 2, 3, 4, 6, 7, 8, 10, 11, 12, 16, 19, 20, 28}
var fuzzCoefs = []int64{1, -1, 2, 3, 128, 512, -128, 1 << 40}

// genKernel builds a structurally valid kernel (Unmarshal accepts it) from
// choices: tensors, nested loops, any opcode of the table with any operands,
// attributes of every kind, masks, exprs, dynamic indices, allocations.
func genKernel(s *byteSource) *irpb.Kernel {
	k := &irpb.Kernel{SchemaVersion: SchemaVersion, Name: "fz", Files: []string{"f.py", "g.py"}}
	for range s.n(3) {
		k.Grid = append(k.Grid, int64(1+s.n(4)))
	}
	for i := range 1 + s.n(6) {
		t := &irpb.Tensor{Id: int32(i), Memory: irpb.Memory(1 + s.n(4)), Role: irpb.TensorRole(1 + s.n(4)),
			Dtype: fuzzDtypes[s.n(len(fuzzDtypes))], Tf32: s.n(8) == 0, Mutable: s.n(2) == 0, Loc: &irpb.Loc{File: int32(s.n(2)), Line: int32(s.n(50))}}
		for range 1 + s.n(3) {
			t.Shape = append(t.Shape, fuzzDims[s.n(len(fuzzDims))])
		}
		if s.n(6) == 0 {
			t.Allocation = &irpb.Allocation{ByteOffset: int64(s.n(4)) * 65536, NumFreeTiles: int64(s.n(3)), BytesPerTile: 4096}
		}
		if t.Role == irpb.TensorRole_CONSTANT {
			t.Data = make([]byte, s.n(64))
		}
		k.Tensors = append(k.Tensors, t)
		if t.Role == irpb.TensorRole_PARAM {
			k.Inputs = append(k.Inputs, int32(i))
		}
		if t.Role == irpb.TensorRole_OUTPUT || s.n(5) == 0 {
			k.Outputs = append(k.Outputs, int32(i))
		}
	}
	names := OpNames()
	var scope []int32
	var gen func(depth int) []*irpb.Stmt
	affine := func(rank int) *irpb.Affine {
		e := &irpb.Affine{Constant: int64(s.n(9) - 4)}
		for range s.n(4) {
			t := &irpb.Term{Coef: fuzzCoefs[s.n(len(fuzzCoefs))]}
			switch s.n(3) {
			case 0:
				t.Kind, t.Id = irpb.TermKind_TILE_AXIS, int32(s.n(max(rank, 1)))
			case 1:
				if k.NumVars == 0 {
					continue
				}
				t.Kind, t.Id = irpb.TermKind_LOOP_VAR, int32(s.n(int(k.NumVars))) // may be out of scope
			case 2:
				t.Kind, t.Id = irpb.TermKind_PROGRAM_ID, int32(s.n(max(len(k.Grid), 1)))
			}
			e.Terms = append(e.Terms, t)
		}
		return e
	}
	var access func(depth int) *irpb.Access
	access = func(depth int) *irpb.Access {
		t := k.Tensors[s.n(len(k.Tensors))]
		a := &irpb.Access{Tensor: t.Id}
		for range 1 + s.n(3) {
			a.Shape = append(a.Shape, fuzzDims[s.n(len(fuzzDims))])
		}
		for range t.Shape {
			a.Index = append(a.Index, affine(len(a.Shape)))
		}
		if depth == 0 && s.n(8) == 0 {
			a.DynamicDim = []int32{int32(s.n(len(t.Shape)))}
			a.Dynamic = []*irpb.Access{access(1)}
		}
		return a
	}
	gen = func(depth int) []*irpb.Stmt {
		var body []*irpb.Stmt
		for range 1 + s.n(4) {
			if depth < 3 && s.n(3) == 0 {
				l := &irpb.Loop{Var: k.NumVars, Start: int64(s.n(4)), Stop: int64(s.n(20)), Step: int64(1 + s.n(3)), Kind: irpb.LoopKind(1 + s.n(2)), Loc: &irpb.Loc{Line: int32(s.n(99))}}
				k.NumVars++
				scope = append(scope, l.Var)
				l.Body = gen(depth + 1)
				scope = scope[:len(scope)-1]
				body = append(body, &irpb.Stmt{Kind: &irpb.Stmt_Loop{Loop: l}})
				continue
			}
			name := names[s.n(len(names))]
			if s.n(20) == 0 {
				name = "bogus"
			}
			spec := ops[name]
			in := &irpb.Instruction{Op: name, Loc: &irpb.Loc{File: int32(s.n(2)), Line: int32(s.n(99))}, Attrs: map[string]*irpb.Attr{}}
			for range spec.dstMin + s.n(spec.dstMax-spec.dstMin+2) {
				in.Dst = append(in.Dst, access(0))
			}
			for range spec.srcMin + s.n(spec.srcMax-spec.srcMin+2) {
				in.Src = append(in.Src, access(0))
			}
			for _, an := range sortedKeys(spec.attrs) {
				if s.n(3) == 0 {
					continue
				}
				switch s.n(6) {
				case 0:
					in.Attrs[an] = &irpb.Attr{Value: &irpb.Attr_I{I: int64(s.n(40))}}
				case 1:
					in.Attrs[an] = &irpb.Attr{Value: &irpb.Attr_F{F: float64(s.n(9)) / 4}}
				case 2:
					in.Attrs[an] = &irpb.Attr{Value: &irpb.Attr_B{B: s.n(2) == 0}}
				case 3:
					vals := []string{"add", "bitwise_and", "exp", "tensor", "vector", "error", "skip", "less", "?"}
					in.Attrs[an] = &irpb.Attr{Value: &irpb.Attr_S{S: vals[s.n(len(vals))]}}
				default:
					var v []int64
					for range s.n(34) {
						v = append(v, int64(s.n(5)))
					}
					in.Attrs[an] = &irpb.Attr{Value: &irpb.Attr_Ints{Ints: &irpb.IntList{V: v}}}
				}
			}
			rank := 2
			for range s.n(3) {
				in.Mask = append(in.Mask, &irpb.Predicate{Expr: affine(rank), Cmp: irpb.Cmp(1 + s.n(6))})
			}
			if name == "iota" || s.n(10) == 0 {
				in.Exprs = append(in.Exprs, affine(rank))
			}
			if name == "affine_select" {
				in.Preds = append(in.Preds, &irpb.Predicate{Expr: affine(rank), Cmp: irpb.Cmp(1 + s.n(6))})
			}
			engines := []string{"", "vector", "gpsimd", "tensor"}
			in.Engine = engines[s.n(len(engines))]
			body = append(body, &irpb.Stmt{Kind: &irpb.Stmt_Inst{Inst: in}})
		}
		return body
	}
	k.Body = gen(0)
	for _, t := range k.Tensors {
		if a := t.Allocation; a != nil && k.NumVars == 0 {
			a.NumFreeTiles = 0 // a rotating placement needs a loop variable
		}
	}
	return k
}

// FuzzValidate: on structurally valid kernels of every opcode, Validate,
// Format and MatmulMACs never panic, Validate is deterministic, and the IR
// round-trips through Marshal / Unmarshal unchanged.
func FuzzValidate(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Add([]byte("matmul transposes masks loops and grids"))
	f.Fuzz(func(t *testing.T, data []byte) {
		k := genKernel(&byteSource{b: data})
		// the generator may make a broken tile-axis reference in a mask;
		// Validate reports it, and structure must hold otherwise
		bin, err := Marshal(k)
		if err != nil {
			t.Fatalf("generator made a structurally broken kernel: %v\n%s", err, Format(k))
		}
		k2, err := Unmarshal(bin)
		if err != nil || !proto.Equal(k, k2) {
			t.Fatalf("round trip: %v", err)
		}
		e1, e2 := Validate(k), Validate(k2)
		if (e1 == nil) != (e2 == nil) || (e1 != nil && e1.Error() != e2.Error()) {
			t.Fatalf("Validate not deterministic:\n%v\n---\n%v", e1, e2)
		}
		_ = Format(k)
		_ = MatmulMACs(k)
	})
}
