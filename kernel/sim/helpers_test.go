package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
	"goldtrace/internal/pyref"
	"goldtrace/kernel/ir/irpb"
)

// kb builds kernels by hand for the tests.
type kb struct {
	k     *irpb.Kernel
	stack [][]*irpb.Stmt
	line  int32
}

func newK(name string, grid ...int64) *kb {
	return &kb{k: &irpb.Kernel{SchemaVersion: 1, Name: name, Grid: grid, Files: []string{"test_kernel.py"}}, stack: [][]*irpb.Stmt{nil}}
}

func (b *kb) tensor(name string, mem irpb.Memory, role irpb.TensorRole, dt dtype.Type, shape ...int64) int32 {
	id := int32(len(b.k.Tensors))
	b.k.Tensors = append(b.k.Tensors, &irpb.Tensor{Id: id, Name: name, Memory: mem, Role: role, Dtype: int32(dt), Shape: shape})
	return id
}

func (b *kb) param(name string, dt dtype.Type, shape ...int64) int32 {
	id := b.tensor(name, irpb.Memory_SHARED_HBM, irpb.TensorRole_PARAM, dt, shape...)
	b.k.Inputs = append(b.k.Inputs, id)
	return id
}

func (b *kb) output(name string, dt dtype.Type, shape ...int64) int32 {
	id := b.tensor(name, irpb.Memory_SHARED_HBM, irpb.TensorRole_OUTPUT, dt, shape...)
	b.k.Outputs = append(b.k.Outputs, id)
	return id
}

func (b *kb) sbuf(name string, dt dtype.Type, shape ...int64) int32 {
	return b.tensor(name, irpb.Memory_SBUF, irpb.TensorRole_TEMP, dt, shape...)
}

func (b *kb) psum(name string, dt dtype.Type, shape ...int64) int32 {
	return b.tensor(name, irpb.Memory_PSUM, irpb.TensorRole_TEMP, dt, shape...)
}

func (b *kb) shape(t int32) []int64 { return b.k.Tensors[t].Shape }

// full is the whole tensor as one tile.
func (b *kb) full(t int32) *irpb.Access {
	sh := b.shape(t)
	a := &irpb.Access{Tensor: t, Shape: append([]int64{}, sh...)}
	for d := range sh {
		a.Index = append(a.Index, aff(0, tax(d, 1)))
	}
	return a
}

// tile is the box of the given shape at the given per-dim affine offsets
// (tile axis k runs along tensor dim k).
func (b *kb) tile(t int32, shape []int64, offs ...*irpb.Affine) *irpb.Access {
	a := &irpb.Access{Tensor: t, Shape: shape}
	for d := range b.shape(t) {
		o := &irpb.Affine{}
		if d < len(offs) && offs[d] != nil {
			o = offs[d]
		}
		ix := &irpb.Affine{Constant: o.Constant, Terms: append([]*irpb.Term{}, o.Terms...)}
		if d < len(shape) {
			ix.Terms = append(ix.Terms, tax(d, 1))
		}
		a.Index = append(a.Index, ix)
	}
	return a
}

func acc(t int32, shape []int64, idx ...*irpb.Affine) *irpb.Access {
	return &irpb.Access{Tensor: t, Shape: shape, Index: idx}
}

func aff(c int64, terms ...*irpb.Term) *irpb.Affine { return &irpb.Affine{Constant: c, Terms: terms} }
func tax(k int, coef int64) *irpb.Term {
	return &irpb.Term{Kind: irpb.TermKind_TILE_AXIS, Id: int32(k), Coef: coef}
}
func lv(v int, coef int64) *irpb.Term {
	return &irpb.Term{Kind: irpb.TermKind_LOOP_VAR, Id: int32(v), Coef: coef}
}
func pid(a int, coef int64) *irpb.Term {
	return &irpb.Term{Kind: irpb.TermKind_PROGRAM_ID, Id: int32(a), Coef: coef}
}

func S(s string) *irpb.Attr  { return &irpb.Attr{Value: &irpb.Attr_S{S: s}} }
func F(f float64) *irpb.Attr { return &irpb.Attr{Value: &irpb.Attr_F{F: f}} }
func I(i int64) *irpb.Attr   { return &irpb.Attr{Value: &irpb.Attr_I{I: i}} }
func B(v bool) *irpb.Attr    { return &irpb.Attr{Value: &irpb.Attr_B{B: v}} }
func Ints(v ...int64) *irpb.Attr {
	return &irpb.Attr{Value: &irpb.Attr_Ints{Ints: &irpb.IntList{V: v}}}
}

type attrs = map[string]*irpb.Attr

func (b *kb) emit(in *irpb.Instruction) *irpb.Instruction {
	b.line++
	in.Loc = &irpb.Loc{File: 0, Line: b.line}
	top := len(b.stack) - 1
	b.stack[top] = append(b.stack[top], &irpb.Stmt{Kind: &irpb.Stmt_Inst{Inst: in}})
	return in
}

func (b *kb) op(op string, dst, src []*irpb.Access, at attrs) *irpb.Instruction {
	return b.emit(&irpb.Instruction{Op: op, Dst: dst, Src: src, Attrs: at})
}

func (b *kb) alloc(t int32) { b.op("alloc", []*irpb.Access{b.full(t)}, nil, nil) }

func (b *kb) dma(dst, src *irpb.Access) *irpb.Instruction {
	return b.op("dma", []*irpb.Access{dst}, []*irpb.Access{src}, nil)
}

// loop runs body with a fresh loop variable (returned to body).
func (b *kb) loop(kind irpb.LoopKind, start, stop, step int64, body func(v int)) {
	v := int(b.k.NumVars)
	b.k.NumVars++
	b.stack = append(b.stack, nil)
	body(v)
	top := len(b.stack) - 1
	stmts := b.stack[top]
	b.stack = b.stack[:top]
	b.line++
	l := &irpb.Loop{Var: int32(v), Start: start, Stop: stop, Step: step, Kind: kind, Body: stmts, Loc: &irpb.Loc{Line: b.line}}
	b.stack[top-1] = append(b.stack[top-1], &irpb.Stmt{Kind: &irpb.Stmt_Loop{Loop: l}})
}

func (b *kb) kernel() *irpb.Kernel {
	b.k.Body = b.stack[0]
	return b.k
}

func dts(a ...*irpb.Access) []*irpb.Access { return a }

// ---- tensors ----

func randTensor(r *rand.Rand, dt dtype.Type, lo, hi float64, shape ...int64) *tensor.Tensor {
	t := tensor.New(dt, shape)
	n := t.NumElements()
	vals := make([]float64, n)
	for i := range vals {
		x := lo + (hi-lo)*r.Float64()
		if dt.IsInteger() {
			x = math.Floor(x)
		}
		vals[i] = x
	}
	dtype.EncodeF64(dt, vals, t.Data)
	return t
}

func values(t *tensor.Tensor) []float64 {
	v := make([]float64, t.NumElements())
	dtype.DecodeF64(t.Type, t.Data, v)
	return v
}

func run(t *testing.T, k *irpb.Kernel, ins ...*tensor.Tensor) []*tensor.Tensor {
	t.Helper()
	outs, err := Run(k, ins, Options{Parallel: 2})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return outs
}

// npRef runs numpy code on the inputs a0, a1, ... (as numpy arrays of their
// dtypes) which must set r0, r1, ...; each result is cast with .astype to
// the corresponding dtype in outs and returned.
func npRef(t *testing.T, code string, ins []*tensor.Tensor, outs ...dtype.Type) []*tensor.Tensor {
	t.Helper()
	pyref.Require(t, "numpy", "ml_dtypes")
	dir := t.TempDir()
	var pre strings.Builder
	pre.WriteString("import numpy as np, ml_dtypes, sys\n")
	for i, in := range ins {
		f := filepath.Join(dir, fmt.Sprintf("a%d.bin", i))
		if err := os.WriteFile(f, in.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&pre, "a%d = np.fromfile(%q, dtype=np.dtype(%q)).reshape(%s)\n", i, f, npName(in.Type), pyShape(in.Dims))
	}
	pre.WriteString(code + "\n")
	for i, dt := range outs {
		fmt.Fprintf(&pre, "np.ascontiguousarray(np.asarray(r%d).astype(np.dtype(%q))).tofile(%q)\n", i, npName(dt), filepath.Join(dir, fmt.Sprintf("r%d.bin", i)))
		fmt.Fprintf(&pre, "open(%q,'w').write(','.join(str(x) for x in np.asarray(r%d).shape))\n", filepath.Join(dir, fmt.Sprintf("r%d.shape", i)), i)
	}
	script := filepath.Join(dir, "ref.py")
	if err := os.WriteFile(script, []byte(pre.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := pyref.Command(script).CombinedOutput(); err != nil {
		t.Fatalf("numpy reference failed: %v\n%s\n%s", err, out, code)
	}
	var res []*tensor.Tensor
	for i, dt := range outs {
		raw, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("r%d.bin", i)))
		if err != nil {
			t.Fatal(err)
		}
		sh, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("r%d.shape", i)))
		var dims []int64
		for _, s := range strings.Split(string(sh), ",") {
			if s == "" {
				continue
			}
			var d int64
			fmt.Sscan(s, &d)
			dims = append(dims, d)
		}
		tt, err := tensor.FromBytes(dt, dims, raw)
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, tt)
	}
	return res
}

func npName(dt dtype.Type) string {
	switch dt {
	case dtype.F8E4M3FN:
		return "float8_e4m3fn"
	case dtype.Pred:
		return "bool"
	}
	return dt.NumpyName()
}

func pyShape(d []int64) string {
	s := "("
	for _, x := range d {
		s += fmt.Sprint(x) + ","
	}
	return s + ")"
}

// same compares bit patterns of got and want (NaN matches NaN); with tol >
// 0 values may differ by tol*max(1,|want|).
func same(t *testing.T, what string, got, want *tensor.Tensor, tol float64) {
	t.Helper()
	if got.Type != want.Type || got.NumElements() != want.NumElements() {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	g, w := values(got), values(want)
	bad := 0
	for i := range g {
		ok := g[i] == w[i] || (math.IsNaN(g[i]) && math.IsNaN(w[i]))
		if !ok && tol > 0 && math.Abs(g[i]-w[i]) <= tol*math.Max(1, math.Abs(w[i])) {
			ok = true
		}
		if !ok {
			if bad < 5 {
				t.Errorf("%s: element %d = %v, want %v", what, i, g[i], w[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d of %d elements differ", what, bad, len(g))
	}
}
