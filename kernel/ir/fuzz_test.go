package ir

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	"goldtrace/engine/dtype"
	"goldtrace/kernel/ir/irpb"
)

// FuzzUnmarshal: decoding arbitrary bytes, then validating, formatting and
// counting MACs of whatever decodes, never panics or hangs.
func FuzzUnmarshal(f *testing.F) {
	seeds := []*irpb.Kernel{tiledMatmul(256, 1024, 256).k}
	b := newKernel("masked")
	b.k.Grid = []int64{2, 2}
	x := b.sbuf("x", dtype.F32, 128, 4, 8)
	y := b.param("y", dtype.F32, 256, 32)
	v := b.newVar()
	in := op("tensor_copy", 7, accs(tile(x, sh(128, 4, 8))), accs(&irpb.Access{Tensor: y, Shape: sh(128, 4, 8), Index: []*irpb.Affine{aff(0, ax(0), pid(0, 128)), aff(0, ax(1), ax(2), lv(v, 12))}}), nil)
	in.Mask = []*irpb.Predicate{{Expr: aff(-200, ax(0), pid(0, 128)), Cmp: irpb.Cmp_LT}}
	b.add(loop(v, 0, 4, 1, 6, st(in)))
	seeds = append(seeds, b.k)
	for _, k := range seeds {
		data, err := Marshal(k)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte{})
	f.Add([]byte{0x08, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := Unmarshal(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error text")
			}
			return
		}
		_ = Validate(k)
		_ = Format(k)
		_ = MatmulMACs(k)
		got, err := Marshal(k)
		if err != nil {
			t.Fatalf("Marshal refuses what Unmarshal accepted: %v", err)
		}
		deterministic := proto.MarshalOptions{Deterministic: true}
		if want, _ := deterministic.Marshal(k); !bytes.Equal(got, want) {
			t.Fatalf("the hand-written encoder differs from protobuf-go on a decoded kernel")
		}
	})
}
