package ir

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/kernel/ir/irpb"
)

// TestOOBMatchesBruteForce: on random small masked kernels the bounds rule
// reports an out-of-bounds source access exactly when visiting every program
// instance, loop iteration and tile element that the mask lets through finds
// an index outside the tensor.
func TestOOBMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	checked, oobs := 0, 0
	for iter := 0; iter < 4000; iter++ {
		k, brute := randomMaskedCopy(rng)
		err := Validate(k)
		var list ErrorList
		if err != nil && !errors.As(err, &list) {
			t.Fatal(err)
		}
		reported := false
		for _, e := range list {
			if e.Rule == "oob" && strings.HasPrefix(e.Msg, "src[0]") {
				reported = true
				if strings.Contains(e.Msg, "could not be checked exactly") {
					t.Fatalf("iteration %d: fell back to the conservative answer on a small kernel:\n%v\n%s", iter, err, Format(k))
				}
			} else {
				t.Fatalf("iteration %d: unexpected error %v\n%s", iter, e, Format(k))
			}
		}
		if reported != brute {
			t.Fatalf("iteration %d: validator says oob=%v, brute force %v:\n%v\n%s", iter, reported, brute, err, Format(k))
		}
		checked++
		if brute {
			oobs++
		}
	}
	if oobs < checked/10 || oobs > checked*9/10 {
		t.Fatalf("generator unbalanced: %d of %d out of bounds", oobs, checked)
	}
}

type point struct {
	tile  []int64
	loops []int64
	pids  []int64
}

func randomMaskedCopy(rng *rand.Rand) (*irpb.Kernel, bool) {
	b := newKernel("rand")
	ng := rng.IntN(3)
	for range ng {
		b.k.Grid = append(b.k.Grid, int64(1+rng.IntN(3)))
	}
	rank := 1 + rng.IntN(3)
	dom := make([]int64, rank)
	for i := range dom {
		dom[i] = int64(1 + rng.IntN(5))
	}
	srank := 1 + rng.IntN(3)
	sshape := make([]int64, srank)
	for i := range sshape {
		sshape[i] = int64(1 + rng.IntN(8))
	}
	src := b.sbuf("src", dtype.F32, sshape...)
	dst := b.sbuf("dst", dtype.F32, dom...)
	type loopDef struct{ start, stop, step int64 }
	var loops []loopDef
	for range rng.IntN(3) {
		s := int64(rng.IntN(3))
		loops = append(loops, loopDef{s, s + int64(rng.IntN(6)), int64(1 + rng.IntN(2))})
		b.newVar()
	}
	// source tile: the domain with some axes broadcast
	tileShape := make([]int64, rank)
	for i := range tileShape {
		tileShape[i] = dom[i]
		if rng.IntN(4) == 0 {
			tileShape[i] = 1
		}
	}
	randTerm := func(tileAxes bool) *irpb.Term {
		coef := int64(rng.IntN(7) - 3)
		if coef == 0 {
			coef = 1
		}
		for {
			switch rng.IntN(3) {
			case 0:
				if tileAxes {
					return term(irpb.TermKind_TILE_AXIS, int32(rng.IntN(rank)), coef)
				}
			case 1:
				if len(loops) > 0 {
					return term(irpb.TermKind_LOOP_VAR, int32(rng.IntN(len(loops))), coef)
				}
			case 2:
				return term(irpb.TermKind_PROGRAM_ID, int32(rng.IntN(max(ng, 1))), coef)
			}
		}
	}
	idx := make([]*irpb.Affine, srank)
	for d := range idx {
		e := aff(int64(rng.IntN(6) - 2))
		for range rng.IntN(3) {
			e.Terms = append(e.Terms, randTerm(true))
		}
		idx[d] = e
	}
	var mask []*irpb.Predicate
	for range rng.IntN(4) {
		e := aff(int64(rng.IntN(13) - 6))
		for range 1 + rng.IntN(2) {
			e.Terms = append(e.Terms, randTerm(true))
		}
		mask = append(mask, &irpb.Predicate{Expr: e, Cmp: irpb.Cmp(1 + rng.IntN(6))})
	}
	in := op("tensor_copy", 9, accs(tile(dst, dom)), accs(&irpb.Access{Tensor: src, Shape: tileShape, Index: idx}), nil)
	in.Mask = mask
	stmt := st(in)
	for i := len(loops) - 1; i >= 0; i-- {
		stmt = loop(int32(i), loops[i].start, loops[i].stop, loops[i].step, int32(5+i), stmt)
	}
	b.add(stmt)

	// brute force
	evalAff := func(e *irpb.Affine, pt point, tileOf func(int32) int64) int64 {
		s := e.Constant
		for _, tm := range e.Terms {
			switch tm.Kind {
			case irpb.TermKind_TILE_AXIS:
				s += tm.Coef * tileOf(tm.Id)
			case irpb.TermKind_LOOP_VAR:
				s += tm.Coef * pt.loops[tm.Id]
			case irpb.TermKind_PROGRAM_ID:
				if int(tm.Id) < len(pt.pids) {
					s += tm.Coef * pt.pids[tm.Id]
				}
			}
		}
		return s
	}
	oob := false
	var visit func(pt point, level int)
	visit = func(pt point, level int) {
		if oob {
			return
		}
		switch {
		case level < ng:
			for g := int64(0); g < b.k.Grid[level]; g++ {
				visit(point{pids: append(append([]int64{}, pt.pids...), g)}, level+1)
			}
		case level < ng+len(loops):
			l := loops[level-ng]
			for x := l.start; x < l.stop; x += l.step {
				visit(point{pids: pt.pids, loops: append(append([]int64{}, pt.loops...), x)}, level+1)
			}
		default:
			n := prodAll(dom)
			for f := int64(0); f < n; f++ {
				t := make([]int64, rank)
				r := f
				for a := rank - 1; a >= 0; a-- {
					t[a] = r % dom[a]
					r /= dom[a]
				}
				pt.tile = t
				domAxis := func(id int32) int64 { return t[id] }
				pass := true
				for _, p := range mask {
					if !holds(evalAff(p.Expr, pt, domAxis), p.Cmp) {
						pass = false
					}
				}
				if !pass {
					continue
				}
				srcAxis := func(id int32) int64 {
					if tileShape[id] == 1 {
						return 0
					}
					return t[id]
				}
				for d, e := range idx {
					if x := evalAff(e, pt, srcAxis); x < 0 || x >= sshape[d] {
						oob = true
						return
					}
				}
			}
		}
	}
	visit(point{}, 0)
	return b.k, oob
}
