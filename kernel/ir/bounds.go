package ir

import (
	"math"
	"math/bits"
	"slices"

	"goldtrace/kernel/ir/irpb"
)

// The out-of-bounds rule. Each index expression is affine in independent
// variables (tile axes over 0..n-1, loop variables over their iterations,
// program ids over the grid), so its minimum and maximum over the box are
// exact once repeated variables are merged. A masked instruction only touches
// the elements its predicates let through: when the box check fails, the
// variables the index shares (transitively) with mask predicates are
// enumerated, if there are few enough combinations, and only points that pass
// the predicates count.

type varKey struct {
	kind irpb.TermKind
	id   int32
}

type linTerm struct {
	key  varKey
	coef int64
}

// lin is an Affine with one term per variable, zero terms dropped.
type lin struct {
	c     int64
	terms []linTerm
}

func addOK(a, b int64) (int64, bool) {
	s := a + b
	return s, (s > a) == (b > 0) || b == 0
}

func mulOK(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	hi, lo := bits.Mul64(uint64(absU(a)), uint64(absU(b)))
	neg := (a < 0) != (b < 0)
	if hi != 0 || lo > math.MaxInt64+boolU(neg) {
		return 0, false
	}
	if neg {
		return int64(-lo), true
	}
	return int64(lo), true
}

func absU(a int64) uint64 {
	if a < 0 {
		return -uint64(a)
	}
	return uint64(a)
}

func boolU(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// toLin merges e's terms per variable; subst may rewrite a term's variable or
// drop it (drop: the variable is 0). ok is false on overflow.
func toLin(e *irpb.Affine, subst func(t *irpb.Term) (varKey, bool)) (lin, bool) {
	return toLinInto(nil, e, subst)
}

// toLinInto is toLin building the terms in buf's storage.
func toLinInto(buf []linTerm, e *irpb.Affine, subst func(t *irpb.Term) (varKey, bool)) (lin, bool) {
	l := lin{c: e.GetConstant(), terms: buf[:0]}
	for _, t := range e.GetTerms() {
		key, keep := varKey{t.Kind, t.Id}, true
		if subst != nil {
			key, keep = subst(t)
		}
		if !keep || t.Coef == 0 {
			continue
		}
		found := false
		for i := range l.terms {
			if l.terms[i].key == key {
				c, ok := addOK(l.terms[i].coef, t.Coef)
				if !ok {
					return l, false
				}
				l.terms[i].coef = c
				found = true
				break
			}
		}
		if !found {
			l.terms = append(l.terms, linTerm{key, t.Coef})
		}
	}
	out := l.terms[:0]
	for _, t := range l.terms {
		if t.coef != 0 {
			out = append(out, t)
		}
	}
	l.terms = out
	return l, true
}

// varValues is a variable's value set {start + i*step : i < n}.
type varValues struct{ start, step, n int64 }

func (v *validator) values(key varKey, tile []int64) varValues {
	switch key.kind {
	case irpb.TermKind_TILE_AXIS:
		if int(key.id) < len(tile) {
			return varValues{0, 1, max(tile[key.id], 0)}
		}
		return varValues{0, 1, 1}
	case irpb.TermKind_LOOP_VAR:
		r := v.vars[key.id]
		return varValues{r.start, r.step, r.trips}
	case irpb.TermKind_PROGRAM_ID:
		if int(key.id) < len(v.k.Grid) {
			return varValues{0, 1, v.k.Grid[key.id]}
		}
	}
	return varValues{0, 1, 1}
}

func (vv varValues) last() int64 { return vv.start + (vv.n-1)*vv.step } // n >= 1; within the loop's range, no overflow

// interval is the exact range of l over the box; empty when a variable has
// no values; ok false on overflow (of any partial sum, in evaluation order,
// so that evaluating l at a point of the box never overflows when ok).
func (v *validator) interval(l lin, tile []int64) (lo, hi int64, empty, ok bool) {
	lo, hi = l.c, l.c
	for _, t := range l.terms {
		vv := v.values(t.key, tile)
		if vv.n <= 0 {
			return 0, 0, true, true
		}
		a, ok1 := mulOK(t.coef, vv.start)
		b, ok2 := mulOK(t.coef, vv.last())
		if !ok1 || !ok2 {
			return 0, 0, false, false
		}
		if a > b {
			a, b = b, a
		}
		var ok3, ok4 bool
		lo, ok3 = addOK(lo, a)
		hi, ok4 = addOK(hi, b)
		if !ok3 || !ok4 {
			return 0, 0, false, false
		}
	}
	return lo, hi, false, true
}

func linString(l lin, tile []int64) string {
	e := &irpb.Affine{Constant: l.c}
	for _, t := range l.terms {
		e.Terms = append(e.Terms, &irpb.Term{Kind: t.key.kind, Id: t.key.id, Coef: t.coef})
	}
	return affineString(e, len(tile))
}

func (v *validator) bounds(in *irpb.Instruction, op, what string, a *irpb.Access, dom []int64) {
	t := v.tensor(a.Tensor)
	if prodAll(a.Shape) == 0 {
		return
	}
	for d, e := range a.Index {
		if slices.Contains(a.DynamicDim, int32(d)) || d >= len(t.Shape) {
			continue // dynamic: runtime offsets, oob_mode decides
		}
		size := t.Shape[d]
		l, ok := toLinInto(v.lin, e, nil)
		v.lin = l.terms[:0] // reused by the next index (l is not kept)
		var lo, hi int64
		var empty bool
		if ok {
			lo, hi, empty, ok = v.interval(l, a.Shape)
		}
		if !ok {
			v.errf("oob", in.Loc, op, "%s: index %s of dimension %d of %s overflows 64-bit integers", what, affineString(e, len(a.Shape)), d, tensorLabel(t))
			continue
		}
		if empty || (lo >= 0 && hi < size) {
			continue
		}
		bad := hi
		if lo < 0 {
			bad = lo
		}
		note := ""
		if len(in.Mask) > 0 {
			inBounds, decided, val := v.maskedBounds(in, a, d, size, dom)
			switch {
			case decided && inBounds:
				continue
			case decided:
				bad = val
				note = " for an element the mask lets through"
			default:
				note = " (the mask could not be checked exactly: too many combinations, or tile shapes that do not map onto the domain)"
			}
		}
		v.errf("oob", in.Loc, op, "%s: index %s of dimension %d of %s reaches %d, outside [0, %d)%s",
			what, linString(l, a.Shape), d, tensorLabel(t), bad, size, note)
	}
}

// maskedBounds decides exactly whether index dimension d of access a stays in
// [0, size) at every point the mask lets through. decided is false when the
// access's tile does not map onto the domain or enumeration would be too big.
func (v *validator) maskedBounds(in *irpb.Instruction, a *irpb.Access, d int, size int64, dom []int64) (inBounds, decided bool, bad int64) {
	if len(a.Shape) != len(dom) {
		return false, false, 0
	}
	for k := range dom {
		if a.Shape[k] != dom[k] && a.Shape[k] != 1 {
			return false, false, 0
		}
	}
	// the access's tile axis k is domain axis k, or constant 0 where it broadcasts
	subst := func(t *irpb.Term) (varKey, bool) {
		if t.Kind == irpb.TermKind_TILE_AXIS && int(t.Id) < len(a.Shape) && a.Shape[t.Id] == 1 {
			return varKey{}, false
		}
		return varKey{t.Kind, t.Id}, true
	}
	idx, ok := toLin(a.Index[d], subst)
	if !ok {
		return false, false, 0
	}
	if _, _, _, ok := v.interval(idx, dom); !ok {
		return false, false, 0
	}
	var preds []lin
	var cmps []irpb.Cmp
	for _, p := range in.Mask {
		l, ok := toLin(p.Expr, nil)
		if !ok {
			continue // ignoring a predicate only admits more points: still sound
		}
		if _, _, _, ok := v.interval(l, dom); !ok {
			continue
		}
		preds = append(preds, l)
		cmps = append(cmps, p.Cmp)
	}
	if v.impliedBounds(idx, preds, cmps, dom, size) {
		return true, true, 0
	}
	// The variables of the index, grown by every predicate sharing one: the
	// component that decides the index's values. The other predicates form
	// independent components; they matter only if one of them can never hold
	// (then the instruction touches nothing).
	comps := components(idx, preds)
	bad, found, ok := v.searchComponent(comps[0], idx, preds, cmps, dom, size, true)
	if !ok {
		return false, false, 0
	}
	if !found {
		return true, true, 0
	}
	for _, c := range comps[1:] {
		_, sat, ok := v.searchComponent(c, lin{}, preds, cmps, dom, 0, false)
		if ok && !sat {
			return true, true, 0 // that part of the mask never holds: nothing is touched
		}
	}
	return false, true, bad
}

// components splits preds into connected groups by shared variables; the
// first group is the one connected to idx's variables (possibly empty) and
// also takes the constant predicates.
func components(idx lin, preds []lin) [][]int {
	group := make([]int, len(preds))
	for i := range group {
		group[i] = -1
	}
	seen := map[varKey]int{} // variable -> group
	var groups [][]int
	grow := func(g int, vars map[varKey]bool) {
		for changed := true; changed; {
			changed = false
			for i, p := range preds {
				if group[i] >= 0 {
					continue
				}
				touches := g == 0 && len(p.terms) == 0
				for _, t := range p.terms {
					if vars[t.key] {
						touches = true
					}
				}
				if touches {
					group[i] = g
					groups[g] = append(groups[g], i)
					for _, t := range p.terms {
						vars[t.key] = true
						seen[t.key] = g
					}
					changed = true
				}
			}
		}
	}
	vars := map[varKey]bool{}
	for _, t := range idx.terms {
		vars[t.key] = true
	}
	groups = append(groups, nil)
	grow(0, vars)
	for i, p := range preds {
		if group[i] >= 0 {
			continue
		}
		g := len(groups)
		groups = append(groups, []int{i})
		group[i] = g
		vs := map[varKey]bool{}
		for _, t := range p.terms {
			vs[t.key] = true
		}
		grow(g, vs)
	}
	return groups
}

// searchComponent enumerates the variables of idx (when withIndex) and of
// the predicates in comp. withIndex: it looks for a point passing the
// predicates whose index falls outside [0, size) (found, bad = that index).
// Otherwise it looks for any point passing them (found = satisfiable).
// ok is false when the enumeration would be too large.
func (v *validator) searchComponent(comp []int, idx lin, preds []lin, cmps []irpb.Cmp, dom []int64, size int64, withIndex bool) (bad int64, found, ok bool) {
	var keys []varKey
	has := map[varKey]int{}
	addKey := func(k varKey) {
		if _, ok := has[k]; !ok {
			has[k] = len(keys)
			keys = append(keys, k)
		}
	}
	if withIndex {
		for _, t := range idx.terms {
			addKey(t.key)
		}
	}
	for _, i := range comp {
		for _, t := range preds[i].terms {
			addKey(t.key)
		}
	}
	vals := make([]varValues, len(keys))
	total := int64(1)
	for i, k := range keys {
		vals[i] = v.values(k, dom)
		if vals[i].n <= 0 {
			return 0, false, true // no points at all
		}
		total = satMul(total, vals[i].n)
	}
	if total > maxEnumeration || total > v.budget {
		return 0, false, false
	}
	v.budget -= total
	type compiled struct {
		c    int64
		idx  []int
		coef []int64
		cmp  irpb.Cmp
	}
	compile := func(l lin, cmp irpb.Cmp) compiled {
		c := compiled{c: l.c, cmp: cmp}
		for _, t := range l.terms {
			c.idx = append(c.idx, has[t.key])
			c.coef = append(c.coef, t.coef)
		}
		return c
	}
	cps := make([]compiled, 0, len(comp))
	for _, i := range comp {
		cps = append(cps, compile(preds[i], cmps[i]))
	}
	target := compile(idx, 0)
	cur := make([]int64, len(keys))
	counter := make([]int64, len(keys))
	for i := range keys {
		cur[i] = vals[i].start
	}
	eval := func(c compiled) int64 {
		s := c.c
		for j, i := range c.idx {
			s += c.coef[j] * cur[i]
		}
		return s
	}
	for {
		pass := true
		for _, c := range cps {
			if !holds(eval(c), c.cmp) {
				pass = false
				break
			}
		}
		if pass {
			if !withIndex {
				return 0, true, true
			}
			if x := eval(target); x < 0 || x >= size {
				return x, true, true
			}
		}
		i := 0
		for ; i < len(keys); i++ {
			counter[i]++
			if counter[i] < vals[i].n {
				cur[i] += vals[i].step
				break
			}
			counter[i] = 0
			cur[i] = vals[i].start
		}
		if i == len(keys) {
			return 0, false, true
		}
	}
}

func holds(x int64, c irpb.Cmp) bool {
	switch c {
	case irpb.Cmp_LT:
		return x < 0
	case irpb.Cmp_LE:
		return x <= 0
	case irpb.Cmp_GT:
		return x > 0
	case irpb.Cmp_GE:
		return x >= 0
	case irpb.Cmp_EQ:
		return x == 0
	case irpb.Cmp_NE:
		return x != 0
	}
	return true
}

// impliedBounds is the fast path for the usual tail masks
// (`p + 128*i < n` guarding an index `p + 128*i + c`): when the index's terms
// are a multiple m of one predicate's terms S, the predicate bounds S and so
// the index on one side (both for ==); the box interval gives the other side.
// True when that proves the index stays in [0, size).
func (v *validator) impliedBounds(idx lin, preds []lin, cmps []irpb.Cmp, dom []int64, size int64) bool {
	lo, hi, empty, ok := v.interval(idx, dom)
	if !ok {
		return false
	}
	if empty {
		return true
	}
	for i, p := range preds {
		m, ok := multipleOf(idx, p)
		if !ok {
			continue
		}
		// p.c + S cmp 0  =>  bounds on S
		var sLo, sHi int64
		hasLo, hasHi := false, false
		negC := -p.c
		if p.c == math.MinInt64 {
			continue
		}
		switch cmps[i] {
		case irpb.Cmp_LT:
			sHi, hasHi = negC-1, negC != math.MinInt64
		case irpb.Cmp_LE:
			sHi, hasHi = negC, true
		case irpb.Cmp_GT:
			sLo, hasLo = negC+1, negC != math.MaxInt64
		case irpb.Cmp_GE:
			sLo, hasLo = negC, true
		case irpb.Cmp_EQ:
			sLo, sHi, hasLo, hasHi = negC, negC, true, true
		}
		// index = idx.c + m*S
		bound := func(s int64) (int64, bool) {
			x, ok := mulOK(m, s)
			if !ok {
				return 0, false
			}
			return addOK(idx.c, x)
		}
		if hasHi {
			if b, ok := bound(sHi); ok {
				if m > 0 {
					hi = min(hi, b)
				} else {
					lo = max(lo, b)
				}
			}
		}
		if hasLo {
			if b, ok := bound(sLo); ok {
				if m > 0 {
					lo = max(lo, b)
				} else {
					hi = min(hi, b)
				}
			}
		}
	}
	return lo >= 0 && hi < size
}

// multipleOf returns m with a's terms = m * b's terms (same variables).
func multipleOf(a, b lin) (int64, bool) {
	if len(a.terms) == 0 || len(a.terms) != len(b.terms) {
		return 0, false
	}
	var m int64
	for i, t := range a.terms {
		var bc int64
		found := false
		for _, u := range b.terms {
			if u.key == t.key {
				bc, found = u.coef, true
				break
			}
		}
		if !found || bc == 0 || t.coef%bc != 0 {
			return 0, false
		}
		q := t.coef / bc
		if i == 0 {
			m = q
		} else if q != m {
			return 0, false
		}
	}
	return m, m != 0
}
