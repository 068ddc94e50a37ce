//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

// ynnTinyVectors says ynnTinyTaskVec runs here (AVX2 and FMA, which every
// host that takes YNNPACK's order has).
var ynnTinyVectors = archsimd.X86.AVX2() && archsimd.X86.FMA()

// ynnTinyTaskVec is ynnTinyTask eight columns at a time on VFMADD (the
// rounding fma32Exact computes) and VADDPS: a holds the batch element's A
// row-major (row i at i*lda), bp its B row-major with rows ldb apart, and
// at least 8 readable columns from every multiple of 8 below n (zero or
// anything past column n). Columns past the task's are computed and
// dropped.
func ynnTinyTaskVec(t ynnTask, n, k int, a []float32, lda int, bp []float32, ldb int, c []float32) {
	tk := t.tk
	km := k - k%tk
	if t.kstep >= km {
		ynnTinyOneBlockVec(t, n, k, a, lda, bp, ldb, c)
		return
	}
	var out [8]float32
	for j0 := t.j0; j0 < t.j1; j0 += 8 {
		cols := min(8, t.j1-j0)
		for i := t.i0; i < t.i1; i++ {
			ar := a[i*lda : i*lda+k]
			var acc archsimd.Float32x8
			first := true
			for lo := 0; lo < k; {
				hi := t.blockEnd(lo, km, k)
				var l0, l1, l2, l3 archsimd.Float32x8
				for p := lo; p < hi; p += tk {
					l0 = archsimd.BroadcastFloat32x8(ar[p]).MulAdd(archsimd.LoadFloat32x8Slice(bp[p*ldb+j0:]), l0)
					if tk == 1 {
						continue
					}
					if p+1 < hi {
						l1 = archsimd.BroadcastFloat32x8(ar[p+1]).MulAdd(archsimd.LoadFloat32x8Slice(bp[(p+1)*ldb+j0:]), l1)
					}
					if tk == 2 {
						continue
					}
					if p+2 < hi {
						l2 = archsimd.BroadcastFloat32x8(ar[p+2]).MulAdd(archsimd.LoadFloat32x8Slice(bp[(p+2)*ldb+j0:]), l2)
					}
					if p+3 < hi {
						l3 = archsimd.BroadcastFloat32x8(ar[p+3]).MulAdd(archsimd.LoadFloat32x8Slice(bp[(p+3)*ldb+j0:]), l3)
					}
				}
				s := ynnLaneSum8(tk, l0, l1, l2, l3)
				if first {
					acc, first = s, false
				} else {
					acc = s.Add(acc)
				}
				lo = hi
			}
			acc.StoreSlice(out[:])
			copy(c[i*n+j0:i*n+j0+cols], out[:cols])
		}
	}
}

// ynnLanesTaskVec is ynnTinyTaskVec with the vector lanes across eight
// batch elements instead of eight output columns: as, bs and cs hold eight
// products' A (m×k), B (k×n) and C (m×n) element-major, the eight values
// of an element side by side (as[(i*k+p)*8+l] is A[i,p] of product l).
// Each element takes the same operations in the same order as in
// ynnTinyTaskVec, so every lane gets that element's bits; products with a
// few output columns no longer leave most of a vector idle, and no element
// waits on another's chain.
func ynnLanesTaskVec(t ynnTask, n, k int, as, bs, cs []float32) {
	tk := t.tk
	km := k - k%tk
	ld := func(s []float32, i int) archsimd.Float32x8 { return archsimd.LoadFloat32x8((*[8]float32)(s[8*i:])) }
	for i := t.i0; i < t.i1; i++ {
		for j := t.j0; j < t.j1; j++ {
			var acc archsimd.Float32x8
			first := true
			for lo := 0; lo < k; {
				hi := t.blockEnd(lo, km, k)
				var s archsimd.Float32x8
				switch {
				case tk == 1:
					var l0 archsimd.Float32x8
					for p := lo; p < hi; p++ {
						l0 = ld(as, i*k+p).MulAdd(ld(bs, p*n+j), l0)
					}
					s = ynnLaneSum8(1, l0, l0, l0, l0)
				default:
					var l0, l1, l2, l3 archsimd.Float32x8
					for p := lo; p < hi; p += tk {
						l0 = ld(as, i*k+p).MulAdd(ld(bs, p*n+j), l0)
						if p+1 < hi {
							l1 = ld(as, i*k+p+1).MulAdd(ld(bs, (p+1)*n+j), l1)
						}
						if tk == 4 && p+2 < hi {
							l2 = ld(as, i*k+p+2).MulAdd(ld(bs, (p+2)*n+j), l2)
						}
						if tk == 4 && p+3 < hi {
							l3 = ld(as, i*k+p+3).MulAdd(ld(bs, (p+3)*n+j), l3)
						}
					}
					s = ynnLaneSum8(tk, l0, l1, l2, l3)
				}
				if first {
					acc, first = s, false
				} else {
					acc = s.Add(acc)
				}
				lo = hi
			}
			acc.Store((*[8]float32)(cs[8*(i*n+j):]))
		}
	}
}

// ynnTinyOneBlockVec is ynnTinyTaskVec for a task whose K is one block
// (kstep >= the last multiple of tk below k) and, past it, the block of
// the k%tk single products: the same operations, the loops unrolled by tk
// and whole output vectors stored in place.
func ynnTinyOneBlockVec(t ynnTask, n, k int, a []float32, lda int, bp []float32, ldb int, c []float32) {
	tk := t.tk
	km := k - k%tk
	ldb8 := func(p, j int) archsimd.Float32x8 { return archsimd.LoadFloat32x8((*[8]float32)(bp[p*ldb+j:])) }
	combine := func(l0, l1, l2, l3 archsimd.Float32x8) archsimd.Float32x8 { return ynnLaneSum8(tk, l0, l1, l2, l3) }
	var out [8]float32
	for j0 := t.j0; j0 < t.j1; j0 += 8 {
		cols := min(8, t.j1-j0)
		for i := t.i0; i < t.i1; i++ {
			ar := a[i*lda : i*lda+k]
			var l0, l1, l2, l3 archsimd.Float32x8
			switch tk {
			case 1:
				for p := 0; p < km; p++ {
					l0 = archsimd.BroadcastFloat32x8(ar[p]).MulAdd(ldb8(p, j0), l0)
				}
			case 2:
				for p := 0; p+1 < km; p += 2 {
					l0 = archsimd.BroadcastFloat32x8(ar[p]).MulAdd(ldb8(p, j0), l0)
					l1 = archsimd.BroadcastFloat32x8(ar[p+1]).MulAdd(ldb8(p+1, j0), l1)
				}
			default:
				for p := 0; p+3 < km; p += 4 {
					l0 = archsimd.BroadcastFloat32x8(ar[p]).MulAdd(ldb8(p, j0), l0)
					l1 = archsimd.BroadcastFloat32x8(ar[p+1]).MulAdd(ldb8(p+1, j0), l1)
					l2 = archsimd.BroadcastFloat32x8(ar[p+2]).MulAdd(ldb8(p+2, j0), l2)
					l3 = archsimd.BroadcastFloat32x8(ar[p+3]).MulAdd(ldb8(p+3, j0), l3)
				}
			}
			var acc archsimd.Float32x8
			if km > 0 {
				acc = combine(l0, l1, l2, l3)
			}
			if km < k {
				// The k%tk products past the last multiple of tk, one
				// lane each, as a block of their own.
				var t0, t1, t2, t3 archsimd.Float32x8
				t0 = archsimd.BroadcastFloat32x8(ar[km]).MulAdd(ldb8(km, j0), t0)
				if km+1 < k {
					t1 = archsimd.BroadcastFloat32x8(ar[km+1]).MulAdd(ldb8(km+1, j0), t1)
				}
				if km+2 < k {
					t2 = archsimd.BroadcastFloat32x8(ar[km+2]).MulAdd(ldb8(km+2, j0), t2)
				}
				if km > 0 {
					acc = combine(t0, t1, t2, t3).Add(acc)
				} else {
					acc = combine(t0, t1, t2, t3)
				}
			}
			if cols == 8 {
				acc.Store((*[8]float32)(c[i*n+j0:]))
				continue
			}
			acc.Store(&out)
			copy(c[i*n+j0:i*n+j0+cols], out[:cols])
		}
	}
}

// ynnLaneSum8 adds a K block's tk lanes as the GEMM leaves them, each in
// its cleared lane storage (+0 plus the chain): s0, s0+s1, or
// (s0+s1)+(s2+s3).
func ynnLaneSum8(tk int, l0, l1, l2, l3 archsimd.Float32x8) archsimd.Float32x8 {
	var zero archsimd.Float32x8
	switch tk {
	case 1:
		return zero.Add(l0)
	case 2:
		return zero.Add(l0).Add(zero.Add(l1))
	}
	return zero.Add(l0).Add(zero.Add(l1)).Add(zero.Add(l2).Add(zero.Add(l3)))
}
