//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

// The YNNPACK kernels of ynn_math.go on 8 lanes (AVX2+FMA, which AVX-512
// hosts run too): the same operations, a MulAdd where the scalar code calls
// fma32, a plain Mul/Add/Div where it writes one. MINPS/MAXPS are spelled
// as compare and blend (the compiler may swap a Min's operands, which moves
// where a NaN goes), flush-to-zero as a compare of the magnitude. Held to
// the scalar code bit for bit by TestYNNMathVectorMatchesScalar.

var ynnVectorOK = archsimd.X86.AVX2() && archsimd.X86.FMA()

type ynnF32x8 = archsimd.Float32x8

func ynnSplat(v float32) ynnF32x8 { return archsimd.BroadcastFloat32x8(v) }

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

func ynnIsInfV(v ynnF32x8) archsimd.Mask32x8 {
	abs := v.AsUint32x8().And(archsimd.BroadcastUint32x8(0x7fffffff)).AsFloat32x8()
	return abs.Equal(ynnSplatBits(0x7f800000))
}

// ynnExpPartsV is ynnExpParts lane by lane.
func ynnExpPartsV(v ynnF32x8) (p, s ynnF32x8) {
	t := ynnMinV(ynnSplat(ynnExpHi), ynnMaxV(ynnSplat(ynnExpLo), v))
	round := ynnSplat(ynnRound)
	n := t.Mul(ynnSplat(ynnLog2e)).Add(round).Sub(round)
	r := n.MulAdd(ynnSplat(ynnLn2Hi), t)
	r = n.MulAdd(ynnSplat(ynnLn2Lo), r)
	r2 := r.Mul(r)
	pa := ynnSplat(ynnExpOdd[0]).MulAdd(r2, ynnSplat(ynnExpOdd[1])).MulAdd(r2, ynnSplat(ynnExpOdd[2]))
	pb := ynnSplat(ynnExpEven[0]).MulAdd(r2, ynnSplat(ynnExpEven[1])).MulAdd(r2, ynnSplat(ynnExpEven[2])).MulAdd(r2, ynnSplat(ynnExpEven[3]))
	p = r.MulAdd(pa, pb)
	p = r2.MulAdd(p, r)
	s = n.Add(ynnSplat(ynnExpBias)).AsUint32x8().ShiftAllLeft(23).AsFloat32x8()
	s = v.Merge(s, v.IsNaN())
	return p, s
}

// ynnVectorF32 runs op over the whole vectors at the front of x and
// returns how many elements that was (0: no vector form).
func ynnVectorF32(o YNNOp, x, out []float32) int {
	if !ynnVectorOK {
		return 0
	}
	if ynnVector16OK {
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
		}
		if kind >= 0 {
			return ynnExpFamilyX16(kind, x, out, o.In, o.C0, o.C1)
		}
	}
	n := len(x) &^ 7
	if n == 0 {
		return 0
	}
	var step func(v ynnF32x8) ynnF32x8
	in, c0, c1 := ynnSplat(o.In), ynnSplat(o.C0), ynnSplat(o.C1)
	one := ynnSplat(1)
	switch o.Op {
	case "exp", "logistic":
		if o.Op == "logistic" {
			in, c1 = ynnSplat(-1), one
		}
		step = func(x ynnF32x8) ynnF32x8 {
			v := ynnFlushV(x).Mul(in)
			p, s := ynnExpPartsV(v)
			e := s.Merge(ynnFlushV(p.MulAdd(s, s)), ynnIsInfV(s))
			e = ynnFlushV(e.Mul(c1))
			if o.Op == "logistic" {
				e = ynnFlushV(one.Div(ynnFlushV(e.Add(one))))
			}
			return e
		}
	case "expm1":
		step = func(x ynnF32x8) ynnF32x8 {
			v := ynnFlushV(x).Mul(in)
			p, s := ynnExpPartsV(v)
			e := s.Merge(ynnFlushV(p.MulAdd(s, s.Sub(one))), ynnIsInfV(s))
			return ynnFlushV(e.Mul(c1))
		}
	case "tanh":
		two, lim := ynnSplat(2), ynnSplat(80)
		step = func(x ynnF32x8) ynnF32x8 {
			v := ynnFlushV(x).Mul(in)
			y := ynnMinV(lim, v.Add(v))
			p, s := ynnExpPartsV(y)
			e := s.Merge(ynnFlushV(p.MulAdd(s, s.Sub(one))), ynnIsInfV(s))
			q := ynnFlushV(e.Div(e.Add(two)))
			return ynnFlushV(q.MulAdd(c1, c0))
		}
	case "rsqrt":
		step = func(x ynnF32x8) ynnF32x8 {
			return ynnFlushV(one.Div(ynnFlushV(x).Sqrt()))
		}
	case "negate":
		// 0 - x on the flushed operand (SUBPS: a NaN comes out as itself,
		// quieted, not with its sign flipped); the result is never
		// subnormal, so it needs no flush.
		zero := ynnSplat(0)
		step = func(x ynnF32x8) ynnF32x8 { return zero.Sub(ynnFlushV(x)) }
	default:
		return 0
	}
	px, po := f32Base(x, n), f32Base(out, n)
	for off, end := 0, 4*n; off < end; off += 4 * 8 {
		storeFloat32x8(step(loadFloat32x8(px, off)), po, off)
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// ynnBinaryVectorF32 runs the binary op (maximum, minimum) over the whole
// vectors at the front of a and b, as YNNOp.binary does element by element
// (operands flushed, MAXPS/MINPS), and returns how many elements that was
// (0: no vector form).
func ynnBinaryVectorF32(o YNNOp, a, b, out []float32) int {
	if !ynnVectorOK {
		return 0
	}
	isMax := o.Op == "maximum"
	if !isMax && o.Op != "minimum" {
		return 0
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

// ynnVector16OK: the 16-lane forms below (AVX-512F), the same operations
// lane by lane as the 8-lane ones, with every constant splatted once per
// call and the op's loop written out (no per-vector closure call): 2048
// exps had taken 3-5 ns an element through the 8-lane step function.
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
