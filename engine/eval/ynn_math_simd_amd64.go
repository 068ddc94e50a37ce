//go:build goexperiment.simd && amd64

package eval

import (
	"math"
	"simd/archsimd"
)

// The YNNPACK kernels of ynn_math.go on 16 lanes (AVX-512F) or 8
// (AVX2+FMA): the same operations, a MulAdd where the scalar code calls
// fma32, a plain Mul/Add/Div where it writes one. MINPS/MAXPS are spelled
// as compare and blend (the compiler may swap a Min's operands, which moves
// where a NaN goes), flush-to-zero as a compare of the magnitude. Each op's
// loop splats its constants once per call (a step function per vector,
// splatting them every time, had cost about twice as much). Held to the
// scalar code bit for bit, both widths, by TestYNNMathVectorMatchesScalar.

var ynnVectorOK = archsimd.X86.AVX2() && archsimd.X86.FMA()

type ynnF32x8 = archsimd.Float32x8

func ynnSplatBits(b uint32) ynnF32x8 { return archsimd.BroadcastUint32x8(b).AsFloat32x8() }

// ynnMinV and ynnMaxV are x86Min and x86Max lane by lane.
func ynnMinV(a, b ynnF32x8) ynnF32x8 { return a.Merge(b, a.Less(b)) }
func ynnMaxV(a, b ynnF32x8) ynnF32x8 { return a.Merge(b, a.Greater(b)) }

// ynnFlushV is flush32 lane by lane.
func ynnFlushV(v ynnF32x8) ynnF32x8 {
	u := v.AsUint32x8()
	abs := u.And(archsimd.BroadcastUint32x8(0x7fffffff)).AsFloat32x8()
	sign := u.And(archsimd.BroadcastUint32x8(0x80000000)).AsFloat32x8()
	return sign.Merge(v, abs.Less(ynnSplatBits(0x00800000)))
}

// ynnLogNaN is the NaN ynnMant gives a negative operand's exponent,
// computed as it computes it.
var ynnLogNaN = float32(math.NaN())

// ynnVectorF32 runs op over the whole vectors at the front of x and
// returns how many elements that was (0: no vector form).
func ynnVectorF32(o YNNOp, x, out []float32) int { return ynnVectorF32Width(o, x, out, ynnVector16OK) }

// ynnVectorF32Width is ynnVectorF32 on 16 lanes where wide (and the op has
// a 16-lane form), else on 8: the tests run both on an AVX-512 host.
func ynnVectorF32Width(o YNNOp, x, out []float32, wide bool) int {
	if !ynnVectorOK {
		return 0
	}
	if wide && ynnVector16OK {
		kind := -1
		switch o.Op {
		case "exp":
			kind = ynnKExp
		case "expm1":
			kind = ynnKExpm1
		case "tanh":
			kind = ynnKTanh
		case "logistic":
			kind = ynnKLogistic
		case "log", "log1p":
			return ynnLogX16(o.Op == "log1p", x, out, o.In, o.C1)
		case "erf":
			return ynnErfX16(x, out, o.In, o.C0, o.C1)
		case "rsqrt", "negate":
			return ynnSimpleX16(o.Op == "rsqrt", x, out)
		}
		if kind >= 0 {
			return ynnExpFamilyX16(kind, x, out, o.In, o.C0, o.C1)
		}
	}
	switch o.Op {
	case "exp":
		return ynnExpFamilyX8(ynnKExp, x, out, o.In, o.C0, o.C1)
	case "expm1":
		return ynnExpFamilyX8(ynnKExpm1, x, out, o.In, o.C0, o.C1)
	case "tanh":
		return ynnExpFamilyX8(ynnKTanh, x, out, o.In, o.C0, o.C1)
	case "logistic":
		return ynnExpFamilyX8(ynnKLogistic, x, out, o.In, o.C0, o.C1)
	case "log", "log1p":
		return ynnLogX8(o.Op == "log1p", x, out, o.In, o.C1)
	case "erf":
		return ynnErfX8(x, out, o.In, o.C0, o.C1)
	case "rsqrt", "negate":
		return ynnSimpleX8(o.Op == "rsqrt", x, out)
	}
	return 0
}

// ynnBinaryVectorF32 runs the binary op (maximum, minimum) over the whole
// vectors at the front of a and b, as YNNOp.binary does element by element
// (operands flushed, MAXPS/MINPS), and returns how many elements that was
// (0: no vector form).
func ynnBinaryVectorF32(o YNNOp, a, b, out []float32) int {
	return ynnBinaryVectorF32Width(o, a, b, out, ynnVector16OK)
}

// ynnBinaryVectorF32Width is ynnBinaryVectorF32 on 16 lanes where wide,
// else on 8: the tests run both on an AVX-512 host.
func ynnBinaryVectorF32Width(o YNNOp, a, b, out []float32, wide bool) int {
	if !ynnVectorOK {
		return 0
	}
	isMax := o.Op == "maximum"
	if !isMax && o.Op != "minimum" {
		return 0
	}
	if wide && ynnVector16OK {
		return ynnMinMaxX16(isMax, a, b, out)
	}
	n := min(len(a), len(b), len(out)) &^ 7
	if n == 0 {
		return 0
	}
	pa, pb, po := f32Base(a, n), f32Base(b, n), f32Base(out, n)
	if isMax {
		for off, end := 0, 4*n; off < end; off += 4 * 8 {
			storeFloat32x8(ynnMaxV(ynnFlushV(loadFloat32x8(pa, off)), ynnFlushV(loadFloat32x8(pb, off))), po, off)
		}
	} else {
		for off, end := 0, 4*n; off < end; off += 4 * 8 {
			storeFloat32x8(ynnMinV(ynnFlushV(loadFloat32x8(pa, off)), ynnFlushV(loadFloat32x8(pb, off))), po, off)
		}
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// ynnVector16OK: the 16-lane forms below (AVX-512F). Each 8-lane form
// (ynn*X8) is its 16-lane form with the types narrowed, the same
// operations lane by lane.
var ynnVector16OK = archsimd.X86.AVX512()

const (
	ynnKExp = iota
	ynnKExpm1
	ynnKTanh
	ynnKLogistic
)

// ynnExpFamilyX16 runs exp, expm1, tanh or logistic (kind) over the whole
// 16-lane vectors at the front of x, as ynnVectorF32's step functions do,
// and returns how many elements that was.
func ynnExpFamilyX16(kind int, x, out []float32, in, c0, c1 float32) int {
	n := len(x) &^ 15
	if n == 0 {
		return 0
	}
	out = out[:len(x)]
	px, po := f32Base(x, n), f32Base(out, n)
	sign := archsimd.BroadcastUint32x16(0x80000000)
	minNormal := archsimd.BroadcastUint32x16(0x00800000).AsFloat32x16()
	infBits := archsimd.BroadcastUint32x16(0x7f800000)
	lo, hi := archsimd.BroadcastFloat32x16(ynnExpLo), archsimd.BroadcastFloat32x16(ynnExpHi)
	log2e, round := archsimd.BroadcastFloat32x16(ynnLog2e), archsimd.BroadcastFloat32x16(ynnRound)
	ln2Hi, ln2Lo := archsimd.BroadcastFloat32x16(ynnLn2Hi), archsimd.BroadcastFloat32x16(ynnLn2Lo)
	o0, o1, o2 := archsimd.BroadcastFloat32x16(ynnExpOdd[0]), archsimd.BroadcastFloat32x16(ynnExpOdd[1]), archsimd.BroadcastFloat32x16(ynnExpOdd[2])
	e0, e1 := archsimd.BroadcastFloat32x16(ynnExpEven[0]), archsimd.BroadcastFloat32x16(ynnExpEven[1])
	e2, e3 := archsimd.BroadcastFloat32x16(ynnExpEven[2]), archsimd.BroadcastFloat32x16(ynnExpEven[3])
	bias := archsimd.BroadcastFloat32x16(ynnExpBias)
	one, two, lim := archsimd.BroadcastFloat32x16(1), archsimd.BroadcastFloat32x16(2), archsimd.BroadcastFloat32x16(80)
	if kind == ynnKLogistic {
		in, c1 = -1, 1
	}
	vin, vc0, vc1 := archsimd.BroadcastFloat32x16(in), archsimd.BroadcastFloat32x16(c0), archsimd.BroadcastFloat32x16(c1)
	// x*1 is x, bit for bit, on flushed operands (NaNs keep their payload),
	// and a flushed value flushed again is itself: unit scalars are skipped.
	mulIn, mulOut := in != 1, c1 != 1
	for off, end := 0, 4*n; off < end; off += 4 * 16 {
		// v = flush(x) * in (tanh: y = min(80, v+v))
		b := loadFloat32x16(px, off).AsUint32x16()
		xf := b.And(sign).Merge(b, b.AndNot(sign).AsFloat32x16().Less(minNormal)).AsFloat32x16()
		v := xf
		if mulIn {
			v = xf.Mul(vin)
		}
		if kind == ynnKTanh {
			d := v.Add(v)
			v = lim.Merge(d, lim.Less(d))
		}
		// ynnExpParts
		t := lo.Merge(v, lo.Greater(v))
		t = hi.Merge(t, hi.Less(t))
		nn := t.Mul(log2e).Add(round).Sub(round)
		r := nn.MulAdd(ln2Hi, t)
		r = nn.MulAdd(ln2Lo, r)
		r2 := r.Mul(r)
		pa := o0.MulAdd(r2, o1).MulAdd(r2, o2)
		pb := e0.MulAdd(r2, e1).MulAdd(r2, e2).MulAdd(r2, e3)
		p := r.MulAdd(pa, pb)
		p = r2.MulAdd(p, r)
		s := nn.Add(bias).AsUint32x16().ShiftAllLeft(23).AsFloat32x16()
		s = v.Merge(s, v.IsNaN())
		sInf := s.AsUint32x16().AndNot(sign).Equal(infBits)
		var e archsimd.Float32x16
		if kind == ynnKExp || kind == ynnKLogistic {
			e = p.MulAdd(s, s)
		} else {
			e = p.MulAdd(s, s.Sub(one))
		}
		eb := e.AsUint32x16()
		e = s.Merge(eb.And(sign).Merge(eb, eb.AndNot(sign).AsFloat32x16().Less(minNormal)).AsFloat32x16(), sInf)
		switch kind {
		case ynnKExp, ynnKExpm1:
			if !mulOut {
				storeFloat32x16(e, po, off)
				continue
			}
			e = e.Mul(vc1)
		case ynnKLogistic:
			e = e.Add(one) // (c1 is 1: e*c1 flushed is e)
			eb = e.AsUint32x16()
			e = eb.And(sign).Merge(eb, eb.AndNot(sign).AsFloat32x16().Less(minNormal)).AsFloat32x16()
			e = one.Div(e)
		case ynnKTanh:
			q := e.Div(e.Add(two))
			qb := q.AsUint32x16()
			q = qb.And(sign).Merge(qb, qb.AndNot(sign).AsFloat32x16().Less(minNormal)).AsFloat32x16()
			e = q.MulAdd(vc1, vc0)
		}
		eb = e.AsUint32x16()
		storeFloat32x16(eb.And(sign).Merge(eb, eb.AndNot(sign).AsFloat32x16().Less(minNormal)).AsFloat32x16(), po, off)
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// ynnLogX16 runs ynnLog (ynnLog1p when log1p) over the whole 16-lane
// vectors at the front of x and returns how many elements that was.
// VGETEXPPS is spelled as the exponent field minus the bias with getexp's
// special lanes (zero, infinity, NaN) put back, on the operand as it
// comes, flushed or not.
func ynnLogX16(log1p bool, x, out []float32, in, c1 float32) int {
	n := len(x) &^ 15
	if n == 0 {
		return 0
	}
	out = out[:len(x)]
	px, po := f32Base(x, n), f32Base(out, n)
	sign := archsimd.BroadcastUint32x16(0x80000000)
	minNormal := archsimd.BroadcastUint32x16(0x00800000).AsFloat32x16()
	infBits, zeroBits := archsimd.BroadcastUint32x16(0x7f800000), archsimd.BroadcastUint32x16(0)
	mantMask, oneBits := archsimd.BroadcastUint32x16(ynnMantMask), archsimd.BroadcastUint32x16(0x3f800000)
	bias := archsimd.BroadcastInt32x16(127)
	posInf, negInf := infBits.AsFloat32x16(), archsimd.BroadcastUint32x16(0xff800000).AsFloat32x16()
	nan, zero := archsimd.BroadcastFloat32x16(ynnLogNaN), archsimd.BroadcastFloat32x16(0)
	one, half, sqrt2 := archsimd.BroadcastFloat32x16(1), archsimd.BroadcastFloat32x16(0.5), archsimd.BroadcastFloat32x16(ynnSqrt2)
	n0, n1, n2 := archsimd.BroadcastFloat32x16(ynnLogNum[0]), archsimd.BroadcastFloat32x16(ynnLogNum[1]), archsimd.BroadcastFloat32x16(ynnLogNum[2])
	d0, d1 := archsimd.BroadcastFloat32x16(ynnLogDen[0]), archsimd.BroadcastFloat32x16(ynnLogDen[1])
	ln2 := archsimd.BroadcastFloat32x16(ynnLn2)
	vin, vc1 := archsimd.BroadcastFloat32x16(in), archsimd.BroadcastFloat32x16(c1)
	// x*1 is x on a flushed operand but for an sNaN, which every path
	// below quiets anyway (e+1, the FMA with ln2), keeping its payload.
	mulIn := in != 1
	for off, end := 0, 4*n; off < end; off += 4 * 16 {
		v := flushSubnormal16(loadFloat32x16(px, off), sign, minNormal)
		if mulIn {
			v = v.Mul(vin)
		}
		u := v
		if log1p {
			u = flushSubnormal16(v.Add(one), sign, minNormal)
		}
		// ynnMant(u)
		ub := u.AsUint32x16()
		m := ub.And(mantMask).Or(oneBits).AsFloat32x16()
		mag := ub.AndNot(sign)
		e := mag.ShiftAllRight(23).AsInt32x16().Sub(bias).ConvertToFloat32()
		e = posInf.Merge(e, mag.Equal(infBits))
		e = u.Merge(e, u.IsNaN())
		e = negInf.Merge(e, mag.Equal(zeroBits))
		e = nan.Merge(e, u.Less(zero))
		big := m.Greater(sqrt2)
		e = e.Add(one).Merge(e, big)
		m = m.Mul(half).Merge(m, big)
		f := m.Sub(one)
		if log1p {
			f = v.Merge(f, e.Equal(zero))
		}
		// ynnLogTail
		f2 := f.Mul(f)
		num := n2.MulAdd(f, f2.MulAdd(n0, n1))
		den := d1.MulAdd(f, d0.MulAdd(f2, one))
		r := f2.MulAdd(num.Div(den), f)
		r = ln2.MulAdd(e, r)
		storeFloat32x16(flushSubnormal16(r.Mul(vc1), sign, minNormal), po, off)
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// ynnErfX16 runs ynnErf over the whole 16-lane vectors at the front of x
// and returns how many elements that was: both branches are computed and
// each lane's picked, as the scalar code's comparisons pick.
func ynnErfX16(x, out []float32, in, c0, c1 float32) int {
	n := len(x) &^ 15
	if n == 0 {
		return 0
	}
	out = out[:len(x)]
	px, po := f32Base(x, n), f32Base(out, n)
	sign := archsimd.BroadcastUint32x16(0x80000000)
	minNormal := archsimd.BroadcastUint32x16(0x00800000).AsFloat32x16()
	infBits := archsimd.BroadcastUint32x16(0x7f800000)
	lo, hi := archsimd.BroadcastFloat32x16(ynnExpLo), archsimd.BroadcastFloat32x16(ynnExpHi)
	log2e, round := archsimd.BroadcastFloat32x16(ynnLog2e), archsimd.BroadcastFloat32x16(ynnRound)
	ln2Hi, ln2Lo := archsimd.BroadcastFloat32x16(ynnLn2Hi), archsimd.BroadcastFloat32x16(ynnLn2Lo)
	o0, o1, o2 := archsimd.BroadcastFloat32x16(ynnExpOdd[0]), archsimd.BroadcastFloat32x16(ynnExpOdd[1]), archsimd.BroadcastFloat32x16(ynnExpOdd[2])
	e0, e1 := archsimd.BroadcastFloat32x16(ynnExpEven[0]), archsimd.BroadcastFloat32x16(ynnExpEven[1])
	e2, e3 := archsimd.BroadcastFloat32x16(ynnExpEven[2]), archsimd.BroadcastFloat32x16(ynnExpEven[3])
	bias := archsimd.BroadcastFloat32x16(ynnExpBias)
	one := archsimd.BroadcastFloat32x16(1)
	clamp, mid, small := archsimd.BroadcastFloat32x16(ynnErfClamp), archsimd.BroadcastFloat32x16(ynnErfMid), archsimd.BroadcastFloat32x16(ynnErfSmall)
	bc := archsimd.BroadcastFloat32x16
	p0, p1, p2, p3, p4, p5, p6 := bc(ynnErfP[0]), bc(ynnErfP[1]), bc(ynnErfP[2]), bc(ynnErfP[3]), bc(ynnErfP[4]), bc(ynnErfP[5]), bc(ynnErfP[6])
	a0, a1, a2c, a3, a4, a5, a6 := bc(ynnErfQ1[0]), bc(ynnErfQ1[1]), bc(ynnErfQ1[2]), bc(ynnErfQ1[3]), bc(ynnErfQ1[4]), bc(ynnErfQ1[5]), bc(ynnErfQ1[6])
	b0, b1, b2, b3, b4, b5, b6 := bc(ynnErfQ2[0]), bc(ynnErfQ2[1]), bc(ynnErfQ2[2]), bc(ynnErfQ2[3]), bc(ynnErfQ2[4]), bc(ynnErfQ2[5]), bc(ynnErfQ2[6])
	vin, vc0, vc1 := archsimd.BroadcastFloat32x16(in), archsimd.BroadcastFloat32x16(c0), archsimd.BroadcastFloat32x16(c1)
	// x*1 is x on a flushed operand but for an sNaN, which |v|'s
	// arithmetic below quiets anyway, keeping its payload.
	mulIn := in != 1
	for off, end := 0, 4*n; off < end; off += 4 * 16 {
		v := flushSubnormal16(loadFloat32x16(px, off), sign, minNormal)
		if mulIn {
			v = v.Mul(vin)
		}
		vb := v.AsUint32x16()
		abs := vb.AndNot(sign).AsFloat32x16()
		a := clamp.Merge(abs, clamp.Less(abs))
		a2 := a.Mul(a)
		// ynnExpParts(-a2), the negation a sign flip (a NaN's too)
		w := a2.AsUint32x16().Xor(sign).AsFloat32x16()
		t := lo.Merge(w, lo.Greater(w))
		t = hi.Merge(t, hi.Less(t))
		nn := t.Mul(log2e).Add(round).Sub(round)
		r := nn.MulAdd(ln2Hi, t)
		r = nn.MulAdd(ln2Lo, r)
		r2 := r.Mul(r)
		pa := o0.MulAdd(r2, o1).MulAdd(r2, o2)
		pb := e0.MulAdd(r2, e1).MulAdd(r2, e2).MulAdd(r2, e3)
		p := r.MulAdd(pa, pb)
		p = r2.MulAdd(p, r)
		s := nn.Add(bias).AsUint32x16().ShiftAllLeft(23).AsFloat32x16()
		s = w.Merge(s, w.IsNaN())
		sInf := s.AsUint32x16().AndNot(sign).Equal(infBits)
		e := s.Merge(flushSubnormal16(p.MulAdd(s, s), sign, minNormal), sInf)
		// Q1 or Q2 in a: the lane's own coefficients picked first, one
		// Horner chain (the same FMAs, lane by lane, as either polynomial's)
		lt := a.Less(mid)
		q := a.MulAdd(a0.Merge(b0, lt), a1.Merge(b1, lt))
		q = a.MulAdd(q, a2c.Merge(b2, lt))
		q = a.MulAdd(q, a3.Merge(b3, lt))
		q = a.MulAdd(q, a4.Merge(b4, lt))
		q = a.MulAdd(q, a5.Merge(b5, lt))
		q = a.MulAdd(q, a6.Merge(b6, lt))
		res := flushSubnormal16(one.Sub(q.Mul(e)), sign, minNormal)
		ps := a2.MulAdd(p0, p1).MulAdd(a2, p2)
		ps = ps.MulAdd(a2, p3).MulAdd(a2, p4).MulAdd(a2, p5).MulAdd(a2, p6)
		ps = flushSubnormal16(a.Mul(ps), sign, minNormal)
		res = ps.Merge(res, a.Less(small))
		res = res.AsUint32x16().AndNot(sign).Or(vb.And(sign)).AsFloat32x16()
		storeFloat32x16(flushSubnormal16(res.MulAdd(vc1, vc0), sign, minNormal), po, off)
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// ynnSimpleX16 runs rsqrt (1/sqrt of the flushed operand, flushed) or
// negate (0 - the flushed operand: SUBPS keeps a NaN's sign, and the
// result is never subnormal) over the whole 16-lane vectors at the front
// of x, as ynnVectorF32's 8-lane steps do, and returns how many elements
// that was.
func ynnSimpleX16(rsqrt bool, x, out []float32) int {
	n := len(x) &^ 15
	if n == 0 {
		return 0
	}
	out = out[:len(x)]
	px, po := f32Base(x, n), f32Base(out, n)
	sign := archsimd.BroadcastUint32x16(0x80000000)
	minNormal := archsimd.BroadcastUint32x16(0x00800000).AsFloat32x16()
	one, zero := archsimd.BroadcastFloat32x16(1), archsimd.BroadcastFloat32x16(0)
	if rsqrt {
		for off, end := 0, 4*n; off < end; off += 4 * 16 {
			v := flushSubnormal16(loadFloat32x16(px, off), sign, minNormal)
			storeFloat32x16(flushSubnormal16(one.Div(v.Sqrt()), sign, minNormal), po, off)
		}
	} else {
		for off, end := 0, 4*n; off < end; off += 4 * 16 {
			storeFloat32x16(zero.Sub(flushSubnormal16(loadFloat32x16(px, off), sign, minNormal)), po, off)
		}
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// ynnMinMaxX16 is ynnBinaryVectorF32 on 16 lanes: maximum (isMax) or
// minimum of the flushed operands, MAXPS/MINPS spelled as compare and
// blend so that a NaN in either operand gives the second.
func ynnMinMaxX16(isMax bool, a, b, out []float32) int {
	n := min(len(a), len(b), len(out)) &^ 15
	if n == 0 {
		return 0
	}
	pa, pb, po := f32Base(a, n), f32Base(b, n), f32Base(out, n)
	sign := archsimd.BroadcastUint32x16(0x80000000)
	minNormal := archsimd.BroadcastUint32x16(0x00800000).AsFloat32x16()
	if isMax {
		for off, end := 0, 4*n; off < end; off += 4 * 16 {
			x := flushSubnormal16(loadFloat32x16(pa, off), sign, minNormal)
			y := flushSubnormal16(loadFloat32x16(pb, off), sign, minNormal)
			storeFloat32x16(x.Merge(y, x.Greater(y)), po, off)
		}
	} else {
		for off, end := 0, 4*n; off < end; off += 4 * 16 {
			x := flushSubnormal16(loadFloat32x16(pa, off), sign, minNormal)
			y := flushSubnormal16(loadFloat32x16(pb, off), sign, minNormal)
			storeFloat32x16(x.Merge(y, x.Less(y)), po, off)
		}
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// ynnFlush8 is flush32 on 8 lanes, with sign (0x80000000) and minNormal
// (0x00800000) splatted by the caller.
func ynnFlush8(v archsimd.Float32x8, sign archsimd.Uint32x8, minNormal archsimd.Float32x8) archsimd.Float32x8 {
	b := v.AsUint32x8()
	return b.And(sign).Merge(b, b.AndNot(sign).AsFloat32x8().Less(minNormal)).AsFloat32x8()
}

// ynnLogX8 is ynnLogX16 on 8 lanes (AVX2 hosts), with its constants
// splatted once per call.
func ynnLogX8(log1p bool, x, out []float32, in, c1 float32) int {
	n := len(x) &^ 7
	if n == 0 {
		return 0
	}
	out = out[:len(x)]
	px, po := f32Base(x, n), f32Base(out, n)
	sign := archsimd.BroadcastUint32x8(0x80000000)
	minNormal := archsimd.BroadcastUint32x8(0x00800000).AsFloat32x8()
	infBits, zeroBits := archsimd.BroadcastUint32x8(0x7f800000), archsimd.BroadcastUint32x8(0)
	mantMask, oneBits := archsimd.BroadcastUint32x8(ynnMantMask), archsimd.BroadcastUint32x8(0x3f800000)
	bias := archsimd.BroadcastInt32x8(127)
	posInf, negInf := infBits.AsFloat32x8(), archsimd.BroadcastUint32x8(0xff800000).AsFloat32x8()
	nan, zero := archsimd.BroadcastFloat32x8(ynnLogNaN), archsimd.BroadcastFloat32x8(0)
	one, half, sqrt2 := archsimd.BroadcastFloat32x8(1), archsimd.BroadcastFloat32x8(0.5), archsimd.BroadcastFloat32x8(ynnSqrt2)
	n0, n1, n2 := archsimd.BroadcastFloat32x8(ynnLogNum[0]), archsimd.BroadcastFloat32x8(ynnLogNum[1]), archsimd.BroadcastFloat32x8(ynnLogNum[2])
	d0, d1 := archsimd.BroadcastFloat32x8(ynnLogDen[0]), archsimd.BroadcastFloat32x8(ynnLogDen[1])
	ln2 := archsimd.BroadcastFloat32x8(ynnLn2)
	vin, vc1 := archsimd.BroadcastFloat32x8(in), archsimd.BroadcastFloat32x8(c1)
	// x*1 is x on a flushed operand but for an sNaN, which every path
	// below quiets anyway (e+1, the FMA with ln2), keeping its payload.
	mulIn := in != 1
	for off, end := 0, 4*n; off < end; off += 4 * 8 {
		v := ynnFlush8(loadFloat32x8(px, off), sign, minNormal)
		if mulIn {
			v = v.Mul(vin)
		}
		u := v
		if log1p {
			u = ynnFlush8(v.Add(one), sign, minNormal)
		}
		// ynnMant(u)
		ub := u.AsUint32x8()
		m := ub.And(mantMask).Or(oneBits).AsFloat32x8()
		mag := ub.AndNot(sign)
		e := mag.ShiftAllRight(23).AsInt32x8().Sub(bias).ConvertToFloat32()
		e = posInf.Merge(e, mag.Equal(infBits))
		e = u.Merge(e, u.IsNaN())
		e = negInf.Merge(e, mag.Equal(zeroBits))
		e = nan.Merge(e, u.Less(zero))
		big := m.Greater(sqrt2)
		e = e.Add(one).Merge(e, big)
		m = m.Mul(half).Merge(m, big)
		f := m.Sub(one)
		if log1p {
			f = v.Merge(f, e.Equal(zero))
		}
		// ynnLogTail
		f2 := f.Mul(f)
		num := n2.MulAdd(f, f2.MulAdd(n0, n1))
		den := d1.MulAdd(f, d0.MulAdd(f2, one))
		r := f2.MulAdd(num.Div(den), f)
		r = ln2.MulAdd(e, r)
		storeFloat32x8(ynnFlush8(r.Mul(vc1), sign, minNormal), po, off)
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// ynnErfX8 is ynnErfX16 on 8 lanes (AVX2 hosts), with its constants
// splatted once per call.
func ynnErfX8(x, out []float32, in, c0, c1 float32) int {
	n := len(x) &^ 7
	if n == 0 {
		return 0
	}
	out = out[:len(x)]
	px, po := f32Base(x, n), f32Base(out, n)
	sign := archsimd.BroadcastUint32x8(0x80000000)
	minNormal := archsimd.BroadcastUint32x8(0x00800000).AsFloat32x8()
	infBits := archsimd.BroadcastUint32x8(0x7f800000)
	lo, hi := archsimd.BroadcastFloat32x8(ynnExpLo), archsimd.BroadcastFloat32x8(ynnExpHi)
	log2e, round := archsimd.BroadcastFloat32x8(ynnLog2e), archsimd.BroadcastFloat32x8(ynnRound)
	ln2Hi, ln2Lo := archsimd.BroadcastFloat32x8(ynnLn2Hi), archsimd.BroadcastFloat32x8(ynnLn2Lo)
	o0, o1, o2 := archsimd.BroadcastFloat32x8(ynnExpOdd[0]), archsimd.BroadcastFloat32x8(ynnExpOdd[1]), archsimd.BroadcastFloat32x8(ynnExpOdd[2])
	e0, e1 := archsimd.BroadcastFloat32x8(ynnExpEven[0]), archsimd.BroadcastFloat32x8(ynnExpEven[1])
	e2, e3 := archsimd.BroadcastFloat32x8(ynnExpEven[2]), archsimd.BroadcastFloat32x8(ynnExpEven[3])
	bias := archsimd.BroadcastFloat32x8(ynnExpBias)
	one := archsimd.BroadcastFloat32x8(1)
	clamp, mid, small := archsimd.BroadcastFloat32x8(ynnErfClamp), archsimd.BroadcastFloat32x8(ynnErfMid), archsimd.BroadcastFloat32x8(ynnErfSmall)
	bc := archsimd.BroadcastFloat32x8
	p0, p1, p2, p3, p4, p5, p6 := bc(ynnErfP[0]), bc(ynnErfP[1]), bc(ynnErfP[2]), bc(ynnErfP[3]), bc(ynnErfP[4]), bc(ynnErfP[5]), bc(ynnErfP[6])
	a0, a1, a2c, a3, a4, a5, a6 := bc(ynnErfQ1[0]), bc(ynnErfQ1[1]), bc(ynnErfQ1[2]), bc(ynnErfQ1[3]), bc(ynnErfQ1[4]), bc(ynnErfQ1[5]), bc(ynnErfQ1[6])
	b0, b1, b2, b3, b4, b5, b6 := bc(ynnErfQ2[0]), bc(ynnErfQ2[1]), bc(ynnErfQ2[2]), bc(ynnErfQ2[3]), bc(ynnErfQ2[4]), bc(ynnErfQ2[5]), bc(ynnErfQ2[6])
	vin, vc0, vc1 := archsimd.BroadcastFloat32x8(in), archsimd.BroadcastFloat32x8(c0), archsimd.BroadcastFloat32x8(c1)
	// x*1 is x on a flushed operand but for an sNaN, which |v|'s
	// arithmetic below quiets anyway, keeping its payload.
	mulIn := in != 1
	for off, end := 0, 4*n; off < end; off += 4 * 8 {
		v := ynnFlush8(loadFloat32x8(px, off), sign, minNormal)
		if mulIn {
			v = v.Mul(vin)
		}
		vb := v.AsUint32x8()
		abs := vb.AndNot(sign).AsFloat32x8()
		a := clamp.Merge(abs, clamp.Less(abs))
		a2 := a.Mul(a)
		// ynnExpParts(-a2), the negation a sign flip (a NaN's too)
		w := a2.AsUint32x8().Xor(sign).AsFloat32x8()
		t := lo.Merge(w, lo.Greater(w))
		t = hi.Merge(t, hi.Less(t))
		nn := t.Mul(log2e).Add(round).Sub(round)
		r := nn.MulAdd(ln2Hi, t)
		r = nn.MulAdd(ln2Lo, r)
		r2 := r.Mul(r)
		pa := o0.MulAdd(r2, o1).MulAdd(r2, o2)
		pb := e0.MulAdd(r2, e1).MulAdd(r2, e2).MulAdd(r2, e3)
		p := r.MulAdd(pa, pb)
		p = r2.MulAdd(p, r)
		s := nn.Add(bias).AsUint32x8().ShiftAllLeft(23).AsFloat32x8()
		s = w.Merge(s, w.IsNaN())
		sInf := s.AsUint32x8().AndNot(sign).Equal(infBits)
		e := s.Merge(ynnFlush8(p.MulAdd(s, s), sign, minNormal), sInf)
		// Q1 or Q2 in a: the lane's own coefficients picked first, one
		// Horner chain (the same FMAs, lane by lane, as either polynomial's)
		lt := a.Less(mid)
		q := a.MulAdd(a0.Merge(b0, lt), a1.Merge(b1, lt))
		q = a.MulAdd(q, a2c.Merge(b2, lt))
		q = a.MulAdd(q, a3.Merge(b3, lt))
		q = a.MulAdd(q, a4.Merge(b4, lt))
		q = a.MulAdd(q, a5.Merge(b5, lt))
		q = a.MulAdd(q, a6.Merge(b6, lt))
		res := ynnFlush8(one.Sub(q.Mul(e)), sign, minNormal)
		ps := a2.MulAdd(p0, p1).MulAdd(a2, p2)
		ps = ps.MulAdd(a2, p3).MulAdd(a2, p4).MulAdd(a2, p5).MulAdd(a2, p6)
		ps = ynnFlush8(a.Mul(ps), sign, minNormal)
		res = ps.Merge(res, a.Less(small))
		res = res.AsUint32x8().AndNot(sign).Or(vb.And(sign)).AsFloat32x8()
		storeFloat32x8(ynnFlush8(res.MulAdd(vc1, vc0), sign, minNormal), po, off)
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// ynnExpFamilyX8 is ynnExpFamilyX16 on 8 lanes (AVX2 hosts), with its
// constants splatted once per call.
func ynnExpFamilyX8(kind int, x, out []float32, in, c0, c1 float32) int {
	n := len(x) &^ 7
	if n == 0 {
		return 0
	}
	out = out[:len(x)]
	px, po := f32Base(x, n), f32Base(out, n)
	sign := archsimd.BroadcastUint32x8(0x80000000)
	minNormal := archsimd.BroadcastUint32x8(0x00800000).AsFloat32x8()
	infBits := archsimd.BroadcastUint32x8(0x7f800000)
	lo, hi := archsimd.BroadcastFloat32x8(ynnExpLo), archsimd.BroadcastFloat32x8(ynnExpHi)
	log2e, round := archsimd.BroadcastFloat32x8(ynnLog2e), archsimd.BroadcastFloat32x8(ynnRound)
	ln2Hi, ln2Lo := archsimd.BroadcastFloat32x8(ynnLn2Hi), archsimd.BroadcastFloat32x8(ynnLn2Lo)
	o0, o1, o2 := archsimd.BroadcastFloat32x8(ynnExpOdd[0]), archsimd.BroadcastFloat32x8(ynnExpOdd[1]), archsimd.BroadcastFloat32x8(ynnExpOdd[2])
	e0, e1 := archsimd.BroadcastFloat32x8(ynnExpEven[0]), archsimd.BroadcastFloat32x8(ynnExpEven[1])
	e2, e3 := archsimd.BroadcastFloat32x8(ynnExpEven[2]), archsimd.BroadcastFloat32x8(ynnExpEven[3])
	bias := archsimd.BroadcastFloat32x8(ynnExpBias)
	one, two, lim := archsimd.BroadcastFloat32x8(1), archsimd.BroadcastFloat32x8(2), archsimd.BroadcastFloat32x8(80)
	if kind == ynnKLogistic {
		in, c1 = -1, 1
	}
	vin, vc0, vc1 := archsimd.BroadcastFloat32x8(in), archsimd.BroadcastFloat32x8(c0), archsimd.BroadcastFloat32x8(c1)
	// x*1 is x, bit for bit, on flushed operands (NaNs keep their payload),
	// and a flushed value flushed again is itself: unit scalars are skipped.
	mulIn, mulOut := in != 1, c1 != 1
	for off, end := 0, 4*n; off < end; off += 4 * 8 {
		// v = flush(x) * in (tanh: y = min(80, v+v))
		b := loadFloat32x8(px, off).AsUint32x8()
		xf := b.And(sign).Merge(b, b.AndNot(sign).AsFloat32x8().Less(minNormal)).AsFloat32x8()
		v := xf
		if mulIn {
			v = xf.Mul(vin)
		}
		if kind == ynnKTanh {
			d := v.Add(v)
			v = lim.Merge(d, lim.Less(d))
		}
		// ynnExpParts
		t := lo.Merge(v, lo.Greater(v))
		t = hi.Merge(t, hi.Less(t))
		nn := t.Mul(log2e).Add(round).Sub(round)
		r := nn.MulAdd(ln2Hi, t)
		r = nn.MulAdd(ln2Lo, r)
		r2 := r.Mul(r)
		pa := o0.MulAdd(r2, o1).MulAdd(r2, o2)
		pb := e0.MulAdd(r2, e1).MulAdd(r2, e2).MulAdd(r2, e3)
		p := r.MulAdd(pa, pb)
		p = r2.MulAdd(p, r)
		s := nn.Add(bias).AsUint32x8().ShiftAllLeft(23).AsFloat32x8()
		s = v.Merge(s, v.IsNaN())
		sInf := s.AsUint32x8().AndNot(sign).Equal(infBits)
		var e archsimd.Float32x8
		if kind == ynnKExp || kind == ynnKLogistic {
			e = p.MulAdd(s, s)
		} else {
			e = p.MulAdd(s, s.Sub(one))
		}
		eb := e.AsUint32x8()
		e = s.Merge(eb.And(sign).Merge(eb, eb.AndNot(sign).AsFloat32x8().Less(minNormal)).AsFloat32x8(), sInf)
		switch kind {
		case ynnKExp, ynnKExpm1:
			if !mulOut {
				storeFloat32x8(e, po, off)
				continue
			}
			e = e.Mul(vc1)
		case ynnKLogistic:
			e = e.Add(one) // (c1 is 1: e*c1 flushed is e)
			eb = e.AsUint32x8()
			e = eb.And(sign).Merge(eb, eb.AndNot(sign).AsFloat32x8().Less(minNormal)).AsFloat32x8()
			e = one.Div(e)
		case ynnKTanh:
			q := e.Div(e.Add(two))
			qb := q.AsUint32x8()
			q = qb.And(sign).Merge(qb, qb.AndNot(sign).AsFloat32x8().Less(minNormal)).AsFloat32x8()
			e = q.MulAdd(vc1, vc0)
		}
		eb = e.AsUint32x8()
		storeFloat32x8(eb.And(sign).Merge(eb, eb.AndNot(sign).AsFloat32x8().Less(minNormal)).AsFloat32x8(), po, off)
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// ynnSimpleX8 is ynnSimpleX16 on 8 lanes (AVX2 hosts).
func ynnSimpleX8(rsqrt bool, x, out []float32) int {
	n := len(x) &^ 7
	if n == 0 {
		return 0
	}
	out = out[:len(x)]
	px, po := f32Base(x, n), f32Base(out, n)
	sign := archsimd.BroadcastUint32x8(0x80000000)
	minNormal := archsimd.BroadcastUint32x8(0x00800000).AsFloat32x8()
	one, zero := archsimd.BroadcastFloat32x8(1), archsimd.BroadcastFloat32x8(0)
	if rsqrt {
		for off, end := 0, 4*n; off < end; off += 4 * 8 {
			v := ynnFlush8(loadFloat32x8(px, off), sign, minNormal)
			storeFloat32x8(ynnFlush8(one.Div(v.Sqrt()), sign, minNormal), po, off)
		}
	} else {
		for off, end := 0, 4*n; off < end; off += 4 * 8 {
			storeFloat32x8(zero.Sub(ynnFlush8(loadFloat32x8(px, off), sign, minNormal)), po, off)
		}
	}
	archsimd.ClearAVXUpperBits()
	return n
}
