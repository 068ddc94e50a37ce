package ir

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/kernel/ir/irpb"
)

// add1 appends one instruction at the given line to a fresh kernel's body.
func (b *kb) inst(name string, line int32, dst, src []*irpb.Access, a attrs) *irpb.Instruction {
	in := op(name, line, dst, src, a)
	b.add(st(in))
	return in
}

// matmulCase: nc_matmul with stationary (K, M), moving (K, N) into a PSUM
// (M, N) tile, all in the right memories unless changed afterwards.
func matmulCase(K1, M, K2, N int64) (*kb, *irpb.Instruction) {
	b := newKernel("mm")
	s := b.sbuf("stat", dtype.BF16, K1, M)
	m := b.sbuf("mov", dtype.BF16, K2, N)
	p := b.psum("res", M, N)
	in := b.inst("matmul", 16, accs(tile(p, sh(M, N))), accs(tile(s, sh(K1, M)), tile(m, sh(K2, N))), nil)
	return b, in
}

func twoTiles(dt dtype.Type, p, f int64) (*kb, int32, int32) {
	b := newKernel("k")
	x := b.sbuf("x", dt, p, f)
	y := b.sbuf("y", dt, p, f)
	return b, x, y
}

type vcase struct {
	name  string
	build func() *kb
	rules []string // exactly these rules, in position order
	first string   // the first error's full text (optional)
	want  string   // a substring of the whole error text
}

func validateCases() []vcase {
	return []vcase{
		{name: "matmul stationary free", build: func() *kb {
			b, in := matmulCase(128, 256, 128, 512)
			b.k.Tensors[2].Shape = sh(128, 512) // a legal PSUM tile: the result cannot be (256, 512)
			in.Dst[0] = tile(2, sh(128, 512))
			return b
		}, rules: []string{"matmul-stationary-free", "matmul-shape"},
			first: "kernel.py:16: nc_matmul: stationary free size 256 exceeds the tensor engine's limit of 128 (rule: matmul-stationary-free)"},
		{name: "matmul moving free", build: func() *kb {
			b, _ := matmulCase(128, 128, 128, 1024)
			return b
		}, rules: []string{"psum-bank", "matmul-moving-free"}, want: "moving free size 1024 exceeds the tensor engine's limit of 512"},
		{name: "matmul contraction", build: func() *kb {
			b, _ := matmulCase(64, 128, 128, 512)
			return b
		}, rules: []string{"matmul-contraction"}, want: "contraction (partition) sizes differ: stationary 64, moving 128"},
		{name: "matmul memory", build: func() *kb {
			b, _ := matmulCase(128, 128, 128, 512)
			b.k.Tensors[0].Memory = irpb.Memory_PSUM
			b.k.Tensors[2].Memory = irpb.Memory_SBUF
			return b
		}, rules: []string{"matmul-memory", "matmul-memory"}, want: "stationary t0 (stat) is in psum; nc_matmul reads SBUF and writes PSUM"},
		{name: "matmul result dtype", build: func() *kb {
			b, _ := matmulCase(128, 128, 128, 512)
			b.k.Tensors[2].Dtype = int32(dtype.BF16)
			return b
		}, rules: []string{"matmul-result-dtype"}, want: "result t2 (res) is bf16"},
		{name: "matmul input dtypes", build: func() *kb {
			b, _ := matmulCase(128, 128, 128, 512)
			b.k.Tensors[0].Dtype = int32(dtype.F32)
			return b
		}, rules: []string{"matmul-dtype"}, want: "stationary is f32 and moving is bf16"},
		{name: "matmul int8", build: func() *kb {
			b, _ := matmulCase(128, 128, 128, 512)
			b.k.Tensors[1].Dtype = int32(dtype.S8)
			return b
		}, rules: []string{"matmul-dtype"}, want: "moving t1 (mov) is s8"},
		{name: "partition dim", build: func() *kb {
			b, x, _ := twoTiles(dtype.F32, 256, 64)
			b.k.Tensors[x].Loc = at(3)
			return b
		}, rules: []string{"partition-dim", "partition-dim"}, first: "kernel.py:1: tensor t1 (y): partition dimension size 256 exceeds the architecture limit of 128 (rule: partition-dim)"},
		{name: "psum bank", build: func() *kb {
			b := newKernel("k")
			p := b.psum("p", 128, 1024)
			b.inst("memset", 5, accs(tile(p, sh(128, 1024))), nil, attrs{"value": af(0)})
			return b
		}, rules: []string{"psum-bank"}, first: "kernel.py:5: memset: dst[0]: PSUM tile needs 4096 bytes per partition, more than one bank (2048 bytes) (rule: psum-bank)"},
		{name: "psum fmax", build: func() *kb {
			b := newKernel("k")
			p := b.tensor("p", irpb.Memory_PSUM, irpb.TensorRole_TEMP, dtype.BF16, 128, 1024)
			b.inst("memset", 5, accs(tile(p, sh(128, 1024))), nil, attrs{"value": af(0)})
			return b
		}, rules: []string{"psum-fmax"}, want: "PSUM tile free size 1024 exceeds 512 elements"},
		{name: "psum capacity", build: func() *kb {
			b := newKernel("k")
			out := b.sbuf("o", dtype.F32, 128, 512)
			var ps []int32
			for i := range 9 {
				p := b.psum("p", 128, 512)
				ps = append(ps, p)
				b.inst("memset", int32(10+i), accs(tile(p, sh(128, 512))), nil, attrs{"value": af(0)})
			}
			for i, p := range ps {
				b.inst("tensor_copy", int32(30+i), accs(tile(out, sh(128, 512))), accs(tile(p, sh(128, 512))), nil)
			}
			return b
		}, rules: []string{"psum-capacity"}, want: "kernel.py:18: the psum tensors live here need 18432 bytes per partition"},
		{name: "sbuf capacity one tensor", build: func() *kb {
			b := newKernel("k")
			b.sbuf("big", dtype.F32, 128, 50000)
			return b
		}, rules: []string{"sbuf-capacity"}, want: "needs 200000 bytes per partition, more than the 196608 (192 KiB)"},
		{name: "sbuf capacity live", build: func() *kb {
			b := newKernel("k")
			x := b.sbuf("x", dtype.F32, 128, 30000)
			y := b.sbuf("y", dtype.F32, 128, 30000)
			b.inst("memset", 4, accs(tile(x, sh(128, 30000))), nil, attrs{"value": af(1)})
			b.inst("memset", 5, accs(tile(y, sh(128, 30000))), nil, attrs{"value": af(1)})
			b.inst("tensor_tensor", 6, accs(tile(x, sh(128, 30000))), accs(tile(x, sh(128, 30000)), tile(y, sh(128, 30000))), attrs{"op": as("add")})
			return b
		}, rules: []string{"sbuf-capacity"}, want: "kernel.py:5: the sbuf tensors live here need 240000 bytes"},
		{name: "transpose vector size", build: func() *kb {
			b, x, y := twoTiles(dtype.F32, 64, 64)
			b.inst("transpose", 7, accs(tile(y, sh(64, 64))), accs(tile(x, sh(64, 64))), attrs{"engine": as("vector")})
			return b
		}, rules: []string{"transpose-size"}, want: "nc_transpose: tile 64x64 exceeds the vector engine's transpose limit of 32x32"},
		{name: "transpose tensor memory", build: func() *kb {
			b, x, y := twoTiles(dtype.F32, 64, 64)
			b.inst("transpose", 7, accs(tile(y, sh(64, 64))), accs(tile(x, sh(64, 64))), attrs{"engine": as("tensor")})
			return b
		}, rules: []string{"transpose-memory"}, want: "reads SBUF and writes PSUM"},
		{name: "transpose shape", build: func() *kb {
			b := newKernel("k")
			x := b.sbuf("x", dtype.F32, 32, 16)
			y := b.sbuf("y", dtype.F32, 32, 16)
			b.inst("transpose", 7, accs(tile(y, sh(32, 16))), accs(tile(x, sh(32, 16))), attrs{"engine": as("vector")})
			return b
		}, rules: []string{"transpose-shape"}, want: "must be the transpose (16, 32)"},
		{name: "reduce partition axis", build: func() *kb {
			b, x, y := twoTiles(dtype.F32, 128, 64)
			b.inst("tensor_reduce", 8, accs(tile(y, sh(1, 64))), accs(tile(x, sh(128, 64))), attrs{"op": as("add"), "axes": aints(0)})
			return b
		}, rules: []string{"reduce-axes"}, want: "include the partition axis 0"},
		{name: "reduce not trailing", build: func() *kb {
			b := newKernel("k")
			x := b.sbuf("x", dtype.F32, 128, 4, 8)
			y := b.sbuf("y", dtype.F32, 128, 8)
			b.inst("tensor_reduce", 8, accs(tile(y, sh(128, 8))), accs(tile(x, sh(128, 4, 8))), attrs{"op": as("add"), "axes": aints(1)})
			return b
		}, rules: []string{"reduce-axes"}, want: "not the last contiguous free axes"},
		{name: "reduce shape", build: func() *kb {
			b := newKernel("k")
			x := b.sbuf("x", dtype.F32, 128, 4, 8)
			y := b.sbuf("y", dtype.F32, 128, 8)
			b.inst("tensor_reduce", 8, accs(tile(y, sh(128, 8))), accs(tile(x, sh(128, 4, 8))), attrs{"op": as("add"), "axes": aints(2)})
			return b
		}, rules: []string{"reduce-shape"}, want: "gives 128 partitions of 4 elements"},
		{name: "tensor_tensor two psum", build: func() *kb {
			b := newKernel("k")
			p := b.psum("p", 128, 512)
			q := b.psum("q", 128, 512)
			o := b.sbuf("o", dtype.F32, 128, 512)
			b.inst("tensor_tensor", 9, accs(tile(o, sh(128, 512))), accs(tile(p, sh(128, 512)), tile(q, sh(128, 512))), attrs{"op": as("add")})
			return b
		}, rules: []string{"tensor-tensor-psum"}, want: "at most one may be"},
		{name: "tensor_tensor partitions", build: func() *kb {
			b := newKernel("k")
			x := b.sbuf("x", dtype.F32, 128, 64)
			y := b.sbuf("y", dtype.F32, 64, 64)
			b.inst("tensor_tensor", 9, accs(tile(x, sh(128, 64))), accs(tile(x, sh(128, 64)), tile(y, sh(64, 64))), attrs{"op": as("add")})
			return b
		}, rules: []string{"partition-mismatch", "shape-mismatch"}, want: "partition sizes differ: 128 (t0 (x)) and 64 (t1 (y))"},
		{name: "bitwise on floats", build: func() *kb {
			b, x, y := twoTiles(dtype.F32, 128, 64)
			b.inst("tensor_tensor", 9, accs(tile(x, sh(128, 64))), accs(tile(x, sh(128, 64)), tile(y, sh(128, 64))), attrs{"op": as("bitwise_and")})
			return b
		}, rules: []string{"bitwise-dtype"}, want: "bitvec op bitwise_and needs integer tiles, but t0 (x) is f32"},
		{name: "tensor_scalar op classes", build: func() *kb {
			b, x, y := twoTiles(dtype.S32, 128, 64)
			b.inst("tensor_scalar", 9, accs(tile(x, sh(128, 64))), accs(tile(y, sh(128, 64))), attrs{"op0": as("add"), "scalar0": af(1), "op1": as("left_shift"), "scalar1": ai(2)})
			return b
		}, rules: []string{"tensor-scalar-op-class"}, want: "must both be bitvec or both arithmetic"},
		{name: "bn_stats free", build: func() *kb {
			b := newKernel("k")
			x := b.sbuf("x", dtype.F32, 128, 1024)
			y := b.sbuf("y", dtype.F32, 128, 12)
			b.inst("bn_stats", 9, accs(tile(y, sh(128, 12))), accs(tile(x, sh(128, 1024))), nil)
			return b
		}, rules: []string{"bn-stats-free"}, want: "free size 1024 exceeds bn_stats' limit of 512"},
		{name: "dma from psum", build: func() *kb {
			b := newKernel("k")
			p := b.psum("p", 128, 512)
			o := b.output("o", dtype.F32, 128, 512)
			b.inst("dma", 11, accs(tile(o, sh(128, 512))), accs(tile(p, sh(128, 512))), nil)
			return b
		}, rules: []string{"dma-memory"}, want: "dma_copy: src[0] t0 (p) is in PSUM"},
		{name: "dma sizes", build: func() *kb {
			b := newKernel("k")
			a := b.param("a", dtype.F32, 128, 512)
			s := b.sbuf("s", dtype.F32, 128, 256)
			b.inst("dma", 11, accs(tile(s, sh(128, 256))), accs(tile(a, sh(128, 512))), nil)
			return b
		}, rules: []string{"dma-size"}, want: "copies 65536 elements (128, 512) into 32768 elements (128, 256)"},
		{name: "engine reads hbm", build: func() *kb {
			b := newKernel("k")
			a := b.param("a", dtype.F32, 128, 512)
			s := b.sbuf("s", dtype.F32, 128, 512)
			b.inst("tensor_copy", 12, accs(tile(s, sh(128, 512))), accs(tile(a, sh(128, 512))), nil)
			return b
		}, rules: []string{"engine-memory"}, want: "src[0] t0 (a) is in shared_hbm; compute engines read and write SBUF and PSUM only"},
		{name: "gpsimd psum", build: func() *kb {
			b := newKernel("k")
			p := b.psum("p", 128, 512)
			s := b.sbuf("s", dtype.F32, 128, 512)
			b.inst("tensor_copy", 12, accs(tile(s, sh(128, 512))), accs(tile(p, sh(128, 512))), nil).Engine = "gpsimd"
			return b
		}, rules: []string{"gpsimd-psum"}, want: "GpSimd Engine cannot access"},
		{name: "immutable param", build: func() *kb {
			b := newKernel("k")
			a := b.param("a", dtype.F32, 128, 512)
			s := b.sbuf("s", dtype.F32, 128, 512)
			b.inst("dma", 13, accs(tile(a, sh(128, 512))), accs(tile(s, sh(128, 512))), nil)
			return b
		}, rules: []string{"immutable-param"}, first: "kernel.py:13: dma_copy: writes parameter t0 (a), which is immutable (declare it nt.mutable_tensor to update it in place) (rule: immutable-param)"},
		{name: "constant write", build: func() *kb {
			b := newKernel("k")
			c := b.tensor("c", irpb.Memory_SHARED_HBM, irpb.TensorRole_CONSTANT, dtype.S8, 2, 2)
			b.k.Tensors[c].Data = []byte{1, 2, 3, 4}
			s := b.sbuf("s", dtype.S8, 2, 2)
			b.inst("dma", 13, accs(tile(c, sh(2, 2))), accs(tile(s, sh(2, 2))), nil)
			return b
		}, rules: []string{"constant-write"}, want: "writes constant t0 (c)"},
		{name: "constant data", build: func() *kb {
			b := newKernel("k")
			c := b.tensor("c", irpb.Memory_SHARED_HBM, irpb.TensorRole_CONSTANT, dtype.F32, 2, 2)
			b.k.Tensors[c].Data = []byte{1, 2, 3, 4}
			return b
		}, rules: []string{"constant-data"}, want: "needs 16 bytes of data, has 4"},
		{name: "unknown op", build: func() *kb {
			b, x, _ := twoTiles(dtype.F32, 128, 64)
			b.inst("tensor_frobnicate", 14, accs(tile(x, sh(128, 64))), nil, nil)
			return b
		}, rules: []string{"unknown-op"}, first: `kernel.py:14: tensor_frobnicate: unknown instruction "tensor_frobnicate" (rule: unknown-op)`},
		{name: "operand count", build: func() *kb {
			b, x, y := twoTiles(dtype.F32, 128, 64)
			b.inst("tensor_tensor", 14, accs(tile(x, sh(128, 64))), accs(tile(y, sh(128, 64))), attrs{"op": as("add")})
			return b
		}, rules: []string{"operand-count"}, want: "has 1 destinations and 1 sources; tensor_tensor takes 1 destinations and 2 sources"},
		{name: "attr unknown", build: func() *kb {
			b, x, y := twoTiles(dtype.F32, 128, 64)
			b.inst("tensor_copy", 14, accs(tile(x, sh(128, 64))), accs(tile(y, sh(128, 64))), attrs{"fast": ab(true)})
			return b
		}, rules: []string{"attr-unknown"}, want: `unknown attribute "fast"`},
		{name: "attr missing", build: func() *kb {
			b, x, y := twoTiles(dtype.F32, 128, 64)
			b.inst("activation", 14, accs(tile(x, sh(128, 64))), accs(tile(y, sh(128, 64))), nil)
			return b
		}, rules: []string{"attr-missing"}, want: `missing attribute "func"`},
		{name: "attr type", build: func() *kb {
			b, x, _ := twoTiles(dtype.F32, 128, 64)
			b.inst("memset", 14, accs(tile(x, sh(128, 64))), nil, attrs{"value": as("zero")})
			return b
		}, rules: []string{"attr-type"}, want: `attribute "value" is "zero", expected a number`},
		{name: "attr value func", build: func() *kb {
			b, x, y := twoTiles(dtype.F32, 128, 64)
			b.inst("activation", 14, accs(tile(x, sh(128, 64))), accs(tile(y, sh(128, 64))), attrs{"func": as("exp2")})
			return b
		}, rules: []string{"attr-value"}, want: `attribute "func": unknown value "exp2"`},
		{name: "attr value alu", build: func() *kb {
			b, x, y := twoTiles(dtype.F32, 128, 64)
			b.inst("tensor_tensor", 14, accs(tile(x, sh(128, 64))), accs(tile(x, sh(128, 64)), tile(y, sh(128, 64))), attrs{"op": as("addd")})
			return b
		}, rules: []string{"attr-value"}, want: `attribute "op": unknown value "addd"`},
		{name: "attr value enum", build: func() *kb {
			b := newKernel("k")
			a := b.param("a", dtype.F32, 128, 64)
			s := b.sbuf("s", dtype.F32, 128, 64)
			b.inst("dma", 14, accs(tile(s, sh(128, 64))), accs(tile(a, sh(128, 64))), attrs{"oob_mode": as("wrap")})
			return b
		}, rules: []string{"attr-value"}, want: `attribute "oob_mode": unknown value "wrap" (expected one of error, skip)`},
		{name: "predicated copy dtypes", build: func() *kb {
			b := newKernel("k")
			x := b.sbuf("x", dtype.F32, 128, 64)
			y := b.sbuf("y", dtype.BF16, 128, 64)
			p := b.sbuf("p", dtype.U8, 128, 64)
			b.inst("copy_predicated", 15, accs(tile(y, sh(128, 64))), accs(tile(x, sh(128, 64)), tile(p, sh(128, 64))), nil)
			return b
		}, rules: []string{"op-dtype"}, first: "kernel.py:15: tensor_copy_predicated: src t0 (x) is f32 but dst t1 (y) is bf16; a predicated copy does not convert (rule: op-dtype)"},
		{name: "second source file", build: func() *kb {
			b := newKernel("k")
			b.k.Files = append(b.k.Files, "helpers.py")
			x := b.sbuf("x", dtype.F32, 128, 64)
			in := b.inst("memset", 7, accs(tile(x, sh(128, 64))), nil, attrs{"value": as("x")})
			in.Loc.File = 1
			return b
		}, rules: []string{"attr-type"}, first: `helpers.py:7: memset: attribute "value" is "x", expected a number (rule: attr-type)`},
		{name: "unsupported dtype", build: func() *kb {
			b := newKernel("k")
			b.sbuf("x", dtype.F64, 128, 4)
			return b
		}, rules: []string{"unsupported-dtype"}, want: "has dtype f64, which NKI does not support"},
		{name: "param memory", build: func() *kb {
			b := newKernel("k")
			b.tensor("a", irpb.Memory_SBUF, irpb.TensorRole_PARAM, dtype.F32, 128, 4)
			return b
		}, rules: []string{"param-memory"}, want: "parameter t0 (a) is in sbuf"},
		{name: "loop scope", build: func() *kb {
			b := newKernel("k")
			a := b.param("a", dtype.F32, 1024, 64)
			s := b.sbuf("s", dtype.F32, 128, 64)
			v := b.newVar()
			b.add(loop(v, 0, 8, 1, 20))
			b.inst("dma", 21, accs(tile(s, sh(128, 64))), accs(tile(a, sh(128, 64), aff(0, lv(v, 128)))), nil)
			return b
		}, rules: []string{"loop-scope"}, want: "uses loop variable i0 outside its loop"},
		{name: "mask axis", build: func() *kb {
			b, x, _ := twoTiles(dtype.F32, 128, 64)
			in := b.inst("memset", 22, accs(tile(x, sh(128, 64))), nil, attrs{"value": af(0)})
			in.Mask = []*irpb.Predicate{{Expr: aff(-3, ax(2)), Cmp: irpb.Cmp_LT}}
			return b
		}, rules: []string{"mask-axis"}, want: "mask[0] uses tile axis 2, but the instruction's domain has 2 axes"},
		{name: "alloc bounds", build: func() *kb {
			b, x, _ := twoTiles(dtype.F32, 128, 64)
			b.k.Tensors[x].Allocation = &irpb.Allocation{ByteOffset: SBUFPartitionBytes - 100}
			return b
		}, rules: []string{"alloc-bounds"}, want: "ends at byte 196764 of each partition"},
		{name: "oob loop", build: func() *kb {
			b := newKernel("k")
			a := b.param("a", dtype.F32, 1000, 64)
			s := b.sbuf("s", dtype.F32, 128, 64)
			v := b.newVar()
			b.add(loop(v, 0, 8, 1, 20, st(op("dma", 21, accs(tile(s, sh(128, 64))), accs(tile(a, sh(128, 64), aff(0, lv(v, 128)))), nil))))
			return b
		}, rules: []string{"oob"}, first: "kernel.py:21: dma_copy: src[0]: index 128*i0 + p of dimension 0 of t0 (a) reaches 1023, outside [0, 1000) (rule: oob)"},
		{name: "oob program id", build: func() *kb {
			b := newKernel("k")
			b.k.Grid = []int64{3}
			a := b.param("a", dtype.F32, 256, 64)
			s := b.sbuf("s", dtype.F32, 128, 64)
			b.inst("dma", 21, accs(tile(s, sh(128, 64))), accs(tile(a, sh(128, 64), aff(0, pid(0, 128)))), nil)
			return b
		}, rules: []string{"oob"}, want: "index 128*pid0 + p of dimension 0 of t0 (a) reaches 383, outside [0, 256)"},
		{name: "oob negative", build: func() *kb {
			b := newKernel("k")
			a := b.param("a", dtype.F32, 256, 64)
			s := b.sbuf("s", dtype.F32, 128, 64)
			b.inst("dma", 21, accs(tile(s, sh(128, 64))), accs(tile(a, sh(128, 64), nil, aff(-1))), nil)
			return b
		}, rules: []string{"oob"}, want: "index f - 1 of dimension 1 of t0 (a) reaches -1, outside [0, 64)"},
		{name: "oob mask too weak", build: func() *kb {
			b := newKernel("k")
			b.k.Grid = []int64{3}
			a := b.param("a", dtype.F32, 300, 64)
			s := b.sbuf("s", dtype.F32, 128, 64)
			in := b.inst("dma", 21, accs(tile(s, sh(128, 64))), accs(tile(a, sh(128, 64), aff(0, pid(0, 128)))), nil)
			// p + 128*pid < 301: lets row 300 through
			in.Mask = []*irpb.Predicate{{Expr: aff(-301, ax(0), pid(0, 128)), Cmp: irpb.Cmp_LT}}
			return b
		}, rules: []string{"oob"}, want: "reaches 300, outside [0, 300) for an element the mask lets through"},
		{name: "cc gather shape", build: func() *kb {
			b := newKernel("k")
			a := b.param("a", dtype.F32, 8, 16)
			o := b.output("o", dtype.F32, 24, 16)
			b.inst("cc_all_gather", 30, accs(tile(o, sh(24, 16))), accs(tile(a, sh(8, 16))), attrs{"collective_dim": ai(0), "replica_groups": aints(0, 1, 2, 3), "group_size": ai(2)})
			return b
		}, rules: []string{"shape-mismatch"}, first: "kernel.py:30: cc_all_gather: src tile (8, 16) and dst tile (24, 16) do not fit a cc_all_gather (rule: shape-mismatch)"},
		{name: "cc groups and op", build: func() *kb {
			b := newKernel("k")
			a := b.param("a", dtype.F32, 8, 16)
			o := b.output("o", dtype.F32, 8, 16)
			b.inst("cc_all_reduce", 31, accs(tile(o, sh(8, 16))), accs(tile(a, sh(8, 16))), attrs{"op": as("add"), "replica_groups": aints(0, 1, 1, 2), "group_size": ai(2)})
			return b
		}, rules: []string{"attr-value"}, want: "rank 1 is in more than one replica group"},
		{name: "cc reduction op", build: func() *kb {
			b := newKernel("k")
			a := b.param("a", dtype.F32, 8, 16)
			o := b.output("o", dtype.F32, 8, 16)
			b.inst("cc_all_reduce", 31, accs(tile(o, sh(8, 16))), accs(tile(a, sh(8, 16))), attrs{"op": as("subtract")})
			return b
		}, rules: []string{"attr-value"}, want: `unknown value "subtract" (expected one of add, maximum, minimum)`},
		{name: "cc memory and dtype", build: func() *kb {
			b := newKernel("k")
			a := b.param("a", dtype.Pred, 8, 16)
			p := b.psum("p", 8, 16)
			b.inst("cc_all_reduce", 32, accs(tile(p, sh(8, 16))), accs(tile(a, sh(8, 16))), attrs{"op": as("add")})
			return b
		}, rules: []string{"collective-memory", "collective-memory", "op-dtype", "op-dtype"}, want: "device collectives reduce float and integer tensors"},
		{name: "cc permute pairs", build: func() *kb {
			b := newKernel("k")
			a := b.param("a", dtype.F32, 8, 16)
			o := b.output("o", dtype.F32, 8, 16)
			b.inst("cc_collective_permute", 33, accs(tile(o, sh(8, 16))), accs(tile(a, sh(8, 16))), attrs{"source_target_pairs": aints(0, 1, 2, 1)})
			return b
		}, rules: []string{"attr-value"}, want: "rank 1 is the target of two pairs"},
	}
}

func TestValidateRules(t *testing.T) {
	for _, c := range validateCases() {
		t.Run(c.name, func(t *testing.T) {
			k := c.build().k
			err := Validate(k)
			if err == nil {
				t.Fatalf("no error; kernel:\n%s", Format(k))
			}
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("not an ErrorList: %T", err)
			}
			if got := list.Rules(); !slices.Equal(got, c.rules) {
				t.Fatalf("rules %v, want %v:\n%v", got, c.rules, err)
			}
			if c.first != "" && list[0].Error() != c.first {
				t.Fatalf("first error\n got %q\nwant %q", list[0].Error(), c.first)
			}
			if c.want != "" && !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q lacks %q", err, c.want)
			}
			for _, e := range list {
				if e.Loc == "" && e.Rule != "schema-version" {
					t.Errorf("error without a position: %v", e)
				}
			}
		})
	}
}

func TestValidKernelsPass(t *testing.T) {
	for _, shape := range [][3]int64{{1024, 1024, 1024}, {128, 512, 128}, {256, 2048, 640}} {
		if err := Validate(tiledMatmul(shape[0], shape[1], shape[2]).k); err != nil {
			t.Errorf("%v: %v", shape, err)
		}
	}
	// masked tail: rows 0..299 of a 300-row input over a 3-program grid, the mask exact
	b := newKernel("tail")
	b.k.Grid = []int64{3}
	a := b.param("a", dtype.F32, 300, 64)
	o := b.output("o", dtype.F32, 300, 64)
	s := b.sbuf("s", dtype.F32, 128, 64)
	mask := []*irpb.Predicate{{Expr: aff(-300, ax(0), pid(0, 128)), Cmp: irpb.Cmp_LT}}
	ld := b.inst("dma", 5, accs(tile(s, sh(128, 64))), accs(tile(a, sh(128, 64), aff(0, pid(0, 128)))), nil)
	ld.Mask = mask
	ex := b.inst("activation", 6, accs(tile(s, sh(128, 64))), accs(tile(s, sh(128, 64))), attrs{"func": as("exp")})
	ex.Mask = mask
	stt := b.inst("dma", 7, accs(tile(o, sh(128, 64), aff(0, pid(0, 128)))), accs(tile(s, sh(128, 64))), nil)
	stt.Mask = mask
	// a mutable parameter may be written
	m := b.param("acc", dtype.F32, 128, 64)
	b.k.Tensors[m].Mutable = true
	b.inst("dma", 8, accs(tile(m, sh(128, 64))), accs(tile(s, sh(128, 64))), nil)
	// a per-partition vector operand broadcasting along the free axis
	vec := b.sbuf("vec", dtype.F32, 128, 1)
	b.inst("memset", 9, accs(tile(vec, sh(128, 1))), nil, attrs{"value": af(2)})
	b.inst("tensor_scalar", 10, accs(tile(s, sh(128, 64))), accs(tile(s, sh(128, 64)), tile(vec, sh(128, 1))), attrs{"op0": as("multiply"), "has_operand0_tile": ab(true)})
	b.inst("tensor_reduce", 11, accs(tile(vec, sh(128, 1))), accs(tile(s, sh(128, 64))), attrs{"op": as("maximum"), "axes": aints(1), "keepdims": ab(true)})
	// nl.broadcast_to: a (1, F) row copied across 128 partitions
	row := b.sbuf("row", dtype.F32, 1, 64)
	b.inst("memset", 12, accs(tile(row, sh(1, 64))), nil, attrs{"value": af(3)})
	b.inst("tensor_copy", 13, accs(tile(s, sh(128, 64))), accs(tile(row, sh(1, 64))), nil)
	// the older API's output argument: a parameter the kernel returns may be written
	old := b.param("out", dtype.F32, 128, 64)
	b.k.Outputs = append(b.k.Outputs, old)
	b.inst("dma", 14, accs(tile(old, sh(128, 64))), accs(tile(s, sh(128, 64))), nil)
	if err := Validate(b.k); err != nil {
		t.Fatalf("%v\n%s", err, Format(b.k))
	}
}

func TestValidateSortedAndStructure(t *testing.T) {
	b := newKernel("k")
	a := b.param("a", dtype.F32, 128, 64)
	s := b.sbuf("s", dtype.F32, 128, 64)
	b.inst("dma", 30, accs(tile(a, sh(128, 64))), accs(tile(s, sh(128, 64))), nil)
	b.inst("dma", 9, accs(tile(a, sh(128, 64))), accs(tile(s, sh(128, 64))), nil)
	err := Validate(b.k)
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 2 || list[0].Loc != "kernel.py:9" || list[1].Loc != "kernel.py:30" {
		t.Fatalf("not sorted by line: %v", err)
	}
	b.k.SchemaVersion = 3
	if err := Validate(b.k); err == nil || !strings.Contains(err.Error(), "rule: schema-version") {
		t.Fatalf("schema version: %v", err)
	}
	if err := Validate(nil); err == nil {
		t.Fatal("nil kernel validated")
	}
}

func TestValidateMaskedLoops(t *testing.T) {
	// out[1000, 600] tiled by 128 x 512 with tail masks on both axes, loops over the tiles.
	build := func(rows, cols int64) *kb {
		b := newKernel("masked2d")
		a := b.param("a", dtype.F32, rows, cols)
		s := b.sbuf("s", dtype.F32, 128, 512)
		i, j := b.newVar(), b.newVar()
		in := op("dma", 40, accs(tile(s, sh(128, 512))), accs(tile(a, sh(128, 512), aff(0, lv(i, 128)), aff(0, lv(j, 512)))), nil)
		in.Mask = []*irpb.Predicate{
			{Expr: aff(-1000, ax(0), lv(i, 128)), Cmp: irpb.Cmp_LT},
			{Expr: aff(-599, ax(1), lv(j, 512)), Cmp: irpb.Cmp_LE},
		}
		b.add(loop(i, 0, 8, 1, 38, loop(j, 0, 2, 1, 39, st(in))))
		return b
	}
	if err := Validate(build(1000, 600).k); err != nil {
		t.Fatalf("exact masks rejected: %v", err)
	}
	err := Validate(build(1000, 599).k)
	if err == nil || !strings.Contains(err.Error(), "index 512*i1 + f of dimension 1 of t0 (a) reaches 599, outside [0, 599) for an element the mask lets through") {
		t.Fatalf("column overrun not caught: %v", err)
	}
	// A loop that never runs touches nothing.
	b := newKernel("zero")
	a := b.param("a", dtype.F32, 10, 64)
	s := b.sbuf("s", dtype.F32, 128, 64)
	v := b.newVar()
	b.add(loop(v, 5, 5, 1, 3, st(op("dma", 4, accs(tile(s, sh(128, 64))), accs(tile(a, sh(128, 64), aff(0, lv(v, 128)))), nil))))
	if err := Validate(b.k); err != nil {
		t.Fatalf("zero-trip loop: %v", err)
	}
	// A dynamic dimension is checked at run time (oob_mode), not statically.
	b = newKernel("gather")
	a = b.param("a", dtype.F32, 10, 64)
	idx := b.sbuf("idx", dtype.S32, 128, 1)
	s = b.sbuf("s", dtype.F32, 128, 64)
	src := tile(a, sh(128, 64))
	src.Index[0] = aff(0)
	src.DynamicDim = []int32{0}
	src.Dynamic = []*irpb.Access{tile(idx, sh(128, 1))}
	b.inst("dma", 5, accs(tile(s, sh(128, 64))), accs(src), attrs{"oob_mode": as("skip")})
	if err := Validate(b.k); err != nil {
		t.Fatalf("dynamic gather: %v", err)
	}
}

func TestValidateMaskImpliedBounds(t *testing.T) {
	// 12.8M combinations of (p, pid): too many to enumerate, but the mask
	// p + 128*pid < rows bounds the index p + 128*pid directly.
	build := func(rows, limit int64) *kb {
		b := newKernel("big")
		b.k.Grid = []int64{100000}
		a := b.param("a", dtype.F32, rows, 64)
		s := b.sbuf("s", dtype.F32, 128, 64)
		in := b.inst("dma", 5, accs(tile(s, sh(128, 64))), accs(tile(a, sh(128, 64), aff(0, pid(0, 128)))), nil)
		in.Mask = []*irpb.Predicate{{Expr: aff(-limit, ax(0), pid(0, 128)), Cmp: irpb.Cmp_LT}}
		return b
	}
	if err := Validate(build(12_799_990, 12_799_990).k); err != nil {
		t.Fatalf("implied bound not used: %v", err)
	}
	err := Validate(build(12_799_990, 12_799_991).k)
	if err == nil || !strings.Contains(err.Error(), "the mask could not be checked exactly") {
		t.Fatalf("want the conservative answer, got %v", err)
	}
}
