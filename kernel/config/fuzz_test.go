package config

import "testing"

// FuzzDecode: any string decodes to a config or a *Error, never a panic, and
// what decodes encodes again.
func FuzzDecode(f *testing.F) {
	s, err := Encode(sampleConfig())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(s)
	f.Add("")
	f.Add(b64(`{"kernel_version":1}`))
	f.Add(b64(`{"kernel_version":2}`))
	f.Fuzz(func(t *testing.T, s string) {
		c, k, err := Decode(s)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("not a *Error: %T %v", err, err)
			}
			if c != nil || k != nil {
				t.Fatal("partial output with an error")
			}
			return
		}
		if _, err := Encode(*c); err != nil {
			t.Fatalf("a decoded config does not encode: %v", err)
		}
	})
}
