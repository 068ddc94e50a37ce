//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

// The hot loops of reduce_ynn.go a vector at a time: YNNPACK's 16 logical
// lanes as two 8-lane halves (AVX2 and AVX-512 alike), each lane's adds in
// the scalar loops' order, so the results are theirs bit for bit
// (TestYNNVectorMatchesScalar).

// ynnVector reports whether the vector loops run (the CPU has AVX2).
var ynnVector = archsimd.X86.AVX2()

// ynnBlocks256 adds nblk blocks of 256 elements of xs into acc as
// ynnRowKernel's first loop does (without its Kahan steps).
func ynnBlocks256(xs []float32, nblk int, acc *[ynnLanes]float32) {
	if !ynnVector || nblk == 0 {
		ynnBlocks256Go(xs, nblk, acc)
		return
	}
	p := f32Base(xs, nblk*256)
	lo := archsimd.LoadFloat32x8((*[8]float32)(acc[0:8]))
	hi := archsimd.LoadFloat32x8((*[8]float32)(acc[8:16]))
	zero := archsimd.BroadcastFloat32x8(0)
	for off, end := 0, nblk*1024; off < end; off += 1024 {
		var blo, bhi archsimd.Float32x8
		for j := 0; j < 4; j++ {
			q := off + 256*j
			plo := zero.Add(loadFloat32x8(p, q)).Add(loadFloat32x8(p, q+64)).Add(loadFloat32x8(p, q+128)).Add(loadFloat32x8(p, q+192))
			phi := zero.Add(loadFloat32x8(p, q+32)).Add(loadFloat32x8(p, q+96)).Add(loadFloat32x8(p, q+160)).Add(loadFloat32x8(p, q+224))
			if j == 0 {
				blo, bhi = plo, phi
			} else {
				blo, bhi = blo.Add(plo), bhi.Add(phi)
			}
		}
		lo, hi = lo.Add(blo), hi.Add(bhi)
	}
	lo.Store((*[8]float32)(acc[0:8]))
	hi.Store((*[8]float32)(acc[8:16]))
	archsimd.ClearAVXUpperBits()
}

// ynnColGroups adds ngroups groups of four rows (row stride inner) of xs
// into acc as ynnColKernel's loop does, with acc1 += acc0, acc0 = 0 every
// fourth group (the Kahan steps stay with the caller, which passes at most
// up to the next one). n is len(acc0).
func ynnColGroups(xs []float32, inner, ngroups int, acc0, acc1 []float32) {
	n := len(acc0)
	if !ynnVector || n < 8 {
		ynnColGroupsGo(xs, inner, ngroups, acc0, acc1)
		return
	}
	nv := n &^ 7
	acc1 = acc1[:n]
	zero := archsimd.BroadcastFloat32x8(0)
	pa0, pa1 := f32Base(acc0, nv), f32Base(acc1, nv)
	rows := 4 * ngroups
	px := f32Base(xs, (rows-1)*inner+n)
	st := 4 * inner
	for c := 0; c < 4*nv; c += 32 {
		a0, a1 := loadFloat32x8(pa0, c), loadFloat32x8(pa1, c)
		for g := 0; g < ngroups; g++ {
			q := 4*g*st + c
			a0 = a0.Add(zero.Add(loadFloat32x8(px, q)).Add(loadFloat32x8(px, q+st)).Add(loadFloat32x8(px, q+2*st)).Add(loadFloat32x8(px, q+3*st)))
			if g%4 == 3 {
				a1, a0 = a1.Add(a0), zero
			}
		}
		storeFloat32x8(a0, pa0, c)
		storeFloat32x8(a1, pa1, c)
	}
	archsimd.ClearAVXUpperBits()
	if nv < n {
		for c := nv; c < n; c++ {
			ynnColGroupsGo(xs[c:], inner, ngroups, acc0[c:c+1], acc1[c:c+1])
		}
	}
}

// ynnColGroups64 is ynnColGroups for f64 (sum_kn_fp64's order), 8 columns
// a vector (two 4-lane halves on AVX2).
func ynnColGroups64(xs []float64, inner, ngroups int, acc0, acc1 []float64) {
	n := len(acc0)
	if !ynnVector || n < 4 {
		ynnColGroupsGo(xs, inner, ngroups, acc0, acc1)
		return
	}
	nv := n &^ 3
	acc1 = acc1[:n]
	zero := archsimd.BroadcastFloat64x4(0)
	st := 4 * inner
	for c := 0; c < nv; c += 4 {
		a0 := archsimd.LoadFloat64x4((*[4]float64)(acc0[c : c+4]))
		a1 := archsimd.LoadFloat64x4((*[4]float64)(acc1[c : c+4]))
		for g := 0; g < ngroups; g++ {
			q := g*st + c
			r0 := archsimd.LoadFloat64x4((*[4]float64)(xs[q : q+4]))
			r1 := archsimd.LoadFloat64x4((*[4]float64)(xs[q+inner : q+inner+4]))
			r2 := archsimd.LoadFloat64x4((*[4]float64)(xs[q+2*inner : q+2*inner+4]))
			r3 := archsimd.LoadFloat64x4((*[4]float64)(xs[q+3*inner : q+3*inner+4]))
			a0 = a0.Add(zero.Add(r0).Add(r1).Add(r2).Add(r3))
			if g%4 == 3 {
				a1, a0 = a1.Add(a0), zero
			}
		}
		a0.Store((*[4]float64)(acc0[c : c+4]))
		a1.Store((*[4]float64)(acc1[c : c+4]))
	}
	archsimd.ClearAVXUpperBits()
	for c := nv; c < n; c++ {
		ynnColGroupsGo(xs[c:], inner, ngroups, acc0[c:c+1], acc1[c:c+1])
	}
}

// ynnBlocks128x64 is ynnBlocks128x64Go a vector at a time: sum_k1_fp64's
// 8 lanes as two 4-lane halves.
func ynnBlocks128x64(xs []float64, nblk int, acc *[8]float64) {
	if !ynnVector || nblk == 0 {
		ynnBlocks128x64Go(xs, nblk, acc)
		return
	}
	xs = xs[:128*nblk]
	lo := archsimd.LoadFloat64x4((*[4]float64)(acc[0:4]))
	hi := archsimd.LoadFloat64x4((*[4]float64)(acc[4:8]))
	zero := archsimd.BroadcastFloat64x4(0)
	ld := func(q int) archsimd.Float64x4 { return archsimd.LoadFloat64x4((*[4]float64)(xs[q : q+4])) }
	for off := 0; off < len(xs); off += 128 {
		var blo, bhi archsimd.Float64x4
		for j := 0; j < 4; j++ {
			q := off + 32*j
			plo := zero.Add(ld(q)).Add(ld(q + 8)).Add(ld(q + 16)).Add(ld(q + 24))
			phi := zero.Add(ld(q + 4)).Add(ld(q + 12)).Add(ld(q + 20)).Add(ld(q + 28))
			if j == 0 {
				blo, bhi = plo, phi
			} else {
				blo, bhi = blo.Add(plo), bhi.Add(phi)
			}
		}
		lo, hi = lo.Add(blo), hi.Add(bhi)
	}
	lo.Store((*[4]float64)(acc[0:4]))
	hi.Store((*[4]float64)(acc[4:8]))
	archsimd.ClearAVXUpperBits()
}
