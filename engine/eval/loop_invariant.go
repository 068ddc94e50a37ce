package eval

// Loop-invariant operands. A while body that hands a state element back
// unchanged (its root tuple returns the very get-tuple-element it read)
// sees the same storage at every step, and nothing writes to that storage
// while the loop runs: ops never modify their operands, and the in-place
// updates of while_inplace.go write only into the loop's private copies of
// other elements. evalWhile marks that storage frozen for the loop's
// duration; a small-row product whose B lies in frozen storage (a scan's
// recurrent weights) packs B once and keeps the packing until the loop
// ends, instead of packing, or reading unpacked, the same B every step.

import (
	"unsafe"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

const (
	// prepackMaxRows bounds the products that use a kept packing: with more
	// rows, packing B per call is a small part of the work anyway.
	prepackMaxRows = 128
	// prepackMaxBytes bounds the packings kept at once.
	prepackMaxBytes = 128 << 20
)

// frozenSpan is storage [lo, hi) that does not change while a loop runs.
type frozenSpan struct{ lo, hi uintptr }

type packKey struct {
	ptr     uintptr
	k, n    int
	layout  gemmLayout
	kernel  *gemmKernel[float32]
	wordLen int
}

// invariants are the frozen spans of the running loops and the packings of
// B operands found in them.
type invariants struct {
	spans  []frozenSpan
	packs  map[packKey][]float32
	bytes  int
	packed int // packings made (tests)
	// scans are the subnormal scans of frozen operands (scanKey), each
	// made once while its storage is frozen: a scan's recurrent weights
	// are read by every step's dot, whose operands are scanned for
	// flushing (flush_ops.go).
	scans   map[scanKey]bool
	scanned int // scans made (tests)
}

// scanKey names a frozen array: its storage and element type.
type scanKey struct {
	span frozenSpan
	elem dtype.Type
}

// scanMinBytes: smaller operands are scanned every time (a map look-up
// costs as much).
const scanMinBytes = 4096

// operandHasSubnormal is hasSubnormal(t), remembered for t's storage while
// it is frozen (nothing writes to it then, so the answer cannot change).
func (ev *Evaluator) operandHasSubnormal(t *tensor.Tensor) bool {
	if ev == nil || len(ev.inv.spans) == 0 || len(t.Data) < scanMinBytes {
		return hasSubnormal(t)
	}
	s, _ := span(t)
	inv := &ev.inv
	if !inv.frozen(s.lo, int(s.hi-s.lo)) {
		return hasSubnormal(t)
	}
	key := scanKey{s, t.Type}
	if r, ok := inv.scans[key]; ok {
		return r
	}
	r := hasSubnormal(t)
	if inv.scans == nil {
		inv.scans = map[scanKey]bool{}
	}
	inv.scans[key] = r
	inv.scanned++
	return r
}

func span(t *tensor.Tensor) (frozenSpan, bool) {
	if t == nil || len(t.Data) == 0 {
		return frozenSpan{}, false
	}
	lo := uintptr(unsafe.Pointer(&t.Data[0]))
	return frozenSpan{lo, lo + uintptr(len(t.Data))}, true
}

// freezeInvariants marks the storage of while w's pass-through state
// elements frozen; the returned func ends that (and drops the packings no
// longer covered).
func (ev *Evaluator) freezeInvariants(w *whilePlan, state Value) func() {
	if w == nil || len(w.invariant) == 0 || !state.IsTuple() {
		return func() {}
	}
	inv := &ev.inv
	mark := len(inv.spans) // values kept by loop_hoist.go add theirs after
	for _, i := range w.invariant {
		if i >= len(state.Tuple) {
			continue
		}
		for _, t := range state.Tuple[i].Leaves() {
			if s, ok := span(t); ok {
				inv.spans = append(inv.spans, s)
			}
		}
	}
	return func() {
		inv.spans = inv.spans[:mark]
		for key, p := range inv.packs {
			if !inv.frozen(key.ptr, key.wordLen*4) {
				delete(inv.packs, key)
				inv.bytes -= 4 * len(p)
			}
		}
		for key := range inv.scans {
			if !inv.frozen(key.span.lo, int(key.span.hi-key.span.lo)) {
				delete(inv.scans, key)
			}
		}
	}
}

// frozenValue reports whether t's storage lies in a frozen span.
func (ev *Evaluator) frozenValue(t *tensor.Tensor) bool {
	s, ok := span(t)
	return ok && ev.inv.frozen(s.lo, int(s.hi-s.lo))
}

// frozen reports whether [p, p+n) lies in one frozen span.
func (inv *invariants) frozen(p uintptr, n int) bool {
	for _, s := range inv.spans {
		if s.lo <= p && p+uintptr(n) <= s.hi {
			return true
		}
	}
	return false
}

// packedInvariant returns B packed whole for the f32 kernel when b (k×n as
// laid out by lb) lies in frozen storage, packing it on first use; nil when
// it does not, when the packing would not fit the budget, or when f32
// products do not run on the packed kernels.
func (ev *Evaluator) packedInvariant(b []float32, lb gemmLayout, k, n int) ([]float32, *gemmKernel[float32]) {
	return ev.packedInvariantFor(b, lb, k, n, kernelFor[float32]())
}

// packedInvariantFor is packedInvariant for kernel kn (a dot in YNNPACK's
// order packs for its K blocks, dot_ynn.go).
func (ev *Evaluator) packedInvariantFor(b []float32, lb gemmLayout, k, n int, kn *gemmKernel[float32]) ([]float32, *gemmKernel[float32]) {
	if ev == nil || floatsOnBLAS || len(ev.inv.spans) == 0 || len(b) == 0 || k == 0 || n == 0 {
		return nil, nil
	}
	inv := &ev.inv
	ptr := uintptr(unsafe.Pointer(&b[0]))
	// The words the product reads: the last element is at (k-1)*rs+(n-1)*cs.
	words := (k-1)*lb.rs + (n-1)*lb.cs + 1
	if words > len(b) || !inv.frozen(ptr, 4*words) {
		return nil, nil
	}
	key := packKey{ptr, k, n, gemmLayout{0, lb.rs, lb.cs}, kn, words}
	if p, ok := inv.packs[key]; ok {
		return p, kn
	}
	size := 4 * k * roundUp(n, kn.nr)
	if inv.bytes+size > prepackMaxBytes {
		return nil, nil
	}
	p := kn.packWhole(b, lb, k, n)
	if inv.packs == nil {
		inv.packs = map[packKey][]float32{}
	}
	inv.packs[key] = p
	inv.bytes += size
	inv.packed++
	return p, kn
}
