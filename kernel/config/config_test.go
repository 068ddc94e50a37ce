package config

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"goldtrace/engine/dtype"
	"goldtrace/kernel/ir"
	"goldtrace/kernel/ir/irpb"
)

// smallKernel: out[128,512] = a.T @ b with a [64,128], b [64,512], over a 2x1 grid.
func smallKernel() *irpb.Kernel {
	id := func(d int32) *irpb.Affine {
		return &irpb.Affine{Terms: []*irpb.Term{{Kind: irpb.TermKind_TILE_AXIS, Id: d, Coef: 1}}}
	}
	acc := func(t int32, shape ...int64) *irpb.Access {
		return &irpb.Access{Tensor: t, Shape: shape, Index: []*irpb.Affine{id(0), id(1)}}
	}
	loc := &irpb.Loc{File: 0, Line: 9}
	tensors := []*irpb.Tensor{
		{Id: 0, Name: "a", Memory: irpb.Memory_SHARED_HBM, Role: irpb.TensorRole_PARAM, Dtype: int32(dtype.BF16), Shape: []int64{64, 128}},
		{Id: 1, Name: "b", Memory: irpb.Memory_SHARED_HBM, Role: irpb.TensorRole_PARAM, Dtype: int32(dtype.BF16), Shape: []int64{64, 512}},
		{Id: 2, Name: "sa", Memory: irpb.Memory_SBUF, Role: irpb.TensorRole_TEMP, Dtype: int32(dtype.BF16), Shape: []int64{64, 128}},
		{Id: 3, Name: "sb", Memory: irpb.Memory_SBUF, Role: irpb.TensorRole_TEMP, Dtype: int32(dtype.BF16), Shape: []int64{64, 512}},
		{Id: 4, Name: "ps", Memory: irpb.Memory_PSUM, Role: irpb.TensorRole_TEMP, Dtype: int32(dtype.F32), Shape: []int64{128, 512}},
	}
	inst := func(op string, dst *irpb.Access, src ...*irpb.Access) *irpb.Stmt {
		return &irpb.Stmt{Kind: &irpb.Stmt_Inst{Inst: &irpb.Instruction{Op: op, Dst: []*irpb.Access{dst}, Src: src, Loc: loc}}}
	}
	return &irpb.Kernel{
		SchemaVersion: ir.SchemaVersion, Name: "mm", Grid: []int64{2, 1}, Files: []string{"k.py"},
		Tensors: tensors, Inputs: []int32{0, 1}, Options: map[string]string{"mode": "jax"},
		Body: []*irpb.Stmt{
			inst("dma", acc(2, 64, 128), acc(0, 64, 128)),
			inst("dma", acc(3, 64, 512), acc(1, 64, 512)),
			inst("matmul", acc(4, 128, 512), acc(2, 64, 128), acc(3, 64, 512)),
		},
	}
}

func sampleConfig() Config {
	c := FromKernel(smallKernel())
	c.PlatformTarget = "trn1"
	c.PlatformTargetIsFallback = true
	c.ConstantValues = []ConstantValue{{Name: "ident", Dtype: "int8", Shape: []int64{2, 2}, Data: []byte{1, 0, 0, 1}}}
	c.ResultIsSequence = true
	return c
}

func TestFromKernel(t *testing.T) {
	c := FromKernel(smallKernel())
	if c.MatmulMACCount != 2*128*512*64 {
		t.Errorf("mac count %d", c.MatmulMACCount)
	}
	if !reflect.DeepEqual(c.SerializeDims, [][]int64{{64, 128}, {64, 512}}) {
		t.Errorf("dims %v", c.SerializeDims)
	}
	if c.FuncName != "mm" || c.HasCollectives || c.Opts["mode"] != "jax" || !reflect.DeepEqual(c.Grid, []int64{2, 1}) {
		t.Errorf("config %+v", c)
	}
}

func TestRoundTrip(t *testing.T) {
	c := sampleConfig()
	s, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	// exactly the 14 keys, as the JSON an outside reader sees
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if len(m) != 14 {
		t.Fatalf("%d keys: %v", len(m), m)
	}
	for _, k := range []string{"kernel_version", "func_name", "grid", "has_collectives", "matmul_mac_count", "platform_target", "platform_target_is_fallback", "opts", "serialize_dims", "serialize_ir_string", "tiled", "constant_values", "kernel_return", "result_is_sequence"} {
		if _, ok := m[k]; !ok {
			t.Errorf("key %s missing", k)
		}
	}
	irb, _ := base64.StdEncoding.DecodeString(m["serialize_ir_string"].(string))
	if k, err := ir.Unmarshal(irb); err != nil || !proto.Equal(k, c.Kernel) {
		t.Fatalf("serialize_ir_string is not the IR: %v", err)
	}

	got, k, err := Decode(s)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(k, c.Kernel) || got.Kernel != k {
		t.Fatal("kernel differs")
	}
	got.Kernel, c.Kernel = nil, nil
	if !reflect.DeepEqual(*got, c) {
		t.Fatalf("config differs:\n%+v\n%+v", *got, c)
	}
}

func TestEncodeEmptyLists(t *testing.T) {
	k := smallKernel()
	k.Grid = nil
	c := FromKernel(k)
	s, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(s)
	for _, want := range []string{`"grid":[]`, `"constant_values":[]`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("%s not in %s", want, raw)
		}
	}
	if _, _, err := Decode(s); err != nil {
		t.Fatal(err)
	}
}

// rewrite decodes a valid config's JSON into a map, lets f change it, and re-encodes.
func rewrite(t *testing.T, f func(m map[string]json.RawMessage)) string {
	t.Helper()
	s, err := Encode(sampleConfig())
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(s)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	out, _ := json.Marshal(m)
	return base64.StdEncoding.EncodeToString(out)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func irString(t *testing.T, k *irpb.Kernel) json.RawMessage {
	data, err := proto.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := json.Marshal(base64.StdEncoding.EncodeToString(data))
	return q
}

func TestDecodeErrors(t *testing.T) {
	set := func(key, v string) func(m map[string]json.RawMessage) {
		return func(m map[string]json.RawMessage) { m[key] = json.RawMessage(v) }
	}
	cases := []struct {
		name  string
		input string
		kind  ErrorKind
		key   string
		want  string
	}{
		{"not base64", "@@@", ErrBase64, "", "not standard base64"},
		{"not json", b64("hello"), ErrJSON, "", "not a JSON object"},
		{"json array", b64("[1,2]"), ErrJSON, "", "not a JSON object"},
		{"trailing", b64(`{"kernel_version":1} {}`), ErrJSON, "", "data after the object"},
		{"duplicate", b64(`{"kernel_version":1,"kernel_version":1}`), ErrExtraKey, "kernel_version", "appears twice"},
		{"newer", rewrite(t, set("kernel_version", "2")), ErrVersion, "kernel_version", "kernel_version 2 is newer"},
		{"newer wins over keys", b64(`{"kernel_version":9,"klir_binary":{}}`), ErrVersion, "kernel_version", "newer"},
		{"unknown version", rewrite(t, set("kernel_version", `"v2"`)), ErrVersion, "kernel_version", "unknown kernel_version"},
		{"zero version", rewrite(t, set("kernel_version", "0")), ErrVersion, "kernel_version", "unknown kernel_version 0"},
		{"fraction version", rewrite(t, set("kernel_version", "1.5")), ErrVersion, "kernel_version", "unknown kernel_version 1.5"},
		{"no version", b64(`{"func_name":"x"}`), ErrMissingKey, "kernel_version", "no \"kernel_version\""},
		{"missing", rewrite(t, func(m map[string]json.RawMessage) { delete(m, "tiled") }), ErrMissingKey, "tiled", `no "tiled"`},
		{"extra", rewrite(t, set("klir_binary", "{}")), ErrExtraKey, "klir_binary", `unexpected key(s) "klir_binary"`},
		{"grid type", rewrite(t, set("grid", `"2x1"`)), ErrValue, "grid", "expected a list of integers"},
		{"grid value", rewrite(t, set("grid", `[2,0]`)), ErrValue, "grid", "grid[1] = 0"},
		{"grid vs ir", rewrite(t, set("grid", `[2,2]`)), ErrValue, "grid", "disagrees with the kernel IR's grid [2 1]"},
		{"bool type", rewrite(t, set("has_collectives", `1`)), ErrValue, "has_collectives", "expected a boolean"},
		{"null", rewrite(t, set("opts", `null`)), ErrValue, "opts", "null"},
		{"opts type", rewrite(t, set("opts", `{"a":1}`)), ErrValue, "opts", "expected an object of strings"},
		{"macs", rewrite(t, set("matmul_mac_count", `-4`)), ErrValue, "matmul_mac_count", "negative"},
		{"dims", rewrite(t, set("serialize_dims", `[[64,128],[64,256]]`)), ErrValue, "serialize_dims", "parameter 1: shape [64 256] disagrees"},
		{"dims count", rewrite(t, set("serialize_dims", `[[64,128]]`)), ErrValue, "serialize_dims", "1 shapes for a kernel with 2 parameters"},
		{"const field", rewrite(t, set("constant_values", `[{"name":"c","dtype":"int8","shape":[1],"data":"AA==","extra":1}]`)), ErrValue, "constant_values", "unknown field"},
		{"const dtype", rewrite(t, set("constant_values", `[{"name":"c","dtype":"int3","shape":[1],"data":"AA=="}]`)), ErrValue, "constant_values", `unknown dtype "int3"`},
		{"const size", rewrite(t, set("constant_values", `[{"name":"c","dtype":"float32","shape":[2],"data":"AA=="}]`)), ErrValue, "constant_values", "needs 8 bytes of data, has 1"},
		{"ir type", rewrite(t, set("serialize_ir_string", `5`)), ErrValue, "serialize_ir_string", "expected a string"},
		{"ir base64", rewrite(t, set("serialize_ir_string", `"!!"`)), ErrBase64, "serialize_ir_string", "not standard base64"},
		{"ir garbage", rewrite(t, set("serialize_ir_string", `"`+b64("\xff\xff\xff")+`"`)), ErrIR, "serialize_ir_string", "not a kernel IR protobuf"},
		{"ir newer schema", rewrite(t, func(m map[string]json.RawMessage) {
			k := smallKernel()
			k.SchemaVersion = 5
			m["serialize_ir_string"] = irString(t, k)
		}), ErrIR, "serialize_ir_string", "schema_version 5 is newer"},
		{"ir bad reference", rewrite(t, func(m map[string]json.RawMessage) {
			k := smallKernel()
			k.Body[2].GetInst().Src[0].Tensor = 77
			m["serialize_ir_string"] = irString(t, k)
		}), ErrIR, "serialize_ir_string", "k.py:9: nc_matmul: src[0]: tensor 77 does not exist"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, k, err := Decode(c.input)
			if err == nil || cfg != nil || k != nil {
				t.Fatalf("no error (or partial output): %v", err)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("not a *config.Error: %T %v", err, err)
			}
			if e.Kind != c.kind || e.Key != c.key || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got kind %v key %q: %v; want kind %v key %q containing %q", e.Kind, e.Key, err, c.kind, c.key, c.want)
			}
		})
	}
	// the IR's own errors stay reachable
	_, _, err := Decode(cases[len(cases)-1].input)
	var ie *ir.Error
	if !errors.As(err, &ie) || ie.Rule != "ir-structure" || ie.Loc != "k.py:9" {
		t.Fatalf("ir error not reachable: %v", err)
	}
}

func TestEncodeErrors(t *testing.T) {
	c := sampleConfig()
	c.KernelVersion = 3
	if _, err := Encode(c); err == nil || err.(*Error).Kind != ErrVersion {
		t.Errorf("version: %v", err)
	}
	c = sampleConfig()
	c.Kernel = nil
	if _, err := Encode(c); err == nil || err.(*Error).Kind != ErrIR {
		t.Errorf("nil kernel: %v", err)
	}
	c = sampleConfig()
	c.Kernel.Inputs = append(c.Kernel.Inputs, 40)
	if _, err := Encode(c); err == nil || err.(*Error).Kind != ErrIR {
		t.Errorf("broken kernel: %v", err)
	}
	c = sampleConfig()
	c.SerializeDims[0][0] = 1
	if _, err := Encode(c); err == nil || err.(*Error).Key != "serialize_dims" {
		t.Errorf("dims: %v", err)
	}
}
