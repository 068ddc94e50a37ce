package eval

import (
	"math"
	"math/rand"
	"testing"
)

// The vector f32 sine and cosine equal the scalar reproduction of glibc's
// (glibcSinCosf) bit for bit, and stay within an ulp of math.Sin/math.Cos
// rounded to f32 (glibc's bound is 0.56 ulp), over small and large
// arguments, near multiples of π/2, ±0, subnormals, the 120 limit,
// infinities and NaNs.
func TestSinCosF32VectorMatchesScalar(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	var x []float32
	for _, v := range []float32{0, float32(math.Copysign(0, -1)), 1e-40, -1e-40, 1e-30, math.SmallestNonzeroFloat32,
		0x1p20, -0x1p20, math.Nextafter32(0x1p20, 0), 120, -120, math.Nextafter32(120, 0), 0x1p-12, math.Nextafter32(0x1p-12, 0), 3e5, 1e30, float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.MaxFloat32} {
		x = append(x, v)
	}
	for k := 1; k < 20000; k++ {
		m := float64(k) * math.Pi / 2
		f := float32(m)
		x = append(x, f, math.Nextafter32(f, 0), math.Nextafter32(f, float32(math.Inf(1))), -f)
	}
	for len(x) < 400000 {
		switch r.Intn(3) {
		case 0:
			x = append(x, float32(r.NormFloat64()*4))
		case 1:
			x = append(x, float32(r.NormFloat64()*1e5))
		default:
			x = append(x, math.Float32frombits(r.Uint32()))
		}
	}
	x = x[:len(x)&^7]
	ulps := func(a, b float32) uint32 {
		ia, ib := int64(math.Float32bits(a)), int64(math.Float32bits(b))
		if (ia < 0) != (ib < 0) {
			return 1 << 31
		}
		d := ia - ib
		if d < 0 {
			d = -d
		}
		return uint32(d)
	}
	for _, op := range []string{"sine", "cosine"} {
		o := make([]float32, len(x))
		if sinCosF32Vector(op, x, o) == 0 {
			t.Skip("no AVX-512 vector path on this CPU or build")
		}
		off := 0
		for i, v := range x {
			want := float32(math.Sin(float64(v)))
			if op == "cosine" {
				want = float32(math.Cos(float64(v)))
			}
			got := o[i]
			if g := glibcSinCosf(v, op == "cosine"); math.Float32bits(g) != math.Float32bits(got) && !(g != g && got != got) {
				t.Fatalf("%s(%v = %#x): vector %v (%#x), scalar %v (%#x)", op, v, math.Float32bits(v), got, math.Float32bits(got), g, math.Float32bits(g))
			}
			if want != want {
				if got == got {
					t.Fatalf("%s(%v) = %v, want NaN", op, v, got)
				}
				continue
			}
			if math.Float32bits(got) == math.Float32bits(want) {
				continue
			}
			if ulps(got, want) > 1 {
				t.Fatalf("%s(%v = %#x) = %v (%#x), math gives %v (%#x)", op, v, math.Float32bits(v), got, math.Float32bits(got), want, math.Float32bits(want))
			}
			off++
		}
		t.Logf("%s: %d of %d one ulp from math's", op, off, len(x))
	}
}
