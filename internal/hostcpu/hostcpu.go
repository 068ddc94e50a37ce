// Package hostcpu reports the x86 features of the CPU the process runs on
// (CPUID, with the operating system's XSAVE support checked for the vector
// registers). XLA:CPU compiles for the host it runs on, so some of its
// numerics depend on these: goldens follow the host's (for example f16
// multiply-add contraction, which needs AVX512-FP16).
package hostcpu

// Features is the subset of CPU features goldtrace's numerics or kernels
// depend on. All false on other architectures.
type Features struct {
	SSE41, SSE42, AVX, AVX2, FMA, F16C                            bool
	AVX512F, AVX512DQ, AVX512BW, AVX512VL, AVX512FP16, AVX512BF16 bool
	// SSE4A (CPUID 0x80000001 ECX bit 6) is on every AMD CPU since 2007 and
	// no Intel one. XLA:CPU takes "+sse4a" as its sign of an AMD host, whose
	// SSE/AVX rsqrt estimate is finer, and refines it with one Newton step
	// instead of two; goldens follow.
	SSE4A bool
	// L1DataKiB is the size of one core's level-1 data cache (CPUID leaf 4
	// on Intel, 0x80000005 on AMD), 0 when CPUID does not say.
	L1DataKiB int
}

// X86 holds the features of this CPU, read once at start-up.
var X86 = detect()

// Names lists the features present, lower-case as in /proc/cpuinfo.
func (f Features) Names() []string {
	all := []struct {
		on   bool
		name string
	}{
		{f.SSE41, "sse4_1"}, {f.SSE42, "sse4_2"}, {f.AVX, "avx"}, {f.AVX2, "avx2"}, {f.FMA, "fma"},
		{f.F16C, "f16c"}, {f.AVX512F, "avx512f"}, {f.AVX512DQ, "avx512dq"}, {f.AVX512BW, "avx512bw"},
		{f.AVX512VL, "avx512vl"}, {f.AVX512FP16, "avx512_fp16"}, {f.AVX512BF16, "avx512_bf16"},
		{f.SSE4A, "sse4a"},
	}
	names := []string{}
	for _, x := range all {
		if x.on {
			names = append(names, x.name)
		}
	}
	return names
}

// decode turns CPUID leaves 1 (ecx1), 7.0 (ebx7, edx7), 7.1 (eax71) and
// XCR0 into Features: the vector features count only when the operating
// system saves their registers (XCR0 bits 1-2 for AVX, 5-7 for AVX-512).
func decode(ecx1, ebx7, edx7, eax71 uint32, xcr0 uint64, osxsave bool) Features {
	bit := func(r uint32, n uint) bool { return r>>n&1 == 1 }
	avxOS := osxsave && xcr0&0x6 == 0x6
	avx512OS := avxOS && xcr0&0xe0 == 0xe0
	f := Features{SSE41: bit(ecx1, 19), SSE42: bit(ecx1, 20)}
	f.AVX = avxOS && bit(ecx1, 28)
	f.FMA = f.AVX && bit(ecx1, 12)
	f.F16C = f.AVX && bit(ecx1, 29)
	f.AVX2 = f.AVX && bit(ebx7, 5)
	f.AVX512F = avx512OS && bit(ebx7, 16)
	f.AVX512DQ = f.AVX512F && bit(ebx7, 17)
	f.AVX512BW = f.AVX512F && bit(ebx7, 30)
	f.AVX512VL = f.AVX512F && bit(ebx7, 31)
	f.AVX512FP16 = f.AVX512F && bit(edx7, 23)
	f.AVX512BF16 = f.AVX512F && bit(eax71, 5)
	return f
}
