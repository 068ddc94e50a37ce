package customcall

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
	"goldtrace/kernel/config"
	"goldtrace/kernel/ir/irpb"
)

// Hand-built kernels for the custom-call tests: each is a real IR, encoded
// with kernel/config as a producer would, so the tests go through the whole
// decode → bind → simulate path.

type kkit struct {
	k    *irpb.Kernel
	line int32
}

func newKKit(name string) *kkit {
	return &kkit{k: &irpb.Kernel{SchemaVersion: 1, Name: name, Files: []string{"test_kernels.py"}}}
}

func (b *kkit) tensor(name string, mem irpb.Memory, role irpb.TensorRole, shape ...int64) int32 {
	id := int32(len(b.k.Tensors))
	b.k.Tensors = append(b.k.Tensors, &irpb.Tensor{Id: id, Name: name, Memory: mem, Role: role, Dtype: int32(dtype.F32), Shape: shape, Loc: &irpb.Loc{Line: 1}})
	return id
}

func (b *kkit) param(name string, shape ...int64) int32 {
	id := b.tensor(name, irpb.Memory_SHARED_HBM, irpb.TensorRole_PARAM, shape...)
	b.k.Inputs = append(b.k.Inputs, id)
	return id
}

func (b *kkit) output(name string, shape ...int64) int32 {
	id := b.tensor(name, irpb.Memory_SHARED_HBM, irpb.TensorRole_OUTPUT, shape...)
	b.k.Outputs = append(b.k.Outputs, id)
	return id
}

func (b *kkit) sbuf(name string, shape ...int64) int32 {
	return b.tensor(name, irpb.Memory_SBUF, irpb.TensorRole_TEMP, shape...)
}

// full is the whole tensor as one tile.
func (b *kkit) full(t int32) *irpb.Access {
	sh := b.k.Tensors[t].Shape
	a := &irpb.Access{Tensor: t, Shape: append([]int64{}, sh...)}
	for d := range sh {
		a.Index = append(a.Index, &irpb.Affine{Terms: []*irpb.Term{{Kind: irpb.TermKind_TILE_AXIS, Id: int32(d), Coef: 1}}})
	}
	return a
}

func (b *kkit) inst(op string, dst, src []int32, attrs map[string]*irpb.Attr) {
	b.line++
	in := &irpb.Instruction{Op: op, Attrs: attrs, Loc: &irpb.Loc{Line: b.line + 1}}
	for _, t := range dst {
		in.Dst = append(in.Dst, b.full(t))
	}
	for _, t := range src {
		in.Src = append(in.Src, b.full(t))
	}
	b.k.Body = append(b.k.Body, &irpb.Stmt{Kind: &irpb.Stmt_Inst{Inst: in}})
}

func (b *kkit) dma(dst, src int32) { b.inst("dma", []int32{dst}, []int32{src}, nil) }

func (b *kkit) tt(op string, dst, x, y int32) {
	b.inst("tensor_tensor", []int32{dst}, []int32{x, y}, map[string]*irpb.Attr{"op": {Value: &irpb.Attr_S{S: op}}})
}

// binaryKernel: out = a op b over (p, f) f32 tensors.
func binaryKernel(name, op string, p, f int64) *irpb.Kernel {
	b := newKKit(name)
	a, c := b.param("a", p, f), b.param("b", p, f)
	o := b.output("out", p, f)
	ta, tc, tr := b.sbuf("ta", p, f), b.sbuf("tb", p, f), b.sbuf("tr", p, f)
	b.dma(ta, a)
	b.dma(tc, c)
	b.tt(op, tr, ta, tc)
	b.dma(o, tr)
	return b.k
}

// sumProdKernel returns (a + b, a * b).
func sumProdKernel(p, f int64) *irpb.Kernel {
	b := newKKit("sum_prod")
	a, c := b.param("a", p, f), b.param("b", p, f)
	s, m := b.output("sum", p, f), b.output("prod", p, f)
	ta, tc, ts, tm := b.sbuf("ta", p, f), b.sbuf("tb", p, f), b.sbuf("ts", p, f), b.sbuf("tm", p, f)
	b.dma(ta, a)
	b.dma(tc, c)
	b.tt("add", ts, ta, tc)
	b.tt("multiply", tm, ta, tc)
	b.dma(s, ts)
	b.dma(m, tm)
	return b.k
}

// scaleInPlaceKernel writes a * b into its mutable parameter a and returns a.
func scaleInPlaceKernel(p, f int64) *irpb.Kernel {
	b := newKKit("scale_in_place")
	a, c := b.param("a", p, f), b.param("b", p, f)
	b.k.Tensors[a].Mutable = true
	b.k.Outputs = append(b.k.Outputs, a)
	ta, tc, tr := b.sbuf("ta", p, f), b.sbuf("tb", p, f), b.sbuf("tr", p, f)
	b.dma(ta, a)
	b.dma(tc, c)
	b.tt("multiply", tr, ta, tc)
	b.dma(a, tr)
	return b.k
}

// addConstKernel: out = a + c with c a compile-time constant tensor (inline
// in the IR, and listed in the config's constant_values).
func addConstKernel(c []float32, p, f int64) (*irpb.Kernel, config.ConstantValue) {
	b := newKKit("add_const")
	a := b.param("a", p, f)
	o := b.output("out", p, f)
	ct := b.tensor("c", irpb.Memory_SHARED_HBM, irpb.TensorRole_CONSTANT, p, f)
	data := f32Bytes(c)
	b.k.Tensors[ct].Data = data
	ta, tc, tr := b.sbuf("ta", p, f), b.sbuf("tc", p, f), b.sbuf("tr", p, f)
	b.dma(ta, a)
	b.dma(tc, ct)
	b.tt("add", tr, ta, tc)
	b.dma(o, tr)
	return b.k, config.ConstantValue{Name: "c", Dtype: "float32", Shape: []int64{p, f}, Data: data}
}

// encodeKernel encodes k as a backend_config; edit adjusts the config first.
func encodeKernel(t testing.TB, k *irpb.Kernel, edit func(*config.Config)) string {
	t.Helper()
	c := config.FromKernel(k)
	c.PlatformTarget = "trn1"
	if edit != nil {
		edit(&c)
	}
	s, err := config.Encode(c)
	if err != nil {
		t.Fatalf("encode %s: %v", k.Name, err)
	}
	return s
}

func f32Bytes(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
	}
	return out
}

func randF32(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func f32Tensor(t testing.TB, v []float32, dims ...int64) *tensor.Tensor {
	t.Helper()
	x, err := tensor.FromBytes(dtype.F32, dims, f32Bytes(v))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// wantF32 compares a tensor with expected float32 values bit for bit.
func wantF32(t testing.TB, what string, got *tensor.Tensor, want []float32) {
	t.Helper()
	if got.Type != dtype.F32 || len(got.F32()) != len(want) {
		t.Fatalf("%s: got %v, want f32 with %d elements", what, got, len(want))
	}
	g := got.F32()
	for i := range want {
		if math.Float32bits(g[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, g[i], want[i])
		}
	}
}

func zipF32(a, b []float32, f func(x, y float32) float32) []float32 {
	out := make([]float32, len(a))
	for i := range a {
		out[i] = f(a[i], b[i])
	}
	return out
}
