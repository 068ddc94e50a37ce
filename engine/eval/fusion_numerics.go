package eval

import (
	"fmt"
	"math"
	"slices"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// FMATarget is the custom-call target of a fused multiply-add, a*b+c rounded
// once. HLO has no such opcode; XLA:CPU's LLVM backend forms one when it
// contracts a multiply into the add or subtract that uses it inside a fusion
// (fp-contract=fast on an FMA-capable host), and the golden driver's
// legalization writes those contractions into the module as this call so
// that the evaluator rounds where XLA:CPU does. Operands are a, b, c of one
// f16, f32 or f64 array shape, equal to the result's (f16 contracts only on
// hosts with AVX512-FP16, see engine/golden/xla_rewrites.go).
const FMATarget = "__goldtrace$xla_fma"

func init() { RegisterCustomCall(FMATarget, evalFMA) }

func evalFMA(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if len(args) != 3 {
		return Value{}, fmt.Errorf("takes 3 operands (a, b, c), got %d", len(args))
	}
	a, b, c := args[0].T, args[1].T, args[2].T
	for i, x := range []*tensor.Tensor{a, b, c} {
		if x == nil || x.Type != in.Shape.Elem || !slices.Equal(x.Dims, in.Shape.Dims) {
			return Value{}, fmt.Errorf("operand %d must be an array of the result shape %v%v", i, in.Shape.Elem, in.Shape.Dims)
		}
	}
	out := tensor.New(in.Shape.Elem, in.Shape.Dims)
	n := int(tensor.NumElements(in.Shape.Dims))
	switch in.Shape.Elem {
	case dtype.F32:
		o, x, y, z := out.F32(), a.F32(), b.F32(), c.F32()
		parallelForWork(n, 4*n, func(lo, hi int) {
			o, x, y, z := o[lo:hi], x[lo:hi], y[lo:hi], z[lo:hi]
			for i := fmaF32Vector(x, y, z, o); i < len(o); i++ {
				o[i] = fma32(x[i], y[i], z[i])
			}
		})
	case dtype.F64:
		o, x, y, z := out.F64(), a.F64(), b.F64(), c.F64()
		parallelForWork(n, 4*n, func(lo, hi int) {
			o, x, y, z := o[lo:hi], x[lo:hi], y[lo:hi], z[lo:hi]
			for i := fmaF64Vector(x, y, z, o); i < len(o); i++ {
				o[i] = math.FMA(x[i], y[i], z[i])
			}
		})
	case dtype.F16:
		// a*b is exact in f64 and so is a*b+c wherever the f16 result is
		// finite (both within 2^16..2^-48): one f64 FMA, one rounding to f16.
		// Decoded a block at a time: no full-size f64 copies.
		const block = 4096
		parallelForWork(n, 8*n, func(lo, hi int) {
			var x, y, z [block]float64
			for s := lo; s < hi; s += block {
				e := min(s+block, hi)
				m := e - s
				dtype.DecodeF64(dtype.F16, a.Data[2*s:2*e], x[:m])
				dtype.DecodeF64(dtype.F16, b.Data[2*s:2*e], y[:m])
				dtype.DecodeF64(dtype.F16, c.Data[2*s:2*e], z[:m])
				for i := range m {
					x[i] = math.FMA(x[i], y[i], z[i])
				}
				dtype.EncodeF64(dtype.F16, x[:m], out.Data[2*s:2*e])
				sseAfterAVX()
			}
		})
	default:
		return Value{}, fmt.Errorf("element type %v is not f16, f32 or f64", in.Shape.Elem)
	}
	return ArrayValue(out), nil
}
