package golden

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/eval"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func scalarValue(v int32) eval.Value {
	t := tensor.New(dtype.S32, nil)
	t.I32()[0] = v
	return eval.ArrayValue(t)
}

func TestRendezvousExchanges(t *testing.T) {
	const n = 4
	ar := &hlo.Instruction{Name: "ar"}
	r := NewRendezvous(n)
	var wg sync.WaitGroup
	got := make([][]int32, n)
	errs := make([]error, n)
	for d := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Two executions of the same instruction must not mix.
			for round := range 2 {
				vals, err := r.Exchange(ar, d, scalarValue(int32(10*round+d)))
				if err != nil {
					errs[d] = err
					return
				}
				for _, v := range vals {
					got[d] = append(got[d], v.T.I32()[0])
				}
			}
			r.Finish(d, nil)
		}()
	}
	wg.Wait()
	for d := range n {
		if errs[d] != nil {
			t.Fatalf("device %d: %v", d, errs[d])
		}
		want := []int32{0, 1, 2, 3, 10, 11, 12, 13}
		for i := range want {
			if i >= len(got[d]) || got[d][i] != want[i] {
				t.Fatalf("device %d got %v, want %v", d, got[d], want)
			}
		}
	}
}

func TestRendezvousReleasesWaitersWhenADeviceStops(t *testing.T) {
	ar := &hlo.Instruction{Name: "ar"}
	for _, stopErr := range []error{nil, errors.New("boom")} {
		r := NewRendezvous(2)
		done := make(chan error)
		go func() {
			_, err := r.Exchange(ar, 0, scalarValue(1))
			done <- err
		}()
		r.Finish(1, stopErr)
		err := <-done
		if err == nil {
			t.Fatalf("stop %v: the waiting device was not released", stopErr)
		}
		if stopErr != nil && !strings.Contains(err.Error(), "device 1 failed: boom") {
			t.Errorf("got %v", err)
		}
		if stopErr == nil && !strings.Contains(err.Error(), "without reaching collective %ar") {
			t.Errorf("got %v", err)
		}
		// Later exchanges fail at once.
		if _, err := r.Exchange(ar, 0, scalarValue(1)); err == nil {
			t.Error("exchange after abort succeeded")
		}
	}
}

// Disjoint groups of one instruction meet separately, each in its own order.
func TestRendezvousGroups(t *testing.T) {
	ar := &hlo.Instruction{Name: "ar"}
	r := NewRendezvous(4)
	groups := [][]int64{{2, 0}, {3, 1}, {2, 0}, {3, 1}}
	got := make([][]int32, 4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for d := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vals, err := r.ExchangeGroup(ar, d, groups[d], scalarValue(int32(d)))
			for _, v := range vals {
				got[d] = append(got[d], v.T.I32()[0])
			}
			errs[d] = err
			r.Finish(d, err)
		}()
	}
	wg.Wait()
	for d := range 4 {
		want := []int32{int32(groups[d][0]), int32(groups[d][1])}
		if errs[d] != nil || len(got[d]) != 2 || got[d][0] != want[0] || got[d][1] != want[1] {
			t.Errorf("device %d: got %v (%v), want %v", d, got[d], errs[d], want)
		}
	}
}

func TestRendezvousGroupErrors(t *testing.T) {
	ar := &hlo.Instruction{Name: "ar"}
	r := NewRendezvous(2)
	if _, err := r.ExchangeGroup(ar, 0, []int64{1}, scalarValue(0)); err == nil || !strings.Contains(err.Error(), "not in its group") {
		t.Errorf("device outside its group: %v", err)
	}
	if _, err := r.ExchangeGroup(ar, 0, []int64{0, 2}, scalarValue(0)); err == nil || !strings.Contains(err.Error(), "names device 2 of 2") {
		t.Errorf("group beyond the devices: %v", err)
	}
	// Members disagreeing about the group fail instead of waiting.
	done := make(chan error)
	go func() {
		_, err := r.ExchangeGroup(ar, 0, []int64{0, 1}, scalarValue(0))
		done <- err
	}()
	waitPending(r, 1)
	if _, err := r.ExchangeGroup(ar, 1, []int64{0, 1}, scalarValue(1)); err != nil {
		t.Fatalf("matching group: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r2 := NewRendezvous(3)
	go func() {
		_, err := r2.ExchangeGroup(ar, 0, []int64{0, 1}, scalarValue(0))
		done <- err
	}()
	waitPending(r2, 1)
	if _, err := r2.ExchangeGroup(ar, 1, []int64{0, 1, 2}, scalarValue(1)); err == nil || !strings.Contains(err.Error(), "meets group") {
		t.Errorf("disagreeing groups: %v", err)
	}
	if err := <-done; err == nil {
		t.Error("the waiting member was not released")
	}
}

// A module declaring one device, run on 4 (-e 4), runs 4 replicas: the
// all-reduce sums all of them and replica-id counts them.
func TestRunEmulatesReplicasOfOneDeviceModule(t *testing.T) {
	m := parse(t, `HloModule m
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
ENTRY e {
  p = s32[] parameter(0)
  ar = s32[] all-reduce(p), replica_groups={}, to_apply=add
  r = u32[] replica-id()
  ROOT t = (s32[], u32[]) tuple(ar, r)
}`)
	var inputs []*tensor.Tensor
	for d := range 4 {
		x := tensor.New(dtype.S32, nil)
		x.I32()[0] = int32(1 << d)
		inputs = append(inputs, x)
	}
	res, err := Run(m, inputs, Options{EmulateDevices: 4})
	if err != nil {
		t.Fatal(err)
	}
	for d := range 4 {
		if s, r := res.Outputs[2*d].I32()[0], res.Outputs[2*d+1].U32()[0]; s != 15 || r != uint32(d) {
			t.Errorf("device %d: sum %d replica %d, want 15 and %d", d, s, r, d)
		}
	}
}

// waitPending waits until n meetings are open (a member is waiting).
func waitPending(r *Rendezvous, n int) {
	for {
		r.mu.Lock()
		k := len(r.slots)
		r.mu.Unlock()
		if k == n {
			return
		}
		runtime.Gosched()
	}
}
