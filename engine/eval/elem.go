package eval

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// Compute classes: the arithmetic type XLA:CPU uses for an element type.
// Floats narrower than f32 compute in f32 and round once per op; integers
// compute in 64 bits and wrap to their width when stored.
type computeClass uint8

const (
	classPred computeClass = iota
	classSigned
	classUnsigned
	classF32 // f16, bf16, f8*, f4, f32
	classF64
	classC64
	classC128
)

func classOf(t dtype.Type) computeClass {
	switch t.Kind() {
	case dtype.KindBool:
		return classPred
	case dtype.KindSigned:
		return classSigned
	case dtype.KindUnsigned:
		return classUnsigned
	case dtype.KindComplex:
		if t == dtype.C64 {
			return classC64
		}
		return classC128
	}
	if t == dtype.F64 {
		return classF64
	}
	return classF32
}

// asF32 returns the elements of a classF32 tensor as float32. For f32 it aliases
// the storage (callers must not write to it); other types are decoded.
func asF32(t *tensor.Tensor) []float32 {
	if t.Type == dtype.F32 {
		return t.F32()
	}
	if isNarrowElem(t.Type) {
		return widenNarrow(t) // on all cores
	}
	out := make([]float32, t.NumElements())
	dtype.DecodeF32(t.Type, t.Data, out)
	return out
}

// newFromF32 stores float32 results into a new tensor of a classF32 type,
// rounding once with the type's rules. For f32 it adopts vals without copying.
func newFromF32(typ dtype.Type, dims []int64, vals []float32) *tensor.Tensor {
	// Adopted when vals fill the tensor and start 16-byte aligned, as tensor
	// storage must; every caller hands over a slice it no longer touches.
	if typ == dtype.F32 && len(vals) > 0 && int64(len(vals)) == tensor.NumElements(dims) &&
		uintptr(unsafe.Pointer(&vals[0]))%16 == 0 {
		return &tensor.Tensor{Type: typ, Dims: append([]int64{}, dims...),
			Data: unsafe.Slice((*byte)(unsafe.Pointer(&vals[0])), 4*len(vals))}
	}
	out := tensor.New(typ, dims)
	if typ == dtype.F32 {
		copy(out.F32(), vals)
		return out
	}
	encodeF32(typ, vals, out.Data)
	return out
}

// asI64 returns the elements of an integer or pred tensor as int64, sign-extending
// signed types (sub-byte ones from their low bits) and zero-extending unsigned.
func asI64(t *tensor.Tensor) []int64 { return widenInts[int64](t) }

// asU64 returns the elements of an integer or pred tensor as uint64 (signed
// values are sign-extended then reinterpreted).
func asU64(t *tensor.Tensor) []uint64 { return widenInts[uint64](t) }

// widenInts is asI64 and asU64: both hold the same 64 bits per element
// (Go's integer conversions sign-extend signed sources and zero-extend
// unsigned ones, whatever the target's signedness).
func widenInts[T int64 | uint64](t *tensor.Tensor) []T {
	out := make([]T, t.NumElements())
	switch t.Type {
	case dtype.S64, dtype.U64:
		// Same bits either way: copy them (a memmove beats a converting loop).
		copy(out, unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(t.Data))), len(out)))
	case dtype.S32:
		widenInto(out, t.I32())
	case dtype.U32:
		widenInto(out, t.U32())
	case dtype.S16:
		widenInto(out, t.I16())
	case dtype.U16:
		widenInto(out, t.U16())
	case dtype.S8:
		widenInto(out, t.I8())
	case dtype.U8, dtype.Pred:
		widenInto(out, t.Data)
	case dtype.S1, dtype.S2, dtype.S4:
		shift := 64 - uint(t.Type.Bits())
		for i, b := range t.Data {
			out[i] = T(int64(uint64(b)<<shift) >> shift)
		}
	case dtype.U1, dtype.U2, dtype.U4:
		mask := uint64(1)<<uint(t.Type.Bits()) - 1
		for i, b := range t.Data {
			out[i] = T(uint64(b) & mask)
		}
	default:
		// Callers dispatch on computeClass first; a float here is a bug.
		panic(fmt.Sprintf("eval: integer view of %v", t.Type))
	}
	return out
}

func widenInto[T int64 | uint64, S int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64](out []T, src []S) {
	for i, v := range src {
		out[i] = T(v)
	}
}

// newFromI64 stores 64-bit integer results into a new integer or pred tensor,
// wrapping to the type's width (pred stores v != 0).
func newFromI64(typ dtype.Type, dims []int64, vals []int64) *tensor.Tensor {
	out := tensor.New(typ, dims)
	switch typ {
	case dtype.S64, dtype.U64:
		copy(out.I64(), vals)
	case dtype.S32, dtype.U32:
		d := out.I32()
		for i, v := range vals {
			d[i] = int32(v)
		}
	case dtype.S16, dtype.U16:
		d := out.I16()
		for i, v := range vals {
			d[i] = int16(v)
		}
	case dtype.Pred:
		for i, v := range vals {
			if v != 0 {
				out.Data[i] = 1
			}
		}
	default: // 8-bit and sub-byte: keep the low bits, masked to the width
		mask := byte(1<<uint(typ.Bits()) - 1)
		if typ.Bits() >= 8 {
			mask = 0xFF
		}
		for i, v := range vals {
			out.Data[i] = byte(v) & mask
		}
	}
	return out
}

// newFromU64 is newFromI64 for unsigned results.
func newFromU64(typ dtype.Type, dims []int64, vals []uint64) *tensor.Tensor {
	out := tensor.New(typ, dims)
	switch typ {
	case dtype.S64, dtype.U64:
		copy(out.U64(), vals)
	default:
		iv := make([]int64, len(vals))
		for i, v := range vals {
			iv[i] = int64(v)
		}
		return newFromI64(typ, dims, iv)
	}
	return out
}

// parallelThreshold is the element count from which elementwise loops are
// split across goroutines; below it the goroutine overhead dominates.
const parallelThreshold = 1 << 16

// parallelFor runs body over [0,n) in contiguous chunks, one per CPU when n is
// large enough to pay for the goroutines. body must only write its own chunk.
func parallelFor(n int, body func(lo, hi int)) { parallelForWork(n, n, body) }

// parallelForWork is parallelFor for items that cost more than an element
// each: work estimates the whole loop's cost in elementwise-op units.
func parallelForWork(n, work int, body func(lo, hi int)) {
	sseAfterAVX()
	if work < parallelThreshold {
		body(0, n) // (GOMAXPROCS takes the scheduler's lock: not asked for small loops)
		return
	}
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers < 2 {
		body(0, n)
		return
	}
	chunk := (n + workers - 1) / workers
	var wg sync.WaitGroup
	var perr any
	var mu sync.Mutex
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			// A panic in a worker goroutine would kill the process; carry it
			// to the caller so Evaluator.Call can turn it into an error.
			defer func() {
				if r := recover(); r != nil {
					mu.Lock()
					perr = r
					mu.Unlock()
				}
			}()
			sseAfterAVX() // a goroutine may land on a thread whose last AVX code left the upper halves dirty
			body(lo, hi)
		}(lo, hi)
	}
	wg.Wait()
	if perr != nil {
		panic(perr)
	}
}

// parallelPull is parallelForWork for bodies whose ranges are independent
// item by item (each item's result the same however [0,n) is cut): the
// goroutines, the caller's among them, pull small chunks from a shared
// counter, so a core slowed by other work does not hold up the rest.
func parallelPull(n, work int, body func(lo, hi int)) {
	if work < parallelThreshold {
		body(0, n)
		return
	}
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers < 2 {
		body(0, n)
		return
	}
	chunk := max(1, n/(8*workers))
	var next atomic.Int64
	var wg sync.WaitGroup
	var perr any
	var mu sync.Mutex
	pull := func() {
		defer func() {
			if r := recover(); r != nil {
				mu.Lock()
				perr = r
				mu.Unlock()
			}
		}()
		for {
			lo := int(next.Add(int64(chunk))) - chunk
			if lo >= n {
				return
			}
			body(lo, min(lo+chunk, n))
		}
	}
	for range workers - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pull()
		}()
	}
	pull()
	wg.Wait()
	if perr != nil {
		panic(perr)
	}
}

// asF64 returns the elements of an f64 tensor (aliasing its storage) or of any
// other real float type, decoded.
func asF64(t *tensor.Tensor) []float64 {
	if t.Type == dtype.F64 {
		return t.F64()
	}
	f := asF32(t)
	out := make([]float64, len(f))
	for i, v := range f {
		out[i] = float64(v)
	}
	return out
}

// integer is the set of storage types integer kernels are instantiated for.
// Sub-byte types compute in int8/uint8 and are masked back to their width.
type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// rawView reinterprets storage bytes as a slice of T.
func rawView[T any](b []byte) []T {
	if len(b) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/int(unsafe.Sizeof(z)))
}

// intView returns the elements of an integer or pred tensor as its storage
// type T (int8 for s1..s8, uint8 for pred and u1..u8, ...). Full-width types
// alias the storage; sub-byte types are copied, sign-extended or masked.
func intView[T integer](t *tensor.Tensor) []T {
	if !t.Type.IsSubByte() {
		return rawView[T](t.Data)
	}
	bits := uint(t.Type.Bits())
	out := make([]T, len(t.Data))
	if t.Type.IsSigned() {
		for i, b := range t.Data {
			out[i] = T(int8(b<<(8-bits)) >> (8 - bits))
		}
	} else {
		mask := byte(1)<<bits - 1
		for i, b := range t.Data {
			out[i] = T(b & mask)
		}
	}
	return out
}

// maskStorage truncates the bytes of a sub-byte or pred tensor to the type's
// width, after a kernel computed them in 8 bits.
func maskStorage(t *tensor.Tensor) {
	bits := t.Type.Bits()
	if t.Type == dtype.Pred {
		bits = 1
	} else if bits >= 8 {
		return
	}
	mask := byte(1)<<uint(bits) - 1
	for i := range t.Data {
		t.Data[i] &= mask
	}
}

// intBits is the arithmetic width of an integer or pred type (1 for pred).
func intBits(t dtype.Type) int {
	if t == dtype.Pred {
		return 1
	}
	return t.Bits()
}

// XLA:CPU runs with denormals flushed to zero (MXCSR FTZ and DAZ): f32 and
// f64 arithmetic reads subnormal inputs as ±0 and writes subnormal results as
// ±0. Narrow floats computed in f32 inherit this for values that are
// subnormal in f32 (bf16's), but not for f16/f8 subnormals, which are normal
// f32 numbers. Checked against jax.jit on CPU.

// minNormal returns the smallest positive normal number of F.
func minNormal[F float]() float64 {
	var z F
	if unsafe.Sizeof(z) == 4 {
		return 0x1p-126
	}
	return 0x1p-1022
}

// daz returns xs with subnormals replaced by signed zeros, copying only when
// there is one (xs may alias a tensor's storage).
func daz[F float](xs []F) []F {
	if i := firstSubnormal(xs); i >= 0 {
		out := append([]F(nil), xs...)
		ftz(out[i:])
		return out
	}
	return xs
}

// firstSubnormal returns the index of the first subnormal in xs, or -1. It
// tests the bits (magnitude in [1, smallest normal)) with one unsigned
// compare per element: these scans run over every operand of every float op.
func firstSubnormal[F float](xs []F) int {
	if len(xs) == 0 {
		return -1
	}
	var z F
	if unsafe.Sizeof(z) == 4 {
		return firstSubnormalBits32(unsafe.Slice((*uint32)(unsafe.Pointer(&xs[0])), len(xs)))
	}
	return firstSubnormalBits64(unsafe.Slice((*uint64)(unsafe.Pointer(&xs[0])), len(xs)))
}

// firstSubnormalBits64 is firstSubnormal on f64 bit patterns: whole runs
// of vectors scanned first (scanSubnormal64), the rest one at a time.
func firstSubnormalBits64(xs []uint64) int {
	i := 0
	for {
		j, found := scanSubnormal64(xs[i:])
		i += j
		if !found {
			break
		}
		for k, b := range xs[i:min(i+32, len(xs))] {
			if b&0x7fffffffffffffff-1 < 0x000fffffffffffff {
				return i + k
			}
		}
		i += 32 // not reached: the run scanned holds one
	}
	for ; i < len(xs); i++ {
		if xs[i]&0x7fffffffffffffff-1 < 0x000fffffffffffff {
			return i
		}
	}
	return -1
}

// ftzBits64 is ftz on f64 bit patterns.
func ftzBits64(xs []uint64) {
	i := 0
	for {
		j, found := scanSubnormal64(xs[i:])
		i += j
		if !found {
			break
		}
		e := min(i+32, len(xs))
		for k := i; k < e; k++ {
			if xs[k]&0x7fffffffffffffff-1 < 0x000fffffffffffff {
				xs[k] &= 1 << 63
			}
		}
		i = e
	}
	for ; i < len(xs); i++ {
		if xs[i]&0x7fffffffffffffff-1 < 0x000fffffffffffff {
			xs[i] &= 1 << 63
		}
	}
}

// ftz replaces subnormals in xs by signed zeros, in place.
func ftz[F float](xs []F) {
	if len(xs) == 0 {
		return
	}
	var z F
	if unsafe.Sizeof(z) == 4 {
		ftzBits32(unsafe.Slice((*uint32)(unsafe.Pointer(&xs[0])), len(xs)))
		return
	}
	ftzBits64(unsafe.Slice((*uint64)(unsafe.Pointer(&xs[0])), len(xs)))
}

// complexClean reports whether dazComplex and ftzComplex would leave every
// bit of xs as it is: no part is subnormal and, for complex64 (whose parts
// those loops widen to f64 and narrow back, which quiets a signaling NaN),
// no part is a signaling NaN. One pass over the parts' bits.
func complexClean[C cplx](xs []C) bool {
	if len(xs) == 0 {
		return true
	}
	var z C
	if unsafe.Sizeof(z) == 8 {
		parts := unsafe.Slice((*uint32)(unsafe.Pointer(&xs[0])), 2*len(xs))
		k, ok := scanSubnormalOrSNaN(parts)
		if !ok {
			return false
		}
		for _, b := range parts[k:] {
			if u := b & 0x7fffffff; u-1 < 0x007fffff || u-0x7f800001 < 0x3fffff {
				return false
			}
		}
		return true
	}
	return firstSubnormal(unsafe.Slice((*float64)(unsafe.Pointer(&xs[0])), 2*len(xs))) < 0
}

// complexCleanAll is complexClean over xs in chunks on all cores (a whole
// operand's scan otherwise runs on one while the op itself uses them all).
func complexCleanAll[C cplx](xs []C) bool {
	const chunk = 1 << 17
	if len(xs) <= chunk {
		return complexClean(xs)
	}
	var dirty atomic.Bool
	parallelForWork((len(xs)+chunk-1)/chunk, len(xs), func(lo, hi int) {
		for c := lo; c < hi && !dirty.Load(); c++ {
			if !complexClean(xs[c*chunk : min((c+1)*chunk, len(xs))]) {
				dirty.Store(true)
			}
		}
	})
	return !dirty.Load()
}

// dazComplex is daz for complex elements, flushing each part.
func dazComplex[C cplx](xs []C) []C {
	if complexCleanAll(xs) {
		return xs
	}
	var out []C
	for i, v := range xs {
		z := complex128(v)
		re, im := flushPart[C](real(z)), flushPart[C](imag(z))
		if re != real(z) || im != imag(z) || (re == 0 && math.Signbit(re) != math.Signbit(real(z))) {
			if out == nil {
				out = append([]C(nil), xs...)
			}
			out[i] = C(complex(re, im))
		}
	}
	if out == nil {
		return xs
	}
	return out
}

// ftzComplex is ftz for complex elements.
func ftzComplex[C cplx](xs []C) {
	if complexClean(xs) {
		return
	}
	for i, v := range xs {
		z := complex128(v)
		re, im := flushPart[C](real(z)), flushPart[C](imag(z))
		if re != real(z) || im != imag(z) {
			xs[i] = C(complex(re, im))
		}
	}
}

func flushPart[C cplx](v float64) float64 {
	var z C
	m := 0x1p-1022
	if unsafe.Sizeof(z) == 8 {
		m = 0x1p-126
	}
	if v != 0 && math.Abs(v) < m {
		return math.Copysign(0, v)
	}
	return v
}
