package ir

import (
	"math/rand/v2"
	"testing"

	"goldtrace/kernel/ir/irpb"
)

func TestDisplayOpMatchesTable(t *testing.T) {
	for op, want := range isaNames {
		if got := DisplayOp(op); got != want {
			t.Errorf("DisplayOp(%q) = %q, isaNames says %q", op, got, want)
		}
	}
	for _, op := range OpNames() {
		if _, renamed := isaNames[op]; !renamed && DisplayOp(op) != op {
			t.Errorf("DisplayOp(%q) = %q, isaNames has no entry", op, DisplayOp(op))
		}
	}
}

// TestAttrsFastPathAgrees: the error-free attribute check (attrsOK) accepts
// exactly the instructions the message-building path finds no fault with.
func TestAttrsFastPathAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	checked, accepted := 0, 0
	for range 3000 {
		data := make([]byte, 64+r.IntN(512))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		k := genKernel(&byteSource{b: data})
		var walk func([]*irpb.Stmt)
		walk = func(body []*irpb.Stmt) {
			for _, st := range body {
				if l := st.GetLoop(); l != nil {
					walk(l.Body)
					continue
				}
				in := st.GetInst()
				spec, ok := opTable[in.Op]
				if !ok {
					continue
				}
				v := &validator{k: k}
				slow := v.attrErrors(in, DisplayOp(in.Op), spec) && len(v.sink.list) == 0
				if fast := attrsOK(in, spec); fast != slow {
					t.Fatalf("%s %v: attrsOK %v, attrErrors %v (%v)", in.Op, in.Attrs, fast, slow, v.sink.list)
				}
				checked++
				if slow {
					accepted++
				}
			}
		}
		walk(k.Body)
	}
	if accepted == 0 || accepted == checked {
		t.Fatalf("generator gave %d of %d instructions good attributes: both paths need exercising", accepted, checked)
	}
}
