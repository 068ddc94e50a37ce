package customcall

import (
	"strings"
	"testing"

	"goldtrace/engine/hlo"
)

func TestParseMLIRDict(t *testing.T) {
	got, err := parseMLIRDict(` { kernel = "ab\"c\\d\0A", n = 76 : ui8, arr = [1, {x = "}"}], "odd key" = dense<[1, 2]> : tensor<2xi64>, f = (i32) -> i32, flag, s = "t" : i32 } `)
	if err != nil {
		t.Fatal(err)
	}
	want := []mlirEntry{
		{Key: "kernel", IsString: true, Str: "ab\"c\\d\n", Raw: `"ab\"c\\d\0A"`},
		{Key: "n", Raw: "76 : ui8"},
		{Key: "arr", Raw: `[1, {x = "}"}]`},
		{Key: "odd key", Raw: "dense<[1, 2]> : tensor<2xi64>"},
		{Key: "f", Raw: "(i32) -> i32"},
		{Key: "flag"},
		{Key: "s", IsString: true, Str: "t", Raw: `"t" : i32`},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d entries %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if e, err := parseMLIRDict("{}"); err != nil || len(e) != 0 {
		t.Errorf("{}: %v %v", e, err)
	}
}

func TestParseMLIRDictErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{``, "expected '{'"},
		{`kernel = "x"`, "expected '{'"},
		{`{kernel = "x"`, "unterminated dictionary"},
		{`{kernel = "x}`, "unterminated string literal"},
		{`{kernel = "x", kernel = "y"}`, `"kernel" appears twice`},
		{`{kernel = }`, `"kernel" has no value`},
		{`{kernel = "x"} extra`, "text after the dictionary"},
		{`{= "x"}`, "expected an attribute name"},
		{`{a = [1, 2}`, `'}' closes '['`},
		{`{a = "\q"}`, "invalid escape"},
		{`{a "x"}`, "expected ',' or '}'"},
	} {
		_, err := parseMLIRDict(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error containing %q", c.in, err, c.want)
		}
	}
}

// FuzzParseMLIRDict: the dictionary reader never panics, and a string it
// reads survives being written back and read again.
func FuzzParseMLIRDict(f *testing.F) {
	for _, s := range []string{
		`{kernel = "eyJrZXJuZWwiOjF9"}`,
		`{alpha = 1.5 : f32, kernel = "a\"b", zeta = [1, 2], "q k" = {x = 1 : i64}}`,
		`{uplo = 76 : ui8}`, `{}`, `{flag}`, `{a = dense<[1, 2]> : tensor<2xi64>}`, `{f = (i32) -> i32}`,
		`{kernel = "\00\FF"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		entries, err := parseMLIRDict(s)
		if err != nil {
			return
		}
		for _, e := range entries {
			if !e.IsString {
				continue
			}
			again, err := parseMLIRDict("{k = " + quoteMLIR(e.Str) + "}")
			if err != nil || len(again) != 1 || !again[0].IsString || again[0].Str != e.Str {
				t.Fatalf("string %q of %q did not round-trip: %+v %v", e.Str, s, again, err)
			}
			// The custom-call reader finds the kernel entry the same way.
			if e.Key == "kernel" {
				got, err := kernelConfigOf(&hlo.Instruction{BackendConfig: s})
				if err != nil || got != e.Str {
					t.Fatalf("kernelConfigOf(%q) = %q, %v; want %q", s, got, err, e.Str)
				}
			}
		}
	})
}
