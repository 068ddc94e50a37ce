package eval

// Small tensors in one allocation, reused in loops. A loop body of small
// ops makes the same few scalars and short arrays at every step: the
// counter, the condition's pred, a group's f32[16]. Each is a tensor
// struct, its dims and its storage; in a box they are one allocation, and
// once the value is dead (the same proof the storage pool takes: Call's
// ownership, recycle.go) the box goes to a free list the next step's
// values come from. Outside loops nothing is kept.
//
// A box is recognized from its tensor alone: the struct lies at a fixed
// offset past the storage and the dims slice points into the box. A view
// that took a box's storage and dims has its own struct elsewhere, so it
// is never taken for the box.

import (
	"unsafe"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// scalarBox holds a tensor of at most 16 bytes of rank at most 1;
// smallBox one of at most smallBoxBytes of rank at most 4. The storage
// comes first, aligned as the allocation is (16 bytes).
type scalarBox struct {
	w    [2]uint64
	dims [1]int64
	t    tensor.Tensor
}

const smallBoxBytes = 256

type smallBox struct {
	w    [smallBoxBytes / 8]uint64
	dims [4]int64
	t    tensor.Tensor
}

// maxFreeBoxes bounds the boxes of each kind kept for reuse.
const maxFreeBoxes = 64

// boxes are the dead boxes of the running loops.
type boxes struct {
	scalars []*scalarBox
	small   []*smallBox
}

// newScalar returns a zeroed rank-0 tensor of type t (at most 16 bytes),
// in a box a dead value left if any. Call's thread only.
func (ev *Evaluator) newScalar(t dtype.Type) *tensor.Tensor {
	var b *scalarBox
	if k := len(ev.boxes.scalars); k > 0 {
		b = ev.boxes.scalars[k-1]
		ev.boxes.scalars[k-1] = nil
		ev.boxes.scalars = ev.boxes.scalars[:k-1]
		b.w = [2]uint64{}
	} else {
		b = &scalarBox{}
	}
	b.t = tensor.Tensor{Type: t, Dims: b.dims[:0:0], Data: unsafe.Slice((*byte)(unsafe.Pointer(&b.w[0])), t.Size())}
	return &b.t
}

// newSmall returns a tensor of type t and dims in a box when it fits one
// (storage zeroed when zero is set), or nil.
func (ev *Evaluator) newSmall(t dtype.Type, dims []int64, zero bool) *tensor.Tensor {
	if len(dims) > 4 || tensor.CheckShape(t, dims) != nil {
		return nil
	}
	n := int(tensor.NumElements(dims)) * t.Size()
	if n > smallBoxBytes || n == 0 {
		return nil
	}
	ev.pool.mu.Lock()
	var b *smallBox
	if k := len(ev.boxes.small); k > 0 {
		b = ev.boxes.small[k-1]
		ev.boxes.small[k-1] = nil
		ev.boxes.small = ev.boxes.small[:k-1]
	}
	ev.pool.mu.Unlock()
	if b == nil {
		b = &smallBox{}
	} else if zero {
		b.w = [smallBoxBytes / 8]uint64{}
	}
	r := copy(b.dims[:], dims)
	b.t = tensor.Tensor{Type: t, Dims: b.dims[:r:r], Data: unsafe.Slice((*byte)(unsafe.Pointer(&b.w[0])), n)}
	return &b.t
}

// recycleBox keeps t's box for reuse when t is a box's tensor. The caller
// has established that nothing holds t or its storage any more.
func (ev *Evaluator) recycleBox(t *tensor.Tensor) bool {
	if t == nil || len(t.Data) == 0 {
		return false
	}
	base := uintptr(unsafe.Pointer(&t.Data[0]))
	self := uintptr(unsafe.Pointer(t))
	dims := uintptr(unsafe.Pointer(unsafe.SliceData(t.Dims)))
	switch {
	case len(t.Data) <= 16 && self == base+unsafe.Offsetof(scalarBox{}.t) && dims == base+unsafe.Offsetof(scalarBox{}.dims):
		if len(ev.boxes.scalars) < maxFreeBoxes {
			ev.boxes.scalars = append(ev.boxes.scalars, (*scalarBox)(unsafe.Pointer(&t.Data[0])))
		}
		return true
	case len(t.Data) <= smallBoxBytes && self == base+unsafe.Offsetof(smallBox{}.t) && dims == base+unsafe.Offsetof(smallBox{}.dims):
		ev.pool.mu.Lock()
		if len(ev.boxes.small) < maxFreeBoxes {
			ev.boxes.small = append(ev.boxes.small, (*smallBox)(unsafe.Pointer(&t.Data[0])))
		}
		ev.pool.mu.Unlock()
		return true
	}
	return false
}

// drainBoxes lets the kept boxes go.
func (ev *Evaluator) drainBoxes() {
	ev.pool.mu.Lock()
	defer ev.pool.mu.Unlock()
	clear(ev.boxes.scalars)
	clear(ev.boxes.small)
	ev.boxes.scalars, ev.boxes.small = ev.boxes.scalars[:0], ev.boxes.small[:0]
}
