//go:build goexperiment.simd && amd64

package eval

import (
	"simd/archsimd"
	"unsafe"
)

// The vector tiles of dotInt32 (dot_int32.go): VPMULLD keeps each product's
// low 32 bits and VPADDD wraps, as the scalar int32 loop does, so the sums
// are the same bits mod 2^32 (TestDotInt32MatchesInt64).

// i32Lanes is the vector width the tiles use: 16 with AVX-512, 8 with AVX2,
// 0 for none. Tests set it to each width the CPU runs.
var i32Lanes = defaultBinaryLanes()

// i32PanelWidth is the column count of the panels gemmI32 packs b in:
// two vectors, a tile's width.
func i32PanelWidth() int { return 2 * i32Lanes }

// i32BlockVector adds to the rows × np*w block at c (rows ldc elements
// apart, w = i32PanelWidth()) the products of a's groups of 4 rows (group
// g's element (r, kk) at ap[g*4*kc+kk*4+r]) with b's np panels (panel p's
// row kk at pk[p*pstride+kk*w:][:w]), and returns the columns it computed.
// Each panel is read by every group while it is in L1.
func i32BlockVector(groups, rows, kc, n int, ap, pk []int32, np, pstride int, c []int32, ldc int) int {
	w := i32PanelWidth()
	if kc == 0 || np == 0 || w == 0 {
		return 0
	}
	_ = ap[4*kc*(groups-1)+4*kc-1]
	_ = pk[(np-1)*pstride+kc*w-1]
	_ = c[(rows-1)*ldc+np*w-1]
	pa, pb, pc := unsafe.Pointer(&ap[0]), unsafe.Pointer(&pk[0]), unsafe.Pointer(&c[0])
	for p := 0; p < np; p++ {
		b := unsafe.Add(pb, 4*p*pstride)
		for g := 0; g < groups; g++ {
			a := unsafe.Add(pa, 4*g*4*kc)
			cg := unsafe.Add(pc, 4*(4*g*ldc+p*w))
			gr := min(4, rows-4*g)
			switch {
			case w == 32 && gr == 4:
				i32Tile4x32(kc, a, b, w, cg, ldc)
			case w == 32:
				for r := 0; r < gr; r++ {
					i32Tile1x32(kc, unsafe.Add(a, 4*r), b, w, unsafe.Add(cg, 4*r*ldc))
				}
			case gr == 4:
				i32Tile4x16(kc, a, b, w, cg, ldc)
			default:
				for r := 0; r < gr; r++ {
					i32Tile1x8(kc, unsafe.Add(a, 4*r), b, w, unsafe.Add(cg, 4*r*ldc))
					i32Tile1x8(kc, unsafe.Add(a, 4*r), unsafe.Add(b, 32), w, unsafe.Add(cg, 4*(r*ldc+8)))
				}
			}
		}
	}
	archsimd.ClearAVXUpperBits()
	return np * w
}

func ldI32x16(p unsafe.Pointer, off int) archsimd.Int32x16 {
	return archsimd.LoadInt32x16((*[16]int32)(unsafe.Add(p, off)))
}

func stI32x16(v archsimd.Int32x16, p unsafe.Pointer, off int) {
	v.Store((*[16]int32)(unsafe.Add(p, off)))
}

func ldI32x8(p unsafe.Pointer, off int) archsimd.Int32x8 {
	return archsimd.LoadInt32x8((*[8]int32)(unsafe.Add(p, off)))
}

func stI32x8(v archsimd.Int32x8, p unsafe.Pointer, off int) {
	v.Store((*[8]int32)(unsafe.Add(p, off)))
}

func bcI32(p unsafe.Pointer, off int) int32 { return *(*int32)(unsafe.Add(p, off)) }

// i32Tile4x32 adds to the 4×32 tile at c (rows ldc elements apart) the sums
// over kk < kc of a[kk*4+r] times b's row kk (ldb elements apart).
func i32Tile4x32(kc int, a, b unsafe.Pointer, ldb int, c unsafe.Pointer, ldc int) {
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Int32x16
	for kk := 0; kk < kc; kk++ {
		b0, b1 := ldI32x16(b, 0), ldI32x16(b, 64)
		a0 := archsimd.BroadcastInt32x16(bcI32(a, 0))
		c00, c01 = c00.Add(a0.Mul(b0)), c01.Add(a0.Mul(b1))
		a1 := archsimd.BroadcastInt32x16(bcI32(a, 4))
		c10, c11 = c10.Add(a1.Mul(b0)), c11.Add(a1.Mul(b1))
		a2 := archsimd.BroadcastInt32x16(bcI32(a, 8))
		c20, c21 = c20.Add(a2.Mul(b0)), c21.Add(a2.Mul(b1))
		a3 := archsimd.BroadcastInt32x16(bcI32(a, 12))
		c30, c31 = c30.Add(a3.Mul(b0)), c31.Add(a3.Mul(b1))
		a, b = unsafe.Add(a, 16), unsafe.Add(b, 4*ldb)
	}
	r := 4 * ldc
	stI32x16(ldI32x16(c, 0).Add(c00), c, 0)
	stI32x16(ldI32x16(c, 64).Add(c01), c, 64)
	stI32x16(ldI32x16(c, r).Add(c10), c, r)
	stI32x16(ldI32x16(c, r+64).Add(c11), c, r+64)
	stI32x16(ldI32x16(c, 2*r).Add(c20), c, 2*r)
	stI32x16(ldI32x16(c, 2*r+64).Add(c21), c, 2*r+64)
	stI32x16(ldI32x16(c, 3*r).Add(c30), c, 3*r)
	stI32x16(ldI32x16(c, 3*r+64).Add(c31), c, 3*r+64)
}

// i32Tile1x32 is i32Tile4x32 for one row (a's values 4 elements apart).
func i32Tile1x32(kc int, a, b unsafe.Pointer, ldb int, c unsafe.Pointer) {
	var c0, c1 archsimd.Int32x16
	for kk := 0; kk < kc; kk++ {
		a0 := archsimd.BroadcastInt32x16(bcI32(a, 0))
		c0, c1 = c0.Add(a0.Mul(ldI32x16(b, 0))), c1.Add(a0.Mul(ldI32x16(b, 64)))
		a, b = unsafe.Add(a, 16), unsafe.Add(b, 4*ldb)
	}
	stI32x16(ldI32x16(c, 0).Add(c0), c, 0)
	stI32x16(ldI32x16(c, 64).Add(c1), c, 64)
}

// i32Tile4x16 is i32Tile4x32 on AVX2: 4×16 in eight 8-lane vectors.
func i32Tile4x16(kc int, a, b unsafe.Pointer, ldb int, c unsafe.Pointer, ldc int) {
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Int32x8
	for kk := 0; kk < kc; kk++ {
		b0, b1 := ldI32x8(b, 0), ldI32x8(b, 32)
		a0 := archsimd.BroadcastInt32x8(bcI32(a, 0))
		c00, c01 = c00.Add(a0.Mul(b0)), c01.Add(a0.Mul(b1))
		a1 := archsimd.BroadcastInt32x8(bcI32(a, 4))
		c10, c11 = c10.Add(a1.Mul(b0)), c11.Add(a1.Mul(b1))
		a2 := archsimd.BroadcastInt32x8(bcI32(a, 8))
		c20, c21 = c20.Add(a2.Mul(b0)), c21.Add(a2.Mul(b1))
		a3 := archsimd.BroadcastInt32x8(bcI32(a, 12))
		c30, c31 = c30.Add(a3.Mul(b0)), c31.Add(a3.Mul(b1))
		a, b = unsafe.Add(a, 16), unsafe.Add(b, 4*ldb)
	}
	r := 4 * ldc
	stI32x8(ldI32x8(c, 0).Add(c00), c, 0)
	stI32x8(ldI32x8(c, 32).Add(c01), c, 32)
	stI32x8(ldI32x8(c, r).Add(c10), c, r)
	stI32x8(ldI32x8(c, r+32).Add(c11), c, r+32)
	stI32x8(ldI32x8(c, 2*r).Add(c20), c, 2*r)
	stI32x8(ldI32x8(c, 2*r+32).Add(c21), c, 2*r+32)
	stI32x8(ldI32x8(c, 3*r).Add(c30), c, 3*r)
	stI32x8(ldI32x8(c, 3*r+32).Add(c31), c, 3*r+32)
}

// i32Tile1x8 is i32Tile1x16 on AVX2 for 8 columns.
func i32Tile1x8(kc int, a, b unsafe.Pointer, ldb int, c unsafe.Pointer) {
	var c0 archsimd.Int32x8
	for kk := 0; kk < kc; kk++ {
		c0 = c0.Add(archsimd.BroadcastInt32x8(bcI32(a, 0)).Mul(ldI32x8(b, 0)))
		a, b = unsafe.Add(a, 16), unsafe.Add(b, 4*ldb)
	}
	stI32x8(ldI32x8(c, 0).Add(c0), c, 0)
}
