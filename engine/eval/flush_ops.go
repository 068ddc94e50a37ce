package eval

import (
	"sync/atomic"
	"unsafe"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// XLA:CPU runs with denormals-are-zero and flush-to-zero
// (docs/xla-cpu-semantics.md): the float arithmetic inside a reduction, a
// reduce-window, a dot or a convolution sees subnormal inputs as signed zeros
// and writes no subnormal result. The elementwise ops flush themselves; these
// ops fold and multiply with Go's (IEEE) arithmetic in many fast paths, so the
// flush is applied around them: inputs flushed on the way in (a copy only when
// one holds a subnormal), results on the way out. A partial sum that lands in
// the subnormal range and grows back out of it is not flushed in between.

// flushAlways: dots and convolutions multiply and add every operand.
func flushAlways(*hlo.Instruction, dtype.Type) bool { return true }

// reducerFlushes: a reduction with a fast reducer computes it in float
// arithmetic (bf16 maximum/minimum excepted: the newest XLA:CPU compares
// bf16 natively, keeping subnormals, as the elementwise ops do by default).
// Other reducers run in the scalar machine, which applies XLA's rules op by op.
func reducerFlushes(in *hlo.Instruction, t dtype.Type) bool {
	switch fastReducer(in.ToApply()) {
	case "add", "multiply":
		return true
	case "maximum", "minimum":
		return !bf16NativeMinMax("maximum", t)
	}
	return false
}

// flushable: the types whose values can be subnormal in the f32 or f64
// arithmetic XLA does them in (f16 and the f8 types widen to normal f32s).
func flushable(t dtype.Type) bool { return t == dtype.F32 || t == dtype.F64 || t == dtype.BF16 }

func flushingArithmetic(f OpFunc, applies func(*hlo.Instruction, dtype.Type) bool) OpFunc {
	return func(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
		var flushed []Value
		for i, a := range args {
			if a.T == nil || !flushable(a.T.Type) || !applies(in, a.T.Type) || !ev.operandHasSubnormal(a.T) {
				continue
			}
			if flushed == nil {
				flushed = append([]Value(nil), args...)
			}
			c := a.T.Clone()
			ftzTensor(c)
			flushed[i] = ArrayValue(c)
		}
		if flushed != nil {
			args = flushed
		}
		if ev != nil {
			ev.flushFree = nil
		}
		v, err := f(ev, in, args)
		if err != nil {
			return v, err
		}
		if ev != nil && ev.flushFree != nil && v.T != nil && len(v.T.Data) > 0 && unsafe.Pointer(&v.T.Data[0]) == ev.flushFree {
			ev.flushFree = nil
			return v, nil // its path made no subnormal: no scan
		}
		return flushResults(in, v, args, applies), nil
	}
}

// noteFlushFree records that c, the result the running op returns, holds no
// subnormal by construction (flushingArithmetic then skips its scan).
func (ev *Evaluator) noteFlushFree(c []float32) {
	if ev != nil && len(c) > 0 {
		ev.flushFree = unsafe.Pointer(&c[0])
	}
}

// flushResults flushes the subnormals of v's float arrays, copying an array
// that shares storage with an operand.
func flushResults(in *hlo.Instruction, v Value, args []Value, applies func(*hlo.Instruction, dtype.Type) bool) Value {
	if v.Tuple != nil {
		out := Value{Tuple: make([]Value, len(v.Tuple))}
		for i, e := range v.Tuple {
			out.Tuple[i] = flushResults(in, e, args, applies)
		}
		return out
	}
	t := v.T
	if t == nil || !flushable(t.Type) || !applies(in, t.Type) || !hasSubnormal(t) {
		return v
	}
	for _, a := range args {
		if a.T != nil && len(a.T.Data) > 0 && len(t.Data) > 0 && &a.T.Data[0] == &t.Data[0] {
			t = t.Clone()
			break
		}
	}
	ftzTensor(t)
	return ArrayValue(t)
}

// hasSubnormal scans t (large operands on every core: the scan runs over
// every operand and result of these ops).
func hasSubnormal(t *tensor.Tensor) bool {
	switch t.Type {
	case dtype.F32:
		return anySubnormal(t.F32())
	case dtype.F64:
		return anySubnormal(t.F64())
	case dtype.BF16:
		return firstSubnormalBF16(t.U16()) >= 0
	}
	return false
}

// firstSubnormalBF16 returns the index of the first subnormal among bf16
// words (exponent field 0, mantissa not), or -1. Four words are tested at
// once in a uint64 (SWAR): a lane's exponent field plus 0x7f80 carries into
// its bit 15 exactly when the field is nonzero, and its mantissa plus 0x7f
// into its bit 7 exactly when the mantissa is; no lane carries into the next.
func firstSubnormalBF16(xs []uint16) int {
	const (
		exp  = 0x7f807f807f807f80
		man  = 0x007f007f007f007f
		high = 0x8000800080008000
	)
	i := 0
	// Words before the first 8-byte boundary one at a time, so the uint64
	// view is aligned.
	for ; i < len(xs) && uintptr(unsafe.Pointer(&xs[i]))%8 != 0; i++ {
		if xs[i]&0x7fff-1 < 0x007f {
			return i
		}
	}
	if n := (len(xs) - i) / 4; n > 0 {
		words := unsafe.Slice((*uint64)(unsafe.Pointer(&xs[i])), n)
		start := i
		for w, x := range words {
			expSet := (x&exp + exp) & high
			manSet := ((x&man + man) << 8) & high
			if manSet&^expSet != 0 {
				break
			}
			i = start + 4*(w+1)
		}
	}
	for ; i < len(xs); i++ {
		if xs[i]&0x7fff-1 < 0x007f {
			return i
		}
	}
	return -1
}

// ftzTensor replaces t's subnormals by signed zeros, in place.
func ftzTensor(t *tensor.Tensor) {
	switch t.Type {
	case dtype.F32:
		ftz(t.F32())
	case dtype.F64:
		ftz(t.F64())
	case dtype.BF16:
		bs := t.U16()
		for i := firstSubnormalBF16(bs); i >= 0; {
			bs[i] &= 0x8000
			j := firstSubnormalBF16(bs[i+1:])
			if j < 0 {
				break
			}
			i += 1 + j
		}
	}
}

func anySubnormal[F float](xs []F) bool {
	const chunk = 1 << 18
	if len(xs) <= chunk {
		return firstSubnormal(xs) >= 0
	}
	var found atomic.Bool
	// The work is the elements, not the chunks: parallelFor would count 32
	// chunks of a 4M-element operand as too little to split.
	parallelForWork((len(xs)+chunk-1)/chunk, len(xs), func(lo, hi int) {
		for c := lo; c < hi && !found.Load(); c++ {
			if firstSubnormal(xs[c*chunk:min((c+1)*chunk, len(xs))]) >= 0 {
				found.Store(true)
			}
		}
	})
	return found.Load()
}
