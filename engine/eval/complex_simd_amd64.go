//go:build goexperiment.simd && amd64

package eval

import (
	"simd/archsimd"
	"unsafe"
)

// Lane tables of the c64 kernels: the real parts (even floats) and the
// imaginary parts (odd floats) of 16 complex numbers held in two vectors,
// and back.
var cplxPerm = [4][16]uint32{
	{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30},
	{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31},
	{0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23},
	{8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31},
}

// c64Floats is the float32 view of xs (real, imaginary, real, ...).
func c64Floats(xs []complex64) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(xs))), 2*len(xs))
}

// mulC64Vector is binaryCplx's multiply of whole groups of 16 elements
// (AVX-512) at the front of o; it returns how many it did. Each part is
// computed as binaryCplx does, in float64 lanes: re = f32(ar·br − f32(ai·bi)),
// im = f32(ai·br + f32(ar·bi)) (each product of two f32 is exact in
// float64; x − y is x + (−y)). A group whose result holds a NaN is
// recomputed by binaryCplx.
func mulC64Vector(a, b, o []complex64) int {
	if binaryLanes != 16 {
		return 0
	}
	n := len(o) &^ 15
	if n == 0 {
		return 0
	}
	pa, pb, po := f32Base(c64Floats(a), 2*n), f32Base(c64Floats(b), 2*n), f32Base(c64Floats(o), 2*n)
	even, odd := archsimd.LoadUint32x16(&cplxPerm[0]), archsimd.LoadUint32x16(&cplxPerm[1])
	lo, hi := archsimd.LoadUint32x16(&cplxPerm[2]), archsimd.LoadUint32x16(&cplxPerm[3])
	var zero archsimd.Float32x16
	for off, end := 0, 8*n; off < end; off += 128 {
		a0, a1 := loadFloat32x16(pa, off), loadFloat32x16(pa, off+64)
		b0, b1 := loadFloat32x16(pb, off), loadFloat32x16(pb, off+64)
		ar, ai := a0.ConcatPermute(a1, even), a0.ConcatPermute(a1, odd)
		br, bi := b0.ConcatPermute(b1, even), b0.ConcatPermute(b1, odd)
		re0, im0 := mulC64Half(ar.GetLo(), ai.GetLo(), br.GetLo(), bi.GetLo())
		re1, im1 := mulC64Half(ar.GetHi(), ai.GetHi(), br.GetHi(), bi.GetHi())
		re, im := zero.SetLo(re0).SetHi(re1), zero.SetLo(im0).SetHi(im1)
		storeFloat32x16(re.ConcatPermute(im, lo), po, off)
		storeFloat32x16(re.ConcatPermute(im, hi), po, off+64)
		if re.IsNaN().Or(im.IsNaN()).ToBits() != 0 {
			i := off / 8
			archsimd.ClearAVXUpperBits()
			binaryCplx("multiply", a[i:i+16], b[i:i+16], o[i:i+16])
		}
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// mulC64Half is the product of 8 elements given by parts, as f32 parts.
func mulC64Half(ar, ai, br, bi archsimd.Float32x8) (archsimd.Float32x8, archsimd.Float32x8) {
	xr, xi := ar.ConvertToFloat64(), ai.ConvertToFloat64()
	yr, yi := br.ConvertToFloat64(), bi.ConvertToFloat64()
	t := xi.Mul(yi).ConvertToFloat32().ConvertToFloat64()
	u := xr.Mul(yi).ConvertToFloat32().ConvertToFloat64()
	return xr.Mul(yr).Sub(t).ConvertToFloat32(), xi.Mul(yr).Add(u).ConvertToFloat32()
}

// interleaveC64Vector sets o[k] = complex(re[k], im[k]) over whole groups
// of 16 at the front (AVX-512) and returns how many it did.
func interleaveC64Vector(re, im []float32, o []complex64) int {
	if binaryLanes != 16 {
		return 0
	}
	n := len(o) &^ 15
	if n == 0 {
		return 0
	}
	pr, pi, po := f32Base(re, n), f32Base(im, n), f32Base(c64Floats(o), 2*n)
	lo, hi := archsimd.LoadUint32x16(&cplxPerm[2]), archsimd.LoadUint32x16(&cplxPerm[3])
	for off, end := 0, 4*n; off < end; off += 64 {
		r, i := loadFloat32x16(pr, off), loadFloat32x16(pi, off)
		storeFloat32x16(r.ConcatPermute(i, lo), po, 2*off)
		storeFloat32x16(r.ConcatPermute(i, hi), po, 2*off+64)
	}
	archsimd.ClearAVXUpperBits()
	return n
}
