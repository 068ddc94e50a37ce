//go:build goexperiment.simd && amd64

package eval

// Code generated from the 8-lane kernels by substituting the 4-lane types
// (Float64x8 -> Float64x4, FloorScaled(0) -> Floor(), ...); edit both.

import (
	"simd/archsimd"
	"unsafe"
)

func ldK8(i int) archsimd.Float64x8 { return archsimd.LoadFloat64x8(&xlaF64K[i]) }

func loadFloat64x8(p unsafe.Pointer, off int) archsimd.Float64x8 {
	return archsimd.LoadFloat64x8((*[8]float64)(unsafe.Add(p, off)))
}

func storeFloat64x8(v archsimd.Float64x8, p unsafe.Pointer, off int) {
	v.Store((*[8]float64)(unsafe.Add(p, off)))
}

// pow2X8 is 2^b for integral b in [-1022, 1023].
func pow2X8(b archsimd.Float64x8) archsimd.Float64x8 {
	return b.Add(ldK8(x64Magic)).AsUint64x8().ShiftAllLeft(52).AsFloat64x8()
}

// expCoreX8 is expCore64 on 8 lanes (NaN lanes are garbage).
func expCoreX8(x archsimd.Float64x8) (v, s archsimd.Float64x8) {
	c := x.Min(ldK8(x64ExpHi)).Max(ldK8(x64ExpLo))
	n := c.MulAdd(ldK8(x64Log2e), ldK8(x64Half)).FloorScaled(0)
	g := n.MulAdd(ldK8(x64NegC1), c)
	g = n.MulAdd(ldK8(x64NegC2), g)
	g2 := g.Mul(g)
	p := g2.MulAdd(ldK8(x64P0), ldK8(x64P1)).MulAdd(g2, ldK8(x64One)).Mul(g)
	q := g2.MulAdd(ldK8(x64Q0), ldK8(x64Q1)).MulAdd(g2, ldK8(x64Q2)).MulAdd(g2, ldK8(x64Two))
	y := p.Div(q.Sub(p)).MulAdd(ldK8(x64Two), ldK8(x64One))
	b := n.Mul(ldK8(x64Quarter)).FloorScaled(0)
	s1 := pow2X8(b)
	v = y.Mul(s1).Mul(s1).Mul(s1)
	s = pow2X8(n.Sub(b.Mul(ldK8(x64Three))))
	return v, s
}

// expX8 is exp64 on 8 lanes.
func expX8(x archsimd.Float64x8) archsimd.Float64x8 {
	v, s := expCoreX8(x)
	r := v.Mul(s)
	var zero archsimd.Float64x8
	r = zero.Merge(r, r.Less(ldK8(x64MinNormal)).Or(x.Less(ldK8(x64ExpLo))))
	r = ldK8(x64Inf).Merge(r, x.Greater(ldK8(x64ExpHi)))
	return x.Add(x).Merge(r, x.IsNaN())
}

// tanhX8 is tanh64 on 8 lanes.
func tanhX8(x archsimd.Float64x8) archsimd.Float64x8 {
	c := x.Min(ldK8(x64TanhClamp)).Max(ldK8(x64NegTanhClamp))
	c2 := c.Mul(c)
	p, q := ldK8(x64TanhNum), ldK8(x64TanhDen)
	for i := 1; i < len(tanh64Num); i++ {
		p = c2.MulAdd(p, ldK8(x64TanhNum+i))
		q = c2.MulAdd(q, ldK8(x64TanhDen+i))
	}
	r := c.Mul(p).Div(q)
	ax := x.AsUint64x8().And(ldK8(x64Abs).AsUint64x8())
	sign1 := x.AsUint64x8().AndNot(ldK8(x64Abs).AsUint64x8()).Or(ldK8(x64One).AsUint64x8()).AsFloat64x8()
	r = sign1.Merge(r, ax.AsFloat64x8().GreaterEqual(ldK8(x64Twenty)))
	return x.Add(x).Merge(r, x.IsNaN())
}

// expm1X8 is expm1_64 on 8 lanes.
func expm1X8(x archsimd.Float64x8) archsimd.Float64x8 {
	e := expX8(x)
	h := x.Mul(ldK8(x64Half))
	r := tanhX8(h).Mul(e.Add(ldK8(x64One)))
	abs := ldK8(x64Abs).AsUint64x8()
	r = e.Add(ldK8(x64NegOne)).Merge(r, x.AsUint64x8().And(abs).AsFloat64x8().Greater(ldK8(x64Half)))
	r = x.Merge(r, h.AsUint64x8().And(abs).AsFloat64x8().Less(ldK8(x64MinNormal)))
	return x.Add(x).Merge(r, x.IsNaN())
}

// logisticX8 is logistic64 on 8 lanes.
func logisticX8(x archsimd.Float64x8) archsimd.Float64x8 {
	var zero archsimd.Float64x8
	z := x.AsUint64x8().Xor(ldK8(x64Abs).AsUint64x8().Not()).AsFloat64x8() // -x, NaN too
	v, s := expCoreX8(z)
	one := ldK8(x64One)
	r := one.Div(v.MulAdd(s, one))
	r = one.Merge(r, z.Less(ldK8(x64ExpLo)))
	r = zero.Merge(r, z.Greater(ldK8(x64ExpHi)))
	return z.Add(z).Merge(r, x.IsNaN())
}

func xlaF64LoopX8(op string, x, o []float64) int {
	n := len(x) &^ 7
	if n == 0 {
		return 0
	}
	o = o[:len(x)]
	px, po := f64Base(x, n), f64Base(o, n)
	ld := func(off int) archsimd.Float64x8 { return loadFloat64x8(px, off) }
	st := func(v archsimd.Float64x8, off int) { storeFloat64x8(v, po, off) }
	end := 8 * n
	switch op {
	case "exponential":
		for off := 0; off < end; off += 64 {
			st(expX8(ld(off)), off)
		}
	case "tanh":
		for off := 0; off < end; off += 64 {
			st(tanhX8(ld(off)), off)
		}
	case "exponential-minus-one":
		for off := 0; off < end; off += 64 {
			st(expm1X8(ld(off)), off)
		}
	case "logistic":
		for off := 0; off < end; off += 64 {
			st(logisticX8(ld(off)), off)
		}
	}
	archsimd.ClearAVXUpperBits() // the caller's scalar SSE code runs next
	return n
}

func ldK4(i int) archsimd.Float64x4 { return archsimd.LoadFloat64x4((*[4]float64)(xlaF64K[i][:4])) }

func loadFloat64x4(p unsafe.Pointer, off int) archsimd.Float64x4 {
	return archsimd.LoadFloat64x4((*[4]float64)(unsafe.Add(p, off)))
}

func storeFloat64x4(v archsimd.Float64x4, p unsafe.Pointer, off int) {
	v.Store((*[4]float64)(unsafe.Add(p, off)))
}

// pow2X4 is 2^b for integral b in [-1022, 1023].
func pow2X4(b archsimd.Float64x4) archsimd.Float64x4 {
	return b.Add(ldK4(x64Magic)).AsUint64x4().ShiftAllLeft(52).AsFloat64x4()
}

// expCoreX4 is expCore64 on 4 lanes (NaN lanes are garbage).
func expCoreX4(x archsimd.Float64x4) (v, s archsimd.Float64x4) {
	c := x.Min(ldK4(x64ExpHi)).Max(ldK4(x64ExpLo))
	n := c.MulAdd(ldK4(x64Log2e), ldK4(x64Half)).Floor()
	g := n.MulAdd(ldK4(x64NegC1), c)
	g = n.MulAdd(ldK4(x64NegC2), g)
	g2 := g.Mul(g)
	p := g2.MulAdd(ldK4(x64P0), ldK4(x64P1)).MulAdd(g2, ldK4(x64One)).Mul(g)
	q := g2.MulAdd(ldK4(x64Q0), ldK4(x64Q1)).MulAdd(g2, ldK4(x64Q2)).MulAdd(g2, ldK4(x64Two))
	y := p.Div(q.Sub(p)).MulAdd(ldK4(x64Two), ldK4(x64One))
	b := n.Mul(ldK4(x64Quarter)).Floor()
	s1 := pow2X4(b)
	v = y.Mul(s1).Mul(s1).Mul(s1)
	s = pow2X4(n.Sub(b.Mul(ldK4(x64Three))))
	return v, s
}

// expX4 is exp64 on 4 lanes.
func expX4(x archsimd.Float64x4) archsimd.Float64x4 {
	v, s := expCoreX4(x)
	r := v.Mul(s)
	var zero archsimd.Float64x4
	r = zero.Merge(r, r.Less(ldK4(x64MinNormal)).Or(x.Less(ldK4(x64ExpLo))))
	r = ldK4(x64Inf).Merge(r, x.Greater(ldK4(x64ExpHi)))
	return x.Add(x).Merge(r, x.IsNaN())
}

// tanhX4 is tanh64 on 4 lanes.
func tanhX4(x archsimd.Float64x4) archsimd.Float64x4 {
	c := x.Min(ldK4(x64TanhClamp)).Max(ldK4(x64NegTanhClamp))
	c2 := c.Mul(c)
	p, q := ldK4(x64TanhNum), ldK4(x64TanhDen)
	for i := 1; i < len(tanh64Num); i++ {
		p = c2.MulAdd(p, ldK4(x64TanhNum+i))
		q = c2.MulAdd(q, ldK4(x64TanhDen+i))
	}
	r := c.Mul(p).Div(q)
	ax := x.AsUint64x4().And(ldK4(x64Abs).AsUint64x4())
	sign1 := x.AsUint64x4().AndNot(ldK4(x64Abs).AsUint64x4()).Or(ldK4(x64One).AsUint64x4()).AsFloat64x4()
	r = sign1.Merge(r, ax.AsFloat64x4().GreaterEqual(ldK4(x64Twenty)))
	return x.Add(x).Merge(r, x.IsNaN())
}

// expm1X4 is expm1_64 on 4 lanes.
func expm1X4(x archsimd.Float64x4) archsimd.Float64x4 {
	e := expX4(x)
	h := x.Mul(ldK4(x64Half))
	r := tanhX4(h).Mul(e.Add(ldK4(x64One)))
	abs := ldK4(x64Abs).AsUint64x4()
	r = e.Add(ldK4(x64NegOne)).Merge(r, x.AsUint64x4().And(abs).AsFloat64x4().Greater(ldK4(x64Half)))
	r = x.Merge(r, h.AsUint64x4().And(abs).AsFloat64x4().Less(ldK4(x64MinNormal)))
	return x.Add(x).Merge(r, x.IsNaN())
}

// logisticX4 is logistic64 on 4 lanes.
func logisticX4(x archsimd.Float64x4) archsimd.Float64x4 {
	var zero archsimd.Float64x4
	z := x.AsUint64x4().Xor(ldK4(x64Abs).AsUint64x4().Not()).AsFloat64x4() // -x, NaN too
	v, s := expCoreX4(z)
	one := ldK4(x64One)
	r := one.Div(v.MulAdd(s, one))
	r = one.Merge(r, z.Less(ldK4(x64ExpLo)))
	r = zero.Merge(r, z.Greater(ldK4(x64ExpHi)))
	return z.Add(z).Merge(r, x.IsNaN())
}

func xlaF64LoopX4(op string, x, o []float64) int {
	n := len(x) &^ 3
	if n == 0 {
		return 0
	}
	o = o[:len(x)]
	px, po := f64Base(x, n), f64Base(o, n)
	ld := func(off int) archsimd.Float64x4 { return loadFloat64x4(px, off) }
	st := func(v archsimd.Float64x4, off int) { storeFloat64x4(v, po, off) }
	end := 8 * n
	switch op {
	case "exponential":
		for off := 0; off < end; off += 32 {
			st(expX4(ld(off)), off)
		}
	case "tanh":
		for off := 0; off < end; off += 32 {
			st(tanhX4(ld(off)), off)
		}
	case "exponential-minus-one":
		for off := 0; off < end; off += 32 {
			st(expm1X4(ld(off)), off)
		}
	case "logistic":
		for off := 0; off < end; off += 32 {
			st(logisticX4(ld(off)), off)
		}
	}
	archsimd.ClearAVXUpperBits() // the caller's scalar SSE code runs next
	return n
}
