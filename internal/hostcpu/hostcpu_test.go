package hostcpu

import (
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestMatchesProcCPUInfo: on Linux the kernel's flags line (which also
// hides features the OS does not enable) lists exactly the features found.
func TestMatchesProcCPUInfo(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("reads /proc/cpuinfo of linux/amd64")
	}
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Fatal(err)
	}
	var flags []string
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "flags" {
			flags = strings.Fields(v)
			break
		}
	}
	if len(flags) == 0 {
		t.Fatal("no flags line in /proc/cpuinfo")
	}
	have := X86.Names()
	for _, name := range []string{"sse4_1", "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512dq",
		"avx512bw", "avx512vl", "avx512_fp16", "avx512_bf16", "sse4a"} {
		if slices.Contains(flags, name) != slices.Contains(have, name) {
			t.Errorf("%s: /proc/cpuinfo says %v, CPUID says %v", name, slices.Contains(flags, name), slices.Contains(have, name))
		}
	}
}

// TestDecodeNeedsOSSupport: vector features without the OS saving their
// registers do not count.
func TestDecodeNeedsOSSupport(t *testing.T) {
	all := ^uint32(0)
	if f := decode(all, all, all, all, 0x7, true); f.AVX512F || !f.AVX2 || !f.FMA {
		t.Errorf("XCR0=0x7: %+v", f)
	}
	if f := decode(all, all, all, all, 0xe7, false); f.AVX || f.AVX512FP16 || !f.SSE42 {
		t.Errorf("no OSXSAVE: %+v", f)
	}
	if f := decode(all, all, all, all, 0xe7, true); !f.AVX512FP16 || !f.AVX512BF16 || len(f.Names()) != 12 {
		t.Errorf("everything: %+v", f)
	}
}
