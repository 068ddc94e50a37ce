package eval

import (
	"testing"

	"goldtrace/internal/hostcpu"
)

// TestSIMDInfo: the level follows the build and the CPU: the SIMD build on
// an AVX2+FMA (AVX-512) CPU runs avx2 (avx512) kernels and XLA's rsqrt; the
// portable build runs none.
func TestSIMDInfo(t *testing.T) {
	s := SIMD()
	cpu := hostcpu.X86
	want := "portable"
	if simdExperiment {
		switch {
		case cpu.AVX512F && cpu.AVX512BW && cpu.AVX512DQ && cpu.AVX512VL:
			want = "avx512"
		case cpu.AVX2 && cpu.FMA:
			want = "avx2"
		}
	}
	if s.Level != want {
		t.Errorf("SIMD level %q on this CPU (%v) with simd experiment=%v, want %q", s.Level, cpu.Names(), simdExperiment, want)
	}
	if wantRsqrt := simdExperiment && cpu.AVX2 && cpu.FMA; s.RsqrtMatchesXLA != wantRsqrt {
		t.Errorf("RsqrtMatchesXLA = %v, want %v", s.RsqrtMatchesXLA, wantRsqrt)
	}
	if !simdExperiment && (s.GEMM != "generic4x4" || !s.GEMMOnBLAS || s.VectorMath != "scalar") {
		t.Errorf("portable build: %+v", s)
	}
	t.Logf("%+v", s)
}
