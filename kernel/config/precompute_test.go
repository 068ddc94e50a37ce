package config

import (
	"testing"

	"goldtrace/kernel/ir"
	"goldtrace/kernel/ir/irpb"
)

// TestPrecomputedEncodeMatches: encoding with the precomputed parts gives
// exactly what Encode gives, for good configs and each kind of bad one, and
// the Config it hands out is the caller's to change.
func TestPrecomputedEncodeMatches(t *testing.T) {
	three := chainKernelT(t) // a third IR length
	three.Name = "chain3"
	for _, k := range []*irpb.Kernel{smallKernel(), chainKernelT(t), three} {
		b, err := ir.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		// guesses of each JSON length mod 3 before the IR, and none
		var ps []*Precomputed
		for _, name := range []string{"", "f", "fg", "fgh"} {
			p := Precompute(k, b, func(c *Config) { c.FuncName = name })
			if p.pre64 == nil {
				t.Fatalf("%s: no base64 made ahead", k.Name)
			}
			ps = append(ps, p)
		}
		ps = append(ps, Precompute(k, b, nil))
		seen := map[int]bool{}
		for _, p := range ps[:4] {
			seen[p.pre64.r] = true
		}
		if len(seen) != 3 {
			t.Fatalf("%s: the guesses cover residues %v, not all three", k.Name, seen)
		}
		for _, p := range ps {
			edits := map[string]func(c *Config){
				"as is": func(c *Config) {},
				"extras": func(c *Config) {
					c.FuncName, c.PlatformTarget, c.Opts["mode"], c.KernelReturn = "f", "trn2", "x", false
				},
				"constant": func(c *Config) {
					c.ConstantValues = []ConstantValue{{Name: "c", Dtype: "int8", Shape: []int64{2}, Data: []byte{1, 2}}}
				},
				"bad constant": func(c *Config) {
					c.ConstantValues = []ConstantValue{{Name: "c", Dtype: "int8", Shape: []int64{3}, Data: []byte{1, 2}}}
				},
				// the JSON before the IR at each length mod 3
				"name 1":      func(c *Config) { c.FuncName = "f" },
				"name 2":      func(c *Config) { c.FuncName = "fg" },
				"name 3":      func(c *Config) { c.FuncName = "fgh" },
				"bad grid":    func(c *Config) { c.Grid = []int64{7} },
				"bad dims":    func(c *Config) { c.SerializeDims = nil },
				"bad version": func(c *Config) { c.KernelVersion = KernelVersion + 1 },
				"other kernel": func(c *Config) {
					c.Kernel = smallKernel()
					c.Grid, c.SerializeDims = c.Kernel.Grid, inputDims(c.Kernel)
				},
			}
			for name, edit := range edits {
				want := FromKernel(k)
				edit(&want)
				got := p.Config()
				edit(&got)
				s1, e1 := Encode(want)
				s2, e2 := p.Encode(got)
				if s1 != s2 || (e1 == nil) != (e2 == nil) || (e1 != nil && e1.Error() != e2.Error()) {
					t.Errorf("%s %s: Encode %q, %v; precomputed %q, %v", k.Name, name, s1, e1, s2, e2)
				}
			}
			if c := p.Config(); c.Opts["mode"] != k.Options["mode"] {
				t.Errorf("%s: an edit of a handed-out Config leaked into the next: opts %v", k.Name, c.Opts)
			}
		}
	}
}

func chainKernelT(t *testing.T) *irpb.Kernel {
	batches, sig := chainTape(100)
	bl := ir.NewBuilder("chain")
	for _, s := range batches {
		if _, _, err := bl.AppendTape(s); err != nil {
			t.Fatal(err)
		}
	}
	k, err := bl.Finish(sig)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
