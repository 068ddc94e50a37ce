//go:build goexperiment.simd && amd64

package eval

import (
	"unsafe"

	"simd/archsimd"
)

var (
	fftSIMD8 = archsimd.X86.AVX512()
	fftSIMD4 = archsimd.X86.AVX2() && archsimd.X86.FMA()
)

// fftLanes is the number of lines a batch transforms together: a vector
// of float64 (eight on AVX-512, four otherwise).
func fftLanes() int {
	if fftSIMD8 {
		return 8
	}
	return 4
}

// The radix-4 passes in assembly (fft_pass4_amd64.s): x and y hold the
// batches (2*n*w values each), tw the stage's twiddles.
//
//go:noescape
func fftPass4x8asm(x, y, tw *float64, m, s int)

//go:noescape
func fftPass4x4asm(x, y, tw *float64, m, s int)

func fftPassSIMD(w int, st *fftStage, x, y []float64) bool {
	switch {
	case w == 8 && fftSIMD8:
		return fftPassx8(st, x, y)
	case w == 4 && fftSIMD4:
		return fftPassx4(st, x, y)
	}
	return false
}

func fftRealPostSIMD(w, h int, z, out, rt []float64) bool {
	switch {
	case w == 8 && fftSIMD8:
		fftRealPostx8(h, z, out, rt)
	case w == 4 && fftSIMD4:
		fftRealPostx4(h, z, out, rt)
	default:
		return false
	}
	return true
}

func fftRealPreSIMD(w, h int, x, out, rt []float64) bool {
	switch {
	case w == 8 && fftSIMD8:
		fftRealPrex8(h, x, out, rt)
	case w == 4 && fftSIMD4:
		fftRealPrex4(h, x, out, rt)
	default:
		return false
	}
	return true
}

// Moving lines between rows of interleaved (re, im) float32 pairs (c64
// values, or the packed pairs of an even-length real line, or a real
// result written as pairs) and a batch's lanes: one vector of pairs per
// row, converted to float64, then a transpose.

var fftTr8 = [6][8]uint64{
	{0, 8, 2, 10, 4, 12, 6, 14}, {1, 9, 3, 11, 5, 13, 7, 15},
	{0, 1, 8, 9, 4, 5, 12, 13}, {2, 3, 10, 11, 6, 7, 14, 15},
	{0, 1, 2, 3, 8, 9, 10, 11}, {4, 5, 6, 7, 12, 13, 14, 15},
}

// f32At and f32At4 point at s[i:]; the callers keep i+8 (i+4) within
// the rows they were given.
func f32At(s []float32, i int) *[8]float32 {
	return (*[8]float32)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s)), 4*i))
}

func f32At4(s []float32, i int) *[4]float32 {
	return (*[4]float32)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s)), 4*i))
}

// fftPairsInSIMD loads npos pairs from each of w rows (row l's pairs from
// float src[off+l*rowF]) into a, the imaginary parts negated when conj;
// it returns how many positions it loaded (a multiple of 4 or 2), the
// rest is the caller's.
func fftPairsInSIMD(w int, src []float32, off, rowF, npos int, conj bool, a []float64) int {
	if npos <= 0 || off+(w-1)*rowF+2*npos > len(src) || 2*w*npos > len(a) {
		return 0
	}
	switch {
	case w == 8 && fftSIMD8:
		return fftPairsInx8(src, off, rowF, npos, conj, a)
	case w == 4 && fftSIMD4:
		return fftPairsInx4(src, off, rowF, npos, conj, a)
	}
	return 0
}

// fftPairsOutSIMD stores npos positions of res to w rows of pairs (row l's
// at dst[off+l*rowF]), re scaled by sr and im by si when scale, rounded
// to float32; it returns how many positions it stored.
func fftPairsOutSIMD(w int, res []float64, npos int, scale bool, sr, si float64, dst []float32, off, rowF int) int {
	if npos <= 0 || off+(w-1)*rowF+2*npos > len(dst) || 2*w*npos > len(res) {
		return 0
	}
	switch {
	case w == 8 && fftSIMD8:
		return fftPairsOutx8(res, npos, scale, sr, si, dst, off, rowF)
	case w == 4 && fftSIMD4:
		return fftPairsOutx4(res, npos, scale, sr, si, dst, off, rowF)
	}
	return 0
}

func fftPairsInx8(src []float32, off, rowF, npos int, conj bool, a []float64) int {
	i0, i1 := archsimd.LoadUint64x8(&fftTr8[0]), archsimd.LoadUint64x8(&fftTr8[1])
	i2, i3 := archsimd.LoadUint64x8(&fftTr8[2]), archsimd.LoadUint64x8(&fftTr8[3])
	i4, i5 := archsimd.LoadUint64x8(&fftTr8[4]), archsimd.LoadUint64x8(&fftTr8[5])
	neg := [8]float64{1, 1, 1, 1, 1, 1, 1, 1}
	if conj {
		neg = [8]float64{-1, -1, -1, -1, -1, -1, -1, -1}
	}
	ng := archsimd.LoadFloat64x8(&neg)
	e := 0
	for ; e+4 <= npos; e += 4 {
		o := off + 2*e
		a0 := archsimd.LoadFloat32x8(f32At(src, o)).ConvertToFloat64()
		a1 := archsimd.LoadFloat32x8(f32At(src, o+rowF)).ConvertToFloat64()
		a2 := archsimd.LoadFloat32x8(f32At(src, o+2*rowF)).ConvertToFloat64()
		a3 := archsimd.LoadFloat32x8(f32At(src, o+3*rowF)).ConvertToFloat64()
		a4 := archsimd.LoadFloat32x8(f32At(src, o+4*rowF)).ConvertToFloat64()
		a5 := archsimd.LoadFloat32x8(f32At(src, o+5*rowF)).ConvertToFloat64()
		a6 := archsimd.LoadFloat32x8(f32At(src, o+6*rowF)).ConvertToFloat64()
		a7 := archsimd.LoadFloat32x8(f32At(src, o+7*rowF)).ConvertToFloat64()
		p0, p1 := a0.ConcatPermute(a1, i0), a0.ConcatPermute(a1, i1)
		q0, q1 := a2.ConcatPermute(a3, i0), a2.ConcatPermute(a3, i1)
		r0, r1 := a4.ConcatPermute(a5, i0), a4.ConcatPermute(a5, i1)
		s0, s1 := a6.ConcatPermute(a7, i0), a6.ConcatPermute(a7, i1)
		u0, u2 := p0.ConcatPermute(q0, i2), p0.ConcatPermute(q0, i3)
		u1, u3 := p1.ConcatPermute(q1, i2), p1.ConcatPermute(q1, i3)
		v0, v2 := r0.ConcatPermute(s0, i2), r0.ConcatPermute(s0, i3)
		v1, v3 := r1.ConcatPermute(s1, i2), r1.ConcatPermute(s1, i3)
		d := e * 16
		stx8(a, d, u0.ConcatPermute(v0, i4))
		stx8(a, d+8, u1.ConcatPermute(v1, i4).Mul(ng))
		stx8(a, d+16, u2.ConcatPermute(v2, i4))
		stx8(a, d+24, u3.ConcatPermute(v3, i4).Mul(ng))
		stx8(a, d+32, u0.ConcatPermute(v0, i5))
		stx8(a, d+40, u1.ConcatPermute(v1, i5).Mul(ng))
		stx8(a, d+48, u2.ConcatPermute(v2, i5))
		stx8(a, d+56, u3.ConcatPermute(v3, i5).Mul(ng))
	}
	archsimd.ClearAVXUpperBits()
	return e
}

func fftPairsOutx8(res []float64, npos int, scale bool, sr, si float64, dst []float32, off, rowF int) int {
	i0, i1 := archsimd.LoadUint64x8(&fftTr8[0]), archsimd.LoadUint64x8(&fftTr8[1])
	i2, i3 := archsimd.LoadUint64x8(&fftTr8[2]), archsimd.LoadUint64x8(&fftTr8[3])
	i4, i5 := archsimd.LoadUint64x8(&fftTr8[4]), archsimd.LoadUint64x8(&fftTr8[5])
	sc := [16]float64{sr, sr, sr, sr, sr, sr, sr, sr, si, si, si, si, si, si, si, si}
	vr, vi := archsimd.LoadFloat64x8((*[8]float64)(sc[:8])), archsimd.LoadFloat64x8((*[8]float64)(sc[8:]))
	e := 0
	for ; e+4 <= npos; e += 4 {
		d := e * 16
		// Columns: re(e), im(e), re(e+1), ... as rows of the transpose.
		a0, a1, a2, a3 := ldx8(res, d), ldx8(res, d+8), ldx8(res, d+16), ldx8(res, d+24)
		a4, a5, a6, a7 := ldx8(res, d+32), ldx8(res, d+40), ldx8(res, d+48), ldx8(res, d+56)
		if scale {
			a0, a2, a4, a6 = a0.Mul(vr), a2.Mul(vr), a4.Mul(vr), a6.Mul(vr)
			a1, a3, a5, a7 = a1.Mul(vi), a3.Mul(vi), a5.Mul(vi), a7.Mul(vi)
		}
		p0, p1 := a0.ConcatPermute(a1, i0), a0.ConcatPermute(a1, i1)
		q0, q1 := a2.ConcatPermute(a3, i0), a2.ConcatPermute(a3, i1)
		r0, r1 := a4.ConcatPermute(a5, i0), a4.ConcatPermute(a5, i1)
		s0, s1 := a6.ConcatPermute(a7, i0), a6.ConcatPermute(a7, i1)
		u0, u2 := p0.ConcatPermute(q0, i2), p0.ConcatPermute(q0, i3)
		u1, u3 := p1.ConcatPermute(q1, i2), p1.ConcatPermute(q1, i3)
		v0, v2 := r0.ConcatPermute(s0, i2), r0.ConcatPermute(s0, i3)
		v1, v3 := r1.ConcatPermute(s1, i2), r1.ConcatPermute(s1, i3)
		o := off + 2*e
		u0.ConcatPermute(v0, i4).ConvertToFloat32().Store(f32At(dst, o))
		u1.ConcatPermute(v1, i4).ConvertToFloat32().Store(f32At(dst, o+rowF))
		u2.ConcatPermute(v2, i4).ConvertToFloat32().Store(f32At(dst, o+2*rowF))
		u3.ConcatPermute(v3, i4).ConvertToFloat32().Store(f32At(dst, o+3*rowF))
		u0.ConcatPermute(v0, i5).ConvertToFloat32().Store(f32At(dst, o+4*rowF))
		u1.ConcatPermute(v1, i5).ConvertToFloat32().Store(f32At(dst, o+5*rowF))
		u2.ConcatPermute(v2, i5).ConvertToFloat32().Store(f32At(dst, o+6*rowF))
		u3.ConcatPermute(v3, i5).ConvertToFloat32().Store(f32At(dst, o+7*rowF))
	}
	archsimd.ClearAVXUpperBits()
	return e
}

// The 4x4 transposes: SelectFromPairGrouped interleaves within 128-bit
// halves, Select128FromPair combines halves.
func fftPairsInx4(src []float32, off, rowF, npos int, conj bool, a []float64) int {
	neg := [4]float64{1, 1, 1, 1}
	if conj {
		neg = [4]float64{-1, -1, -1, -1}
	}
	ng := archsimd.LoadFloat64x4(&neg)
	e := 0
	for ; e+2 <= npos; e += 2 {
		o := off + 2*e
		a0 := archsimd.LoadFloat32x4(f32At4(src, o)).ConvertToFloat64()
		a1 := archsimd.LoadFloat32x4(f32At4(src, o+rowF)).ConvertToFloat64()
		a2 := archsimd.LoadFloat32x4(f32At4(src, o+2*rowF)).ConvertToFloat64()
		a3 := archsimd.LoadFloat32x4(f32At4(src, o+3*rowF)).ConvertToFloat64()
		l01, h01 := a0.SelectFromPairGrouped(0, 2, a1), a0.SelectFromPairGrouped(1, 3, a1)
		l23, h23 := a2.SelectFromPairGrouped(0, 2, a3), a2.SelectFromPairGrouped(1, 3, a3)
		d := e * 8
		stx4(a, d, l01.Select128FromPair(0, 2, l23))
		stx4(a, d+4, h01.Select128FromPair(0, 2, h23).Mul(ng))
		stx4(a, d+8, l01.Select128FromPair(1, 3, l23))
		stx4(a, d+12, h01.Select128FromPair(1, 3, h23).Mul(ng))
	}
	archsimd.ClearAVXUpperBits()
	return e
}

func fftPairsOutx4(res []float64, npos int, scale bool, sr, si float64, dst []float32, off, rowF int) int {
	sc := [8]float64{sr, sr, sr, sr, si, si, si, si}
	vr, vi := archsimd.LoadFloat64x4((*[4]float64)(sc[:4])), archsimd.LoadFloat64x4((*[4]float64)(sc[4:]))
	e := 0
	for ; e+2 <= npos; e += 2 {
		d := e * 8
		a0, a1, a2, a3 := ldx4(res, d), ldx4(res, d+4), ldx4(res, d+8), ldx4(res, d+12)
		if scale {
			a0, a2 = a0.Mul(vr), a2.Mul(vr)
			a1, a3 = a1.Mul(vi), a3.Mul(vi)
		}
		l01, h01 := a0.SelectFromPairGrouped(0, 2, a1), a0.SelectFromPairGrouped(1, 3, a1)
		l23, h23 := a2.SelectFromPairGrouped(0, 2, a3), a2.SelectFromPairGrouped(1, 3, a3)
		o := off + 2*e
		l01.Select128FromPair(0, 2, l23).ConvertToFloat32().Store(f32At4(dst, o))
		h01.Select128FromPair(0, 2, h23).ConvertToFloat32().Store(f32At4(dst, o+rowF))
		l01.Select128FromPair(1, 3, l23).ConvertToFloat32().Store(f32At4(dst, o+2*rowF))
		h01.Select128FromPair(1, 3, h23).ConvertToFloat32().Store(f32At4(dst, o+3*rowF))
	}
	archsimd.ClearAVXUpperBits()
	return e
}

// Columns of a complex128 array: w neighbouring values of a row go to the
// w lanes (in a permuted lane order, the same both ways: lane pairs come
// out of unpacking two vectors of (re, im) pairs), so a strided axis is read
// and written whole cache lines at a time.

func c128At(s []complex128, i int) unsafe.Pointer {
	return unsafe.Add(unsafe.Pointer(unsafe.SliceData(s)), 16*i)
}

// fftColsInSIMD loads values e = 0..n-1 of w columns, buf[base+e*stride+l],
// into a (imaginary parts negated when conj); false when it does not run
// here (the caller loads them).
func fftColsInSIMD(w int, buf []complex128, base, stride, n int, conj bool, a []float64) bool {
	if n <= 0 || base+(n-1)*stride+w > len(buf) || 2*w*n > len(a) {
		return false
	}
	switch {
	case w == 8 && fftSIMD8:
		neg := [8]float64{1, 1, 1, 1, 1, 1, 1, 1}
		if conj {
			neg = [8]float64{-1, -1, -1, -1, -1, -1, -1, -1}
		}
		ng := archsimd.LoadFloat64x8(&neg)
		for e := 0; e < n; e++ {
			p := c128At(buf, base+e*stride)
			v0, v1 := ldbx8(p, 0), ldbx8(p, 64)
			stx8(a, 16*e, v0.SelectFromPairGrouped(0, 2, v1))
			stx8(a, 16*e+8, v0.SelectFromPairGrouped(1, 3, v1).Mul(ng))
		}
	case w == 4 && fftSIMD4:
		neg := [4]float64{1, 1, 1, 1}
		if conj {
			neg = [4]float64{-1, -1, -1, -1}
		}
		ng := archsimd.LoadFloat64x4(&neg)
		for e := 0; e < n; e++ {
			p := c128At(buf, base+e*stride)
			v0, v1 := ldbx4(p, 0), ldbx4(p, 32)
			stx4(a, 8*e, v0.SelectFromPairGrouped(0, 2, v1))
			stx4(a, 8*e+4, v0.SelectFromPairGrouped(1, 3, v1).Mul(ng))
		}
	default:
		return false
	}
	archsimd.ClearAVXUpperBits()
	return true
}

// fftColsOutSIMD stores fftColsInSIMD's columns back from res, re scaled by
// sr and im by si when scale: into buf (c128) or, when o64 is set, into the
// c64 values o64 (as float32 pairs) at the same positions, rounded once.
func fftColsOutSIMD(w int, res []float64, n int, scale bool, sr, si float64, buf []complex128, o64 []float32, base, stride int) bool {
	if n <= 0 || 2*w*n > len(res) {
		return false
	}
	if o64 != nil && 2*(base+(n-1)*stride+w) > len(o64) || o64 == nil && base+(n-1)*stride+w > len(buf) {
		return false
	}
	switch {
	case w == 8 && fftSIMD8:
		sc := [16]float64{sr, sr, sr, sr, sr, sr, sr, sr, si, si, si, si, si, si, si, si}
		vr, vi := archsimd.LoadFloat64x8((*[8]float64)(sc[:8])), archsimd.LoadFloat64x8((*[8]float64)(sc[8:]))
		for e := 0; e < n; e++ {
			re, im := ldx8(res, 16*e), ldx8(res, 16*e+8)
			if scale {
				re, im = re.Mul(vr), im.Mul(vi)
			}
			v0, v1 := re.SelectFromPairGrouped(0, 2, im), re.SelectFromPairGrouped(1, 3, im)
			i := base + e*stride
			if o64 != nil {
				v0.ConvertToFloat32().Store(f32At(o64, 2*i))
				v1.ConvertToFloat32().Store(f32At(o64, 2*i+8))
			} else {
				p := c128At(buf, i)
				stbx8(p, 0, v0)
				stbx8(p, 64, v1)
			}
		}
	case w == 4 && fftSIMD4:
		sc := [8]float64{sr, sr, sr, sr, si, si, si, si}
		vr, vi := archsimd.LoadFloat64x4((*[4]float64)(sc[:4])), archsimd.LoadFloat64x4((*[4]float64)(sc[4:]))
		for e := 0; e < n; e++ {
			re, im := ldx4(res, 8*e), ldx4(res, 8*e+4)
			if scale {
				re, im = re.Mul(vr), im.Mul(vi)
			}
			v0, v1 := re.SelectFromPairGrouped(0, 2, im), re.SelectFromPairGrouped(1, 3, im)
			i := base + e*stride
			if o64 != nil {
				v0.ConvertToFloat32().Store(f32At4(o64, 2*i))
				v1.ConvertToFloat32().Store(f32At4(o64, 2*i+4))
			} else {
				p := c128At(buf, i)
				stbx4(p, 0, v0)
				stbx4(p, 32, v1)
			}
		}
	default:
		return false
	}
	archsimd.ClearAVXUpperBits()
	return true
}

// fftRowsOutC128SIMD stores npos positions of res to w rows of complex128
// values (row l's at dst[off+l*rowC]), re scaled by sr and im by si when
// scale; it returns how many positions it stored.
func fftRowsOutC128SIMD(w int, res []float64, npos int, scale bool, sr, si float64, dst []complex128, off, rowC int) int {
	if npos <= 0 || off+(w-1)*rowC+npos > len(dst) || 2*w*npos > len(res) {
		return 0
	}
	e := 0
	switch {
	case w == 8 && fftSIMD8:
		i0, i1 := archsimd.LoadUint64x8(&fftTr8[0]), archsimd.LoadUint64x8(&fftTr8[1])
		i2, i3 := archsimd.LoadUint64x8(&fftTr8[2]), archsimd.LoadUint64x8(&fftTr8[3])
		i4, i5 := archsimd.LoadUint64x8(&fftTr8[4]), archsimd.LoadUint64x8(&fftTr8[5])
		sc := [16]float64{sr, sr, sr, sr, sr, sr, sr, sr, si, si, si, si, si, si, si, si}
		vr, vi := archsimd.LoadFloat64x8((*[8]float64)(sc[:8])), archsimd.LoadFloat64x8((*[8]float64)(sc[8:]))
		for ; e+4 <= npos; e += 4 {
			d := e * 16
			a0, a1, a2, a3 := ldx8(res, d), ldx8(res, d+8), ldx8(res, d+16), ldx8(res, d+24)
			a4, a5, a6, a7 := ldx8(res, d+32), ldx8(res, d+40), ldx8(res, d+48), ldx8(res, d+56)
			if scale {
				a0, a2, a4, a6 = a0.Mul(vr), a2.Mul(vr), a4.Mul(vr), a6.Mul(vr)
				a1, a3, a5, a7 = a1.Mul(vi), a3.Mul(vi), a5.Mul(vi), a7.Mul(vi)
			}
			p0, p1 := a0.ConcatPermute(a1, i0), a0.ConcatPermute(a1, i1)
			q0, q1 := a2.ConcatPermute(a3, i0), a2.ConcatPermute(a3, i1)
			r0, r1 := a4.ConcatPermute(a5, i0), a4.ConcatPermute(a5, i1)
			s0, s1 := a6.ConcatPermute(a7, i0), a6.ConcatPermute(a7, i1)
			u0, u2 := p0.ConcatPermute(q0, i2), p0.ConcatPermute(q0, i3)
			u1, u3 := p1.ConcatPermute(q1, i2), p1.ConcatPermute(q1, i3)
			v0, v2 := r0.ConcatPermute(s0, i2), r0.ConcatPermute(s0, i3)
			v1, v3 := r1.ConcatPermute(s1, i2), r1.ConcatPermute(s1, i3)
			o := off + e
			stbx8(c128At(dst, o), 0, u0.ConcatPermute(v0, i4))
			stbx8(c128At(dst, o+rowC), 0, u1.ConcatPermute(v1, i4))
			stbx8(c128At(dst, o+2*rowC), 0, u2.ConcatPermute(v2, i4))
			stbx8(c128At(dst, o+3*rowC), 0, u3.ConcatPermute(v3, i4))
			stbx8(c128At(dst, o+4*rowC), 0, u0.ConcatPermute(v0, i5))
			stbx8(c128At(dst, o+5*rowC), 0, u1.ConcatPermute(v1, i5))
			stbx8(c128At(dst, o+6*rowC), 0, u2.ConcatPermute(v2, i5))
			stbx8(c128At(dst, o+7*rowC), 0, u3.ConcatPermute(v3, i5))
		}
	case w == 4 && fftSIMD4:
		sc := [8]float64{sr, sr, sr, sr, si, si, si, si}
		vr, vi := archsimd.LoadFloat64x4((*[4]float64)(sc[:4])), archsimd.LoadFloat64x4((*[4]float64)(sc[4:]))
		for ; e+2 <= npos; e += 2 {
			d := e * 8
			a0, a1, a2, a3 := ldx4(res, d), ldx4(res, d+4), ldx4(res, d+8), ldx4(res, d+12)
			if scale {
				a0, a2 = a0.Mul(vr), a2.Mul(vr)
				a1, a3 = a1.Mul(vi), a3.Mul(vi)
			}
			l01, h01 := a0.SelectFromPairGrouped(0, 2, a1), a0.SelectFromPairGrouped(1, 3, a1)
			l23, h23 := a2.SelectFromPairGrouped(0, 2, a3), a2.SelectFromPairGrouped(1, 3, a3)
			o := off + e
			stbx4(c128At(dst, o), 0, l01.Select128FromPair(0, 2, l23))
			stbx4(c128At(dst, o+rowC), 0, h01.Select128FromPair(0, 2, h23))
			stbx4(c128At(dst, o+2*rowC), 0, l01.Select128FromPair(1, 3, l23))
			stbx4(c128At(dst, o+3*rowC), 0, h01.Select128FromPair(1, 3, h23))
		}
	default:
		return 0
	}
	archsimd.ClearAVXUpperBits()
	return e
}
