//go:build goexperiment.simd && amd64

package eval

import (
	"simd/archsimd"
	"sync/atomic"
	"unsafe"
)

// The vector path of dotC64Eigen (dot_c64_eigen.go). A vector (two on
// AVX2) holds the eight columns of an in-order group as (br, bi) pairs; each row's ar and
// ai are broadcast, so X = Σ ar·(br, bi) gives (fr, sr) and Y = Σ ai·(br, bi)
// gives (fi, si) for the eight columns: VMULPS then VADDPS per term, the
// scalar order. A K block ends by pairing the lanes into (tre, tim), the
// alpha step and the add to C, all in the lanes.

// c64Vector is the vector path's width: 16 (AVX-512 tiles of 6 rows), 8
// (AVX2 tiles of 3 rows) or 0 (none). Tests set it to each width the CPU
// runs.
var c64Vector = c64DefaultVector()

func c64DefaultVector() int {
	switch {
	case archsimd.X86.AVX512():
		return 16
	case archsimd.X86.AVX2():
		return 8
	}
	return 0
}

// c64TileRows is the row count of a vector tile.
func c64TileRowsFor(width int) int {
	if width == 16 {
		return 6
	}
	return 3
}

// c64EvenSign flips the sign of the even (real) lanes.
var c64EvenSign = [16]uint32{1 << 31, 0, 1 << 31, 0, 1 << 31, 0, 1 << 31, 0, 1 << 31, 0, 1 << 31, 0, 1 << 31, 0, 1 << 31, 0}

// c64Kern6x16 (dot_c64_eigen_amd64.s) adds the K block of kl terms of a
// 6-row tile over two in-order groups: ap holds (ar, ai) of the 6 rows per
// k, b0 and b1 the groups' 16 floats per k; c is the tile's first element,
// rows ldc complex64 apart, the second group 8 columns on. The 24
// accumulators take VMULPS (broadcast ar or ai) then VADDPS per term; the
// block ends with the lane pairing, the alpha step and the add to C.
//
//go:noescape
func c64Kern6x16(kl int, ap, b0, b1, c unsafe.Pointer, ldc int)

// c64Kern6x8 is c64Kern6x16 for one group (b1 unused).
//
//go:noescape
func c64Kern6x8(kl int, ap, b0, b1, c unsafe.Pointer, ldc int)

// c64Kern3x8AVX2 is c64Kern6x8 for 3 rows on AVX2 (VBROADCASTSS, then
// VMULPS and VADDPS on each half of the group; b1 unused).
//
//go:noescape
func c64Kern3x8AVX2(kl int, ap, b0, b1, c unsafe.Pointer, ldc int)

// c64RowChunk is the number of tiles a goroutine takes at a time; their
// packed A for one K block stays in L2 while the groups go by.
const c64RowChunk = 12

// c64EigenVector runs one batch element on the vector tiles; false when
// the CPU has neither AVX-512 nor AVX2.
func c64EigenVector(par, m, n, k int, p c64Seg, groups []c64Group, a, b c64Operand, c []complex64) bool {
	width := c64Vector
	if width == 0 {
		return false
	}
	R := c64TileRowsFor(width)
	var seq []c64Group
	var tails []c64Group
	for _, g := range groups {
		if g.kind == c64KindSeq {
			seq = append(seq, g)
		} else {
			tails = append(tails, g)
		}
	}
	tiles := (m + R - 1) / R
	bp := c64PackBuf(len(seq) * k * 16)
	ap := c64PackBuf(tiles * k * 2 * R)
	c64PackB(par, k, groups, b, bp)
	runParallel(par, tiles, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			dst := ap[t*k*2*R : (t+1)*k*2*R]
			for r := 0; r < R; r++ {
				i := t*R + r
				if i >= m {
					for q := 0; q < k; q++ {
						dst[q*2*R+2*r], dst[q*2*R+2*r+1] = 0, 0
					}
					continue
				}
				src := a.v[i*a.rs:]
				for q := 0; q < k; q++ {
					v := src[q*a.cs]
					dst[q*2*R+2*r], dst[q*2*R+2*r+1] = real(v), imag(v)
				}
			}
		}
	})
	// Chunks of c64RowChunk tiles go to whichever goroutine is free (the
	// host's other load makes equal shares finish apart); each runs its
	// K blocks in order.
	chunks := (tiles + c64RowChunk - 1) / c64RowChunk
	var next atomic.Int64
	workers := min(par, chunks)
	bt := c64TailCols(k, groups, b)
	runParallel(workers, workers, func(_, _ int) {
		var arow []complex64
		if len(tails) > 0 && a.cs != 1 {
			arow = make([]complex64, k)
		}
		var scratch []complex64 // the last tile's rows when m is not a multiple of R
		for {
			ci := int(next.Add(1)) - 1
			if ci >= chunks {
				break
			}
			t0, t1 := ci*c64RowChunk, min(tiles, (ci+1)*c64RowChunk)
			clear(c[t0*R*n : min(m, t1*R)*n]) // first touched here, in parallel
			for k0 := 0; k0 < k; k0 += p.kc {
				kl := min(k, k0+p.kc) - k0
				for gi := 0; gi < len(seq); gi += 2 {
					b0 := unsafe.Pointer(&bp[gi*k*16+k0*16])
					for t := t0; t < t1; t++ {
						ct, ldc := c64TileRows(c, m, n, R, t, &scratch)
						a0 := unsafe.Pointer(&ap[t*k*2*R+k0*2*R])
						cp := unsafe.Pointer(&ct[seq[gi].j])
						if width == 8 {
							c64Kern3x8AVX2(kl, a0, b0, nil, cp, ldc)
							if gi+1 < len(seq) {
								cp1 := unsafe.Pointer(&ct[seq[gi+1].j])
								c64Kern3x8AVX2(kl, a0, unsafe.Pointer(&bp[(gi+1)*k*16+k0*16]), nil, cp1, ldc)
							}
						} else if gi+1 < len(seq) && seq[gi+1].j == seq[gi].j+8 {
							c64Kern6x16(kl, a0, b0, unsafe.Pointer(&bp[(gi+1)*k*16+k0*16]), cp, ldc)
						} else {
							c64Kern6x8(kl, a0, b0, nil, cp, ldc)
							if gi+1 < len(seq) {
								cp1 := unsafe.Pointer(&ct[seq[gi+1].j])
								c64Kern6x8(kl, a0, unsafe.Pointer(&bp[(gi+1)*k*16+k0*16]), nil, cp1, ldc)
							}
						}
					}
				}
				if len(tails) > 0 {
					for t := t0; t < t1; t++ {
						ct, ldc := c64TileRows(c, m, n, R, t, &scratch)
						for r := 0; r < R && t*R+r < m; r++ {
							ar := c64RowTerms(a, t*R+r, k, arow)
							c64Tails(ar, bt, groups, t*R+r, m, k, k0, k0+kl, ct[r*ldc:r*ldc+n])
						}
					}
				}
			}
			if scratch != nil {
				t := tiles - 1
				copy(c[t*R*n:m*n], scratch[:(m-t*R)*n])
				scratch = nil
			}
		}
	})
	c64PackRelease(bp)
	c64PackRelease(ap)
	return true
}

// c64TileRows is where tile t's rows live: in c, or for a last tile of
// fewer than R rows in a scratch tile (zeroed when first made).
func c64TileRows(c []complex64, m, n, R, t int, scratch *[]complex64) ([]complex64, int) {
	if (t+1)*R <= m {
		return c[t*R*n:], n
	}
	if *scratch == nil {
		*scratch = make([]complex64, R*n)
	}
	return *scratch, n
}

// c64VectorWidths lists the vector widths this CPU runs, widest first.
func c64VectorWidths() []int {
	switch c64DefaultVector() {
	case 16:
		return []int{16, 8}
	case 8:
		return []int{8}
	}
	return nil
}

// c64VectorTestSet sets the vector width (0 for none) and returns the
// previous one.
func c64VectorTestSet(width int) int {
	old := c64Vector
	c64Vector = width
	return old
}
