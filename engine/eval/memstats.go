package eval

import (
	"sync"
	"unsafe"
)

// MemoryStats, set in Options.Memory, records the largest total size of
// the values live at once while computations run: the quantity issue 12's
// memory bound is stated in (peak RSS ≤ 1.5 × (inputs + outputs + this)).
// A value is live from the instruction that makes it until its last user
// has run (Call drops it then); values sharing storage (tuple elements,
// views) count once. Scratch an op uses internally is not a value.
type MemoryStats struct {
	mu   sync.Mutex
	refs map[unsafe.Pointer]int
	live int64
	// Peak is the largest live total seen, in bytes.
	Peak int64
}

func (s *MemoryStats) add(v Value) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refs == nil {
		s.refs = map[unsafe.Pointer]int{}
	}
	for _, t := range v.Leaves() {
		if len(t.Data) == 0 {
			continue
		}
		p := unsafe.Pointer(unsafe.SliceData(t.Data))
		if s.refs[p] == 0 {
			s.live += int64(len(t.Data))
		}
		s.refs[p]++
	}
	s.Peak = max(s.Peak, s.live)
}

func (s *MemoryStats) drop(v Value) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range v.Leaves() {
		if len(t.Data) == 0 {
			continue
		}
		p := unsafe.Pointer(unsafe.SliceData(t.Data))
		switch n := s.refs[p]; {
		case n > 1:
			s.refs[p] = n - 1
		case n == 1:
			delete(s.refs, p)
			s.live -= int64(len(t.Data))
		}
	}
}
