package eval

import (
	"fmt"
	"math"
	"slices"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// Log1pPairTarget is the custom-call target of an f32 or f64 log1p that
// XLA:CPU compiles next to the log1p of its negation, in one fusion (jax's
// atanh is (log1p(x) - log1p(-x))/2). LLVM's instruction combining rewrites
// (-x)*(-x) as x*x, so the two log1p share x², and x²*(-1/2) too; that
// product then has two uses and does not contract into the add that ends
// each small-|x| branch, and the other product does:
// x + fma(x*x², N/D, -x²/2) instead of x + fma(x², -1/2, (x*x²)*(N/D)).
// Everything else is log1p's (xlamath.go, xlamath64.go). The golden
// driver's legalization writes such pairs into the module as this call
// (engine/golden/log1p_pair.go); its one operand is log1p's, as is the
// result.
const Log1pPairTarget = "__goldtrace$xla_log1p_pair"

func init() { RegisterCustomCall(Log1pPairTarget, evalLog1pPair) }

func evalLog1pPair(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if len(args) != 1 {
		return Value{}, fmt.Errorf("takes 1 operand, got %d", len(args))
	}
	x := args[0].T
	if x == nil || x.Type != in.Shape.Elem || !slices.Equal(x.Dims, in.Shape.Dims) {
		return Value{}, fmt.Errorf("operand must be an array of the result shape %v%v", in.Shape.Elem, in.Shape.Dims)
	}
	out := tensor.New(x.Type, x.Dims)
	n := int(x.NumElements())
	switch x.Type {
	case dtype.F32:
		xs, o := daz(x.F32()), out.F32()
		parallelFor(n, func(lo, hi int) {
			mapLanes(log1pPairLanes)(xs[lo:hi], o[lo:hi])
			ftz(o[lo:hi])
		})
	case dtype.F64:
		xs, o := daz(x.F64()), out.F64()
		parallelFor(n, func(lo, hi int) {
			log1pLarge64(xs[lo:hi], o[lo:hi])
			for i, v := range xs[lo:hi] {
				if math.Abs(v) < log1p64Small {
					o[lo+i] = log1pPairSmall64(v)
				}
			}
			ftz(o[lo:hi])
		})
	default:
		return Value{}, fmt.Errorf("element type %v is not f32 or f64", x.Type)
	}
	return ArrayValue(out), nil
}

// log1pPairLanes is log1pLanes with the pair's last FMA.
func log1pPairLanes(x, o []float32) {
	var u, p, q [xlaLanes]float32
	n := len(x)
	for i, v := range x {
		u[i] = v + 1
	}
	logLanes(u[:n], o)
	hornerLanes(x, p[:n], log1pNum[:])
	hornerLanes(x, q[:n], log1pDen[:])
	for i, v := range x {
		if float32(math.Abs(float64(v))) < 0x1.a8279ap-2 {
			x2 := float32(v * v)
			o[i] = v + fma32(float32(v*x2), q[i]/p[i], float32(x2*-0.5))
		}
	}
}

// log1pPairSmall64 is log1pSmall64 with the pair's last FMA.
func log1pPairSmall64(x float64) float64 {
	x2 := float64(x * x)
	p, q := log1p64Num[0], log1p64Den[0]
	for i := 1; i < len(log1p64Num); i++ {
		p = math.FMA(p, x, log1p64Num[i])
		q = math.FMA(q, x, log1p64Den[i])
	}
	return x + math.FMA(float64(x*x2), p/q, float64(x2*-0.5))
}
