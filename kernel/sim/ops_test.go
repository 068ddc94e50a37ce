package sim

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
	"goldtrace/kernel/ir/irpb"
)

// loadAll declares one SBUF copy per parameter (same shape and dtype).
func loadAll(b *kb, params ...int32) []int32 {
	var out []int32
	for _, p := range params {
		t := b.k.Tensors[p]
		s := b.sbuf(t.Name+"_sb", dtype.Type(t.Dtype), t.Shape...)
		b.alloc(s)
		b.dma(b.full(s), b.full(p))
		out = append(out, s)
	}
	return out
}

// store declares an SBUF tile and an output of the same shape; the returned
// func stores the tile.
func storeTo(b *kb, name string, dt dtype.Type, shape ...int64) (int32, func()) {
	o := b.output(name, dt, shape...)
	s := b.sbuf(name+"_sb", dt, shape...)
	b.alloc(s)
	return s, func() { b.dma(b.full(o), b.full(s)) }
}

func TestVectorOpsVsNumpy(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	b := newK("vector")
	x := b.param("x", dtype.F32, 32, 48)
	y := b.param("y", dtype.F32, 32, 48)
	c := b.param("c", dtype.F32, 32, 1)
	s := loadAll(b, x, y, c)
	xs, ys, cs := s[0], s[1], s[2]
	// scalar_tensor_tensor: (x - c) * y, reversed: y - (2 * x)
	stt, st1 := storeTo(b, "stt", dtype.F32, 32, 48)
	b.op("scalar_tensor_tensor", dts(b.full(stt)), dts(b.full(xs), b.full(cs), b.full(ys)), attrs{"op0": S("subtract"), "has_operand0_tile": B(true), "op1": S("multiply")})
	st1()
	stt2, st2 := storeTo(b, "stt2", dtype.F32, 32, 48)
	b.op("scalar_tensor_tensor", dts(b.full(stt2)), dts(b.full(xs), b.full(ys)), attrs{"op0": S("multiply"), "scalar0": F(2), "op1": S("subtract"), "reverse1": B(true)})
	st2()
	// tensor_scalar_reduce: t = x * 3, r = max(t)
	tsr, st3 := storeTo(b, "tsr", dtype.BF16, 32, 48)
	tsrr, st4 := storeTo(b, "tsr_r", dtype.F32, 32, 1)
	b.op("tensor_scalar_reduce", dts(b.full(tsr), b.full(tsrr)), dts(b.full(xs)), attrs{"op0": S("multiply"), "scalar0": F(3), "reduce_op": S("maximum")})
	st3()
	st4()
	// activation with reduce: e = exp(x), sum into (P,1)
	ae, st5 := storeTo(b, "act", dtype.F32, 32, 48)
	ar, st6 := storeTo(b, "act_sum", dtype.F32, 32, 1)
	b.op("activation", dts(b.full(ae), b.full(ar)), dts(b.full(xs)), attrs{"func": S("exp"), "reduce_op": S("add")})
	st5()
	st6()
	// tensor_tensor_scan: out[i] = (x[i] * out[i-1]) + y[i], initial c
	sc, st7 := storeTo(b, "scan", dtype.F32, 32, 48)
	b.op("tensor_tensor_scan", dts(b.full(sc)), dts(b.full(xs), b.full(ys), b.full(cs)), attrs{"op0": S("multiply"), "op1": S("add")})
	st7()
	// partition reduce: sum over partitions
	pr, st8 := storeTo(b, "preduce", dtype.F32, 1, 48)
	b.op("tensor_partition_reduce", dts(b.full(pr)), dts(b.full(xs)), attrs{"op": S("add")})
	st8()
	// copy_predicated: where x > 0 take y, else keep x
	cp, st9 := storeTo(b, "cpred", dtype.F32, 32, 48)
	b.op("tensor_copy", dts(b.full(cp)), dts(b.full(xs)), nil)
	pm := b.sbuf("pm", dtype.U8, 32, 48)
	b.alloc(pm)
	b.op("tensor_scalar", dts(b.full(pm)), dts(b.full(xs)), attrs{"op0": S("greater"), "scalar0": F(0)})
	b.op("copy_predicated", dts(b.full(cp)), dts(b.full(ys), b.full(pm)), nil)
	st9()
	// affine_select: keep x where p - f >= 0 (causal), else -9
	as, st10 := storeTo(b, "aselect", dtype.F32, 32, 48)
	b.emit(&irpb.Instruction{Op: "affine_select", Dst: dts(b.full(as)), Src: dts(b.full(xs)), Attrs: attrs{"false_value": F(-9)},
		Preds: []*irpb.Predicate{{Expr: aff(0, tax(0, 1), tax(1, -1)), Cmp: irpb.Cmp_GE}}})
	st10()
	// range_select: keep x where 3 <= idx+range_start < c*10+20, fill -1e30; max
	rs, st11 := storeTo(b, "rselect", dtype.F32, 32, 48)
	rr, st12 := storeTo(b, "rselect_max", dtype.F32, 32, 1)
	lo := b.sbuf("lo", dtype.F32, 32, 1)
	b.alloc(lo)
	b.op("memset", dts(b.full(lo)), nil, attrs{"value": F(3)})
	hi := b.sbuf("hi", dtype.F32, 32, 1)
	b.alloc(hi)
	b.op("tensor_scalar", dts(b.full(hi)), dts(b.full(cs)), attrs{"op0": S("multiply"), "scalar0": F(10), "op1": S("add"), "scalar1": F(20)})
	b.op("range_select", dts(b.full(rs), b.full(rr)), dts(b.full(xs), b.full(lo), b.full(hi)),
		attrs{"comp0": S("greater_equal"), "comp1": S("less"), "fill": F(-1e30), "range_start": F(2), "reduce_op": S("maximum")})
	st11()
	st12()
	// select_reduce: pred ? x : c, max
	sr, st13 := storeTo(b, "sreduce", dtype.F32, 32, 48)
	srr, st14 := storeTo(b, "sreduce_max", dtype.F32, 32, 1)
	b.op("select_reduce", dts(b.full(sr), b.full(srr)), dts(b.full(pm), b.full(ys), b.full(cs)), attrs{"reduce_op": S("maximum")})
	st13()
	st14()
	k := b.kernel()
	xv := randTensor(r, dtype.F32, -1, 1, 32, 48)
	yv := randTensor(r, dtype.F32, -1, 1, 32, 48)
	cv := randTensor(r, dtype.F32, -1, 1, 32, 1)
	got := run(t, k, xv, yv, cv)
	f32 := dtype.F32
	want := npRef(t, `
x, y, c = a0, a1, a2
f = np.float32
r0 = (x - c) * y
r1 = y - (f(2) * x)
t = x * f(3)
r2 = t.astype(ml_dtypes.bfloat16)
r3 = t.max(axis=1, keepdims=True)
e = np.exp(x.astype(np.float64)).astype(np.float32)
r4 = e
acc = e[:, 0].copy()
for j in range(1, 48): acc = acc + e[:, j]
r5 = acc.reshape(32, 1)
out = np.zeros_like(x); prev = c[:, 0].copy()
for j in range(48):
    prev = (x[:, j] * prev) + y[:, j]; out[:, j] = prev
r6 = out
acc = x[0].copy()
for p in range(1, 32): acc = acc + x[p]
r7 = acc.reshape(1, 48)
r8 = np.where(x > 0, y, x)
p, q = np.mgrid[0:32, 0:48]
r9 = np.where(p - q >= 0, x, f(-9))
idx = (q + 2).astype(np.float32)
m = (idx >= 3) & (idx < (c * f(10) + f(20)))
r10 = np.where(m, x, f(-1e30))
r11 = r10.max(axis=1, keepdims=True)
r12 = np.where(x > 0, y, np.broadcast_to(c, x.shape))
r13 = r12.max(axis=1, keepdims=True)`, []*tensor.Tensor{xv, yv, cv}, f32, f32, dtype.BF16, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
	names := []string{"stt", "stt reversed", "tsr", "tsr reduce", "activation exp", "activation reduce", "scan", "partition reduce", "copy_predicated", "affine_select", "range_select", "range_select max", "select_reduce", "select_reduce max"}
	for i, n := range names {
		same(t, n, got[i], want[i], 0)
	}
}

func TestBNStatsAggrVsNumpy(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	b := newK("bn")
	x := b.param("x", dtype.F32, 16, 1000)
	xs := loadAll(b, x)[0]
	st, _ := storeTo(b, "stats", dtype.F32, 16, 12)
	b.op("bn_stats", dts(b.full(st)), dts(b.full(xs)), nil)
	ag, sta := storeTo(b, "aggr", dtype.F32, 16, 2)
	b.op("bn_aggr", dts(b.full(ag)), dts(b.full(st)), nil)
	sta()
	xv := randTensor(r, dtype.F32, 2, 4, 16, 1000)
	got := run(t, b.kernel(), xv)[1]
	want := npRef(t, "x = a0.astype(np.float64)\nr0 = np.stack([x.mean(axis=1), x.var(axis=1)], axis=1)", []*tensor.Tensor{xv}, dtype.F32)[0]
	same(t, "bn mean/var", got, want, 2e-5)
}

func TestTop8Ops(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 36))
	b := newK("top8")
	x := b.param("x", dtype.F32, 8, 100)
	xs := loadAll(b, x)[0]
	m8, s1 := storeTo(b, "max8", dtype.F32, 8, 8)
	b.op("max8", dts(b.full(m8)), dts(b.full(xs)), nil)
	s1()
	fi, s2 := storeTo(b, "idx8", dtype.U32, 8, 8)
	b.op("nc_find_index8", dts(b.full(fi)), dts(b.full(xs), b.full(m8)), nil)
	s2()
	mr, s3 := storeTo(b, "replaced", dtype.F32, 8, 100)
	b.op("nc_match_replace8", dts(b.full(mr)), dts(b.full(xs), b.full(m8)), attrs{"imm": F(-100)})
	s3()
	xv := randTensor(r, dtype.F32, -10, 10, 8, 100)
	// ties: the largest value of row 0 appears twice
	vals := values(xv)
	vals[3], vals[50] = 11, 11
	dtype.EncodeF64(dtype.F32, vals, xv.Data)
	got := run(t, b.kernel(), xv)
	want := npRef(t, `
x = a0
o = np.argsort(-x, axis=1, kind='stable')[:, :8]
r0 = np.take_along_axis(x, o, axis=1)
r1 = np.array([[int(np.nonzero(x[p] == v)[0][0]) for v in r0[p]] for p in range(8)])
r2 = x.copy()
np.put_along_axis(r2, o, np.float32(-100), axis=1)`, []*tensor.Tensor{xv}, dtype.F32, dtype.U32, dtype.F32)
	same(t, "max8", got[0], want[0], 0)
	same(t, "find_index8", got[1], want[1], 0)
	same(t, "match_replace8", got[2], want[2], 0)
}

// local_gather and nc_stream_shuffle against the numpy semantics the ISA
// documentation gives.
func TestGatherShuffle(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 38))
	mask := make([]int64, 32)
	for i := range mask {
		mask[i] = int64((i * 5) % 32)
	}
	mask[3] = 255
	srcV := randTensor(r, dtype.F32, 0, 100, 32, 64, 4)
	idx := tensor.New(dtype.U16, []int64{32, 4})
	u := idx.U16()
	for p := 0; p < 16; p++ {
		for j := 0; j < 4; j++ {
			u[p*4+j] = uint16(r.IntN(64) * 4)
			u[(p+16)*4+j] = u[p*4+j]
		}
	}
	b2 := newK("gather_only")
	src2 := b2.param("src", dtype.F32, 32, 64, 4)
	ix2 := b2.param("index", dtype.U16, 32, 4)
	s2b := loadAll(b2, src2, ix2)
	g2, st := storeTo(b2, "gathered", dtype.F32, 32, 40, 4)
	b2.op("local_gather", dts(b2.full(g2)), dts(b2.full(s2b[0]), b2.full(s2b[1])), attrs{"num_elem_per_idx": I(4), "num_valid_indices": I(40)})
	st()
	got := run(t, b2.kernel(), srcV, idx)[0]
	want := npRef(t, `
src, index = a0, a1.astype(np.int64) // 4
out = np.zeros((32, 40, 4), np.float32)
for c in range(2):
    i1 = index[c*16:(c+1)*16].flatten(order='F')[:40]
    out[c*16:(c+1)*16] = np.take(src[c*16:(c+1)*16], i1, axis=1)
r0 = out`, []*tensor.Tensor{srcV, idx}, dtype.F32)[0]
	same(t, "local_gather", got, want, 0)

	b3 := newK("shuffle")
	x := b3.param("x", dtype.F32, 64, 4)
	xs := loadAll(b3, x)[0]
	o, st3 := storeTo(b3, "o", dtype.F32, 64, 4)
	b3.op("memset", dts(b3.full(o)), nil, attrs{"value": F(7)})
	b3.op("nc_stream_shuffle", dts(b3.full(o)), dts(b3.full(xs)), attrs{"shuffle_mask": Ints(mask...)})
	st3()
	xv := randTensor(r, dtype.F32, 0, 1, 64, 4)
	got = run(t, b3.kernel(), xv)[0]
	want = npRef(t, `
x = a0; out = np.full((64, 4), 7, np.float32)
m = [(i*5) % 32 for i in range(32)]; m[3] = 255
for q in range(2):
    for i in range(32):
        if m[i] != 255: out[q*32+i] = x[q*32+m[i]]
r0 = out`, []*tensor.Tensor{xv}, dtype.F32)[0]
	same(t, "stream_shuffle", got, want, 0)
}

// dma with dst_rmw_op accumulates; dma_transpose; a dynamic row gather with
// oob_mode skip leaves the rows whose index is out of range untouched.
func TestDMAModes(t *testing.T) {
	r := rand.New(rand.NewPCG(39, 40))
	b := newK("dma")
	x := b.param("x", dtype.F32, 16, 8)
	ids := b.param("ids", dtype.S32, 16, 1)
	o := b.output("acc", dtype.F32, 16, 8)
	ot := b.output("tr", dtype.F32, 8, 16)
	og := b.output("gathered", dtype.F32, 16, 8)
	ld := loadAll(b, x, ids)
	xs, idsb := ld[0], ld[1]
	b.dma(b.full(o), b.full(xs))
	b.op("dma", dts(b.full(o)), dts(b.full(xs)), attrs{"dst_rmw_op": S("add")})
	b.op("dma", dts(b.full(o)), dts(b.full(xs)), attrs{"dst_rmw_op": S("multiply")})
	b.op("dma_transpose", dts(b.full(ot)), dts(b.full(xs)), nil)
	g := b.sbuf("g", dtype.F32, 16, 8)
	b.alloc(g)
	b.op("memset", dts(b.full(g)), nil, attrs{"value": F(-1)})
	src := b.full(x)
	src.Index[0] = aff(0) // row index comes from the dynamic tile
	src.DynamicDim = []int32{0}
	src.Dynamic = []*irpb.Access{b.full(idsb)}
	b.op("dma", dts(b.full(g)), dts(src), attrs{"oob_mode": S("skip")})
	b.dma(b.full(og), b.full(g))
	xv := randTensor(r, dtype.F32, -2, 2, 16, 8)
	iv := tensor.New(dtype.S32, []int64{16, 1})
	for i, v := range []int32{3, 0, 15, 20, -1, 7, 7, 2, 9, 100, 1, 4, 5, 6, 8, 10} {
		iv.I32()[i] = v
	}
	got := run(t, b.kernel(), xv, iv)
	want := npRef(t, `
x, ids = a0, a1[:, 0]
r0 = (x + x) * x
r1 = x.T
r2 = np.full((16, 8), -1, np.float32)
for p, i in enumerate(ids):
    if 0 <= i < 16: r2[p] = x[i]`, []*tensor.Tensor{xv, iv}, dtype.F32, dtype.F32, dtype.F32)
	same(t, "dma rmw", got[0], want[0], 0)
	same(t, "dma_transpose", got[1], want[1], 0)
	same(t, "dynamic gather skip", got[2], want[2], 0)
	// without skip the out-of-range index is a bounds error
	k := b.kernel()
	for _, s := range k.Body {
		if in := s.GetInst(); in != nil && in.Attrs["oob_mode"] != nil {
			in.Attrs["oob_mode"] = S("error")
		}
	}
	_, err := Run(k, []*tensor.Tensor{xv, iv}, Options{})
	var e *Error
	if !errors.As(err, &e) || e.Rule != "bounds" {
		t.Fatalf("dynamic index 20 into 16 rows: want a bounds error, got %v", err)
	}
}

// Dtype rounding: f32 results into fp8 e5m2 / e4m3fn (ml_dtypes), and
// integers round half to even and saturate.
func TestDtypeRounding(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	b := newK("round")
	x := b.param("x", dtype.F32, 16, 64)
	xs := loadAll(b, x)[0]
	var stores []func()
	for _, dt := range []dtype.Type{dtype.F8E5M2, dtype.F8E4M3FN, dtype.F16, dtype.BF16, dtype.S8, dtype.U8, dtype.S16, dtype.S32} {
		s, st := storeTo(b, dt.String(), dt, 16, 64)
		b.op("tensor_scalar", dts(b.full(s)), dts(b.full(xs)), attrs{"op0": S("multiply"), "scalar0": F(1.5)})
		stores = append(stores, st)
	}
	for _, st := range stores {
		st()
	}
	xv := randTensor(r, dtype.F32, -300, 300, 16, 64)
	vals := values(xv)
	vals[0], vals[1], vals[2], vals[3] = 1.0/3, -5.0/3, 0.5/1.5, 2.5/1.5 // 0.5, -2.5, 2.5 after scaling
	dtype.EncodeF64(dtype.F32, vals, xv.Data)
	got := run(t, b.kernel(), xv)
	want := npRef(t, `
y = a0 * np.float32(1.5)
def sat(t):
    i = np.iinfo(t); return np.clip(np.rint(y.astype(np.float64)), i.min, i.max).astype(t)
r0 = y.astype(ml_dtypes.float8_e5m2); r1 = y.astype(ml_dtypes.float8_e4m3fn); r2 = y.astype(np.float16)
r3 = y.astype(ml_dtypes.bfloat16); r4 = sat(np.int8); r5 = sat(np.uint8); r6 = sat(np.int16); r7 = sat(np.int32)`,
		[]*tensor.Tensor{xv}, dtype.F8E5M2, dtype.F8E4M3FN, dtype.F16, dtype.BF16, dtype.S8, dtype.U8, dtype.S16, dtype.S32)
	for i := range want {
		same(t, "round "+want[i].Type.String(), got[i], want[i], 0)
	}
}

// Two placed SBUF tensors at the same partition/byte offset alias: a bf16
// write is visible through an overlapping u16 view (bit patterns), and a
// mod_alloc placement cycles through its tiles.
func TestAllocationAliasing(t *testing.T) {
	b := newK("alias")
	x := b.param("x", dtype.BF16, 4, 8)
	o := b.output("bits", dtype.U16, 4, 8)
	o2 := b.output("second", dtype.F32, 4, 8)
	a := b.sbuf("a", dtype.BF16, 4, 8)
	b.k.Tensors[a].Allocation = &irpb.Allocation{PartitionOffset: 2, ByteOffset: 64, Kind: "fixed"}
	u := b.sbuf("u", dtype.U16, 4, 8)
	b.k.Tensors[u].Allocation = &irpb.Allocation{PartitionOffset: 2, ByteOffset: 64, Kind: "fixed"}
	b.dma(b.full(a), b.full(x))
	b.dma(b.full(o), b.full(u))
	// f32 tensor overlapping the bf16 one at byte offset 64: its element j
	// holds bf16 elements 2j (low half) and 2j+1 (high half).
	w := b.sbuf("w", dtype.F32, 4, 4)
	b.k.Tensors[w].Allocation = &irpb.Allocation{PartitionOffset: 2, ByteOffset: 64, Kind: "fixed"}
	m := b.sbuf("m", dtype.F32, 4, 8)
	b.k.Tensors[m].Allocation = &irpb.Allocation{PartitionOffset: 0, ByteOffset: 4096, NumFreeTiles: 2, BytesPerTile: 32, LoopVar: 0, Kind: "mod"}
	ws := b.sbuf("wsb", dtype.F32, 4, 8)
	b.alloc(ws)
	b.loop(irpb.LoopKind_SEQUENTIAL, 0, 3, 1, func(i int) {
		// iteration i writes value i to tile i%2 ... iteration 2 overwrites tile 0
		b.op("memset", dts(b.tile(m, []int64{4, 4})), nil, attrs{"value": F(0)})
		b.emit(&irpb.Instruction{Op: "iota", Dst: dts(b.tile(m, []int64{4, 4})), Exprs: []*irpb.Affine{aff(0, lv(i, 1))}})
		b.op("tensor_copy", dts(b.tile(ws, []int64{4, 4}, nil, aff(0, lv(i, 0)))), dts(b.tile(w, []int64{4, 4})), nil)
	})
	b.dma(b.full(o2), b.full(ws))
	xv := tensor.New(dtype.BF16, []int64{4, 8})
	for i := range xv.U16() {
		xv.U16()[i] = uint16(0x3F80 + i) // 1.0, 1.0078125, ...
	}
	got := run(t, b.kernel(), xv)
	for i, v := range got[0].U16() {
		if v != xv.U16()[i] {
			t.Fatalf("aliased u16 element %d = %#x, want the bf16 bits %#x", i, v, xv.U16()[i])
		}
	}
	// columns 0..3 of `second` hold w (f32 from the bf16 pairs), 4..7 unwritten (NaN)
	f := got[1].F32()
	for p := 0; p < 4; p++ {
		for j := 0; j < 4; j++ {
			lo, hi := xv.U16()[p*8+2*j], xv.U16()[p*8+2*j+1]
			want := math.Float32frombits(uint32(hi)<<16 | uint32(lo))
			if f[p*8+j] != want {
				t.Fatalf("f32 view [%d,%d] = %v, want %v", p, j, f[p*8+j], want)
			}
		}
		for j := 4; j < 8; j++ {
			if !math.IsNaN(float64(f[p*8+j])) {
				t.Fatalf("unwritten element [%d,%d] = %v, want NaN", p, j, f[p*8+j])
			}
		}
	}
}

// mod_alloc: iteration i of the loop uses tile i mod 2; the iteration-2
// write overwrites iteration 0's tile, iteration 1's survives.
func TestModAllocRotation(t *testing.T) {
	b := newK("mod")
	o := b.output("o", dtype.S32, 2, 4)
	m := b.sbuf("m", dtype.S32, 2, 4)
	b.k.Tensors[m].Allocation = &irpb.Allocation{PartitionOffset: 0, ByteOffset: 0, NumFreeTiles: 2, BytesPerTile: 16, LoopVar: 0, Kind: "mod"}
	fixed0 := b.sbuf("tile0", dtype.S32, 2, 4)
	b.k.Tensors[fixed0].Allocation = &irpb.Allocation{ByteOffset: 0}
	fixed1 := b.sbuf("tile1", dtype.S32, 2, 4)
	b.k.Tensors[fixed1].Allocation = &irpb.Allocation{ByteOffset: 16}
	b.loop(irpb.LoopKind_SEQUENTIAL, 0, 3, 1, func(i int) {
		b.emit(&irpb.Instruction{Op: "iota", Dst: dts(b.full(m)), Exprs: []*irpb.Affine{aff(0, lv(i, 100), tax(1, 1))}})
	})
	b.dma(b.tile(o, []int64{1, 4}), b.tile(fixed0, []int64{1, 4}))
	b.dma(b.tile(o, []int64{1, 4}, aff(1)), b.tile(fixed1, []int64{1, 4}))
	got := run(t, b.kernel())
	want := []int32{200, 201, 202, 203, 100, 101, 102, 103}
	for i, v := range got[0].I32() {
		if v != want[i] {
			t.Fatalf("element %d = %d, want %d (all %v)", i, v, want[i], got[0].I32())
		}
	}
}

// all_reduce over a 4-instance grid and atomic_rmw into a shared counter.
func TestCollectivesAndAtomics(t *testing.T) {
	b := newK("coll", 4)
	x := b.param("x", dtype.F32, 4, 8)
	o := b.output("sum", dtype.F32, 4, 8)
	cnt := b.output("count", dtype.F32, 1, 8)
	xs := b.sbuf("xs", dtype.F32, 1, 8)
	b.alloc(xs)
	b.dma(b.full(xs), b.tile(x, []int64{1, 8}, aff(0, pid(0, 1))))
	rs := b.sbuf("rs", dtype.F32, 1, 8)
	b.alloc(rs)
	b.op("all_reduce", dts(b.full(rs)), dts(b.full(xs)), attrs{"op": S("add")})
	b.dma(b.tile(o, []int64{1, 8}, aff(0, pid(0, 1))), b.full(rs))
	// atomic max into an output nobody initialised: NaN stays NaN
	b.op("atomic_rmw", dts(b.full(cnt)), dts(b.full(xs)), attrs{"op": S("maximum")})
	k := b.kernel()
	r := rand.New(rand.NewPCG(43, 44))
	xv := randTensor(r, dtype.F32, -1, 1, 4, 8)
	got := run(t, k, xv)
	want := npRef(t, "s = ((a0[0] + a0[1]) + a0[2]) + a0[3]\nr0 = np.tile(s, (4, 1))", []*tensor.Tensor{xv}, dtype.F32)[0]
	same(t, "all_reduce", got[0], want, 0)
	// the counter started as NaN (unwritten output): maximum propagates NaN
	for _, v := range values(got[1]) {
		if !math.IsNaN(v) {
			t.Fatalf("atomic max over an unwritten output must stay NaN, got %v", v)
		}
	}
}

func TestAtomicAddAcrossInstances(t *testing.T) {
	b := newK("atomic", 8)
	acc := b.param("acc", dtype.F32, 1, 4)
	b.k.Tensors[acc].Mutable = true
	b.k.Outputs = append(b.k.Outputs, acc)
	one := b.sbuf("one", dtype.F32, 1, 4)
	b.alloc(one)
	b.emit(&irpb.Instruction{Op: "iota", Dst: dts(b.full(one)), Exprs: []*irpb.Affine{aff(1, pid(0, 1))}})
	b.op("atomic_rmw", dts(b.full(acc)), dts(b.full(one)), attrs{"op": S("add")})
	in := tensor.New(dtype.F32, []int64{1, 4})
	in.F32()[0] = 100
	got := run(t, b.kernel(), in)[0]
	for i, v := range got.F32() {
		want := float32(36) // 1+2+...+8
		if i == 0 {
			want += 100
		}
		if v != want {
			t.Fatalf("counter %d = %v, want %v", i, v, want)
		}
	}
	if in.F32()[0] != 100 {
		t.Fatal("the caller's parameter was modified")
	}
}

func TestRNGDeterministic(t *testing.T) {
	b := newK("rng", 2)
	x := b.param("x", dtype.F32, 64, 64)
	o := b.output("drop", dtype.F32, 64, 64)
	ou := b.output("uniform", dtype.F32, 64, 64)
	xs := loadAll(b, x)[0]
	seed := b.sbuf("seed", dtype.S32, 1, 1)
	b.alloc(seed)
	b.op("memset", dts(b.full(seed)), nil, attrs{"value": F(1234)})
	b.op("random_seed", nil, dts(b.full(seed)), nil)
	d := b.sbuf("d", dtype.F32, 64, 64)
	b.alloc(d)
	b.op("dropout", dts(b.full(d)), dts(b.full(xs)), attrs{"prob": F(0.25)})
	b.dma(b.full(o), b.full(d))
	u := b.sbuf("u", dtype.F32, 64, 64)
	b.alloc(u)
	b.op("rand", dts(b.full(u)), nil, attrs{"low": F(-2), "high": F(2)})
	b.dma(b.full(ou), b.full(u))
	k := b.kernel()
	xv := tensor.New(dtype.F32, []int64{64, 64})
	for i := range xv.F32() {
		xv.F32()[i] = 1
	}
	a := run(t, k, xv)
	c := run(t, k, xv)
	if !bytes.Equal(a[0].Data, c[0].Data) || !bytes.Equal(a[1].Data, c[1].Data) {
		t.Fatal("two runs with the same seed differ")
	}
	zeros := 0
	for _, v := range a[0].F32() {
		if v == 0 {
			zeros++
		} else if v != 1 {
			t.Fatalf("dropout kept value %v, want 1", v)
		}
	}
	if frac := float64(zeros) / 4096; frac < 0.2 || frac > 0.3 {
		t.Fatalf("dropout zeroed %.3f of the elements, want about 0.25", frac)
	}
	var sum float64
	for _, v := range a[1].F32() {
		if v < -2 || v >= 2 {
			t.Fatalf("uniform value %v outside [-2, 2)", v)
		}
		sum += float64(v)
	}
	if math.Abs(sum/4096) > 0.1 {
		t.Fatalf("uniform mean %v, want about 0", sum/4096)
	}
}

func TestDevicePrint(t *testing.T) {
	b := newK("print", 2)
	s := b.sbuf("s", dtype.S32, 2, 3)
	b.alloc(s)
	b.emit(&irpb.Instruction{Op: "iota", Dst: dts(b.full(s)), Exprs: []*irpb.Affine{aff(0, tax(0, 10), tax(1, 1), pid(0, 100))}})
	b.op("print", nil, dts(b.full(s)), attrs{"prefix": S("tile:")})
	var out bytes.Buffer
	if _, err := Run(b.kernel(), nil, Options{Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	want := "tile: [[0 1 2] \n [10 11 12]]\ntile: [[100 101 102] \n [110 111 112]]\n"
	if out.String() != want {
		t.Fatalf("device_print wrote %q, want %q", out.String(), want)
	}
}

func TestInvalidKernels(t *testing.T) {
	cases := map[string]func(b *kb){
		"unknown instruction": func(b *kb) {
			s := b.sbuf("s", dtype.F32, 4, 4)
			b.op("frobnicate", dts(b.full(s)), nil, nil)
		},
		"writes the immutable tensor": func(b *kb) {
			x := b.param("x", dtype.F32, 4, 4)
			s := b.sbuf("s", dtype.F32, 4, 4)
			b.dma(b.full(x), b.full(s))
		},
		"unknown ALU operator": func(b *kb) {
			s := b.sbuf("s", dtype.F32, 4, 4)
			b.op("tensor_tensor", dts(b.full(s)), dts(b.full(s), b.full(s)), attrs{"op": S("nope")})
		},
		"does not broadcast": func(b *kb) {
			s := b.sbuf("s", dtype.F32, 4, 4)
			u := b.sbuf("u", dtype.F32, 4, 3)
			b.op("tensor_tensor", dts(b.full(s)), dts(b.full(s), b.full(u)), attrs{"op": S("add")})
		},
		"used outside its loop": func(b *kb) {
			s := b.sbuf("s", dtype.F32, 4, 4)
			b.k.NumVars = 1
			b.op("memset", dts(b.tile(s, []int64{4, 4}, aff(0, lv(0, 1)))), nil, attrs{"value": F(0)})
		},
		"need a result": func(b *kb) {
			a := b.sbuf("a", dtype.F32, 8, 4)
			m := b.sbuf("m", dtype.F32, 8, 5)
			p := b.psum("p", dtype.F32, 4, 4)
			b.op("matmul", dts(b.full(p)), dts(b.full(a), b.full(m)), nil)
		},
	}
	for want, build := range cases {
		b := newK("bad")
		build(b)
		_, err := Run(b.kernel(), nil, Options{})
		if !IsInvalidKernel(err) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "test_kernel.py:") {
			t.Errorf("%s: got %v", want, err)
		}
	}
}

// tfloat32 tensors (F32 with tf32 set) hold values rounded to 10 mantissa
// bits, round to nearest even.
func TestTF32Rounding(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	b := newK("tf32")
	x := b.param("x", dtype.F32, 8, 256)
	xs := loadAll(b, x)[0]
	tf := b.sbuf("tf", dtype.F32, 8, 256)
	b.k.Tensors[tf].Tf32 = true
	b.alloc(tf)
	b.op("tensor_scalar", dts(b.full(tf)), dts(b.full(xs)), attrs{"op0": S("multiply"), "scalar0": F(1)})
	o, st := storeTo(b, "o", dtype.F32, 8, 256)
	b.op("tensor_copy", dts(b.full(o)), dts(b.full(tf)), nil)
	st()
	xv := randTensor(r, dtype.F32, -1000, 1000, 8, 256)
	got := run(t, b.kernel(), xv)[0]
	want := npRef(t, `
u = a0.view(np.uint32).astype(np.uint64)
u = (u + 0xFFF + ((u >> 13) & 1)) & ~np.uint64(0x1FFF)
r0 = (u & 0xFFFFFFFF).astype(np.uint32).view(np.float32)`, []*tensor.Tensor{xv}, dtype.F32)[0]
	same(t, "tf32", got, want, 0)
}

// nc_transpose of a tile with two free axes flattens them.
func TestTransposeFlattensFreeAxes(t *testing.T) {
	r := rand.New(rand.NewPCG(55, 56))
	b := newK("tr3")
	x := b.param("x", dtype.BF16, 16, 4, 8)
	xs := loadAll(b, x)[0]
	o, st := storeTo(b, "o", dtype.BF16, 32, 16)
	b.op("transpose", dts(b.full(o)), dts(b.full(xs)), attrs{"engine": S("vector")})
	st()
	xv := randTensor(r, dtype.BF16, -1, 1, 16, 4, 8)
	got := run(t, b.kernel(), xv)[0]
	want := npRef(t, "r0 = a0.reshape(16, 32).T", []*tensor.Tensor{xv}, dtype.BF16)[0]
	same(t, "transpose 3-D", got, want, 0)
}

// A (P,1) operand meets a (P,F1,F2) tile partition-aligned.
func TestPartitionAlignedBroadcast(t *testing.T) {
	r := rand.New(rand.NewPCG(57, 58))
	b := newK("bcast3")
	x := b.param("x", dtype.F32, 8, 3, 5)
	c := b.param("c", dtype.F32, 8, 1)
	s := loadAll(b, x, c)
	o, st := storeTo(b, "o", dtype.F32, 8, 3, 5)
	b.op("tensor_tensor", dts(b.full(o)), dts(b.full(s[0]), b.full(s[1])), attrs{"op": S("subtract")})
	o2, st2 := storeTo(b, "o2", dtype.F32, 8, 3, 5)
	b.op("activation", dts(b.full(o2)), dts(b.full(s[0]), b.full(s[1])), attrs{"func": S("exp"), "has_bias": B(true)})
	st()
	st2()
	xv := randTensor(r, dtype.F32, -1, 1, 8, 3, 5)
	cv := randTensor(r, dtype.F32, -1, 1, 8, 1)
	got := run(t, b.kernel(), xv, cv)
	want := npRef(t, "r0 = a0 - a1[:, :, None]\nr1 = np.exp((a0 + a1[:, :, None]).astype(np.float64)).astype(np.float32)", []*tensor.Tensor{xv, cv}, dtype.F32, dtype.F32)
	same(t, "tensor_tensor (P,1) vs (P,3,5)", got[0], want[0], 0)
	same(t, "activation bias (P,1) vs (P,3,5)", got[1], want[1], 0)
}
