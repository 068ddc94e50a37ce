package eval

import (
	"os"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
)

// f32 dots XLA:CPU runs as an Eigen tensor contraction (DotThunk), in its
// order.
//
// XLA:CPU (jaxlib 0.10.2) hands YNNPACK the f32 matrix-matrix dots whose lhs
// is [batch..., M, K] (dot_ynn.go); matrix-vector dots run its own gemv
// loops (dot_order.go) and dots whose operands both have a side of at most 3
// (k <= 3, or m <= 3 and n <= 3) its naive loop: one FMA chain over K from
// +0. Every other f32 matrix-matrix dot (above all `a.T @ b`, the weight
// gradients `x.T @ g` of a backward pass; per batch element for batched
// ones; bf16 and f16 ones in f32 around it) is an Eigen contraction. jaxlib
// builds Eigen with TensorFlow's custom contraction kernel, so each block
// product of the contraction is oneDNN's dnnl_sgemm (single-threaded, JIT
// AVX-512 FMA kernels), not Eigen's gebp (TENSORFLOW_USE_CUSTOM_CONTRACTION_KERNEL=0
// changes 82% of the elements of a [300,200]^T x [300,100]). Measured bit for
// bit against jax on the 2-core EPYC (tests/test_dot_eigen_f32_order.py):
//
//   - Eigen picks threads, sharding and blocking as for the c64 dots
//     (dot_c64_eigen.go) with the traits of float on AVX without FMA
//     (mr 16, nr 4, 4 bytes, packets of 8), then TensorFlow's
//     TensorContractionBlocking<float> refines the blocks for oneDNN: the
//     column block (Eigen's mc) becomes min(cols, ceil(1.5·mc/48)·48), the
//     row block (nc) min(rows, ceil(nc/24)·24), and K is cut into
//     s = ceil(k/kc) slices of kc = min(k, ceil8(floor(k/s))).
//   - Each block product is one dnnl_sgemm call over a kc block of K, its
//     first block with beta 0, the others adding to C. In it, oneDNN's
//     no-copy kernel (the copy-based one is never chosen for Eigen's block
//     sizes; both sum alike) cuts K deeper than 384 in two halves
//     ((s+1)/2 then s/2; Eigen's blocks are at most 400 deep); each part
//     is an FMA chain from +0 in k order, added to C: c = part + c.
//   - A block of a single row (XLA's last row when rows % rb == 1) is
//     oneDNN's n == 1 path: one FMA chain continuing from C, so one chain
//     over the whole K of the contraction.
//   - A block of a single column (XLA's last column when cols % cb == 1)
//     is oneDNN's gemv_t kernel, per kc block: eight lanes, lane l the FMA
//     chain from +0 over the block's k ≡ l (mod 8) of its first
//     floor(L/16)·16 terms, added as ((l0+l1)+(l4+l5))+((l2+l3)+(l6+l7))
//     to C; then the remaining L%16 terms in groups of 8, 4, 2 and 1 (the
//     bits of L%16, in that order), each group's products in lanes from +0
//     reduced the same way and added to C.
//   - Contractions Eigen shards over K (small M and N, long K) compute each
//     K slice as a product of its own and add the slices as
//     evalShardedByInnerDim does (addSlicesF32).
//
// Nothing depends on the operands' layouts: Eigen packs (or reads in place)
// the blocks, and the leading dimensions oneDNN sees only choose between
// kernels that sum alike.

// f32EigenOff disables the path (GOLDTRACE_F32_EIGEN=0).
var f32EigenOff = os.Getenv("GOLDTRACE_F32_EIGEN") == "0"

// eigenTraits are the gebp traits and scalar sizes Eigen's contraction
// heuristics read.
type eigenTraits struct {
	mr, nr int // gebp register block
	size   int // bytes per scalar (lhs, rhs and result alike)
	packet int // packet size of the scalars
}

// eigenF32Traits is float on AVX without FMA (jaxlib's Eigen).
var eigenF32Traits = eigenTraits{mr: 16, nr: 4, size: 4, packet: 8}

// blockingMT is computeProductBlockingSizes for num_threads > 1 (Eigen's
// k, m, n).
func (t eigenTraits) blockingMT(k, m, n, nt int) (int, int, int) {
	kdiv := t.mr*t.size + t.nr*t.size
	ksub := t.mr * t.nr * t.size
	kCache := max(8, min((eigenL1-ksub)/kdiv, 320))
	if kCache < k {
		k = kCache - kCache%8
	}
	nCache := (eigenL2 - eigenL1) / (t.nr * t.size * k)
	nPer := (n + nt - 1) / nt
	if nCache <= nPer {
		n = nCache - nCache%t.nr
	} else {
		n = min(n, (nPer+t.nr-1)-(nPer+t.nr-1)%t.nr)
	}
	mCache := (eigenL3 - eigenL2) / (t.size * k * nt)
	mPer := (m + nt - 1) / nt
	if mCache < mPer && mCache >= t.mr {
		m = mCache - mCache%t.mr
	} else {
		m = min(m, (mPer+t.mr-1)-(mPer+t.mr-1)%t.mr)
	}
	return k, m, n
}

// blockingST is computeProductBlockingSizes for one thread.
func (t eigenTraits) blockingST(k, m, n int) (int, int, int) {
	if max(k, m, n) < 48 {
		return k, m, n
	}
	const kPeel = 8
	kdiv := t.mr*t.size + t.nr*t.size
	ksub := t.mr * t.nr * t.size
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
	remainingL1 := eigenL1 - ksub - m*k*t.size
	var maxNC int
	if remainingL1 >= t.nr*t.size*k {
		maxNC = remainingL1 / (k * t.size)
	} else {
		maxNC = (3 * actualL2) / (2 * 2 * maxKC * t.size)
	}
	nc := min(actualL2/(2*k*t.size), maxNC) &^ (t.nr - 1)
	if n > nc {
		if n%nc == 0 {
			n = nc
		} else {
			n = nc - t.nr*((nc-n%nc)/(t.nr*(n/nc+1)))
		}
	} else if oldK == k {
		problem := k * n * t.size
		actualLM, maxMC := actualL2, m
		if problem <= 1024 {
			actualLM = eigenL1
		} else if problem <= 32768 {
			actualLM = eigenL2
			maxMC = min(576, maxMC)
		}
		mc := min(actualLM/(3*k*t.size), maxMC)
		if mc > t.mr {
			mc -= mc % t.mr
		} else if mc == 0 {
			return k, m, n
		}
		if m%mc == 0 {
			m = mc
		} else {
			m = mc - t.mr*((mc-m%mc)/(t.mr*(m/mc+1)))
		}
	}
	return k, m, n
}

// shardByCol is TensorContractionThreadPool's shardByCol.
func (t eigenTraits) shardByCol(m, n, nt int) bool {
	if m/nt >= t.nr && (n/nt < t.nr ||
		(n/nt < 4*t.nr && n%(nt*t.nr) != 0 && (m%(nt*t.nr) == 0 || m/n >= 6))) {
		return false
	}
	if n/nt < 16*t.nr && m > n*32 {
		return false
	}
	return true
}

// tfBlocking is TensorFlow's TensorContractionBlocking<float> (Eigen's k,
// m, n; nt 1: the sequential blocking): Eigen's heuristic refined for
// oneDNN.
func (t eigenTraits) tfBlocking(k, m, n, nt int, byCol bool) (kc, mc, nc int) {
	switch {
	case nt == 1:
		kc, mc, nc = t.blockingST(k, m, n)
	case byCol:
		kc, mc, nc = t.blockingMT(k, m, n, nt)
	default:
		kc, nc, mc = t.blockingMT(k, n, m, nt)
	}
	if kc <= 0 || mc <= 0 || nc <= 0 {
		return kc, mc, nc
	}
	mc = min(m, ceilDiv(int(float32(mc)*1.5), 48)*48)
	nc = min(n, ceilDiv(nc, 24)*24)
	slices := max(1, ceilDiv(k, kc))
	kc = min(k, ceilDiv(k/slices, 8)*8)
	return kc, mc, nc
}

// bandwidth is the contraction's computeBandwidth without FMA.
func (t eigenTraits) bandwidth(byCol bool, bm, bn, bk int) float64 {
	if bk == 1 {
		return 4
	}
	x, y := bm, bn
	if byCol {
		x, y = bn, bm
	}
	if x < t.nr || y < t.mr {
		return 2
	}
	return 1 // 0.5 with FMA
}

// threads is the thread count the contraction's cost model picks.
func (t eigenTraits) threads(m, n, k, dev int) int {
	byCol := t.shardByCol(m, n, 2)
	bk, bm, bn := t.tfBlocking(k, m, n, 2, byCol)
	kd := float64(bk)
	compute := kd * t.bandwidth(false, bm, bn, bk) / float64(t.packet)
	var loads float64
	if byCol {
		loads = float64(t.size) * (kd / float64(m))
	} else {
		loads = float64(t.size) * (kd / float64(n))
	}
	cost := float64(n) * float64(m) * (eigenLoadCycles*loads + eigenLoadCycles*float64(t.size) + compute)
	th := (cost-100000)/100000 + 0.9
	if th > 1<<30 {
		th = 1 << 30
	}
	return min(dev, max(1, int(th)))
}

// threadsByK is numThreadsInnerDim: even thread counts, 3000 cycles per
// thread (jaxlib's Eigen; the c64 model's 4000 and every count from 2 send
// 5847×30×2 to one thread where jax shards it over K).
func (t eigenTraits) threadsByK(m, n, k, dev int) int {
	sz, pk := float64(t.size), float64(t.packet)
	compute := t.bandwidth(true, m, n, k) * float64(m) * float64(n) / pk
	per := eigenLoadCycles*sz*float64(n) + eigenLoadCycles*sz + compute
	totalPar := float64(k) * per
	red := float64(m) * float64(n) * (eigenLoadCycles*2 + eigenLoadCycles + 1.0/pk)
	best, minCost := 1, totalPar
	for nt := 2; nt <= dev; nt += 2 {
		c := totalPar/float64(nt) + 100000 + float64(nt)*(red+3000)
		if c < minCost {
			best, minCost = nt, c
		}
	}
	return best
}

func (t eigenTraits) shardByInnerDim(m, n, k, nt, ntk int) bool {
	if n == 1 || ntk < 2 || ntk < nt || m*n*t.size > eigenL3/ntk || k/ntk < 2*t.nr {
		return false
	}
	return max(m, n)/nt < t.nr || (k/ntk > 8*t.nr && (min(m, n) < 2*t.nr || ntk > nt))
}

// f32EigenSeg is one K slice [k0, k1) of an f32 contraction and its blocks.
type f32EigenSeg struct {
	k0, k1 int
	kc     int // Eigen's K block; the last takes the remainder
	cb     int // column block (Eigen's mc)
	rb     int // row block (Eigen's nc)
}

// f32EigenPlan is how XLA:CPU sums an f32 dot it runs as an Eigen
// contraction (or in its naive loop).
type f32EigenPlan struct {
	// segs are the K slices computed as products of their own and added
	// (one unless Eigen shards the contraction over K).
	segs []f32EigenSeg
	// naive: XLA's naive loop, one FMA chain over K from +0.
	naive bool
}

// f32NaiveDot reports whether XLA:CPU runs a rows×k by k×cols dot in its
// naive loop: both operands have a side of at most 3.
func f32NaiveDot(rows, cols, k int) bool {
	return (rows <= 3 || k <= 3) && (k <= 3 || cols <= 3)
}

// planF32Eigen is the plan of a rows×k by k×cols f32 product on a pool of
// threads threads.
func planF32Eigen(rows, cols, k, threads int) f32EigenPlan {
	if f32NaiveDot(rows, cols, k) {
		return f32EigenPlan{naive: true}
	}
	t := eigenF32Traits
	m, n := cols, rows // Eigen computes the transposed product
	dev := max(threads, 1)
	nt := t.threads(m, n, k, dev)
	ntk := t.threadsByK(m, n, k, dev)
	if t.shardByInnerDim(m, n, k, nt, ntk) {
		// evalShardedByInnerDim: slices of round_up8(ceil(k/ntk)), at
		// least 12 packets, each blocked as a product for as many threads
		// as slices (by column).
		bs := min(k, max(12*t.packet, ((k+ntk-1)/ntk+7)&^7))
		nb := (k + bs - 1) / bs
		var p f32EigenPlan
		for k0 := 0; k0 < k; k0 += bs {
			k1 := min(k, k0+bs)
			kc, cb, rb := t.tfBlocking(k1-k0, m, n, nb, true)
			p.segs = append(p.segs, f32EigenSeg{k0, k1, kc, cb, rb})
		}
		return p
	}
	if n == 1 {
		nt = 1
	}
	byCol := nt == 1 || t.shardByCol(m, n, nt)
	kc, cb, rb := t.tfBlocking(k, m, n, nt, byCol)
	return f32EigenPlan{segs: []f32EigenSeg{{0, k, kc, cb, rb}}}
}

// dnnlMaxK is the deepest K part oneDNN's no-copy sgemm sums as one chain.
const dnnlMaxK = 384

// blocks lists the ends (relative to k0) of the K parts of the slice each
// element sums as chains from +0: Eigen's kc blocks, those deeper than
// dnnlMaxK halved as oneDNN does.
func (s f32EigenSeg) blocks() []int {
	var ends []int
	kl := s.k1 - s.k0
	for b := 0; b < kl; b += s.kc {
		e := min(kl, b+s.kc)
		for p := b; p < e; {
			d := e - p
			if d >= 2*dnnlMaxK {
				d = dnnlMaxK
			} else if d > dnnlMaxK {
				d = (d + 1) / 2
			}
			p += d
			ends = append(ends, p)
		}
	}
	return ends
}

// kRun is a run [lo, hi) of K parts of depth kc, the last possibly
// shallower: what one call of a GEMM kernel with that kc sums.
type kRun struct{ lo, hi, kc int }

// runs groups the slice's parts (blocks) into kernel runs.
func (s f32EigenSeg) runs() []kRun {
	ends := s.blocks()
	var out []kRun
	lo := 0
	for i := 0; i < len(ends); {
		d := ends[i] - lo
		j := i + 1
		for j < len(ends) && ends[j]-ends[j-1] == d {
			j++
		}
		if j < len(ends) && ends[j]-ends[j-1] < d {
			j++ // a shallower part ends the run
		}
		out = append(out, kRun{lo, ends[j-1], d})
		lo = ends[j-1]
		i = j
	}
	return out
}

// eigenF32Route returns the plan of an f32 dot (or a bf16/f16 one computed
// in f32) that XLA:CPU runs as an Eigen contraction or its naive loop, or
// nil: YNNPACK's dots, matrix-vector products and contractions of depth
// at most 1 (XLA makes those a multiply) stay elsewhere. Only AVX-512
// hosts with the assembly FMA kernels (ynnISA 512) take it: on an AVX2
// host (bench/avx2only) oneDNN runs other kernels, whose sums depend on
// the element's place in its tile (an 8×8×16 product is mostly two lanes
// over even and odd k, a 20×30×40 one mostly one chain), not modelled.
func eigenF32Route(p *dotPlan, lt, rt, ot dtype.Type, lhsIn, rhsIn *hlo.Instruction) *f32EigenPlan {
	if ynnISA != 512 || ynnOrderDisabled || f32EigenOff {
		return nil
	}
	switch {
	case lt == dtype.F32 && rt == dtype.F32 && ot == dtype.F32:
	case lt == rt && (lt == dtype.BF16 || lt == dtype.F16) && ot == lt:
	case lt == dtype.BF16 && rt == dtype.BF16 && ot == dtype.F32:
	default:
		return nil
	}
	if p.m <= 1 || p.n <= 1 || p.k <= 1 {
		return nil
	}
	if _, ok := ynnTakes(p, lhsIn, rhsIn); ok {
		return nil
	}
	pl := planF32Eigen(p.m, p.n, p.k, xlaCPUThreads)
	return &pl
}

// dotF32Eigen sets c (nb row-major m×n matrices, whatever it held) to the
// products a[b]·bm[b] (m×k by k×n, layouts la and lb) in the order of plan
// pl.
func dotF32Eigen(par, nb, m, n, k int, a []float32, la gemmLayout, bm []float32, lb gemmLayout, c []float32, pl *f32EigenPlan) {
	if nb == 0 || m == 0 || n == 0 {
		return
	}
	kn := kernelFor[float32]()
	if k == 0 {
		clear(c[:nb*m*n])
		return
	}
	if pl.naive {
		kn.withKC(k).runOver(par, nb, m, n, k, a, la, bm, lb, c)
		return
	}
	parts := make([][]float32, len(pl.segs))
	parts[0] = c
	for si := 1; si < len(parts); si++ {
		parts[si] = storageForWriting[float32](nb * m * n)
	}
	for si, s := range pl.segs {
		dst := parts[si]
		for ri, r := range s.runs() {
			kr := kn.withKC(r.kc)
			av, bv := a[(s.k0+r.lo)*la.cs:], bm[(s.k0+r.lo)*lb.rs:]
			if ri == 0 {
				kr.runOver(par, nb, m, n, r.hi-r.lo, av, la, bv, lb, dst)
			} else {
				kr.run(par, nb, m, n, r.hi-r.lo, av, la, bv, lb, dst)
			}
		}
		f32EigenEdges(par, nb, m, n, s, a, la, bm, lb, dst)
	}
	if len(parts) > 1 {
		addSlicesF32(par, parts)
	}
}

// uniformStep returns the depth of the K blocks every element of an
// m×n×k product of plan pl sums in (each an FMA chain from +0, added to the
// element in order, the last one the remainder), or 0: when the
// contraction is sharded over K, its K parts are not uniform or some row
// or column is summed apart (f32EigenEdges).
func (pl *f32EigenPlan) uniformStep(m, n, k int) int {
	if pl.naive {
		return k
	}
	if len(pl.segs) != 1 {
		return 0
	}
	s := pl.segs[0]
	runs := s.runs()
	if len(runs) != 1 || (n > 1 && n%s.cb == 1) || (m > 1 && m%s.rb == 1) {
		return 0
	}
	return runs[0].kc
}

// dotF32EigenEval computes dot p (viewed as a and b) in the order of its
// plan p.eigen: where every element sums in uniform K blocks, a product
// whose consumer runs on its tiles does so (dot_epilogue.go) and many
// small products take the batched small-product path (dot_ynn_tiny.go).
func dotF32EigenEval(ev *Evaluator, par int, p *dotPlan, a []float32, la gemmLayout, b []float32, lb gemmLayout) []float32 {
	c := ev.newF32sOver(p.b * p.m * p.n) // every element is set
	if ks := p.eigen.uniformStep(p.m, p.n, p.k); ks > 0 {
		kn := kernelFor[float32]()
		if e := ev.takeDotEpilogue(); e != nil && p.b == 1 {
			if kn.withKC(ks).runOverTiles(par, p.m, p.n, p.k, a, la, b, lb, c,
				func(r0, r1, c0, c1 int) { e.tile(c, r0, r1, c0, c1) }) {
				e.ran = true
				return c
			}
		}
		if p.b > 1 && takesSmall(p.b, p.m, p.n, p.k) {
			y := &ynnDot{tasks: []ynnTask{{i1: p.m, j1: p.n, tk: 1, kstep: ks, fma: true}}, kn: kn}
			if y.runTiny(par, p.b, p.m, p.n, p.k, a, la, b, lb, c) {
				return c
			}
		}
	}
	dotF32Eigen(par, p.b, p.m, p.n, p.k, a, la, b, lb, c, p.eigen)
	return c
}

// f32EigenEdges recomputes the elements of slice s that oneDNN sums apart:
// a column alone in its column block (gemv_t, f32GemvT per kc block) and a
// row alone in its row block (one chain over the slice, which wins where
// both meet).
func f32EigenEdges(par, nb, m, n int, s f32EigenSeg, a []float32, la gemmLayout, bm []float32, lb gemmLayout, c []float32) {
	loneCol, loneRow := -1, -1
	if n > 1 && n%s.cb == 1 {
		loneCol = n - 1
	}
	if m > 1 && m%s.rb == 1 {
		loneRow = m - 1
	}
	if loneCol < 0 && loneRow < 0 {
		return
	}
	kl := s.k1 - s.k0
	runParallel(min(par, nb), nb, func(lo, hi int) {
		ar := make([]float32, kl)
		bc := make([]float32, kl)
		for b := lo; b < hi; b++ {
			cb := c[b*m*n : (b+1)*m*n]
			row := func(i int) []float32 {
				for q := range ar {
					ar[q] = a[b*la.bs+i*la.rs+(s.k0+q)*la.cs]
				}
				return ar
			}
			col := func(j int) []float32 {
				for q := range bc {
					bc[q] = bm[b*lb.bs+(s.k0+q)*lb.rs+j*lb.cs]
				}
				return bc
			}
			if loneCol >= 0 {
				y := col(loneCol)
				for i := 0; i < m; i++ {
					if i == loneRow {
						continue
					}
					x := row(i)
					var v float32
					for b0 := 0; b0 < kl; b0 += s.kc {
						b1 := min(kl, b0+s.kc)
						v = f32GemvT(x[b0:b1], y[b0:b1], v)
					}
					cb[i*n+loneCol] = v
				}
			}
			if loneRow >= 0 {
				x := row(loneRow)
				for j := 0; j < n; j++ {
					y := col(j)
					var v float32
					for q := range x {
						v = fma32(x[q], y[q], v)
					}
					cb[loneRow*n+j] = v
				}
			}
		}
	})
}

// f32GemvT adds to v the dot product of x and y in the order of oneDNN's
// gemv_t kernel (one call, unit stride).
func f32GemvT(x, y []float32, v float32) float32 {
	var acc [8]float32
	red := func() float32 {
		return ((acc[0] + acc[1]) + (acc[4] + acc[5])) + ((acc[2] + acc[3]) + (acc[6] + acc[7]))
	}
	p := 0
	if len(x) >= 16 {
		for ; len(x)-p >= 16; p += 16 {
			for q := 0; q < 16; q++ {
				acc[q&7] = fma32(x[p+q], y[p+q], acc[q&7])
			}
		}
		v = red() + v
	}
	rest := len(x) - p
	for ux := 8; ux > 0; ux >>= 1 {
		if rest&ux == 0 {
			continue
		}
		acc = [8]float32{}
		for l := 0; l < ux; l++ {
			acc[l] = fma32(x[p+l], y[p+l], 0)
		}
		p += ux
		v = red() + v
	}
	return v
}

// addSlicesF32 adds the K slices' products into parts[0] as
// evalShardedByInnerDim does: ranges of 4 slices into their first
// ((d + s1) + (s2 + s3), or one at a time for a shorter last range), then
// the ranges' firsts into parts[0], three at a time the same way.
func addSlicesF32(par int, parts [][]float32) {
	add := func(d []float32, s ...[]float32) {
		chunks := len(d)/4096 + 1
		runParallel(par, chunks, func(lo, hi int) {
			for i := lo * len(d) / chunks; i < hi*len(d)/chunks; i++ {
				switch len(s) {
				case 1:
					d[i] = d[i] + s[0][i]
				case 3:
					d[i] = (d[i] + s[0][i]) + (s[1][i] + s[2][i])
				}
			}
		})
	}
	eigenAddSliceTree(parts, add)
}
