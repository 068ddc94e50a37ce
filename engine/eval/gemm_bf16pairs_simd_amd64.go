//go:build goexperiment.simd && amd64

package eval

import (
	"math"
	"os"
	"simd/archsimd"
	"sync/atomic"

	"goldtrace/internal/hostcpu"
)

//go:generate go run gemm_bf16_gen.go

// Products whose operands hold bf16 values (bf16 dots, and f32 dots of
// values converted from bf16: a bf16 MLP's second layer) on AVX512-BF16.
// The f32 kernels sum each element as FMA chains over kc blocks of K (each
// block's chain from +0, added to C in block order); VDPBF16PS runs two
// steps of such a chain per instruction, on 16 lanes, at about twice the
// f32 FMA's rate (gemm_bf16_gen.go). Its steps flush denormal inputs and
// results, which the f32 chain does not, so it runs only where nothing
// denormal can occur: no operand is subnormal, and the smallest nonzero
// magnitudes of A and B, 2^ea and 2^eb, have ea + eb >= -112. Then every
// product is a multiple of q = 2^(ea+eb-14) (each bf16 value is an 8-bit
// integer times its exponent's 2^(e-7)), every partial sum stays one
// (f32 rounding keeps multiples of q: at ulps below q the sum is exact),
// so a partial sum is zero or at least q >= 2^-126, never denormal. The
// chains also never reach -0 (from +0, x + -x is +0), so the zero pad of an
// odd block changes nothing. Operands with NaNs or infinities, and results
// that overflowed, go back to the f32 kernels.

// bf16PairsOn reports whether this CPU runs the kernel
// (GOLDTRACE_NO_BF16_PAIRS=1 turns it off, to compare).
var bf16PairsOn = archsimd.X86.AVX512() && hostcpu.X86.AVX512BF16 && os.Getenv("GOLDTRACE_NO_BF16_PAIRS") != "1"

// gemmBF16S stores the 12×32 product of the packed panels a (kp pairs of
// twelve rows) and b (kp pairs of 32 columns), plus +0, into the tile of C
// at c (rows ldc elements apart); gemmBF16A adds it to the tile. kp > 0.
//
//go:noescape
func gemmBF16S(kp int, a, b *uint32, c *float32, ldc int)

//go:noescape
func gemmBF16A(kp int, a, b *uint32, c *float32, ldc int)

const (
	bf16MR = 12
	bf16NR = 32
)

// bf16Src is a matrix operand whose values are bf16: bf16 words, or f32
// values whose low 16 bits are zero; element (b, i, j) at l's offset.
type bf16Src struct {
	u16 []uint16
	f32 []float32
	l   gemmLayout
}

// bits returns the bf16 bits of the element at offset o.
func (s *bf16Src) bits(o int) uint32 {
	if s.u16 != nil {
		return uint32(s.u16[o])
	}
	return math.Float32bits(s.f32[o]) >> 16
}

// bf16Exponents scans the nb×rows×cols elements of s: ok is false when one
// is a NaN, an infinity, a subnormal, or (f32 values) not a bf16 value;
// else minExp is the smallest biased exponent of a nonzero element (255
// when all are zero).
func bf16Exponents(s *bf16Src, nb, rows, cols int) (minExp int, ok bool) {
	var bad atomic.Bool
	var lowest atomic.Int32
	lowest.Store(255)
	parallelForWork(nb*rows, nb*rows*cols, func(lo, hi int) {
		// Branch-free: a zero's exponent counts as 255 for the minimum,
		// so a minimum of 0 is a subnormal and a maximum of 255 an
		// infinity or a NaN.
		low, high, low16 := uint32(255), uint32(0), uint32(0)
		for r := lo; r < hi && !bad.Load(); r++ {
			base := r/rows*s.l.bs + r%rows*s.l.rs
			switch {
			case s.u16 != nil && s.l.cs == 1:
				row := s.u16[base : base+cols]
				k := bf16ScanU16Vector(row, &low, &high)
				for _, b16 := range row[k:] {
					b := uint32(b16)
					e := b >> 7 & 0xff
					low = min(low, e|((b&0x7fff)-1)>>16&0xff)
					high = max(high, e)
				}
			case s.u16 == nil && s.l.cs == 1:
				row := s.f32[base : base+cols]
				k := bf16ScanF32Vector(row, &low, &high, &low16)
				for _, v := range row[k:] {
					w := math.Float32bits(v)
					low16 |= w
					b := w >> 16
					e := b >> 7 & 0xff
					low = min(low, e|((b&0x7fff)-1)>>16&0xff)
					high = max(high, e)
				}
				low16 &= 0xffff
			default:
				for j := 0; j < cols; j++ {
					o := base + j*s.l.cs
					var b uint32
					if s.u16 != nil {
						b = uint32(s.u16[o])
					} else {
						w := math.Float32bits(s.f32[o])
						low16 |= w & 0xffff
						b = w >> 16
					}
					e := b >> 7 & 0xff
					low = min(low, e|((b&0x7fff)-1)>>16&0xff)
					high = max(high, e)
				}
			}
			if low == 0 || high == 0xff || low16 != 0 {
				bad.Store(true)
			}
		}
		for {
			cur := lowest.Load()
			if int32(low) >= cur || lowest.CompareAndSwap(cur, int32(low)) {
				break
			}
		}
	})
	return int(lowest.Load()), !bad.Load()
}

// bf16ScanF32Vector folds the whole 16-element vectors of f32 values xs
// into bf16Exponents' running minimum (a zero counting as 255), maximum and
// OR of the low halves; it returns how many it did.
func bf16ScanF32Vector(xs []float32, low, high, or16 *uint32) int {
	n := len(xs) / 16 * 16
	if n == 0 {
		return 0
	}
	w := f32Bits(xs)
	lo, hi, or := archsimd.BroadcastUint32x16(*low), archsimd.BroadcastUint32x16(*high), archsimd.BroadcastUint32x16(0)
	ff, mag, one := archsimd.BroadcastUint32x16(0xff), archsimd.BroadcastUint32x16(0x7fff), archsimd.BroadcastUint32x16(1)
	for i := 0; i < n; i += 16 {
		v := archsimd.LoadUint32x16((*[16]uint32)(w[i : i+16]))
		or = or.Or(v)
		b := v.ShiftAllRight(16)
		e := b.ShiftAllRight(7).And(ff)
		z := b.And(mag).Sub(one).ShiftAllRight(16).And(ff)
		lo = lo.Min(e.Or(z))
		hi = hi.Max(e)
	}
	var a, b, c [16]uint32
	lo.Store(&a)
	hi.Store(&b)
	or.Store(&c)
	archsimd.ClearAVXUpperBits()
	for j := range a {
		*low, *high, *or16 = min(*low, a[j]), max(*high, b[j]), *or16|c[j]&0xffff
	}
	return n
}

// bf16ScanU16Vector is bf16ScanF32Vector for bf16 words.
func bf16ScanU16Vector(xs []uint16, low, high *uint32) int {
	n := len(xs) / 16 * 16
	if n == 0 {
		return 0
	}
	lo, hi := archsimd.BroadcastUint32x16(*low), archsimd.BroadcastUint32x16(*high)
	ff, mag, one := archsimd.BroadcastUint32x16(0xff), archsimd.BroadcastUint32x16(0x7fff), archsimd.BroadcastUint32x16(1)
	for i := 0; i < n; i += 16 {
		b := archsimd.LoadUint16x16((*[16]uint16)(xs[i : i+16])).ExtendToUint32()
		e := b.ShiftAllRight(7).And(ff)
		z := b.And(mag).Sub(one).ShiftAllRight(16).And(ff)
		lo = lo.Min(e.Or(z))
		hi = hi.Max(e)
	}
	var a, b [16]uint32
	lo.Store(&a)
	hi.Store(&b)
	archsimd.ClearAVXUpperBits()
	for j := range a {
		*low, *high = min(*low, a[j]), max(*high, b[j])
	}
	return n
}

// gemmBF16Pairs sets c (row-major [nb, m, n]) to a x b, each element as the
// f32 kernels sum it in kc blocks, when the operands allow (see above); ok
// is false otherwise, c then holding anything.
func gemmBF16Pairs(par, nb, m, n, k, kc int, a, b bf16Src, c []float32) (ok bool) {
	return gemmBF16PairsOrder(false, par, nb, m, n, k, kc, a, b, c)
}

// gemmBF16PairsOddFirst is gemmBF16Pairs taking each pair of K indices
// (k, k+1) in the order YNNPACK's own bf16 kernel does, k+1 first (an odd
// K's last index after a zero product): VDPBF16PS on the pairs as they lie
// in memory, the order dot_bf16_ynn.go reproduces with swapped operands.
func gemmBF16PairsOddFirst(par, nb, m, n, k, kc int, a, b bf16Src, c []float32) (ok bool) {
	return gemmBF16PairsOrder(true, par, nb, m, n, k, kc, a, b, c)
}

// gemmBF16PairsOrder is gemmBF16Pairs, or gemmBF16PairsOddFirst when oddFirst.
func gemmBF16PairsOrder(oddFirst bool, par, nb, m, n, k, kc int, a, b bf16Src, c []float32) (ok bool) {
	if !bf16PairsOn || nb == 0 || m == 0 || n == 0 || k == 0 || kc <= 0 {
		return false
	}
	ea, okA := bf16Exponents(&a, nb, m, k)
	if !okA {
		return false
	}
	eb, okB := bf16Exponents(&b, nb, k, n)
	if !okB || (ea < 255 && eb < 255 && ea+eb-254 < -112) {
		return false
	}
	tiles, panels := (m+bf16MR-1)/bf16MR, (n+bf16NR-1)/bf16NR
	maxPairs := (min(kc, k) + 1) / 2
	if nb >= 2*par && par > 1 {
		// Many batch elements (attention's heads): each worker takes whole
		// ones, packing and multiplying them alone, with no barrier per
		// element and the result checked while it is still in cache. Each
		// element is summed exactly as below.
		var nonFinite atomic.Bool
		dynamicFor(par, nb, func(next func() int) {
			ap := make([]uint32, tiles*maxPairs*bf16MR)
			bp := make([]uint32, panels*maxPairs*bf16NR)
			for bi := next(); bi < nb && !nonFinite.Load(); bi = next() {
				cb := c[bi*m*n : (bi+1)*m*n]
				for pc := 0; pc < k; pc += kc {
					kb := min(kc, k-pc)
					pairs := (kb + 1) / 2
					for t := 0; t < tiles; t++ {
						packBF16A(ap[t*pairs*bf16MR:(t+1)*pairs*bf16MR], &a, bi, t*bf16MR, min(bf16MR, m-t*bf16MR), pc, kb)
					}
					for p := 0; p < panels; p++ {
						packBF16B(bp[p*pairs*bf16NR:(p+1)*pairs*bf16NR], &b, bi, p*bf16NR, min(bf16NR, n-p*bf16NR), pc, kb)
					}
					if oddFirst {
						swapBF16Pairs(ap[:tiles*pairs*bf16MR])
						swapBF16Pairs(bp[:panels*pairs*bf16NR])
					}
					bf16Tiles(pc == 0, pairs, 0, tiles, 0, panels, m, n, ap, bp, cb)
				}
				if !allFiniteF32(cb) {
					nonFinite.Store(true)
				}
			}
		})
		sseAfterAVX()
		return !nonFinite.Load()
	}
	ap := make([]uint32, tiles*maxPairs*bf16MR)
	bp := make([]uint32, panels*maxPairs*bf16NR)
	// Work items: runs of up to 16 row tiles by runs of column panels,
	// several per goroutine.
	const runTiles = 16
	rowRuns := (tiles + runTiles - 1) / runTiles
	colRuns := min(panels, max(1, 4*par/rowRuns))
	for bi := 0; bi < nb; bi++ {
		cb := c[bi*m*n : (bi+1)*m*n]
		for pc := 0; pc < k; pc += kc {
			kb := min(kc, k-pc)
			pairs := (kb + 1) / 2
			store := pc == 0
			parallelForWork(tiles+panels, (m+n)*kb, func(lo, hi int) {
				for it := lo; it < hi; it++ {
					var dst []uint32
					if it < tiles {
						dst = ap[it*pairs*bf16MR : (it+1)*pairs*bf16MR]
						packBF16A(dst, &a, bi, it*bf16MR, min(bf16MR, m-it*bf16MR), pc, kb)
					} else {
						p := it - tiles
						dst = bp[p*pairs*bf16NR : (p+1)*pairs*bf16NR]
						packBF16B(dst, &b, bi, p*bf16NR, min(bf16NR, n-p*bf16NR), pc, kb)
					}
					if oddFirst {
						swapBF16Pairs(dst)
					}
				}
			})
			dynamicFor(par, rowRuns*colRuns, func(next func() int) {
				for it := next(); it < rowRuns*colRuns; it = next() {
					t0, t1 := it/colRuns*runTiles, min((it/colRuns+1)*runTiles, tiles)
					p0, p1 := it%colRuns*panels/colRuns, (it%colRuns+1)*panels/colRuns
					bf16Tiles(store, pairs, t0, t1, p0, p1, m, n, ap, bp, cb)
				}
			})
		}
	}
	// An overflow makes infinities (and NaNs from inf - inf) whose bits the
	// f32 kernels would give otherwise: those products go back to them.
	var nonFinite atomic.Bool
	parallelFor(len(c[:nb*m*n]), func(lo, hi int) {
		if !allFiniteF32(c[lo:hi]) {
			nonFinite.Store(true)
		}
	})
	sseAfterAVX()
	return !nonFinite.Load()
}

// bf16Tiles multiplies row tiles [t0, t1) of the packed A panels ap by
// column panels [p0, p1) of bp (pairs pairs each) into the row-major m×n
// c: stored when store, else added.
func bf16Tiles(store bool, pairs, t0, t1, p0, p1, m, n int, ap, bp []uint32, c []float32) {
	var tile [bf16MR * bf16NR]float32
	for p := p0; p < p1; p++ {
		bpan := bp[p*pairs*bf16NR : (p+1)*pairs*bf16NR]
		j0, cols := p*bf16NR, min(bf16NR, n-p*bf16NR)
		for t := t0; t < t1; t++ {
			apan := ap[t*pairs*bf16MR : (t+1)*pairs*bf16MR]
			i0, rows := t*bf16MR, min(bf16MR, m-t*bf16MR)
			if rows == bf16MR && cols == bf16NR {
				bf16Tile(store, pairs, apan, bpan, c[i0*n+j0:], n)
				continue
			}
			if !store {
				for r := 0; r < rows; r++ {
					copy(tile[r*bf16NR:r*bf16NR+cols], c[(i0+r)*n+j0:])
				}
			}
			bf16Tile(store, pairs, apan, bpan, tile[:], bf16NR)
			for r := 0; r < rows; r++ {
				copy(c[(i0+r)*n+j0:(i0+r)*n+j0+cols], tile[r*bf16NR:r*bf16NR+cols])
			}
		}
	}
}

// swapBF16Pairs swaps the halves of each packed pair (YNNPACK's k+1-first
// order).
func swapBF16Pairs(ws []uint32) {
	for i, w := range ws {
		ws[i] = w<<16 | w>>16
	}
}

// allFiniteF32 reports whether no element of xs is an infinity or a NaN
// (an exponent field of all ones, the largest the mask can give, so four
// vectors fold by maximum before one compare).
func allFiniteF32(xs []float32) bool {
	w := f32Bits(xs)
	i := 0
	if len(w) >= 64 {
		p := u32Base(w, len(w))
		exp := archsimd.BroadcastUint32x16(0x7f800000)
		for ; i+64 <= len(w); i += 64 {
			a := loadUint32x16(p, 4*i).And(exp).Max(loadUint32x16(p, 4*i+64).And(exp))
			b := loadUint32x16(p, 4*i+128).And(exp).Max(loadUint32x16(p, 4*i+192).And(exp))
			if a.Max(b).Equal(exp).ToBits() != 0 {
				archsimd.ClearAVXUpperBits()
				return false
			}
		}
		archsimd.ClearAVXUpperBits()
	}
	for _, v := range w[i:] {
		if v&0x7f800000 == 0x7f800000 {
			return false
		}
	}
	return true
}

// bf16Tile runs the kernel on one tile, the slices' bounds checked here.
func bf16Tile(store bool, pairs int, a, b []uint32, c []float32, ldc int) {
	_, _, _ = a[pairs*bf16MR-1], b[pairs*bf16NR-1], c[(bf16MR-1)*ldc+bf16NR-1]
	if store {
		gemmBF16S(pairs, &a[0], &b[0], &c[0], ldc)
	} else {
		gemmBF16A(pairs, &a[0], &b[0], &c[0], ldc)
	}
}

// packBF16A packs rows [i0, i0+rows) of batch element bi of A, K indices
// [pc, pc+kb), as a panel of pairs: pair q, row r at q*12 + r, element
// pc+2q in the high half and pc+2q+1 (or a zero pad) in the low one;
// missing rows are zero.
func packBF16A(dst []uint32, a *bf16Src, bi, i0, rows, pc, kb int) {
	pairs := (kb + 1) / 2
	if rows == bf16MR && a.u16 != nil && a.l.cs == 1 && kb%2 == 0 {
		// A full tile of row-major bf16: the twelve rows in lockstep, each
		// pair's dwords written in one run.
		var rs [bf16MR][]uint16
		for r := range rs {
			base := bi*a.l.bs + (i0+r)*a.l.rs + pc
			rs[r] = a.u16[base : base+kb]
		}
		for q := 0; q < pairs; q++ {
			d := dst[q*bf16MR : q*bf16MR+bf16MR]
			for r := range d {
				p := rs[r][2*q : 2*q+2]
				d[r] = uint32(p[0])<<16 | uint32(p[1])
			}
		}
		return
	}
	for r := 0; r < bf16MR; r++ {
		if r >= rows {
			for q := 0; q < pairs; q++ {
				dst[q*bf16MR+r] = 0
			}
			continue
		}
		base := bi*a.l.bs + (i0+r)*a.l.rs + pc*a.l.cs
		cs := a.l.cs
		q := 0
		if a.u16 != nil && cs == 1 {
			src := a.u16[base : base+kb]
			for ; 2*q+1 < kb; q++ {
				dst[q*bf16MR+r] = uint32(src[2*q])<<16 | uint32(src[2*q+1])
			}
		} else if cs == 1 {
			src := a.f32[base : base+kb]
			for ; 2*q+1 < kb; q++ {
				dst[q*bf16MR+r] = math.Float32bits(src[2*q])&0xffff0000 | math.Float32bits(src[2*q+1])>>16
			}
		}
		for ; q < pairs; q++ {
			w := a.bits(base+2*q*cs) << 16
			if 2*q+1 < kb {
				w |= a.bits(base + (2*q+1)*cs)
			}
			dst[q*bf16MR+r] = w
		}
	}
}

// packBF16B packs columns [j0, j0+cols) of batch element bi of B, K indices
// [pc, pc+kb), as a panel of pairs: pair q, column j at q*32 + j, as
// packBF16A lays out A's pairs; missing columns are zero.
func packBF16B(dst []uint32, b *bf16Src, bi, j0, cols, pc, kb int) {
	pairs := (kb + 1) / 2
	for q := 0; q < pairs; q++ {
		d := dst[q*bf16NR : (q+1)*bf16NR]
		k0 := pc + 2*q
		base0 := bi*b.l.bs + k0*b.l.rs + j0*b.l.cs
		if 2*q+1 < kb && b.u16 != nil && b.l.cs == 1 {
			r0 := b.u16[base0 : base0+cols]
			r1 := b.u16[base0+b.l.rs : base0+b.l.rs+cols]
			for j := range r0 {
				d[j] = uint32(r0[j])<<16 | uint32(r1[j])
			}
		} else if 2*q+1 < kb && b.l.cs == 1 {
			r0 := b.f32[base0 : base0+cols]
			r1 := b.f32[base0+b.l.rs : base0+b.l.rs+cols]
			for j := range r0 {
				d[j] = math.Float32bits(r0[j])&0xffff0000 | math.Float32bits(r1[j])>>16
			}
		} else if 2*q+1 < kb && b.l.rs == 1 && b.f32 != nil {
			// A transposed B (read in place: `x @ w.T`, attention's K):
			// each column's pair is adjacent.
			for j := 0; j < cols; j++ {
				o := base0 + j*b.l.cs
				d[j] = math.Float32bits(b.f32[o])&0xffff0000 | math.Float32bits(b.f32[o+1])>>16
			}
		} else if 2*q+1 < kb && b.l.rs == 1 {
			for j := 0; j < cols; j++ {
				o := base0 + j*b.l.cs
				d[j] = uint32(b.u16[o])<<16 | uint32(b.u16[o+1])
			}
		} else {
			for j := 0; j < cols; j++ {
				w := b.bits(base0+j*b.l.cs) << 16
				if 2*q+1 < kb {
					w |= b.bits(base0 + b.l.rs + j*b.l.cs)
				}
				d[j] = w
			}
		}
		for j := cols; j < bf16NR; j++ {
			d[j] = 0
		}
	}
}

// bf16PairsAvailable reports whether gemmBF16Pairs can run here (tests).
func bf16PairsAvailable() bool { return bf16PairsOn }
