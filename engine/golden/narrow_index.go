package golden

import (
	"math/bits"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// 64-bit index arithmetic narrowed to 32 bits.
//
// jax.random builds threefry's counters as u64 index arithmetic (JAX's
// iota_2x32_shape: broadcast iotas times strides, summed) and splits each
// value into its high and low 32-bit words, convert(x >> 32) and convert(x).
// Evaluated as written that is several full-size u64 arrays, computed op by
// op. The rewrite computes the same bits in 32-bit arithmetic, which the
// blocked fusion then runs with the rounds' other u32 work:
//
//   - the low word: reduction mod 2^32 commutes with +, -, * and the
//     bitwise ops, so convert(f(x, y)) = f32(convert(x), convert(y)) for
//     those ops, broadcasts, reshapes, transposes, slices, iotas (values below
//     2^31 here), constants (their low words) and shift-left by a constant
//     below 32 (by 32 or more the low word is 0); a convert of a 32-bit or
//     narrower integer to u64/s64 narrows to the convert of it (sign or
//     zero extension does not touch the low 32 bits).
//   - the high word of a value with a known bound below 2^c, shifted right
//     (logically) by a constant c >= 32, is 0. Bounds are computed for
//     non-negative index arithmetic only: iotas, non-negative constants,
//     movement, add and multiply (without u64 overflow), shift-right.
//
// Every rewritten value has exactly the bits the u64 evaluation gives; the
// u64 instructions left unread are pruned.

type narrowKey struct {
	x  *hlo.Instruction
	to dtype.Type
}

// narrowIndexConvert replaces a u64/s64 -> u32/s32 convert of index
// arithmetic by 32-bit arithmetic (nil when it does not apply).
func (r *xlaRewriter) narrowIndexConvert(in *hlo.Instruction) (*hlo.Instruction, error) {
	if in.Opcode != "convert" || len(in.Operands) != 1 || !in.Shape.IsArray() || len(in.Shape.DynamicDims) > 0 {
		return nil, nil
	}
	to := in.Shape.Elem
	x := in.Operands[0]
	if (to != dtype.U32 && to != dtype.S32) || !x.Shape.IsArray() || (x.Shape.Elem != dtype.U64 && x.Shape.Elem != dtype.S64) {
		return nil, nil
	}
	if x.Opcode == "shift-right-logical" && len(x.Operands) == 2 {
		if c, ok := r.constCount(x.Operands[1]); ok && c >= 32 {
			if b, ok := r.indexBound(x.Operands[0], 0); ok && (c >= 64 || b>>c == 0) {
				return r.zeros(to, in.Shape), nil
			}
		}
	}
	v, ok := r.narrowIndex(x, to, 0)
	if !ok {
		return nil, nil
	}
	return v, nil
}

// zeros emits a broadcast of a 0 of type t in shape s.
func (r *xlaRewriter) zeros(t dtype.Type, s hlo.Shape) *hlo.Instruction {
	z := r.constant(tensor.New(t, nil))
	b := r.emit("broadcast", hlo.Shape{Elem: t, Dims: s.Dims, Layout: s.Layout}, z)
	b.Dimensions = []int64{}
	return b
}

// constCount is the value of x when x is a u64/s64 constant (or a
// broadcast of a scalar one) whose elements are all the same non-negative
// value.
func (r *xlaRewriter) constCount(x *hlo.Instruction) (uint64, bool) {
	if x.Opcode == "broadcast" && len(x.Operands) == 1 {
		x = x.Operands[0]
	}
	if x.Opcode != "constant" || x.Literal == nil || x.Literal.Tensor == nil {
		return 0, false
	}
	v := x.Literal.Tensor
	if v.Type != dtype.U64 && v.Type != dtype.S64 {
		return 0, false
	}
	us := v.U64()
	if len(us) == 0 || (v.Type == dtype.S64 && int64(us[0]) < 0) {
		return 0, false
	}
	for _, u := range us {
		if u != us[0] {
			return 0, false
		}
	}
	return us[0], true
}

// narrowDepth bounds the recursion over index expressions.
const narrowDepth = 32

var narrowBinary = map[string]bool{"add": true, "subtract": true, "multiply": true, "and": true, "or": true, "xor": true}
var narrowMovement = map[string]bool{"broadcast": true, "reshape": true, "transpose": true, "slice": true}

// narrowIndex returns an instruction of type to holding the low 32 bits of
// x (a u64/s64 array), or false when x is not index arithmetic.
func (r *xlaRewriter) narrowIndex(x *hlo.Instruction, to dtype.Type, depth int) (*hlo.Instruction, bool) {
	if depth > narrowDepth || !x.Shape.IsArray() || len(x.Shape.DynamicDims) > 0 || len(x.Called) > 0 ||
		(x.Shape.Elem != dtype.U64 && x.Shape.Elem != dtype.S64) {
		return nil, false
	}
	key := narrowKey{x, to}
	if v, ok := r.narrowed[key]; ok {
		return v, true
	}
	shape := x.Shape
	shape.Elem = to
	clone := func(ops ...*hlo.Instruction) *hlo.Instruction {
		ni := *x
		ni.Name = r.newName(x.Name)
		ni.Shape = shape
		ni.Operands = ops
		ni.Parent = r.c
		ni.ControlPredecessors = nil
		r.out = append(r.out, &ni)
		return &ni
	}
	var v *hlo.Instruction
	switch {
	case x.Opcode == "constant":
		if x.Literal == nil || x.Literal.Tensor == nil {
			return nil, false
		}
		src := x.Literal.Tensor.U64()
		t := tensor.New(to, x.Literal.Tensor.Dims)
		dst := t.U32()
		for i, u := range src {
			dst[i] = uint32(u)
		}
		v = r.constant(t)
	case x.Opcode == "iota":
		for _, d := range x.Shape.Dims {
			if d > 1<<31 {
				return nil, false
			}
		}
		v = clone()
	case narrowMovement[x.Opcode] && len(x.Operands) == 1:
		a, ok := r.narrowIndex(x.Operands[0], to, depth+1)
		if !ok {
			return nil, false
		}
		v = clone(a)
	case x.Opcode == "shift-left" && len(x.Operands) == 2:
		c, ok := r.constCount(x.Operands[1])
		if !ok {
			return nil, false
		}
		if c >= 32 {
			v = r.zeros(to, shape)
			break
		}
		a, ok := r.narrowIndex(x.Operands[0], to, depth+1)
		if !ok {
			return nil, false
		}
		b, _ := r.narrowIndex(x.Operands[1], to, depth+1) // a constant: always narrows
		v = clone(a, b)
	case narrowBinary[x.Opcode] && len(x.Operands) == 2:
		a, ok := r.narrowIndex(x.Operands[0], to, depth+1)
		if !ok {
			return nil, false
		}
		b, ok := r.narrowIndex(x.Operands[1], to, depth+1)
		if !ok {
			return nil, false
		}
		v = clone(a, b)
	case (x.Opcode == "not" || x.Opcode == "negate") && len(x.Operands) == 1:
		a, ok := r.narrowIndex(x.Operands[0], to, depth+1)
		if !ok {
			return nil, false
		}
		v = clone(a)
	case x.Opcode == "convert" && len(x.Operands) == 1:
		y := x.Operands[0]
		if !y.Shape.IsArray() || !isNarrowInt(y.Shape.Elem) {
			return nil, false
		}
		if y.Shape.Elem == to {
			v = y
			break
		}
		v = clone(y)
	default:
		return nil, false
	}
	r.narrowed[key] = v
	return v, true
}

// isNarrowInt reports whether t is a signed or unsigned integer type of 32
// bits or fewer and at least 8 (not pred, not the sub-byte types).
func isNarrowInt(t dtype.Type) bool {
	return t != dtype.Pred && t.IsInteger() && t.Bits() >= 8 && t.Bits() <= 32
}

// indexBound is an upper bound of every element of x (non-negative index
// arithmetic only), or false when none is known.
func (r *xlaRewriter) indexBound(x *hlo.Instruction, depth int) (uint64, bool) {
	if depth > narrowDepth || !x.Shape.IsArray() || len(x.Called) > 0 {
		return 0, false
	}
	switch {
	case x.Opcode == "constant":
		if x.Literal == nil || x.Literal.Tensor == nil {
			return 0, false
		}
		v := x.Literal.Tensor
		var m uint64
		switch v.Type {
		case dtype.U64:
			for _, u := range v.U64() {
				m = max(m, u)
			}
		case dtype.S64:
			for _, s := range v.I64() {
				if s < 0 {
					return 0, false
				}
				m = max(m, uint64(s))
			}
		default:
			return 0, false
		}
		return m, true
	case x.Opcode == "iota":
		d := x.IotaDimension
		if d < 0 || int(d) >= len(x.Shape.Dims) || x.Shape.Dims[d] < 1 {
			return 0, false
		}
		return uint64(x.Shape.Dims[d] - 1), true
	case narrowMovement[x.Opcode] && len(x.Operands) == 1:
		return r.indexBound(x.Operands[0], depth+1)
	case (x.Opcode == "add" || x.Opcode == "multiply") && len(x.Operands) == 2:
		a, ok := r.indexBound(x.Operands[0], depth+1)
		if !ok {
			return 0, false
		}
		b, ok := r.indexBound(x.Operands[1], depth+1)
		if !ok {
			return 0, false
		}
		if x.Opcode == "add" {
			s, carry := bits.Add64(a, b, 0)
			if carry != 0 || (x.Shape.Elem == dtype.S64 && int64(s) < 0) {
				return 0, false
			}
			return s, true
		}
		hi, lo := bits.Mul64(a, b)
		if hi != 0 || (x.Shape.Elem == dtype.S64 && int64(lo) < 0) {
			return 0, false
		}
		return lo, true
	case x.Opcode == "shift-right-logical" && len(x.Operands) == 2:
		a, ok := r.indexBound(x.Operands[0], depth+1)
		c, ok2 := r.constCount(x.Operands[1])
		if !ok || !ok2 {
			return 0, false
		}
		if c >= 64 {
			return 0, true
		}
		return a >> c, true
	case x.Opcode == "convert" && len(x.Operands) == 1:
		y := x.Operands[0]
		if y.Shape.IsArray() && isNarrowInt(y.Shape.Elem) && y.Shape.Elem.IsUnsigned() {
			return uint64(1)<<y.Shape.Elem.Bits() - 1, true
		}
	}
	return 0, false
}
