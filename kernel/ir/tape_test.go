package ir

import (
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"goldtrace/kernel/ir/irpb"
)

// The same events twice: as the protobuf JSON mapping of BuildBatch (decoded
// by protojson-compatible rules) and as the tracer's tape. Every field kind
// appears, and the tape's whole-tensor access stands for the explicit one.
const tapeSampleJSON = `{"events":[
{"tensor":{"name":"a","memory":"SHARED_HBM","role":"PARAM","shape":[256,64],"dtype":11,"mutable":true,"loc":{"file":0,"line":3}}},
{"tensor":{"name":"c","memory":"SHARED_HBM","role":"CONSTANT","shape":[2],"dtype":4,"data":"AQAAAAIAAAA=","loc":{"file":0,"line":4}}},
{"tensor":{"name":"s","memory":"SBUF","role":"TEMP","shape":[128,1,64],"dtype":16,"tf32":true,"allocation":{"partition_offset":0,"byte_offset":64,"loop_var":1,"num_free_tiles":2,"bytes_per_tile":128,"kind":"mod"},"loc":{"file":1,"line":9}}},
{"loop_begin":{"start":0,"stop":2,"step":1,"kind":1,"loc":{"file":0,"line":5}}},
{"inst":{"op":"tensor_scalar","loc":{"file":0,"line":6},"engine":"vector",
 "dst":[{"tensor":2,"shape":[128,1,64],"index":[{"terms":[{"kind":3,"id":0,"coef":1}]},{},{"terms":[{"kind":3,"id":2,"coef":1}]}]}],
 "src":[{"tensor":0,"shape":[128,64],"index":[{"constant":0,"terms":[{"kind":1,"id":0,"coef":128},{"kind":3,"id":0,"coef":1}]},{"terms":[{"kind":3,"id":1,"coef":1}]}],"dynamic_dim":[1],"dynamic":[{"tensor":1,"shape":[1],"index":[{"constant":-7}]}]}],
 "attrs":{"op0":{"s":"add \"q\" é"},"scalar0":{"f":"NaN"},"s1":{"f":-1.5},"inf":{"f":"-Infinity"},"r":{"b":true},"z":{"b":false},"n":{"i":-7},"ax":{"ints":{"v":[1,2]}},"e":{"ints":{}},"fl":{"floats":{"v":[0.5,"Infinity",1e-30]}}},
 "mask":[{"expr":{"constant":-100,"terms":[{"kind":3,"id":0,"coef":1}]},"cmp":1}],
 "exprs":[{"constant":3}],"preds":[{"expr":{"constant":1},"cmp":4}]}},
{"inst":{"op":"dma","loc":{"file":0,"line":7},"dst":[{"tensor":2,"shape":[128,1,64],"index":[{"terms":[{"kind":3,"id":0,"coef":1}]},{},{"terms":[{"kind":3,"id":2,"coef":1}]}]}]}},
{"loop_end":true}]}`

const tapeSample = `[
[0,"a","SHARED_HBM","PARAM",[256,64],11,2,0,3],
[0,"c","SHARED_HBM","CONSTANT",[2],4,0,0,4,null,"AQAAAAIAAAA="],
[0,"s","SBUF","TEMP",[128,1,64],16,1,1,9,[0,64,1,2,128,"mod"]],
[2,0,2,1,1,0,5],
[1,"tensor_scalar",0,6,[2],[[0,[128,64],[[0,1,0,128,3,0,1],[0,3,1,1]],[1],[[1,[1],[[-7]]]]]],
 {"op0":"add \"q\" \u00e9","scalar0":NaN,"s1":-1.5,"inf":-Infinity,"r":true,"z":false,"n":-7,"ax":[1,2],"e":[],"fl":[0.5,Infinity,1e-30]},
 [[1,-100,3,0,1]],[[3]],[[4,1]],"vector"],
[1,"dma",0,7,[2],null],
[3]]`

func buildFrom(t *testing.T, appendFn func(*Builder, []byte) ([]int32, []int32, error), data string) *irpb.Kernel {
	t.Helper()
	b := NewBuilder("sample")
	if _, _, err := appendFn(b, []byte(data)); err != nil {
		t.Fatal(err)
	}
	k, err := b.Finish(Signature{Inputs: []int32{0}, Files: []string{"f.py", "g.py"}})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestTapeMatchesProtobufJSON(t *testing.T) {
	want := buildFrom(t, (*Builder).AppendJSON, tapeSampleJSON)
	got := buildFrom(t, (*Builder).AppendTape, tapeSample)
	// NaN != NaN under proto.Equal: check it, then compare the rest.
	gi, wi := got.Body[0].GetLoop().Body[0].GetInst(), want.Body[0].GetLoop().Body[0].GetInst()
	if g, w := gi.Attrs["scalar0"].GetF(), wi.Attrs["scalar0"].GetF(); !math.IsNaN(g) || !math.IsNaN(w) {
		t.Fatalf("scalar0 should be NaN in both: %v %v", g, w)
	}
	delete(gi.Attrs, "scalar0")
	delete(wi.Attrs, "scalar0")
	if !proto.Equal(got, want) {
		t.Fatalf("tape and protobuf JSON disagree:\n got %s\nwant %s", Format(got), Format(want))
	}
	if got.Tensors[2].Allocation.GetKind() != "mod" || string(got.Tensors[1].Data) != "\x01\x00\x00\x00\x02\x00\x00\x00" {
		t.Fatalf("tensor fields lost: %v", got.Tensors)
	}
}

func TestTapeRejects(t *testing.T) {
	for _, c := range []struct{ tape, want string }{
		{`[[1,"dma",0,1,[5],null]]`, "tensor 5, which is not declared"},
		{`[[0,"a","DRAM","PARAM",[1],11,0,0,1]]`, `unknown memory "DRAM"`},
		{`[[0,"a","SBUF","BOSS",[1],11,0,0,1]]`, `unknown tensor role "BOSS"`},
		{`[[0,"a","SBUF","TEMP",[1],11,4,0,1]]`, "unknown tensor flags 4"},
		{`[[9]]`, "unknown event tag 9"},
		{`[[1,"x",0,1,null,null,{"a":1,"a":2}]]`, `attribute "a" given twice`},
		{`[[1,"x",0,1,null,null,{"a":1.5e999}]]`, "number 1.5e999"},
		{`[[1,"x",0,1,null,null,{"a":[1,"s"]}]]`, "expected a number"},
		{`[[2,0,1.5,1,1,0,1]]`, "expected an integer, found 1.5"},
		{`[[2,0,1,1,99999999999,0,1]]`, "does not fit in 32 bits"},
		{`[[2,0,1,1,1,0,1]`, "unexpected end of input"},
		{`[[2,0,1,1,1,0,1]] x`, "trailing data"},
		{`[[1,"x`, "unterminated string"},
		{"[[0,\"a\x01\",\"SBUF\",\"TEMP\",[1],11,0,0,1]]", "control character"},
		{`[[0,"a","SBUF","TEMP",[1],11,0,0,1,null,"!!"]]`, "data"},
		{`[[3]]`, "closes a loop, but none is open"},
	} {
		b := NewBuilder("bad")
		_, _, err := b.AppendTape([]byte(c.tape))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.tape, err, c.want)
		}
	}
}

func TestTapeEmptyAndFinished(t *testing.T) {
	b := NewBuilder("e")
	if ids, vars, err := b.AppendTape([]byte(" [ ] ")); err != nil || ids != nil || vars != nil {
		t.Fatalf("empty tape: %v %v %v", ids, vars, err)
	}
	if _, err := b.Finish(Signature{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.AppendTape([]byte(`[[3]]`)); err == nil || !strings.Contains(err.Error(), "already finished") {
		t.Fatalf("append after finish: %v", err)
	}
}

// FuzzTape: arbitrary bytes never panic the decoder; whatever builds also
// validates, formats and serializes without panicking.
func FuzzTape(f *testing.F) {
	f.Add([]byte(tapeSample))
	f.Add([]byte(`[[0,"a","SBUF","TEMP",[128,4],11,0,0,1],[1,"memset",0,2,[0],null,{"value":0.0}]]`))
	f.Add([]byte(`[[2,0,4,1,1,0,1],[3]]`))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzBuild(t, (*Builder).AppendTape, data) })
}

// fuzzBuild: arbitrary bytes never panic a decoder; whatever builds also
// validates, formats and serializes without panicking.
func fuzzBuild(t *testing.T, appendFn func(*Builder, []byte) ([]int32, []int32, error), data []byte) {
	b := NewBuilder("fuzz")
	if _, _, err := appendFn(b, data); err != nil {
		if err.Error() == "" {
			t.Fatal("empty error text")
		}
		return
	}
	k, err := b.Finish(Signature{})
	if err != nil {
		return
	}
	_ = Validate(k)
	_ = Format(k)
	_, _ = Marshal(k)
}
