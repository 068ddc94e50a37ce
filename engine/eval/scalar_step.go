package eval

// Scalar integer steps. Every while loop jax emits counts with scalar
// integers: the counter's add, the condition's compare, a scan's index
// arithmetic (select(i < 0, i + n, i)). Through the general elementwise
// kernels each such op costs a closure, a result tensor in two
// allocations, the kernel's dispatch and a parallelFor's bookkeeping, for
// one element. Call plans these ops (rank-0 s32/u32/s64/u64 operands of
// the result's type) onto the direct forms below, which compute the same
// wrapping two's-complement results in one allocation; an operand that is
// not what the instruction's shape says falls back to the general op.

import (
	"os"
	"unsafe"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// isScalarOf reports whether s is a rank-0 array of type t.
func isScalarOf(s hlo.Shape, t dtype.Type) bool {
	return s.IsArray() && s.Elem == t && len(s.Dims) == 0
}

// scalarIntType reports whether t is one of the integer types the direct
// scalar ops compute.
func scalarIntType(t dtype.Type) bool {
	return t == dtype.S32 || t == dtype.U32 || t == dtype.S64 || t == dtype.U64
}

// scalarStepOp returns the direct form of in, or nil when in is not a
// scalar integer op it covers; general is in's registered evaluator.
func scalarStepOp(in *hlo.Instruction, general OpFunc) OpFunc {
	if general == nil || len(in.Operands) == 0 {
		return nil
	}
	t := in.Operands[0].Shape.Elem
	if !scalarIntType(t) {
		return nil
	}
	for _, op := range in.Operands {
		if !isScalarOf(op.Shape, t) {
			return nil
		}
	}
	switch in.Opcode {
	case "add", "subtract", "multiply", "and", "or", "xor", "maximum", "minimum":
		if len(in.Operands) != 2 || !isScalarOf(in.Shape, t) {
			return nil
		}
		op := in.Opcode
		return func(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
			a, b, ok := scalarOperands(args, t)
			if !ok {
				return general(ev, in, args)
			}
			out := ev.newScalar(t)
			switch t {
			case dtype.S32:
				*(*int32)(unsafe.Pointer(&out.Data[0])) = intStep(op, load[int32](a), load[int32](b))
			case dtype.U32:
				*(*uint32)(unsafe.Pointer(&out.Data[0])) = intStep(op, load[uint32](a), load[uint32](b))
			case dtype.S64:
				*(*int64)(unsafe.Pointer(&out.Data[0])) = intStep(op, load[int64](a), load[int64](b))
			default:
				*(*uint64)(unsafe.Pointer(&out.Data[0])) = intStep(op, load[uint64](a), load[uint64](b))
			}
			return ArrayValue(out), nil
		}
	case "compare":
		if len(in.Operands) != 2 || !isScalarOf(in.Shape, dtype.Pred) {
			return nil
		}
		ctype, err := in.EffectiveComparisonType()
		if err != nil || ctype != "" && ctype != defaultComparison(t) {
			return nil
		}
		dir := in.ComparisonDirection
		switch dir {
		case "EQ", "NE", "LT", "LE", "GT", "GE":
		default:
			return nil
		}
		return func(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
			a, b, ok := scalarOperands(args, t)
			if !ok {
				return general(ev, in, args)
			}
			var r bool
			switch t {
			case dtype.S32:
				r = cmpStep(dir, load[int32](a), load[int32](b))
			case dtype.U32:
				r = cmpStep(dir, load[uint32](a), load[uint32](b))
			case dtype.S64:
				r = cmpStep(dir, load[int64](a), load[int64](b))
			default:
				r = cmpStep(dir, load[uint64](a), load[uint64](b))
			}
			out := ev.newScalar(dtype.Pred)
			out.Data[0] = b2u(r)
			return ArrayValue(out), nil
		}
	}
	return nil
}

// scalarOperands returns the two operands when both are rank-0 arrays of
// type t.
func scalarOperands(args []Value, t dtype.Type) (a, b *tensor.Tensor, ok bool) {
	if len(args) != 2 {
		return nil, nil, false
	}
	a, b = args[0].T, args[1].T
	sz := t.Size()
	if a == nil || b == nil || a.Type != t || b.Type != t || len(a.Dims) != 0 || len(b.Dims) != 0 ||
		len(a.Data) != sz || len(b.Data) != sz {
		return nil, nil, false
	}
	return a, b, true
}

func load[T int32 | uint32 | int64 | uint64](t *tensor.Tensor) T {
	return *(*T)(unsafe.Pointer(&t.Data[0]))
}

// intStep is one wrapping integer op, as binaryInt computes it.
func intStep[T int32 | uint32 | int64 | uint64](op string, a, b T) T {
	switch op {
	case "add":
		return a + b
	case "subtract":
		return a - b
	case "multiply":
		return a * b
	case "and":
		return a & b
	case "or":
		return a | b
	case "xor":
		return a ^ b
	case "maximum":
		return max(a, b)
	default: // minimum
		return min(a, b)
	}
}

func cmpStep[T int32 | uint32 | int64 | uint64](dir string, a, b T) bool {
	switch dir {
	case "EQ":
		return a == b
	case "NE":
		return a != b
	case "LT":
		return a < b
	case "LE":
		return a <= b
	case "GT":
		return a > b
	default: // GE
		return a >= b
	}
}

// stateSpareDisabled turns off the reuse of a loop's dead state slices
// (GOLDTRACE_NO_STATE_REUSE=1), to compare.
var stateSpareDisabled = os.Getenv("GOLDTRACE_NO_STATE_REUSE") == "1"
