//go:build goexperiment.simd && amd64

package eval

import (
	"math"
	"simd/archsimd"
	"unsafe"
)

// The kernels of ynn_math64.go (exp, expm1, tanh, log, log1p, erf) four
// f64 lanes at a time (AVX2+FMA): the scalar code's operations lane by lane, a MulAdd
// where it calls math.FMA, MAXPD/MINPD as compare and blend, flush-to-zero
// as a compare of the magnitude. Held to the scalar code bit for bit by
// TestYNNMath64VectorMatchesScalar.

// ynnVectorF64 runs op over the whole vectors at the front of x and
// returns how many elements that was (0: no vector form).
func ynnVectorF64(o YNNOp, x, out []float64) int {
	if !ynnVectorOK {
		return 0
	}
	switch o.Op {
	case "exp":
		return ynnExpFamily64X4(ynnKExp, x, out, o.In64, o.C064, o.C164)
	case "expm1":
		return ynnExpFamily64X4(ynnKExpm1, x, out, o.In64, o.C064, o.C164)
	case "tanh":
		return ynnExpFamily64X4(ynnKTanh, x, out, o.In64, o.C064, o.C164)
	case "log", "log1p":
		return ynnLog64X4(o.Op == "log1p", x, out, o.In64, o.C164)
	case "erf":
		return ynnErf64X4(x, out, o.In64, o.C064, o.C164)
	}
	return 0
}

var ynnNegInf64, ynnPosInf64 = math.Inf(-1), math.Inf(1)

func ynnFlush64V(v archsimd.Float64x4) archsimd.Float64x4 {
	b := v.AsUint64x4()
	sign := archsimd.BroadcastUint64x4(1 << 63)
	minNormal := archsimd.BroadcastUint64x4(0x0010000000000000).AsFloat64x4()
	return b.And(sign).AsFloat64x4().Merge(v, b.AndNot(sign).AsFloat64x4().Less(minNormal))
}

// ynnExpFamily64X4 is ynnExp64 (kind ynnKExp), ynnExpm164 (ynnKExpm1) or
// ynnTanh64 of flush(x)*in (ynnKTanh) on the whole vectors of x.
func ynnExpFamily64X4(kind int, x, out []float64, in, c0, c1 float64) int {
	n := len(x) &^ 3
	if n == 0 {
		return 0
	}
	out = out[:len(x)]
	px, po := unsafe.Pointer(&x[:n][0]), unsafe.Pointer(&out[:n][0])
	ld := func(off int) archsimd.Float64x4 { return archsimd.LoadFloat64x4((*[4]float64)(unsafe.Add(px, off))) }
	bc := archsimd.BroadcastFloat64x4
	sign := archsimd.BroadcastUint64x4(1 << 63)
	infBits := archsimd.BroadcastUint64x4(0x7ff0000000000000)
	lo, hi := bc(ynnExp64Lo), bc(ynnExp64Hi)
	log2e, round := bc(ynnLog2e64), bc(ynnRound64)
	ln2Hi, ln2Lo := bc(ynnLn2Hi64), bc(ynnLn2Lo64)
	var ev [6]archsimd.Float64x4
	for i, c := range ynnExp64Even {
		ev[i] = bc(c)
	}
	var od [5]archsimd.Float64x4
	for i, c := range ynnExp64Odd {
		od[i] = bc(c)
	}
	bias := bc(ynnExpBias64)
	one, two, lim := bc(1), bc(2), bc(300)
	vin, vc0, vc1 := bc(in), bc(c0), bc(c1)
	mulIn, mulOut := in != 1, c1 != 1
	for off, end := 0, 8*n; off < end; off += 8 * 4 {
		v := ynnFlush64V(ld(off))
		if mulIn {
			v = ynnFlush64V(v.Mul(vin))
		}
		if kind == ynnKTanh {
			d := v.Add(v)
			v = lim.Merge(d, lim.Less(d))
		}
		t := lo.Merge(v, lo.Greater(v))
		t = hi.Merge(t, hi.Less(t))
		nn := t.Mul(log2e).Add(round).Sub(round)
		r := nn.MulAdd(ln2Hi, t)
		r = nn.MulAdd(ln2Lo, r)
		r2 := r.Mul(r)
		e := ev[0].MulAdd(r2, ev[1]).MulAdd(r2, ev[2]).MulAdd(r2, ev[3]).MulAdd(r2, ev[4]).MulAdd(r2, ev[5])
		o := od[0].MulAdd(r2, od[1]).MulAdd(r2, od[2]).MulAdd(r2, od[3]).MulAdd(r2, od[4])
		p := o.MulAdd(r, e)
		p = p.MulAdd(r2, r)
		s := nn.Add(bias).AsUint64x4().ShiftAllLeft(52).AsFloat64x4()
		s = v.Merge(s, v.IsNaN())
		sInf := s.AsUint64x4().AndNot(sign).Equal(infBits)
		var y archsimd.Float64x4
		if kind == ynnKExp {
			y = p.MulAdd(s, s)
		} else {
			y = s.MulAdd(p, s.Sub(one))
		}
		y = s.Merge(ynnFlush64V(y), sInf)
		switch kind {
		case ynnKExp, ynnKExpm1:
			if mulOut {
				y = ynnFlush64V(y.Mul(vc1))
			}
		case ynnKTanh:
			q := ynnFlush64V(y.Div(y.Add(two)))
			y = ynnFlush64V(q.MulAdd(vc1, vc0))
		}
		y.Store((*[4]float64)(unsafe.Add(po, off)))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// ynnLog64X4 is ynnLog64 (log1p false) or ynnLog1p64 of flush(x)*in,
// times out, on the whole vectors of x. VGETEXPPD (AVX-512) is the
// exponent field read through 2^52's mantissa here: the same value on the
// flushed operands it sees.
func ynnLog64X4(log1p bool, x, out []float64, in, c1 float64) int {
	n := len(x) &^ 3
	if n == 0 {
		return 0
	}
	out = out[:len(x)]
	px, po := unsafe.Pointer(&x[:n][0]), unsafe.Pointer(&out[:n][0])
	bc := archsimd.BroadcastFloat64x4
	bu := archsimd.BroadcastUint64x4
	mant, oneBits, expMask := bu(0x000fffffffffffff), bu(0x3ff0000000000000), bu(0x7ff)
	magic := bu(0x4330000000000000)
	magicF := bc(0x1p52 + 1023)
	zero, one, half, sqrt2, ln2 := bc(0), bc(1), bc(0.5), bc(ynnSqrt2_64), bc(ynnLn2_64)
	ninf, pinf, nan := bc(ynnNegInf64), bc(ynnPosInf64), bc(ynnNaN64)
	var ca [3]archsimd.Float64x4
	var cb [3]archsimd.Float64x4
	var cc [3]archsimd.Float64x4
	var ce [4]archsimd.Float64x4
	for i := range ca {
		ca[i], cb[i], cc[i] = bc(ynnLog64A[i]), bc(ynnLog64B[i]), bc(ynnLog64C[i])
	}
	for i := range ce {
		ce[i] = bc(ynnLog64E[i])
	}
	vin, vc1 := bc(in), bc(c1)
	mulIn := in != 1
	for off, end := 0, 8*n; off < end; off += 8 * 4 {
		v := ynnFlush64V(archsimd.LoadFloat64x4((*[4]float64)(unsafe.Add(px, off))))
		if mulIn {
			v = ynnFlush64V(v.Mul(vin))
		}
		u := v
		if log1p {
			u = ynnFlush64V(v.Add(one))
		}
		ub := u.AsUint64x4()
		m := ub.And(mant).Or(oneBits).AsFloat64x4()
		field := ub.ShiftAllRight(52).And(expMask)
		e := field.Or(magic).AsFloat64x4().Sub(magicF)
		// getexp: -inf at ±0, +inf at ±inf, the operand itself at NaN.
		e = ninf.Merge(e, u.Equal(zero))
		isSpecial := field.Equal(expMask)
		e = u.Merge(e, isSpecial)
		e = pinf.Merge(e, u.Equal(pinf).Or(u.Equal(ninf)))
		e = nan.Merge(e, u.Less(zero))
		big := m.Greater(sqrt2)
		e = e.Add(one).Merge(e, big)
		m = m.Mul(half).Merge(m, big)
		f := m.Sub(one)
		if log1p {
			f = v.Merge(f, e.Equal(zero))
		}
		f2 := f.Mul(f)
		a := ca[0].MulAdd(f2, ca[1]).MulAdd(f2, ca[2])
		b := cb[0].MulAdd(f2, cb[1]).MulAdd(f2, cb[2])
		c := cc[0].MulAdd(f2, cc[1]).MulAdd(f2, cc[2])
		d := ce[0].MulAdd(f2, ce[1]).MulAdd(f2, ce[2]).MulAdd(f2, ce[3])
		num := f.MulAdd(a, b)
		den := f.MulAdd(c, d)
		r := num.Div(den).MulAdd(f2, f)
		r = e.MulAdd(ln2, r)
		ynnFlush64V(r.Mul(vc1)).Store((*[4]float64)(unsafe.Add(po, off)))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// ynnErf64X4 is ynnErf64 on the whole vectors of x.
func ynnErf64X4(x, out []float64, in, c0, c1 float64) int {
	n := len(x) &^ 3
	if n == 0 {
		return 0
	}
	out = out[:len(x)]
	px, po := unsafe.Pointer(&x[:n][0]), unsafe.Pointer(&out[:n][0])
	bc := archsimd.BroadcastFloat64x4
	sign := archsimd.BroadcastUint64x4(1 << 63)
	infBits := archsimd.BroadcastUint64x4(0x7ff0000000000000)
	clamp, small, one := bc(ynnErf64Clamp), bc(ynnErf64Small), bc(1)
	var cp, cq [6]archsimd.Float64x4
	for i := range cp {
		cp[i], cq[i] = bc(ynnErf64P[i]), bc(ynnErf64Q[i])
	}
	var cn, cd [9]archsimd.Float64x4
	for i := range cn {
		cn[i], cd[i] = bc(ynnErf64N[i]), bc(ynnErf64D[i])
	}
	lo, hi := bc(ynnExp64Lo), bc(ynnExp64Hi)
	log2e, round := bc(ynnLog2e64), bc(ynnRound64)
	ln2Hi, ln2Lo := bc(ynnLn2Hi64), bc(ynnLn2Lo64)
	var ev [6]archsimd.Float64x4
	for i, c := range ynnExp64Even {
		ev[i] = bc(c)
	}
	var od [5]archsimd.Float64x4
	for i, c := range ynnExp64Odd {
		od[i] = bc(c)
	}
	bias := bc(ynnExpBias64)
	vin, vc0, vc1 := bc(in), bc(c0), bc(c1)
	mulIn := in != 1
	horner := func(c []archsimd.Float64x4, x archsimd.Float64x4) archsimd.Float64x4 {
		v := c[0]
		for _, k := range c[1:] {
			v = v.MulAdd(x, k)
		}
		return v
	}
	for off, end := 0, 8*n; off < end; off += 8 * 4 {
		v := ynnFlush64V(archsimd.LoadFloat64x4((*[4]float64)(unsafe.Add(px, off))))
		if mulIn {
			v = ynnFlush64V(v.Mul(vin))
		}
		abs := v.AsUint64x4().AndNot(sign).AsFloat64x4()
		a := clamp.Merge(abs, clamp.Less(abs))
		a2 := ynnFlush64V(a.Mul(a))
		rs := a.Mul(horner(cp[:], a2).Div(horner(cq[:], a2)))
		// e^(-a²) as ynnExpParts64 and ynnExp64's end.
		w := a2.AsUint64x4().Xor(sign).AsFloat64x4()
		t := lo.Merge(w, lo.Greater(w))
		t = hi.Merge(t, hi.Less(t))
		nn := t.Mul(log2e).Add(round).Sub(round)
		r := nn.MulAdd(ln2Hi, t)
		r = nn.MulAdd(ln2Lo, r)
		r2 := r.Mul(r)
		pe := horner(ev[:], r2)
		po2 := horner(od[:], r2)
		p := po2.MulAdd(r, pe)
		p = p.MulAdd(r2, r)
		s := nn.Add(bias).AsUint64x4().ShiftAllLeft(52).AsFloat64x4()
		s = w.Merge(s, w.IsNaN())
		sInf := s.AsUint64x4().AndNot(sign).Equal(infBits)
		ex := s.Merge(ynnFlush64V(p.MulAdd(s, s)), sInf)
		rl := one.Sub(horner(cn[:], a).Div(horner(cd[:], a)).Mul(ex))
		res := ynnFlush64V(rs.Merge(rl, a.Less(small)))
		res = res.AsUint64x4().AndNot(sign).Or(v.AsUint64x4().And(sign)).AsFloat64x4()
		ynnFlush64V(res.MulAdd(vc1, vc0)).Store((*[4]float64)(unsafe.Add(po, off)))
	}
	archsimd.ClearAVXUpperBits()
	return n
}
