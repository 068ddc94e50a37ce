package ir

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

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

// TestValidateMarshal: the verdict is Validate's, the bytes Marshal's, and
// done is called exactly when the structure check passes.
func TestValidateMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	kernels := []*irpb.Kernel{tiledMatmul(256, 256, 256).k}
	for range 300 {
		data := make([]byte, 64+r.IntN(512))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		kernels = append(kernels, genKernel(&byteSource{b: data}))
	}
	broken := genKernel(&byteSource{b: []byte{7, 7, 7}})
	broken.Tensors[0].Id = 5
	kernels = append(kernels, broken, &irpb.Kernel{})
	for i, k := range kernels {
		type result struct {
			b   []byte
			err error
		}
		got := make(chan result, 2)
		err := ValidateMarshal(k, func(b []byte, err error) { got <- result{b, err} })
		want := Validate(k)
		if (err == nil) != (want == nil) || (err != nil && err.Error() != want.Error()) {
			t.Fatalf("kernel %d: ValidateMarshal %v, Validate %v", i, err, want)
		}
		wantBytes, mErr := Marshal(k)
		if mErr != nil {
			select {
			case r := <-got:
				t.Fatalf("kernel %d: done called (%v) for a kernel failing the structure check (%v)", i, r.err, mErr)
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		r := <-got
		if r.err != nil || !bytes.Equal(r.b, wantBytes) {
			t.Fatalf("kernel %d: done got %d bytes, %v; Marshal %d bytes", i, len(r.b), r.err, len(wantBytes))
		}
	}
}
