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
