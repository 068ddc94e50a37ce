package sim

import (
	"fmt"
	"math"
)

// binop is one ALU operator. f computes on float32 operands (the engines'
// arithmetic); bitwise operators (intOp) work on the exact integer values.
type binop struct {
	name  string
	f     func(a, b float32) float32
	i     func(a, b int64) int64
	intOp bool
	// identity for reductions (NaN: none, reduce starts from the first value)
	id float32
}

func b2f(b bool) float32 {
	if b {
		return 1
	}
	return 0
}

func f32(x float64) float32 { return float32(x) }

var binops = map[string]*binop{}

func init() {
	add := func(name string, id float32, f func(a, b float32) float32) {
		binops[name] = &binop{name: name, f: f, id: id}
	}
	nan := float32(math.NaN())
	add("add", 0, func(a, b float32) float32 { return a + b })
	add("subtract", nan, func(a, b float32) float32 { return a - b })
	add("multiply", 1, func(a, b float32) float32 { return a * b })
	add("divide", nan, func(a, b float32) float32 { return a / b })
	add("maximum", float32(math.Inf(-1)), fmax)
	add("max", float32(math.Inf(-1)), fmax)
	add("minimum", float32(math.Inf(1)), fmin)
	add("min", float32(math.Inf(1)), fmin)
	add("power", nan, func(a, b float32) float32 { return float32(math.Pow(float64(a), float64(b))) })
	binops["pow"] = binops["power"]
	add("fmod", nan, func(a, b float32) float32 { return float32(math.Mod(float64(a), float64(b))) })
	// mod: result has the divisor's sign (numpy's mod / Python's %).
	add("mod", nan, func(a, b float32) float32 {
		r := math.Mod(float64(a), float64(b))
		if r != 0 && (r < 0) != (b < 0) {
			r += float64(b)
		}
		return float32(r)
	})
	add("abs_diff", nan, func(a, b float32) float32 { return float32(math.Abs(float64(a - b))) })
	add("equal", nan, func(a, b float32) float32 { return b2f(a == b) })
	add("not_equal", nan, func(a, b float32) float32 { return b2f(a != b) })
	add("greater", nan, func(a, b float32) float32 { return b2f(a > b) })
	add("greater_equal", nan, func(a, b float32) float32 { return b2f(a >= b) })
	add("less", nan, func(a, b float32) float32 { return b2f(a < b) })
	add("less_equal", nan, func(a, b float32) float32 { return b2f(a <= b) })
	add("logical_and", 1, func(a, b float32) float32 { return b2f(a != 0 && b != 0) })
	add("logical_or", 0, func(a, b float32) float32 { return b2f(a != 0 || b != 0) })
	add("logical_xor", 0, func(a, b float32) float32 { return b2f((a != 0) != (b != 0)) })
	add("bypass", nan, func(a, b float32) float32 { return a })
	addI := func(name string, id float32, f func(a, b int64) int64) {
		binops[name] = &binop{name: name, i: f, intOp: true, id: id}
	}
	addI("bitwise_and", nan, func(a, b int64) int64 { return a & b })
	addI("bitwise_or", 0, func(a, b int64) int64 { return a | b })
	addI("bitwise_xor", 0, func(a, b int64) int64 { return a ^ b })
	addI("left_shift", nan, func(a, b int64) int64 {
		if b < 0 || b >= 64 {
			return 0
		}
		return int64(int32(a << b))
	})
	addI("right_shift_arithmetic", nan, func(a, b int64) int64 {
		if b < 0 || b >= 64 {
			b = 63
		}
		return int64(int32(a)) >> b
	})
	addI("right_shift_logical", nan, func(a, b int64) int64 {
		if b < 0 || b >= 32 {
			return 0
		}
		return int64(uint32(a) >> b)
	})
}

// fmax / fmin propagate NaN (as the engines' max/min on NaN inputs do in
// the reference numpy: np.maximum).
func fmax(a, b float32) float32 {
	if a != a || b != b {
		return float32(math.NaN())
	}
	if a > b || (a == b && !math.Signbit(float64(a))) {
		return a
	}
	return b
}

func fmin(a, b float32) float32 {
	if a != a || b != b {
		return float32(math.NaN())
	}
	if a < b || (a == b && math.Signbit(float64(a))) {
		return a
	}
	return b
}

func lookupBinop(name string) (*binop, error) {
	op, ok := binops[name]
	if !ok {
		return nil, fmt.Errorf("unknown ALU operator %q", name)
	}
	return op, nil
}

// scalar applies op to one pair (float64 holders of dtype values).
func (op *binop) scalar(a, b float64) float64 {
	if op.intOp {
		return float64(op.i(toInt(a), toInt(b)))
	}
	return float64(op.f(float32(a), float32(b)))
}

func toInt(x float64) int64 {
	if math.IsNaN(x) {
		return 0
	}
	return int64(x)
}

// vec computes out[i] = a[i] op b[i] (out may alias a or b). The common
// arithmetic operators run as plain loops.
func (op *binop) vec(out, a, b []float64) {
	n := len(out)
	a, b = a[:n], b[:n]
	switch op.name {
	case "add":
		for i := range out {
			out[i] = float64(float32(a[i]) + float32(b[i]))
		}
	case "subtract":
		for i := range out {
			out[i] = float64(float32(a[i]) - float32(b[i]))
		}
	case "multiply":
		for i := range out {
			out[i] = float64(float32(a[i]) * float32(b[i]))
		}
	case "divide":
		for i := range out {
			out[i] = float64(float32(a[i]) / float32(b[i]))
		}
	default:
		if op.intOp {
			for i := range out {
				out[i] = float64(op.i(toInt(a[i]), toInt(b[i])))
			}
			return
		}
		f := op.f
		for i := range out {
			out[i] = float64(f(float32(a[i]), float32(b[i])))
		}
	}
}

// vecScalar computes out[i] = a[i] op s (or s op a[i] when rev).
func (op *binop) vecScalar(out, a []float64, s float64, rev bool) {
	a = a[:len(out)]
	if op.intOp {
		si := toInt(s)
		for i := range out {
			if rev {
				out[i] = float64(op.i(si, toInt(a[i])))
			} else {
				out[i] = float64(op.i(toInt(a[i]), si))
			}
		}
		return
	}
	sf := float32(s)
	if !rev {
		switch op.name {
		case "add":
			for i := range out {
				out[i] = float64(float32(a[i]) + sf)
			}
			return
		case "subtract":
			for i := range out {
				out[i] = float64(float32(a[i]) - sf)
			}
			return
		case "multiply":
			for i := range out {
				out[i] = float64(float32(a[i]) * sf)
			}
			return
		}
	}
	f := op.f
	for i := range out {
		if rev {
			out[i] = float64(f(sf, float32(a[i])))
		} else {
			out[i] = float64(f(float32(a[i]), sf))
		}
	}
}

// reduceRow folds xs with op in order (float32 arithmetic), starting from
// the first element.
func (op *binop) reduceRow(xs []float64) float64 {
	if len(xs) == 0 {
		if op.id == op.id {
			return float64(op.id)
		}
		return 0
	}
	switch op.name {
	case "add":
		acc := float32(xs[0])
		for _, x := range xs[1:] {
			acc += float32(x)
		}
		return float64(acc)
	case "maximum", "max":
		acc := float32(xs[0])
		nan := acc != acc
		for _, x := range xs[1:] {
			y := float32(x)
			if y > acc {
				acc = y
			} else if y != y {
				nan = true
			}
		}
		if nan {
			return math.NaN()
		}
		return float64(acc)
	}
	acc := xs[0]
	if !op.intOp {
		acc = float64(float32(acc))
	}
	for _, x := range xs[1:] {
		acc = op.scalar(acc, x)
	}
	return acc
}

// unary functions of the activation engine (and nl's elementwise ops),
// evaluated in float64 on the float32 input and rounded once to float32:
// within an ulp of (mostly exactly) the correctly rounded result.
var unaries = map[string]func(x float64) float64{
	"identity":   func(x float64) float64 { return x },
	"copy":       func(x float64) float64 { return x },
	"bypass":     func(x float64) float64 { return x },
	"exp":        expF32,
	"log":        math.Log,
	"sqrt":       math.Sqrt,
	"rsqrt":      func(x float64) float64 { return 1 / math.Sqrt(x) },
	"reciprocal": func(x float64) float64 { return 1 / x },
	"abs":        math.Abs,
	"negative":   func(x float64) float64 { return -x },
	"sign": func(x float64) float64 {
		switch {
		case x > 0:
			return 1
		case x < 0:
			return -1
		}
		return x // 0, -0, NaN
	},
	"square":  func(x float64) float64 { return x * x },
	"sin":     math.Sin,
	"cos":     math.Cos,
	"tan":     math.Tan,
	"arctan":  math.Atan,
	"tanh":    math.Tanh,
	"sigmoid": sigmoid,
	"relu": func(x float64) float64 {
		if x > 0 {
			return x
		}
		if x != x {
			return x
		}
		return 0
	},
	"gelu": func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) },
	"gelu_apprx_tanh": func(x float64) float64 {
		return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
	},
	"gelu_apprx_sigmoid": func(x float64) float64 { return x * sigmoid(1.702*x) },
	"gelu_dx": func(x float64) float64 {
		return 0.5*(1+math.Erf(x/math.Sqrt2)) + x*math.Exp(-x*x/2)/math.Sqrt(2*math.Pi)
	},
	"silu":     func(x float64) float64 { return x * sigmoid(x) },
	"silu_dx":  func(x float64) float64 { s := sigmoid(x); return s * (1 + x*(1-s)) },
	"erf":      math.Erf,
	"erf_dx":   func(x float64) float64 { return 2 / math.Sqrt(math.Pi) * math.Exp(-x*x) },
	"softplus": softplus,
	"mish":     func(x float64) float64 { return x * math.Tanh(softplus(x)) },
	"ceil":     math.Ceil,
	"floor":    math.Floor,
	"trunc":    math.Trunc,
	"rint":     math.RoundToEven,
	"logical_not": func(x float64) float64 {
		if x == 0 {
			return 1
		}
		return 0
	},
}

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

func softplus(x float64) float64 {
	if x > 30 {
		return x
	}
	return math.Log1p(math.Exp(x))
}

// applyUnary computes out[i] = f(float32 in[i]) rounded to float32.
// "invert" (bitwise not) works on the integer value.
func applyUnary(name string, out, in []float64) error {
	in = in[:len(out)]
	if name == "invert" || name == "bitwise_not" {
		for i, x := range in {
			out[i] = float64(^toInt(x))
		}
		return nil
	}
	f, ok := unaries[name]
	if !ok {
		return fmt.Errorf("unknown function %q", name)
	}
	switch name {
	case "identity", "copy", "bypass":
		for i, x := range in {
			out[i] = float64(float32(x))
		}
		return nil
	case "exp":
		for i, x := range in {
			out[i] = float64(float32(expF32(float64(float32(x)))))
		}
		return nil
	}
	for i, x := range in {
		out[i] = float64(float32(f(float64(float32(x)))))
	}
	return nil
}
