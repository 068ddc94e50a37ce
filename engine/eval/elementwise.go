package eval

// Elementwise unary and binary opcodes. Each op runs one typed loop over whole
// slices per compute class: f32 (every float narrower than f64 is decoded to
// f32, computed, and rounded once when stored, as XLA:CPU does), f64, complex,
// and integers in their storage type (sub-byte types in 8 bits, masked back).

import (
	"fmt"
	"unsafe"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

var unaryOpcodes = []string{
	"abs", "ceil", "floor", "cosine", "sine", "tan", "exponential", "exponential-minus-one",
	"log", "log-plus-one", "logistic", "negate", "not", "popcnt", "count-leading-zeros",
	"round-nearest-afz", "round-nearest-even", "rsqrt", "sqrt", "cbrt", "sign", "tanh",
	"sinh", "cosh", "acos", "asin", "atanh", "acosh", "asinh", "erf", "is-finite", "real", "imag",
}

var binaryOpcodes = []string{
	"add", "subtract", "multiply", "divide", "remainder", "power", "atan2", "maximum", "minimum",
	"and", "or", "xor", "shift-left", "shift-right-arithmetic", "shift-right-logical", "mulhi",
}

func init() {
	for _, op := range unaryOpcodes {
		Register(op, evalUnary)
	}
	for _, op := range binaryOpcodes {
		Register(op, evalBinary)
	}
	Register("complex", evalComplex)
}

// arrayArgs checks that an instruction got n array operands and returns them.
func arrayArgs(args []Value, n int) ([]*tensor.Tensor, error) {
	if len(args) != n {
		return nil, fmt.Errorf("expected %d operands, got %d", n, len(args))
	}
	out := make([]*tensor.Tensor, n)
	for i, a := range args {
		if a.T == nil {
			return nil, fmt.Errorf("operand %d is not an array", i)
		}
		out[i] = a.T
	}
	return out, nil
}

// sameShape reports an error unless every tensor has dims equal to ts[0]'s;
// HLO never broadcasts implicitly.
func sameShape(ts ...*tensor.Tensor) error {
	for _, t := range ts[1:] {
		if !equalDims(t.Dims, ts[0].Dims) {
			return fmt.Errorf("operand shapes differ: %v vs %v", ts[0], t)
		}
	}
	return nil
}

func equalDims(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// resultElem is the array element type of an instruction's result.
func resultElem(in *hlo.Instruction) (dtype.Type, error) {
	if !in.Shape.IsArray() {
		return 0, fmt.Errorf("result shape must be an array, got %v", in.Shape.Elem)
	}
	return in.Shape.Elem, nil
}

func unsupported(op string, t dtype.Type) error {
	return fmt.Errorf("%s is not defined for element type %v", op, t)
}

func evalUnary(_ *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	ts, err := arrayArgs(args, 1)
	if err != nil {
		return Value{}, err
	}
	out, err := unary(in.Opcode, ts[0])
	if err != nil {
		return Value{}, err
	}
	return ArrayValue(out), nil
}

// throughF16 reports whether XLA:CPU computes elementwise ops of float
// type t in f16 (float normalization widens 8- and 4-bit floats to f16,
// except f8e8m0fnu, whose range needs f32): results are rounded to f16 and
// then to t. For +, -, *, / and sqrt that equals one rounding; for exp it
// does not (f8e5m2 exp(-0.375) is 0.75, not 0.625).
func throughF16(t dtype.Type) bool {
	return t.IsFloat() && t.Size() == 1 && t != dtype.F8E8M0FNU
}

// unaryNarrowBlocked is unary's path for a float type narrower than f32 (op
// neither cbrt nor is-finite) a block at a time, with no full-size f32
// intermediate: each block is widened, its subnormals flushed unless keep, the
// op applied in f32 and flushed likewise, rounded through f16 for the 8-bit
// types, and stored in out's type, as the whole-array steps would do to it.
func unaryNarrowBlocked(op string, x *tensor.Tensor, keep bool, out *tensor.Tensor) {
	n, size := int(x.NumElements()), x.Type.Size()
	parallelForWork(n, 4*n, func(lo, hi int) {
		var in, res [fuseBlock]float32
		for s := lo; s < hi; s += fuseBlock {
			e := min(s+fuseBlock, hi)
			b, o := f32BlockOf(x, s, e, in[:], !keep), res[:e-s]
			unaryFloat(op, b, o)
			if !keep {
				ftz(o)
			}
			if throughF16(x.Type) {
				roundToF16(o)
			}
			storeF32Block(x.Type, o, out.Data[size*s:size*e])
		}
	})
}

// binaryNarrowBlocked is binaryFlushing's path for a float type narrower
// than f32 (op none of glibcSubnormalOps) a block at a time, as
// unaryNarrowBlocked is unary's.
func binaryNarrowBlocked(op string, a, b *tensor.Tensor, flush bool) *tensor.Tensor {
	out := tensor.New(a.Type, a.Dims)
	n, size := int(a.NumElements()), a.Type.Size()
	parallelForWork(n, 4*n, func(lo, hi int) {
		var ba, bb, res [fuseBlock]float32
		for s := lo; s < hi; s += fuseBlock {
			e := min(s+fuseBlock, hi)
			x, y, o := f32BlockOf(a, s, e, ba[:], flush), f32BlockOf(b, s, e, bb[:], flush), res[:e-s]
			binaryFloat(op, x, y, o)
			if flush {
				ftz(o)
			}
			if throughF16(a.Type) {
				roundToF16(o)
			}
			storeF32Block(a.Type, o, out.Data[size*s:size*e])
		}
	})
	return out
}

// storeF32Block stores f32 values in narrow float type t as newFromF32 does.
func storeF32Block(t dtype.Type, o []float32, dst []byte) {
	switch t {
	case dtype.BF16:
		roundBF16Bits(f32Bits(o))
		storeNarrow(t, o, dst)
	case dtype.F16:
		storeNarrow(t, o, dst)
	default:
		dtype.EncodeF32(t, o, dst)
	}
}

// roundToF16 rounds each value to the nearest f16 (as f32).
func roundToF16(o []float32) {
	for i, v := range o {
		o[i] = dtype.ToF32(dtype.F16, dtype.FromF32(dtype.F16, v))
	}
}

// glibcSubnormalOps are the binary ops XLA:CPU hands to glibc, whose
// subnormal operands take paths flushed ones would not (atan2_daz.go).
var glibcSubnormalOps = map[string]bool{"atan2": true, "power": true, "remainder": true}

// signKeepsFlushedZero: XLA:CPU's complex sign returns z itself when z
// compares equal to 0, which under DAZ includes every z whose parts are
// subnormal or zero, so those keep their subnormal bits.
func signKeepsFlushedZero[C complex64 | complex128](op string, raw, flushed []C) func(*tensor.Tensor, error) (*tensor.Tensor, error) {
	return func(out *tensor.Tensor, err error) (*tensor.Tensor, error) {
		if err != nil || op != "sign" {
			return out, err
		}
		o := rawView[C](out.Data)
		for i, v := range flushed {
			if v == 0 {
				o[i] = raw[i]
			}
		}
		return out, nil
	}
}

// unary applies a unary elementwise opcode. The result type follows XLA:
// pred for is-finite, the real type for abs/real/imag of complex.
func unary(op string, x *tensor.Tensor) (*tensor.Tensor, error) {
	n := int(x.NumElements())
	if signOnly[op] && (x.Type.IsFloat() || x.Type.IsComplex()) {
		return signBitOp(op, x)
	}
	switch classOf(x.Type) {
	case classF32:
		if x.Type != dtype.F32 && narrowRoundsInside(op, x.Type) {
			return unaryNarrowLogistic(x, op), nil
		}
		keep := keepsSubnormals(op)
		if x.Type != dtype.F32 && op != "cbrt" && op != "is-finite" {
			if !unaryFloat[float32](op, nil, nil) {
				return nil, unsupported(op, x.Type)
			}
			out := tensor.New(x.Type, x.Dims)
			unaryNarrowBlocked(op, x, keep, out)
			return out, nil
		}
		xs := asF32(x)
		raw := xs
		if !keep {
			xs = daz(xs)
		}
		if op == "is-finite" {
			return isFinite(xs, x.Dims), nil
		}
		if !unaryFloat(op, xs[:0], xs[:0]) {
			return nil, unsupported(op, x.Type)
		}
		out := tensor.New(x.Type, x.Dims)
		o := out.F32()
		if x.Type != dtype.F32 {
			o = make([]float32, n)
		}
		parallelFor(n, func(lo, hi int) {
			unaryFloat(op, xs[lo:hi], o[lo:hi])
			if !keep {
				ftz(o[lo:hi])
			}
		})
		if op == "cbrt" {
			fixCbrtSubnormals(raw, o)
		}
		if throughF16(x.Type) {
			roundToF16(o)
		}
		if x.Type != dtype.F32 {
			return newFromF32(x.Type, x.Dims, o), nil
		}
		return out, nil
	case classF64:
		keep := keepsSubnormals64(op)
		xs := x.F64()
		if !keep {
			xs = daz(xs)
		}
		if op == "is-finite" {
			return isFinite(xs, x.Dims), nil
		}
		if !unaryFloat(op, xs[:0], xs[:0]) {
			return nil, unsupported(op, x.Type)
		}
		out := tensor.New(x.Type, x.Dims)
		o := out.F64()
		parallelFor(n, func(lo, hi int) {
			unaryFloat(op, xs[lo:hi], o[lo:hi])
			if !keep {
				ftz(o[lo:hi])
			}
		})
		return out, nil
	case classC64:
		d := dazComplex(x.C64())
		return signKeepsFlushedZero(op, x.C64(), d)(unaryComplex(op, x, d, dtype.F32))
	case classC128:
		d := dazComplex(x.C128())
		return signKeepsFlushedZero(op, x.C128(), d)(unaryComplex(op, x, d, dtype.F64))
	}
	switch x.Type {
	case dtype.S8, dtype.S4, dtype.S2, dtype.S1:
		return unaryIntT[int8](op, x)
	case dtype.S16:
		return unaryIntT[int16](op, x)
	case dtype.S32:
		return unaryIntT[int32](op, x)
	case dtype.S64:
		return unaryIntT[int64](op, x)
	case dtype.U8, dtype.U4, dtype.U2, dtype.U1, dtype.Pred:
		return unaryIntT[uint8](op, x)
	case dtype.U16:
		return unaryIntT[uint16](op, x)
	case dtype.U32:
		return unaryIntT[uint32](op, x)
	case dtype.U64:
		return unaryIntT[uint64](op, x)
	}
	return nil, unsupported(op, x.Type)
}

func isFinite[F float32 | float64](xs []F, dims []int64) *tensor.Tensor {
	out := tensor.New(dtype.Pred, dims)
	for i, v := range xs {
		if v-v == 0 { // false for NaN and ±Inf
			out.Data[i] = 1
		}
	}
	return out
}

func unaryIntT[T integer](op string, x *tensor.Tensor) (*tensor.Tensor, error) {
	bits := intBits(x.Type)
	xs := intView[T](x)
	if !unaryInt(op, xs[:0], xs[:0], bits) {
		return nil, unsupported(op, x.Type)
	}
	out := tensor.New(x.Type, x.Dims)
	o := rawView[T](out.Data)
	if bits == 32 {
		ux, uo := rawView[uint32](x.Data), rawView[uint32](out.Data)
		parallelFor(len(o), func(lo, hi int) { unaryInt32(op, isSigned[T](), ux[lo:hi], uo[lo:hi]) })
		return out, nil
	}
	parallelFor(len(o), func(lo, hi int) { unaryInt(op, xs[lo:hi], o[lo:hi], bits) })
	maskStorage(out)
	return out, nil
}

// unaryInt32 is unaryInt at width 32 on the bits of s32 (signed) or u32
// elements: whole vectors where unaryInt32Vector has the op, unaryInt's
// loop for the rest.
func unaryInt32(op string, signed bool, x, o []uint32) {
	k := unaryInt32Vector(op, signed, x, o)
	x, o = x[k:], o[k:]
	if signed {
		unaryInt(op, asSigned32(x), asSigned32(o), 32)
	} else {
		unaryInt(op, x, o, 32)
	}
}

func unaryComplex[C complex64 | complex128](op string, x *tensor.Tensor, xs []C, realType dtype.Type) (*tensor.Tensor, error) {
	switch op {
	case "abs", "real", "imag":
		out := tensor.New(realType, x.Dims)
		if realType == dtype.F32 {
			o := out.F32()
			parallelForWork(len(o), 8*len(o), func(lo, hi int) {
				complexPart(op, xs[lo:hi], o[lo:hi])
				if op == "abs" {
					ftz(o[lo:hi])
				}
			})
		} else {
			o := out.F64()
			parallelForWork(len(o), 8*len(o), func(lo, hi int) {
				complexPart(op, xs[lo:hi], o[lo:hi])
				if op == "abs" {
					ftz(o[lo:hi])
				}
			})
		}
		return out, nil
	}
	if !unaryCplx(op, xs[:0], xs[:0]) {
		return nil, unsupported(op, x.Type)
	}
	out := tensor.New(x.Type, x.Dims)
	o := rawView[C](out.Data)
	parallelFor(len(o), func(lo, hi int) {
		unaryCplx(op, xs[lo:hi], o[lo:hi])
		if !signOnly[op] {
			ftzComplex(o[lo:hi])
		}
	})
	return out, nil
}

func evalBinary(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	ts, err := arrayArgs(args, 2)
	if err != nil {
		return Value{}, err
	}
	if in.Opcode == "multiply" && ts[0].Type == dtype.C64 {
		if out := multiplyC64Fast(ev, ts[0], ts[1]); out != nil {
			return ArrayValue(out), nil // complex_fast.go
		}
	}
	out, err := binary(in.Opcode, ts[0], ts[1])
	if err != nil {
		return Value{}, err
	}
	return ArrayValue(out), nil
}

// bf16NativeMinMax reports whether op on type t is a bf16 maximum or
// minimum, which the newest XLA:CPU computes without flushing subnormals
// (max(1e-40, 0) is 1e-40). XLA:CPU of JAX 0.10 upcast them to f32 first and
// flushed; the golden driver's xla_compat="0.10" rewrites them that way
// (docs/xla-cpu-semantics.md).
func bf16NativeMinMax(op string, t dtype.Type) bool {
	return t == dtype.BF16 && (op == "maximum" || op == "minimum")
}

// binary applies a binary elementwise opcode to equal-shaped operands.
func binary(op string, a, b *tensor.Tensor) (*tensor.Tensor, error) {
	return binaryFlushing(op, a, b, !bf16NativeMinMax(op, a.Type))
}

// binaryFlushing is binary with the choice of flushing f32-class subnormal
// inputs and results made by the caller.
func binaryFlushing(op string, a, b *tensor.Tensor, flush bool) (*tensor.Tensor, error) {
	if err := sameShape(a, b); err != nil {
		return nil, err
	}
	if a.Type != b.Type {
		return nil, fmt.Errorf("operand types differ: %v vs %v", a.Type, b.Type)
	}
	n := int(a.NumElements())
	switch classOf(a.Type) {
	case classF32:
		if a.Type != dtype.F32 && !glibcSubnormalOps[op] {
			if !binaryFloat[float32](op, nil, nil, nil) {
				return nil, unsupported(op, a.Type)
			}
			return binaryNarrowBlocked(op, a, b, flush), nil
		}
		as, bs := asF32(a), asF32(b)
		rawA, rawB := as, bs
		if flush {
			as, bs = daz(as), daz(bs)
		}
		if !binaryFloat(op, as[:0], bs[:0], as[:0]) {
			return nil, unsupported(op, a.Type)
		}
		out := tensor.New(a.Type, a.Dims)
		o := out.F32()
		if a.Type != dtype.F32 {
			o = make([]float32, n)
		}
		if op == "remainder" && flush {
			// fixSubnormalPaths sets every remainder from the raw operands
			// (glibc's fmod, exact), so the flushed operands' is not made.
			parallelForWork(n, 8*n, func(lo, hi int) { fixSubnormalPaths(op, rawA[lo:hi], rawB[lo:hi], o[lo:hi]) })
		} else {
			parallelFor(n, func(lo, hi int) {
				binaryFloat(op, as[lo:hi], bs[lo:hi], o[lo:hi])
				if flush {
					ftz(o[lo:hi])
				}
			})
			// glibc's subnormal paths apply only where an operand is subnormal.
			if glibcSubnormalOps[op] && flush && (anySubnormal(rawA) || anySubnormal(rawB)) {
				parallelFor(n, func(lo, hi int) { fixSubnormalPaths(op, rawA[lo:hi], rawB[lo:hi], o[lo:hi]) })
			}
		}
		if throughF16(a.Type) {
			roundToF16(o)
		}
		if a.Type != dtype.F32 {
			return newFromF32(a.Type, a.Dims, o), nil
		}
		return out, nil
	case classF64:
		if op == "remainder" && flush {
			// As for f32: every remainder comes from the raw operands.
			out := tensor.New(a.Type, a.Dims)
			ra, rb, o := a.F64(), b.F64(), out.F64()
			parallelForWork(n, 8*n, func(lo, hi int) { fixSubnormalPaths(op, ra[lo:hi], rb[lo:hi], o[lo:hi]) })
			return out, nil
		}
		out, err := binaryT(op, a, daz(a.F64()), daz(b.F64()), binaryFloat[float64], ftz[float64])
		if err == nil && glibcSubnormalOps[op] && flush && (anySubnormal(a.F64()) || anySubnormal(b.F64())) {
			ra, rb, o := a.F64(), b.F64(), out.F64()
			parallelFor(n, func(lo, hi int) { fixSubnormalPaths(op, ra[lo:hi], rb[lo:hi], o[lo:hi]) })
		}
		return out, err
	case classC64:
		return binaryT(op, a, dazComplex(a.C64()), dazComplex(b.C64()), binaryCplx[complex64], ftzComplex[complex64])
	case classC128:
		return binaryT(op, a, dazComplex(a.C128()), dazComplex(b.C128()), binaryCplx[complex128], ftzComplex[complex128])
	}
	switch a.Type {
	case dtype.S8, dtype.S4, dtype.S2, dtype.S1:
		return binaryIntT[int8](op, a, b)
	case dtype.S16:
		return binaryIntT[int16](op, a, b)
	case dtype.S32:
		return binaryIntT[int32](op, a, b)
	case dtype.S64:
		return binaryIntT[int64](op, a, b)
	case dtype.U8, dtype.U4, dtype.U2, dtype.U1, dtype.Pred:
		return binaryIntT[uint8](op, a, b)
	case dtype.U16:
		return binaryIntT[uint16](op, a, b)
	case dtype.U32:
		return binaryIntT[uint32](op, a, b)
	case dtype.U64:
		return binaryIntT[uint64](op, a, b)
	}
	return nil, unsupported(op, a.Type)
}

// binaryT runs a same-type binary kernel whose storage type E aliases the
// tensors' bytes directly (f64, c64, c128).
func binaryT[E any](op string, a *tensor.Tensor, as, bs []E, kernel func(op string, a, b, o []E) bool, flush func([]E)) (*tensor.Tensor, error) {
	if !kernel(op, as[:0], bs[:0], as[:0]) {
		return nil, unsupported(op, a.Type)
	}
	out := tensor.New(a.Type, a.Dims)
	o := rawView[E](out.Data)
	parallelFor(len(o), func(lo, hi int) { kernel(op, as[lo:hi], bs[lo:hi], o[lo:hi]); flush(o[lo:hi]) })
	return out, nil
}

func binaryIntT[T integer](op string, a, b *tensor.Tensor) (*tensor.Tensor, error) {
	bits := intBits(a.Type)
	as, bs := intView[T](a), intView[T](b)
	if !binaryInt(op, as[:0], bs[:0], as[:0], bits) {
		return nil, unsupported(op, a.Type)
	}
	out := tensor.New(a.Type, a.Dims)
	o := rawView[T](out.Data)
	if bits == 32 {
		ua, ub, uo := rawView[uint32](a.Data), rawView[uint32](b.Data), rawView[uint32](out.Data)
		parallelFor(len(o), func(lo, hi int) { binaryInt32(op, isSigned[T](), ua[lo:hi], ub[lo:hi], uo[lo:hi]) })
		return out, nil
	}
	if (op == "divide" || op == "remainder") && (bits == 8 || bits == 16) && binaryLanes > 0 {
		parallelFor(len(o), func(lo, hi int) { divNarrow(op, as[lo:hi], bs[lo:hi], o[lo:hi]) })
		return out, nil
	}
	parallelFor(len(o), func(lo, hi int) { binaryInt(op, as[lo:hi], bs[lo:hi], o[lo:hi], bits) })
	maskStorage(out)
	return out, nil
}

// divNarrow is binaryInt's divide or remainder for 8- and 16-bit integers,
// computed at width 32 (binaryInt32's vector lanes) on the sign- or
// zero-extended operands and truncated back: every quotient and remainder
// of the narrow type is that of its extension, truncated (INT8_MIN/-1 = 128
// truncates to INT8_MIN as the narrow division wraps; x/0 = all ones and
// x%0 = x truncate to the narrow type's all ones and x).
func divNarrow[T integer](op string, a, b, o []T) {
	var xa, xb, xo [1024]uint32
	signed := isSigned[T]()
	for lo := 0; lo < len(o); lo += len(xo) {
		n := min(len(xo), len(o)-lo)
		for i := range n {
			xa[i], xb[i] = uint32(int64(a[lo+i])), uint32(int64(b[lo+i]))
		}
		binaryInt32(op, signed, xa[:n], xb[:n], xo[:n])
		for i := range n {
			o[lo+i] = T(xo[i])
		}
	}
}

// binaryInt32 is binaryInt at width 32 on the bits of s32 (signed) or u32
// elements: whole vectors where binaryInt32Vector has the op, binaryInt's
// loop for the rest.
func binaryInt32(op string, signed bool, a, b, o []uint32) {
	k := binaryInt32Vector(op, a, b, o)
	if k == 0 {
		k = divInt32Vector(op, signed, a, b, o)
	}
	a, b, o = a[k:], b[k:], o[k:]
	if signed {
		binaryInt(op, asSigned32(a), asSigned32(b), asSigned32(o), 32)
	} else {
		binaryInt(op, a, b, o, 32)
	}
}

// asSigned32 views u32 bits as s32.
func asSigned32(xs []uint32) []int32 {
	if len(xs) == 0 {
		return nil
	}
	return unsafe.Slice((*int32)(unsafe.Pointer(&xs[0])), len(xs))
}

// evalComplex builds c64/c128 from real and imaginary parts.
func evalComplex(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	ts, err := arrayArgs(args, 2)
	if err != nil {
		return Value{}, err
	}
	re, im := ts[0], ts[1]
	if err := sameShape(re, im); err != nil {
		return Value{}, err
	}
	if out := complexF32Fast(ev, re, im); out != nil {
		return ArrayValue(out), nil // complex_fast.go
	}
	switch {
	case re.Type == dtype.F32 && im.Type == dtype.F32:
		out := tensor.New(dtype.C64, re.Dims)
		o, r, i := out.C64(), re.F32(), im.F32()
		for k := range o {
			o[k] = complex(r[k], i[k])
		}
		return ArrayValue(out), nil
	case re.Type == dtype.F64 && im.Type == dtype.F64:
		out := tensor.New(dtype.C128, re.Dims)
		o, r, i := out.C128(), re.F64(), im.F64()
		for k := range o {
			o[k] = complex(r[k], i[k])
		}
		return ArrayValue(out), nil
	}
	return Value{}, fmt.Errorf("complex needs two f32 or two f64 operands, got %v and %v", re.Type, im.Type)
}

// signOnly are the float ops XLA:CPU does with bit operations, so subnormals
// pass through them unflushed.
var signOnly = map[string]bool{"abs": true, "negate": true, "real": true, "imag": true}

// signBitOp computes abs/negate/real/imag without flushing subnormals
// (except complex abs, which is real math).
func signBitOp(op string, x *tensor.Tensor) (*tensor.Tensor, error) {
	if x.Type.IsComplex() && op == "abs" {
		if x.Type == dtype.C64 {
			return unaryComplex(op, x, dazComplex(x.C64()), dtype.F32)
		}
		return unaryComplex(op, x, dazComplex(x.C128()), dtype.F64)
	}
	if x.Type.IsComplex() {
		if x.Type == dtype.C64 {
			return unaryComplex(op, x, x.C64(), dtype.F32)
		}
		return unaryComplex(op, x, x.C128(), dtype.F64)
	}
	switch op {
	case "real":
		return x, nil
	case "imag":
		return tensor.New(x.Type, x.Dims), nil
	}
	// Flip or clear the sign bit of the encoding (every real float format
	// here keeps its sign in the top bit of its storage, except the
	// unsigned e8m0 and the fnuz types whose 0x80 is NaN).
	switch x.Type {
	case dtype.F32:
		return signBitWords[uint32](op, x), nil
	case dtype.F64:
		return signBitWords[uint64](op, x), nil
	}
	size, bits := x.Type.Size(), x.Type.Bits()
	top := byte(1) << uint((bits-1)%8)
	noSign := x.Type == dtype.F8E8M0FNU
	fnuz := x.Type == dtype.F8E4M3FNUZ || x.Type == dtype.F8E5M2FNUZ || x.Type == dtype.F8E4M3B11FNUZ
	if !noSign && !fnuz && 8%size == 0 {
		// The same bit in every element: eight bytes at a time.
		var mask uint64
		for i := size - 1; i < 8; i += size {
			mask |= uint64(top) << (8 * i)
		}
		return signBitMasked(op, x, mask), nil
	}
	out := x.Clone()
	for i := 0; i < len(out.Data); i += size {
		b := &out.Data[i+size-1]
		switch {
		case noSign:
		case fnuz && out.Data[i] == 0x80: // NaN stays NaN
		case fnuz && out.Data[i] == 0 && op == "negate": // no -0
		case op == "abs":
			*b &^= top
		default:
			*b ^= top
		}
	}
	return out, nil
}

// signBitWords is signBitOp for f32 and f64, a word at a time.
// signBitMasked clears (abs) or flips (negate) the bits of mask, a pattern
// of eight storage bytes, in every eight bytes of x's storage (the last few
// bytes by the same pattern's bytes).
func signBitMasked(op string, x *tensor.Tensor, mask uint64) *tensor.Tensor {
	out := tensor.New(x.Type, x.Dims)
	n := len(x.Data) / 8 * 8
	src, dst := rawView[uint64](x.Data[:n]), rawView[uint64](out.Data[:n])
	abs := op == "abs"
	parallelFor(len(dst), func(lo, hi int) {
		if abs {
			for i := lo; i < hi; i++ {
				dst[i] = src[i] &^ mask
			}
			return
		}
		for i := lo; i < hi; i++ {
			dst[i] = src[i] ^ mask
		}
	})
	for i := n; i < len(x.Data); i++ {
		m := byte(mask >> (8 * (i % 8)))
		if abs {
			out.Data[i] = x.Data[i] &^ m
		} else {
			out.Data[i] = x.Data[i] ^ m
		}
	}
	return out
}

func signBitWords[W uint32 | uint64](op string, x *tensor.Tensor) *tensor.Tensor {
	out := tensor.New(x.Type, x.Dims)
	src, dst := rawView[W](x.Data), rawView[W](out.Data)
	sign := W(1) << (8*unsafe.Sizeof(W(0)) - 1)
	if op == "abs" {
		parallelFor(len(dst), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				dst[i] = src[i] &^ sign
			}
		})
	} else {
		parallelFor(len(dst), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				dst[i] = src[i] ^ sign
			}
		})
	}
	return out
}
