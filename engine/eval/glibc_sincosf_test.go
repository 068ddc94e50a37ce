package eval

import (
	"math"
	"math/rand"
	"testing"

	"goldtrace/internal/hostlibm"
)

// TestGlibcSinCosfMatchesHostLibm compares goldtrace's reproduction of
// glibc's sinf and cosf with the host's own, bit for bit, on every branch:
// random bit patterns, the one-step range densely, near multiples of π/2,
// a stride through all 2^32 patterns, and the specials; in whole vectors
// (each lane width the CPU runs) and through the scalar tail.
func TestGlibcSinCosfMatchesHostLibm(t *testing.T) {
	if !hostlibm.Available {
		t.Skip("no libm through cgo in this build")
	}
	if !glibcSinCosVerdict() {
		t.Skipf("the host's sinf/cosf (%s) is not glibc's FMA build; goldtrace calls it instead", hostlibm.Name())
	}
	rng := rand.New(rand.NewSource(11))
	x := glibcSinCosProbeInputs()
	for i := 0; i < 200000; i++ {
		x = append(x, math.Float32frombits(rng.Uint32()), float32(rng.Float64()*240-120),
			float32(rng.NormFloat64()*3), float32(float64(rng.Intn(200)-100)*math.Pi/4))
	}
	stride := uint32(40503)
	if testing.Short() {
		stride = 1000003
	}
	for b := uint64(0); b < 1<<32; b += uint64(stride) {
		x = append(x, math.Float32frombits(uint32(b)))
	}
	want, got := make([]float32, len(x)), make([]float32, len(x))
	for _, lanes := range binaryLaneWidths() {
		saved := binaryLanes
		binaryLanes = lanes
		for _, cosine := range []bool{false, true} {
			f, name := hostlibm.Sin, "sinf"
			if cosine {
				f, name = hostlibm.Cos, "cosf"
			}
			hostlibm.UnaryF32(f, x, want)
			// Odd offsets and lengths put elements in the scalar tail too.
			for _, off := range []int{0, 3} {
				clear(got)
				glibcSinCosF32(cosine, x[off:], got[off:])
				bad := 0
				for i := off; i < len(x); i++ {
					w, g := want[i], got[i]
					if math.Float32bits(w) != math.Float32bits(g) && !(w != w && g != g) {
						if bad++; bad <= 5 {
							t.Errorf("lanes %d: %s(%g = %#08x) = %g (%#08x), goldtrace %g (%#08x)", lanes, name,
								x[i], math.Float32bits(x[i]), w, math.Float32bits(w), g, math.Float32bits(g))
						}
					}
				}
				if bad > 0 {
					t.Errorf("lanes %d: %s differs on %d of %d inputs", lanes, name, bad, len(x)-off)
				}
			}
		}
		binaryLanes = saved
	}
}
