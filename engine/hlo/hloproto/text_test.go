package hloproto

import (
	"testing"

	"goldtrace/engine/hlo"
)

// TestProtoMatchesText compares, for every generated case, the model read
// from the proto with the model the text parser builds from XLA's printing of
// the very same module, and runs the verifier on the proto's model.
func TestProtoMatchesText(t *testing.T) {
	dir, cases := generated(t)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			fromProto, err := ReadModule(readGen(t, dir, c.PB))
			if err != nil {
				t.Fatal(err)
			}
			txt := readGen(t, dir, c.Txt)
			fromText, args, kind, err := Load(txt)
			if err != nil {
				t.Fatalf("text parser: %v", err)
			}
			if kind != KindText || args != nil {
				t.Fatalf("Load kind %q", kind)
			}
			// The proto has no replica or partition count; XLA's printing of a
			// proto-built module has none either, so they agree.
			if ok, where := hlo.Equal(fromProto, fromText); !ok {
				t.Errorf("proto and text models differ: %s", where)
			}
			if err := hlo.Verify(fromProto); err != nil {
				t.Errorf("verify: %v", err)
			}
		})
	}
}
