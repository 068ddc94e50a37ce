package eval

import (
	"encoding/json"
	"fmt"
	"sync/atomic"

	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// SlicedTarget is the custom-call of a region the golden driver cut out to
// run a few batch elements at a time (engine/golden/sliced.go): its one
// called computation does the region's work for Chunk elements of the
// Lead leading dims; operands flagged in Sliced are cut along those dims
// (flattened), the others passed whole; the results (an array or a tuple)
// are the chunks' results laid end to end.
const SlicedTarget = "__goldtrace$sliced"

// SlicedConfig is a sliced custom-call's backend_config.
type SlicedConfig struct {
	Lead   int    `json:"lead"`
	Chunk  int    `json:"chunk"`
	Sliced []bool `json:"sliced"`
}

func init() { RegisterCustomCall(SlicedTarget, evalSliced) }

// evalSliced runs the region's computation chunk by chunk, each core
// taking whole chunks with an evaluator of its own (its ops serial: the
// parallelism is across chunks, each chunk's values staying in that core's
// cache).
func evalSliced(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	var cfg SlicedConfig
	if err := json.Unmarshal([]byte(in.BackendConfig), &cfg); err != nil {
		return Value{}, fmt.Errorf("backend_config: %w", err)
	}
	if len(in.Called) != 1 || len(cfg.Sliced) != len(args) || cfg.Chunk <= 0 || cfg.Lead <= 0 {
		return Value{}, fmt.Errorf("malformed sliced region (%d computations, %d operands, config %s)", len(in.Called), len(args), in.BackendConfig)
	}
	sub := in.Called[0]
	total := int64(-1)
	for i, a := range args {
		if !cfg.Sliced[i] {
			continue
		}
		if a.T == nil || len(a.T.Dims) < cfg.Lead {
			return Value{}, fmt.Errorf("sliced operand %d is not an array with %d leading dims", i, cfg.Lead)
		}
		n := tensor.NumElements(a.T.Dims[:cfg.Lead])
		if total >= 0 && n != total {
			return Value{}, fmt.Errorf("sliced operand %d has %d batch elements, not %d", i, n, total)
		}
		total = n
	}
	if total <= 0 || total%int64(cfg.Chunk) != 0 {
		return Value{}, fmt.Errorf("%d batch elements do not split into chunks of %d", total, cfg.Chunk)
	}
	chunks := int(total) / cfg.Chunk
	var outShapes []hlo.Shape
	if in.Shape.IsTuple() {
		outShapes = in.Shape.Tuple
	} else {
		outShapes = []hlo.Shape{in.Shape}
	}
	outs := make([]*tensor.Tensor, len(outShapes))
	for i, s := range outShapes {
		outs[i] = &tensor.Tensor{Type: s.Elem, Dims: append([]int64(nil), s.Dims...),
			Data: tensor.StorageForWriting(int(tensor.NumElements(s.Dims)) * s.Elem.Size())}
	}
	par := min(ev.parallelism(), chunks)
	errs := make([]error, par)
	var workers atomic.Int32
	dynamicFor(par, chunks, func(next func() int) {
		w := int(workers.Add(1)) - 1
		if par > 1 {
			coreWorkers.Add(1)
			defer coreWorkers.Add(-1)
		}
		child := New(ev.Module, Options{ReplicaID: ev.Options.ReplicaID, PartitionID: ev.Options.PartitionID,
			ReplicaCount: ev.Options.ReplicaCount, NumPartitions: ev.Options.NumPartitions, Parallelism: 1})
		child.Ctx = ev.Ctx
		// Chunks are a loop's steps: each allocates what the last freed,
		// so the child recycles storage (recycle.go) rather than leave
		// the collector a chunk's worth of garbage per chunk.
		defer child.enterLoop()()
		sargs := make([]Value, len(args))
		for ci := next(); ci < chunks; ci = next() {
			for i, a := range args {
				if !cfg.Sliced[i] {
					sargs[i] = a
					continue
				}
				sargs[i] = ArrayValue(chunkOf(a.T, sub.Params[i].Shape.Dims, ci))
			}
			v, err := child.Call(sub, sargs)
			if err != nil {
				errs[w] = err
				return
			}
			parts := []Value{v}
			if v.IsTuple() {
				parts = v.Tuple
			}
			if len(parts) != len(outs) {
				errs[w] = fmt.Errorf("region returned %d values, want %d", len(parts), len(outs))
				return
			}
			for i, p := range parts {
				n := len(p.T.Data)
				if p.T.Type != outs[i].Type || n*chunks != len(outs[i].Data) {
					errs[w] = fmt.Errorf("region result %d: %d bytes of %v per chunk do not tile %v", i, n, p.T.Type,
						tensor.ShapeString(outs[i].Type, outs[i].Dims))
					return
				}
				copy(outs[i].Data[ci*n:], p.T.Data)
			}
		}
	})
	for _, err := range errs {
		if err != nil {
			return Value{}, err
		}
	}
	if !in.Shape.IsTuple() {
		return ArrayValue(outs[0]), nil
	}
	vals := make([]Value, len(outs))
	for i, t := range outs {
		vals[i] = ArrayValue(t)
	}
	return TupleValue(vals...), nil
}

// chunkOf is chunk ci of t (dims: one chunk's, the leading one the chunk's
// batch elements), a view of t's storage: t is row-major, so a run of
// batch elements is one contiguous run of bytes.
func chunkOf(t *tensor.Tensor, dims []int64, ci int) *tensor.Tensor {
	n := int(tensor.NumElements(dims)) * t.Type.Size()
	return &tensor.Tensor{Type: t.Type, Dims: dims, Data: t.Data[ci*n : (ci+1)*n : (ci+1)*n]}
}
