package eval

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// YNNTarget is the custom-call target of an f32 elementwise op computed as
// YNNPACK computes it inside a __ynn_fusion (ynn_math.go). The golden
// driver writes the ops XLA:CPU hands to YNNPACK into the module as this
// call (engine/golden/ynn.go). backend_config names the op and the scalars
// YNNPACK folded into its kernel, as "op=tanh;in=3f800000;c0=0;c1=3f800000"
// (hex f32 bits): the input multiplier (in), and c0, c1 of the result's
// multiply-add (c1*f + c0 for tanh and erf, c1*f for exp, expm1, log and
// log1p). Ops: exp, expm1, log, log1p (x*in, then the kernel, times c1),
// tanh, erf (FMA of the result with c1 and c0), rsqrt (1/sqrt), logistic
// (1/(exp(-x)+1), each step rounded), maximum, minimum (MAXPS/MINPS: the
// second operand unless the first is strictly greater/smaller, so a NaN
// first operand is dropped), negate (0 - x: negate of +0 is +0). An op on
// f64 arrays (YNNPACK's fp64 kernels, ynn_math64.go) gives its scalars as
// 16 hex digits of f64 bits.
const YNNTarget = "__goldtrace$ynn"

func init() { RegisterCustomCall(YNNTarget, evalYNNElementwise) }

// YNNOp is one op of YNNTarget with its folded scalars.
type YNNOp struct {
	Op         string
	In, C0, C1 float32
	// F64 marks an op on f64 arrays (YNNPACK's fp64 kernels, ynn_math64.go),
	// whose scalars are In64, C064, C164 (16 hex digits of f64 bits in
	// backend_config).
	F64              bool
	In64, C064, C164 float64
}

// Config is the op's backend_config.
func (o YNNOp) Config() string {
	if o.F64 {
		return fmt.Sprintf("op=%s;in=%016x;c0=%016x;c1=%016x", o.Op, math.Float64bits(o.In64), math.Float64bits(o.C064), math.Float64bits(o.C164))
	}
	return fmt.Sprintf("op=%s;in=%x;c0=%x;c1=%x", o.Op, math.Float32bits(o.In), math.Float32bits(o.C0), math.Float32bits(o.C1))
}

// ParseYNNOp reads a YNNTarget backend_config.
func ParseYNNOp(s string) (YNNOp, error) {
	o := YNNOp{In: 1, C1: 1}
	for _, kv := range strings.Split(s, ";") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return o, fmt.Errorf("bad %s backend_config %q", YNNTarget, s)
		}
		if k == "op" {
			o.Op = v
			continue
		}
		if len(v) == 16 {
			// f64 bits: an op on f64 arrays.
			b, err := strconv.ParseUint(v, 16, 64)
			if err != nil {
				return o, fmt.Errorf("bad %s backend_config %q: %v", YNNTarget, s, err)
			}
			if !o.F64 {
				o.F64, o.In64, o.C164 = true, 1, 1
			}
			f := math.Float64frombits(b)
			switch k {
			case "in":
				o.In64 = f
			case "c0":
				o.C064 = f
			case "c1":
				o.C164 = f
			default:
				return o, fmt.Errorf("bad %s backend_config %q", YNNTarget, s)
			}
			continue
		}
		b, err := strconv.ParseUint(v, 16, 32)
		if err != nil {
			return o, fmt.Errorf("bad %s backend_config %q: %v", YNNTarget, s, err)
		}
		f := math.Float32frombits(uint32(b))
		switch k {
		case "in":
			o.In = f
		case "c0":
			o.C0 = f
		case "c1":
			o.C1 = f
		default:
			return o, fmt.Errorf("bad %s backend_config %q", YNNTarget, s)
		}
	}
	return o, nil
}

// ynnUnaryFunc is the scalar function of a unary YNNOp.
func (o YNNOp) unary() func(float32) float32 {
	in, c0, c1 := o.In, o.C0, o.C1
	switch o.Op {
	case "exp":
		return func(x float32) float32 { return ynnExp(x, in, c1) }
	case "expm1":
		return func(x float32) float32 { return ynnExpm1(x, in, c1) }
	case "log":
		return func(x float32) float32 { return ynnLog(x, in, c1) }
	case "log1p":
		return func(x float32) float32 { return ynnLog1p(x, in, c1) }
	case "tanh":
		return func(x float32) float32 { return ynnTanh(float32(ynnIn(x)*in), c0, c1) }
	case "erf":
		return func(x float32) float32 { return ynnErf(x, in, c0, c1) }
	case "rsqrt":
		return ynnRsqrt
	case "logistic":
		return func(x float32) float32 {
			e := ynnExp(x, -1, 1)
			return ynnOut(1 / ynnOut(e+1))
		}
	case "negate":
		return func(x float32) float32 { return ynnOut(0 - ynnIn(x)) }
	}
	return nil
}

func (o YNNOp) binary() func(a, b float32) float32 {
	switch o.Op {
	case "maximum":
		return func(a, b float32) float32 { return x86Max(ynnIn(a), ynnIn(b)) }
	case "minimum":
		return func(a, b float32) float32 { return x86Min(ynnIn(a), ynnIn(b)) }
	}
	return nil
}

func evalYNNElementwise(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	o, err := ParseYNNOp(in.BackendConfig)
	if err != nil {
		return Value{}, err
	}
	if o.F64 && in.Shape.Elem == dtype.F64 && in.Shape.IsArray() {
		return evalYNNElementwise64(in, o, args)
	}
	if in.Shape.Elem != dtype.F32 || !in.Shape.IsArray() {
		return Value{}, fmt.Errorf("result must be an f32 array, got %v", in.Shape.Elem)
	}
	ts := make([]*tensor.Tensor, len(args))
	for i, a := range args {
		if a.T == nil || a.T.Type != dtype.F32 || !slices.Equal(a.T.Dims, in.Shape.Dims) {
			return Value{}, fmt.Errorf("operand %d must be an f32 array of the result's shape", i)
		}
		ts[i] = a.T
	}
	out := tensor.New(dtype.F32, in.Shape.Dims)
	o32 := out.F32()
	n := len(o32)
	switch len(ts) {
	case 1:
		f := o.unary()
		if f == nil {
			return Value{}, fmt.Errorf("unknown unary op %q", o.Op)
		}
		x := ts[0].F32()
		parallelForWork(n, 16*n, func(lo, hi int) {
			i := lo + ynnVectorF32(o, x[lo:hi], o32[lo:hi])
			sseAfterAVX()
			for ; i < hi; i++ {
				o32[i] = f(x[i])
			}
		})
	case 2:
		f := o.binary()
		if f == nil {
			return Value{}, fmt.Errorf("unknown binary op %q", o.Op)
		}
		a, b := ts[0].F32(), ts[1].F32()
		parallelForWork(n, 2*n, func(lo, hi int) {
			i := lo + ynnBinaryVectorF32(o, a[lo:hi], b[lo:hi], o32[lo:hi])
			sseAfterAVX()
			for ; i < hi; i++ {
				o32[i] = f(a[i], b[i])
			}
		})
	default:
		return Value{}, fmt.Errorf("takes one or two operands, got %d", len(ts))
	}
	return ArrayValue(out), nil
}

// ynnBlock computes YNNTarget call in, op o (its parsed backend_config),
// on one block of a blocked group (b nil for a unary op): the same kernels
// as evalYNNElementwise.
func ynnBlock(in *hlo.Instruction, o YNNOp, a, b, dst []float32) {
	if o.Op == "" {
		_, err := ParseYNNOp(in.BackendConfig)
		panic(err) // the group only takes calls the golden driver wrote
	}
	if b == nil {
		f := o.unary()
		i := ynnVectorF32(o, a, dst)
		sseAfterAVX()
		for ; i < len(dst); i++ {
			dst[i] = f(a[i])
		}
		return
	}
	f := o.binary()
	i := ynnBinaryVectorF32(o, a, b, dst)
	sseAfterAVX()
	for ; i < len(dst); i++ {
		dst[i] = f(a[i], b[i])
	}
}
