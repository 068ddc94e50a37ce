package golden

import (
	"fmt"
	"sync"

	"goldtrace/engine/eval"
	"goldtrace/engine/hlo"
)

// Rendezvous is where the emulated devices of one run meet at collectives:
// each device's evaluator contributes its operand and gets back every
// device's, and computes its own share of the collective from them (group
// membership and the reduction belong to the evaluator, which knows the
// instruction's semantics).
//
// Devices run the same module, so the k-th execution of a collective
// instruction on one device meets the k-th execution of the same instruction
// on the others. It is the driver half of multi-device emulation; the
// evaluator's collectives call Exchange once eval.Options carries it.
type Rendezvous struct {
	n        int
	mu       sync.Mutex
	slots    map[rvKey]*rvSlot
	seq      []map[*hlo.Instruction]int
	finished []bool
	abort    chan struct{}
	abortErr error
}

type rvKey struct {
	in  *hlo.Instruction
	seq int
}

type rvSlot struct {
	vals  []eval.Value
	have  []bool
	count int
	ready chan struct{}
}

// NewRendezvous returns a meeting point for n devices.
func NewRendezvous(n int) *Rendezvous {
	r := &Rendezvous{n: n, slots: map[rvKey]*rvSlot{}, finished: make([]bool, n), abort: make(chan struct{})}
	r.seq = make([]map[*hlo.Instruction]int, n)
	for i := range r.seq {
		r.seq[i] = map[*hlo.Instruction]int{}
	}
	return r
}

// Exchange contributes v from device dev at instruction in and blocks until
// every device has contributed at the same point; it returns the
// contributions indexed by device. It fails instead of waiting forever when a
// device has stopped (finished or failed) without getting there.
func (r *Rendezvous) Exchange(in *hlo.Instruction, dev int, v eval.Value) ([]eval.Value, error) {
	r.mu.Lock()
	if r.abortErr != nil {
		r.mu.Unlock()
		return nil, r.abortErr
	}
	key := rvKey{in, r.seq[dev][in]}
	r.seq[dev][in]++
	s := r.slots[key]
	if s == nil {
		s = &rvSlot{vals: make([]eval.Value, r.n), have: make([]bool, r.n), ready: make(chan struct{})}
		r.slots[key] = s
	}
	s.vals[dev], s.have[dev] = v, true
	s.count++
	if s.count == r.n {
		delete(r.slots, key)
		close(s.ready)
	} else if err := r.stuckLocked(); err != nil {
		r.abortLocked(err)
		r.mu.Unlock()
		return nil, err
	}
	r.mu.Unlock()
	select {
	case <-s.ready:
		return s.vals, nil
	case <-r.abort:
		return nil, r.abortErr
	}
}

// Finish records that device dev has stopped, with err nil when it completed.
// Devices waiting for it are released with an error.
func (r *Rendezvous) Finish(dev int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finished[dev] = true
	if err != nil {
		r.abortLocked(fmt.Errorf("device %d failed: %w", dev, err))
	} else if e := r.stuckLocked(); e != nil {
		r.abortLocked(e)
	}
}

// stuckLocked reports a pending meeting that a stopped device can never join.
func (r *Rendezvous) stuckLocked() error {
	for key, s := range r.slots {
		for d, done := range r.finished {
			if done && !s.have[d] {
				return fmt.Errorf("device %d finished without reaching collective %%%s", d, key.in.Name)
			}
		}
	}
	return nil
}

func (r *Rendezvous) abortLocked(err error) {
	if r.abortErr == nil {
		r.abortErr = err
		close(r.abort)
	}
}
