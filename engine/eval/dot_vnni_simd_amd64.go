//go:build goexperiment.simd && amd64

package eval

import (
	"os"
	"simd/archsimd"
)

//go:generate go run gemm_vnni_gen.go

// s8 x s8 -> s32 products (jnp.matmul of int8 with preferred_element_type
// int32, quantized layers) on AVX512-VNNI: VPDPBUSD multiplies 64 byte pairs
// and adds them into 16 int32 lanes per instruction, four times the
// multiply-adds per cycle of the f32 FMA path the exact-float route
// (exactFloatClass) took. Integer sums are exact mod 2^32 in any order, and
// XLA's result is the exact sum wrapped to 32 bits, so nothing about the
// order needs reproducing; the kernel (gemm_vnni_amd64.s) wraps mod 2^32
// itself. VPDPBUSD takes unsigned bytes from one operand: B is packed with
// its sign bits flipped (b+128), and 128·rowsum(A) is taken off at the end.

// vnniS8 reports whether this CPU runs the kernel (GOLDTRACE_NO_VNNI=1 turns
// it off, to compare).
var vnniS8 = archsimd.X86.AVX512() && archsimd.X86.AVX512VNNI() && os.Getenv("GOLDTRACE_NO_VNNI") != "1"

// gemmVNNIS8Store sets the 6×64 int32 tile at c (rows ldc elements apart)
// to the product of the 6×4kq int8 block at a (rows lda bytes apart) and the
// packed 4kq×64 panel at b, minus corr[i] in row i. kq > 0.
//
//go:noescape
func gemmVNNIS8Store(kq int, a *int8, lda int, b *uint8, c *int32, ldc int, corr *int32)

// gemmVNNIS8Add is gemmVNNIS8Store adding the product to the tile instead
// (corr unused).
//
//go:noescape
func gemmVNNIS8Add(kq int, a *int8, lda int, b *uint8, c *int32, ldc int, corr *int32)

const (
	vnniMR = 6   // tile rows
	vnniNR = 64  // tile columns
	vnniKQ = 64  // k-quads per slice: a 16 KiB panel of B, in L1
	vnniQB = 256 // packed bytes per k-quad of a panel
)

// gemmS8VNNI sets c[b] (row-major [nb, m, n] int32) to a[b] x bm[b] for nb
// products of s8 matrices laid out as la and lb, wrapped to 32 bits, using
// up to par goroutines; ok is false (c untouched) when the CPU lacks VNNI.
func gemmS8VNNI(par, nb, m, n, k int, a []int8, la gemmLayout, bm []int8, lb gemmLayout, c []int32) (ok bool) {
	if !vnniS8 {
		return false
	}
	if nb == 0 || m == 0 || n == 0 {
		return true
	}
	if k == 0 {
		clearPar(c[:nb*m*n])
		return true
	}
	kp := roundUp(k, 4)
	kqT := kp / 4
	panels := (n + vnniNR - 1) / vnniNR
	// A in place when its rows are contiguous and whole quads; else a
	// row-major copy zero-padded to kp (zeros add nothing).
	ad, lda, abs := a, la.rs, la.bs
	if la.cs != 1 || k != kp {
		ad = make([]int8, nb*m*kp)
		lda, abs = kp, m*kp
		parallelFor(nb*m, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				src := a[r/m*la.bs+r%m*la.rs:]
				dst := ad[r*kp : r*kp+k]
				if la.cs == 1 {
					copy(dst, src[:k])
					continue
				}
				for q := range dst {
					dst[q] = src[q*la.cs]
				}
			}
		})
	}
	corr := make([]int32, nb*m+vnniMR)
	parallelFor(nb*m, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			var s int32
			for _, v := range ad[r/m*abs+r%m*lda:][:k] {
				s += int32(v)
			}
			corr[r] = s << 7 // 128·rowsum, mod 2^32
		}
	})
	// B packed per batch element, panel by panel: panel p's quad q is the
	// 256 bytes at (p*kqT + q)*vnniQB, zmm v holding columns 16v..16v+15
	// of the panel, four bytes (k = 4q..4q+3) each, sign bits flipped;
	// padding (k >= K, columns >= N) is 0x80, a zero B value.
	bsz := panels * kqT * vnniQB
	bp := make([]uint8, nb*bsz)
	parallelForWork(nb*panels, nb*panels*kqT*vnniQB, func(lo, hi int) {
		for it := lo; it < hi; it++ {
			bi, p := it/panels, it%panels
			packVNNIPanel(bp[bi*bsz+p*kqT*vnniQB:][:kqT*vnniQB], bm[bi*lb.bs:], lb, k, kqT, p*vnniNR, min(vnniNR, n-p*vnniNR))
		}
	})
	// Work items: a run of row tiles of one batch element, each run taking
	// every slice of K and every panel (the slice's panel of B stays in L1
	// across the run's tiles).
	tiles := (m + vnniMR - 1) / vnniMR
	const runTiles = 8
	runs := (tiles + runTiles - 1) / runTiles
	dynamicFor(par, nb*runs, func(next func() int) {
		var tileA [vnniMR * vnniKQ * 4]int8
		var tileC [vnniMR * vnniNR]int32
		var tileCorr [vnniMR]int32
		for it := next(); it < nb*runs; it = next() {
			bi, run := it/runs, it%runs
			t0, t1 := run*runTiles, min((run+1)*runTiles, tiles)
			cb := c[bi*m*n : (bi+1)*m*n]
			for q0 := 0; q0 < kqT; q0 += vnniKQ {
				kq := min(vnniKQ, kqT-q0)
				store := q0 == 0
				for p := 0; p < panels; p++ {
					bpan := bp[bi*bsz+(p*kqT+q0)*vnniQB:][:kq*vnniQB]
					j0, cols := p*vnniNR, min(vnniNR, n-p*vnniNR)
					for t := t0; t < t1; t++ {
						i0 := t * vnniMR
						rows := min(vnniMR, m-i0)
						arow := ad[bi*abs+i0*lda+q0*4:]
						crow := corr[bi*m+i0:]
						if rows == vnniMR && cols == vnniNR {
							vnniTile(store, kq, arow, lda, bpan, cb[i0*n+j0:], n, crow)
							continue
						}
						// A ragged tile: A's rows and C's corner through
						// scratch, padding rows zero.
						clear(tileA[:])
						for r := 0; r < rows; r++ {
							copy(tileA[r*kq*4:(r+1)*kq*4], arow[r*lda:r*lda+kq*4])
						}
						clear(tileCorr[:])
						copy(tileCorr[:rows], crow[:rows])
						if !store {
							for r := 0; r < rows; r++ {
								copy(tileC[r*vnniNR:r*vnniNR+cols], cb[(i0+r)*n+j0:])
							}
						}
						vnniTile(store, kq, tileA[:], kq*4, bpan, tileC[:], vnniNR, tileCorr[:])
						for r := 0; r < rows; r++ {
							copy(cb[(i0+r)*n+j0:(i0+r)*n+j0+cols], tileC[r*vnniNR:r*vnniNR+cols])
						}
					}
				}
			}
		}
	})
	return true
}

// vnniTile runs the kernel on one full tile, the slices' bounds checked
// here for everything it reads and writes.
func vnniTile(store bool, kq int, a []int8, lda int, b []uint8, c []int32, ldc int, corr []int32) {
	_, _, _, _ = a[(vnniMR-1)*lda+kq*4-1], b[kq*vnniQB-1], c[(vnniMR-1)*ldc+vnniNR-1], corr[vnniMR-1]
	if store {
		gemmVNNIS8Store(kq, &a[0], lda, &b[0], &c[0], ldc, &corr[0])
	} else {
		gemmVNNIS8Add(kq, &a[0], lda, &b[0], &c[0], ldc, &corr[0])
	}
}

// packVNNIPanel packs columns [j0, j0+cols) of the k×n matrix b (layout l)
// as one panel of kqT quads (see gemmS8VNNI).
func packVNNIPanel(dst []uint8, b []int8, l gemmLayout, k, kqT, j0, cols int) {
	for q := 0; q < kqT; q++ {
		d := dst[q*vnniQB : (q+1)*vnniQB]
		for r := 0; r < 4; r++ {
			kk := 4*q + r
			if kk >= k {
				for j := 0; j < vnniNR; j++ {
					d[j*4+r] = 0x80
				}
				continue
			}
			row := b[kk*l.rs+j0*l.cs:]
			if l.cs == 1 {
				row = row[:cols]
				for j, v := range row {
					d[j*4+r] = uint8(v) ^ 0x80
				}
			} else {
				for j := 0; j < cols; j++ {
					d[j*4+r] = uint8(row[j*l.cs]) ^ 0x80
				}
			}
			for j := cols; j < vnniNR; j++ {
				d[j*4+r] = 0x80
			}
		}
	}
}
