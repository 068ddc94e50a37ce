package eval

// convert, bitcast-convert, reduce-precision and stochastic-convert.
//
// convert rounds like XLA:CPU (checked against jax.jit on CPU): f32 and
// narrower floats round once, directly, into any narrower float; f64 rounds
// into bf16 through f32 (twice), into f16 through f32 too except on hosts with
// AVX512-FP16 (which convert f64 to f16 in one instruction, f64ToF16Once), and
// into f8/f4 types directly; floats
// into integers truncate, saturate, and send NaN to 0; integers wrap.

import (
	"fmt"
	"math"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
	"goldtrace/internal/hostcpu"
)

func init() {
	Register("convert", evalConvert)
	Register("bitcast-convert", evalBitcastConvert)
	Register("reduce-precision", evalReducePrecision)
	Register("stochastic-convert", evalStochasticConvert)
}

func evalConvert(_ *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	ts, err := arrayArgs(args, 1)
	if err != nil {
		return Value{}, err
	}
	to, err := resultElem(in)
	if err != nil {
		return Value{}, err
	}
	out, err := convert(ts[0], to)
	if err != nil {
		return Value{}, err
	}
	return ArrayValue(out), nil
}

// convert converts x to element type to.
func convert(x *tensor.Tensor, to dtype.Type) (*tensor.Tensor, error) {
	if !to.IsArray() {
		return nil, fmt.Errorf("cannot convert to %v", to)
	}
	if x.Type == to {
		return x, nil
	}
	out := tensor.New(to, x.Dims)
	if isNarrowElem(x.Type) && to == dtype.F32 {
		// Exact (bit arithmetic in XLA:CPU, subnormals kept): widened
		// straight into the result, on all cores.
		widenNarrowInto(x, out.F32())
		return out, nil
	}
	switch classOf(x.Type) {
	case classF32:
		f := asF32(x)
		if to == dtype.Pred {
			if x.Type == dtype.F32 {
				f = daz(f)
			}
			for i, v := range f {
				out.Data[i] = b2u(v != 0)
			}
			return out, nil
		}
		if (x.Type == dtype.F32 && (to == dtype.F64 || to.IsInteger())) || (x.Type == dtype.BF16 && to == dtype.F64) {
			// A real f32 instruction (cvtss2sd, cvttss2si) reads it and sees
			// subnormals as 0. Narrowing to bf16/f8/f4 is bit arithmetic in
			// XLA:CPU, so f32 subnormals survive where the target can hold them
			// (bf16, f8e8m0fnu's 2^-127).
			f = daz(f)
		}
		if x.Type == dtype.F4E2M1FN && to.IsInteger() {
			// XLA:CPU's float->int convert saturates values equal to the
			// type's "infinity", and f4e2m1fn's is its max, ±6 (checked with jax).
			f = append([]float32(nil), f...)
			for i, v := range f {
				if v == 6 || v == -6 {
					f[i] = float32(math.Inf(int(v)))
				}
			}
		}
		storeF32(out, f)
	case classF64:
		f := x.F64()
		if !to.IsComplex() {
			f = daz(f)
		}
		storeF64(out, f)
	case classC64, classC128:
		// complex -> real keeps the real part, as XLA's convert does.
		var re, im []float64
		if x.Type == dtype.C64 {
			re, im = splitComplex(dazComplex(x.C64()))
		} else {
			re, im = splitComplex(dazComplex(x.C128()))
		}
		if to.IsComplex() {
			storeComplex(out, re, im)
		} else {
			storeF64(out, re)
		}
	case classSigned, classPred:
		if convertIntFast(x, out) {
			return out, nil
		}
		storeInts(out, asI64(x), newFromI64)
	case classUnsigned:
		if convertIntFast(x, out) {
			return out, nil
		}
		storeInts(out, asU64(x), newFromU64)
	default:
		return nil, fmt.Errorf("cannot convert %v to %v", x.Type, to)
	}
	switch to {
	case dtype.F4E2M1FN:
		// f4e2m1fn has no NaN; XLA:CPU turns every NaN into -0.
		markNaN(x, out, 0x08)
	case dtype.F32:
		if x.Type == dtype.F64 {
			ftz(out.F32()) // f64 narrowing writes through the FTZ unit
		}
	}
	return out, nil
}

func splitComplex[C cplx](xs []C) (re, im []float64) {
	re, im = make([]float64, len(xs)), make([]float64, len(xs))
	for i, v := range xs {
		re[i], im[i] = real(complex128(v)), imag(complex128(v))
	}
	return re, im
}

// storeInts writes integers widened to 64 bits into out: integer and pred
// targets wrap (wrap builds the wrapped tensor), float and complex ones round
// the exact value once, in f64 for f64 and complex targets, else in f32.
func storeInts[I int64 | uint64](out *tensor.Tensor, vals []I, wrap func(dtype.Type, []int64, []I) *tensor.Tensor) {
	switch classOf(out.Type) {
	case classSigned, classUnsigned, classPred:
		copy(out.Data, wrap(out.Type, out.Dims, vals).Data)
	case classF64, classC128, classC64:
		f := make([]float64, len(vals))
		for i, v := range vals {
			f[i] = float64(v)
		}
		storeF64(out, f)
	default:
		f := make([]float32, len(vals))
		for i, v := range vals {
			f[i] = float32(v)
		}
		storeF32(out, f)
	}
}

// storeF32 writes exact-in-f32 values into out's type (any type), rounding once.
func storeF32(out *tensor.Tensor, f []float32) {
	if !storeWide(out, f) && !storeF32Int(out, f) {
		encodeF32(out.Type, f, out.Data)
	}
}

// storeF32Int is dtype.FromF32's conversion to a whole-byte integer type
// (NaN to 0, truncation toward zero, saturation at the type's range) as a
// typed loop per type, without the per-element type dispatch.
func storeF32Int(out *tensor.Tensor, f []float32) bool {
	switch out.Type {
	case dtype.S8:
		f32ToSigned(f, out.I8(), 8)
	case dtype.S16:
		f32ToSigned(f, out.I16(), 16)
	case dtype.S32:
		f32ToSigned(f, out.I32(), 32)
	case dtype.S64:
		f32ToSigned(f, out.I64(), 64)
	case dtype.U8:
		f32ToUnsigned(f, out.U8(), 8)
	case dtype.U16:
		f32ToUnsigned(f, out.U16(), 16)
	case dtype.U32:
		f32ToUnsigned(f, out.U32(), 32)
	case dtype.U64:
		f32ToUnsigned(f, out.U64(), 64)
	default:
		return false
	}
	return true
}

func f32ToSigned[T int8 | int16 | int32 | int64](f []float32, o []T, bits int) {
	lim := math.Ldexp(1, bits-1)
	hi, lo := T(int64(1)<<(bits-1)-1), T(int64(-1)<<(bits-1))
	o = o[:len(f)]
	parallelFor(len(f), func(a, b int) {
		switch o := any(o).(type) {
		case []int8:
			a += f32ToSmallIntVector(f[a:b], o[a:b], -128, 127)
		case []int16:
			a += f32ToSmallIntVector(f[a:b], o[a:b], -32768, 32767)
		case []int32:
			a += f32ToInt32Vector(f[a:b], o[a:b])
		}
		for i, v := range f[a:b] {
			x := math.Trunc(float64(v))
			switch {
			case x != x:
				o[a+i] = 0
			case x >= lim:
				o[a+i] = hi
			case x < -lim:
				o[a+i] = lo
			default:
				o[a+i] = T(int64(x))
			}
		}
	})
}

func f32ToUnsigned[T uint8 | uint16 | uint32 | uint64](f []float32, o []T, bits int) {
	lim := math.Ldexp(1, bits)
	top := T(^uint64(0) >> (64 - bits))
	o = o[:len(f)]
	parallelFor(len(f), func(a, b int) {
		switch o := any(o).(type) {
		case []uint8:
			a += f32ToSmallIntVector(f[a:b], o[a:b], 0, 255)
		case []uint16:
			a += f32ToSmallIntVector(f[a:b], o[a:b], 0, 65535)
		}
		for i, v := range f[a:b] {
			x := math.Trunc(float64(v))
			switch {
			case x != x, x <= 0:
				o[a+i] = 0
			case x >= lim:
				o[a+i] = top
			default:
				o[a+i] = T(uint64(x))
			}
		}
	})
}

// f64ToF16Once is whether XLA:CPU rounds f64 to f16 once: on hosts with
// AVX512-FP16 LLVM emits VCVTSD2SH/VCVTPD2PH; elsewhere it goes through f32
// (measured on one host: 1+2^-11+2^-40 gives 0x3c01 natively, 0x3c00 under
// --xla_cpu_max_isa=AVX2). A variable, so that tests can check both.
var f64ToF16Once = hostcpu.X86.AVX512FP16

// storeF64 writes f64 values into out's type (any type) with XLA:CPU's rounding.
func storeF64(out *tensor.Tensor, f []float64) {
	if storeWide(out, f) {
		return
	}
	switch out.Type {
	case dtype.F16, dtype.F32, dtype.BF16:
		if out.Type == dtype.F16 && f64ToF16Once {
			dtype.EncodeF64(out.Type, f, out.Data)
			return
		}
		// XLA:CPU narrows f64 to f16/bf16 through f32 (two roundings), and
		// the f32 step flushes: 1.5*2^-133 (a bf16 subnormal, an f32 one
		// too) becomes bf16 0.
		f32 := make([]float32, len(f))
		for i, v := range f {
			f32[i] = float32(v)
		}
		ftz(f32)
		dtype.EncodeF32(out.Type, f32, out.Data)
	default:
		dtype.EncodeF64(out.Type, f, out.Data)
	}
}

// storeWide writes real values into out when it is c64 (real parts rounded
// to f32), c128 or f64, and reports whether it did.
func storeWide[F float32 | float64](out *tensor.Tensor, f []F) bool {
	switch out.Type {
	case dtype.C64:
		o := out.C64()
		for i, v := range f {
			o[i] = complex(float32(v), 0)
		}
	case dtype.C128:
		o := out.C128()
		for i, v := range f {
			o[i] = complex(float64(v), 0)
		}
	case dtype.F64:
		o := out.F64()
		for i, v := range f {
			o[i] = float64(v)
		}
	default:
		return false
	}
	return true
}

func storeComplex(out *tensor.Tensor, re, im []float64) {
	if out.Type == dtype.C64 {
		o := out.C64()
		for i := range o {
			o[i] = complex(float32(re[i]), float32(im[i]))
		}
		return
	}
	o := out.C128()
	for i := range o {
		o[i] = complex(re[i], im[i])
	}
}

// evalBitcastConvert reinterprets element bits. A narrower result gains a
// minor dimension of size in/out bits; a wider one consumes it. Elements are
// little-endian, so the minor index 0 holds the lowest bits.
func evalBitcastConvert(_ *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	ts, err := arrayArgs(args, 1)
	if err != nil {
		return Value{}, err
	}
	x := ts[0]
	to, err := resultElem(in)
	if err != nil {
		return Value{}, err
	}
	fromBits, toBits := x.Type.Bits(), to.Bits()
	dims := append([]int64{}, x.Dims...)
	switch {
	case toBits < fromBits:
		dims = append(dims, int64(fromBits/toBits))
	case toBits > fromBits:
		r := len(dims) - 1
		if r < 0 || dims[r]*int64(fromBits) != int64(toBits) {
			return Value{}, fmt.Errorf("bitcast-convert %v to %v needs a minor dimension of %d", x, to, toBits/fromBits)
		}
		dims = dims[:r]
	}
	if !equalDims(dims, in.Shape.Dims) {
		return Value{}, fmt.Errorf("bitcast-convert of %v to %v gives dims %v, not the declared %v", x, to, dims, in.Shape.Dims)
	}
	if !x.Type.IsSubByte() && !to.IsSubByte() {
		out, err := tensor.FromBytes(to, dims, x.Data)
		if err != nil {
			return Value{}, err
		}
		return ArrayValue(out), nil
	}
	// Sub-byte types are stored one per byte: repack the logical bit stream.
	out := tensor.New(to, dims)
	var acc uint64
	var have, j int
	size := x.Type.Size()
	for i := 0; i < int(x.NumElements()); i++ {
		var v uint64
		for b := size - 1; b >= 0; b-- {
			v = v<<8 | uint64(x.Data[i*size+b])
		}
		if fromBits < 64 {
			v &= 1<<uint(fromBits) - 1
		}
		acc |= v << uint(have)
		have += fromBits
		for have >= toBits {
			w := acc
			if toBits < 64 {
				w &= 1<<uint(toBits) - 1
				acc >>= uint(toBits)
			} else {
				acc = 0
			}
			have -= toBits
			osize := to.Size()
			for b := 0; b < osize; b++ {
				out.Data[j*osize+b] = byte(w >> (8 * uint(b)))
			}
			j++
		}
	}
	return ArrayValue(out), nil
}

// evalReducePrecision rounds to a float format with the given exponent and
// mantissa widths, as XLA's reduce-precision: mantissa to nearest even,
// exponent overflow to ±Inf, underflow (denormals included) to ±0. XLA:CPU
// keeps NaN even when mantissa_bits is 0 (checked with jax).
func evalReducePrecision(_ *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	ts, err := arrayArgs(args, 1)
	if err != nil {
		return Value{}, err
	}
	x := ts[0]
	eb, mb := in.ExponentBits, in.MantissaBits
	if eb < 1 || mb < 0 {
		return Value{}, fmt.Errorf("reduce-precision needs exponent_bits >= 1 and mantissa_bits >= 0, got %d and %d", eb, mb)
	}
	switch classOf(x.Type) {
	case classF64:
		out := tensor.New(x.Type, x.Dims)
		o := out.F64()
		for i, v := range x.F64() {
			r := reducePrecisionBits(math.Float64bits(v), 11, 52, eb, mb)
			if v != v {
				o[i] = v
			} else {
				o[i] = math.Float64frombits(r)
			}
		}
		return ArrayValue(out), nil
	case classF32:
		if x.Type == dtype.F16 || x.Type == dtype.BF16 {
			// XLA:CPU works on the 16-bit encoding itself, so f16
			// subnormals survive an exponent width of 5.
			se, sm := int64(5), int64(10)
			if x.Type == dtype.BF16 {
				se, sm = 8, 7
			}
			out := tensor.New(x.Type, x.Dims)
			o := out.U16()
			for i, v := range x.U16() {
				if v&0x7fff > uint16(((1<<se)-1)<<sm) { // NaN
					o[i] = v
				} else {
					o[i] = uint16(reducePrecisionBits(uint64(v), se, sm, eb, mb))
				}
			}
			return ArrayValue(out), nil
		}
		xs := asF32(x)
		if x.Type == dtype.F32 {
			out := tensor.New(dtype.F32, x.Dims)
			rp := newReducePrecisionF32(eb, mb)
			o, u := out.U32(), x.U32()
			parallelFor(len(o), func(lo, hi int) { rp.apply(u[lo:hi], o[lo:hi]) })
			return ArrayValue(out), nil
		}
		o := make([]float32, len(xs))
		for i, v := range xs {
			if v != v {
				o[i] = v
			} else {
				o[i] = math.Float32frombits(uint32(reducePrecisionBits(uint64(math.Float32bits(v)), 8, 23, eb, mb)))
			}
		}
		return ArrayValue(newFromF32(x.Type, x.Dims, o)), nil
	}
	return Value{}, unsupported("reduce-precision", x.Type)
}

// reducePrecisionF32 is reducePrecisionBits of f32 bits (8 exponent, 23
// mantissa bits) with its constants worked out once, NaNs passed through.
type reducePrecisionF32 struct {
	round, exp        bool
	shift             uint
	half, keep        uint32 // (last>>1)-1 and ^(last-1)
	maxExp, minExp    uint32
	signMask, expMask uint32
}

func newReducePrecisionF32(eb, mb int64) reducePrecisionF32 {
	var r reducePrecisionF32
	if mb < 23 {
		r.round = true
		r.shift = uint(23 - mb)
		last := uint32(1) << r.shift
		r.half, r.keep = last>>1-1, ^(last - 1)
	}
	if eb < 8 {
		r.exp = true
		r.signMask, r.expMask = 1<<31, 0xff<<23
		rbias := uint32(1)<<uint(eb-1) - 1
		r.maxExp, r.minExp = (127+rbias)<<23, (127-rbias)<<23
	}
	return r
}

// apply sets o[i] to reduce-precision of the f32 bits x[i].
func (r reducePrecisionF32) apply(x, o []uint32) {
	o = o[:len(x)]
	for i, v := range x {
		if v&0x7fffffff > 0x7f800000 { // NaN
			o[i] = v
			continue
		}
		if r.round {
			v = (v + r.half + (v>>r.shift)&1) & r.keep
		}
		if r.exp {
			switch e := v & r.expMask; {
			case e > r.maxExp:
				v = v&r.signMask | r.expMask
			case e <= r.minExp:
				v &= r.signMask
			}
		}
		o[i] = v
	}
}

// reducePrecisionBits applies reduce-precision to the bits of an IEEE float
// with srcExp exponent and srcMant mantissa bits.
func reducePrecisionBits(x uint64, srcExp, srcMant, eb, mb int64) uint64 {
	width := uint(1 + srcExp + srcMant)
	if mb < srcMant {
		shift := uint(srcMant - mb)
		last := uint64(1) << shift
		bias := (last >> 1) - 1 + (x&last)>>shift
		x = (x + bias) &^ (last - 1)
		if width < 64 {
			x &= 1<<width - 1
		}
	}
	if eb < srcExp {
		signMask := uint64(1) << uint(srcExp+srcMant)
		expMask := (uint64(1)<<uint(srcExp) - 1) << uint(srcMant)
		bias := int64(1)<<uint(srcExp-1) - 1
		rbias := int64(1)<<uint(eb-1) - 1
		maxExp := uint64(bias+rbias) << uint(srcMant)
		minExp := uint64(bias-rbias) << uint(srcMant)
		e := x & expMask
		switch {
		case e > maxExp:
			x = x&signMask | expMask
		case e <= minExp:
			x &= signMask
		}
	}
	return x
}

// evalStochasticConvert rounds floats to integers up or down by comparing the
// fraction with a random unsigned integer of the operand's width, as
// HloEvaluator does: round away from zero when random < fraction * 2^bits.
func evalStochasticConvert(_ *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	ts, err := arrayArgs(args, 2)
	if err != nil {
		return Value{}, err
	}
	x, r := ts[0], ts[1]
	to, err := resultElem(in)
	if err != nil {
		return Value{}, err
	}
	if !x.Type.IsFloat() || !r.Type.IsUnsigned() || !to.IsInteger() {
		return Value{}, fmt.Errorf("stochastic-convert needs float operand, unsigned random and integer result, got %v, %v -> %v", x.Type, r.Type, to)
	}
	if err := sameShape(x, r); err != nil {
		return Value{}, err
	}
	xs, rs := asF64(x), asU64(r)
	rbits := r.Type.Bits()
	f := make([]float64, len(xs))
	for i, v := range xs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			f[i] = v
			continue
		}
		a := math.Abs(v)
		t := math.Trunc(a)
		if frac := a - t; frac > 0 {
			if float64(rs[i]) < math.Ldexp(frac, rbits) {
				t++
			}
		}
		f[i] = math.Copysign(t, v)
	}
	out := tensor.New(to, x.Dims)
	dtype.EncodeF64(to, f, out.Data)
	return ArrayValue(out), nil
}

// markNaN stores code wherever x (a real float tensor) holds a NaN.
func markNaN(x, out *tensor.Tensor, code byte) {
	if !x.Type.IsFloat() {
		return
	}
	for i, v := range asF64(x) {
		if v != v {
			out.Data[i] = code
		}
	}
}

// convertIntFast converts between whole-byte integer and pred types, and
// from them to f32, with one typed loop: Go's integer conversion
// sign-extends signed sources, zero-extends unsigned ones and keeps the low
// bits of the target's width, which is what widening to 64 bits and
// storing (storeInts) does; pred targets are v != 0; f32 targets round the
// integer once. false for other types.
func convertIntFast(x, out *tensor.Tensor) bool {
	switch x.Type {
	case dtype.S8:
		return convertIntsFrom(x.I8(), out)
	case dtype.U8, dtype.Pred:
		return convertIntsFrom(x.Data, out)
	case dtype.S16:
		return convertIntsFrom(x.I16(), out)
	case dtype.U16:
		return convertIntsFrom(x.U16(), out)
	case dtype.S32:
		return convertIntsFrom(x.I32(), out)
	case dtype.U32:
		return convertIntsFrom(x.U32(), out)
	case dtype.S64:
		return convertIntsFrom(x.I64(), out)
	case dtype.U64:
		return convertIntsFrom(x.U64(), out)
	}
	return false
}

type wholeInt interface {
	int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64
}

func convertIntsFrom[S wholeInt](src []S, out *tensor.Tensor) bool {
	switch out.Type {
	case dtype.S8:
		convertIntLoop(src, out.I8())
	case dtype.U8:
		convertIntLoop(src, out.Data)
	case dtype.S16:
		convertIntLoop(src, out.I16())
	case dtype.U16:
		convertIntLoop(src, out.U16())
	case dtype.S32:
		convertIntLoop(src, out.I32())
	case dtype.U32:
		convertIntLoop(src, out.U32())
	case dtype.S64:
		convertIntLoop(src, out.I64())
	case dtype.U64:
		convertIntLoop(src, out.U64())
	case dtype.Pred:
		o := out.Data[:len(src)]
		parallelFor(len(src), func(lo, hi int) {
			for i, v := range src[lo:hi] {
				o[lo+i] = b2u(v != 0)
			}
		})
	case dtype.F32:
		o := out.F32()[:len(src)]
		parallelFor(len(src), func(lo, hi int) {
			for i, v := range src[lo:hi] {
				o[lo+i] = float32(v)
			}
		})
	default:
		return false
	}
	return true
}

func convertIntLoop[S, T wholeInt](src []S, o []T) {
	o = o[:len(src)]
	parallelFor(len(src), func(lo, hi int) {
		for i, v := range src[lo:hi] {
			o[lo+i] = T(v)
		}
	})
}
