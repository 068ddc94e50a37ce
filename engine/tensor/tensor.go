// Package tensor holds dense n-d arrays of XLA element types over raw
// little-endian storage. Data is always logical row-major (the last dimension
// varies fastest); physical layouts are applied only where XLA makes them
// observable (proto literals, bitcast).
package tensor

import (
	"fmt"
	"math"
	"strings"
	"unsafe"

	"goldtrace/engine/dtype"
)

// Tensor is a dense array. Data holds NumElements()*Type.Size() bytes, row-major.
// Sub-byte types take one byte per element, value in the low bits.
type Tensor struct {
	Type dtype.Type
	Dims []int64
	Data []byte
}

// MaxElements bounds the size of any tensor we allocate, so corrupt shapes fail
// with an error instead of exhausting memory (16 GiB of f32).
const MaxElements = 1 << 32

// NumElements returns the product of dims, or -1 on overflow or a negative dim.
func NumElements(dims []int64) int64 {
	n := int64(1)
	for _, d := range dims {
		if d < 0 {
			return -1
		}
		if d != 0 && n > math.MaxInt64/d {
			return -1
		}
		n *= d
	}
	return n
}

// CheckShape reports an error if dims do not describe an allocatable array of t.
func CheckShape(t dtype.Type, dims []int64) error {
	if !t.IsArray() {
		return fmt.Errorf("element type %v is not an array type", t)
	}
	n := NumElements(dims)
	if n < 0 {
		return fmt.Errorf("invalid dimensions %v", dims)
	}
	if n > MaxElements {
		return fmt.Errorf("dimensions %v hold %d elements, more than the limit %d", dims, n, int64(MaxElements))
	}
	return nil
}

// alignedBytes returns n zeroed bytes whose start is 16-byte aligned, so typed
// views of any element type are valid.
func alignedBytes(n int) []byte {
	if n == 0 {
		return []byte{}
	}
	if b := reused(n); b != nil {
		clear(b)
		return b
	}
	words := make([]complex128, (n+15)/16)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), n)
	adviseHugePages(b)
	return b
}

// Storage returns n zeroed bytes, 16-byte aligned, as tensor storage is:
// released storage of that size (Release) when some is still alive.
func Storage(n int) []byte { return alignedBytes(n) }

// StorageForWriting is Storage for a caller that writes every byte itself:
// released storage comes back as it was left, not cleared, and fresh storage
// of reuseMinBytes or more is not cleared either (uninitBytes).
func StorageForWriting(n int) []byte {
	if b := reused(n); b != nil {
		return b
	}
	if n >= reuseMinBytes {
		return uninitBytes(n)
	}
	return alignedBytes(n)
}

// uninitBytes returns n bytes of fresh storage (n >= reuseMinBytes) whose
// contents are whatever the heap last held there. make would clear them,
// serially, on the allocating goroutine: for a 32 MB result that is about 3
// ms of one core before the (parallel) kernel overwrites every byte anyway,
// and on memory the runtime returned to the OS it takes every page fault
// on that one core too. strings.Builder's Grow is the standard library's
// public way to the runtime's allocation without clearing (it holds no
// pointers, so the collector never reads the garbage); large objects start
// on a page, so the bytes are aligned as alignedBytes' are.
func uninitBytes(n int) []byte {
	var sb strings.Builder
	sb.Grow(n)
	sb.WriteByte(0)
	p := unsafe.StringData(sb.String())
	if uintptr(unsafe.Pointer(p))%16 != 0 {
		return alignedBytes(n)
	}
	b := unsafe.Slice(p, n)
	adviseHugePages(b)
	return b
}

// New allocates a zeroed tensor. It panics on invalid shapes; use CheckShape first
// for untrusted input.
func New(t dtype.Type, dims []int64) *Tensor {
	if err := CheckShape(t, dims); err != nil {
		panic(err)
	}
	n := NumElements(dims)
	return &Tensor{Type: t, Dims: append([]int64{}, dims...), Data: alignedBytes(int(n) * t.Size())}
}

// FromBytes wraps a copy of data (row-major) as a tensor.
func FromBytes(t dtype.Type, dims []int64, data []byte) (*Tensor, error) {
	if err := CheckShape(t, dims); err != nil {
		return nil, err
	}
	want := NumElements(dims) * int64(t.Size())
	if int64(len(data)) != want {
		return nil, fmt.Errorf("%v%v needs %d bytes, got %d", t, dims, want, len(data))
	}
	out := &Tensor{Type: t, Dims: append([]int64{}, dims...), Data: alignedBytes(int(want))}
	copy(out.Data, data)
	return out, nil
}

// NumElements is the element count.
func (t *Tensor) NumElements() int64 { return NumElements(t.Dims) }

// Rank is the number of dimensions.
func (t *Tensor) Rank() int { return len(t.Dims) }

// Clone returns a deep copy.
func (t *Tensor) Clone() *Tensor {
	out := &Tensor{Type: t.Type, Dims: append([]int64{}, t.Dims...), Data: alignedBytes(len(t.Data))}
	copy(out.Data, t.Data)
	return out
}

// String is a short description, "f32[2,3]".
func (t *Tensor) String() string { return ShapeString(t.Type, t.Dims) }

// ShapeString formats a type and dims the way HLO text does, "f32[2,3]".
func ShapeString(t dtype.Type, dims []int64) string {
	s := t.String() + "["
	for i, d := range dims {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(d)
	}
	return s + "]"
}

// Strides returns row-major element strides for dims.
func Strides(dims []int64) []int64 {
	s := make([]int64, len(dims))
	acc := int64(1)
	for i := len(dims) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= dims[i]
	}
	return s
}

func view[T any](b []byte, size int) []T {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/size)
}

// Typed views of the storage. They alias Data; the caller must pick the view that
// matches Type's storage (e.g. U16 for f16/bf16 bits, U8 for f8 bits).

func (t *Tensor) F32() []float32     { return view[float32](t.Data, 4) }
func (t *Tensor) F64() []float64     { return view[float64](t.Data, 8) }
func (t *Tensor) C64() []complex64   { return view[complex64](t.Data, 8) }
func (t *Tensor) C128() []complex128 { return view[complex128](t.Data, 16) }
func (t *Tensor) I8() []int8         { return view[int8](t.Data, 1) }
func (t *Tensor) I16() []int16       { return view[int16](t.Data, 2) }
func (t *Tensor) I32() []int32       { return view[int32](t.Data, 4) }
func (t *Tensor) I64() []int64       { return view[int64](t.Data, 8) }
func (t *Tensor) U8() []uint8        { return t.Data }
func (t *Tensor) U16() []uint16      { return view[uint16](t.Data, 2) }
func (t *Tensor) U32() []uint32      { return view[uint32](t.Data, 4) }
func (t *Tensor) U64() []uint64      { return view[uint64](t.Data, 8) }
func (t *Tensor) Bools() []bool      { return view[bool](t.Data, 1) }
