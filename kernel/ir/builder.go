package ir

import (
	"fmt"

	"goldtrace/kernel/ir/irpb"
)

// Builder assembles a Kernel from the tracer's event stream. Tensors get ids
// in declaration order; instructions and loops nest as they arrive.
type Builder struct {
	k      *irpb.Kernel
	bodies []*[]*irpb.Stmt // innermost last; bodies[0] is the kernel body
	open   []*irpb.Loop
	done   bool

	// whole[id]: the shape and identity index of tensor id's whole-tensor
	// access, shared by every such access (the tape's most common operand;
	// nothing modifies an access once built).
	whole []wholeAccess

	symbols map[string]string // interned op and attribute names (tape decoders)

	ahead *ahead // CheckAhead's progress
}

type wholeAccess struct {
	shape []int64
	index []*irpb.Affine
}

// NewBuilder starts an empty kernel named name.
func NewBuilder(name string) *Builder {
	k := &irpb.Kernel{SchemaVersion: uint32(irpb.SchemaVersion_SCHEMA_VERSION_CURRENT), Name: name, CoreGridDim: -1}
	b := &Builder{k: k}
	b.bodies = []*[]*irpb.Stmt{&k.Body}
	return b
}

// AppendJSON decodes a BuildBatch in protobuf JSON and applies its events in
// order. It returns the ids of the tensors the batch declared and the variable
// numbers of the loops it opened.
func (b *Builder) AppendJSON(js []byte) (tensorIDs, loopVars []int32, err error) {
	batch, err := decodeEventBatch(js)
	if err != nil {
		return nil, nil, fmt.Errorf("kernel builder: malformed event batch: %v", err)
	}
	return b.Append(batch)
}

// Append applies a batch of events.
func (b *Builder) Append(batch *irpb.BuildBatch) (tensorIDs, loopVars []int32, err error) {
	if b.done {
		return nil, nil, fmt.Errorf("kernel builder: kernel %q is already finished", b.k.Name)
	}
	for i, ev := range batch.Events {
		switch kind := ev.Kind.(type) {
		case *irpb.BuildEvent_Tensor:
			tensorIDs = append(tensorIDs, b.addTensor(kind.Tensor))
		case *irpb.BuildEvent_Inst:
			b.addInst(kind.Inst)
		case *irpb.BuildEvent_LoopBegin:
			loopVars = append(loopVars, b.openLoop(kind.LoopBegin))
		case *irpb.BuildEvent_LoopEnd:
			if err := b.closeLoop(i); err != nil {
				return tensorIDs, loopVars, err
			}
		default:
			return tensorIDs, loopVars, fmt.Errorf("kernel builder: event %d is empty", i)
		}
	}
	return tensorIDs, loopVars, nil
}

// The events, one by one (Append and the tape decoders).

func (b *Builder) addTensor(t *irpb.Tensor) int32 {
	t.Id = int32(len(b.k.Tensors))
	b.k.Tensors = append(b.k.Tensors, t)
	return t.Id
}

// instStmt holds a statement and its oneof wrapper in one allocation.
type instStmt struct {
	stmt irpb.Stmt
	kind irpb.Stmt_Inst
}

func (b *Builder) addInst(in *irpb.Instruction) {
	s := &instStmt{kind: irpb.Stmt_Inst{Inst: in}}
	s.stmt.Kind = &s.kind
	b.add(&s.stmt)
}

func (b *Builder) openLoop(l *irpb.Loop) int32 {
	l.Var = b.k.NumVars
	b.k.NumVars++
	l.Body = nil
	b.add(&irpb.Stmt{Kind: &irpb.Stmt_Loop{Loop: l}})
	b.open = append(b.open, l)
	b.bodies = append(b.bodies, &l.Body)
	return l.Var
}

// closeLoop ends the innermost open loop (event i of its batch).
func (b *Builder) closeLoop(i int) error {
	if len(b.open) == 0 {
		return fmt.Errorf("kernel builder: event %d closes a loop, but none is open", i)
	}
	b.open = b.open[:len(b.open)-1]
	b.bodies = b.bodies[:len(b.bodies)-1]
	return nil
}

func (b *Builder) add(s *irpb.Stmt) {
	body := b.bodies[len(b.bodies)-1]
	*body = append(*body, s)
}

// Signature completes a kernel: the launch grid and its parameters and outputs.
type Signature struct {
	Grid        []int64           `json:"grid"`
	Inputs      []int32           `json:"inputs"`
	Outputs     []int32           `json:"outputs"`
	Files       []string          `json:"files"`
	NumCores    int32             `json:"num_cores"`
	CoreGridDim int32             `json:"core_grid_dim"`
	Options     map[string]string `json:"options"`
	// Mutable marks parameters the kernel writes although they were not
	// declared mutable: the outputs of old-style kernels (passed as arguments).
	Mutable []int32 `json:"mutable"`
}

// Finish closes the kernel. Open loops are an error (the tracer closes every
// loop it opens, also when the body raised).
func (b *Builder) Finish(sig Signature) (*irpb.Kernel, error) {
	if b.done {
		return nil, fmt.Errorf("kernel builder: kernel %q is already finished", b.k.Name)
	}
	if len(b.open) != 0 {
		return nil, fmt.Errorf("kernel builder: %d loop(s) still open at the end of kernel %q", len(b.open), b.k.Name)
	}
	n := int32(len(b.k.Tensors))
	for _, ids := range [][]int32{sig.Inputs, sig.Outputs, sig.Mutable} {
		for _, id := range ids {
			if id < 0 || id >= n {
				return nil, fmt.Errorf("kernel builder: tensor id %d out of range (kernel has %d tensors)", id, n)
			}
		}
	}
	for _, id := range sig.Mutable {
		b.k.Tensors[id].Mutable = true
	}
	b.k.Grid = sig.Grid
	b.k.Inputs = sig.Inputs
	b.k.Outputs = sig.Outputs
	b.k.Files = sig.Files
	b.k.NumCores = sig.NumCores
	b.k.CoreGridDim = sig.CoreGridDim
	b.k.Options = sig.Options
	b.done = true
	return b.k, nil
}
