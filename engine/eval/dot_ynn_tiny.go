package eval

import (
	"math"
	"os"
)

// Batched dots of tiny matrices (jax.vmap of an 8x8 @ 8x8 over 65536
// pairs) spent most of their time outside arithmetic: ynnDot.lanes packs B,
// allocates its lanes and runs a goroutine loop per batch element, for 512
// multiply-adds. Here each batch element is summed in the plan's order,
// eight output columns at a time on VFMADD/VADDPS (ynnTinyTaskVec, the
// GOEXPERIMENT=simd build) or element by element (ynnTinyTask), with
// nothing allocated per element and the batch split over the goroutines:
//
//   - per task, per K block (kstep deep, K past the last multiple of tk a
//     block of its own), lane r is the FMA chain from +0 over the block's
//     k ≡ r (mod tk), in k order, each step rounded once (fma32Exact),
//     then added to +0 (the lane's cleared storage: -0 becomes +0);
//   - the lanes are added as s0+s1 or (s0+s1)+(s2+s3) (one lane: s0);
//   - the first block sets the element, each later one is added: s + c.
//
// This is the arithmetic of lanes (and of the tile_k 1 GEMM over the K
// blocks), value for value. The one thing it could choose differently is
// which NaN payload survives when two NaNs meet; with no NaN among the
// operands every NaN is the default one (Inf*0, Inf-Inf), so a batch
// element whose operands hold a NaN goes the general way instead.

// ynnTinyMax bounds m, n and k of the products always taken here (a
// single product of at most ynnTinyMax³ included); ynnSmallWork bounds
// m·n·k of the larger ones taken when batched (nb > 1), whose per-product
// GEMM set-up (packing, the K-block loop, a parallel loop per product)
// cost more than their arithmetic: jax.vmap of [2,64]x[64,2] or of
// [3,3]x[3,64] over thousands of pairs ran 2.2-2.9x XLA:CPU's time. Past
// it the GEMM's register tiles win: the row kernel sums each row's chain
// alone (vmap of 32³ products: 96 ms here against 18 on the GEMM).
const (
	ynnTinyMax   = 16
	ynnSmallWork = 1 << 13
)

// takesSmall reports whether products of m x k x n, nb of them, take the
// batched small-product path.
func takesSmall(nb, m, n, k int) bool {
	if m == 0 || n == 0 || k == 0 || nb == 0 {
		return false
	}
	if m <= ynnTinyMax && n <= ynnTinyMax && k <= ynnTinyMax {
		return true
	}
	return nb > 1 && m*n*k <= ynnSmallWork
}

// ynnTinyOff disables the path (tests compare against runGeneral);
// GOLDTRACE_YNN_TINY=0 does the same.
var ynnTinyOff = os.Getenv("GOLDTRACE_YNN_TINY") == "0"

// ynnTinyScalar makes the path run the scalar ynnTinyTask where the vector
// kernel would (tests).
var ynnTinyScalar bool

// run computes c = a x b (row-major [nb, m, n], whatever it held: every
// element is set) in YNNPACK's order.
func (y *ynnDot) run(par, nb, m, n, k int, a []float32, la gemmLayout, b []float32, lb gemmLayout, c []float32) {
	if !y.runTiny(par, nb, m, n, k, a, la, b, lb, c) {
		y.runGeneral(par, nb, m, n, k, a, la, b, lb, c)
	}
}

// runTiny is run for small products (takesSmall) on FMA plans; false when
// it does not apply.
func (y *ynnDot) runTiny(par, nb, m, n, k int, a []float32, la gemmLayout, b []float32, lb gemmLayout, c []float32) bool {
	if ynnTinyOff || !takesSmall(nb, m, n, k) {
		return false
	}
	for _, t := range y.tasks {
		if !t.fma || (t.tk != 1 && t.tk != 2 && t.tk != 4) || t.kstep <= 0 || (t.kstep%t.tk != 0 && t.kstep < k) {
			return false
		}
	}
	per := m * n * k
	chunks := 1
	if par > 1 && nb*per >= gemmSerialFlops {
		chunks = min(nb, 8*par)
	}
	y.kn.parallelFor(min(par, chunks), chunks, func(_ *gemmWork[float32], it int) {
		b0, b1 := it*nb/chunks, (it+1)*nb/chunks
		if ynnTinyVectors && !ynnTinyScalar {
			// Row-major operands whose B rows are whole vectors are read
			// in place (vmap'd 8x8 products had spent more time copying
			// them than multiplying); others are copied, B's rows
			// padded to whole vectors.
			inPlace := la.cs == 1 && lb.cs == 1 && n%8 == 0
			if !inPlace && m*k+k*n+m*n <= ynnLanesMax {
				// Eight products at a time across the vector lanes.
				b0 = y.runLanes(b0, b1, m, n, k, a, la, b, lb, c)
			}
			w := roundUp(n, 8)
			var a32, bp []float32
			if !inPlace && b0 < b1 {
				a32, bp = make([]float32, m*k), make([]float32, k*w)
			}
			for bi := b0; bi < b1; bi++ {
				cb := c[bi*m*n : (bi+1)*m*n]
				ab, bb := a[bi*la.bs:], b[bi*lb.bs:]
				av, lda, bv, ldb := a32, k, bp, w
				switch {
				case inPlace && !rowsHoldNaN(ab, m, k, la.rs) && !rowsHoldNaN(bb, k, n, lb.rs):
					av, lda, bv, ldb = ab, la.rs, bb, lb.rs
				case inPlace || !ynnTinyLoad32(a32, bp, w, m, n, k, ab, la, bb, lb):
					y.runGeneral(1, 1, m, n, k, ab, la, bb, lb, cb)
					continue
				}
				for _, t := range y.tasks {
					ynnTinyTaskVec(t, n, k, av, lda, bv, ldb, cb)
				}
			}
			sseAfterAVX()
			return
		}
		ad, bd := make([]float64, m*k), make([]float64, n*k)
		for bi := b0; bi < b1; bi++ {
			cb := c[bi*m*n : (bi+1)*m*n]
			if !ynnTinyLoad(ad, bd, m, n, k, a[bi*la.bs:], la, b[bi*lb.bs:], lb) {
				y.runGeneral(1, 1, m, n, k, a[bi*la.bs:], la, b[bi*lb.bs:], lb, cb)
				continue
			}
			for _, t := range y.tasks {
				ynnTinyTask(t, n, k, ad, bd, cb)
			}
		}
	})
	return true
}

// ynnLanesMax bounds the floats of one product (A, B and C) that runLanes
// takes: eight products' worth stay in the L1 cache.
const ynnLanesMax = 768

// runLanes computes products b0, b0+8, ... of [b0, b1) eight at a time
// (ynnLanesTaskVec), each group's operands gathered element-major. A NaN
// in a product's operands reaches at least one of its results (a chain
// that reads a NaN ends NaN), so a product with a NaN result is redone by
// runGeneral, as runTiny does with products holding a NaN: NaN payloads
// are the GEMM's. It returns the first product it left (fewer than eight
// remain).
func (y *ynnDot) runLanes(b0, b1, m, n, k int, a []float32, la gemmLayout, b []float32, lb gemmLayout, c []float32) int {
	as, bs, cs := make([]float32, 8*m*k), make([]float32, 8*k*n), make([]float32, 8*m*n)
	gather := func(dst, src []float32, l gemmLayout, rows, cols int) {
		if l.cs == 1 && l.rs == cols {
			for e, x := range src[:rows*cols] {
				dst[e*8] = x
			}
			return
		}
		for i := 0; i < rows; i++ {
			for p := 0; p < cols; p++ {
				dst[(i*cols+p)*8] = src[i*l.rs+p*l.cs]
			}
		}
	}
	for ; b0+8 <= b1; b0 += 8 {
		for l := 0; l < 8; l++ {
			gather(as[l:], a[(b0+l)*la.bs:], la, m, k)
			gather(bs[l:], b[(b0+l)*lb.bs:], lb, k, n)
		}
		for _, t := range y.tasks {
			ynnLanesTaskVec(t, n, k, as, bs, cs)
		}
		for l := 0; l < 8; l++ {
			bi := b0 + l
			cb := c[bi*m*n : (bi+1)*m*n]
			nan := false
			for e := range cb {
				x := cs[e*8+l]
				nan = nan || x != x
				cb[e] = x
			}
			if nan {
				y.runGeneral(1, 1, m, n, k, a[bi*la.bs:], la, b[bi*lb.bs:], lb, cb)
			}
		}
	}
	return b0
}

// rowsHoldNaN reports whether any of the rows×cols elements of x, rows rs
// apart and contiguous, is a NaN.
func rowsHoldNaN(x []float32, rows, cols, rs int) bool {
	for i := 0; i < rows; i++ {
		for _, v := range x[i*rs : i*rs+cols] {
			if v != v {
				return true
			}
		}
	}
	return false
}

// ynnTinyLoad32 copies one batch element's A row-major into a32 (row i at
// i*k) and B row-major into bp (row p at p*w, w = n rounded up to whole
// vectors, zero past column n); false when either holds a NaN.
func ynnTinyLoad32(a32, bp []float32, w, m, n, k int, a []float32, la gemmLayout, b []float32, lb gemmLayout) bool {
	ok := true
	for i := 0; i < m; i++ {
		row := a32[i*k : (i+1)*k]
		for p := range row {
			x := a[i*la.rs+p*la.cs]
			ok = ok && x == x
			row[p] = x
		}
	}
	for p := 0; p < k; p++ {
		row := bp[p*w : (p+1)*w]
		for j := 0; j < n; j++ {
			x := b[p*lb.rs+j*lb.cs]
			ok = ok && x == x
			row[j] = x
		}
		clear(row[n:])
	}
	return ok
}

// ynnTinyLoad widens one batch element's A into ad (row i at i*k) and B
// transposed into bd (column j at j*k); false when either holds a NaN.
func ynnTinyLoad(ad, bd []float64, m, n, k int, a []float32, la gemmLayout, b []float32, lb gemmLayout) bool {
	ok := true
	for i := 0; i < m; i++ {
		row := ad[i*k : (i+1)*k]
		for p := range row {
			x := a[i*la.rs+p*la.cs]
			ok = ok && x == x
			row[p] = float64(x)
		}
	}
	for j := 0; j < n; j++ {
		col := bd[j*k : (j+1)*k]
		for p := range col {
			x := b[p*lb.rs+j*lb.cs]
			ok = ok && x == x
			col[p] = float64(x)
		}
	}
	return ok
}

// ynnTinyTask sums task t's elements of one batch element into c (row
// stride n).
func ynnTinyTask(t ynnTask, n, k int, ad, bd []float64, c []float32) {
	tk := t.tk
	km := k - k%tk
	for i := t.i0; i < t.i1; i++ {
		ar := ad[i*k : (i+1)*k]
		for j := t.j0; j < t.j1; j++ {
			bc := bd[j*k : (j+1)*k]
			var acc float32
			first := true
			for lo := 0; lo < k; {
				hi := t.blockEnd(lo, km, k)
				var s float32
				switch tk {
				case 1:
					s = ynnTinyChain(ar, bc, lo, hi, 1)
				case 2:
					s = ynnTinyChain(ar, bc, lo, hi, 2) + ynnTinyChain(ar, bc, lo+1, hi, 2)
				default:
					s = (ynnTinyChain(ar, bc, lo, hi, 4) + ynnTinyChain(ar, bc, lo+1, hi, 4)) +
						(ynnTinyChain(ar, bc, lo+2, hi, 4) + ynnTinyChain(ar, bc, lo+3, hi, 4))
				}
				if first {
					acc, first = s, false
				} else {
					acc = s + acc
				}
				lo = hi
			}
			c[i*n+j] = acc
		}
	}
}

// blockEnd is the end of the task's K block starting at lo: kstep deep
// below km (k rounded down to a multiple of tk), then the rest of K.
func (t ynnTask) blockEnd(lo, km, k int) int {
	if lo >= km {
		return k
	}
	return min(km, lo+t.kstep)
}

// ynnTinyChain is the FMA chain from +0 over a[p]*b[p] for p = lo, lo+step,
// ... below hi, added to +0 as the GEMM adds a tile to its cleared (or
// stored) lane: a chain that underflowed to -0 comes out +0.
func ynnTinyChain(a, b []float64, lo, hi, step int) float32 {
	var acc float32
	for p := lo; p < hi; p += step {
		acc = fma32Exact(a[p], b[p], acc)
	}
	return acc + 0
}

// fma32Exact is a*b+c rounded once to float32 (a and b float32 values held
// in float64, so their product is exact): fma32, with the float64 sum
// rounded to odd before narrowing also when it lies in float32's
// subnormal range, where a float32 midpoint is not where fma32 looks.
func fma32Exact(a, b float64, c float32) float32 {
	s := a*b + float64(c)
	if bits := math.Float64bits(s); bits<<35 == 1<<63 || (bits>>52)&0x7ff < 1023-126 && bits<<1 != 0 {
		return fma32Tie(float32(a), float32(b), c)
	}
	return float32(s)
}
