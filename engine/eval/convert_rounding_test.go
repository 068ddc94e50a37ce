package eval

import (
	"os"
	"path/filepath"
	"testing"

	"goldtrace/internal/hostcpu"
	"goldtrace/internal/pyref"
)

// TestConvertRoundingAgainstJax holds convert to XLA:CPU bit for bit on
// inputs that tell one rounding from two and flushing from keeping
// (testdata/gen_convert_rounding.py): once on this host, once with XLA:CPU
// limited to AVX2 against goldens computed as for a host without
// AVX512-FP16 (f64 -> f16 through f32).
func TestConvertRoundingAgainstJax(t *testing.T) {
	if f64ToF16Once != hostcpu.X86.AVX512FP16 {
		t.Fatalf("f64ToF16Once = %v on a host with AVX512-FP16 = %v", f64ToF16Once, hostcpu.X86.AVX512FP16)
	}
	dir, cases := jaxCases(t, "gen_convert_rounding.py")
	if len(cases) < 20 {
		t.Fatalf("only %d cases generated", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) { runJaxCase(t, dir, c) })
	}

	avx2 := t.TempDir()
	cmd := pyref.Command(filepath.Join("testdata", "gen_convert_rounding.py"), avx2, "f64_to_f16", "f64_to_bf16")
	cmd.Env = append(os.Environ(), "XLA_FLAGS=--xla_cpu_max_isa=AVX2")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen_convert_rounding.py under AVX2: %v\n%s", err, out)
	}
	f16 := readManifest[jaxCase](t, avx2)
	if len(f16) != 2 {
		t.Fatalf("AVX2 run: %d cases, want 2", len(f16))
	}
	defer func(v bool) { f64ToF16Once = v }(f64ToF16Once)
	f64ToF16Once = false
	for _, c := range f16 {
		t.Run("avx2_host/"+c.Name, func(t *testing.T) { runJaxCase(t, avx2, c) })
	}
}
