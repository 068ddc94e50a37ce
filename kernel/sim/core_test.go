package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
	"goldtrace/kernel/ir/irpb"
)

func TestMatmulKernelVsNumpy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, out := range []dtype.Type{dtype.F32, dtype.BF16} {
		K, M, N := int64(384), int64(256), int64(1024)
		k := matmulKernel(K, M, N, dtype.BF16, out)
		a := randTensor(r, dtype.BF16, -1, 1, K, M)
		bm := randTensor(r, dtype.BF16, -1, 1, K, N)
		got := run(t, k, a, bm)[0]
		// f32 accumulation order differs from numpy's: compare in f32 with a
		// tolerance; bf16 results may differ by one bf16 ulp at ties.
		want := npRef(t, "r0 = a0.astype(np.float32).T @ a1.astype(np.float32)", []*tensor.Tensor{a, bm}, out)[0]
		tol := 1e-5
		if out == dtype.BF16 {
			tol = 1.0 / 128
		}
		same(t, "matmul "+out.String(), got, want, tol)
	}
}

// Integer-valued operands make every f32 sum exact whatever the order, so
// the bf16 rounding of the PSUM result is checked bit for bit.
func TestMatmulBF16RoundingExact(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	K, M, N := int64(256), int64(128), int64(512)
	k := matmulKernel(K, M, N, dtype.BF16, dtype.BF16)
	a := intValued(randTensor(r, dtype.BF16, -8, 8, K, M))
	bm := intValued(randTensor(r, dtype.BF16, -8, 8, K, N))
	got := run(t, k, a, bm)[0]
	want := npRef(t, "r0 = (a0.astype(np.float32).T @ a1.astype(np.float32)).astype(ml_dtypes.bfloat16)", []*tensor.Tensor{a, bm}, dtype.BF16)[0]
	same(t, "matmul bf16 exact", got, want, 0)
}

func TestSoftmaxKernelVsNumpy(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, dt := range []dtype.Type{dtype.F32, dtype.BF16} {
		k := softmaxKernel(512, 256, dt)
		x := randTensor(r, dt, -5, 5, 512, 256)
		got := run(t, k, x)[0]
		want := npRef(t, `
x = a0.astype(np.float32)
e = np.exp(x + (-x.max(axis=1, keepdims=True)))
r0 = e * (np.float32(1) / e.sum(axis=1, keepdims=True))`, []*tensor.Tensor{x}, dt)[0]
		tol := 2e-6
		if dt == dtype.BF16 {
			tol = 1.0 / 128
		}
		same(t, "softmax "+dt.String(), got, want, tol)
	}
}

// tensor add over a 2×2 SPMD grid: each program instance adds one 128×256
// tile selected by its program ids, result rounded to bf16.
func TestTensorAddSPMDGrid(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	b := newK("add", 2, 2)
	x := b.param("x", dtype.F32, 256, 512)
	y := b.param("y", dtype.F32, 256, 512)
	o := b.output("o", dtype.BF16, 256, 512)
	at := func(tn int32) *irpb.Access {
		return b.tile(tn, []int64{128, 256}, aff(0, pid(0, 128)), aff(0, pid(1, 256)))
	}
	xt := b.sbuf("xt", dtype.F32, 128, 256)
	yt := b.sbuf("yt", dtype.F32, 128, 256)
	zt := b.sbuf("zt", dtype.BF16, 128, 256)
	b.alloc(xt)
	b.alloc(yt)
	b.alloc(zt)
	b.dma(b.full(xt), at(x))
	b.dma(b.full(yt), at(y))
	b.op("tensor_tensor", dts(b.full(zt)), dts(b.full(xt), b.full(yt)), attrs{"op": S("add")})
	b.dma(at(o), b.full(zt))
	k := b.kernel()
	xv := randTensor(r, dtype.F32, -100, 100, 256, 512)
	yv := randTensor(r, dtype.F32, -100, 100, 256, 512)
	want := npRef(t, "r0 = (a0 + a1).astype(ml_dtypes.bfloat16)", []*tensor.Tensor{xv, yv}, dtype.BF16)[0]
	for _, par := range []int{1, 4} {
		outs, err := Run(k, []*tensor.Tensor{xv, yv}, Options{Parallel: par})
		if err != nil {
			t.Fatal(err)
		}
		same(t, fmt.Sprintf("spmd add par=%d", par), outs[0], want, 0)
	}
}

// elementwise builds a one-tile kernel: load the inputs, run body, store dst.
func elementwise(shape []int64, ins []dtype.Type, out dtype.Type, body func(b *kb, src []int32, dst int32)) *irpb.Kernel {
	b := newK("ew")
	var srcs []int32
	for i, dt := range ins {
		p := b.param(fmt.Sprintf("in%d", i), dt, shape...)
		s := b.sbuf(fmt.Sprintf("s%d", i), dt, shape...)
		b.alloc(s)
		b.dma(b.full(s), b.full(p))
		srcs = append(srcs, s)
	}
	o := b.output("out", out, shape...)
	d := b.sbuf("d", out, shape...)
	b.alloc(d)
	body(b, srcs, d)
	b.dma(b.full(o), b.full(d))
	return b.kernel()
}

func TestTensorTensorOpsVsNumpy(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	cases := []struct{ op, np string }{
		{"add", "a0 + a1"}, {"subtract", "a0 - a1"}, {"multiply", "a0 * a1"}, {"divide", "a0 / a1"},
		{"maximum", "np.maximum(a0, a1)"}, {"minimum", "np.minimum(a0, a1)"},
		{"power", "(np.abs(a0).astype(np.float64) ** a1.astype(np.float64)).astype(np.float32)"},
		{"greater", "(a0 > a1)"}, {"less_equal", "(a0 <= a1)"},
		{"equal", "(a0 == a1)"}, {"not_equal", "(a0 != a1)"},
		{"fmod", "np.fmod(a0, a1)"}, {"mod", "np.mod(a0, a1)"}, {"abs_diff", "np.abs(a0 - a1)"},
		{"logical_and", "np.logical_and(a0 != 0, a1 != 0)"},
	}
	// one kernel: every op into an f32 and a bf16 output
	b := newK("ew")
	x := b.param("x", dtype.F32, 64, 96)
	y := b.param("y", dtype.F32, 64, 96)
	s := loadAll(b, x, y)
	absx := b.sbuf("absx", dtype.F32, 64, 96)
	b.alloc(absx)
	b.op("activation", dts(b.full(absx)), dts(b.full(s[0])), attrs{"func": S("abs")})
	var code strings.Builder
	var outs []dtype.Type
	var stores []func()
	for i, c := range cases {
		first := s[0]
		if c.op == "power" {
			first = absx
		}
		for j, out := range []dtype.Type{dtype.F32, dtype.BF16} {
			d, st := storeTo(b, fmt.Sprintf("%s_%d", c.op, j), out, 64, 96)
			b.op("tensor_tensor", dts(b.full(d)), dts(b.full(first), b.full(s[1])), attrs{"op": S(c.op)})
			stores = append(stores, st)
			fmt.Fprintf(&code, "r%d = np.asarray(%s).astype(np.float32)\n", 2*i+j, c.np)
			outs = append(outs, out)
		}
	}
	for _, st := range stores {
		st()
	}
	xv := randTensor(r, dtype.F32, -4, 4, 64, 96)
	yv := randTensor(r, dtype.F32, -4, 4, 64, 96)
	copy(yv.Data[:1024], xv.Data[:1024]) // some equal pairs
	got := run(t, b.kernel(), xv, yv)
	want := npRef(t, code.String(), []*tensor.Tensor{xv, yv}, outs...)
	for i := range want {
		// power: the reference is float64 pow rounded once, as the engine's
		same(t, cases[i/2].op+"->"+outs[i].String(), got[i], want[i], 0)
	}
}

func TestBitwiseOpsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	cases := []struct{ op, np string }{
		{"bitwise_and", "a0 & a1"}, {"bitwise_or", "a0 | a1"}, {"bitwise_xor", "a0 ^ a1"},
		{"left_shift", "np.left_shift(a0, a1 & 7)"}, {"right_shift_arithmetic", "np.right_shift(a0, a1 & 7)"},
	}
	for _, c := range cases {
		k := elementwise([]int64{32, 64}, []dtype.Type{dtype.S32, dtype.S32}, dtype.S32, func(b *kb, s []int32, d int32) {
			sh := s[1]
			if strings.Contains(c.op, "shift") {
				sh = b.sbuf("sh", dtype.S32, 32, 64)
				b.alloc(sh)
				b.op("tensor_scalar", dts(b.full(sh)), dts(b.full(s[1])), attrs{"op0": S("bitwise_and"), "scalar0": F(7)})
			}
			b.op("tensor_tensor", dts(b.full(d)), dts(b.full(s[0]), b.full(sh)), attrs{"op": S(c.op)})
		})
		x := randTensor(r, dtype.S32, -1<<30, 1<<30, 32, 64)
		y := randTensor(r, dtype.S32, -1<<30, 1<<30, 32, 64)
		got := run(t, k, x, y)[0]
		want := npRef(t, "r0 = "+c.np, []*tensor.Tensor{x, y}, dtype.S32)[0]
		same(t, c.op, got, want, 0)
	}
}

func TestActivationFunctionsVsNumpy(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	// f(x*scale + bias) with a (P,1) bias tile and a scalar scale; numpy
	// reference in float64 rounded to f32, compared within 2 f32 ulps.
	// log and sqrt take |z|+1 / |z| (computed by the kernel first).
	fns := []struct{ fn, np string }{
		{"exp", "np.exp(z)"}, {"log", "np.log(np.abs(z)+1)"}, {"tanh", "np.tanh(z)"}, {"sigmoid", "1/(1+np.exp(-z))"},
		{"relu", "np.maximum(z, 0)"}, {"square", "z*z"}, {"abs", "np.abs(z)"}, {"sqrt", "np.sqrt(np.abs(z))"},
		{"sin", "np.sin(z)"}, {"arctan", "np.arctan(z)"}, {"silu", "z/(1+np.exp(-z))"}, {"softplus", "np.log1p(np.exp(z))"},
		{"gelu_apprx_tanh", "0.5*z*(1+np.tanh(np.sqrt(2/np.pi)*(z+0.044715*z**3)))"}, {"reciprocal", "1/z"},
		{"erf", "np.vectorize(__import__('math').erf)(z)"}, {"sign", "np.sign(z)"}, {"floor", "np.floor(z)"},
		{"gelu", "0.5*z*(1+np.vectorize(__import__('math').erf)(z/np.sqrt(2)))"}, {"rsqrt", "1/np.sqrt(np.abs(z))"},
		{"cos", "np.cos(z)"}, {"negative", "-z"}, {"ceil", "np.ceil(z)"}, {"trunc", "np.trunc(z)"},
	}
	b := newK("act")
	x := b.param("x", dtype.F32, 128, 64)
	bp := b.param("bias", dtype.F32, 128, 64)
	s := loadAll(b, x, bp)
	bias := b.sbuf("bias_col", dtype.F32, 128, 1)
	b.alloc(bias)
	b.op("tensor_copy", dts(b.full(bias)), dts(b.tile(s[1], []int64{128, 1})), nil)
	z := b.sbuf("z", dtype.F32, 128, 64)
	b.alloc(z)
	b.op("activation", dts(b.full(z)), dts(b.full(s[0]), b.full(bias)), attrs{"func": S("identity"), "has_bias": B(true), "scale": F(0.75)})
	az := b.sbuf("absz", dtype.F32, 128, 64)
	b.alloc(az)
	b.op("activation", dts(b.full(az)), dts(b.full(z)), attrs{"func": S("abs")})
	az1 := b.sbuf("absz1", dtype.F32, 128, 64)
	b.alloc(az1)
	b.op("tensor_scalar", dts(b.full(az1)), dts(b.full(az)), attrs{"op0": S("add"), "scalar0": F(1)})
	var code strings.Builder
	code.WriteString("x = a0.astype(np.float32); b = a1[:, :1].astype(np.float32)\nz = ((x * np.float32(0.75)) + b).astype(np.float64)\n")
	var stores []func()
	var outs []dtype.Type
	for i, f := range fns {
		d, st := storeTo(b, f.fn, dtype.F32, 128, 64)
		switch f.fn {
		case "log":
			b.op("activation", dts(b.full(d)), dts(b.full(az1)), attrs{"func": S(f.fn)})
		case "sqrt", "rsqrt":
			b.op("activation", dts(b.full(d)), dts(b.full(az)), attrs{"func": S(f.fn)})
		default:
			// d = fn(x*0.75 + bias) in one instruction
			b.op("activation", dts(b.full(d)), dts(b.full(s[0]), b.full(bias)), attrs{"func": S(f.fn), "has_bias": B(true), "scale": F(0.75)})
		}
		stores = append(stores, st)
		fmt.Fprintf(&code, "r%d = (%s).astype(np.float32)\n", i, f.np)
		outs = append(outs, dtype.F32)
	}
	for _, st := range stores {
		st()
	}
	xv := randTensor(r, dtype.F32, -3, 3, 128, 64)
	bv := randTensor(r, dtype.F32, -1, 1, 128, 64)
	got := run(t, b.kernel(), xv, bv)
	want := npRef(t, code.String(), []*tensor.Tensor{xv, bv}, outs...)
	for i, f := range fns {
		same(t, "activation "+f.fn, got[i], want[i], 3e-7)
	}
}

func TestTensorScalarAndReverse(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	k := elementwise([]int64{16, 40}, []dtype.Type{dtype.F32, dtype.F32}, dtype.BF16, func(b *kb, s []int32, d int32) {
		col := b.sbuf("col", dtype.F32, 16, 1)
		b.alloc(col)
		b.op("tensor_copy", dts(b.full(col)), dts(b.tile(s[1], []int64{16, 1})), nil)
		// d = (3 - x) * col   (reverse0 subtract with an immediate, then a (P,1) tile)
		b.op("tensor_scalar", dts(b.full(d)), dts(b.full(s[0]), b.full(col)),
			attrs{"op0": S("subtract"), "scalar0": F(3), "reverse0": B(true), "op1": S("multiply"), "has_operand1_tile": B(true)})
	})
	x := randTensor(r, dtype.F32, -4, 4, 16, 40)
	y := randTensor(r, dtype.F32, -4, 4, 16, 40)
	got := run(t, k, x, y)[0]
	want := npRef(t, "r0 = (np.float32(3) - a0) * a1[:, :1]", []*tensor.Tensor{x, y}, dtype.BF16)[0]
	same(t, "tensor_scalar", got, want, 0)
}

func TestTensorReduceOps(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, c := range []struct{ op, np string }{{"add", "sum"}, {"maximum", "max"}, {"minimum", "min"}, {"multiply", "prod"}} {
		b := newK("reduce")
		x := b.param("x", dtype.F32, 32, 4, 8)
		o := b.output("o", dtype.F32, 32, 1)
		o2 := b.output("o2", dtype.F32, 32, 4)
		xs := b.sbuf("xs", dtype.F32, 32, 4, 8)
		b.alloc(xs)
		b.dma(b.full(xs), b.full(x))
		rs := b.sbuf("rs", dtype.F32, 32, 1)
		b.alloc(rs)
		b.op("tensor_reduce", dts(b.full(rs)), dts(b.full(xs)), attrs{"op": S(c.op), "axes": Ints(1, 2), "keepdims": B(true), "negate": B(true)})
		b.dma(b.full(o), b.full(rs))
		r2 := b.sbuf("r2", dtype.F32, 32, 4)
		b.alloc(r2)
		b.op("tensor_reduce", dts(b.full(r2)), dts(b.full(xs)), attrs{"op": S(c.op), "axes": Ints(2)})
		b.dma(b.full(o2), b.full(r2))
		xv := randTensor(r, dtype.F32, 0.5, 1.5, 32, 4, 8)
		got := run(t, b.kernel(), xv)
		// sequential f32 fold, as the engine does
		want := npRef(t, fmt.Sprintf(`
x = a0.reshape(32, -1)
def fold(v):
    acc = v[..., 0].copy()
    for j in range(1, v.shape[-1]):
        acc = np.%s(acc, v[..., j]) if %q in ("maximum","minimum") else (acc + v[..., j] if %q == "add" else acc * v[..., j])
    return acc
r0 = -fold(x).reshape(32, 1)
r1 = fold(a0)`, map[string]string{"maximum": "maximum", "minimum": "minimum"}[c.op]+map[string]string{"add": "add", "multiply": "multiply"}[c.op], c.op, c.op), []*tensor.Tensor{xv}, dtype.F32, dtype.F32)
		same(t, "reduce "+c.op, got[0], want[0], 0)
		same(t, "reduce axis2 "+c.op, got[1], want[1], 0)
	}
}

func TestTransposeSelectIotaMemset(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	b := newK("misc")
	x := b.param("x", dtype.F32, 64, 32)
	ot := b.output("xt", dtype.F32, 32, 64)
	osel := b.output("sel", dtype.BF16, 64, 32)
	oi := b.output("iota", dtype.S32, 64, 32)
	om := b.output("mset", dtype.F8E4M3FN, 64, 32)
	xs := b.sbuf("xs", dtype.F32, 64, 32)
	b.alloc(xs)
	b.dma(b.full(xs), b.full(x))
	tp := b.psum("tp", dtype.F32, 32, 64)
	b.alloc(tp)
	b.op("transpose", dts(b.full(tp)), dts(b.full(xs)), attrs{"engine": S("tensor")})
	b.dma(b.full(ot), b.full(tp))
	pr := b.sbuf("pr", dtype.U8, 64, 32)
	b.alloc(pr)
	b.op("tensor_scalar", dts(b.full(pr)), dts(b.full(xs)), attrs{"op0": S("greater"), "scalar0": F(0)})
	sl := b.sbuf("sl", dtype.BF16, 64, 32)
	b.alloc(sl)
	b.op("select", dts(b.full(sl)), dts(b.full(pr), b.full(xs)), attrs{"false_value": F(-2.5)})
	b.dma(b.full(osel), b.full(sl))
	it := b.sbuf("it", dtype.S32, 64, 32)
	b.alloc(it)
	b.emit(&irpb.Instruction{Op: "iota", Dst: dts(b.full(it)), Exprs: []*irpb.Affine{aff(-7, tax(0, 100), tax(1, -3))}})
	b.dma(b.full(oi), b.full(it))
	ms := b.sbuf("ms", dtype.F8E4M3FN, 64, 32)
	b.alloc(ms)
	b.op("memset", dts(b.full(ms)), nil, attrs{"value": F(0.3)})
	b.dma(b.full(om), b.full(ms))
	xv := randTensor(r, dtype.F32, -1, 1, 64, 32)
	got := run(t, b.kernel(), xv)
	want := npRef(t, `
r0 = a0.T
r1 = np.where(a0 > 0, a0, np.float32(-2.5)).astype(ml_dtypes.bfloat16)
p, f = np.mgrid[0:64, 0:32]
r2 = (-7 + 100*p - 3*f).astype(np.int32)
r3 = np.full((64, 32), 0.3, dtype=np.float32).astype(ml_dtypes.float8_e4m3fn)`, []*tensor.Tensor{xv}, dtype.F32, dtype.BF16, dtype.S32, dtype.F8E4M3FN)
	for i, name := range []string{"transpose", "select", "iota", "memset"} {
		same(t, name, got[i], want[i], 0)
	}
}

// Storing an unwritten SBUF tile returns NaN (floats) / the int sentinel.
func TestUnwrittenMemoryReadsSentinel(t *testing.T) {
	b := newK("garbage")
	o := b.output("o", dtype.F32, 4, 4)
	oi := b.output("oi", dtype.S32, 4, 4)
	ou := b.output("unstored", dtype.F32, 4, 4)
	s := b.sbuf("s", dtype.BF16, 4, 4)
	b.alloc(s)
	b.dma(b.full(o), b.full(s))
	si := b.sbuf("si", dtype.S32, 4, 4)
	b.alloc(si)
	b.dma(b.full(oi), b.full(si))
	_ = ou
	got := run(t, b.kernel())
	for i, v := range values(got[0]) {
		if !math.IsNaN(v) {
			t.Fatalf("element %d of an unwritten bf16 tile = %v, want NaN", i, v)
		}
	}
	for i, v := range values(got[1]) {
		if v != math.MaxInt32 {
			t.Fatalf("element %d of an unwritten s32 tile = %v, want %d", i, v, math.MaxInt32)
		}
	}
	for i, v := range values(got[2]) {
		if !math.IsNaN(v) {
			t.Fatalf("element %d of an unwritten output = %v, want NaN", i, v)
		}
	}
}

func TestOutOfBoundsError(t *testing.T) {
	b := newK("oob")
	x := b.param("x", dtype.F32, 100, 8)
	o := b.output("o", dtype.F32, 128, 8)
	s := b.sbuf("s", dtype.F32, 128, 8)
	b.alloc(s)
	b.loop(irpb.LoopKind_AFFINE, 0, 1, 1, func(i int) {
		b.dma(b.full(s), b.tile(x, []int64{128, 8}, aff(0, lv(i, 128))))
	})
	b.dma(b.full(o), b.full(s))
	_, err := Run(b.kernel(), []*tensor.Tensor{tensor.New(dtype.F32, []int64{100, 8})}, Options{})
	var e *Error
	if !errors.As(err, &e) || e.Rule != "bounds" || e.Op != "dma" || e.File != "test_kernel.py" || e.Line != 2 {
		t.Fatalf("want a bounds error at test_kernel.py:2 naming dma, got %v", err)
	}
	if !strings.Contains(err.Error(), "test_kernel.py:2") || !strings.Contains(err.Error(), "x[100,8]") {
		t.Fatalf("message lacks location or tensor: %v", err)
	}
	if IsInvalidKernel(err) {
		t.Fatal("an out-of-bounds access is an evaluation failure, not an invalid kernel")
	}
}

// A mask restricts the ragged last tile to the rows that exist: no bounds
// error, masked rows untouched.
func TestMaskRaggedTile(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	b := newK("ragged")
	x := b.param("x", dtype.F32, 200, 16)
	o := b.output("o", dtype.F32, 200, 16)
	b.loop(irpb.LoopKind_AFFINE, 0, 2, 1, func(i int) {
		s := b.sbuf("s", dtype.F32, 128, 16)
		b.alloc(s)
		mask := []*irpb.Predicate{{Expr: aff(-200, tax(0, 1), lv(i, 128)), Cmp: irpb.Cmp_LT}} // i*128 + p < 200
		in := b.dma(b.full(s), b.tile(x, []int64{128, 16}, aff(0, lv(i, 128))))
		in.Mask = mask
		ex := b.op("activation", dts(b.full(s)), dts(b.full(s)), attrs{"func": S("exp")})
		ex.Mask = mask
		st := b.dma(b.tile(o, []int64{128, 16}, aff(0, lv(i, 128))), b.full(s))
		st.Mask = mask
	})
	xv := randTensor(r, dtype.F32, -2, 2, 200, 16)
	got := run(t, b.kernel(), xv)[0]
	want := npRef(t, "r0 = np.exp(a0.astype(np.float64)).astype(np.float32)", []*tensor.Tensor{xv}, dtype.F32)[0]
	same(t, "masked exp", got, want, 0)
}

func TestInputChecks(t *testing.T) {
	k := softmaxKernel(128, 64, dtype.F32)
	_, err := Run(k, []*tensor.Tensor{tensor.New(dtype.BF16, []int64{128, 64})}, Options{})
	if !IsInvalidKernel(err) || !strings.Contains(err.Error(), "parameter 0 (x)") {
		t.Fatalf("want an input error naming x, got %v", err)
	}
	_, err = Run(k, nil, Options{})
	if !IsInvalidKernel(err) {
		t.Fatalf("want an input count error, got %v", err)
	}
}

// intValued rounds a float tensor's values to integers (exact in its dtype
// for small magnitudes).
func intValued(t *tensor.Tensor) *tensor.Tensor {
	v := values(t)
	for i := range v {
		v[i] = math.Round(v[i])
	}
	dtype.EncodeF64(t.Type, v, t.Data)
	return t
}

// Run is reentrant: concurrent runs of one kernel (each with parallel
// program instances) give identical results.
func TestConcurrentRunsParallel(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	k := softmaxKernel(256, 128, dtype.F32)
	x := randTensor(r, dtype.F32, -3, 3, 256, 128)
	want := run(t, k, x)[0]
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			outs, err := Run(k, []*tensor.Tensor{x}, Options{Parallel: 3})
			if err == nil && string(outs[0].Data) != string(want.Data) {
				err = fmt.Errorf("concurrent run differs")
			}
			errs <- err
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// The blocked tutorial matmul (K resident per block, memset-created PSUM
// accumulators): integer-valued operands make the f32 sums exact, so the
// result is checked bit for bit against numpy; random operands must give
// the same bits serially and on several goroutines.
func TestMatmulBlockedVsNumpyAndDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	K, M, N := int64(512), int64(384), int64(2048)
	k := matmulBlockedKernel(K, M, N, dtype.BF16)
	a := intValued(randTensor(r, dtype.BF16, -8, 8, K, M))
	bm := intValued(randTensor(r, dtype.BF16, -8, 8, K, N))
	got := run(t, k, a, bm)[0]
	want := npRef(t, "r0 = (a0.astype(np.float32).T @ a1.astype(np.float32)).astype(ml_dtypes.bfloat16)", []*tensor.Tensor{a, bm}, dtype.BF16)[0]
	same(t, "blocked matmul exact", got, want, 0)

	a = randTensor(r, dtype.BF16, -1, 1, K, M)
	bm = randTensor(r, dtype.BF16, -1, 1, K, N)
	var first []byte
	for _, par := range []int{1, 2, 3, 4} {
		outs, err := Run(k, []*tensor.Tensor{a, bm}, Options{Parallel: par})
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = outs[0].Data
		} else if string(first) != string(outs[0].Data) {
			t.Fatalf("Parallel=%d gives different bits than Parallel=1", par)
		}
	}
}
