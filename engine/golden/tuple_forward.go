package golden

import (
	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
)

// forwardLocalTuples makes a get-tuple-element of a tuple built in c read
// the element itself, once every rewrite that decides arithmetic is done
// (it runs with cseYNN, before pruneDead). An inlined call returning a
// tuple (jax.grad's log_softmax returns its value, its exp and its sum)
// otherwise keeps every element alive, the unread ones included, and
// reads its elements through the tuple: the log_softmax value of
// xent_grad, never read, was computed whole, and held the shifted logits
// whole for it. Computations with while loops keep their tuples (the
// in-place analysis follows them), as do computations where a reduce sums
// a widening of a narrow float: the evaluator picks that reduce's YNNPACK
// kernel from use counts (eval.ynnSumOrder) that pruning could change.
func forwardLocalTuples(c *hlo.Computation) {
	for _, in := range c.Instructions {
		switch {
		case in.Opcode == "while":
			return
		case in.Opcode == "reduce" && len(in.Operands) > 0:
			if x := in.Operands[0]; x.Opcode == "convert" && len(x.Operands) == 1 {
				if e := x.Operands[0].Shape.Elem; e != dtype.F32 && e != dtype.F64 {
					return
				}
			}
		}
	}
	fwd := func(x *hlo.Instruction) *hlo.Instruction {
		for x.Opcode == "get-tuple-element" && len(x.Operands) == 1 && x.Operands[0].Opcode == "tuple" &&
			x.TupleIndex >= 0 && int(x.TupleIndex) < len(x.Operands[0].Operands) && len(x.ControlPredecessors) == 0 {
			x = x.Operands[0].Operands[x.TupleIndex]
		}
		return x
	}
	for _, in := range c.Instructions {
		for i, op := range in.Operands {
			in.Operands[i] = fwd(op)
		}
	}
}
