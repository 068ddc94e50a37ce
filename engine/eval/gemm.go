package eval

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Packed, cache-blocked GEMM in the GotoBLAS/BLIS arrangement. For each
// NC-wide column block of B and each KC-deep slice of the contraction, B is
// packed once into NR-wide panels (meant to live in L3/L2); for each MC-tall
// row block of A, A is packed into MR-tall panels (meant to live in L2); a
// micro-kernel then multiplies one A panel by one B panel into an MR×NR tile
// of C held in registers. Packing makes the micro-kernel's reads contiguous
// whatever the operands' layout, which is also how transposed dot operands are
// consumed without a transposing copy.

// gemmLayout places a batch of matrices in a flat slice: element (b, i, j)
// lives at b*bs + i*rs + j*cs.
type gemmLayout struct{ bs, rs, cs int }

// rowMajor is the layout of a contiguous batch of rows×cols row-major matrices.
func rowMajor(rows, cols int) gemmLayout { return gemmLayout{rows * cols, cols, 1} }

// colMajor is the layout of a contiguous batch of rows×cols matrices stored
// transposed (each batch element is a cols×rows row-major matrix).
func colMajor(rows, cols int) gemmLayout { return gemmLayout{rows * cols, 1, rows} }

// gemmKernel is one micro-kernel with the blocking that suits it.
type gemmKernel[T number] struct {
	name       string
	mr, nr     int // register tile
	kc, mc, nc int // cache blocks; mc is a multiple of mr, nc of nr
	// micro adds the product of an MR×kc packed A panel and a kc×NR packed B
	// panel to the MR×NR tile of C at c[0] with row stride ldc.
	micro func(kc int, a, b, c []T, ldc int)
	// microB, when set, is micro reading a kc×NR block of B in place from
	// rows ldb apart instead of from a packed panel (gemm_smallm.go).
	microB func(kc int, a, b []T, ldb int, c []T, ldc int)
	// microA, when set, is micro reading an MR×kc block of row-major A in
	// place from rows lda apart instead of from a packed panel.
	microA func(kc int, a []T, lda int, b, c []T, ldc int)
	// short lists kernels of fewer rows (same nr and kc), fewest first, for
	// a ragged last row panel: each element's arithmetic is the same in
	// every kernel, only the zero rows of padding go.
	short []*gemmKernel[T]
	// chain, when set, is this kernel continuing each tile's FMA chains
	// from C (same blocking): consecutive calls over slices of K then sum
	// each element as one chain (dot_half.go).
	chain *gemmKernel[T]
	// store, when set, is this kernel storing each tile (its chain plus
	// +0) instead of adding it to C (same blocking, short kernels
	// alike): the first kc slice of runOver, so that C need not be
	// cleared first.
	store *gemmKernel[T]
	pool  sync.Pool // *gemmWork[T]
}

// shortFor returns the kernel that runs a row panel of rows (< mr) rows:
// the shortest with at least that many, else kn.
func (kn *gemmKernel[T]) shortFor(rows int) *gemmKernel[T] {
	for _, s := range kn.short {
		if s.mr >= rows {
			return s
		}
	}
	return kn
}

// gemmWork is one goroutine's packing buffers and edge-tile scratch. The
// packing buffers grow to what the products need, so small products do not
// pay for clearing full-size blocks whenever a GC has emptied the pool.
type gemmWork[T number] struct {
	ap, bp, tile []T
	pipe         []T // pipelined's packed blocks of B
}

func (kn *gemmKernel[T]) work() *gemmWork[T] {
	if w, ok := kn.pool.Get().(*gemmWork[T]); ok {
		return w
	}
	return &gemmWork[T]{tile: make([]T, kn.mr*kn.nr)}
}

// packedA returns w.ap grown to hold rows×depth of A in mr-tall panels.
func (w *gemmWork[T]) packedA(mr, rows, depth int) []T {
	w.ap = growScratch(w.ap, roundUp(rows, mr)*depth)
	return w.ap
}

// packedB returns w.bp grown to hold depth×cols of B in nr-wide panels.
func (w *gemmWork[T]) packedB(nr, depth, cols int) []T {
	w.bp = growScratch(w.bp, depth*roundUp(cols, nr))
	return w.bp
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// growScratch is grow for the packing buffers, whose elements are written
// before they are read: new storage is not cleared (make would clear it
// on the calling goroutine, taking every 4 KiB page fault there) and, when
// large, is backed by huge pages (tensor.StorageForWriting).
func growScratch[T number](s []T, n int) []T {
	if cap(s) < n {
		return storageForWriting[T](n)
	}
	return s[:n]
}

func roundUp(x, m int) int { return (x + m - 1) / m * m }

// gemmSerialFlops is the product size (m*n*k) below which splitting one
// product over goroutines costs more than it saves.
const gemmSerialFlops = 1 << 17

// gemm computes c[b] = a[b] x bm[b] for row-major a [B,M,K], bm [B,K,N] and
// zeroed c [B,M,N], using up to par goroutines.
func gemm[T number](par, nb, m, n, k int, a, bm, c []T) {
	gemmStrided(par, nb, m, n, k, a, rowMajor(m, k), bm, rowMajor(k, n), c)
}

// gemmStrided computes c[b] += a[b] x bm[b] for B products of M×K by K×N
// matrices laid out as la and lb, into row-major c [B,M,N], using up to par
// goroutines.
func gemmStrided[T number](par, nb, m, n, k int, a []T, la gemmLayout, bm []T, lb gemmLayout, c []T) {
	if nb == 0 || m == 0 || n == 0 || k == 0 {
		return
	}
	if ac, ok := any(a).([]complex128); ok && complexGemmViaReal(par, nb, m, n, k, ac, la, any(bm).([]complex128), lb, any(c).([]complex128)) {
		return
	}
	if blasGemm(par, nb, m, n, k, a, la, bm, lb, c) {
		return
	}
	kernelFor[T]().run(par, nb, m, n, k, a, la, bm, lb, c)
}

// gemmStridedOver is gemmStrided setting c = a x b, whatever c held: c may
// be storage that was never cleared (tensor.StorageForWriting). Each
// element gets gemmStrided's bits on a zeroed c.
func gemmStridedOver[T number](par, nb, m, n, k int, a []T, la gemmLayout, bm []T, lb gemmLayout, c []T) {
	if kn := kernelFor[T](); kn.store != nil && !floatsOnBLAS {
		kn.runOver(par, nb, m, n, k, a, la, bm, lb, c)
		return
	}
	clearPar(c[:nb*m*n])
	gemmStrided(par, nb, m, n, k, a, la, bm, lb, c)
}

// run is gemmStrided on this kernel. With at least as many products as
// goroutines, or products too small to split, each goroutine takes whole
// products; otherwise the goroutines share each product (see shared).
func (kn *gemmKernel[T]) run(par, nb, m, n, k int, a []T, la gemmLayout, bm []T, lb gemmLayout, c []T) {
	kn.runMode(false, par, nb, m, n, k, a, la, bm, lb, c)
}

// runOver is run setting c = a x b, whatever c held: the first kc slice of
// every product runs on the storing kernels (kn.store), which never read
// C, so c may be storage that was never cleared. Each element gets the
// bits run gives on a zeroed c (the stored tile is its chain plus +0). A
// kernel without storing forms clears c and runs.
func (kn *gemmKernel[T]) runOver(par, nb, m, n, k int, a []T, la gemmLayout, bm []T, lb gemmLayout, c []T) {
	if kn.store == nil || k == 0 {
		clearPar(c[:nb*m*n])
		kn.run(par, nb, m, n, k, a, la, bm, lb, c)
		return
	}
	kn.runMode(true, par, nb, m, n, k, a, la, bm, lb, c)
}

// runOverTiles is runOver for one product (nb 1) that runs pipelined,
// calling tile(r0, r1, c0, c1) as soon as rows [r0,r1) of columns [c0,c1)
// of c are final, from the goroutine that finished them, while they are
// in its cache (every element of c in exactly one tile). It reports false,
// having done nothing, when runOver would take another schedule; where it
// runs, every element of c has runOver's bits.
func (kn *gemmKernel[T]) runOverTiles(par, m, n, k int, a []T, la gemmLayout, bm []T, lb gemmLayout, c []T, tile func(r0, r1, c0, c1 int)) bool {
	// runOver's and runMode's choices, for nb 1.
	if kn.store == nil || k == 0 || m == 0 || n == 0 {
		return false
	}
	if kn.microB != nil && m <= smallMRows && lb.cs == 1 {
		return false
	}
	if par <= 1 || m*n*k < gemmSerialFlops || kn.pipelineNC(n, k) <= 0 || !gemmPipelined {
		return false
	}
	kn.pipelined(true, par, m, n, k, a, la, bm, lb, c, tile)
	return true
}

// clearPar zeroes s on all cores when it is large.
func clearPar[T any](s []T) {
	if len(s) < 1<<18 {
		clear(s)
		return
	}
	parallelFor(len(s), func(lo, hi int) { clear(s[lo:hi]) })
}

// runMode is run, or runOver when ov.
func (kn *gemmKernel[T]) runMode(ov bool, par, nb, m, n, k int, a []T, la gemmLayout, bm []T, lb gemmLayout, c []T) {
	if nb == 0 || m == 0 || n == 0 || k == 0 {
		return
	}
	if kn.microB != nil && m <= smallMRows && lb.cs == 1 {
		if nb == 1 {
			kn.smallM(ov, par, m, n, k, a, la, bm, lb.rs, c)
			return
		}
		kn.parallelFor(min(par, nb), nb, func(_ *gemmWork[T], b int) {
			kn.smallM(ov, 1, m, n, k, a[b*la.bs:], la, bm[b*lb.bs:], lb.rs, c[b*m*n:(b+1)*m*n])
		})
		return
	}
	if par <= 1 || nb >= par || m*n*k < gemmSerialFlops {
		kn.parallelFor(min(par, nb), nb, func(w *gemmWork[T], b int) {
			kn.serial(ov, w, n, k, a[b*la.bs:], la, bm[b*lb.bs:], lb, c[b*m*n:(b+1)*m*n], m)
		})
		return
	}
	if kn.pipelineNC(n, k) > 0 && gemmPipelined {
		for b := 0; b < nb; b++ {
			kn.pipelined(ov, par, m, n, k, a[b*la.bs:], la, bm[b*lb.bs:], lb, c[b*m*n:(b+1)*m*n], nil)
		}
		return
	}
	w := kn.work()
	defer kn.pool.Put(w)
	bp := w.packedB(kn.nr, min(k, kn.kc), min(n, kn.nc))
	for b := 0; b < nb; b++ {
		kn.shared(ov, bp, par, m, n, k, a[b*la.bs:], la, bm[b*lb.bs:], lb, c[b*m*n:(b+1)*m*n])
	}
}

// firstKernel is the kernel a kc slice starting at pc runs on: the storing
// form for the first slice of runOver (ov), else kn.
func (kn *gemmKernel[T]) firstKernel(ov bool, pc int) *gemmKernel[T] {
	if ov && pc == 0 {
		return kn.store
	}
	return kn
}

// parallelFor runs f on items [0,n) from up to par goroutines, each with its
// own work buffers, taking items from a shared counter so that a goroutine
// slowed by a busy core takes fewer.
func (kn *gemmKernel[T]) parallelFor(par, n int, f func(w *gemmWork[T], item int)) {
	var next atomic.Int64
	loop := func() {
		w := kn.work()
		defer kn.pool.Put(w)
		for it := int(next.Add(1)) - 1; it < n; it = int(next.Add(1)) - 1 {
			f(w, it)
		}
	}
	par = min(par, n)
	var wg sync.WaitGroup
	for i := 1; i < par; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loop()
		}()
	}
	loop()
	wg.Wait()
}

// serial accumulates the first m rows of a x b into the row-major m×n matrix c
// (sets them when ov).
func (kn *gemmKernel[T]) serial(ov bool, w *gemmWork[T], n, k int, a []T, la gemmLayout, b []T, lb gemmLayout, c []T, m int) {
	ap := w.packedA(kn.mr, min(m, kn.mc), min(k, kn.kc))
	bp := w.packedB(kn.nr, min(k, kn.kc), min(n, kn.nc))
	for jc := 0; jc < n; jc += kn.nc {
		nc := min(kn.nc, n-jc)
		for pc := 0; pc < k; pc += kn.kc {
			kc := min(kn.kc, k-pc)
			packB(bp, kn.nr, b, lb, pc, kc, jc, nc)
			for ic := 0; ic < m; ic += kn.mc {
				mc := min(kn.mc, m-ic)
				kn.firstKernel(ov, pc).blockA(ap, a, la, ic, mc, pc, kc, bp, w.tile, c[ic*n+jc:], n, nc)
			}
		}
	}
}

// shared runs one product on par goroutines in the BLIS arrangement: for each
// kc×nc block of B, the goroutines pack it together into bp, then split C's
// rows (and, when there are too few rows to go round, its columns) into
// chunks that each pack their own slice of A against the shared B.
func (kn *gemmKernel[T]) shared(ov bool, bp []T, par, m, n, k int, a []T, la gemmLayout, b []T, lb gemmLayout, c []T) {
	mr, nr := kn.mr, kn.nr
	for jc := 0; jc < n; jc += kn.nc {
		nc := min(kn.nc, n-jc)
		// Enough chunks that a goroutine on a busy core cannot hold the
		// others up for long: rows first, then columns. Tall products
		// take up to 16 row chunks per goroutine (each still 8 row tiles
		// or more, so it reuses every B panel it loads): every kc slice
		// ends at a barrier, where the goroutines wait for the last chunk
		// (measured on a 2-core VM with a busy neighbour: 4 per goroutine
		// left 3-7% of a 2048³ product idle; the arithmetic is the same).
		const chunksPerWorker = 4
		rowTiles, colTiles := (m+mr-1)/mr, (nc+nr-1)/nr
		// A multiple of par chunks, so that on equal cores the last
		// round of every slice keeps them all busy.
		rowChunks := max(min(rowTiles, 4*chunksPerWorker*par, max(chunksPerWorker*par, rowTiles/8)), (m+kn.mc-1)/kn.mc)
		if rowChunks > par && rowChunks < rowTiles {
			rowChunks = min(roundUp(rowChunks, par), rowTiles)
		}
		colChunks := min(colTiles, max(1, chunksPerWorker*par/rowChunks))
		rowBound := func(i int) int { return min(i*rowTiles/rowChunks*mr, m) }
		colBound := func(i int) int { return min(i*colTiles/colChunks*nr, nc) }
		for pc := 0; pc < k; pc += kn.kc {
			kc := min(kn.kc, k-pc)
			panels := (nc + nr - 1) / nr
			kn.parallelFor(par, par, func(_ *gemmWork[T], i int) {
				lo, hi := i*panels/par, (i+1)*panels/par
				if lo < hi {
					packB(bp[lo*nr*kc:], nr, b, lb, pc, kc, jc+lo*nr, min(hi*nr, nc)-lo*nr)
				}
			})
			kb := kn.firstKernel(ov, pc)
			kn.parallelFor(par, rowChunks*colChunks, func(w *gemmWork[T], it int) {
				r0, r1 := rowBound(it/colChunks), rowBound(it/colChunks+1)
				c0, c1 := colBound(it%colChunks), colBound(it%colChunks+1)
				ap := w.packedA(mr, r1-r0, kc)
				kb.blockA(ap, a, la, r0, r1-r0, pc, kc, bp[c0*kc:], w.tile, c[r0*n+jc+c0:], n, c1-c0)
			})
		}
	}
}

// blockA multiplies rows [ic, ic+mc) × columns [pc, pc+kc) of A by the
// packed kc×nc block bp into c (row stride ldc). Row-major A is read in
// place by kernels with a microA form; otherwise its full row panels are
// packed into ap. A ragged last row panel runs on the shortest kernel that
// holds it (kn.short), in place when it fills that kernel exactly, else
// packed after the full panels. Either way each element's arithmetic is the
// same.
func (kn *gemmKernel[T]) blockA(ap, a []T, la gemmLayout, ic, mc, pc, kc int, bp, tile, c []T, ldc, nc int) {
	mr, nr := kn.mr, kn.nr
	full := mc / mr * mr
	direct := kn.microA != nil && la.cs == 1
	if !direct {
		packA(ap, mr, a, la, ic, full, pc, kc)
	}
	rows := mc - full
	sk := kn.shortFor(rows)
	tailDirect := direct && sk.microA != nil && rows == sk.mr
	if rows > 0 && !tailDirect {
		packA(ap[full*kc:], sk.mr, a, la, ic+full, rows, pc, kc)
	}
	var ad []T
	if direct {
		ad = a[ic*la.rs+pc:]
	}
	for j := 0; j < nc; j += nr {
		bpan := bp[j*kc : (j+nr)*kc]
		cols := min(nr, nc-j)
		for i := 0; i < full; i += mr {
			cc := c[i*ldc+j:]
			dst, ld := cc, ldc
			if cols < nr {
				tileIn(tile, nr, cc, ldc, mr, cols)
				dst, ld = tile, nr
			}
			if direct {
				kn.microA(kc, ad[i*la.rs:], la.rs, bpan, dst, ld)
			} else {
				kn.micro(kc, ap[i*kc:(i+mr)*kc], bpan, dst, ld)
			}
			if cols < nr {
				tileOut(tile, nr, cc, ldc, mr, cols)
			}
		}
		if rows > 0 {
			cc := c[full*ldc+j:]
			dst, ld := cc, ldc
			edge := cols < nr || rows < sk.mr
			if edge {
				tileIn(tile, nr, cc, ldc, rows, cols)
				dst, ld = tile, nr
			}
			if tailDirect {
				sk.microA(kc, ad[full*la.rs:], la.rs, bpan, dst, ld)
			} else {
				sk.micro(kc, ap[full*kc:(full+sk.mr)*kc], bpan, dst, ld)
			}
			if edge {
				tileOut(tile, nr, cc, ldc, rows, cols)
			}
		}
	}
}

// Ragged edge tiles go through a scratch tile: tileIn copies the rows×cols
// corner of C at c into it, the micro-kernel adds to it exactly as it adds to
// a full tile of C, and tileOut copies the valid part back. Every element of C
// so takes the same instructions wherever it lies, NaN payload choices
// included.
func tileIn[T number](tile []T, nr int, c []T, ldc, rows, cols int) {
	clear(tile)
	for r := range rows {
		copy(tile[r*nr:r*nr+cols], c[r*ldc:r*ldc+cols])
	}
}

func tileOut[T number](tile []T, nr int, c []T, ldc, rows, cols int) {
	for r := range rows {
		copy(c[r*ldc:r*ldc+cols], tile[r*nr:r*nr+cols])
	}
}

// packA lays A[ic:ic+mc, pc:pc+kc] out as mr-tall panels, each stored
// column by column (panel[p*mr+r] = A[i+r, p]), zero-padding the last panel.
func packA[T number](dst []T, mr int, a []T, l gemmLayout, ic, mc, pc, kc int) {
	for i := 0; i < mc; i += mr {
		rows := min(mr, mc-i)
		panel := dst[i*kc : (i+mr)*kc]
		base := (ic+i)*l.rs + pc*l.cs
		switch {
		case l.rs == 1 && rows == mr: // transposed A: each column of the panel is contiguous
			copyRows(panel, mr, a[base:], l.cs, kc, mr)
		case l.rs == 1:
			for p := 0; p < kc; p++ {
				copy(panel[p*mr:p*mr+rows], a[base+p*l.cs:])
			}
		case l.cs == 1 && rows == mr:
			// A full panel of row-major A: read its rows four (then two,
			// then one) at a time in lockstep, writing each panel column
			// in runs.
			r := 0
			for ; r+4 <= mr; r += 4 {
				r0 := a[base+r*l.rs:][:kc]
				r1 := a[base+(r+1)*l.rs:][:len(r0)]
				r2 := a[base+(r+2)*l.rs:][:len(r0)]
				r3 := a[base+(r+3)*l.rs:][:len(r0)]
				for p := range r0 {
					q := panel[p*mr+r : p*mr+r+4 : p*mr+r+4]
					q[0], q[1], q[2], q[3] = r0[p], r1[p], r2[p], r3[p]
				}
			}
			if r+2 <= mr {
				r0 := a[base+r*l.rs:][:kc]
				r1 := a[base+(r+1)*l.rs:][:len(r0)]
				for p := range r0 {
					q := panel[p*mr+r : p*mr+r+2 : p*mr+r+2]
					q[0], q[1] = r0[p], r1[p]
				}
				r += 2
			}
			if r < mr {
				for p, v := range a[base+r*l.rs:][:kc] {
					panel[p*mr+r] = v
				}
			}
		case l.cs == 1:
			for r := 0; r < rows; r++ {
				src := a[base+r*l.rs : base+r*l.rs+kc]
				for p, v := range src {
					panel[p*mr+r] = v
				}
			}
		default:
			for r := 0; r < rows; r++ {
				for p := 0; p < kc; p++ {
					panel[p*mr+r] = a[base+r*l.rs+p*l.cs]
				}
			}
		}
		if rows < mr {
			for p := 0; p < kc; p++ {
				clear(panel[p*mr+rows : (p+1)*mr])
			}
		}
	}
}

// packB lays B[pc:pc+kc, jc:jc+nc] out as nr-wide panels, each stored row by
// row (panel[p*nr+q] = B[p, j+q]), zero-padding the last panel.
func packB[T number](dst []T, nr int, b []T, l gemmLayout, pc, kc, jc, nc int) {
	if full := nc / nr; l.cs == 1 && full > 0 {
		// Row-major B: read each row once, front to back, handing its
		// nr-wide runs to the full panels (the ragged one follows below).
		base := pc*l.rs + jc
		for p := 0; p < kc; p++ {
			copyRows(dst[p*nr:], kc*nr, b[base+p*l.rs:], nr, full, nr)
		}
		dst, jc, nc = dst[full*nr*kc:], jc+full*nr, nc-full*nr
	}
	for j := 0; j < nc; j += nr {
		cols := min(nr, nc-j)
		panel := dst[j*kc : (j+nr)*kc]
		base := pc*l.rs + (jc+j)*l.cs
		switch {
		case l.cs == 1:
			for p := 0; p < kc; p++ {
				copy(panel[p*nr:p*nr+cols], b[base+p*l.rs:])
			}
		case l.rs == 1: // transposed B: each column of the panel is contiguous
			// Transpose in strips of 8 rows so the strip being written stays
			// in L1 while every column is read.
			const strip = 8
			for p0 := 0; p0 < kc; p0 += strip {
				ps := min(strip, kc-p0)
				for q := 0; q < cols; q++ {
					src := b[base+q*l.cs+p0 : base+q*l.cs+p0+ps]
					for p, v := range src {
						panel[(p0+p)*nr+q] = v
					}
				}
			}
		default:
			for p := 0; p < kc; p++ {
				for q := 0; q < cols; q++ {
					panel[p*nr+q] = b[base+p*l.rs+q*l.cs]
				}
			}
		}
		if cols < nr {
			for p := 0; p < kc; p++ {
				clear(panel[p*nr+cols : (p+1)*nr])
			}
		}
	}
}

// genericKernel returns the portable kernel for any compute type: a 4×4 tile
// gives 16 independent accumulators, enough to hide the add latency without
// spilling Go's scalar registers badly.
func genericKernel[T number]() *gemmKernel[T] {
	return &gemmKernel[T]{name: "generic4x4", mr: 4, nr: 4, kc: 256, mc: 64, nc: 2048, micro: micro4x4[T]}
}

var (
	i64Kernel = genericKernel[int64]()
	// c128Kernel serves only the tests: complex products normally go to BLAS.
	c128Kernel = genericKernel[complex128]()
)

// withKC returns kn with its contraction slices kc deep instead of kn.kc
// (kept per depth, short kernels included): every tile's FMA chain then runs
// from zero over each kc slice and is added to C in slice order, which is how
// dot_ynn.go reproduces YNNPACK's K blocks. A deeper slice narrows nc so
// that the packed B block keeps kn's size (narrowing mc as well measured
// slower on 2048³).
func (kn *gemmKernel[T]) withKC(kc int) *gemmKernel[T] {
	if kc == kn.kc {
		return kn
	}
	key := kcKey{kn, kc}
	if v, ok := kcKernels.Load(key); ok {
		return v.(*gemmKernel[T])
	}
	nc := kn.nc
	if kc > kn.kc {
		nc = max(kn.nr, kn.nc*kn.kc/kc/kn.nr*kn.nr)
	}
	mk := func(src *gemmKernel[T]) *gemmKernel[T] {
		return &gemmKernel[T]{name: fmt.Sprintf("%s_kc%d", src.name, kc), mr: src.mr, nr: src.nr,
			kc: kc, mc: kn.mc, nc: nc,
			micro: src.micro, microB: src.microB, microA: src.microA}
	}
	withShorts := func(src *gemmKernel[T]) *gemmKernel[T] {
		out := mk(src)
		for _, s := range src.short {
			out.short = append(out.short, mk(s))
		}
		return out
	}
	out := withShorts(kn)
	if kn.store != nil {
		out.store = withShorts(kn.store)
	}
	v, _ := kcKernels.LoadOrStore(key, out)
	return v.(*gemmKernel[T])
}

type kcKey struct {
	kn any
	kc int
}

var kcKernels sync.Map // kcKey -> *gemmKernel[T]

// kernelFor picks the kernel for a compute type; f32Kernel and f64Kernel are
// chosen per build and CPU in gemm_simd_amd64.go or gemm_portable.go.
func kernelFor[T number]() *gemmKernel[T] {
	var k any
	switch any(*new(T)).(type) {
	case float32:
		k = f32Kernel
	case float64:
		k = f64Kernel
	case int64:
		k = i64Kernel
	case complex128:
		k = c128Kernel
	}
	return k.(*gemmKernel[T])
}

// micro4x4 adds the 4x4 product of packed panels a (4×kc) and b (kc×4) to c.
func micro4x4[T number](kc int, a, b, c []T, ldc int) {
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 T
	a = a[:kc*4]
	b = b[:kc*4]
	for p := 0; p < len(a); p += 4 {
		av := a[p : p+4 : p+4]
		bv := b[p : p+4 : p+4]
		a0, a1, a2, a3 := av[0], av[1], av[2], av[3]
		b0, b1, b2, b3 := bv[0], bv[1], bv[2], bv[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	r := c[0:4:4]
	r[0], r[1], r[2], r[3] = r[0]+c00, r[1]+c01, r[2]+c02, r[3]+c03
	r = c[ldc : ldc+4 : ldc+4]
	r[0], r[1], r[2], r[3] = r[0]+c10, r[1]+c11, r[2]+c12, r[3]+c13
	r = c[2*ldc : 2*ldc+4 : 2*ldc+4]
	r[0], r[1], r[2], r[3] = r[0]+c20, r[1]+c21, r[2]+c22, r[3]+c23
	r = c[3*ldc : 3*ldc+4 : 3*ldc+4]
	r[0], r[1], r[2], r[3] = r[0]+c30, r[1]+c31, r[2]+c32, r[3]+c33
}

func copyRowsGo[T number](dst []T, ds int, src []T, ss, rows, n int) {
	for r := range rows {
		copy(dst[r*ds:r*ds+n], src[r*ss:r*ss+n])
	}
}
