package eval

import (
	"sync/atomic"
)

// Convolutions of a dilated input (lhs_dilate > 1: transposed convolutions
// and the input gradients of strided ones) read a zero through most of
// their window elements: with dilation 2 in two dims, three in four. The
// output positions fall into a few classes (the input's phases) by which
// window elements can land on an input value; convolveDilated runs one GEMM
// per class over just those window elements, about a quarter of the work.
//
// The sums stay bit for bit those of the whole im2col GEMM. That GEMM adds
// each kc-deep slice of the contraction into C as an FMA chain from +0; a
// term 0*w (w finite) adds ±0, which leaves any such chain or C unchanged
// (they start at +0 and round-to-nearest never reaches -0 from there), so
// dropping it changes nothing as long as the slices keep their boundaries:
// each class's columns are cut where the whole contraction's kc slices
// end, and each piece is one GEMM call (a single FMA chain added to C). A
// kernel with a non-finite value (0*Inf is NaN) takes the whole GEMM.

// convDilatedOn selects convolveDilated (tests turn it off to compare).
var convDilatedOn = true

// convDilatedRuns counts convolveDilated's runs (tests).
var convDilatedRuns atomic.Int64

// dilatedClass is the output positions whose live window elements are win.
type dilatedClass struct {
	win []int // live window elements, ascending
	pos []int // output positions (within one image)
}

func convolveDilated[T number](par int, p *convPlan, x, k []T) ([]T, bool) {
	switch ks := any(k).(type) {
	case []float32:
		if !allFinite(ks) {
			return nil, false
		}
	case []float64:
		if !allFinite(ks) {
			return nil, false
		}
	default:
		return nil, false
	}
	// Classes by live window elements, in order of first position.
	var classes []*dilatedClass
	byKey := map[string]*dilatedClass{}
	key := make([]byte, p.w)
	live := 0
	for pos := 0; pos < p.p; pos++ {
		for w := 0; w < p.w; w++ {
			key[w] = 0
			if p.live[pos*p.w+w] {
				key[w] = 1
				live++
			}
		}
		c := byKey[string(key)]
		if c == nil {
			c = &dilatedClass{}
			for w := 0; w < p.w; w++ {
				if key[w] == 1 {
					c.win = append(c.win, w)
				}
			}
			byKey[string(key)] = c
			classes = append(classes, c)
		}
		c.pos = append(c.pos, pos)
	}
	// Worth it only when most of the window is holes, in few classes.
	if 2*live > p.p*p.w || len(classes) > 64 {
		return nil, false
	}
	kc := kernelFor[T]().kc
	cg, o := p.cg, p.o
	out := storageOf[T](p.nb * p.p * o) // [nb, P, O], zeroed
	for _, cl := range classes {
		if len(cl.win) == 0 {
			continue // all holes: the output is +0, as the whole GEMM's
		}
		// The class's columns (window element cl.win[i], feature f at
		// column i*cg+f) cut into pieces at the whole contraction's kc
		// boundaries: piece j holds columns [cuts[j], cuts[j+1]).
		depth := len(cl.win) * cg
		cuts := []int{0}
		for i := 1; i < depth; i++ {
			prev := cl.win[(i-1)/cg]*cg + (i-1)%cg
			cur := cl.win[i/cg]*cg + i%cg
			if prev/kc != cur/kc {
				cuts = append(cuts, i)
			}
		}
		cuts = append(cuts, depth)
		b := make([]T, depth*o) // the kernel's rows of the live elements
		for i, w := range cl.win {
			copy(b[i*cg*o:(i+1)*cg*o], k[w*cg*o:(w+1)*cg*o])
		}
		rows := p.nb * len(cl.pos)
		maxPiece := 0
		for j := 1; j < len(cuts); j++ {
			maxPiece = max(maxPiece, cuts[j]-cuts[j-1])
		}
		rb := max(4, convBlockElems/max(maxPiece, 1)/4*4)
		rb = min(rb, roundUp(max(1, rows/(4*max(par, 1))), 4))
		blocks := (rows + rb - 1) / rb
		dynamicFor(par, blocks, func(next func() int) {
			a := make([]T, rb*maxPiece)
			c := make([]T, rb*o)
			for blk := next(); blk < blocks; blk = next() {
				r0, r1 := blk*rb, min((blk+1)*rb, rows)
				m := r1 - r0
				cb := c[:m*o]
				clear(cb)
				for j := 1; j < len(cuts); j++ {
					d0, d1 := cuts[j-1], cuts[j]
					kd := d1 - d0
					for r := r0; r < r1; r++ {
						n, pos := r/len(cl.pos), cl.pos[r%len(cl.pos)]
						dilatedRow(p, cl.win, a[(r-r0)*kd:(r-r0+1)*kd], x, n, pos, d0, d1)
					}
					gemm(1, 1, m, o, kd, a[:m*kd], b[d0*o:d1*o], cb)
				}
				for r := r0; r < r1; r++ {
					n, pos := r/len(cl.pos), cl.pos[r%len(cl.pos)]
					copy(out[(n*p.p+pos)*o:(n*p.p+pos+1)*o], cb[(r-r0)*o:(r-r0+1)*o])
				}
			}
		})
	}
	convDilatedRuns.Add(1)
	return out, true
}

// dilatedRow writes columns [d0, d1) of the class im2col row of image n at
// output position pos (window element win[i], feature f at column i*cg+f)
// into dst: the input's features, or zeros where the element reads padding.
func dilatedRow[T number](p *convPlan, win []int, dst, x []T, n, pos, d0, d1 int) {
	img := x[n*p.inSpatial*p.c:]
	tab := p.tab[pos*p.w : (pos+1)*p.w]
	cg := p.cg
	for d := d0; d < d1; {
		i, f := d/cg, d%cg
		end := min(d1, (i+1)*cg)
		seg := dst[d-d0 : end-d0]
		if off := tab[win[i]]; off < 0 {
			clear(seg)
		} else {
			copy(seg, img[int(off)*p.c+f:])
		}
		d = end
	}
}
