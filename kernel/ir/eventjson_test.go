package ir

import (
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"goldtrace/kernel/ir/irpb"
)

// A batch in the tracer's format, using every field kind: the fast decoder
// must read it exactly as protojson does.
const sampleBatch = `{"events":[
{"tensor":{"id":0,"name":"a","memory":"SHARED_HBM","role":"PARAM","shape":[256,64],"dtype":11,"mutable":true,"loc":{"file":0,"line":3}}},
{"tensor":{"id":1,"name":"c","memory":"SHARED_HBM","role":"CONSTANT","shape":[2],"dtype":4,"data":"AQAAAAIAAAA=","loc":{"file":0,"line":4}}},
{"tensor":{"id":2,"name":"s","memory":"SBUF","role":"TEMP","shape":[128,64],"dtype":16,"tf32":false,"allocation":{"partition_offset":0,"byte_offset":64,"loop_var":1,"num_free_tiles":2,"bytes_per_tile":128,"kind":"mod"}}},
{"loop_begin":{"start":0,"stop":2,"step":1,"kind":1,"loc":{"file":0,"line":5}}},
{"inst":{"op":"tensor_scalar","loc":{"file":0,"line":6},"engine":"vector",
 "dst":[{"tensor":2,"shape":[128,64],"index":[{"constant":0,"terms":[{"kind":3,"id":0,"coef":1}]},{"terms":[{"kind":3,"id":1,"coef":1}]}]}],
 "src":[{"tensor":0,"shape":[128,64],"index":[{"constant":0,"terms":[{"kind":1,"id":0,"coef":128},{"kind":3,"id":0,"coef":1}]},{"terms":[{"kind":3,"id":1,"coef":1}]}],"dynamic_dim":[1],"dynamic":[{"tensor":1,"shape":[1],"index":[{"constant":0}]}]}],
 "attrs":{"op0":{"s":"add"},"scalar0":{"f":"NaN"},"s1":{"f":-1.5},"r":{"b":true},"n":{"i":7},"ax":{"ints":{"v":[1,2]}},"fl":{"floats":{"v":[0.5,"Infinity"]}}},
 "mask":[{"expr":{"constant":-100,"terms":[{"kind":3,"id":0,"coef":1}]},"cmp":1}],
 "exprs":[{"constant":3}],"preds":[{"expr":{"constant":1},"cmp":4}]}},
{"loop_end":true}]}`

func TestEventDecoderMatchesProtojson(t *testing.T) {
	want := &irpb.BuildBatch{}
	if err := protojson.Unmarshal([]byte(sampleBatch), want); err != nil {
		t.Fatal(err)
	}
	got, err := decodeEventBatch([]byte(sampleBatch))
	if err != nil {
		t.Fatal(err)
	}
	// NaN != NaN under proto.Equal; compare the NaN attribute separately.
	gi, wi := got.Events[4].GetInst(), want.Events[4].GetInst()
	gf, wf := gi.Attrs["scalar0"].GetF(), wi.Attrs["scalar0"].GetF()
	if gf == gf || wf == wf {
		t.Fatalf("scalar0 should be NaN in both: %v %v", gf, wf)
	}
	delete(gi.Attrs, "scalar0")
	delete(wi.Attrs, "scalar0")
	if !proto.Equal(got, want) {
		t.Fatalf("decoders disagree:\n got %v\nwant %v", got, want)
	}
}

func TestEventDecoderRejects(t *testing.T) {
	for _, bad := range []string{
		`{"events":[{"inst":{"op":"dma","bogus":1}}]}`,
		`{"events":[{"tensor":{"memory":"DRAM"}}]}`,
		`{"events":[{"inst":{"op":"x"},"loop_end":true}]}`,
		`{"events":[{"inst":{"op":"x","attrs":{"a":{"f":"huge"}}}}]}`,
		`{"events":`,
	} {
		if _, err := decodeEventBatch([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

func FuzzEventDecoder(f *testing.F) {
	f.Add([]byte(sampleBatch))
	f.Add([]byte(`{"events":[{"loop_end":true}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		batch, err := decodeEventBatch(b)
		if err != nil {
			return
		}
		bl := NewBuilder("fuzz")
		if _, _, err := bl.Append(batch); err != nil {
			return
		}
		k, err := bl.Finish(Signature{})
		if err != nil {
			return
		}
		_ = Validate(k)
		_ = Format(k)
	})
}
