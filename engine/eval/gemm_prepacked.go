package eval

// Products whose B is the same matrix call after call (a recurrent
// weight read by every step of a scan) pack it once: packWhole lays all of
// B out as the packed path's panels, and runPrepacked multiplies by them,
// with no packing of B at all. The arithmetic is the packed path's: per
// kc-deep slice of the contraction, each tile's FMA chain from zero, added
// to C in slice order.

// packWhole packs k×n matrix b (layout lb) whole for kn: slice pc (a
// multiple of kc) is at [pc*roundUp(n, nr):], its nr-wide panels as packB
// lays them out.
func (kn *gemmKernel[T]) packWhole(b []T, lb gemmLayout, k, n int) []T {
	npad := roundUp(n, kn.nr)
	dst := make([]T, k*npad)
	for pc := 0; pc < k; pc += kn.kc {
		packB(dst[pc*npad:], kn.nr, b, lb, pc, min(kn.kc, k-pc), 0, n)
	}
	return dst
}

// packWholeRows is packWhole for a B whose row p (of k) lies at
// src[rowOff[rows[p]] + col0*cs:], its n columns cs apart: B gathered
// straight from an operand that is not laid out as a matrix, with no copy
// of it in matrix order beside the packed one. The packed copy is tensor
// storage: the caller may hand it back with releaseStorage.
func (kn *gemmKernel[T]) packWholeRows(src []T, rowOff, rows []int, cs, col0, n int) []T {
	dst := storageOf[T](len(rows) * roundUp(n, kn.nr))
	kn.packRowsInto(dst, src, rowOff, rows, cs, col0, n)
	return dst
}

// packRowsInto is packWholeRows into dst (len(rows) × n rounded up to the
// panel width), the ragged panel's padding set to zero.
func (kn *gemmKernel[T]) packRowsInto(dst, src []T, rowOff, rows []int, cs, col0, n int) {
	k, nr := len(rows), kn.nr
	npad := roundUp(n, nr)
	for pc := 0; pc < k; pc += kn.kc {
		kc := min(kn.kc, k-pc)
		block := dst[pc*npad:]
		for p := 0; p < kc; p++ {
			base := rowOff[rows[pc+p]] + col0*cs
			for j := 0; j < n; j += nr {
				panelRow := block[j*kc+p*nr : j*kc+(p+1)*nr]
				cols := min(nr, n-j)
				if cs == 1 {
					copy(panelRow[:cols], src[base+j:])
				} else {
					for q := range cols {
						panelRow[q] = src[base+(j+q)*cs]
					}
				}
				clear(panelRow[cols:])
			}
		}
	}
}

// runPrepacked computes c += a x b for one product, b packed by packWhole,
// using up to par goroutines (each takes a run of B's column panels).
func (kn *gemmKernel[T]) runPrepacked(par, m, n, k int, a []T, la gemmLayout, bp, c []T) {
	if m == 0 || n == 0 || k == 0 {
		return
	}
	nr := kn.nr
	npad := roundUp(n, nr)
	panels := npad / nr
	// Several runs of panels per goroutine, pulled as they finish, so a
	// goroutine on a core busy elsewhere does not hold the others up.
	const chunksPerWorker = 4
	chunks := min(par, max(1, m*n*k/gemmSerialFlops), panels)
	if chunks > 1 {
		chunks = min(chunksPerWorker*chunks, panels)
	}
	kn.parallelFor(min(par, chunks), chunks, func(w *gemmWork[T], it int) {
		j0, j1 := it*panels/chunks*nr, min((it+1)*panels/chunks*nr, n)
		if j0 >= j1 {
			return
		}
		for pc := 0; pc < k; pc += kn.kc {
			kc := min(kn.kc, k-pc)
			blk := bp[pc*npad+j0*kc:]
			for ic := 0; ic < m; ic += kn.mc {
				mc := min(kn.mc, m-ic)
				ap := w.packedA(kn.mr, mc, kc)
				kn.blockA(ap, a, la, ic, mc, pc, kc, blk, w.tile, c[ic*n+j0:], n, j1-j0)
			}
		}
	})
}
