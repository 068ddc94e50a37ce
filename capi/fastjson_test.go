package main

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"goldtrace/kernel/ir"
)

var sigSeeds = []string{
	chainSig,
	`{"grid": [2, 3], "inputs": [0, 1], "outputs": [], "files": ["/a/b.py"], "num_cores": 2, "core_grid_dim": 0, "options": {"a": "1", "b": "x y"}, "mutable": [3]}`,
	`{"grid":[],"inputs":[],"outputs":[1],"files":[],"num_cores":0,"core_grid_dim":-1,"options":{},"mutable":[]}`,
	`{"grid": [1], "files": ["caf\u00e9.py"], "options": null}`,
	`{"GRID": [4], "extra": 1}`,
	`{"grid": [1.5]}`,
	`{"num_cores": 2147483648}`,
	`{"grid": [1], "grid": [2]}`,
	`{"options": {"k": "a", "k": "b"}}`,
	` { "grid" : [ 1 , 2 ] } `,
}

var extrasSeeds = []string{
	chainExtras,
	`{"func_name": "", "platform_target": "trn2", "platform_target_is_fallback": false, "opts": {}, "has_collectives": true, "constant_values": [], "kernel_return": false, "result_is_sequence": true}`,
	`{"constant_values": [{"name": "a", "dtype": "float32", "shape": [], "data": ""}, {"name": "b", "dtype": "int32", "shape": [1, 2], "data": "AAAAAAEAAAA="}]}`,
	`{"constant_values": [{"name": "a", "data": "!!"}]}`,
	`{"has_collectives": null}`,
	`{"func_name": "tab\tin"}`,
	`{"func_name": "k"} x`,
}

// TestFastJSONMatches: wherever the scanner reads a signature or extras
// object, json.Unmarshal reads the same value; where it declines, the
// answer is json.Unmarshal's. Seeds and random edits of them (bytes
// replaced, dropped, doubled).
func TestFastJSONMatches(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	alphabet := []byte(`{}[],:" 0123456789-.etrufalsn\ab`)
	mutate := func(s string) string {
		b := []byte(s)
		for range 1 + r.IntN(3) {
			if len(b) == 0 {
				break
			}
			i := r.IntN(len(b))
			switch r.IntN(3) {
			case 0:
				b[i] = alphabet[r.IntN(len(alphabet))]
			case 1:
				b = append(b[:i], b[i+1:]...)
			default:
				b = append(b[:i+1], b[i:]...)
			}
		}
		return string(b)
	}
	scanned := 0
	check := func(in string) {
		if sig, ok := scanSignature([]byte(in)); ok {
			scanned++
			var want ir.Signature
			if err := json.Unmarshal([]byte(in), &want); err != nil || !reflect.DeepEqual(sig, want) {
				t.Fatalf("signature %q: scanned %#v; json.Unmarshal %#v, %v", in, sig, want, err)
			}
		}
		if ex, ok := scanExtras([]byte(in)); ok {
			scanned++
			var want configExtras
			if err := json.Unmarshal([]byte(in), &want); err != nil || !reflect.DeepEqual(ex, want) {
				t.Fatalf("extras %q: scanned %#v; json.Unmarshal %#v, %v", in, ex, want, err)
			}
		}
	}
	for _, seeds := range [][]string{sigSeeds, extrasSeeds} {
		for _, s := range seeds {
			check(s)
			for range 3000 {
				check(mutate(s))
			}
		}
	}
	if scanned < 1000 {
		t.Fatalf("the scanner read only %d inputs: the edits must leave many readable", scanned)
	}
	// the forms Python writes take the scanner's path
	for _, s := range []string{chainSig, sigSeeds[1], sigSeeds[2]} {
		if _, ok := scanSignature([]byte(s)); !ok {
			t.Errorf("the scanner declines %s", s)
		}
	}
	for _, s := range []string{chainExtras, extrasSeeds[1], extrasSeeds[2]} {
		if _, ok := scanExtras([]byte(s)); !ok {
			t.Errorf("the scanner declines %s", s)
		}
	}
}
