package ir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"goldtrace/kernel/ir/irpb"
)

// The tracer's event batches are the protobuf JSON mapping of BuildBatch
// (field names as in kernel_ir.proto). protojson decodes them, but at tens of
// microseconds per event it dominated a kernel's trace time; these mirror
// structs decode the same documents with encoding/json, several times faster.
// Unknown fields are errors, as with protojson.

type jBatch struct {
	Events []jEvent `json:"events"`
}

type jEvent struct {
	Tensor    *jTensor `json:"tensor"`
	Inst      *jInst   `json:"inst"`
	LoopBegin *jLoop   `json:"loop_begin"`
	LoopEnd   bool     `json:"loop_end"`
}

type jLoc struct {
	File int32 `json:"file"`
	Line int32 `json:"line"`
}

type jAlloc struct {
	PartitionOffset int64  `json:"partition_offset"`
	ByteOffset      int64  `json:"byte_offset"`
	LoopVar         int32  `json:"loop_var"`
	NumFreeTiles    int64  `json:"num_free_tiles"`
	BytesPerTile    int64  `json:"bytes_per_tile"`
	Kind            string `json:"kind"`
}

type jTensor struct {
	ID         int32   `json:"id"`
	Name       string  `json:"name"`
	Memory     jEnum   `json:"memory"`
	Role       jEnum   `json:"role"`
	Shape      []int64 `json:"shape"`
	Dtype      int32   `json:"dtype"`
	TF32       bool    `json:"tf32"`
	Mutable    bool    `json:"mutable"`
	Allocation *jAlloc `json:"allocation"`
	Data       []byte  `json:"data"` // base64, as protojson writes bytes
	Loc        *jLoc   `json:"loc"`
}

type jTerm struct {
	Kind int32 `json:"kind"`
	ID   int32 `json:"id"`
	Coef int64 `json:"coef"`
}

type jAffine struct {
	Constant int64   `json:"constant"`
	Terms    []jTerm `json:"terms"`
}

type jAccess struct {
	Tensor     int32      `json:"tensor"`
	Shape      []int64    `json:"shape"`
	Index      []jAffine  `json:"index"`
	DynamicDim []int32    `json:"dynamic_dim"`
	Dynamic    []*jAccess `json:"dynamic"`
}

type jPred struct {
	Expr jAffine `json:"expr"`
	Cmp  int32   `json:"cmp"`
}

type jList[T any] struct {
	V []T `json:"v"`
}

type jAttr struct {
	I      *int64         `json:"i"`
	F      *jFloat        `json:"f"`
	S      *string        `json:"s"`
	Ints   *jList[int64]  `json:"ints"`
	Floats *jList[jFloat] `json:"floats"`
	B      *bool          `json:"b"`
}

type jInst struct {
	Op     string           `json:"op"`
	Dst    []*jAccess       `json:"dst"`
	Src    []*jAccess       `json:"src"`
	Attrs  map[string]jAttr `json:"attrs"`
	Mask   []jPred          `json:"mask"`
	Exprs  []jAffine        `json:"exprs"`
	Preds  []jPred          `json:"preds"`
	Engine string           `json:"engine"`
	Loc    *jLoc            `json:"loc"`
}

type jLoop struct {
	Start int64 `json:"start"`
	Stop  int64 `json:"stop"`
	Step  int64 `json:"step"`
	Kind  int32 `json:"kind"`
	Loc   *jLoc `json:"loc"`
}

// jFloat accepts a JSON number or protojson's "NaN", "Infinity", "-Infinity".
type jFloat float64

func (f *jFloat) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		switch s {
		case "NaN":
			*f = jFloat(math.NaN())
		case "Infinity":
			*f = jFloat(math.Inf(1))
		case "-Infinity":
			*f = jFloat(math.Inf(-1))
		default:
			return fmt.Errorf("bad float %q", s)
		}
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = jFloat(v)
	return nil
}

// jEnum accepts an enum by name or number.
type jEnum struct {
	name string
	num  int32
	set  bool
}

func (e *jEnum) UnmarshalJSON(b []byte) error {
	e.set = true
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &e.name)
	}
	return json.Unmarshal(b, &e.num)
}

func (e jEnum) resolve(names map[string]int32, what string) (int32, error) {
	if !e.set {
		return 0, nil
	}
	if e.name == "" {
		return e.num, nil
	}
	v, ok := names[e.name]
	if !ok {
		return 0, fmt.Errorf("unknown %s %q", what, e.name)
	}
	return v, nil
}

func decodeEventBatch(js []byte) (*irpb.BuildBatch, error) {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var jb jBatch
	if err := dec.Decode(&jb); err != nil {
		return nil, err
	}
	out := &irpb.BuildBatch{Events: make([]*irpb.BuildEvent, 0, len(jb.Events))}
	for i, ev := range jb.Events {
		n := 0
		var e irpb.BuildEvent
		if ev.Tensor != nil {
			t, err := ev.Tensor.proto()
			if err != nil {
				return nil, fmt.Errorf("event %d: %v", i, err)
			}
			e.Kind = &irpb.BuildEvent_Tensor{Tensor: t}
			n++
		}
		if ev.Inst != nil {
			e.Kind = &irpb.BuildEvent_Inst{Inst: ev.Inst.proto()}
			n++
		}
		if ev.LoopBegin != nil {
			l := ev.LoopBegin
			e.Kind = &irpb.BuildEvent_LoopBegin{LoopBegin: &irpb.Loop{Start: l.Start, Stop: l.Stop, Step: l.Step, Kind: irpb.LoopKind(l.Kind), Loc: l.Loc.proto()}}
			n++
		}
		if ev.LoopEnd {
			e.Kind = &irpb.BuildEvent_LoopEnd{LoopEnd: true}
			n++
		}
		if n > 1 {
			return nil, fmt.Errorf("event %d sets %d kinds; one is allowed", i, n)
		}
		out.Events = append(out.Events, &e)
	}
	return out, nil
}

func (l *jLoc) proto() *irpb.Loc {
	if l == nil {
		return nil
	}
	return &irpb.Loc{File: l.File, Line: l.Line}
}

func (t *jTensor) proto() (*irpb.Tensor, error) {
	mem, err := t.Memory.resolve(irpb.Memory_value, "memory")
	if err != nil {
		return nil, err
	}
	role, err := t.Role.resolve(irpb.TensorRole_value, "tensor role")
	if err != nil {
		return nil, err
	}
	p := &irpb.Tensor{Id: t.ID, Name: t.Name, Memory: irpb.Memory(mem), Role: irpb.TensorRole(role), Shape: t.Shape,
		Dtype: t.Dtype, Tf32: t.TF32, Mutable: t.Mutable, Data: t.Data, Loc: t.Loc.proto()}
	if a := t.Allocation; a != nil {
		p.Allocation = &irpb.Allocation{PartitionOffset: a.PartitionOffset, ByteOffset: a.ByteOffset, LoopVar: a.LoopVar,
			NumFreeTiles: a.NumFreeTiles, BytesPerTile: a.BytesPerTile, Kind: a.Kind}
	}
	return p, nil
}

func (a jAffine) proto() *irpb.Affine {
	p := &irpb.Affine{Constant: a.Constant}
	if len(a.Terms) > 0 {
		p.Terms = make([]*irpb.Term, len(a.Terms))
		for i, t := range a.Terms {
			p.Terms[i] = &irpb.Term{Kind: irpb.TermKind(t.Kind), Id: t.ID, Coef: t.Coef}
		}
	}
	return p
}

func (a *jAccess) proto() *irpb.Access {
	if a == nil {
		return &irpb.Access{}
	}
	p := &irpb.Access{Tensor: a.Tensor, Shape: a.Shape, DynamicDim: a.DynamicDim}
	if len(a.Index) > 0 {
		p.Index = make([]*irpb.Affine, len(a.Index))
		for i, e := range a.Index {
			p.Index[i] = e.proto()
		}
	}
	for _, d := range a.Dynamic {
		p.Dynamic = append(p.Dynamic, d.proto())
	}
	return p
}

func preds(ps []jPred) []*irpb.Predicate {
	if len(ps) == 0 {
		return nil
	}
	out := make([]*irpb.Predicate, len(ps))
	for i, p := range ps {
		out[i] = &irpb.Predicate{Expr: p.Expr.proto(), Cmp: irpb.Cmp(p.Cmp)}
	}
	return out
}

func (in *jInst) proto() *irpb.Instruction {
	p := &irpb.Instruction{Op: in.Op, Engine: in.Engine, Loc: in.Loc.proto(), Mask: preds(in.Mask), Preds: preds(in.Preds)}
	for _, d := range in.Dst {
		p.Dst = append(p.Dst, d.proto())
	}
	for _, s := range in.Src {
		p.Src = append(p.Src, s.proto())
	}
	for _, e := range in.Exprs {
		p.Exprs = append(p.Exprs, e.proto())
	}
	if len(in.Attrs) > 0 {
		p.Attrs = make(map[string]*irpb.Attr, len(in.Attrs))
		for k, a := range in.Attrs {
			p.Attrs[k] = a.proto()
		}
	}
	return p
}

func (a jAttr) proto() *irpb.Attr {
	switch {
	case a.I != nil:
		return &irpb.Attr{Value: &irpb.Attr_I{I: *a.I}}
	case a.F != nil:
		return &irpb.Attr{Value: &irpb.Attr_F{F: float64(*a.F)}}
	case a.S != nil:
		return &irpb.Attr{Value: &irpb.Attr_S{S: *a.S}}
	case a.Ints != nil:
		return &irpb.Attr{Value: &irpb.Attr_Ints{Ints: &irpb.IntList{V: a.Ints.V}}}
	case a.Floats != nil:
		v := make([]float64, len(a.Floats.V))
		for i, f := range a.Floats.V {
			v[i] = float64(f)
		}
		return &irpb.Attr{Value: &irpb.Attr_Floats{Floats: &irpb.FloatList{V: v}}}
	case a.B != nil:
		return &irpb.Attr{Value: &irpb.Attr_B{B: *a.B}}
	}
	return &irpb.Attr{}
}
