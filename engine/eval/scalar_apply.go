package eval

// The per-element loops of the ops that apply a called computation, run on
// compiled scalar programs (scalar.go). Each returns ok=false, touching
// nothing, when the program's signature does not fit the operands, so the
// caller falls back to its interpreter loop (which reports the mismatch).

import (
	"math"
	"os"
	"sync"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// typesOf lists the element types of ts.
func typesOf(ts ...*tensor.Tensor) []dtype.Type {
	out := make([]dtype.Type, len(ts))
	for i, t := range ts {
		out[i] = t.Type
	}
	return out
}

// firstError collects the first error of parallel workers.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (f *firstError) set(err error) {
	if err == nil {
		return
	}
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
}

// workOf estimates a loop's cost for parallelForWork: items × applications
// per item × program length.
func (p *scalarProgram) workOf(items, perItem int64) int {
	return int(items * max(perItem, 1) * int64(len(p.steps)+1))
}

// scalarReduce folds runLen contiguous elements of each run tensor per
// result element, starting from the inits, as reduce's reducer does; results
// go to outs. Groups are independent, so they run in parallel.
func scalarReduce(p *scalarProgram, runs, inits, outs []*tensor.Tensor, groups, runLen int64) (bool, error) {
	n := len(runs)
	if !p.takes(append(typesOf(inits...), typesOf(runs...)...)...) || !p.returns(typesOf(inits...)...) {
		return false, nil
	}
	xs := make([]regArray, n)
	for i, x := range runs {
		xs[i] = toRegs(x)
	}
	init := make([]regArray, n)
	for i, x := range inits {
		init[i] = toRegs(x)
	}
	var fe firstError
	parallelForWork(int(groups), p.workOf(groups, runLen), func(lo, hi int) {
		m := p.machine()
		for g := int64(lo); g < int64(hi); g++ {
			for i := range n {
				m.set(i, init[i], 0)
			}
			for k := g * runLen; k < (g+1)*runLen; k++ {
				for i := range n {
					m.set(n+i, xs[i], k)
				}
				m.run()
				m.feedBack(n)
			}
			m.storeParams(outs, g)
		}
		fe.set(m.err)
	})
	return true, fe.err
}

// scalarLanes is how many elements (a map's, a prefix scan's rows) run in
// lockstep (runLanes).
const scalarLanes = 16

// scalarLaneSet is a worker's scalarLanes machines of one program and the
// kernel steps' operand and result scratch.
type scalarLaneSet struct {
	p      *scalarProgram
	ms     []*scalarMachine
	xs, os [scalarLanes]float32
}

func (p *scalarProgram) newLanes() *scalarLaneSet {
	l := &scalarLaneSet{p: p, ms: make([]*scalarMachine, scalarLanes)}
	for i := range l.ms {
		l.ms[i] = p.machine()
	}
	return l
}

// run runs the program on batch (a prefix of ms) in lockstep.
func (l *scalarLaneSet) run(batch []*scalarMachine) { l.p.runLanes(batch, l.xs[:], l.os[:]) }

// report hands the machines' first error to fe.
func (l *scalarLaneSet) report(fe *firstError) {
	for _, m := range l.ms {
		fe.set(m.err)
	}
}

// storeParams stores the machine's first len(outs) parameters, a fold's
// accumulators, as element k of outs.
func (m *scalarMachine) storeParams(outs []*tensor.Tensor, k int64) {
	for i, o := range outs {
		pr := m.p.params[i]
		storeReg(o, k, m.r[pr.reg:pr.reg+slots(pr.typ)])
	}
}

// scalarReduceWindow is scalarReduce over the windows of g.
func scalarReduceWindow(p *scalarProgram, g *windowGeom, inputs, inits, outs []*tensor.Tensor) (bool, error) {
	n := len(inputs)
	if !p.takes(append(typesOf(inits...), typesOf(inputs...)...)...) || !p.returns(typesOf(inits...)...) {
		return false, nil
	}
	xs := make([]regArray, n)
	for i, x := range inputs {
		xs[i] = toRegs(x)
	}
	init := make([]regArray, n)
	for i, x := range inits {
		init[i] = toRegs(x)
	}
	total := tensor.NumElements(g.out)
	var fe firstError
	if d, ok := g.prefixScan(); ok && !windowFastDisabled {
		// A prefix-scan geometry (cumlogsumexp and other scans with a
		// reducer of their own): window i folds inputs 0..e(i) in order from
		// the init values, which is window i-1's fold continued over the
		// inputs it adds, the same steps in the same order.
		// Rows go scalarLanes at a time in lockstep (runLanes), so that
		// the reducer's exp and log1p run on vector lanes across rows.
		outer, inner, nIn, mOut, last := g.prefixRows(d)
		rows := outer * inner
		batches := (rows + scalarLanes - 1) / scalarLanes
		parallelForWork(int(batches), p.workOf(outer*nIn*inner, 1), func(lo, hi int) {
			lanes := p.newLanes()
			defer lanes.report(&fe)
			for b := int64(lo); b < int64(hi); b++ {
				t0, t1 := b*scalarLanes, min(rows, (b+1)*scalarLanes)
				batch := lanes.ms[:t1-t0]
				for _, m := range batch {
					for i := range n {
						m.set(i, init[i], 0)
					}
				}
				j := int64(-1)
				for q := range mOut {
					for e := last(q); j < e; {
						j++
						for l, m := range batch {
							t := t0 + int64(l)
							pos := (t/inner*nIn+j)*inner + t%inner
							for i := range n {
								m.set(n+i, xs[i], pos)
							}
						}
						lanes.run(batch)
						for _, m := range batch {
							m.feedBack(n)
						}
					}
					for l, m := range batch {
						t := t0 + int64(l)
						m.storeParams(outs, (t/inner*mOut+q)*inner+t%inner)
					}
				}
			}
		})
		return true, fe.err
	}
	parallelForWork(int(total), p.workOf(total, tensor.NumElements(g.size)), func(lo, hi int) {
		m := p.machine()
		var buf []int64
		sc := g.scratch()
		for k := int64(lo); k < int64(hi); k++ {
			for i := range n {
				m.set(i, init[i], 0)
			}
			buf = g.walk(k, len(g.in), buf, sc)
			for _, pos := range buf {
				for i := range n {
					m.set(n+i, xs[i], pos)
				}
				m.run()
				m.feedBack(n)
			}
			m.storeParams(outs, k)
		}
		fe.set(m.err)
	})
	return true, fe.err
}

// scalarMap applies p elementwise to ts into out.
func scalarMap(p *scalarProgram, ts []*tensor.Tensor, out *tensor.Tensor) (bool, error) {
	if !p.takes(typesOf(ts...)...) || !p.returns(out.Type) {
		return false, nil
	}
	xs := make([]regArray, len(ts))
	for i, x := range ts {
		xs[i] = toRegs(x)
	}
	total := out.NumElements()
	var fe firstError
	// Elements go scalarLanes at a time in lockstep (runLanes), so that the
	// computation's exp, log1p, ... run on vector lanes (the scans XLA's
	// reduce-window rewrite builds map a reducer such as logaddexp).
	batches := (total + scalarLanes - 1) / scalarLanes
	parallelForWork(int(batches), p.workOf(total, 1), func(lo, hi int) {
		lanes := p.newLanes()
		defer lanes.report(&fe)
		for b := int64(lo); b < int64(hi); b++ {
			e0, e1 := b*scalarLanes, min(total, (b+1)*scalarLanes)
			batch := lanes.ms[:e1-e0]
			for l, m := range batch {
				for i := range xs {
					m.set(i, xs[i], e0+int64(l))
				}
			}
			lanes.run(batch)
			for l, m := range batch {
				storeReg(out, e0+int64(l), m.result(0))
			}
		}
	})
	return true, fe.err
}

// scalarSortLess returns a comparator factory for sort operands ts: each call
// gives a less function on element indices backed by its own machine (so
// lines can sort concurrently) and a function reporting the machine's error.
//
// A comparator's parameters come in pairs (k[a], k[b]), and typically most
// of its work reads one side only (jnp.sort canonicalizes NaN and -0 of each
// side before comparing). Those steps run once per element up front; each
// comparison then loads the precomputed side values and runs the rest.
func scalarSortLess(p *scalarProgram, root *hlo.Instruction, ts []*tensor.Tensor, radix **radixOrder) (func() (func(a, b int64) bool, func() error), bool) {
	var types []dtype.Type
	for _, t := range ts {
		types = append(types, t.Type, t.Type)
	}
	if !p.takes(types...) || !p.returns(dtype.Pred) {
		return nil, false
	}
	xs := make([]regArray, len(ts))
	for i, x := range ts {
		xs[i] = toRegs(x)
	}
	plan := splitSides(p)
	// Precompute each element's side registers: tab[s][e*len(plan.regs[s])+j],
	// elements in parallel (one machine a worker; jnp.sort's canonicalizing
	// comparator on a 2048x2048 bf16 had spent 0.43 s here serially).
	n := ts[0].NumElements()
	var tab [2][]uint64
	var fe firstError
	for side := range 2 {
		regs := plan.regs[side]
		tab[side] = make([]uint64, int(n)*len(regs))
		steps := len(plan.side[side]) + len(xs) + len(regs)
		parallelForWork(int(n), int(n)*steps, func(lo, hi int) {
			m := plan.machine(p)
			for e := int64(lo); e < int64(hi); e++ {
				for i := range xs {
					m.set(2*i+side, xs[i], e)
				}
				for _, s := range plan.side[side] {
					s(m)
				}
				row := tab[side][int(e)*len(regs):]
				for j, r := range regs {
					row[j] = m.r[r]
				}
			}
			fe.set(m.err)
		})
	}
	if fe.err != nil {
		err := fe.err
		return func() (func(a, b int64) bool, func() error) {
			return func(a, b int64) bool { return false }, func() error { return err }
		}, true
	}
	if kl := keyedSortLess(root, p, &plan, tab, radix); kl != nil {
		return func() (func(a, b int64) bool, func() error) { return kl, func() error { return nil } }, true
	}
	res := p.results[0].reg
	ra, rb := plan.regs[0], plan.regs[1]
	return func() (func(a, b int64) bool, func() error) {
		m := plan.machine(p)
		less := func(a, b int64) bool {
			ta, tb := tab[0][int(a)*len(ra):], tab[1][int(b)*len(rb):]
			for j, r := range ra {
				m.r[r] = ta[j]
			}
			for j, r := range rb {
				m.r[r] = tb[j]
			}
			for _, s := range plan.mixed {
				s(m)
			}
			return m.r[res] != 0
		}
		return less, func() error { return m.err }
	}, true
}

// sidePlan partitions a comparator's steps: prelude reads constants only,
// side[0] reads even parameters (the a side) and side[1] odd ones, mixed
// both; regs[s] are the registers of side s that mixed steps or the result
// read.
type sidePlan struct {
	prelude []scalarStep
	side    [2][]scalarStep
	mixed   []scalarStep
	mixedIO []stepIO
	regs    [2][]int
}

// machine returns a machine for p with the prelude's constant values computed.
func (plan *sidePlan) machine(p *scalarProgram) *scalarMachine {
	m := p.machine()
	for _, s := range plan.prelude {
		s(m)
	}
	return m
}

func splitSides(p *scalarProgram) sidePlan {
	dep := make([]uint8, len(p.init)) // bit 0: reads the a side, bit 1: the b side
	for i, pr := range p.params {
		for s := range slots(pr.typ) {
			dep[pr.reg+s] = 1 << (i % 2)
		}
	}
	var plan sidePlan
	used := make([]bool, len(p.init))
	for i, s := range p.steps {
		io := p.stepIO[i]
		var d uint8
		for _, src := range io.srcs {
			d |= dep[src.reg]
		}
		for k := range slots(io.dst.typ) {
			dep[io.dst.reg+k] = d
		}
		switch d {
		case 0:
			plan.prelude = append(plan.prelude, s)
		case 1, 2:
			plan.side[d-1] = append(plan.side[d-1], s)
		default:
			plan.mixed = append(plan.mixed, s)
			plan.mixedIO = append(plan.mixedIO, io)
			for _, src := range io.srcs {
				for k := range slots(src.typ) {
					used[src.reg+k] = true
				}
			}
		}
	}
	for _, r := range p.results {
		for k := range slots(r.typ) {
			used[r.reg+k] = true
		}
	}
	for r, u := range used {
		if u && (dep[r] == 1 || dep[r] == 2) {
			plan.regs[dep[r]-1] = append(plan.regs[dep[r]-1], r)
		}
	}
	return plan
}

// scalarSelectAndScatter is select-and-scatter's loop with compiled select
// and scatter computations; out already holds the init value everywhere.
func scalarSelectAndScatter(sel, scat *scalarProgram, g *windowGeom, x, src, out *tensor.Tensor) (bool, error) {
	if !sel.takes(x.Type, x.Type) || !sel.returns(dtype.Pred) || !scat.takes(out.Type, src.Type) || !scat.returns(out.Type) {
		return false, nil
	}
	xs, ss := toRegs(x), toRegs(src)
	os := toRegs(out)
	ms, mc := sel.machine(), scat.machine()
	selRes := sel.results[0].reg
	var buf []int64
	sc := g.scratch()
	for k := int64(0); k < src.NumElements(); k++ {
		buf = g.walk(k, len(g.in), buf, sc)
		if len(buf) == 0 {
			continue
		}
		pick := buf[0]
		for _, c := range buf[1:] {
			ms.set(0, xs, pick)
			ms.set(1, xs, c)
			ms.run()
			if ms.r[selRes] == 0 {
				pick = c
			}
		}
		mc.set(0, os, pick)
		mc.set(1, ss, k)
		mc.run()
		copy(os.at(pick), mc.result(0))
	}
	if ms.err != nil {
		return true, ms.err
	}
	for i := range out.NumElements() {
		storeReg(out, i, os.at(i))
	}
	return true, mc.err
}

// scalarScatter combines updates into outs at target (negative: skipped),
// in update order, as scatter's to_apply(currents..., updates...).
func scalarScatter(p *scalarProgram, outs []*tensor.Tensor, upds []Value, target []int64) (bool, error) {
	n := len(outs)
	if len(upds) != n {
		return false, nil
	}
	us := make([]*tensor.Tensor, n)
	for k := range upds {
		us[k] = upds[k].T
	}
	if !p.takes(append(typesOf(outs...), typesOf(us...)...)...) || !p.returns(typesOf(outs...)...) {
		return false, nil
	}
	m := p.machine()
	for i, t := range target {
		if t < 0 {
			continue
		}
		for k := range n {
			pr := p.params[k]
			loadReg(outs[k], t, m.r[pr.reg:])
			pu := p.params[n+k]
			loadReg(us[k], int64(i), m.r[pu.reg:])
		}
		m.run()
		for k := range n {
			storeReg(outs[k], t, m.result(k))
		}
	}
	return true, m.err
}

// keyedSortDisabled turns keyedSortLess off (GOLDTRACE_NO_KEYED_SORT=1), to
// compare.
var keyedSortDisabled = os.Getenv("GOLDTRACE_NO_KEYED_SORT") == "1"

// keyedSortLess is the comparator as a comparison of two precomputed key
// arrays, when the only step reading both sides is the root, an LT or GT
// compare of one side register against the other (jnp.sort's comparator:
// each side canonicalizes its value -- -0 to 0, NaNs to one NaN -- and the
// root compares in TOTALORDER). The keys are what that compare step reads
// of each register (compareStep: f32 and f64 FLOAT compares flush
// subnormals, f32 TOTALORDER orders the bits as they are -- bf16, f16 and
// f8 those of their float32 value -- f64 TOTALORDER flushes first), so less returns the step's answer for every pair and the
// sort makes the same moves. nil when the comparator has another form.
func keyedSortLess(root *hlo.Instruction, p *scalarProgram, plan *sidePlan, tab [2][]uint64, radix **radixOrder) func(a, b int64) bool {
	if keyedSortDisabled || root == nil || root.Opcode != "compare" || len(plan.mixed) != 1 ||
		len(plan.regs[0]) != 1 || len(plan.regs[1]) != 1 || len(p.results) != 1 {
		return nil
	}
	io := plan.mixedIO[0]
	if io.dst.reg != p.results[0].reg || io.dst.typ != dtype.Pred || len(io.srcs) != 2 || io.srcs[0].typ != io.srcs[1].typ {
		return nil
	}
	if len(root.Operands) != 2 || root.Operands[0].Shape.Elem != io.srcs[0].typ {
		return nil
	}
	var swap bool
	switch {
	case io.srcs[0].reg == plan.regs[0][0] && io.srcs[1].reg == plan.regs[1][0]:
	case io.srcs[0].reg == plan.regs[1][0] && io.srcs[1].reg == plan.regs[0][0]:
		swap = true
	default:
		return nil
	}
	gt := root.ComparisonDirection == "GT"
	if !gt && root.ComparisonDirection != "LT" {
		return nil
	}
	typ := io.srcs[0].typ
	ctype, err := root.EffectiveComparisonType()
	if err != nil {
		return nil
	}
	if ctype == "" {
		ctype = defaultComparison(typ)
	}
	switch {
	case classOf(typ) == classF32 && ctype == "TOTALORDER":
		// bf16, f16 and the f8s compare as their float32 value (compareStep).
		dec := decoder(typ)
		ks := sortKeyArrays(tab, func(r uint64) int32 { return totalOrderKey32(dec(r)) })
		*radix = newRadixOrder(ks, 32, gt != swap)
		return keyLess(ks, gt, swap)
	case typ == dtype.F32 && ctype == "FLOAT":
		return keyLess(sortKeyArrays(tab, func(r uint64) float32 { return flush(f32of(r)) }), gt, swap)
	case typ == dtype.F64 && ctype == "TOTALORDER":
		ks := sortKeyArrays(tab, func(r uint64) int64 { return totalOrderKey(flush(math.Float64frombits(r))) })
		*radix = newRadixOrder(ks, 64, gt != swap)
		return keyLess(ks, gt, swap)
	case typ == dtype.F64 && ctype == "FLOAT":
		return keyLess(sortKeyArrays(tab, func(r uint64) float64 { return flush(math.Float64frombits(r)) }), gt, swap)
	case classOf(typ) == classSigned && ctype == "SIGNED":
		ks := sortKeyArrays(tab, func(r uint64) int64 { return int64(r) })
		*radix = newRadixOrder(ks, 64, gt != swap)
		return keyLess(ks, gt, swap)
	}
	return nil
}

func sortKeyArrays[K any](tab [2][]uint64, key func(uint64) K) [2][]K {
	var ks [2][]K
	for side := range ks {
		ks[side] = make([]K, len(tab[side]))
		for e, r := range tab[side] {
			ks[side][e] = key(r)
		}
	}
	return ks
}

// keyLess is less(a, b) = x dir y, where x is the compare's first operand
// (side a's key of a, or with swap side b's key of b) and y its second.
func keyLess[K int32 | int64 | float32 | float64](ks [2][]K, gt, swap bool) func(a, b int64) bool {
	ka, kb := ks[0], ks[1]
	switch {
	case !gt && !swap:
		return func(a, b int64) bool { return ka[a] < kb[b] }
	case gt && !swap:
		return func(a, b int64) bool { return ka[a] > kb[b] }
	case !gt && swap:
		return func(a, b int64) bool { return kb[b] < ka[a] }
	}
	return func(a, b int64) bool { return kb[b] > ka[a] }
}
