//go:build goexperiment.simd && amd64

package eval

import (
	"math"
	"math/rand"
	"os"
	"strconv"
	"testing"
)

// xlaVectorInputs returns f32 values that reach every branch of the
// kernels: specials, subnormals, the clamp and branch points with their
// neighbours, and random bit patterns. Its length is no multiple of 16, so
// the scalar tail runs too.
func xlaVectorInputs() []float32 {
	var xs []float32
	for _, b := range []uint32{0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
		0x7F800001, 0x7FFFFFFF, 0xFFFFFFFF, 1, 0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF} {
		xs = append(xs, math.Float32frombits(b))
	}
	for _, c := range []float32{1, -1, 0.5, 4e-4, 20, 0x1.ffec88p+2, 88.8, -87.8, 0x1p-126,
		0x1.6a09e6p-1, 0x1.a8279ap-2, 0x1.a8279ap-2 - 1, 88.72, -87.33, -103, 127, 2, 0.25, 1e-8} {
		for _, s := range []float32{1, -1} {
			b := math.Float32bits(s * c)
			for d := uint32(0); d < 64; d++ {
				xs = append(xs, math.Float32frombits(b-32+d))
			}
		}
	}
	r := rand.New(rand.NewSource(1))
	for range 1 << 18 {
		xs = append(xs, math.Float32frombits(r.Uint32()))
	}
	for range 1 << 16 { // the interesting range of every kernel
		xs = append(xs, float32(r.NormFloat64()*8))
	}
	return append(xs, 0.75, -3)
}

// TestXLAVectorKernels holds every vector kernel of every width this CPU
// runs, followed by the scalar tail as xlaUnaryF32 runs them, bit for bit to
// the scalar lane kernels (which TestXLAMathSweep holds to XLA:CPU). NaN
// matches any NaN. GOLDTRACE_XLAVECTOR_STRIDE=s also compares every s-th
// f32 bit pattern (s=1: all of them).
func TestXLAVectorKernels(t *testing.T) {
	if len(xlaVectorSets) == 0 {
		t.Skip("CPU has neither AVX-512 nor AVX2+FMA")
	}
	for _, set := range xlaVectorSets {
		for _, op := range xlaKernelOps {
			if set.ops[op] == nil {
				t.Errorf("%s has no kernel for %s", set.name, op)
			}
		}
	}
	compareXLAVectors(t, xlaVectorInputs())
	s := os.Getenv("GOLDTRACE_XLAVECTOR_STRIDE")
	if s == "" {
		return
	}
	stride, err := strconv.ParseUint(s, 10, 32)
	if err != nil || stride == 0 {
		t.Fatalf("GOLDTRACE_XLAVECTOR_STRIDE=%q: want a positive integer", s)
	}
	x := make([]float32, 0, 1<<20+3) // +3: leave a tail
	for b := uint64(0); b < 1<<32; b += stride {
		x = append(x, math.Float32frombits(uint32(b)))
		if len(x) == cap(x) || b+stride >= 1<<32 {
			if !compareXLAVectors(t, x) {
				return
			}
			x = x[:0]
		}
	}
}

// compareXLAVectors reports the elements of x where a vector kernel and the
// scalar lanes disagree, and whether all agreed.
func compareXLAVectors(t *testing.T, x []float32) bool {
	t.Helper()
	want, got := make([]float32, len(x)), make([]float32, len(x))
	ok := true
	for _, set := range xlaVectorSets {
		for op, vector := range set.ops {
			scalar := xlaScalarF32(op)
			scalar(x, want)
			clear(got)
			n := vector(x, got)
			if n != len(x)&^15 && n != len(x)&^7 {
				t.Fatalf("%s/%s handled %d of %d elements", set.name, op, n, len(x))
			}
			scalar(x[n:], got[n:])
			bad := 0
			for i := range x {
				g, w := got[i], want[i]
				if math.Float32bits(g) == math.Float32bits(w) || (g != g && w != w) {
					continue
				}
				if bad < 5 {
					t.Errorf("%s/%s(%#x) = %#x, scalar %#x", set.name, op,
						math.Float32bits(x[i]), math.Float32bits(g), math.Float32bits(w))
				}
				bad++
			}
			if bad > 0 {
				t.Errorf("%s/%s: %d of %d differ", set.name, op, bad, len(x))
				ok = false
			}
		}
	}
	return ok
}

// BenchmarkXLAVectorF32 times each vector width of each kernel, and the
// scalar lane kernels as the peer, over the inputs of BenchmarkXLAMathF32.
func BenchmarkXLAVectorF32(b *testing.B) {
	x := make([]float32, 1<<20)
	for i := range x {
		x[i] = float32(i-len(x)/2) / float32(len(x)/16)
	}
	o := make([]float32, len(x))
	for _, op := range xlaKernelOps {
		for _, set := range xlaVectorSets {
			if f := set.ops[op]; f != nil {
				b.Run(op+"/"+set.name, func(b *testing.B) {
					for range b.N {
						f(x, o)
					}
				})
			}
		}
		b.Run(op+"/scalar", func(b *testing.B) {
			f := xlaScalarF32(op)
			for range b.N {
				f(x, o)
			}
		})
	}
}

// TestXLARsqrtKernel holds xlaRsqrt (held to XLA:CPU by TestXLAMathSweep) to
// itself across the vector body and the padded tail, to within two ulps of
// the correctly rounded 1/sqrt(x) for positive normal x (two Newton steps
// from a 12-bit estimate leave it within rounding error), and to IEEE
// rsqrt's special values.
func TestXLARsqrtKernel(t *testing.T) {
	if !RsqrtMatchesXLA() {
		t.Skip("CPU lacks AVX2+FMA: rsqrt is correctly rounded, not XLA:CPU's estimate")
	}
	x := xlaVectorInputs()
	o := make([]float32, len(x))
	xlaRsqrt(x, o)
	for i, v := range x {
		var one [1]float32
		xlaRsqrt(x[i:i+1], one[:])
		g := o[i]
		if math.Float32bits(one[0]) != math.Float32bits(g) && !(g != g && one[0] != one[0]) {
			t.Fatalf("rsqrt(%#x): %#x in a vector, %#x alone", math.Float32bits(v), math.Float32bits(g), math.Float32bits(one[0]))
		}
		if v >= 0x1p-126 && v < float32(math.Inf(1)) {
			w := float32(1 / math.Sqrt(float64(v)))
			if d := int64(math.Float32bits(g)) - int64(math.Float32bits(w)); d < -2 || d > 2 {
				t.Fatalf("rsqrt(%g) = %g, more than two ulps from %g", v, g, w)
			}
		}
	}
	inf := float32(math.Inf(1))
	for _, c := range []struct{ x, want float32 }{
		{0, inf}, {float32(math.Copysign(0, -1)), -inf}, {inf, 0}, {4, 0.5}, {0x1p-126, 0x1p63},
	} {
		if g := oneLane(xlaRsqrt, c.x); math.Float32bits(g) != math.Float32bits(c.want) {
			t.Errorf("rsqrt(%g) = %g, want %g", c.x, g, c.want)
		}
	}
	for _, v := range []float32{-1, -inf, float32(math.NaN()), -0x1p-126} {
		if g := oneLane(xlaRsqrt, v); g == g {
			t.Errorf("rsqrt(%g) = %g, want NaN", v, g)
		}
	}
}
