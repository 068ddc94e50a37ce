package eval

// Buffer recycling in loops. A loop body of small ops allocates the same few
// intermediates every step; left to the garbage collector, each step pays
// for fresh (zeroed, often page-faulted) memory and the collector for
// sweeping it. Evaluator.Call instead hands the storage of an intermediate
// that dies (its last user has run) back to the evaluator when it owns that
// storage outright, and the next allocation of that size reuses it.
//
// Ownership is decided where values are made, not guessed: a value is owned
// when its instruction's op is one that always allocates its result (the
// freshOps below, blocked groups) and the result shares no storage with any
// operand (an op may return an operand or a view of it); it stops being
// owned as soon as a user's value shares its storage (a tuple holding it, a
// reshape viewing it, an in-place update). Parameters, constants and
// anything a caller passed in are never owned. With a Trace (intermediates
// kept for the caller) nothing is recycled.

import (
	"os"
	"sync"
	"unsafe"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// recycleDisabled turns recycling off (GOLDTRACE_NO_RECYCLE=1), to compare.
var recycleDisabled = os.Getenv("GOLDTRACE_NO_RECYCLE") == "1"

const (
	recycleMinBytes  = 4 << 10  // smaller buffers are cheap to allocate
	recycleMaxBytes  = 64 << 20 // bound on what the pool holds
	recyclePerLength = 8        // buffers kept per length
)

// recycler holds dead intermediates' storage by byte length.
type recycler struct {
	mu    sync.Mutex
	free  map[int][][]byte
	bytes int
	reuse int // buffers handed out again (tests)
}

// put offers b for reuse.
func (r *recycler) put(b []byte) {
	n := len(b)
	if n < recycleMinBytes || uintptr(unsafe.Pointer(&b[0]))%16 != 0 {
		return // small, or not aligned as tensor storage must be
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bytes+n > recycleMaxBytes || len(r.free[n]) >= recyclePerLength {
		return
	}
	if r.free == nil {
		r.free = map[int][][]byte{}
	}
	r.free[n] = append(r.free[n], b)
	r.bytes += n
}

// get returns a recycled buffer of n bytes, or nil.
func (r *recycler) get(n int) []byte {
	if n < recycleMinBytes {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.free[n]
	if len(l) == 0 {
		return nil
	}
	b := l[len(l)-1]
	l[len(l)-1] = nil
	r.free[n] = l[:len(l)-1]
	r.bytes -= n
	r.reuse++
	return b
}

// newTensor is tensor.New drawing on the evaluator's recycled storage;
// with zero unset the caller writes every element itself.
func (ev *Evaluator) newTensor(t dtype.Type, dims []int64, zero bool) *tensor.Tensor {
	if ev != nil && ev.recycling() {
		if s := ev.newSmall(t, dims, zero); s != nil {
			return s
		}
		if err := tensor.CheckShape(t, dims); err == nil {
			if b := ev.pool.get(int(tensor.NumElements(dims)) * t.Size()); b != nil {
				if zero {
					clear(b)
				}
				return &tensor.Tensor{Type: t, Dims: append([]int64{}, dims...), Data: b}
			}
		}
	}
	if !zero && tensor.CheckShape(t, dims) == nil {
		n := int(tensor.NumElements(dims)) * t.Size()
		return &tensor.Tensor{Type: t, Dims: append([]int64{}, dims...), Data: tensor.StorageForWriting(n)}
	}
	return tensor.New(t, dims)
}

// newF32s is newTensor's storage for n f32 elements.
func (ev *Evaluator) newF32s(n int, zero bool) []float32 {
	if ev != nil && ev.recycling() {
		if b := ev.pool.get(4 * n); b != nil {
			if zero {
				clear(b)
			}
			return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
		}
	}
	return storageOf[float32](n)
}

// storageOf returns n zeroed elements of tensor storage, taking storage
// released by values that died (tensor.Release) when some of that size is
// still alive.
func storageOf[T number](n int) []T {
	if n == 0 {
		return nil
	}
	b := tensor.Storage(n * int(unsafe.Sizeof(*new(T))))
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// releaseStorage offers s, storage from storageOf or storageForWriting that
// nothing will read again, to the next allocation of its size
// (tensor.Release).
func releaseStorage[T number](s []T) {
	if len(s) > 0 {
		tensor.Release(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0]))))
	}
}

// ownsStorage reports whether ev tracks which values' storage it owns, to
// recycle it in loops (below) and elsewhere hand it to tensor.Release when
// the value dies, whose weak pool lets the next allocation of that size
// reuse it if the collector has not freed it yet. Not with a Trace (values
// kept for the caller) nor across devices.
func (ev *Evaluator) ownsStorage() bool {
	return !recycleDisabled && ev.Options.Trace == nil && ev.Options.Exchange == nil
}

// recycling reports whether ev recycles storage: inside while loops only
// (their steps allocate the same buffers over and over; elsewhere a pooled
// buffer might just outlive the garbage it would have been), not when a
// Trace keeps values, nor across devices (another device's evaluator may
// still read a value this one contributed to a collective).
func (ev *Evaluator) recycling() bool {
	return ev.loops > 0 && ev.ownsStorage()
}

// enterLoop marks a while loop running; the returned func ends it, and the
// last loop to end lets the pool's storage go.
func (ev *Evaluator) enterLoop() func() {
	ev.loops++
	return func() {
		if ev.loops--; ev.loops == 0 {
			ev.pool.drain()
			ev.drainBoxes()
			ev.dropIdleRuns()
		}
	}
}

// drain empties the pool.
func (r *recycler) drain() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.free, r.bytes = nil, 0
}

// freshOps always allocate their result (or return an operand's storage,
// which the sharing test catches); nothing else is ever owned.
var freshOps = map[string]bool{"dot": true, "slice": true, "dynamic-slice": true, "broadcast": true,
	"transpose": true, "concatenate": true, "select": true, "compare": true, "convert": true,
	"convolution": true, "gather": true}

// freshOp reports whether in's op allocates its result.
func freshOp(in *hlo.Instruction) bool {
	if freshOps[in.Opcode] {
		return true
	}
	if in.Opcode == "custom-call" {
		return in.CustomCallTarget == FMATarget
	}
	return isElementwiseOp(in.Opcode)
}

// isElementwiseOp reports whether op is evaluated by evalUnary or evalBinary.
func isElementwiseOp(op string) bool {
	elementwiseOnce.Do(func() {
		elementwiseOps = map[string]bool{}
		for op := range ops {
			if registeredAs(op, evalUnary) || registeredAs(op, evalBinary) {
				elementwiseOps[op] = true
			}
		}
	})
	return elementwiseOps[op]
}

var (
	elementwiseOnce sync.Once
	elementwiseOps  map[string]bool // opcodes evaluated by evalUnary or evalBinary
)

// sameStorage reports whether a and b are arrays over exactly the same bytes.
func sameStorage(a, b *tensor.Tensor) bool {
	return a != nil && b != nil && len(a.Data) > 0 && len(a.Data) == len(b.Data) && &a.Data[0] == &b.Data[0]
}

// madeStorage is the storage a call frame allocated for values it owned
// at some point (by first byte, with its length); a nil *madeStorage holds
// nothing. A few entries are searched in a slice (a loop body's step
// makes a handful), more in a map.
type madeStorage struct {
	few  []madeEntry
	many map[*byte]int
}

type madeEntry struct {
	p *byte
	n int
}

// madeFew bounds the entries kept in the slice.
const madeFew = 16

func (m *madeStorage) add(t *tensor.Tensor) {
	if m == nil || t == nil || len(t.Data) == 0 {
		return
	}
	p := &t.Data[0]
	if m.many != nil {
		m.many[p] = len(t.Data)
		return
	}
	for i := range m.few {
		if m.few[i].p == p {
			m.few[i].n = len(t.Data)
			return
		}
	}
	if len(m.few) < madeFew {
		m.few = append(m.few, madeEntry{p, len(t.Data)})
		return
	}
	m.many = make(map[*byte]int, 2*madeFew)
	for _, e := range m.few {
		m.many[e.p] = e.n
	}
	m.many[p] = len(t.Data)
}

// length returns the length of the storage made at p, 0 if none.
func (m *madeStorage) length(p *byte) int {
	if m == nil {
		return 0
	}
	if m.many != nil {
		return m.many[p]
	}
	for _, e := range m.few {
		if e.p == p {
			return e.n
		}
	}
	return 0
}

// drop forgets v's storage (a value kept past the frame).
func (m *madeStorage) drop(v Value) {
	if m == nil {
		return
	}
	for _, t := range v.Leaves() {
		if len(t.Data) == 0 {
			continue
		}
		p := &t.Data[0]
		if m.many != nil {
			delete(m.many, p)
			continue
		}
		for i := range m.few {
			if m.few[i].p == p {
				m.few = append(m.few[:i], m.few[i+1:]...)
				break
			}
		}
	}
}

// reset empties m, keeping its slice.
func (m *madeStorage) reset() {
	clear(m.few)
	m.few, m.many = m.few[:0], nil
}

// rootOwnedOf returns, for a computation's root tuple (operands args),
// which elements are whole storage the frame allocated (made), the first
// element of each such storage only. When the frame ends nothing but its
// result holds such storage (every other value of the frame dies with it,
// views and tuples that took it included), so evalWhile may recycle it
// once the next step's state no longer holds it.
func rootOwnedOf(buf []bool, args []Value, made *madeStorage) []bool {
	ro := append(buf[:0], make([]bool, len(args))...)
	var seen map[*byte]bool // first bytes taken, once past a few (else the earlier elements are scanned)
	for i, a := range args {
		t := a.T
		if t == nil || len(t.Data) == 0 || made.length(&t.Data[0]) != len(t.Data) {
			continue
		}
		if seen != nil {
			if seen[&t.Data[0]] {
				continue
			}
		} else if taken(args[:i], ro, &t.Data[0]) {
			continue
		}
		if seen == nil && i >= 16 {
			seen = map[*byte]bool{}
			for j, o := range ro[:i] {
				if o {
					seen[&args[j].T.Data[0]] = true
				}
			}
		}
		if seen != nil {
			seen[&t.Data[0]] = true
		}
		ro[i] = true
	}
	return ro
}

// taken reports whether an element of args marked in ro starts at p.
func taken(args []Value, ro []bool, p *byte) bool {
	for j, o := range ro[:len(args)] {
		if o && &args[j].T.Data[0] == p {
			return true
		}
	}
	return false
}

// recycleReplaced hands the storage of the elements of a loop's old state
// that the body made and owned (ownedOld) back to the pool once the new
// state has replaced them, unless the new state still holds it.
func (ev *Evaluator) recycleReplaced(old Value, ownedOld []bool, next Value) {
	for i, o := range ownedOld {
		if !o || i >= len(old.Tuple) {
			continue
		}
		if t := old.Tuple[i].T; t != nil && !shares(next, t) && !ev.recycleBox(t) {
			ev.pool.put(t.Data)
		}
	}
}

// shares reports whether any array leaf of v shares storage with t.
func shares(v Value, t *tensor.Tensor) bool {
	if t == nil || len(t.Data) == 0 {
		return false
	}
	lo := uintptr(unsafe.Pointer(&t.Data[0]))
	return sharesSpan(v, lo, lo+uintptr(len(t.Data)))
}

// sharesSpan reports whether any array leaf of v overlaps [lo, hi).
func sharesSpan(v Value, lo, hi uintptr) bool {
	if v.T != nil {
		if len(v.T.Data) == 0 {
			return false
		}
		p := uintptr(unsafe.Pointer(&v.T.Data[0]))
		return p < hi && lo < p+uintptr(len(v.T.Data))
	}
	for _, e := range v.Tuple {
		if sharesSpan(e, lo, hi) {
			return true
		}
	}
	return false
}

// sharesValue reports whether any array leaf of v shares storage with one
// of a's.
func sharesValue(v, a Value) bool {
	if a.T != nil {
		return shares(v, a.T)
	}
	for _, e := range a.Tuple {
		if sharesValue(v, e) {
			return true
		}
	}
	return false
}

// freeF32s gives scratch from newF32s back to the pool (inside a loop;
// elsewhere it is left to the collector). Nothing may hold s afterwards.
func (ev *Evaluator) freeF32s(s []float32) {
	if ev == nil || len(s) == 0 || !ev.recycling() {
		return
	}
	ev.pool.put(unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s)))
}
