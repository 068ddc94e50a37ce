package eval

// Products with few rows of A (a scan step's [16, K] x [K, N], a decode
// step) spend more time packing B than multiplying: B is read once per
// row panel of A but packed whole for every call. Here the micro-kernel
// reads B's rows where they are (row-major B, kernels with a microB form);
// only A, which is small, is packed, and only a ragged last column panel of
// B. Each element of C is the same sum as in serial/shared: per kc-deep
// slice of the contraction, the tile's FMA chain from zero, added to C in
// slice order, so the results are the packed path's bit for bit.

// smallMRows is the row count up to which products take the unpacked-B path.
const smallMRows = 32

// smallM runs c += a x b (c = a x b when ov) for row-major-rows b (row
// stride ldb) on a kernel with a microB form.
func (kn *gemmKernel[T]) smallM(ov bool, par, m, n, k int, a []T, la gemmLayout, b []T, ldb int, c []T) {
	mr, nr := kn.mr, kn.nr
	panels := (n + nr - 1) / nr
	// Column panels are split over the goroutines; each packs its own A.
	chunks := min(par, max(1, m*n*k/gemmSerialFlops), panels)
	kn.parallelFor(chunks, chunks, func(w *gemmWork[T], it int) {
		p0, p1 := it*panels/chunks, (it+1)*panels/chunks
		full := m / mr * mr
		sk := kn.shortFor(m - full)
		ap := w.packedA(mr, m, min(k, kn.kc))
		for pc := 0; pc < k; pc += kn.kc {
			kc := min(kn.kc, k-pc)
			packA(ap, mr, a, la, 0, full, pc, kc)
			if full < m {
				packA(ap[full*kc:], sk.mr, a, la, full, m-full, pc, kc)
			}
			for p := p0; p < p1; p++ {
				j := p * nr
				cols := min(nr, n-j)
				var bpan []T
				if cols < nr {
					bpan = w.packedB(nr, kc, nr)
					packB(bpan, nr, b, gemmLayout{0, ldb, 1}, pc, kc, j, cols)
				}
				kf := kn.firstKernel(ov, pc)
				for i := 0; i < m; i += mr {
					kr := kf
					if i == full {
						kr = kf.shortFor(m - full)
					}
					apan := ap[i*kc : (i+kr.mr)*kc]
					rows := min(kr.mr, m-i)
					if rows == kr.mr && cols == nr {
						kr.microB(kc, apan, b[pc*ldb+j:], ldb, c[i*n+j:], n)
						continue
					}
					tileIn(w.tile, nr, c[i*n+j:], n, rows, cols)
					if cols == nr {
						kr.microB(kc, apan, b[pc*ldb+j:], ldb, w.tile, nr)
					} else {
						kr.micro(kc, apan, bpan, w.tile, nr)
					}
					tileOut(w.tile, nr, c[i*n+j:], n, rows, cols)
				}
			}
		}
	})
}
