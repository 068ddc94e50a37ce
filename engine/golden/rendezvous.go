package golden

import (
	"fmt"
	"slices"
	"sync"

	"goldtrace/engine/eval"
	"goldtrace/engine/hlo"
)

// Rendezvous is where the emulated devices of one run meet at collectives:
// each device's evaluator contributes its operands and gets back those of
// every device in its group, and computes its own share of the collective
// from them (group membership and the reduction belong to the evaluator,
// which knows the instruction's semantics).
//
// Devices run the same module, so the k-th execution of a collective
// instruction on one device meets the k-th execution of the same instruction
// on the other members of its group. Groups of one instruction are disjoint,
// so a meeting is named by the instruction, the execution count and the
// group's first member.
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
	in     *hlo.Instruction
	seq    int
	leader int64
}

type rvSlot struct {
	group []int64
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

// Exchange is ExchangeGroup with every device in the group, in device order.
func (r *Rendezvous) Exchange(in *hlo.Instruction, dev int, v eval.Value) ([]eval.Value, error) {
	all := make([]int64, r.n)
	for i := range all {
		all[i] = int64(i)
	}
	return r.ExchangeGroup(in, dev, all, v)
}

// ExchangeGroup contributes v from device dev at instruction in and blocks
// until every device of group (dev among them) has contributed at the same
// point; it returns the contributions in group order. It fails instead of
// waiting forever when a member has stopped (finished or failed) without
// getting there, and when members disagree about the group.
func (r *Rendezvous) ExchangeGroup(in *hlo.Instruction, dev int, group []int64, v eval.Value) ([]eval.Value, error) {
	pos := -1
	for i, d := range group {
		if d < 0 || d >= int64(r.n) {
			return nil, fmt.Errorf("collective %%%s: group %v names device %d of %d", in.Name, group, d, r.n)
		}
		if d == int64(dev) {
			pos = i
		}
	}
	if pos < 0 {
		return nil, fmt.Errorf("collective %%%s: device %d is not in its group %v", in.Name, dev, group)
	}
	r.mu.Lock()
	if r.abortErr != nil {
		r.mu.Unlock()
		return nil, r.abortErr
	}
	key := rvKey{in, r.seq[dev][in], group[0]}
	r.seq[dev][in]++
	s := r.slots[key]
	if s == nil {
		s = &rvSlot{group: group, vals: make([]eval.Value, len(group)), have: make([]bool, len(group)), ready: make(chan struct{})}
		r.slots[key] = s
	} else if !slices.Equal(s.group, group) {
		err := fmt.Errorf("collective %%%s: device %d meets group %v, another member group %v", in.Name, dev, group, s.group)
		r.abortLocked(err)
		r.mu.Unlock()
		return nil, err
	}
	s.vals[pos], s.have[pos] = v, true
	s.count++
	if s.count == len(group) {
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

// stuckLocked reports a pending meeting that a stopped member can never join.
func (r *Rendezvous) stuckLocked() error {
	for key, s := range r.slots {
		for i, d := range s.group {
			if r.finished[d] && !s.have[i] {
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
