//go:build goexperiment.simd && amd64

package eval

import (
	"simd/archsimd"

	"goldtrace/internal/hostcpu"
)

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

// rsqrtOnCPU is whether this CPU runs rsqrtXLAX8 (VRSQRTPS needs AVX, its
// blend AVX2, the Newton steps FMA).
var rsqrtOnCPU = archsimd.X86.AVX2() && archsimd.X86.FMA()

// rsqrtNewtonSteps is how many Newton steps XLA:CPU's rsqrt intrinsic
// (xla/codegen/intrinsic/rsqrt.cc) spends on the 8-lane estimate: one on AMD
// hosts, whose VRSQRTPS is finer, which XLA recognizes by "+sse4a"; two
// elsewhere. Measured on an AMD EPYC (Zen 4): one step matches jax.jit on
// every f32, two differ on a fifth of them.
var rsqrtNewtonSteps = map[bool]int{true: 1, false: 2}[hostcpu.X86.SSE4A]

// xlaEstimateF32 returns op's kernel when XLA:CPU builds op on the CPU's own
// estimate instruction, which only a vector kernel can run: f32 rsqrt is
// VRSQRTSS/VRSQRTPS's 12-bit estimate y refined by Newton steps (two, one
// on AMD hosts: rsqrtNewtonSteps),
// r - r/2*(x*r*r - 1) with x*r rounded and the rest two FMAs (jaxlib 0.10.2's
// LLVM IR, on AVX2 and AVX-512 hosts alike), for positive
// normal x; for 0, subnormals, inf and negatives it is y itself (±inf, +0,
// NaN). The tail shorter than a vector runs padded to one, so the result of
// every element comes from the same instructions.
func xlaEstimateF32(op string) func(x, o []float32) {
	if op != "rsqrt" || !rsqrtOnCPU {
		return nil
	}
	return xlaRsqrt
}

func xlaRsqrt(x, o []float32) {
	n := rsqrtXLAX8(x, o)
	if n == len(x) {
		return
	}
	var in, out [8]float32
	copy(in[:], x[n:])
	rsqrtXLAX8(in[:], out[:])
	copy(o[n:len(x)], out[:])
}

// RsqrtMatchesXLA reports whether f32 rsqrt here runs the estimate
// instruction XLA:CPU uses, so it matches XLA:CPU on this CPU bit for bit;
// f64 rsqrt then does too (VRSQRT14PD's estimate on AVX-512 hosts, 1/sqrt
// on AVX2 ones, as XLA:CPU builds it, xlaEstimateF64). (The estimate tables
// differ between CPU vendors, so it matches XLA:CPU running on the same
// kind of CPU.) When false, rsqrt is correctly rounded and differs from
// XLA:CPU in the last bit for about one f32 in seven (and, on AVX-512
// hosts, one f64 in seven).
func RsqrtMatchesXLA() bool { return rsqrtOnCPU }
