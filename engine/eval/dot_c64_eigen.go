package eval

import (
	"runtime"

	"goldtrace/engine/dtype"
	"sync"
)

// c64 x c64 -> c64 dots in XLA:CPU's order.
//
// XLA:CPU runs a complex64 dot as an Eigen tensor contraction (jaxlib's
// Eigen is built for AVX without FMA: Packet4cf, mr = 8, nr = 4). Measured
// against jax 0.10.2 on the 2-core EPYC (see docs/design.md, "complex
// dots"), every output element C[i,j] is computed as follows:
//
//   - K is cut into blocks [k0, k1) (the contraction's kc blocking, below).
//   - In a block, four real sums start from +0 and take one product per k,
//     multiplied and then added (two roundings, no FMA):
//     fr = Σ ar·br, fi = Σ ai·br, sr = Σ ar·bi, si = Σ ai·bi
//     (a = A[i,k], b = B[k,j]). How the k terms are added depends on where
//     column j falls in its column block (Eigen's row panels, as XLA hands
//     Eigen the transposed product): columns in whole groups of 8 add them
//     in order; a trailing group of 4 or 2 columns adds even k into one
//     accumulator and odd k into another over the first kl&^7 terms of the
//     block, adds the two, and adds the remaining terms in order; a trailing
//     single column keeps four accumulators (k mod 4) over the first kl&^3
//     terms, adds them as (0+1)+(2+3), then the remaining terms in order.
//   - The block's value is tre = fr + (-si), tim = fi + sr, multiplied by
//     alpha = 1+0i the way Eigen's pmadd does (re = tre - tim·0,
//     im = tim + tre·0, which only matters for infinities), and added to
//     C[i,j], which starts at +0: blocks are added in order.
//
// The blocks come from Eigen's heuristics for the cache sizes it reads on
// this machine (L1 32 KiB, L2 1 MiB, L3 32 MiB) and the thread count of
// XLA's intra-op pool (runtime.NumCPU()): the contraction runs on one
// thread when its cost model says so, with the single-thread blocking
// (kc up to 336), else with the multi-thread one (kc 320, column blocks
// from the L2 or L3 budget). Contractions Eigen shards over K (small M and
// N, long K) compute each K slice (multiples of 8, at least 48) as a
// product of its own with the multi-thread blocking for as many threads as
// slices, from +0, and add the slices' results: with 2 threads, two.

const (
	eigenL1      = 32 * 1024
	eigenL2      = 1024 * 1024
	eigenL3      = 32 * 1024 * 1024
	eigenMR      = 8 // Traits::mr for complex<float> on AVX
	eigenNR      = 4 // Traits::nr
	eigenC64Size = 8 // sizeof(std::complex<float>)
	eigenPacket  = 4 // Packet4cf
)

// c64EigenPlan is the blocking of one complex64 dot.
type c64EigenPlan struct {
	// segs are the K slices computed as products of their own and added
	// (one unless Eigen shards the contraction over K).
	segs []c64Seg
	// threads is the number of threads Eigen's cost model gives the
	// contraction (1: the sequential path).
	threads int
}

// c64Seg is one K slice [k0, k1) and its blocking.
type c64Seg struct {
	k0, k1 int
	kc     int // K block; the last block takes the remainder
	cb     int // column block (Eigen's mc); the last block takes the remainder
}

// Column kinds: how a column's products are added within a K block.
const (
	c64KindSeq   = iota // groups of 8: in order
	c64KindPairs        // trailing 4 or 2: even/odd accumulators over kl&^7
	c64KindQuad         // trailing single column: k mod 4 lanes over kl&^3
	c64KindCplx         // last m%4 rows × trailing single column: complex products in order
)

// c64RowKind is the kind of a column of the given kind in row i of m: the
// last m%4 rows (Eigen's trailing single columns) add every group's terms
// in order but the single column's, which adds whole complex products.
func c64RowKind(kind, i, m int) int {
	if i < m-m%4 {
		return kind
	}
	if kind == c64KindQuad {
		return c64KindCplx
	}
	return c64KindSeq
}

// eigenBlockingMT is computeProductBlockingSizes for num_threads > 1, in
// Eigen's names (k, m, n; m is XLA's columns, n its rows).
func eigenBlockingMT(k, m, n, nt int) (int, int, int) {
	const kdiv = eigenMR*eigenC64Size + eigenNR*eigenC64Size
	const ksub = eigenMR * eigenNR * eigenC64Size
	kCache := max(8, min((eigenL1-ksub)/kdiv, 320))
	if kCache < k {
		k = kCache - kCache%8
	}
	nCache := (eigenL2 - eigenL1) / (eigenNR * eigenC64Size * k)
	nPer := (n + nt - 1) / nt
	if nCache <= nPer {
		n = nCache - nCache%eigenNR
	} else {
		n = min(n, (nPer+eigenNR-1)-(nPer+eigenNR-1)%eigenNR)
	}
	mCache := (eigenL3 - eigenL2) / (eigenC64Size * k * nt)
	mPer := (m + nt - 1) / nt
	if mCache < mPer && mCache >= eigenMR {
		m = mCache - mCache%eigenMR
	} else {
		m = min(m, (mPer+eigenMR-1)-(mPer+eigenMR-1)%eigenMR)
	}
	return k, m, n
}

// eigenBlockingST is computeProductBlockingSizes for one thread.
func eigenBlockingST(k, m, n int) (int, int, int) {
	if max(k, m, n) < 48 {
		return k, m, n
	}
	const kPeel = 8
	const kdiv = eigenMR*eigenC64Size + eigenNR*eigenC64Size
	const ksub = eigenMR * eigenNR * eigenC64Size
	maxKC := max(((eigenL1-ksub)/kdiv)&^(kPeel-1), 1)
	oldK := k
	if k > maxKC {
		if k%maxKC == 0 {
			k = maxKC
		} else {
			k = maxKC - kPeel*((maxKC-1-k%maxKC)/(kPeel*(k/maxKC+1)))
		}
	}
	const actualL2 = 1572864
	remainingL1 := eigenL1 - ksub - m*k*eigenC64Size
	var maxNC int
	if remainingL1 >= eigenNR*eigenC64Size*k {
		maxNC = remainingL1 / (k * eigenC64Size)
	} else {
		maxNC = (3 * actualL2) / (2 * 2 * maxKC * eigenC64Size)
	}
	nc := min(actualL2/(2*k*eigenC64Size), maxNC) &^ (eigenNR - 1)
	if n > nc {
		if n%nc == 0 {
			n = nc
		} else {
			n = nc - eigenNR*((nc-n%nc)/(eigenNR*(n/nc+1)))
		}
	} else if oldK == k {
		problem := k * n * eigenC64Size
		actualLM, maxMC := actualL2, m
		if problem <= 1024 {
			actualLM = eigenL1
		} else if problem <= 32768 {
			actualLM = eigenL2
			maxMC = min(576, maxMC)
		}
		mc := min(actualLM/(3*k*eigenC64Size), maxMC)
		if mc > eigenMR {
			mc -= mc % eigenMR
		} else if mc == 0 {
			return k, m, n
		}
		if m%mc == 0 {
			m = mc
		} else {
			m = mc - eigenMR*((mc-m%mc)/(eigenMR*(m/mc+1)))
		}
	}
	return k, m, n
}

// eigenShardByCol is TensorContractionThreadPool's shardByCol.
func eigenShardByCol(m, n, nt int) bool {
	if m/nt >= eigenNR && (n/nt < eigenNR ||
		(n/nt < 4*eigenNR && n%(nt*eigenNR) != 0 && (m%(nt*eigenNR) == 0 || m/n >= 6))) {
		return false
	}
	if n/nt < 16*eigenNR && m > n*32 {
		return false
	}
	return true
}

// eigenTBBlocking is TensorContractionBlocking (k, m, n blocks).
func eigenTBBlocking(k, m, n, nt int, byCol bool) (kc, mc, nc int) {
	if byCol {
		kc, mc, nc = eigenBlockingMT(k, m, n, nt)
	} else {
		kc, nc, mc = eigenBlockingMT(k, n, m, nt)
	}
	return // the rhs packet (4) is at most 8: kc stays
}

// eigenComputeBandwidth is the contraction's computeBandwidth without FMA.
func eigenComputeBandwidth(byCol bool, bm, bn, bk int) float64 {
	if bk == 1 {
		return 4
	}
	x, y := bm, bn
	if byCol {
		x, y = bn, bm
	}
	if x < eigenNR || y < eigenMR {
		return 2
	}
	return 1 // 0.5 with FMA
}

const eigenLoadCycles = 11.0 / 64

// eigenThreads is the thread count the contraction's cost model picks.
func eigenThreads(m, n, k, dev int) int {
	byCol := eigenShardByCol(m, n, 2)
	bk, bm, bn := eigenTBBlocking(k, m, n, 2, byCol)
	kd := float64(bk)
	compute := kd * eigenComputeBandwidth(false, bm, bn, bk) / eigenPacket
	var loads float64
	if byCol {
		loads = eigenC64Size * (kd / float64(m))
	} else {
		loads = eigenC64Size * (kd / float64(n))
	}
	cost := float64(n) * float64(m) * (eigenLoadCycles*loads + eigenLoadCycles*eigenC64Size + compute)
	t := (cost-100000)/100000 + 0.9
	if t > 1<<30 {
		t = 1 << 30
	}
	return min(dev, max(1, int(t)))
}

// eigenThreadsByK is numThreadsInnerDim: 3000 cycles per thread (jaxlib's
// Eigen; with 4000 a 7×7450 by 7450×5 product stayed one K slice where jax
// shards it in two, and 97% of it differed).
func eigenThreadsByK(m, n, k, dev int) int {
	compute := eigenComputeBandwidth(true, m, n, k) * float64(m) * float64(n) / eigenPacket
	per := eigenLoadCycles*eigenC64Size*float64(n) + eigenLoadCycles*eigenC64Size + compute
	totalPar := float64(k) * per
	red := float64(m) * float64(n) * (eigenLoadCycles*2 + eigenLoadCycles + 1.0/eigenPacket)
	best, minCost := 1, totalPar
	for nt := 2; nt <= dev; nt++ {
		c := totalPar/float64(nt) + 100000 + float64(nt)*(red+3000)
		if c < minCost {
			best, minCost = nt, c
		}
	}
	return best
}

func eigenShardByInnerDim(m, n, k, nt, ntk int) bool {
	if n == 1 || ntk < 2 || ntk < nt || m*n*eigenC64Size > eigenL3/ntk || k/ntk < 2*eigenNR {
		return false
	}
	return max(m, n)/nt < eigenNR || (k/ntk > 8*eigenNR && (min(m, n) < 2*eigenNR || ntk > nt))
}

// xlaCPUThreads is the size of XLA:CPU's intra-op thread pool.
var xlaCPUThreads = runtime.NumCPU()

// planC64Eigen is the blocking of a rows×k by k×cols complex64 product.
func planC64Eigen(rows, cols, k, threads int) c64EigenPlan {
	m, n := cols, rows // Eigen computes the transposed product
	dev := max(threads, 1)
	nt := eigenThreads(m, n, k, dev)
	ntk := eigenThreadsByK(m, n, k, dev)
	if eigenShardByInnerDim(m, n, k, nt, ntk) {
		// evalShardedByInnerDim: slices of round_up8(ceil(k/ntk)), at
		// least 48, each blocked as a product for as many threads as
		// slices (by column).
		bs := min(k, max(12*eigenPacket, ((k+ntk-1)/ntk+7)&^7))
		nb := (k + bs - 1) / bs
		p := c64EigenPlan{threads: ntk}
		for k0 := 0; k0 < k; k0 += bs {
			k1 := min(k, k0+bs)
			kc, cb, _ := eigenTBBlocking(k1-k0, m, n, nb, true)
			p.segs = append(p.segs, c64Seg{k0, k1, kc, cb})
		}
		return p
	}
	if n == 1 {
		nt = 1
	}
	if nt == 1 {
		kc, cb, _ := eigenBlockingST(k, m, n)
		return c64EigenPlan{segs: []c64Seg{{0, k, kc, cb}}, threads: 1}
	}
	kc, cb, _ := eigenTBBlocking(k, m, n, nt, eigenShardByCol(m, n, nt))
	return c64EigenPlan{segs: []c64Seg{{0, k, kc, cb}}, threads: nt}
}

// c64Group is a run of columns [j, j+w) summed the same way.
type c64Group struct{ j, w, kind int }

// groups lists the column groups of a cols-wide product.
func (p c64Seg) groups(cols int) []c64Group {
	var g []c64Group
	for j0 := 0; j0 < cols; j0 += p.cb {
		w := min(p.cb, cols-j0)
		j := j0
		for ; j+8 <= j0+w; j += 8 {
			g = append(g, c64Group{j, 8, c64KindSeq})
		}
		r := j0 + w - j
		if r >= 4 {
			g = append(g, c64Group{j, 4, c64KindPairs})
			j, r = j+4, r-4
		}
		if r >= 2 {
			g = append(g, c64Group{j, 2, c64KindPairs})
			j, r = j+2, r-2
		}
		if r == 1 {
			g = append(g, c64Group{j, 1, c64KindQuad})
		}
	}
	return g
}

// c64Acc holds the four real sums of one element in a K block.
type c64Acc struct{ fr, fi, sr, si float32 }

// add takes one product, multiplied then added (float32 conversions keep
// the compiler from fusing them).
func (c *c64Acc) add(a, b complex64) {
	ar, ai, br, bi := real(a), imag(a), real(b), imag(b)
	c.fr = float32(ar*br) + c.fr
	c.fi = float32(ai*br) + c.fi
	c.sr = float32(ar*bi) + c.sr
	c.si = float32(ai*bi) + c.si
}

func (c *c64Acc) plus(d c64Acc) {
	c.fr += d.fr
	c.fi += d.fi
	c.sr += d.sr
	c.si += d.si
}

// into adds the block's value to *dst, through Eigen's alpha step.
func (c *c64Acc) into(dst *complex64) {
	c64Into(c.fr+-c.si, c.fi+c.sr, dst)
}

// c64Into adds the block value (tre, tim) times alpha = 1+0i to *dst.
func c64Into(tre, tim float32, dst *complex64) {
	re := tre + -float32(tim*0)
	im := tim + float32(tre*0)
	*dst = complex(re+real(*dst), im+imag(*dst))
}

// c64Operand reads one batch element of a dot operand.
type c64Operand struct {
	v      []complex64
	rs, cs int
}

func (o c64Operand) at(r, c int) complex64 { return o.v[r*o.rs+c*o.cs] }

// c64TailBlock adds to *c one K block of an element whose row terms are
// ar and column terms bc (contiguous, same length) for a column of the
// given kind: the reference order of the columns the tiles do not take.
func c64TailBlock(ar, bc []complex64, kind int, c *complex64) {
	kl := len(ar)
	bc = bc[:kl]
	var fr, fi, sr, si float32
	p := 0
	switch kind {
	case c64KindPairs:
		peeled := kl &^ 7
		var gr, gi, tr, ti float32 // the odd-k accumulator
		for ; p < peeled; p += 2 {
			x, y := ar[p], bc[p]
			fr = float32(real(x)*real(y)) + fr
			fi = float32(imag(x)*real(y)) + fi
			sr = float32(real(x)*imag(y)) + sr
			si = float32(imag(x)*imag(y)) + si
			x, y = ar[p+1], bc[p+1]
			gr = float32(real(x)*real(y)) + gr
			gi = float32(imag(x)*real(y)) + gi
			tr = float32(real(x)*imag(y)) + tr
			ti = float32(imag(x)*imag(y)) + ti
		}
		if peeled > 0 {
			fr, fi, sr, si = fr+gr, fi+gi, sr+tr, si+ti
		}
	case c64KindQuad:
		peeled := kl &^ 3
		var l [4]c64Acc
		for ; p < peeled; p += 4 {
			for q := range 4 {
				l[q].add(ar[p+q], bc[p+q])
			}
		}
		if peeled > 0 {
			l[0].plus(l[1])
			l[2].plus(l[3])
			l[0].plus(l[2])
			fr, fi, sr, si = l[0].fr, l[0].fi, l[0].sr, l[0].si
		}
	case c64KindCplx:
		var xr, xi float32
		for ; p < kl; p++ {
			x, y := ar[p], bc[p]
			xr = xr + (float32(real(x)*real(y)) - float32(imag(x)*imag(y)))
			xi = xi + (float32(real(x)*imag(y)) + float32(imag(x)*real(y)))
		}
		c64Into(xr, xi, c)
		return
	}
	for ; p < kl; p++ {
		x, y := ar[p], bc[p]
		fr = float32(real(x)*real(y)) + fr
		fi = float32(imag(x)*real(y)) + fi
		sr = float32(real(x)*imag(y)) + sr
		si = float32(imag(x)*imag(y)) + si
	}
	c64Into(fr+-si, fi+sr, c)
}

// c64TailCols packs B's columns outside the in-order groups, each as k
// contiguous terms, in group order.
func c64TailCols(k int, groups []c64Group, b c64Operand) []complex64 {
	nt := 0
	for _, g := range groups {
		if g.kind != c64KindSeq {
			nt += g.w
		}
	}
	if nt == 0 {
		return nil
	}
	bt := make([]complex64, nt*k)
	t := 0
	for _, g := range groups {
		if g.kind == c64KindSeq {
			continue
		}
		for j := g.j; j < g.j+g.w; j++ {
			col := bt[t*k : (t+1)*k]
			for q := range col {
				col[q] = b.at(q, j)
			}
			t++
		}
	}
	return bt
}

// c64RowTerms is row i of A as contiguous terms: in place when A's rows
// are, else copied into buf (len k).
func c64RowTerms(a c64Operand, i, k int, buf []complex64) []complex64 {
	if a.cs == 1 {
		return a.v[i*a.rs : i*a.rs+k]
	}
	for q := range buf {
		buf[q] = a.at(i, q)
	}
	return buf
}

// c64Tails adds the K block [k0, k1) of row i's columns outside the
// in-order groups (packed in bt by c64TailCols) to row.
func c64Tails(ar []complex64, bt []complex64, groups []c64Group, i, m, k, k0, k1 int, row []complex64) {
	t := 0
	for _, g := range groups {
		if g.kind == c64KindSeq {
			continue
		}
		kind := c64RowKind(g.kind, i, m)
		for j := g.j; j < g.j+g.w; j++ {
			c64TailBlock(ar[k0:k1], bt[t*k+k0:t*k+k1], kind, &row[j])
			t++
		}
	}
}

// c64EigenMinFlops is the product size from which the vector path pays
// for its packing.
const c64EigenMinFlops = 1 << 15

// dotC64Eigen stores in c (nb row-major m×n matrices, any contents on
// entry: each worker clears its rows first) the nb products a[b]·bm[b]
// (m×k by k×n complex64 matrices in layouts la, lb) in XLA:CPU's order.
func dotC64Eigen(par, nb, m, n, k int, a []complex64, la gemmLayout, bm []complex64, lb gemmLayout, c []complex64) {
	if m == 0 || n == 0 || k == 0 {
		clear(c)
		return
	}
	p := planC64Eigen(m, n, k, xlaCPUThreads)
	parts := make([][]complex64, len(p.segs))
	for si := 1; si < len(p.segs); si++ {
		parts[si] = make([]complex64, m*n)
	}
	for b := 0; b < nb; b++ {
		parts[0] = c[b*m*n : (b+1)*m*n]
		for si, s := range p.segs {
			ao := c64Operand{a[b*la.bs+s.k0*la.cs:], la.rs, la.cs}
			bo := c64Operand{bm[b*lb.bs+s.k0*lb.rs:], lb.rs, lb.cs}
			groups := s.groups(n)
			kl := s.k1 - s.k0
			if m*n*kl < c64EigenMinFlops || !c64EigenVector(par, m, n, kl, s, groups, ao, bo, parts[si]) {
				c64EigenScalar(par, m, n, kl, s, groups, ao, bo, parts[si])
			}
		}
		c64AddSlices(parts)
	}
}

// c64AddSlices adds the K slices' products into parts[0] as
// evalShardedByInnerDim does: ranges of 4 slices into their first
// ((d + s1) + (s2 + s3), or one at a time for a shorter last range), then
// the ranges' firsts into parts[0], three at a time the same way.
func c64AddSlices(parts [][]complex64) {
	add := func(d []complex64, s ...[]complex64) {
		for i := range d {
			switch len(s) {
			case 1:
				d[i] = complex(real(d[i])+real(s[0][i]), imag(d[i])+imag(s[0][i]))
			case 3:
				re := (real(d[i]) + real(s[0][i])) + (real(s[1][i]) + real(s[2][i]))
				im := (imag(d[i]) + imag(s[0][i])) + (imag(s[1][i]) + imag(s[2][i]))
				d[i] = complex(re, im)
			}
		}
	}
	eigenAddSliceTree(parts, add)
}

// dotC64EigenApplies reports whether a dot of plan p with these element
// types runs in XLA:CPU's Eigen order: c64 operands and result, and a
// contraction XLA keeps as a dot (depth 1 becomes a multiply). A single
// row is Eigen's matrix-vector product, reproduced for a row-major B
// (dotC64Gemv; the layout is checked there).
func dotC64EigenApplies(p *dotPlan, lhs, rhs, out dtype.Type) bool {
	return lhs == dtype.C64 && rhs == dtype.C64 && out == dtype.C64 && p.k >= 2 && (p.m >= 2 || p.n >= 2)
}

// c64GemvApplies reports whether a single-row product with B in layout lb
// runs in Eigen's column-major gemv order (B rows contiguous).
func c64GemvApplies(m int, lb gemmLayout) bool { return m == 1 && lb.cs == 1 }

// dotC64Gemv adds a[b]·bm[b] for 1×k rows a[b] and row-major k×n B to c
// in the order of Eigen's column-major general_matrix_vector_product (XLA
// hands Eigen Bᵀ·aᵀ): K in blocks of 16 columns of Bᵀ (4 when a row of B
// spans 32000 bytes or more, all of K below 128), each block a sum from +0
// of whole complex products in order (re += ar·br - ai·bi,
// im += ar·bi + ai·br, products rounded), times alpha and added to C.
func dotC64Gemv(nb, n, k int, a []complex64, la gemmLayout, bm []complex64, lb gemmLayout, c []complex64) {
	clear(c)
	kb := k
	if k >= 128 {
		kb = 16
		if n*eigenC64Size >= 32000 {
			kb = 4
		}
	}
	xr := make([]float32, n)
	xi := make([]float32, n)
	for b := 0; b < nb; b++ {
		cb := c[b*n : (b+1)*n]
		for k0 := 0; k0 < k; k0 += kb {
			clear(xr)
			clear(xi)
			for p := k0; p < min(k, k0+kb); p++ {
				av := a[b*la.bs+p*la.cs]
				ar, ai := real(av), imag(av)
				row := bm[b*lb.bs+p*lb.rs : b*lb.bs+p*lb.rs+n]
				for j, v := range row {
					br, bi := real(v), imag(v)
					xr[j] = xr[j] + (float32(ar*br) - float32(ai*bi))
					xi[j] = xi[j] + (float32(ar*bi) + float32(ai*br))
				}
			}
			for j := range cb {
				c64Into(xr[j], xi[j], &cb[j])
			}
		}
	}
}

// c64EigenScalar is the portable path: B's in-order groups packed as the
// vector path packs them, rows split over the goroutines, each row's
// in-order groups two columns at a time (eight chains), the other groups
// element by element.
func c64EigenScalar(par, m, n, k int, p c64Seg, groups []c64Group, a, b c64Operand, c []complex64) {
	seq := 0
	for _, g := range groups {
		if g.kind == c64KindSeq {
			seq++
		}
	}
	par = min(par, max(1, m*n*k>>16))
	bp := c64PackBuf(seq * k * 16)
	c64PackB(par, k, groups, b, bp)
	bt := c64TailCols(k, groups, b)
	runParallel(par, m, func(lo, hi int) {
		var arow []complex64
		if a.cs != 1 {
			arow = make([]complex64, k)
		}
		for i := lo; i < hi; i++ {
			ar := c64RowTerms(a, i, k, arow)
			row := c[i*n : (i+1)*n]
			clear(row)
			for k0 := 0; k0 < k; k0 += p.kc {
				k1 := min(k, k0+p.kc)
				gi := 0
				for _, g := range groups {
					if g.kind == c64KindSeq {
						panel := bp[gi*k*16+k0*16 : gi*k*16+k1*16]
						for q := 0; q < 8; q += 2 {
							c64Seq2(ar[k0:k1], panel[2*q:], row[g.j+q:g.j+q+2])
						}
						gi++
					}
				}
				c64Tails(ar, bt, groups, i, m, k, k0, k1, row)
			}
		}
	})
	c64PackRelease(bp)
}

// c64Seq2 adds a K block of two in-order columns: ar holds the row's
// terms, panel the columns' (br, bi, br, bi) at a 16-float stride.
func c64Seq2(ar []complex64, panel []float32, dst []complex64) {
	var fr0, fi0, sr0, si0, fr1, fi1, sr1, si1 float32
	_ = panel[(len(ar)-1)*16+3]
	for p, av := range ar {
		x, y := real(av), imag(av)
		b := panel[p*16 : p*16+4 : p*16+4]
		fr0 = float32(x*b[0]) + fr0
		fi0 = float32(y*b[0]) + fi0
		sr0 = float32(x*b[1]) + sr0
		si0 = float32(y*b[1]) + si0
		fr1 = float32(x*b[2]) + fr1
		fi1 = float32(y*b[2]) + fi1
		sr1 = float32(x*b[3]) + sr1
		si1 = float32(y*b[3]) + si1
	}
	c64Into(fr0+-si0, fi0+sr0, &dst[0])
	c64Into(fr1+-si1, fi1+sr1, &dst[1])
}

// c64PackB packs the in-order groups of B, in order, each as k rows of
// the eight columns' (br, bi) pairs.
func c64PackB(par, k int, groups []c64Group, b c64Operand, bp []float32) {
	var seq []int
	for _, g := range groups {
		if g.kind == c64KindSeq {
			seq = append(seq, g.j)
		}
	}
	runParallel(par, len(seq), func(lo, hi int) {
		for gi := lo; gi < hi; gi++ {
			dst := bp[gi*k*16 : (gi+1)*k*16]
			j := seq[gi]
			for q := 0; q < k; q++ {
				d := dst[q*16 : q*16+16]
				if b.cs == 1 { // the group's (br, bi) pairs lie together
					src := b.v[q*b.rs+j : q*b.rs+j+8]
					for t, v := range src {
						d[2*t], d[2*t+1] = real(v), imag(v)
					}
					continue
				}
				src := b.v[q*b.rs+j*b.cs:]
				for t := 0; t < 8; t++ {
					v := src[t*b.cs]
					d[2*t], d[2*t+1] = real(v), imag(v)
				}
			}
		}
	})
}

// c64Pool recycles the vector path's packing buffers.
var c64PackPool sync.Pool

func c64PackBuf(n int) []float32 {
	if v, ok := c64PackPool.Get().(*[]float32); ok && cap(*v) >= n {
		return (*v)[:n]
	}
	return make([]float32, n)
}

func c64PackRelease(v []float32) { c64PackPool.Put(&v) }

// eigenAddSliceTree adds parts[1:] into parts[0] in evalShardedByInnerDim's
// tree: ranges of 4 slices into their first (add(d, s1, s2, s3), or one at
// a time for a shorter last range), then the ranges' firsts into parts[0],
// three at a time the same way. add(d, s...) adds s into d as the element
// type's Eigen kernel does; the f32 and c64 models share this order.
func eigenAddSliceTree[T any](parts [][]T, add func(d []T, s ...[]T)) {
	n := len(parts)
	ranges := (n + 3) / 4
	for r := 0; r < ranges; r++ {
		d := 4 * r
		size := min(4, n-d)
		if size == 4 {
			add(parts[d], parts[d+1], parts[d+2], parts[d+3])
			continue
		}
		for i := 1; i < size; i++ {
			add(parts[d], parts[d+i])
		}
	}
	r := 1
	for ; r+2 < ranges; r += 3 {
		add(parts[0], parts[4*r], parts[4*(r+1)], parts[4*(r+2)])
	}
	for ; r < ranges; r++ {
		add(parts[0], parts[4*r])
	}
}
