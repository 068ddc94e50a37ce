package eval

import (
	"math"
	"sync"

	"goldtrace/internal/hostlibm"
)

// XLA:CPU's f32 sine and cosine are calls to the C library's sinf and cosf
// (libm.go). glibc (2.28 on, through 2.36 and later) computes them in double
// precision: |x| < 120 is reduced by one multiply-subtract against π/2
// (the quadrant from a truncating conversion of x·2/π·2^24), larger values
// through a 4/π table in integer arithmetic, then a degree-7 sine or
// degree-8 cosine polynomial picked by the quadrant, rounded once to f32.
// On a CPU with FMA, glibc's ifunc picks the build compiled with -mfma, in
// which GCC contracts every a + b·c of that code into one FMA; this file
// computes that build's arithmetic step for step (the constants are
// glibc's published table), so a block runs in Go (8 lanes of doubles
// under the simd experiment, sincos_simd_amd64.go) instead of one cgo libm
// call per element. glibcSinCosVerdict checks it against the host's own
// sinf and cosf once per process and keeps libm when they disagree (a
// CPU without FMA, another C library).

// The sine and cosine table (glibc's __sincosf_table[0]; entry 1 is the
// same with the cosine coefficients negated, which negates the cosine
// polynomial's result exactly).
const (
	glibcHalfPiInv24 = 0x1.45F306DC9C883p+23 // 2/π·2^24: the quadrant lands in bits 24..31
	glibcHalfPi      = 0x1.921FB54442D18p0
	glibcCos0        = 0x1p0
	glibcCos1        = -0x1.ffffffd0c621cp-2
	glibcCos2        = 0x1.55553e1068f19p-5
	glibcCos3        = -0x1.6c087e89a359dp-10
	glibcCos4        = 0x1.99343027bf8c3p-16
	glibcSin1        = -0x1.555545995a603p-3
	glibcSin2        = 0x1.1107605230bc4p-7
	glibcSin3        = -0x1.994eb3774cf24p-13
	glibcPi63        = 0x1.921FB54442D18p-62 // 2π·2^-64
)

// glibcInvPio4 is 4/π to 192 bits, 8 new bits per entry (glibc's
// __inv_pio4), read at three offsets 4 entries apart.
var glibcInvPio4 = [24]uint32{
	0xa2, 0xa2f9, 0xa2f983, 0xa2f9836e,
	0xf9836e4e, 0x836e4e44, 0x6e4e4415, 0x4e441529,
	0x441529fc, 0x1529fc27, 0x29fc2757, 0xfc2757d1,
	0x2757d1f5, 0x57d1f534, 0xd1f534dd, 0xf534ddc0,
	0x34ddc0db, 0xddc0db62, 0xc0db6295, 0xdb629599,
	0x6295993c, 0x95993c43, 0x993c4390, 0x3c439041,
}

// The thresholds glibc compares the top 12 bits of |x| (sign cleared)
// against: 2^-12, π/4 rounded to f32 (whose top bits are 0.75's), 120,
// infinity.
const (
	glibcTop12Tiny  = 0x398
	glibcTop12Fast  = 0x42f
	glibcTop12Inf   = 0x7f8
	glibcTinyLimit  = 0x1p-12 // |x| at or above: not tiny
	glibcFastLimit  = 120.0   // |x| below: the one-step reduction
	glibcTop12Shift = 20
)

// glibcSinCosf is glibc's sinf (cosine false) or cosf of y.
func glibcSinCosf(y float32, cosine bool) float32 {
	bits := math.Float32bits(y)
	top := (bits >> glibcTop12Shift) & 0x7ff
	x := float64(y)
	var n, quadrant int
	switch {
	case top < glibcTop12Tiny:
		if cosine {
			return 1
		}
		return y
	case top < glibcTop12Fast:
		// Below π/4 glibc skips the reduction; n computes to 0 there, and
		// fma(-0, π/2, x) is x, so one path gives both.
		n = int((int32(x*glibcHalfPiInv24) + 0x800000) >> 24)
		x = math.FMA(-float64(n), glibcHalfPi, x)
		quadrant = n
	case top < glibcTop12Inf:
		x, n = glibcReduceLarge(bits)
		quadrant = n + int(bits>>31)
	default:
		return (y - y) / (y - y) // NaN for ±Inf, the quiet NaN for a NaN
	}
	odd := n&1 != 0
	if cosine {
		odd = !odd
	}
	return glibcSinCosPoly(x, quadrant, odd)
}

// glibcReduceLarge is x mod π/2 in [-π/4, π/4] and the quadrant for
// 120 ≤ |x| < Inf from x's bits (the sign ignored): a 32×96-bit product
// with the 4/π table gives the fraction exactly in 2.62 fixed point.
func glibcReduceLarge(xi uint32) (float64, int) {
	arr := glibcInvPio4[(xi>>26)&15:]
	shift := (xi >> 23) & 7
	xi = (xi&0xffffff | 0x800000) << shift
	res0 := uint64(xi * arr[0]) // a 32-bit product: its high half is past the 2^64 wrap
	res1 := uint64(xi) * uint64(arr[4])
	res2 := uint64(xi) * uint64(arr[8])
	res0 = res2>>32 | res0<<32
	res0 += res1
	n := (res0 + 1<<61) >> 62
	res0 -= n << 62
	return float64(int64(res0)) * glibcPi63, int(n)
}

// glibcSinCosPoly is the polynomial step: quadrant's sign applied to x for
// the sine polynomial (odd false) or to the cosine's result (odd true).
func glibcSinCosPoly(x float64, quadrant int, odd bool) float32 {
	x2 := x * x
	if !odd {
		if q := quadrant & 3; q == 1 || q == 2 {
			x = -x
		}
		x3 := x * x2
		s1 := math.FMA(x2, glibcSin3, glibcSin2)
		x7 := x3 * x2
		s := math.FMA(x3, glibcSin1, x)
		return float32(math.FMA(x7, s1, s))
	}
	x4 := x2 * x2
	c2 := math.FMA(x2, glibcCos4, glibcCos3)
	c1 := math.FMA(x2, glibcCos1, glibcCos0)
	x6 := x4 * x2
	c := math.FMA(x4, glibcCos2, c1)
	r := math.FMA(x6, c2, c)
	if quadrant&2 != 0 {
		r = -r
	}
	return float32(r)
}

// glibcSinCosF32 computes sinf or cosf of every element of x into o: whole
// vectors in the simd build (sinCosF32Vector), the rest here.
func glibcSinCosF32(cosine bool, x, o []float32) {
	op := "sine"
	if cosine {
		op = "cosine"
	}
	k := sinCosF32Vector(op, x, o[:len(x)])
	for i := k; i < len(x); i++ {
		o[i] = glibcSinCosf(x[i], cosine)
	}
}

// glibcSinCosVerdict reports whether glibcSinCosF32 gives the host libm's
// bits (true as well when there is no host libm to ask: glibc on an FMA CPU
// is then the best guess at what XLA:CPU's code would call).
var glibcSinCosVerdict = sync.OnceValue(func() bool {
	if !hostlibm.Available {
		return true
	}
	x := glibcSinCosProbeInputs()
	want, got := make([]float32, len(x)), make([]float32, len(x))
	for _, cosine := range []bool{false, true} {
		f := hostlibm.Sin
		if cosine {
			f = hostlibm.Cos
		}
		if !hostlibm.UnaryF32(f, x, want) {
			return false
		}
		glibcSinCosF32(cosine, x, got)
		for i := range x {
			if math.Float32bits(want[i]) != math.Float32bits(got[i]) && !(want[i] != want[i] && got[i] != got[i]) {
				return false
			}
		}
	}
	return true
})

// glibcSinCosProbeInputs spans every branch and quadrant: tiny, below π/4,
// each of the one-step reduction's quadrants up to 120, large values up to
// the f32 maximum, both signs, zeros, subnormals, infinities and NaN.
func glibcSinCosProbeInputs() []float32 {
	x := []float32{0, float32(math.Copysign(0, -1)), 1e-45, -1e-40, 0x1p-12, 0.75, 0.7853982, 119.99999, 120,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32}
	state := uint32(0x9e3779b9)
	for i := 0; i < 6000; i++ {
		state = state*1664525 + 1013904223
		switch i % 3 {
		case 0: // any bit pattern
			x = append(x, math.Float32frombits(state))
		case 1: // the one-step range, where nearly all real inputs fall
			x = append(x, (float32(state>>8)/(1<<24)*2-1)*120)
		default: // near multiples of π/2, where the reduction cancels
			k := float64(int32(state>>16)%80 - 40)
			x = append(x, float32(k*math.Pi/2)+float32(int32(state&0xff)-128)*1e-6)
		}
	}
	return x
}
