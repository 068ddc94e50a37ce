//go:build goexperiment.simd && amd64

// fft_simd_x4_amd64.go is this file with x8 -> x4 (go generate).
//go:generate sh -c "sed -e 's/x8/x4/g; s/Float64x8/Float64x4/g; s/\\[8\\]float64/[4]float64/g; s/s\\[i+7\\]/s[i+3]/g; s/const w8 = 8/const w8 = 4/; s/eight/four/g; s|^// fft_simd_x4_amd64.go is this file.*|// Code generated from fft_simd_x8_amd64.go by go generate; DO NOT EDIT.|; /go:generate/d' fft_simd_x8_amd64.go > fft_simd_x4_amd64.go"

package eval

import (
	"unsafe"

	"simd/archsimd"
)

// Stockham passes on eight lanes (see fft_plan.go for the layout).

type fvx8 = archsimd.Float64x8

func ldx8(s []float64, i int) fvx8 {
	_ = s[i+7]
	return archsimd.LoadFloat64x8((*[8]float64)(unsafe.Pointer(&s[i])))
}

func stx8(s []float64, i int, v fvx8) {
	_ = s[i+7]
	v.Store((*[8]float64)(unsafe.Pointer(&s[i])))
}

func bcx8(s []float64, i int) fvx8 { return archsimd.BroadcastFloat64x8(s[i]) }

// The passes address their buffers through pointers (no bounds checks):
// fftCPlan.run checks the lengths once.
func ldpx8(p unsafe.Pointer, i int) fvx8 {
	return archsimd.LoadFloat64x8((*[8]float64)(unsafe.Add(p, i*8)))
}

func stpx8(p unsafe.Pointer, i int, v fvx8) { v.Store((*[8]float64)(unsafe.Add(p, i*8))) }

func bcpx8(p unsafe.Pointer, i int) fvx8 {
	return archsimd.BroadcastFloat64x8(*(*float64)(unsafe.Add(p, i*8)))
}

// cmulx8 is (xr + i xi) * (wr + i wi) with nwi = -wi.
func cmulx8(xr, xi, wr, wi, nwi fvx8) (fvx8, fvx8) {
	return xr.MulAdd(wr, xi.Mul(nwi)), xr.MulAdd(wi, xi.Mul(wr))
}

func fftPass2x8(st *fftStage, x, y []float64) {
	const w8 = 8
	xp, yp, twp := unsafe.Pointer(unsafe.SliceData(x)), unsafe.Pointer(unsafe.SliceData(y)), unsafe.Pointer(unsafe.SliceData(st.tw))
	m, s, es := st.m, st.s, 2*w8
	step := s * m * es
	for pp := 0; pp < m; pp++ {
		wr, wi, nwi := bcpx8(twp, 3*pp), bcpx8(twp, 3*pp+1), bcpx8(twp, 3*pp+2)
		for q := 0; q < s; q++ {
			i := (q + s*pp) * es
			o := (q + s*2*pp) * es
			ar, ai := ldpx8(xp, i), ldpx8(xp, i+w8)
			br, bi := ldpx8(xp, i+step), ldpx8(xp, i+step+w8)
			stpx8(yp, o, ar.Add(br))
			stpx8(yp, o+w8, ai.Add(bi))
			dr, di := ar.Sub(br), ai.Sub(bi)
			if pp != 0 {
				dr, di = cmulx8(dr, di, wr, wi, nwi)
			}
			stpx8(yp, o+s*es, dr)
			stpx8(yp, o+s*es+w8, di)
		}
	}
}

func fftPass4x8(st *fftStage, x, y []float64) {
	const w8 = 8
	xp, yp, twp := unsafe.Pointer(unsafe.SliceData(x)), unsafe.Pointer(unsafe.SliceData(y)), unsafe.Pointer(unsafe.SliceData(st.tw))
	m, s, es := st.m, st.s, 2*w8
	step, ostep := s*m*es, s*es
	for pp := 0; pp < m; pp++ {
		tw := unsafe.Add(twp, 9*pp*8)
		w1r, w1i, w1n := bcpx8(tw, 0), bcpx8(tw, 1), bcpx8(tw, 2)
		w2r, w2i, w2n := bcpx8(tw, 3), bcpx8(tw, 4), bcpx8(tw, 5)
		w3r, w3i, w3n := bcpx8(tw, 6), bcpx8(tw, 7), bcpx8(tw, 8)
		for q := 0; q < s; q++ {
			i := (q + s*pp) * es
			o := (q + s*4*pp) * es
			a0r, a0i := ldpx8(xp, i), ldpx8(xp, i+w8)
			a1r, a1i := ldpx8(xp, i+step), ldpx8(xp, i+step+w8)
			a2r, a2i := ldpx8(xp, i+2*step), ldpx8(xp, i+2*step+w8)
			a3r, a3i := ldpx8(xp, i+3*step), ldpx8(xp, i+3*step+w8)
			t0r, t0i := a0r.Add(a2r), a0i.Add(a2i)
			t1r, t1i := a0r.Sub(a2r), a0i.Sub(a2i)
			t2r, t2i := a1r.Add(a3r), a1i.Add(a3i)
			t3r, t3i := a1r.Sub(a3r), a1i.Sub(a3i)
			stpx8(yp, o, t0r.Add(t2r))
			stpx8(yp, o+w8, t0i.Add(t2i))
			b1r, b1i := t1r.Add(t3i), t1i.Sub(t3r)
			b2r, b2i := t0r.Sub(t2r), t0i.Sub(t2i)
			b3r, b3i := t1r.Sub(t3i), t1i.Add(t3r)
			if pp != 0 {
				b1r, b1i = cmulx8(b1r, b1i, w1r, w1i, w1n)
				b2r, b2i = cmulx8(b2r, b2i, w2r, w2i, w2n)
				b3r, b3i = cmulx8(b3r, b3i, w3r, w3i, w3n)
			}
			stpx8(yp, o+ostep, b1r)
			stpx8(yp, o+ostep+w8, b1i)
			stpx8(yp, o+2*ostep, b2r)
			stpx8(yp, o+2*ostep+w8, b2i)
			stpx8(yp, o+3*ostep, b3r)
			stpx8(yp, o+3*ostep+w8, b3i)
		}
	}
}

// fftPass3x8: b0 = a0+t1, b1,2 = a0 - t1/2 ∓ i(√3/2)(a1-a2), t1 = a1+a2.
func fftPass3x8(st *fftStage, x, y []float64) {
	const w8 = 8
	xp, yp, twp := unsafe.Pointer(unsafe.SliceData(x)), unsafe.Pointer(unsafe.SliceData(y)), unsafe.Pointer(unsafe.SliceData(st.tw))
	m, s, es := st.m, st.s, 2*w8
	step, ostep := s*m*es, s*es
	half := archsimd.BroadcastFloat64x8(-0.5)
	sn := archsimd.BroadcastFloat64x8(0.8660254037844386467637231707529361834714) // √3/2
	for pp := 0; pp < m; pp++ {
		tw := unsafe.Add(twp, 6*pp*8)
		w1r, w1i, w1n := bcpx8(tw, 0), bcpx8(tw, 1), bcpx8(tw, 2)
		w2r, w2i, w2n := bcpx8(tw, 3), bcpx8(tw, 4), bcpx8(tw, 5)
		for q := 0; q < s; q++ {
			i := (q + s*pp) * es
			o := (q + s*3*pp) * es
			a0r, a0i := ldpx8(xp, i), ldpx8(xp, i+w8)
			a1r, a1i := ldpx8(xp, i+step), ldpx8(xp, i+step+w8)
			a2r, a2i := ldpx8(xp, i+2*step), ldpx8(xp, i+2*step+w8)
			t1r, t1i := a1r.Add(a2r), a1i.Add(a2i)
			t2r, t2i := a1r.Sub(a2r), a1i.Sub(a2i)
			stpx8(yp, o, a0r.Add(t1r))
			stpx8(yp, o+w8, a0i.Add(t1i))
			m1r, m1i := t1r.MulAdd(half, a0r), t1i.MulAdd(half, a0i)
			b1r, b1i := t2i.MulAdd(sn, m1r), m1i.Sub(t2r.Mul(sn))
			b2r, b2i := m1r.Sub(t2i.Mul(sn)), t2r.MulAdd(sn, m1i)
			if pp != 0 {
				b1r, b1i = cmulx8(b1r, b1i, w1r, w1i, w1n)
				b2r, b2i = cmulx8(b2r, b2i, w2r, w2i, w2n)
			}
			stpx8(yp, o+ostep, b1r)
			stpx8(yp, o+ostep+w8, b1i)
			stpx8(yp, o+2*ostep, b2r)
			stpx8(yp, o+2*ostep+w8, b2i)
		}
	}
}

// fftPass5x8 pairs a1 with a4 and a2 with a3.
func fftPass5x8(st *fftStage, x, y []float64) {
	const w8 = 8
	xp, yp, twp := unsafe.Pointer(unsafe.SliceData(x)), unsafe.Pointer(unsafe.SliceData(y)), unsafe.Pointer(unsafe.SliceData(st.tw))
	m, s, es := st.m, st.s, 2*w8
	step, ostep := s*m*es, s*es
	c1 := archsimd.BroadcastFloat64x8(0.3090169943749474241022934171828190588602)  // cos 2π/5
	c2 := archsimd.BroadcastFloat64x8(-0.8090169943749474241022934171828190588602) // cos 4π/5
	s1 := archsimd.BroadcastFloat64x8(0.9510565162951535721164393333793821434057)  // sin 2π/5
	s2 := archsimd.BroadcastFloat64x8(0.5877852522924731291687059546390727685977)  // sin 4π/5
	ns1 := archsimd.BroadcastFloat64x8(-0.9510565162951535721164393333793821434057)
	for pp := 0; pp < m; pp++ {
		tw := unsafe.Add(twp, 12*pp*8)
		for q := 0; q < s; q++ {
			i := (q + s*pp) * es
			o := (q + s*5*pp) * es
			a0r, a0i := ldpx8(xp, i), ldpx8(xp, i+w8)
			a1r, a1i := ldpx8(xp, i+step), ldpx8(xp, i+step+w8)
			a2r, a2i := ldpx8(xp, i+2*step), ldpx8(xp, i+2*step+w8)
			a3r, a3i := ldpx8(xp, i+3*step), ldpx8(xp, i+3*step+w8)
			a4r, a4i := ldpx8(xp, i+4*step), ldpx8(xp, i+4*step+w8)
			t1r, t1i := a1r.Add(a4r), a1i.Add(a4i)
			t2r, t2i := a2r.Add(a3r), a2i.Add(a3i)
			t3r, t3i := a1r.Sub(a4r), a1i.Sub(a4i)
			t4r, t4i := a2r.Sub(a3r), a2i.Sub(a3i)
			stpx8(yp, o, a0r.Add(t1r).Add(t2r))
			stpx8(yp, o+w8, a0i.Add(t1i).Add(t2i))
			m1r, m1i := t2r.MulAdd(c2, t1r.MulAdd(c1, a0r)), t2i.MulAdd(c2, t1i.MulAdd(c1, a0i))
			m2r, m2i := t2r.MulAdd(c1, t1r.MulAdd(c2, a0r)), t2i.MulAdd(c1, t1i.MulAdd(c2, a0i))
			n1r, n1i := t4r.MulAdd(s2, t3r.Mul(s1)), t4i.MulAdd(s2, t3i.Mul(s1))
			n2r, n2i := t4r.MulAdd(ns1, t3r.Mul(s2)), t4i.MulAdd(ns1, t3i.Mul(s2))
			// b1 = m1 - i n1, b4 = m1 + i n1, b2 = m2 - i n2, b3 = m2 + i n2.
			b := [4][2]fvx8{
				{m1r.Add(n1i), m1i.Sub(n1r)},
				{m2r.Add(n2i), m2i.Sub(n2r)},
				{m2r.Sub(n2i), m2i.Add(n2r)},
				{m1r.Sub(n1i), m1i.Add(n1r)},
			}
			for r := 0; r < 4; r++ {
				br, bi := b[r][0], b[r][1]
				if pp != 0 {
					br, bi = cmulx8(br, bi, bcpx8(tw, 3*r), bcpx8(tw, 3*r+1), bcpx8(tw, 3*r+2))
				}
				stpx8(yp, o+(r+1)*ostep, br)
				stpx8(yp, o+(r+1)*ostep+w8, bi)
			}
		}
	}
}

// fftPassx8 runs a stage of radix 2, 3, 4 or 5; false for other radices.
func fftPassx8(st *fftStage, x, y []float64) bool {
	switch st.p {
	case 2:
		fftPass2x8(st, x, y)
	case 3:
		fftPass3x8(st, x, y)
	case 4:
		fftPass4x8(st, x, y)
	case 5:
		fftPass5x8(st, x, y)
	default:
		return false
	}
	return true
}

// fftRealPostx8 turns the transform z (h values) of the packed pairs of
// eight real lines into their spectra X[0..h] in out: with Zc =
// conj(Z[h-k]), S = Z[k]+Zc, D = Z[k]-Zc, X[k] = (S - i w^k D)/2.
func fftRealPostx8(h int, z, out, rt []float64) {
	const w8 = 8
	es := 2 * w8
	half := archsimd.BroadcastFloat64x8(0.5)
	for k := 0; k <= h; k++ {
		i, j := k%h*es, (h-k)%h*es
		zr, zi := ldx8(z, i), ldx8(z, i+w8)
		ar, ai := ldx8(z, j), ldx8(z, j+w8)
		sr, si := zr.Add(ar), zi.Sub(ai)
		dr, di := zr.Sub(ar), zi.Add(ai)
		wr, wi := bcx8(rt, 3*k), bcx8(rt, 3*k+1)
		// Xr = (Sr + wr Di + wi Dr)/2, Xi = (Si - wr Dr + wi Di)/2
		xr := di.MulAdd(wr, dr.MulAdd(wi, sr))
		xi := di.MulAdd(wi, si.Sub(dr.Mul(wr)))
		stx8(out, k*es, xr.Mul(half))
		stx8(out, k*es+w8, xi.Mul(half))
	}
}

// fftRealPrex8 packs the half spectra X[0..h] of eight real lines (the
// imaginary parts of X[0] and X[h] already zero) into conj(Z') for the
// forward transform of h: A = X[k], B = conj(X[h-k]), S = A+B, D = A-B,
// Z' = S + i conj(w^k) D.
func fftRealPrex8(h int, x, out, rt []float64) {
	const w8 = 8
	es := 2 * w8
	for k := 0; k < h; k++ {
		i, j := k*es, (h-k)*es
		ar, ai := ldx8(x, i), ldx8(x, i+w8)
		br, bi := ldx8(x, j), ldx8(x, j+w8)
		sr := ar.Add(br)
		dr, di := ar.Sub(br), ai.Add(bi)
		wr, wi := bcx8(rt, 3*k), bcx8(rt, 3*k+1)
		// Z'r = Sr - wr Di + wi Dr; -Z'i = (bi - ai) - (wr Dr + wi Di)
		// (no zero vector to negate from: that constant is a legacy-SSE XORPS)
		zr := dr.MulAdd(wi, sr.Sub(di.Mul(wr)))
		nzi := bi.Sub(ai).Sub(dr.MulAdd(wr, di.Mul(wi)))
		stx8(out, k*es, zr)
		stx8(out, k*es+w8, nzi)
	}
}
