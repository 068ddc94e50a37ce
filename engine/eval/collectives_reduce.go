package eval

// The reduction of all-reduce and reduce-scatter. XLA:CPU pattern-matches
// the reducer to a reduction kind (sum, product, min, max; and/or on pred as
// min/max) and its in-process collectives start every element from the
// kind's identity and fold the members in rank order, in the element type's
// own arithmetic. So a sum of -0 values is +0, and min/max, being
// std::min(acc, x) / std::max(acc, x), never let a NaN win. Before that, its
// compiler widens the narrow floats: bf16 and f8e8m0fnu all-reduces run in
// f32 (AllReducePromotion, FloatNormalization), the other 8- and 4-bit floats
// in f16, each rounded once at the end. Any other reducer folds with the
// computation itself, from the first member on, as HloEvaluator does.

import (
	"fmt"
	"math"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// reductionKind is the add/multiply/minimum/maximum opcode XLA:CPU reduces
// with for reducer c on type t, or "" when it is no such kind.
func reductionKind(c *hlo.Computation, t dtype.Type) string {
	op := fastReducer(c)
	switch op {
	case "add", "multiply", "minimum", "maximum":
		if t.IsComplex() && (op == "minimum" || op == "maximum") {
			return ""
		}
		return op
	case "and", "or":
		if t != dtype.Pred {
			return ""
		}
		if op == "and" {
			return "minimum"
		}
		return "maximum"
	}
	return ""
}

// allReduceArrays reduces xs, one per group member in rank order.
func (ev *Evaluator) allReduceArrays(c *hlo.Computation, xs []*tensor.Tensor) (*tensor.Tensor, error) {
	if c == nil {
		return nil, fmt.Errorf("missing to_apply computation")
	}
	t := xs[0]
	kind := reductionKind(c, t.Type)
	if kind == "" {
		return ev.foldWithComputation(c, xs)
	}
	switch classOf(t.Type) {
	case classF32:
		acc := make([]float32, t.NumElements())
		fill(acc, float32(floatIdentity(kind)))
		ct := reductionType(t.Type)
		var scratch []byte
		if ct == dtype.F16 {
			scratch = make([]byte, 2*len(acc))
		}
		for _, x := range xs {
			accumulate(kind, acc, asF32(x))
			if scratch != nil {
				// f16 arithmetic: round after every step.
				dtype.EncodeF32(dtype.F16, acc, scratch)
				dtype.DecodeF32(dtype.F16, scratch, acc)
			}
		}
		return newFromF32(t.Type, t.Dims, acc), nil
	case classF64:
		out := tensor.New(t.Type, t.Dims)
		acc := out.F64()
		fill(acc, floatIdentity(kind))
		for _, x := range xs {
			accumulate(kind, acc, x.F64())
		}
		return out, nil
	case classC64:
		out := tensor.New(t.Type, t.Dims)
		foldComplex(kind, out.C64(), xs, (*tensor.Tensor).C64)
		return out, nil
	case classC128:
		out := tensor.New(t.Type, t.Dims)
		foldComplex(kind, out.C128(), xs, (*tensor.Tensor).C128)
		return out, nil
	case classSigned:
		bits := t.Type.Bits()
		acc := make([]int64, t.NumElements())
		switch kind {
		case "multiply":
			fill(acc, 1)
		case "minimum":
			fill(acc, int64(1)<<(bits-1)-1)
		case "maximum":
			fill(acc, -int64(1)<<(bits-1))
		}
		for _, x := range xs {
			accumulate(kind, acc, asI64(x))
		}
		return newFromI64(t.Type, t.Dims, acc), nil
	}
	// Unsigned and pred. For pred, C++ bool arithmetic makes the sum an or
	// and the product an and, which on 0/1 are max and min.
	if t.Type == dtype.Pred {
		switch kind {
		case "add":
			kind = "maximum"
		case "multiply":
			kind = "minimum"
		}
	}
	bits := t.Type.Bits()
	if t.Type == dtype.Pred {
		bits = 1
	}
	acc := make([]uint64, t.NumElements())
	switch kind {
	case "multiply":
		fill(acc, 1)
	case "minimum":
		fill(acc, math.MaxUint64>>(64-bits))
	}
	for _, x := range xs {
		accumulate(kind, acc, asU64(x))
	}
	return newFromU64(t.Type, t.Dims, acc), nil
}

func fill[T any](xs []T, v T) {
	for i := range xs {
		xs[i] = v
	}
}

type ordered interface {
	~float32 | ~float64 | ~int64 | ~uint64
}

// accumulate folds x into acc elementwise; min and max keep acc unless x
// compares strictly smaller or larger, as std::min/std::max do.
func accumulate[T ordered](kind string, acc, x []T) {
	switch kind {
	case "add":
		for i := range acc {
			acc[i] += x[i]
		}
	case "multiply":
		for i := range acc {
			acc[i] *= x[i]
		}
	case "minimum":
		for i := range acc {
			if x[i] < acc[i] {
				acc[i] = x[i]
			}
		}
	case "maximum":
		for i := range acc {
			if acc[i] < x[i] {
				acc[i] = x[i]
			}
		}
	}
}

func foldComplex[C cplx](kind string, acc []C, xs []*tensor.Tensor, elems func(*tensor.Tensor) []C) {
	if kind == "multiply" {
		fill(acc, 1)
	}
	for _, x := range xs {
		for i, v := range elems(x) {
			if kind == "add" {
				acc[i] += v
			} else {
				acc[i] = mulComplexPlain(acc[i], v)
			}
		}
	}
}

// mulComplexPlain is std::complex's product for finite values: each of the
// four products rounded, no fused multiply-add (the runtime is compiled C++,
// not XLA's generated code). The conversions keep Go from fusing.
func mulComplexPlain[C cplx](a, b C) C {
	x, y := complex128(a), complex128(b)
	re := roundPart[C](roundPart[C](float64(real(x)*real(y))) - roundPart[C](float64(imag(x)*imag(y))))
	im := roundPart[C](roundPart[C](float64(real(x)*imag(y))) + roundPart[C](float64(imag(x)*real(y))))
	return C(complex(re, im))
}

// floatIdentity is the starting value of a reduction kind on the float
// types reductions run in (f16, f32, f64; all have infinities).
func floatIdentity(kind string) float64 {
	switch kind {
	case "multiply":
		return 1
	case "minimum":
		return math.Inf(1)
	case "maximum":
		return math.Inf(-1)
	}
	return 0
}

// reductionType is the float type XLA:CPU reduces a float type in.
func reductionType(t dtype.Type) dtype.Type {
	switch {
	case t == dtype.F16 || t == dtype.F32 || t == dtype.F64:
		return t
	case t == dtype.BF16 || t == dtype.F8E8M0FNU:
		return dtype.F32
	}
	return dtype.F16
}

// foldWithComputation reduces elementwise with the reducer computation,
// starting from the first member.
func (ev *Evaluator) foldWithComputation(c *hlo.Computation, xs []*tensor.Tensor) (*tensor.Tensor, error) {
	out := xs[0].Clone()
	for i := range out.NumElements() {
		acc := []Value{ArrayValue(scalarView(xs[0], i))}
		for _, x := range xs[1:] {
			var err error
			if acc, err = applyReducer(ev, c, acc, []*tensor.Tensor{x}, i); err != nil {
				return nil, err
			}
		}
		if acc[0].T == nil || acc[0].T.Type != out.Type {
			return nil, fmt.Errorf("reducer %s must return a %v scalar", c.Name, out.Type)
		}
		storeElem(out, i, acc[0].T)
	}
	return out, nil
}
