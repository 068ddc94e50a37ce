//go:build goexperiment.simd && amd64

package eval

// XLA:CPU's f64 exp, tanh, expm1 and logistic (xlamath64.go) a vector at a
// time: the same operations in the same order, each FMA where the scalar
// kernel calls math.FMA, so every lane has the scalar kernel's bits (XLA:CPU
// itself runs them 8 lanes wide on AVX-512 and 4 on AVX2; the results do not
// depend on the width). Clamps use MINPD/MAXPD, whose NaN rule differs from
// XLA's selects; NaN lanes are put back at the end as x+x (x quieted). 2^b
// is built from b+1023 by adding 2^52 and shifting the low bits into the
// exponent. TestXLAMathF64VectorMatchesScalar holds each width to the scalar
// kernels.

import (
	"math"
	"simd/archsimd"
	"unsafe"
)

// xlaF64Lanes is the vector width of the f64 kernels below: 8 (AVX-512), 4
// (AVX2+FMA) or 0 (scalar only). Tests set it to each width the CPU runs.
var xlaF64Lanes = defaultXLAF64Lanes()

func defaultXLAF64Lanes() int {
	switch {
	case !archsimd.X86.FMA() || !archsimd.X86.AVX2():
		return 0
	case archsimd.X86.AVX512():
		return 8
	}
	return 4
}

// xlaF64LaneWidths lists the widths this CPU runs, widest first, then 0.
func xlaF64LaneWidths() []int {
	var ws []int
	if defaultXLAF64Lanes() == 8 {
		ws = append(ws, 8)
	}
	if defaultXLAF64Lanes() != 0 {
		ws = append(ws, 4)
	}
	return append(ws, 0)
}

// xlaVectorF64 returns op's vector loop at the current width, or nil. It
// computes the whole vectors at the front of x and returns how many
// elements that was.
func xlaVectorF64(op string) func(x, o []float64) int {
	switch op {
	case "exponential", "tanh", "exponential-minus-one", "logistic":
	default:
		return nil
	}
	return func(x, o []float64) int {
		switch xlaF64Lanes {
		case 8:
			return xlaF64LoopX8(op, x, o)
		case 4:
			return xlaF64LoopX4(op, x, o)
		}
		return 0
	}
}

// f64Base returns the address of s[0] after checking that s has at least
// n > 0 elements.
func f64Base(s []float64, n int) unsafe.Pointer { return unsafe.Pointer(&s[:n][0]) }

// Constants of the kernels, eight lanes each (loaded, not broadcast).
const (
	x64ExpLo = iota
	x64ExpHi
	x64Log2e
	x64Half
	x64NegC1
	x64NegC2
	x64P0
	x64P1
	x64One
	x64Q0
	x64Q1
	x64Q2
	x64Two
	x64Quarter
	x64Three
	x64Magic // 2^52 + 1023: b + this has b+1023 in its low bits
	x64Inf
	x64MinNormal
	x64TanhClamp
	x64NegTanhClamp
	x64Twenty
	x64NegOne
	x64NegHalf
	x64Abs // bits: all but the sign
	x64TanhNum
	x64TanhDen = x64TanhNum + len(tanh64Num)
	x64Count   = x64TanhDen + len(tanh64Den)
)

var xlaF64K = func() (t [x64Count][8]float64) {
	v := [x64Count]float64{x64ExpLo: exp64Lo, x64ExpHi: exp64Hi, x64Log2e: exp64Log2e, x64Half: 0.5,
		x64NegC1: exp64NegC1, x64NegC2: exp64NegC2, x64P0: exp64P[0], x64P1: exp64P[1], x64One: 1,
		x64Q0: exp64Q[0], x64Q1: exp64Q[1], x64Q2: exp64Q[2], x64Two: 2, x64Quarter: 0.25, x64Three: 3,
		x64Magic: 0x1p52 + 1023, x64Inf: math.Inf(1), x64MinNormal: f64MinNormal, x64TanhClamp: tanh64Clamp,
		x64NegTanhClamp: -tanh64Clamp, x64Twenty: 20, x64NegOne: -1, x64NegHalf: -0.5, x64Abs: math.Float64frombits(1<<63 - 1)}
	copy(v[x64TanhNum:], tanh64Num[:])
	copy(v[x64TanhDen:], tanh64Den[:])
	for i := range t {
		for l := range t[i] {
			t[i][l] = v[i]
		}
	}
	return t
}()

// rsqrtF64OnCPU is whether XLA:CPU builds f64 rsqrt on VRSQRT14PD here (it
// does on AVX-512 hosts; on others it divides 1 by sqrt(x), as the scalar
// kernel does) and this build can run it.
var rsqrtF64OnCPU = archsimd.X86.AVX512()

// xlaEstimateF64 returns f64 rsqrt's kernel on AVX-512 hosts: XLA:CPU's
// rsqrt intrinsic (xla/codegen/intrinsic/rsqrt.cc) there is VRSQRT14PD's
// estimate y refined by two Newton steps r = fma(r*-0.5, fma(x*r, r, -1),
// r) for positive normal x (and NaN), y itself for zeros, negatives,
// subnormals (flushed first: ±inf) and +inf. The estimate table is the
// CPU's own, so this matches XLA:CPU on the same kind of CPU.
func xlaEstimateF64(op string) func(x, o []float64) {
	if op != "rsqrt" || !rsqrtF64OnCPU {
		return nil
	}
	return xlaRsqrtF64
}

func xlaRsqrtF64(x, o []float64) {
	n := rsqrtXLAF64X8(x, o)
	if n == len(x) {
		return
	}
	var in, out [8]float64
	copy(in[:], x[n:])
	rsqrtXLAF64X8(in[:], out[:])
	copy(o[n:len(x)], out[:])
}

func rsqrtXLAF64X8(x, o []float64) int {
	n := len(x) &^ 7
	if n == 0 {
		return 0
	}
	o = o[:len(x)]
	px, po := f64Base(x, n), f64Base(o, n)
	negHalf, negOne, minNormal, inf := ldK8(x64NegHalf), ldK8(x64NegOne), ldK8(x64MinNormal), ldK8(x64Inf)
	for off, end := 0, 8*n; off < end; off += 64 {
		v := loadFloat64x8(px, off)
		y := v.ReciprocalSqrt()
		r := y
		for range 2 {
			a := v.Mul(r)
			h := r.Mul(negHalf)
			r = h.MulAdd(a.MulAdd(r, negOne), r)
		}
		storeFloat64x8(r.Merge(y, v.GreaterEqual(minNormal).And(v.Less(inf))), po, off)
	}
	archsimd.ClearAVXUpperBits() // the caller's scalar SSE code runs next
	return n
}
