package hloproto

import (
	"sort"
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
			// XLA may print computations in another valid (callees-first)
			// order than it serialized them; the order carries no meaning.
			sameComputationOrder(fromText, fromProto)
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

// sameComputationOrder reorders m's computations like ref's, by name.
func sameComputationOrder(m, ref *hlo.Module) {
	pos := map[string]int{}
	for i, c := range ref.Computations {
		pos[c.Name] = i
	}
	sort.SliceStable(m.Computations, func(i, j int) bool {
		return pos[m.Computations[i].Name] < pos[m.Computations[j].Name]
	})
}
