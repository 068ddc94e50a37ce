//go:build goexperiment.simd && amd64

package eval

import (
	"simd/archsimd"
	"unsafe"
)

// The exp family of ynn_math64.go (exp, expm1, tanh) four f64 lanes at a
// time (AVX2+FMA): the scalar code's operations lane by lane, a MulAdd
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
	}
	return 0
}

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
