//go:build goexperiment.simd && amd64

package sim

import "simd/archsimd"

var haveAVX512 = archsimd.X86.AVX512()

// expRowVec computes out[i] = f32(exp(f32(f32(x[i]*s) + b))) eight lanes at a
// time in float64 (degree-11 polynomial on |r| <= ln2/2 after reduction by
// round(z/ln2), scaled by VSCALEFPD), for the whole vectors at the front of
// x; it returns how many elements it handled. x is first rounded to
// float32; then x*s and +b are exact in float64 and one conversion rounds
// them as float32 arithmetic does.
//
// The loops hold no scalar float code: legacy-SSE instructions executed
// while the upper vector state is dirty cost this CPU ~100 cycles each, so
// the function also clears the upper state before returning.
func expRowVec(out, x []float64, s, b float64) int {
	if !haveAVX512 || len(x) < 8 {
		return 0
	}
	n := len(x) &^ 7
	out = out[:len(x)]
	if s == 1 {
		expLoop(out[:n], x[:n], b, false, 1)
	} else {
		expLoop(out[:n], x[:n], b, true, s)
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func expLoop(out, x []float64, b float64, scaled bool, s float64) {
	sv, bv := archsimd.BroadcastFloat64x8(s), archsimd.BroadcastFloat64x8(b)
	hi, lo := archsimd.BroadcastFloat64x8(89), archsimd.BroadcastFloat64x8(-105)
	inv := archsimd.BroadcastFloat64x8(1.44269504088896338700e+00)
	nln2hi := archsimd.BroadcastFloat64x8(-6.93147180369123816490e-01)
	nln2lo := archsimd.BroadcastFloat64x8(-1.90821492927058770002e-10)
	c0 := archsimd.BroadcastFloat64x8(1.0 / 39916800)
	c1 := archsimd.BroadcastFloat64x8(1.0 / 3628800)
	c2 := archsimd.BroadcastFloat64x8(1.0 / 362880)
	c3 := archsimd.BroadcastFloat64x8(1.0 / 40320)
	c4 := archsimd.BroadcastFloat64x8(1.0 / 5040)
	c5 := archsimd.BroadcastFloat64x8(1.0 / 720)
	c6 := archsimd.BroadcastFloat64x8(1.0 / 120)
	c7 := archsimd.BroadcastFloat64x8(1.0 / 24)
	c8 := archsimd.BroadcastFloat64x8(1.0 / 6)
	c9 := archsimd.BroadcastFloat64x8(0.5)
	one := archsimd.BroadcastFloat64x8(1)
	if !scaled {
		sv = one
	}
	for i := 0; i+8 <= len(x); i += 8 {
		v := archsimd.LoadFloat64x8((*[8]float64)(x[i:])).ConvertToFloat32().ConvertToFloat64()
		v = v.Mul(sv).ConvertToFloat32().ConvertToFloat64()
		z := v.Add(bv).ConvertToFloat32().ConvertToFloat64()
		zc := z.Min(hi).Max(lo)
		zc = z.Merge(zc, z.IsNaN())
		k := zc.Mul(inv).RoundToEvenScaled(0)
		r := k.MulAdd(nln2hi, zc)
		r = k.MulAdd(nln2lo, r)
		p := c0.MulAdd(r, c1)
		p = p.MulAdd(r, c2)
		p = p.MulAdd(r, c3)
		p = p.MulAdd(r, c4)
		p = p.MulAdd(r, c5)
		p = p.MulAdd(r, c6)
		p = p.MulAdd(r, c7)
		p = p.MulAdd(r, c8)
		p = p.MulAdd(r, c9)
		p = p.MulAdd(r, one)
		p = p.MulAdd(r, one)
		y := p.Scale(k).ConvertToFloat32().ConvertToFloat64()
		y.Store((*[8]float64)(out[i:]))
	}
}

// clearUpper marks the upper vector state clean (VZEROUPPER). The simd
// runtime can leave it dirty (AVX-512 GEMM kernels, register restores after
// an asynchronous preemption), after which every legacy-SSE scalar float
// instruction Go emits runs ~30x slower on this CPU; the simulator calls it
// before each instruction.
func clearUpper() {
	if haveAVX512 {
		archsimd.ClearAVXUpperBits()
	}
}
