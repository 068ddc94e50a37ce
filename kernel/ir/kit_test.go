package ir

import (
	"goldtrace/engine/dtype"
	"goldtrace/kernel/ir/irpb"
)

// Hand-building helpers for the tests: a kernel with one source file
// "kernel.py", tensors, accesses, loops and instructions.

type kb struct{ k *irpb.Kernel }

func newKernel(name string) *kb {
	return &kb{k: &irpb.Kernel{SchemaVersion: SchemaVersion, Name: name, Files: []string{"kernel.py"}}}
}

func at(line int32) *irpb.Loc { return &irpb.Loc{File: 0, Line: line} }

func (b *kb) tensor(name string, mem irpb.Memory, role irpb.TensorRole, dt dtype.Type, shape ...int64) int32 {
	id := int32(len(b.k.Tensors))
	b.k.Tensors = append(b.k.Tensors, &irpb.Tensor{Id: id, Name: name, Memory: mem, Role: role, Dtype: int32(dt), Shape: shape, Loc: at(1)})
	if role == irpb.TensorRole_PARAM {
		b.k.Inputs = append(b.k.Inputs, id)
	}
	if role == irpb.TensorRole_OUTPUT {
		b.k.Outputs = append(b.k.Outputs, id)
	}
	return id
}

func (b *kb) sbuf(name string, dt dtype.Type, shape ...int64) int32 {
	return b.tensor(name, irpb.Memory_SBUF, irpb.TensorRole_TEMP, dt, shape...)
}

func (b *kb) psum(name string, shape ...int64) int32 {
	return b.tensor(name, irpb.Memory_PSUM, irpb.TensorRole_TEMP, dtype.F32, shape...)
}

func (b *kb) param(name string, dt dtype.Type, shape ...int64) int32 {
	return b.tensor(name, irpb.Memory_SHARED_HBM, irpb.TensorRole_PARAM, dt, shape...)
}

func (b *kb) output(name string, dt dtype.Type, shape ...int64) int32 {
	return b.tensor(name, irpb.Memory_SHARED_HBM, irpb.TensorRole_OUTPUT, dt, shape...)
}

func (b *kb) newVar() int32 { v := b.k.NumVars; b.k.NumVars++; return v }

func (b *kb) add(st ...*irpb.Stmt) *kb { b.k.Body = append(b.k.Body, st...); return b }

func term(kind irpb.TermKind, id int32, coef int64) *irpb.Term {
	return &irpb.Term{Kind: kind, Id: id, Coef: coef}
}
func ax(id int32) *irpb.Term              { return term(irpb.TermKind_TILE_AXIS, id, 1) }
func lv(id int32, coef int64) *irpb.Term  { return term(irpb.TermKind_LOOP_VAR, id, coef) }
func pid(id int32, coef int64) *irpb.Term { return term(irpb.TermKind_PROGRAM_ID, id, coef) }
func aff(c int64, terms ...*irpb.Term) *irpb.Affine {
	return &irpb.Affine{Constant: c, Terms: terms}
}

// tile is an access whose tensor dimension d is tile axis d plus offs[d]
// (offs may be shorter: missing offsets are 0).
func tile(t int32, shape []int64, offs ...*irpb.Affine) *irpb.Access {
	a := &irpb.Access{Tensor: t, Shape: shape}
	for d := range shape {
		e := aff(0, ax(int32(d)))
		if d < len(offs) && offs[d] != nil {
			e.Constant = offs[d].Constant
			e.Terms = append(e.Terms, offs[d].Terms...)
		}
		a.Index = append(a.Index, e)
	}
	return a
}

func sh(n ...int64) []int64 { return n }

func loop(v int32, start, stop, step int64, line int32, body ...*irpb.Stmt) *irpb.Stmt {
	return &irpb.Stmt{Kind: &irpb.Stmt_Loop{Loop: &irpb.Loop{Var: v, Start: start, Stop: stop, Step: step, Kind: irpb.LoopKind_AFFINE, Body: body, Loc: at(line)}}}
}

type attrs map[string]*irpb.Attr

func ai(v int64) *irpb.Attr   { return &irpb.Attr{Value: &irpb.Attr_I{I: v}} }
func af(v float64) *irpb.Attr { return &irpb.Attr{Value: &irpb.Attr_F{F: v}} }
func as(v string) *irpb.Attr  { return &irpb.Attr{Value: &irpb.Attr_S{S: v}} }
func ab(v bool) *irpb.Attr    { return &irpb.Attr{Value: &irpb.Attr_B{B: v}} }
func aints(v ...int64) *irpb.Attr {
	return &irpb.Attr{Value: &irpb.Attr_Ints{Ints: &irpb.IntList{V: v}}}
}

func op(name string, line int32, dst []*irpb.Access, src []*irpb.Access, at_ attrs) *irpb.Instruction {
	return &irpb.Instruction{Op: name, Dst: dst, Src: src, Attrs: at_, Loc: at(line)}
}

func st(in *irpb.Instruction) *irpb.Stmt { return &irpb.Stmt{Kind: &irpb.Stmt_Inst{Inst: in}} }

func accs(a ...*irpb.Access) []*irpb.Access { return a }

// tiledMatmul builds the classic tiled matmul out[M,N] = lhsT.T @ rhs with
// lhsT [K,M], rhs [K,N] in HBM, 128x128 stationary and 128x512 moving tiles,
// PSUM accumulation over K and a copy back through SBUF.
func tiledMatmul(M, N, K int64) *kb {
	b := newKernel("matmul_tiled")
	lhsT := b.param("lhsT", dtype.BF16, K, M)
	rhs := b.param("rhs", dtype.BF16, K, N)
	out := b.output("result", dtype.BF16, M, N)
	sl := b.sbuf("lhsT_tile", dtype.BF16, 128, 128)
	sr := b.sbuf("rhs_tile", dtype.BF16, 128, 512)
	ps := b.psum("res_psum", 128, 512)
	so := b.sbuf("res_sb", dtype.BF16, 128, 512)
	m, n, k := b.newVar(), b.newVar(), b.newVar()
	body := loop(m, 0, M/128, 1, 10,
		loop(n, 0, N/512, 1, 11,
			st(op("memset", 12, accs(tile(ps, sh(128, 512))), nil, attrs{"value": af(0)})),
			loop(k, 0, K/128, 1, 13,
				st(op("dma", 14, accs(tile(sl, sh(128, 128))), accs(tile(lhsT, sh(128, 128), aff(0, lv(k, 128)), aff(0, lv(m, 128)))), nil)),
				st(op("dma", 15, accs(tile(sr, sh(128, 512))), accs(tile(rhs, sh(128, 512), aff(0, lv(k, 128)), aff(0, lv(n, 512)))), nil)),
				st(op("matmul", 16, accs(tile(ps, sh(128, 512))), accs(tile(sl, sh(128, 128)), tile(sr, sh(128, 512))), attrs{"accumulate": ab(true)})),
			),
			st(op("tensor_copy", 17, accs(tile(so, sh(128, 512))), accs(tile(ps, sh(128, 512))), nil)),
			st(op("dma", 18, accs(tile(out, sh(128, 512), aff(0, lv(m, 128)), aff(0, lv(n, 512)))), accs(tile(so, sh(128, 512))), nil)),
		))
	b.add(body)
	return b
}
