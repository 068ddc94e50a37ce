//go:build goexperiment.simd && !amd64.v3

package eval

import "simd/archsimd"

func fftBatchAvailable() bool { return archsimd.X86.AVX2() }

type f64x4 = archsimd.Float64x4

func ld4(s []float64, x int) f64x4 { return archsimd.LoadFloat64x4((*[4]float64)(s[x*4:])) }

func st4(s []float64, x int, v f64x4) { v.Store((*[4]float64)(s[x*4:])) }

// fftBatchPasses is FFTPACK's cfft1 on four interleaved lines (factors of
// 2 and 4 only): c in, ch scratch, the result in c. wa is the twiddle table
// with its imaginary parts (odd entries) already multiplied by sign, as
// each pass's complex(wa[i-1], sign*wa[i]) has them.
func fftBatchPasses(n int, c, ch, wa []float64, factors []int, sign float64) {
	na := false
	l1, iw := 1, 0
	for _, ip := range factors {
		l2 := ip * l1
		ido := n / l2
		idot := 2 * ido
		src, dst := c, ch
		if na {
			src, dst = ch, c
		}
		if ip == 4 {
			pass4x4(idot, l1, src, dst, wa[iw:], wa[iw+idot:], wa[iw+2*idot:], sign)
		} else {
			pass2x4(idot, l1, src, dst, wa[iw:], sign)
		}
		na = !na
		l1 = l2
		iw += (ip - 1) * idot
	}
	if na {
		copy(c, ch)
	}
	archsimd.ClearAVXUpperBits()
}

// cmulx4 is Go's complex multiply (wr + i*wi) * (xr + i*xi), lane by lane.
func cmulx4(wr, wi, xr, xi f64x4) (f64x4, f64x4) {
	return wr.Mul(xr).Sub(wi.Mul(xi)), wr.Mul(xi).Add(wi.Mul(xr))
}

// pass2x4 is FFTPACK's pass2 (cc [ido,2,l1], ch [ido,l1,2], in values of
// one line; each value a vector of four lanes).
func pass2x4(ido, l1 int, cc, ch, wa1 []float64, sign float64) {
	if ido <= 2 {
		for k := 0; k < l1; k++ {
			a0, a1 := 2*ido*k, 2*ido*k+ido
			o0, o1 := ido*k, ido*k+ido*l1
			c0r, c0i, c1r, c1i := ld4(cc, a0), ld4(cc, a0+1), ld4(cc, a1), ld4(cc, a1+1)
			st4(ch, o0, c0r.Add(c1r))
			st4(ch, o0+1, c0i.Add(c1i))
			st4(ch, o1, c0r.Sub(c1r))
			st4(ch, o1+1, c0i.Sub(c1i))
		}
		return
	}
	for k := 0; k < l1; k++ {
		for i := 1; i < ido; i += 2 {
			a0 := i - 1 + 2*ido*k
			a1 := a0 + ido
			o0 := i - 1 + ido*k
			o1 := o0 + ido*l1
			c0r, c0i, c1r, c1i := ld4(cc, a0), ld4(cc, a0+1), ld4(cc, a1), ld4(cc, a1+1)
			st4(ch, o0, c0r.Add(c1r))
			st4(ch, o0+1, c0i.Add(c1i))
			t2r, t2i := c0r.Sub(c1r), c0i.Sub(c1i)
			wr := archsimd.BroadcastFloat64x4(wa1[i-1])
			wi := archsimd.BroadcastFloat64x4(wa1[i])
			yr, yi := cmulx4(wr, wi, t2r, t2i)
			st4(ch, o1, yr)
			st4(ch, o1+1, yi)
		}
	}
}

// pass4x4 is FFTPACK's pass4 (cc [ido,4,l1], ch [ido,l1,4]) on four lanes.
// t4 = conj(swap(sign*(c3-c1))) = (sign*d.im, -(sign*d.re)).
func pass4x4(ido, l1 int, cc, ch, wa1, wa2, wa3 []float64, sign float64) {
	sv := archsimd.BroadcastFloat64x4(sign)
	negBit := archsimd.BroadcastUint64x4(1 << 63)
	if ido == 2 {
		for k := 0; k < l1; k++ {
			a := 4 * ido * k
			c0r, c0i := ld4(cc, a), ld4(cc, a+1)
			c1r, c1i := ld4(cc, a+ido), ld4(cc, a+ido+1)
			c2r, c2i := ld4(cc, a+2*ido), ld4(cc, a+2*ido+1)
			c3r, c3i := ld4(cc, a+3*ido), ld4(cc, a+3*ido+1)
			t1r, t1i := c0r.Sub(c2r), c0i.Sub(c2i)
			t2r, t2i := c0r.Add(c2r), c0i.Add(c2i)
			t3r, t3i := c1r.Add(c3r), c1i.Add(c3i)
			dr, di := c3r.Sub(c1r), c3i.Sub(c1i)
			t4r, t4i := sv.Mul(di), sv.Mul(dr).AsUint64x4().Xor(negBit).AsFloat64x4()
			o := ido * k
			s := ido * l1
			st4(ch, o, t2r.Add(t3r))
			st4(ch, o+1, t2i.Add(t3i))
			st4(ch, o+s, t1r.Add(t4r))
			st4(ch, o+s+1, t1i.Add(t4i))
			st4(ch, o+2*s, t2r.Sub(t3r))
			st4(ch, o+2*s+1, t2i.Sub(t3i))
			st4(ch, o+3*s, t1r.Sub(t4r))
			st4(ch, o+3*s+1, t1i.Sub(t4i))
		}
		return
	}
	s := ido * l1
	for k := 0; k < l1; k++ {
		for i := 1; i < ido; i += 2 {
			a := i - 1 + 4*ido*k
			c0r, c0i := ld4(cc, a), ld4(cc, a+1)
			c1r, c1i := ld4(cc, a+ido), ld4(cc, a+ido+1)
			c2r, c2i := ld4(cc, a+2*ido), ld4(cc, a+2*ido+1)
			c3r, c3i := ld4(cc, a+3*ido), ld4(cc, a+3*ido+1)
			t1r, t1i := c0r.Sub(c2r), c0i.Sub(c2i)
			t2r, t2i := c0r.Add(c2r), c0i.Add(c2i)
			t3r, t3i := c1r.Add(c3r), c1i.Add(c3i)
			dr, di := c3r.Sub(c1r), c3i.Sub(c1i)
			t4r, t4i := sv.Mul(di), sv.Mul(dr).AsUint64x4().Xor(negBit).AsFloat64x4()
			o := i - 1 + ido*k
			st4(ch, o, t2r.Add(t3r))
			st4(ch, o+1, t2i.Add(t3i))
			e2r, e2i := t1r.Add(t4r), t1i.Add(t4i)
			e3r, e3i := t2r.Sub(t3r), t2i.Sub(t3i)
			e4r, e4i := t1r.Sub(t4r), t1i.Sub(t4i)
			w1r, w1i := archsimd.BroadcastFloat64x4(wa1[i-1]), archsimd.BroadcastFloat64x4(wa1[i])
			w2r, w2i := archsimd.BroadcastFloat64x4(wa2[i-1]), archsimd.BroadcastFloat64x4(wa2[i])
			w3r, w3i := archsimd.BroadcastFloat64x4(wa3[i-1]), archsimd.BroadcastFloat64x4(wa3[i])
			yr, yi := cmulx4(w1r, w1i, e2r, e2i)
			st4(ch, o+s, yr)
			st4(ch, o+s+1, yi)
			yr, yi = cmulx4(w2r, w2i, e3r, e3i)
			st4(ch, o+2*s, yr)
			st4(ch, o+2*s+1, yi)
			yr, yi = cmulx4(w3r, w3i, e4r, e4i)
			st4(ch, o+3*s, yr)
			st4(ch, o+3*s+1, yi)
		}
	}
}
