package sim

import (
	"sync"
	"sync/atomic"

	"goldtrace/kernel/ir/irpb"
)

func (in *instance) execBlock(ss []stmt) error {
	for _, s := range ss {
		if s.inst != nil {
			clearUpper()
			if err := s.inst.run(in, s.inst); err != nil {
				return err
			}
			continue
		}
		if err := in.execLoop(s.loop); err != nil {
			return err
		}
	}
	return nil
}

func (in *instance) execLoop(l *cloop) error {
	if l.stop <= l.start {
		return nil
	}
	iters := (l.stop - l.start + l.step - 1) / l.step
	r := in.r
	if l.parallel && iters > 1 && r.par > 1 && !in.nested && r.acquire() {
		defer r.release()
		workers := int(min(int64(r.par), iters))
		// worker 0 is this goroutine (its own locals, reused); the others
		// get fresh storage for the body's local tensors.
		ws := make([]*instance, workers)
		for w := range ws {
			c := *in
			c.vars = append([]int64{}, in.vars...)
			c.nested = true
			c.buf = getScratch()
			if w > 0 {
				c.stores = append([]*storage{}, in.stores...)
				for _, id := range l.locals {
					c.stores[id] = in.freshStorage(id)
				}
			}
			ws[w] = &c
		}
		err := parallelWorkers(workers, int(iters), func(w, i int) error {
			wi := ws[w]
			wi.vars[l.v] = l.start + int64(i)*l.step
			return wi.execBlock(l.body)
		})
		for _, wi := range ws {
			putScratch(wi.buf)
		}
		return err
	}
	for v := l.start; v < l.stop; v += l.step {
		in.vars[l.v] = v
		if err := in.execBlock(l.body); err != nil {
			return err
		}
	}
	return nil
}

// acquire reserves the right to fan a loop out over goroutines (only one
// fan-out at a time per run, so program instances and loops together stay
// within Parallel goroutines).
func (r *runState) acquire() bool {
	r.fanMu.Lock()
	defer r.fanMu.Unlock()
	if r.fanning || r.instancesParallel {
		return false
	}
	r.fanning = true
	return true
}

func (r *runState) release() {
	r.fanMu.Lock()
	r.fanning = false
	r.fanMu.Unlock()
}

// parallelWorkers runs f(worker, item) for items 0..n-1 on `workers`
// goroutines taking items in order from a shared counter. On failure it
// returns the error of the lowest failing item, having run every item below
// it: the error a serial run would give, whatever the schedule.
func parallelWorkers(workers, n int, f func(w, i int) error) error {
	errs := make([]error, n)
	next := make(chan int, n)
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	var failedAt atomic.Int64
	failedAt.Store(int64(n))
	var wg sync.WaitGroup
	work := func(w int) {
		for i := range next {
			if int64(i) > failedAt.Load() {
				continue // beyond a failed item: its error wins anyway
			}
			if err := safeCall(func() error { return f(w, i) }); err != nil {
				errs[i] = err
				for {
					cur := failedAt.Load()
					if int64(i) >= cur || failedAt.CompareAndSwap(cur, int64(i)) {
						break
					}
				}
			}
		}
	}
	for w := 1; w < workers; w++ {
		wg.Add(1)
		go func() { defer wg.Done(); work(w) }()
	}
	work(0)
	wg.Wait()
	if at := failedAt.Load(); at < int64(n) {
		return errs[at]
	}
	return nil
}

func identityMap(r int) []int {
	m := make([]int, r)
	for i := range m {
		m[i] = i
	}
	return m
}

// domMask evaluates the instruction's mask over its domain (nil: no mask).
func (in *instance) domMask(ci *cinst, dom []int) []bool {
	if len(ci.mask) == 0 {
		return nil
	}
	n := 1
	for _, d := range dom {
		n *= d
	}
	keep := make([]bool, n)
	tileMaskFor(in, &maskCtx{preds: ci.mask, axisMap: identityMap(len(dom))}, dom, keep)
	return keep
}

// srcMap maps a source tile's axes onto the domain (aligned as alignSrc
// does; a broadcast axis maps nowhere).
func srcMap(shape, dom []int) []int {
	m := make([]int, len(shape))
	drop, off, _ := alignSrc(shape, dom)
	for k := range shape {
		d := off + k - drop
		if k < drop || (shape[k] == 1 && dom[d] != 1) {
			m[k] = -1
		} else {
			m[k] = d
		}
	}
	return m
}

// srcDom resolves source k and gathers it broadcast to dom into scratch slot.
func (in *instance) srcDom(ci *cinst, k int, dom []int, slot int) ([]float64, view, error) {
	a := ci.src[k]
	var mc *maskCtx
	if len(ci.mask) > 0 {
		mc = &maskCtx{preds: ci.mask, axisMap: srcMap(a.shape, dom)}
	}
	v, err := in.resolve(ci, a, mc, ci.skipOOB())
	if err != nil {
		return nil, v, err
	}
	buf := in.buf.get(slot, prod(dom))
	in.gather(v, dom, buf)
	return buf, v, nil
}

func (ci *cinst) skipOOB() bool {
	s, _ := ci.str("oob_mode", "error")
	return s == "skip"
}

// writeAcc writes vals (row-major over a's tile) to access a whose axes map
// onto the domain as axisMap; masked-out elements are not written.
func (in *instance) writeAcc(ci *cinst, a *cacc, axisMap []int, vals []float64, extraKeep []bool) error {
	return in.writeAccX(ci, a, axisMap, vals, extraKeep, false)
}

// writeAccX is writeAcc; exact: vals need no rounding to a's dtype.
func (in *instance) writeAccX(ci *cinst, a *cacc, axisMap []int, vals []float64, extraKeep []bool, exact bool) error {
	var mc *maskCtx
	var keep []bool
	if len(ci.mask) > 0 {
		mc = &maskCtx{preds: ci.mask, axisMap: axisMap}
		keep = make([]bool, a.n)
		tileMaskFor(in, mc, a.shape, keep)
	}
	if extraKeep != nil {
		if keep == nil {
			keep = extraKeep
		} else {
			for i := range keep {
				keep[i] = keep[i] && extraKeep[i]
			}
		}
	}
	v, err := in.resolve(ci, a, mc, ci.skipOOB())
	if err != nil {
		return err
	}
	if a.t.Tf32 && !exact {
		roundSlice(a.dt, vals)
		roundTF32(vals)
		exact = true
	}
	if exact {
		in.scatterExact(v, vals, keep)
	} else {
		in.scatter(v, vals, keep)
	}
	return nil
}

// writeDst writes vals over the domain (dst[0]'s tile) to dst[0].
func (in *instance) writeDst(ci *cinst, vals []float64) error {
	d := ci.dst[0]
	return in.writeAcc(ci, d, identityMap(len(d.shape)), vals, nil)
}

func prod(s []int) int {
	n := 1
	for _, x := range s {
		n *= x
	}
	return n
}

var _ = irpb.Cmp_LT
