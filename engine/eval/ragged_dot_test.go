package eval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"goldtrace/engine/hlo"
	"goldtrace/engine/hlo/hloproto"
)

// TestRaggedDotAgainstJax evaluates jax's ragged-dot programs (all three
// group modes jax lowers to a ragged-dot instruction, f32, bf16 and bf16→f32,
// group sizes with zeros and short of the ragged dim) and compares with
// jax.jit on CPU. Each case's text must also verify, print and parse back
// equal, and its HloModuleProto must read into the same model.
func TestRaggedDotAgainstJax(t *testing.T) {
	dir, cases := jaxCases(t, "gen_ragged.py")
	requireCases(t, cases, 22)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(dir, c.HLO))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(src), "ragged-dot(") {
				t.Fatalf("jax's lowering has no ragged-dot:\n%s", src)
			}
			m, err := hlo.ParseText(src, c.HLO)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if err := hlo.Verify(m); err != nil {
				t.Errorf("verify: %v", err)
			}
			printed := hlo.Print(m)
			m2, err := hlo.ParseText([]byte(printed), c.HLO+".printed")
			if err != nil {
				t.Fatalf("parsing printed module: %v\n%s", err, printed)
			}
			if ok, d := hlo.Equal(m, m2); !ok {
				t.Errorf("printed module differs: %s", d)
			}
			pb, err := os.ReadFile(filepath.Join(dir, strings.TrimSuffix(c.HLO, ".hlo")+".pb"))
			if err != nil {
				t.Fatal(err)
			}
			fromProto, err := hloproto.ReadModule(pb)
			if err != nil {
				t.Fatalf("proto: %v", err)
			}
			if ok, d := hlo.EqualIgnoringMetadata(fromProto, m); !ok {
				t.Errorf("proto and text models differ: %s", d)
			}
			runJaxCase(t, dir, c)
		})
	}
}
