package eval

// compare, select and clamp: the elementwise ops whose operands are not all of
// the result's type, or may be scalars broadcast against arrays.

import (
	"cmp"
	"fmt"
	"math"
	"unsafe"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func init() {
	Register("compare", evalCompare)
	Register("select", evalSelect)
	Register("clamp", evalClamp)
}

// defaultComparison is the comparison type XLA assumes when none is printed.
func defaultComparison(t dtype.Type) string {
	switch {
	case t.IsFloat() || t.IsComplex():
		return "FLOAT"
	case t.IsSigned():
		return "SIGNED"
	}
	return "UNSIGNED"
}

func evalCompare(_ *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	ts, err := arrayArgs(args, 2)
	if err != nil {
		return Value{}, err
	}
	ctype, err := in.EffectiveComparisonType()
	if err != nil {
		return Value{}, Unsupported("%v", err)
	}
	out, err := compare(in.ComparisonDirection, ctype, ts[0], ts[1], bf16CompareFlushes(in))
	if err != nil {
		return Value{}, err
	}
	return ArrayValue(out), nil
}

// bf16CompareFlushes reports whether XLA:CPU's code for a bf16 or f32
// compare sees subnormals as zero (other types ignore it). Compares are widened to f32 and run under DAZ, except
// that LLVM folds EQ/NE against a constant (jax's x.astype(bool) is
// compare(x, broadcast(0)), NE) into bit arithmetic that keeps them: with jax on
// CPU, bf16 0x0001 != 0 is true while 0x0001 > 0 and ne(0x0001, zeros-operand)
// are false. The fold does not happen when an instruction reads both the
// compare and the compared value: in jnp.where(x == 0, 0, x) and in
// jnp.sort's comparator (which canonicalizes with select(x == 0, 0, x)) the
// compare runs on the widened f32 value and flushes. Other readers of x
// (other fusions) do not matter.
func bf16CompareFlushes(in *hlo.Instruction) bool {
	if in.ComparisonDirection != "EQ" && in.ComparisonDirection != "NE" {
		return true
	}
	for i, op := range in.Operands {
		if !isConstantLike(op) || len(in.Operands) != 2 {
			continue
		}
		x := in.Operands[1-i]
		switch {
		case x.Shape.Elem == dtype.BF16:
			return readTogether(in, x)
		case x.Shape.Elem == dtype.F32 && x.Opcode == "convert" && len(x.Operands) == 1 &&
			x.Operands[0].Shape.Elem == dtype.BF16:
			// XLA's optimized form of the same: compare(convert(bf16 x), 0).
			return readTogether(in, x) || readTogether(in, x.Operands[0])
		}
		return true
	}
	return true
}

// readTogether reports whether an instruction of in's computation other
// than in reads both in and x.
func readTogether(in, x *hlo.Instruction) bool {
	c := in.Parent
	if c == nil {
		return false
	}
	for _, u := range c.Instructions {
		if u == in {
			continue
		}
		var readsIn, readsX bool
		for _, o := range u.Operands {
			readsIn = readsIn || o == in
			readsX = readsX || o == x
		}
		if readsIn && readsX {
			return true
		}
	}
	return false
}

// isConstantLike reports whether an instruction's value is a constant seen
// through value-preserving reshapes.
func isConstantLike(in *hlo.Instruction) bool {
	for depth := 0; depth < 8; depth++ {
		switch in.Opcode {
		case "constant", "iota":
			return true
		case "broadcast", "reshape", "bitcast", "copy", "transpose":
			in = in.Operands[0]
		default:
			return false
		}
	}
	return false
}

// compare evaluates a compare of equal-shaped operands into a pred tensor.
// flushBF16 says whether bf16 subnormals compare as zero (see bf16CompareFlushes).
func compare(dir, ctype string, a, b *tensor.Tensor, flushBF16 bool) (*tensor.Tensor, error) {
	if err := sameShape(a, b); err != nil {
		return nil, err
	}
	if a.Type != b.Type {
		return nil, fmt.Errorf("operand types differ: %v vs %v", a.Type, b.Type)
	}
	if ctype == "" {
		ctype = defaultComparison(a.Type)
	}
	if !compareKernel[int8](dir, nil, nil, nil) {
		return nil, fmt.Errorf("unknown comparison direction %q", dir)
	}
	out := tensor.New(dtype.Pred, a.Dims)
	o := out.Data
	switch classOf(a.Type) {
	case classF32:
		// XLA:CPU compares f32 and bf16 (widened to f32) with FP compares,
		// which see subnormals as 0 (DAZ); other narrow floats widen to
		// f32 normals. TOTALORDER compares bit patterns as integers.
		flush := (a.Type == dtype.F32 || a.Type == dtype.BF16) && flushBF16 && ctype != "TOTALORDER"
		compareF32Blocked(dir, ctype == "TOTALORDER", flush, a, b, o)
	case classF64:
		as, bs := daz(a.F64()), daz(b.F64())
		if ctype == "TOTALORDER" {
			compareKernel(dir, totalOrderKeys64(as), totalOrderKeys64(bs), o)
		} else {
			compareKernel(dir, as, bs, o)
		}
	case classC64, classC128:
		if dir != "EQ" && dir != "NE" {
			return nil, fmt.Errorf("complex numbers compare only with EQ or NE, not %s", dir)
		}
		if a.Type == dtype.C64 {
			compareComplex(dir == "EQ", a.C64(), b.C64(), o)
		} else {
			compareComplex(dir == "EQ", a.C128(), b.C128(), o)
		}
	default:
		switch {
		case ctype == "SIGNED" && a.Type.IsSigned() && a.Type.Bits() == 32:
			compareInt32(dir, true, a, b, o)
		case ctype == "SIGNED" && a.Type.IsSigned() && a.Type.Bits() == 64:
			compareKernel(dir, a.I64(), b.I64(), o)
		case ctype == "SIGNED":
			compareKernel(dir, asI64(a), asI64(b), o)
		case a.Type.IsUnsigned() && a.Type.Bits() == 32:
			compareInt32(dir, false, a, b, o)
		case !a.Type.IsSubByte() && a.Type.Bits() == 8 && !a.Type.IsSigned():
			compareKernel(dir, a.Data, b.Data, o)
		default:
			// UNSIGNED on a signed type compares the bit patterns of its width.
			ua, ub := asU64(a), asU64(b)
			if a.Type.IsSigned() && a.Type.Bits() < 64 {
				m := uint64(1)<<uint(a.Type.Bits()) - 1
				for i := range ua {
					ua[i] &= m
					ub[i] &= m
				}
			}
			compareKernel(dir, ua, ub, o)
		}
	}
	return out, nil
}

// compareInt32 compares s32 (signed) or u32 a and b into o on all cores,
// whole vectors where compareInt32Vector runs, compareKernel for the rest:
// the fused compare's kernels.
func compareInt32(dir string, signed bool, a, b *tensor.Tensor, o []byte) {
	ua, ub := rawView[uint32](a.Data), rawView[uint32](b.Data)
	parallelFor(len(o), func(lo, hi int) {
		x, y, p := ua[lo:hi], ub[lo:hi], o[lo:hi]
		k := compareInt32Vector(dir, signed, x, y, p)
		if signed {
			compareKernel(dir, asSigned32(x[k:]), asSigned32(y[k:]), p[k:])
		} else {
			compareKernel(dir, x[k:], y[k:], p[k:])
		}
	})
}

func compareKernel[T cmp.Ordered](dir string, a, b []T, o []byte) bool {
	switch dir {
	case "EQ":
		for i := range o {
			o[i] = b2u(a[i] == b[i])
		}
	case "NE":
		for i := range o {
			o[i] = b2u(a[i] != b[i])
		}
	case "LT":
		for i := range o {
			o[i] = b2u(a[i] < b[i])
		}
	case "LE":
		for i := range o {
			o[i] = b2u(a[i] <= b[i])
		}
	case "GT":
		for i := range o {
			o[i] = b2u(a[i] > b[i])
		}
	case "GE":
		for i := range o {
			o[i] = b2u(a[i] >= b[i])
		}
	default:
		return false
	}
	return true
}

func compareComplex[C cplx](eq bool, a, b []C, o []byte) {
	for i := range o {
		o[i] = b2u((a[i] == b[i]) == eq)
	}
}

func b2u(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// compareF32Blocked compares two f32-class tensors into o a block at a
// time on all cores: each block of a narrow type widened, its subnormals
// flushed when flush (into a copy for f32, whose storage is read in place),
// then compared as floats or, for TOTALORDER, as the integer keys of their
// bits.
func compareF32Blocked(dir string, totalOrder, flush bool, a, b *tensor.Tensor, o []byte) {
	parallelFor(len(o), func(lo, hi int) {
		var ba, bb [fuseBlock]float32
		var ka, kb [fuseBlock]int32
		for s := lo; s < hi; s += fuseBlock {
			e := min(s+fuseBlock, hi)
			x, y, ob := f32BlockOf(a, s, e, ba[:], flush), f32BlockOf(b, s, e, bb[:], flush), o[s:e]
			if totalOrder {
				xk, yk := totalOrderKeysInto(x, ka[:e-s]), totalOrderKeysInto(y, kb[:e-s])
				k := compareInt32Vector(dir, true, int32Bits(xk), int32Bits(yk), ob)
				compareKernel(dir, xk[k:], yk[k:], ob[k:])
				continue
			}
			k := compareF32Vector(dir, x, y, ob)
			compareKernel(dir, x[k:], y[k:], ob[k:])
		}
	})
}

// f32BlockOf is elements [s, e) of f32-class t as f32: f32 storage in place
// (copied into buf when flush finds a subnormal), a narrow type widened into
// buf (and flushed there when flush).
func f32BlockOf(t *tensor.Tensor, s, e int, buf []float32, flush bool) []float32 {
	if t.Type == dtype.F32 {
		x := t.F32()[s:e]
		if flush {
			return dazInto(x, buf)
		}
		return x
	}
	size := t.Type.Size()
	x := buf[:e-s]
	widenNarrowBlock(t.Type, t.Data[size*s:size*e], x)
	if flush {
		if i := firstSubnormal(x); i >= 0 {
			ftz(x[i:])
		}
	}
	return x
}

// totalOrderKeysInto sets o to integer keys ordered as XLA's TOTALORDER
// orders xs: -NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN (the bits,
// the magnitude flipped for negatives).
func totalOrderKeysInto(xs []float32, o []int32) []int32 {
	o = o[:len(xs)]
	k := 0
	if !totalOrderVectorDisabled {
		k = totalOrderKeysVector(xs, o) // totalorder_simd_amd64.go
	}
	for i := k; i < len(xs); i++ {
		key := int32(math.Float32bits(xs[i]))
		if key < 0 {
			key ^= math.MaxInt32
		}
		o[i] = key
	}
	return o
}

// totalOrderVectorDisabled keeps totalOrderKeysInto on its scalar loop (tests).
var totalOrderVectorDisabled bool

func int32Bits(xs []int32) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(xs))), len(xs))
}

func totalOrderKeys64(xs []float64) []int64 {
	out := make([]int64, len(xs))
	for i, v := range xs {
		k := int64(math.Float64bits(v))
		if k < 0 {
			k ^= math.MaxInt64
		}
		out[i] = k
	}
	return out
}

func evalSelect(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	ts, err := arrayArgs(args, 3)
	if err != nil {
		return Value{}, err
	}
	p, a, b := ts[0], ts[1], ts[2]
	if p.Type != dtype.Pred {
		return Value{}, fmt.Errorf("select predicate must be pred, got %v", p.Type)
	}
	if err := sameShape(a, b); err != nil {
		return Value{}, err
	}
	if a.Type != b.Type {
		return Value{}, fmt.Errorf("operand types differ: %v vs %v", a.Type, b.Type)
	}
	if p.Rank() == 0 && a.Rank() != 0 {
		// A scalar predicate picks a whole operand; values are immutable.
		if p.Data[0] != 0 {
			return ArrayValue(a), nil
		}
		return ArrayValue(b), nil
	}
	if !equalDims(p.Dims, a.Dims) {
		return Value{}, fmt.Errorf("predicate shape %v does not match operands %v", p, a)
	}
	out := ev.newTensor(a.Type, a.Dims, false) // every element is written below
	switch a.Type.Size() {
	case 1:
		pd, as, bs, os := p.Data, a.Data, b.Data, out.Data
		parallelFor(len(os), func(lo, hi int) {
			k := lo + selectBytesVector(pd[lo:hi], as[lo:hi], bs[lo:hi], os[lo:hi])
			selectRange(pd, as, bs, os, k, hi)
		})
	case 2:
		pd, as, bs, os := p.Data, a.U16(), b.U16(), out.U16()
		parallelFor(len(os), func(lo, hi int) {
			k := lo + selectHalvesVector(pd[lo:hi], as[lo:hi], bs[lo:hi], os[lo:hi])
			selectRange(pd, as, bs, os, k, hi)
		})
	case 4:
		pd, as, bs, os := p.Data, a.U32(), b.U32(), out.U32()
		parallelFor(len(os), func(lo, hi int) {
			// Whole vectors first (a blend, where the build has one), then the rest.
			k := lo + selectBitsVector(pd[lo:hi], as[lo:hi], bs[lo:hi], os[lo:hi])
			selectRange(pd, as, bs, os, k, hi)
		})
	case 8:
		selectKernel(p.Data, a.U64(), b.U64(), out.U64())
	case 16:
		selectKernel(p.Data, a.C128(), b.C128(), out.C128())
	default:
		return Value{}, unsupported("select", a.Type)
	}
	return ArrayValue(out), nil
}

func selectKernel[T any](p []byte, a, b, o []T) {
	parallelFor(len(o), func(lo, hi int) { selectRange(p, a, b, o, lo, hi) })
}

// selectRange is selectKernel's loop over [lo, hi).
func selectRange[T any](p []byte, a, b, o []T, lo, hi int) {
	for i := lo; i < hi; i++ {
		if p[i] != 0 {
			o[i] = a[i]
		} else {
			o[i] = b[i]
		}
	}
}

// evalClamp is min(max(x, lo), hi) with maximum/minimum's own NaN and ±0
// rules; lo and hi may be scalars. Unlike bf16 maximum/minimum, a bf16
// clamp still flushes subnormals: measured on JAX 0.10's XLA:CPU, and not
// known to have changed (docs/xla-cpu-semantics.md).
func evalClamp(_ *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	ts, err := arrayArgs(args, 3)
	if err != nil {
		return Value{}, err
	}
	lo, x, hi := ts[0], ts[1], ts[2]
	if lo.Rank() == 0 && x.Rank() != 0 {
		lo = broadcastScalar(lo, x.Dims)
	}
	if hi.Rank() == 0 && x.Rank() != 0 {
		hi = broadcastScalar(hi, x.Dims)
	}
	t, err := binaryFlushing("maximum", x, lo, true)
	if err != nil {
		return Value{}, err
	}
	t, err = binaryFlushing("minimum", t, hi, true)
	if err != nil {
		return Value{}, err
	}
	return ArrayValue(t), nil
}

// broadcastScalar repeats a one-element tensor to dims.
func broadcastScalar(s *tensor.Tensor, dims []int64) *tensor.Tensor {
	out := tensor.New(s.Type, dims)
	fillBytes(out.Data, s.Data)
	return out
}

// fillBytes tiles pattern over dst by doubling copies.
func fillBytes(dst, pattern []byte) {
	if len(dst) == 0 {
		return
	}
	n := copy(dst, pattern)
	for n < len(dst) {
		n += copy(dst[n:], dst[:n])
	}
}
