package ir

import (
	"math"
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
)

// The marshal tapes in testdata are Python's own marshal.dumps output
// (testdata/gen_marshal.py) of the JSON tapes they are compared with.

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMarshalTapeMatchesJSONTape(t *testing.T) {
	want := buildFrom(t, (*Builder).AppendTape, tapeSample)
	wi := want.Body[0].GetLoop().Body[0].GetInst()
	delete(wi.Attrs, "scalar0") // NaN: checked by bits below
	for _, v := range []string{"v2", "v3", "v4"} {
		got := buildFrom(t, (*Builder).AppendTapeMarshal, string(readTestdata(t, "tape_sample."+v+".marshal")))
		gi := got.Body[0].GetLoop().Body[0].GetInst()
		if bits := math.Float64bits(gi.Attrs["scalar0"].GetF()); bits != 0x7ff8000000000000 {
			t.Fatalf("%s: scalar0 bits %#x, want Python's NaN 0x7ff8000000000000", v, bits)
		}
		delete(gi.Attrs, "scalar0")
		if !proto.Equal(got, want) {
			t.Fatalf("%s: marshal and JSON tapes disagree:\n got %s\nwant %s", v, Format(got), Format(want))
		}
	}
}

func TestMarshalTapeBackReferencesAndLongInts(t *testing.T) {
	want := buildFrom(t, (*Builder).AppendTape, string(readTestdata(t, "tape_shared.json")))
	data := readTestdata(t, "tape_shared.v4.marshal")
	got := buildFrom(t, (*Builder).AppendTapeMarshal, string(data))
	if !proto.Equal(got, want) {
		t.Fatalf("marshal and JSON tapes disagree:\n got %s\nwant %s", Format(got), Format(want))
	}
	in := got.Body[1].GetInst()
	if v := in.Attrs["v"].GetInts().GetV(); len(v) != 2 || v[0] != 1<<40 || v[1] != math.MinInt64 {
		t.Fatalf("64-bit integers: %v", v)
	}
	if c := in.Src[0].Index[1].Constant; c != 1<<40 {
		t.Fatalf("constant %d", c)
	}
}

func TestMarshalTapeRejects(t *testing.T) {
	good := readTestdata(t, "tape_shared.v4.marshal")
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "unexpected end of input"},
		{"truncated", good[:len(good)/2], "unexpected end"},
		{"trailing", append(append([]byte(nil), good...), 'N'), "trailing data"},
		{"not a list", []byte("N"), "expected a list, found None"},
		{"count too big", []byte("[\xff\xff\xff\x7f"), "runs past the end"},
		{"forward reference", []byte("[\x01\x00\x00\x00r\x05\x00\x00\x00"), "back-reference 5 to an object not read yet"},
		{"int too big", []byte("[\x01\x00\x00\x00[\x01\x00\x00\x00l\x06\x00\x00\x00\x01\x00\x01\x00\x01\x00\x01\x00\x01\x00\x01\x00"), "does not fit in 64 bits"},
		{"bad digit", []byte("[\x01\x00\x00\x00[\x01\x00\x00\x00l\x01\x00\x00\x00\xff\xff"), "digit"},
		{"float tag", []byte("[\x01\x00\x00\x00[\x01\x00\x00\x00g\x00\x00\x00\x00\x00\x00\xf8\x3f"), "expected an integer, found 1.5"},
		{"unknown tag", []byte("[\x01\x00\x00\x00)\x01i\x09\x00\x00\x00"), "unknown event tag 9"},
		{"short event", []byte("[\x01\x00\x00\x00)\x01i\x03\x00\x00\x00"), ""},
		{"long event", []byte("[\x01\x00\x00\x00)\x02i\x03\x00\x00\x00N"), "1 more elements than expected"},
		{"bytes for a string", []byte("[\x01\x00\x00\x00)\x02i\x01\x00\x00\x00s\x01\x00\x00\x00x"), "expected a string, found marshal type code s"},
	} {
		_, _, err := NewBuilder("bad").AppendTapeMarshal(c.data)
		if c.want == "" {
			// "[3]" as a one-element tuple is a loop end with no loop open.
			if err == nil || !strings.Contains(err.Error(), "none is open") {
				t.Errorf("%s: got %v", c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// FuzzTapeMarshal: arbitrary bytes never panic the marshal decoder, and what
// builds also validates, formats and serializes.
func FuzzTapeMarshal(f *testing.F) {
	for _, n := range []string{"tape_sample.v2.marshal", "tape_sample.v4.marshal", "tape_shared.v4.marshal"} {
		f.Add(readTestdata(f, n))
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzBuild(t, (*Builder).AppendTapeMarshal, data) })
}
