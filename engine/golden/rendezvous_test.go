package golden

import (
	"errors"
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
