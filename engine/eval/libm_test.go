package eval

import (
	"math"
	"math/rand"
	"testing"

	"goldtrace/internal/hostlibm"
)

// withoutLibm runs the rest of a test on the Go kernels alone.
func withoutLibm(t *testing.T) {
	t.Helper()
	saved := libmDisabled
	libmDisabled = true
	t.Cleanup(func() { libmDisabled = saved })
}

// TestLibmOpsReachLibm checks that every op XLA:CPU hands to libm takes the
// libm path where it exists, in every kernel entry, and that the Go kernels
// stay within a few ulp of it (they are the fallback without cgo).
func TestLibmOpsReachLibm(t *testing.T) {
	if !hostlibm.Available {
		t.Skip("no libm through cgo in this build")
	}
	rng := rand.New(rand.NewSource(7))
	xs := make([]float64, 4099)
	ys := make([]float64, len(xs))
	for i := range xs {
		xs[i] = rng.NormFloat64() * 4
		ys[i] = rng.NormFloat64() * 3
	}
	xs[0], xs[1], xs[2] = math.NaN(), math.Inf(1), 0
	abs := func(v []float64) []float64 {
		o := make([]float64, len(v))
		for i, x := range v {
			o[i] = math.Abs(x) + 0.25
		}
		return o
	}
	cases := []struct {
		op     string
		f32    bool
		a, b   []float64
		ulpGo  float64 // how far Go's math may be from libm's
		binary bool
	}{
		// f32 sine and cosine: Go computes glibc's own algorithm, checked
		// bit for bit (glibc_sincosf_test.go), so 0 ulp.
		{"sine", true, xs, nil, 0, false}, {"cosine", true, xs, nil, 0, false}, {"tan", true, xs, nil, 4, false},
		{"cbrt", true, xs, nil, 2, false}, {"power", true, abs(xs), ys, 2, true}, {"atan2", true, xs, ys, 2, true},
		{"sine", false, xs, nil, 2, false}, {"cosine", false, xs, nil, 2, false}, {"tan", false, xs, nil, 4, false},
		{"cbrt", false, xs, nil, 8, false}, {"log", false, abs(xs), nil, 2, false}, {"erf", false, xs, nil, 2, false},
		{"power", false, abs(xs), ys, 64, true}, {"atan2", false, xs, ys, 2, true},
	}
	for _, c := range cases {
		run := func() []float64 {
			if c.f32 {
				a, b, o := make([]float32, len(c.a)), make([]float32, len(c.a)), make([]float32, len(c.a))
				for i := range a {
					a[i] = float32(c.a[i])
					if c.binary {
						b[i] = float32(c.b[i])
					}
				}
				if c.binary {
					binaryFloat(c.op, a, b, o)
				} else {
					unaryFloat(c.op, a, o)
				}
				r := make([]float64, len(o))
				for i, v := range o {
					r[i] = float64(v)
				}
				return r
			}
			o := make([]float64, len(c.a))
			if c.binary {
				binaryFloat(c.op, c.a, c.b, o)
			} else {
				unaryFloat(c.op, c.a, o)
			}
			return o
		}
		viaLibm := run()
		libmDisabled = true
		viaGo := run()
		libmDisabled = false
		differ := 0
		for i := range viaLibm {
			l, g := viaLibm[i], viaGo[i]
			if math.IsNaN(l) && math.IsNaN(g) {
				continue
			}
			if l != g {
				differ++
			}
			ulp := math.Abs(math.Nextafter(l, math.Inf(1)) - l)
			if c.f32 {
				ulp = float64(math.Nextafter32(float32(l), float32(math.Inf(1))) - float32(l))
			}
			if math.Abs(l-g) > c.ulpGo*ulp {
				t.Errorf("%s (f32 %v) of %v: libm %v, Go %v: more than %v ulp apart", c.op, c.f32, c.a[i], l, g, c.ulpGo)
				break
			}
		}
		// Go's math is not libm's: if nothing differs, libm was not called.
		if differ == 0 && c.ulpGo != 0 {
			t.Errorf("%s (f32 %v): libm and Go's math agree on all %d values; is libm reached?", c.op, c.f32, len(viaLibm))
		}
	}
}
