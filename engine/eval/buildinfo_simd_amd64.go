//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

const simdExperiment = true

func vectorMathName() string {
	if len(xlaVectorSets) == 0 {
		return "scalar"
	}
	return xlaVectorSets[0].name
}

// sseAfterAVX clears the upper halves of the vector registers (VZEROUPPER)
// before a stretch of scalar code: Go's math functions (math.Exp, Log, Pow,
// ...) are legacy-SSE assembly, and on a thread whose YMM/ZMM upper halves
// are dirty from earlier AVX code every SSE instruction pays a merge penalty
// (measured: pow over 1M f32 took 1.8 s instead of 0.1 s in the Python
// process).
func sseAfterAVX() { archsimd.ClearAVXUpperBits() }
