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
	hasQuad4 := false // a trailing group of 4 the pairs tile takes
	for _, g := range tails {
		hasQuad4 = hasQuad4 || (g.kind == c64KindPairs && g.w == 4)
	}
	runParallel(workers, workers, func(_, _ int) {
		var arow []complex64
		if len(tails) > 0 {
			arow = make([]complex64, k)
		}
		var aq, bq, outs []float32 // the pairs tile's packed A and B, and its sums
		nq := c64Quad4Count(groups)
		if hasQuad4 && width == 16 {
			aq = make([]float32, p.kc/2*6*4)
			bq = make([]float32, nq*p.kc/2*16)
			outs = make([]float32, nq*192)
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
					peeled := kl &^ 7
					quads := width == 16 && peeled > 0 && hasQuad4
					if quads {
						c64PackPairsB(bt, groups, k, k0, peeled, bq)
					}
					for t := t0; t < t1; t++ {
						ct, ldc := c64TileRows(c, m, n, R, t, &scratch)
						if quads {
							c64PackPairsA(a, m, k, t*R, k0, peeled, arow, aq)
							for q := range nq {
								c64PairsKern6x4(peeled/2, unsafe.Pointer(&aq[0]), unsafe.Pointer(&bq[q*peeled/2*16]), unsafe.Pointer(&outs[q*192]))
							}
						}
						for r := 0; r < R && t*R+r < m; r++ {
							i := t*R + r
							ar := c64RowTerms(a, i, k, arow)
							row := ct[r*ldc : r*ldc+n]
							if !quads || i >= m-m%4 {
								c64Tails(ar, bt, groups, i, m, k, k0, k0+kl, row)
								continue
							}
							c64TailsPaired(ar, bt, groups, i, m, k, k0, k0+kl, row, outs, r)
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

// c64PairsKern6x4 (dot_c64_eigen_amd64.s) sums kp pairs of terms of a
// trailing group of 4 columns for 6 rows, even k and odd k in alternate
// lanes (VBROADCASTSD of the row's (ar, ar') and (ai, ai'), VMULPS, VADDPS),
// and stores per row the two vectors with each lane pair added: lanes 4c
// and 4c+2 of the first hold column c's fr and sr, of the second fi and si.
//
//go:noescape
func c64PairsKern6x4(kp int, ap, bp, out unsafe.Pointer)

// c64Quad4Count counts the trailing groups of 4 columns.
func c64Quad4Count(groups []c64Group) int {
	n := 0
	for _, g := range groups {
		if g.kind == c64KindPairs && g.w == 4 {
			n++
		}
	}
	return n
}

// c64PackPairsB packs the trailing groups of 4 columns (their columns in bt
// as c64TailCols left them) over the peeled terms [k0, k0+peeled): per pair
// of terms (p, p+1) and column c, (br_p, br_p+1, bi_p, bi_p+1).
func c64PackPairsB(bt []complex64, groups []c64Group, k, k0, peeled int, bq []float32) {
	t, q := 0, 0
	for _, g := range groups {
		if g.kind == c64KindSeq {
			continue
		}
		if g.kind == c64KindPairs && g.w == 4 {
			dst := bq[q*peeled/2*16 : (q+1)*peeled/2*16]
			for c := 0; c < 4; c++ {
				col := bt[(t+c)*k+k0 : (t+c)*k+k0+peeled]
				for h := 0; h < peeled/2; h++ {
					e, o := col[2*h], col[2*h+1]
					d := dst[h*16+4*c : h*16+4*c+4]
					d[0], d[1], d[2], d[3] = real(e), real(o), imag(e), imag(o)
				}
			}
			q++
		}
		t += g.w
	}
}

// c64PackPairsA packs rows i0..i0+5 of A (zero past m) over the peeled
// terms: per pair of terms and row, (ar_p, ar_p+1, ai_p, ai_p+1).
func c64PackPairsA(a c64Operand, m, k, i0, k0, peeled int, buf []complex64, aq []float32) {
	for r := 0; r < 6; r++ {
		i := i0 + r
		if i >= m {
			for h := 0; h < peeled/2; h++ {
				d := aq[h*24+4*r : h*24+4*r+4]
				d[0], d[1], d[2], d[3] = 0, 0, 0, 0
			}
			continue
		}
		ar := c64RowTerms(a, i, k, buf)[k0 : k0+peeled]
		for h := 0; h < peeled/2; h++ {
			e, o := ar[2*h], ar[2*h+1]
			d := aq[h*24+4*r : h*24+4*r+4]
			d[0], d[1], d[2], d[3] = real(e), real(o), imag(e), imag(o)
		}
	}
}

// c64TailsPaired is c64Tails for row r of a tile whose trailing groups of
// 4 columns took their peeled terms from the pairs tile (group q's sums at
// outs[q*192:]) and add the rest in order.
func c64TailsPaired(ar, bt []complex64, groups []c64Group, i, m, k, k0, k1 int, row []complex64, outs []float32, r int) {
	peeled := (k1 - k0) &^ 7
	t, q := 0, 0
	for _, g := range groups {
		if g.kind == c64KindSeq {
			continue
		}
		if g.kind == c64KindPairs && g.w == 4 {
			x := outs[q*192+2*r*16 : q*192+2*r*16+16]
			y := outs[q*192+(2*r+1)*16 : q*192+(2*r+1)*16+16]
			for c := 0; c < 4; c++ {
				fr, sr, fi, si := x[4*c], x[4*c+2], y[4*c], y[4*c+2]
				col := bt[(t+c)*k : (t+c+1)*k]
				for p := k0 + peeled; p < k1; p++ {
					av, bv := ar[p], col[p]
					fr = float32(real(av)*real(bv)) + fr
					fi = float32(imag(av)*real(bv)) + fi
					sr = float32(real(av)*imag(bv)) + sr
					si = float32(imag(av)*imag(bv)) + si
				}
				c64Into(fr+-si, fi+sr, &row[g.j+c])
			}
			q++
			t += g.w
			continue
		}
		kind := c64RowKind(g.kind, i, m)
		for j := g.j; j < g.j+g.w; j++ {
			c64TailBlock(ar[k0:k1], bt[t*k+k0:t*k+k1], kind, &row[j])
			t++
		}
	}
}
