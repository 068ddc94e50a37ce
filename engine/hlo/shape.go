package hlo

import (
	"strconv"
	"strings"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// opcodes is every HLO text opcode name XLA knows (hlo_opcode.h), with its
// operand count; -1 means variadic.
var opcodes = map[string]int{
	// unary
	"abs": 1, "acos": 1, "acosh": 1, "asin": 1, "asinh": 1, "atanh": 1, "cbrt": 1, "ceil": 1, "cosine": 1,
	"cosh": 1, "count-leading-zeros": 1, "erf": 1, "exponential": 1, "exponential-minus-one": 1, "floor": 1,
	"imag": 1, "real": 1, "is-finite": 1, "log": 1, "log-plus-one": 1, "logistic": 1, "negate": 1, "not": 1,
	"popcnt": 1, "round-nearest-afz": 1, "round-nearest-even": 1, "rsqrt": 1, "sign": 1, "sine": 1, "sinh": 1,
	"sqrt": 1, "tan": 1, "tanh": 1, "convert": 1, "bitcast-convert": 1, "reduce-precision": 1, "copy": 1,
	// binary
	"add": 2, "subtract": 2, "multiply": 2, "divide": 2, "remainder": 2, "power": 2, "atan2": 2, "maximum": 2,
	"minimum": 2, "and": 2, "or": 2, "xor": 2, "shift-left": 2, "shift-right-arithmetic": 2,
	"shift-right-logical": 2, "complex": 2, "mulhi": 2, "compare": 2, "stochastic-convert": 2,
	// ternary
	"clamp": 3, "select": 3,
	// shape and data movement
	"parameter": 0, "constant": 0, "iota": 0, "tuple": -1, "get-tuple-element": 1, "bitcast": 1, "broadcast": 1,
	"reshape": 1, "dynamic-reshape": -1, "transpose": 1, "reverse": 1, "slice": 1, "dynamic-slice": -1,
	"dynamic-update-slice": -1, "concatenate": -1, "pad": 2, "gather": 2, "scatter": -1,
	"get-dimension-size": 1, "set-dimension-size": 2,
	// reductions and linear algebra
	"reduce": -1, "reduce-window": -1, "select-and-scatter": 3, "map": -1, "sort": -1, "topk": 1, "dot": 2,
	"ragged-dot": 3, "scaled-dot": 4, "convolution": -1, "fft": 1, "cholesky": 1, "triangular-solve": 2,
	"batch-norm-training": 3, "batch-norm-inference": 5, "batch-norm-grad": 5,
	// control flow
	"call": -1, "conditional": -1, "fusion": -1, "custom-call": -1, "async-start": -1, "while": 1,
	"async-update": -1, "async-done": 1, "opt-barrier": 1, "domain": 1, "add-dependency": 2, "scan": -1,
	// random numbers
	"rng": -1, "rng-bit-generator": 1, "rng-get-and-update-state": 0,
	// collectives
	"all-reduce": -1, "all-reduce-start": -1, "all-reduce-done": 1, "all-gather": -1, "all-gather-start": -1,
	"all-gather-done": 1, "collective-permute": -1, "collective-permute-start": -1, "collective-permute-done": 1,
	"reduce-scatter": -1, "all-to-all": -1, "ragged-all-to-all": 6, "collective-broadcast": -1,
	"collective-reduce": -1, "replica-id": 0, "partition-id": 0, "shuffle": 1,
	// host I/O and async copies
	"infeed": 1, "outfeed": 2, "send": 2, "send-done": 1, "recv": 1, "recv-done": 1, "copy-start": 1,
	"copy-done": 1, "after-all": -1,
}

// KnownOpcode reports whether op is an HLO opcode, including the async
// wrapper forms "<op>-start", "<op>-update" and "<op>-done".
func KnownOpcode(op string) bool {
	if _, ok := opcodes[op]; ok {
		return true
	}
	for _, suf := range []string{"-start", "-update", "-done"} {
		if base, ok := strings.CutSuffix(op, suf); ok {
			if _, ok := opcodes[base]; ok {
				return true
			}
		}
	}
	return false
}

func tensorNumElements(dims []int64) int64 { return tensor.NumElements(dims) }

// String prints s the way HLO text does: f32[2,3]{1,0}, (s32[], f32[<=4]), token[].
func (s Shape) String() string {
	var b strings.Builder
	writeShape(&b, s)
	return b.String()
}

func writeShape(b *strings.Builder, s Shape) {
	if s.IsTuple() {
		b.WriteByte('(')
		for i, e := range s.Tuple {
			if i > 0 {
				b.WriteString(", ")
			}
			writeShape(b, e)
		}
		b.WriteByte(')')
		return
	}
	b.WriteString(s.Elem.String())
	b.WriteByte('[')
	for i, d := range s.Dims {
		if i > 0 {
			b.WriteByte(',')
		}
		switch {
		case d == UnboundedDim:
			b.WriteByte('?')
		case i < len(s.DynamicDims) && s.DynamicDims[i]:
			b.WriteString("<=")
			b.WriteString(strconv.FormatInt(d, 10))
		default:
			b.WriteString(strconv.FormatInt(d, 10))
		}
	}
	b.WriteByte(']')
	if l := s.Layout; l != nil {
		b.WriteByte('{')
		writeInts(b, l.MinorToMajor, ",")
		if len(l.Tiles) > 0 || l.ElementSizeBits != 0 || l.MemorySpace != 0 || len(l.Extra) > 0 {
			b.WriteByte(':')
			if len(l.Tiles) > 0 {
				b.WriteByte('T')
				for _, t := range l.Tiles {
					b.WriteByte('(')
					for i, d := range t.Dims {
						if i > 0 {
							b.WriteByte(',')
						}
						if d == TileCombineDim {
							b.WriteByte('*')
						} else {
							b.WriteString(strconv.FormatInt(d, 10))
						}
					}
					b.WriteByte(')')
				}
			}
			if l.ElementSizeBits != 0 {
				b.WriteString("E(" + strconv.FormatInt(l.ElementSizeBits, 10) + ")")
			}
			if l.MemorySpace != 0 {
				b.WriteString("S(" + strconv.FormatInt(l.MemorySpace, 10) + ")")
			}
			for _, e := range l.Extra {
				b.WriteString(e)
			}
		}
		b.WriteByte('}')
	}
}

func writeInts(b *strings.Builder, v []int64, sep string) {
	for i, x := range v {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(strconv.FormatInt(x, 10))
	}
}

// Compatible reports whether a and b are the same shape ignoring layouts:
// element types, dimensions, dynamic markers and tuple structure agree.
func Compatible(a, b Shape) bool {
	return sameStructure(a, b, func(a, b Shape) bool {
		if len(a.Dims) != len(b.Dims) {
			return false
		}
		for i := range a.Dims {
			if a.Dims[i] != b.Dims[i] || a.isDynamic(i) != b.isDynamic(i) {
				return false
			}
		}
		return true
	})
}

// sameStructure reports whether a and b have the same element type and
// tuple structure, and sameArray holds for each pair of array leaves.
func sameStructure(a, b Shape, sameArray func(a, b Shape) bool) bool {
	if a.Elem != b.Elem {
		return false
	}
	if !a.IsTuple() {
		return sameArray(a, b)
	}
	if len(a.Tuple) != len(b.Tuple) {
		return false
	}
	for i := range a.Tuple {
		if !sameStructure(a.Tuple[i], b.Tuple[i], sameArray) {
			return false
		}
	}
	return true
}

func (s Shape) isDynamic(i int) bool { return i < len(s.DynamicDims) && s.DynamicDims[i] }

// arrayShape builds a static array shape without layout.
func arrayShape(t dtype.Type, dims ...int64) Shape {
	return Shape{Elem: t, Dims: append([]int64{}, dims...)}
}

// tupleShape builds a tuple shape.
func tupleShape(elems ...Shape) Shape {
	return Shape{Elem: dtype.Tuple, Tuple: append([]Shape{}, elems...)}
}
