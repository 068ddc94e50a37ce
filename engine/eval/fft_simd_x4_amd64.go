//go:build goexperiment.simd && amd64

// Code generated from fft_simd_x8_amd64.go by go generate; DO NOT EDIT.

package eval

import (
	"unsafe"

	"simd/archsimd"
)

// Stockham passes on four lanes (see fft_plan.go for the layout).

type fvx4 = archsimd.Float64x4

// ldx4 and stx4 do not check bounds: their callers check the lengths
// once.
func ldx4(s []float64, i int) fvx4 {
	return archsimd.LoadFloat64x4((*[4]float64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s)), 8*i)))
}

func stx4(s []float64, i int, v fvx4) {
	v.Store((*[4]float64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s)), 8*i)))
}

func bcx4(s []float64, i int) fvx4 { return archsimd.BroadcastFloat64x4(s[i]) }

// The passes address their buffers through pointers (no bounds checks):
// fftCPlan.run checks the lengths once.
func bcpx4(p unsafe.Pointer, i int) fvx4 {
	return archsimd.BroadcastFloat64x4(*(*float64)(unsafe.Add(p, i*8)))
}

// cmulx4 is (xr + i xi) * (wr + i wi) with nwi = -wi.
func cmulx4(xr, xi, wr, wi, nwi fvx4) (fvx4, fvx4) {
	return xr.MulAdd(wr, xi.Mul(nwi)), xr.MulAdd(wi, xi.Mul(wr))
}

// ldbx4 and stbx4 address p by a byte offset.
func ldbx4(p unsafe.Pointer, off int) fvx4 {
	return archsimd.LoadFloat64x4((*[4]float64)(unsafe.Add(p, off)))
}

func stbx4(p unsafe.Pointer, off int, v fvx4) { v.Store((*[4]float64)(unsafe.Add(p, off))) }

func fftPass2x4(st *fftStage, x, y []float64) {
	const w8 = 4
	const eb, hb = 16 * w8, 8 * w8 // bytes of a value; offset of its imaginary parts
	xp, yp, twp := unsafe.Pointer(unsafe.SliceData(x)), unsafe.Pointer(unsafe.SliceData(y)), unsafe.Pointer(unsafe.SliceData(st.tw))
	m, s := st.m, st.s
	step, ostep := s*m*eb, s*eb
	for pp := 0; pp < m; pp++ {
		wr, wi, nwi := bcpx4(twp, 3*pp), bcpx4(twp, 3*pp+1), bcpx4(twp, 3*pp+2)
		i, o := s*pp*eb, 2*s*pp*eb
		for end := i + s*eb; i < end; i, o = i+eb, o+eb {
			ip, op := unsafe.Add(xp, i), unsafe.Add(yp, o)
			ar, ai := ldbx4(ip, 0), ldbx4(ip, hb)
			br, bi := ldbx4(ip, step), ldbx4(ip, step+hb)
			stbx4(op, 0, ar.Add(br))
			stbx4(op, hb, ai.Add(bi))
			dr, di := ar.Sub(br), ai.Sub(bi)
			if pp != 0 {
				dr, di = cmulx4(dr, di, wr, wi, nwi)
			}
			stbx4(op, ostep, dr)
			stbx4(op, ostep+hb, di)
		}
	}
}

// fftPass3x4: b0 = a0+t1, b1,2 = a0 - t1/2 ∓ i(√3/2)(a1-a2), t1 = a1+a2.
func fftPass3x4(st *fftStage, x, y []float64) {
	const w8 = 4
	const eb, hb = 16 * w8, 8 * w8
	xp, yp, twp := unsafe.Pointer(unsafe.SliceData(x)), unsafe.Pointer(unsafe.SliceData(y)), unsafe.Pointer(unsafe.SliceData(st.tw))
	m, s := st.m, st.s
	step, ostep := s*m*eb, s*eb
	half := archsimd.BroadcastFloat64x4(-0.5)
	sn := archsimd.BroadcastFloat64x4(0.8660254037844386467637231707529361834714) // √3/2
	for pp := 0; pp < m; pp++ {
		tw := unsafe.Add(twp, 6*pp*8)
		w1r, w1i, w1n := bcpx4(tw, 0), bcpx4(tw, 1), bcpx4(tw, 2)
		w2r, w2i, w2n := bcpx4(tw, 3), bcpx4(tw, 4), bcpx4(tw, 5)
		i, o := s*pp*eb, 3*s*pp*eb
		for end := i + s*eb; i < end; i, o = i+eb, o+eb {
			ip, op := unsafe.Add(xp, i), unsafe.Add(yp, o)
			a0r, a0i := ldbx4(ip, 0), ldbx4(ip, hb)
			a1r, a1i := ldbx4(ip, step), ldbx4(ip, step+hb)
			a2r, a2i := ldbx4(ip, 2*step), ldbx4(ip, 2*step+hb)
			t1r, t1i := a1r.Add(a2r), a1i.Add(a2i)
			t2r, t2i := a1r.Sub(a2r), a1i.Sub(a2i)
			stbx4(op, 0, a0r.Add(t1r))
			stbx4(op, hb, a0i.Add(t1i))
			m1r, m1i := t1r.MulAdd(half, a0r), t1i.MulAdd(half, a0i)
			b1r, b1i := t2i.MulAdd(sn, m1r), m1i.Sub(t2r.Mul(sn))
			b2r, b2i := m1r.Sub(t2i.Mul(sn)), t2r.MulAdd(sn, m1i)
			if pp != 0 {
				b1r, b1i = cmulx4(b1r, b1i, w1r, w1i, w1n)
				b2r, b2i = cmulx4(b2r, b2i, w2r, w2i, w2n)
			}
			stbx4(op, ostep, b1r)
			stbx4(op, ostep+hb, b1i)
			stbx4(op, 2*ostep, b2r)
			stbx4(op, 2*ostep+hb, b2i)
		}
	}
}

// fftPass5x4 pairs a1 with a4 and a2 with a3.
func fftPass5x4(st *fftStage, x, y []float64) {
	const w8 = 4
	const eb, hb = 16 * w8, 8 * w8
	xp, yp, twp := unsafe.Pointer(unsafe.SliceData(x)), unsafe.Pointer(unsafe.SliceData(y)), unsafe.Pointer(unsafe.SliceData(st.tw))
	m, s := st.m, st.s
	step, ostep := s*m*eb, s*eb
	c1 := archsimd.BroadcastFloat64x4(0.3090169943749474241022934171828190588602)  // cos 2π/5
	c2 := archsimd.BroadcastFloat64x4(-0.8090169943749474241022934171828190588602) // cos 4π/5
	s1 := archsimd.BroadcastFloat64x4(0.9510565162951535721164393333793821434057)  // sin 2π/5
	s2 := archsimd.BroadcastFloat64x4(0.5877852522924731291687059546390727685977)  // sin 4π/5
	ns1 := archsimd.BroadcastFloat64x4(-0.9510565162951535721164393333793821434057)
	for pp := 0; pp < m; pp++ {
		tw := unsafe.Add(twp, 12*pp*8)
		w1r, w1i, w1n := bcpx4(tw, 0), bcpx4(tw, 1), bcpx4(tw, 2)
		w2r, w2i, w2n := bcpx4(tw, 3), bcpx4(tw, 4), bcpx4(tw, 5)
		w3r, w3i, w3n := bcpx4(tw, 6), bcpx4(tw, 7), bcpx4(tw, 8)
		w4r, w4i, w4n := bcpx4(tw, 9), bcpx4(tw, 10), bcpx4(tw, 11)
		i, o := s*pp*eb, 5*s*pp*eb
		for end := i + s*eb; i < end; i, o = i+eb, o+eb {
			ip, op := unsafe.Add(xp, i), unsafe.Add(yp, o)
			a0r, a0i := ldbx4(ip, 0), ldbx4(ip, hb)
			a1r, a1i := ldbx4(ip, step), ldbx4(ip, step+hb)
			a2r, a2i := ldbx4(ip, 2*step), ldbx4(ip, 2*step+hb)
			a3r, a3i := ldbx4(ip, 3*step), ldbx4(ip, 3*step+hb)
			a4r, a4i := ldbx4(ip, 4*step), ldbx4(ip, 4*step+hb)
			t1r, t1i := a1r.Add(a4r), a1i.Add(a4i)
			t2r, t2i := a2r.Add(a3r), a2i.Add(a3i)
			t3r, t3i := a1r.Sub(a4r), a1i.Sub(a4i)
			t4r, t4i := a2r.Sub(a3r), a2i.Sub(a3i)
			stbx4(op, 0, a0r.Add(t1r).Add(t2r))
			stbx4(op, hb, a0i.Add(t1i).Add(t2i))
			m1r, m1i := t2r.MulAdd(c2, t1r.MulAdd(c1, a0r)), t2i.MulAdd(c2, t1i.MulAdd(c1, a0i))
			m2r, m2i := t2r.MulAdd(c1, t1r.MulAdd(c2, a0r)), t2i.MulAdd(c1, t1i.MulAdd(c2, a0i))
			n1r, n1i := t4r.MulAdd(s2, t3r.Mul(s1)), t4i.MulAdd(s2, t3i.Mul(s1))
			n2r, n2i := t4r.MulAdd(ns1, t3r.Mul(s2)), t4i.MulAdd(ns1, t3i.Mul(s2))
			// b1 = m1 - i n1, b4 = m1 + i n1, b2 = m2 - i n2, b3 = m2 + i n2.
			b1r, b1i := m1r.Add(n1i), m1i.Sub(n1r)
			b2r, b2i := m2r.Add(n2i), m2i.Sub(n2r)
			b3r, b3i := m2r.Sub(n2i), m2i.Add(n2r)
			b4r, b4i := m1r.Sub(n1i), m1i.Add(n1r)
			if pp != 0 {
				b1r, b1i = cmulx4(b1r, b1i, w1r, w1i, w1n)
				b2r, b2i = cmulx4(b2r, b2i, w2r, w2i, w2n)
				b3r, b3i = cmulx4(b3r, b3i, w3r, w3i, w3n)
				b4r, b4i = cmulx4(b4r, b4i, w4r, w4i, w4n)
			}
			stbx4(op, ostep, b1r)
			stbx4(op, ostep+hb, b1i)
			stbx4(op, 2*ostep, b2r)
			stbx4(op, 2*ostep+hb, b2i)
			stbx4(op, 3*ostep, b3r)
			stbx4(op, 3*ostep+hb, b3i)
			stbx4(op, 4*ostep, b4r)
			stbx4(op, 4*ostep+hb, b4i)
		}
	}
}

// fftPassx4 runs a stage of any radix (2, 3, 4 and 5 with their own
// butterflies); it always returns true.
func fftPassx4(st *fftStage, x, y []float64) bool {
	switch st.p {
	case 2:
		fftPass2x4(st, x, y)
	case 3:
		fftPass3x4(st, x, y)
	case 4:
		fftPass4x4asm(&x[0], &y[0], &st.tw[0], st.m, st.s)
	case 5:
		fftPass5x4(st, x, y)
	default:
		fftPassDFTx4(st, x, y)
	}
	return true
}

// fftPassDFTx4 is fftPassDFTGo on four lanes: the same multiplies, adds
// and subtractions in the same order on each lane (no fused multiply-add),
// so the same bits.
func fftPassDFTx4(st *fftStage, x, y []float64) {
	const w8 = 4
	const eb, hb = 16 * w8, 8 * w8
	p, m, s := st.p, st.m, st.s
	if len(x) < p*m*s*2*w8 || len(y) < p*m*s*2*w8 || len(st.tw) < 3*(p-1)*m {
		panic("fft: DFT pass buffers too short")
	}
	cv, sv := make([]fvx4, p), make([]fvx4, p) // cos and -sin of 2π j/p
	for j := 0; j < p; j++ {
		c, sn := fftRoot(j, p)
		if st.dft != nil {
			c, sn = st.dft[2*j], st.dft[2*j+1]
		}
		cv[j], sv[j] = archsimd.BroadcastFloat64x4(c), archsimd.BroadcastFloat64x4(-sn)
	}
	ar, ai := make([]fvx4, p), make([]fvx4, p)
	xp, yp := unsafe.Pointer(unsafe.SliceData(x)), unsafe.Pointer(unsafe.SliceData(y))
	step, ostep := s*m*eb, s*eb
	var zero fvx4
	for pp := 0; pp < m; pp++ {
		tw := st.tw[3*(p-1)*pp:]
		for q := 0; q < s; q++ {
			ip, op := unsafe.Add(xp, (q+s*pp)*eb), unsafe.Add(yp, (q+s*p*pp)*eb)
			for t := 0; t < p; t++ {
				ar[t], ai[t] = ldbx4(ip, t*step), ldbx4(ip, t*step+hb)
			}
			for r := 0; r < p; r++ {
				sr, si := zero, zero
				j := 0
				for t := 0; t < p; t++ {
					c, sn := cv[j], sv[j]
					sr = sr.Add(ar[t].Mul(c).Sub(ai[t].Mul(sn)))
					si = si.Add(ar[t].Mul(sn).Add(ai[t].Mul(c)))
					if j += r; j >= p {
						j -= p
					}
				}
				if r > 0 {
					k := 3 * (r - 1)
					w0, w1, w2 := archsimd.BroadcastFloat64x4(tw[k]), archsimd.BroadcastFloat64x4(tw[k+1]), archsimd.BroadcastFloat64x4(tw[k+2])
					sr, si = sr.Mul(w0).Add(si.Mul(w2)), sr.Mul(w1).Add(si.Mul(w0))
				}
				stbx4(op, r*ostep, sr)
				stbx4(op, r*ostep+hb, si)
			}
		}
	}
}

// fftRealPostx4 turns the transform z (h values) of the packed pairs of
// four real lines into their spectra X[0..h] in out: with Zc =
// conj(Z[h-k]), S = Z[k]+Zc, D = Z[k]-Zc, X[k] = (S - i w^k D)/2.
func fftRealPostx4(h int, z, out, rt []float64) {
	const w8 = 4
	es := 2 * w8
	if len(z) < h*es || len(out) < (h+1)*es || len(rt) < 3*(h+1) {
		panic("fft: real twiddle pass buffers too short")
	}
	rtp := unsafe.Pointer(unsafe.SliceData(rt))
	half := archsimd.BroadcastFloat64x4(0.5)
	for k := 0; k <= h; k++ {
		// Z[k mod h] and Z[(h-k) mod h], without dividing.
		i, j := k*es, (h-k)*es
		if k == 0 {
			j = 0
		} else if k == h {
			i = 0
		}
		zr, zi := ldx4(z, i), ldx4(z, i+w8)
		ar, ai := ldx4(z, j), ldx4(z, j+w8)
		sr, si := zr.Add(ar), zi.Sub(ai)
		dr, di := zr.Sub(ar), zi.Add(ai)
		wr, wi := bcpx4(rtp, 3*k), bcpx4(rtp, 3*k+1)
		// Xr = (Sr + wr Di + wi Dr)/2, Xi = (Si - wr Dr + wi Di)/2
		xr := di.MulAdd(wr, dr.MulAdd(wi, sr))
		xi := di.MulAdd(wi, si.Sub(dr.Mul(wr)))
		stx4(out, k*es, xr.Mul(half))
		stx4(out, k*es+w8, xi.Mul(half))
	}
}

// fftRealPrex4 packs the half spectra X[0..h] of four real lines (the
// imaginary parts of X[0] and X[h] already zero) into conj(Z') for the
// forward transform of h: A = X[k], B = conj(X[h-k]), S = A+B, D = A-B,
// Z' = S + i conj(w^k) D.
func fftRealPrex4(h int, x, out, rt []float64) {
	const w8 = 4
	es := 2 * w8
	if len(x) < (h+1)*es || len(out) < h*es || len(rt) < 3*(h+1) {
		panic("fft: real twiddle pass buffers too short")
	}
	rtp := unsafe.Pointer(unsafe.SliceData(rt))
	for k := 0; k < h; k++ {
		i, j := k*es, (h-k)*es
		ar, ai := ldx4(x, i), ldx4(x, i+w8)
		br, bi := ldx4(x, j), ldx4(x, j+w8)
		sr := ar.Add(br)
		dr, di := ar.Sub(br), ai.Add(bi)
		wr, wi := bcpx4(rtp, 3*k), bcpx4(rtp, 3*k+1)
		// Z'r = Sr - wr Di + wi Dr; -Z'i = (bi - ai) - (wr Dr + wi Di)
		// (no zero vector to negate from: that constant is a legacy-SSE XORPS)
		zr := dr.MulAdd(wi, sr.Sub(di.Mul(wr)))
		nzi := bi.Sub(ai).Sub(dr.MulAdd(wr, di.Mul(wi)))
		stx4(out, k*es, zr)
		stx4(out, k*es+w8, nzi)
	}
}
