package tensor

import (
	"sync"
	"unsafe"
	"weak"
)

// Reuse of dead storage between garbage collections. A large tensor that
// dies (its owner knows no one else holds its storage) is handed to Release;
// the next allocation of the same size takes that storage back instead of
// growing the heap. The pool holds only weak pointers: storage not taken
// again by the next collection is freed as it would have been, so the pool
// never keeps memory alive, it only lets a dead buffer serve again before
// the collector gets to it. The heap (and the resident set) then stays near
// what is live rather than growing by the collector's slack with every
// large allocation.

// reuseMinBytes: smaller storage is left to the allocator.
const reuseMinBytes = 256 << 10

// reusePerLength bounds the entries kept per byte length.
const reusePerLength = 16

var reusePool struct {
	mu   sync.Mutex
	free map[int][]weak.Pointer[byte]
}

// Release offers the storage b for reuse by a later allocation of len(b)
// bytes. The caller promises that nothing reads or writes b afterwards.
func Release(b []byte) {
	n := len(b)
	if n < reuseMinBytes || uintptr(unsafe.Pointer(&b[0]))%16 != 0 {
		return
	}
	w := weak.Make(&b[0])
	reusePool.mu.Lock()
	defer reusePool.mu.Unlock()
	if reusePool.free == nil {
		reusePool.free = map[int][]weak.Pointer[byte]{}
	}
	l := reusePool.free[n]
	if len(l) >= reusePerLength {
		// Drop entries the collector has emptied, then the oldest.
		k := 0
		for _, e := range l {
			if e.Value() != nil {
				l[k] = e
				k++
			}
		}
		l = l[:k]
		if len(l) >= reusePerLength {
			l = append(l[:0], l[1:]...)
		}
	}
	reusePool.free[n] = append(l, w)
}

// reused returns released storage of n bytes still alive, or nil.
func reused(n int) []byte {
	if n < reuseMinBytes {
		return nil
	}
	reusePool.mu.Lock()
	defer reusePool.mu.Unlock()
	l := reusePool.free[n]
	for len(l) > 0 {
		e := l[len(l)-1]
		l[len(l)-1] = weak.Pointer[byte]{}
		l = l[:len(l)-1]
		if p := e.Value(); p != nil {
			reusePool.free[n] = l
			return unsafe.Slice(p, n)
		}
	}
	delete(reusePool.free, n)
	return nil
}
