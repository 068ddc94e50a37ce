package eval

// SIMDInfo says which vector code this build of the evaluator runs on this
// CPU; the choice is made at start-up from the CPU's features.
type SIMDInfo struct {
	// Experiment is whether the package was built with GOEXPERIMENT=simd
	// on amd64 (the archsimd kernels exist).
	Experiment bool `json:"simd_experiment"`
	// Level is the widest vector width in use: "avx512", "avx2", or
	// "portable" (no archsimd kernel runs).
	Level string `json:"simd_level"`
	// GEMM is the f32 matrix kernel ("avx512", "avx2", "generic4x4"; products
	// go to gonum when GEMMOnBLAS).
	GEMM       string `json:"gemm_kernel"`
	GEMMOnBLAS bool   `json:"gemm_on_blas"`
	// VectorMath is the width of XLA:CPU's f32 transcendental kernels, or
	// "scalar".
	VectorMath string `json:"vector_math"`
	// RsqrtMatchesXLA: f32 rsqrt runs the CPU's estimate instruction, as
	// XLA:CPU does (else it is correctly rounded).
	RsqrtMatchesXLA bool `json:"rsqrt_matches_xla"`
	// HostLibm names the C library called for what XLA:CPU hands to libm
	// (sin, cos, tan, cbrt, pow, atan2; f64 log and erf), or says Go's math
	// stands in for it (libm.go).
	HostLibm string `json:"host_libm"`
}

// SIMD describes the vector code in use.
func SIMD() SIMDInfo {
	info := SIMDInfo{
		Experiment:      simdExperiment,
		GEMM:            f32Kernel.name,
		GEMMOnBLAS:      floatsOnBLAS,
		VectorMath:      vectorMathName(),
		RsqrtMatchesXLA: RsqrtMatchesXLA(),
		HostLibm:        hostLibmName(),
		Level:           "portable",
	}
	switch {
	case info.GEMM == "avx512" || info.VectorMath == "avx512":
		info.Level = "avx512"
	case info.GEMM == "avx2" || info.VectorMath == "avx2":
		info.Level = "avx2"
	}
	return info
}
