//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

//go:generate go run xlamath_simd_gen.go

// xlaVectorSet is one vector width's XLA:CPU f32 kernels
// (xlamath_simd_kernels_amd64.go), by opcode. Each handles the whole vectors
// at the front of its input and returns how many elements that was.
type xlaVectorSet struct {
	name string
	ops  map[string]func(x, o []float32) int
}

// xlaVectorSets lists the widths this CPU runs, widest first. XLA:CPU
// itself runs these kernels 16 or 8 lanes wide with hardware FMA; the
// results do not depend on the width.
var xlaVectorSets = usableXLAVectorSets()

func usableXLAVectorSets() []xlaVectorSet {
	var sets []xlaVectorSet
	if archsimd.X86.AVX512() {
		sets = append(sets, xlaVectorSet{"avx512", xlaVectorOpsX16})
	}
	if archsimd.X86.AVX2() && archsimd.X86.FMA() {
		sets = append(sets, xlaVectorSet{"avx2", xlaVectorOpsX8})
	}
	return sets
}

// xlaVectorF32 returns the widest vector kernel for op on this CPU, or nil.
func xlaVectorF32(op string) func(x, o []float32) int {
	if len(xlaVectorSets) == 0 {
		return nil
	}
	return xlaVectorSets[0].ops[op]
}
