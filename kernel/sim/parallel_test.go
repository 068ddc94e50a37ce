package sim

import (
	"math"
	"math/rand/v2"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
	"goldtrace/kernel/ir/irpb"
)

// loopsOf lists the compiled loops of a kernel in program order.
func loopsOf(t *testing.T, k *irpb.Kernel) []*cloop {
	t.Helper()
	p, err := compile(k)
	if err != nil {
		t.Fatal(err)
	}
	return loopsOfProg(p.body)
}

func loopsOfProg(body []stmt) []*cloop {
	var out []*cloop
	var walk func(ss []stmt)
	walk = func(ss []stmt) {
		for _, s := range ss {
			if s.loop != nil {
				out = append(out, s.loop)
				walk(s.loop.body)
			}
		}
	}
	walk(body)
	return out
}

// A loop fans out only when every on-chip tensor its body writes is local
// to one iteration: first overwritten whole, never touched outside.
func TestParallelLoopLocals(t *testing.T) {
	build := func(variant string) *irpb.Kernel {
		b := newK("par_" + variant)
		x := b.param("x", dtype.F32, 512, 64)
		y := b.output("y", dtype.F32, 512, 64)
		tt := b.sbuf("t", dtype.F32, 128, 64)
		accT := b.sbuf("acc", dtype.F32, 128, 64)
		red := b.sbuf("red", dtype.F32, 128, 1)
		if variant == "carried" {
			b.op("memset", dts(b.full(accT)), nil, attrs{"value": F(0)})
		}
		b.loop(irpb.LoopKind_AFFINE, 0, 4, 1, func(i int) {
			switch variant {
			case "local":
				// t created by its DMA (no alloc), like a traced nl.load
				b.dma(b.full(tt), b.tile(x, []int64{128, 64}, aff(0, lv(i, 128))))
			case "readfirst":
				// t read before this iteration writes it: sees the previous iteration
				b.op("tensor_scalar", dts(b.tile(y, []int64{128, 64}, aff(0, lv(i, 128)))), dts(b.full(tt)), attrs{"op0": S("add"), "operand0": F(1)})
				b.dma(b.full(tt), b.tile(x, []int64{128, 64}, aff(0, lv(i, 128))))
			case "partial":
				// only half of t written by a full-tile op: the rest carries over
				b.dma(b.tile(tt, []int64{64, 64}), b.tile(x, []int64{64, 64}, aff(0, lv(i, 128))))
			case "rowreduce":
				// a (128,1) result indexed t[p, 0], as the tracer writes it
				b.dma(b.full(tt), b.tile(x, []int64{128, 64}, aff(0, lv(i, 128))))
				b.op("tensor_reduce", dts(acc(red, []int64{128, 1}, aff(0, tax(0, 1)), aff(0))), dts(b.full(tt)), attrs{"op": S("maximum"), "axes": Ints(1)})
				b.op("tensor_scalar", dts(b.full(tt)), dts(b.full(tt), b.full(red)), attrs{"op0": S("subtract"), "has_operand0_tile": B(true)})
			case "carried", "escapes":
				b.dma(b.full(tt), b.tile(x, []int64{128, 64}, aff(0, lv(i, 128))))
			}
			if variant == "carried" {
				b.op("tensor_tensor", dts(b.full(accT)), dts(b.full(accT), b.full(tt)), attrs{"op": S("add")})
			}
			if variant != "readfirst" {
				b.dma(b.tile(y, []int64{128, 64}, aff(0, lv(i, 128))), b.full(tt))
			}
		})
		if variant == "escapes" || variant == "carried" {
			src := tt
			if variant == "carried" {
				src = accT
			}
			b.dma(b.tile(y, []int64{128, 64}), b.full(src))
		}
		return b.kernel()
	}
	for variant, want := range map[string]bool{"local": true, "rowreduce": true, "readfirst": false, "partial": false, "carried": false, "escapes": false} {
		k := build(variant)
		if got := loopsOf(t, k)[0].parallel; got != want {
			t.Errorf("%s: parallel = %v, want %v", variant, got, want)
		}
		if variant == "readfirst" || variant == "partial" {
			continue // these read NaN sentinels by design
		}
		x := randTensor(rand.New(rand.NewPCG(9, 9)), dtype.F32, -1, 1, 512, 64)
		var first []byte
		for _, par := range []int{1, 2, 4} {
			outs, err := Run(k, []*tensor.Tensor{x}, Options{Parallel: par})
			if err != nil {
				t.Fatalf("%s: %v", variant, err)
			}
			if first == nil {
				first = outs[0].Data
			} else if string(first) != string(outs[0].Data) {
				t.Errorf("%s: Parallel=%d differs from Parallel=1", variant, par)
			}
		}
	}
}

// A matmul outside any fanned-out loop splits its GEMM over the run's
// goroutines: the bits must not depend on Parallel.
func TestMatmulGemmParallelSameBits(t *testing.T) {
	const K, M, N = 512, 128, 512
	b := newK("seq_matmul")
	lhsT := b.param("lhsT", dtype.BF16, K, M)
	rhs := b.param("rhs", dtype.BF16, K, N)
	res := b.output("res", dtype.F32, M, N)
	ps := b.psum("acc", dtype.F32, M, N)
	b.op("memset", dts(b.full(ps)), nil, attrs{"value": F(0)})
	b.loop(irpb.LoopKind_SEQUENTIAL, 0, K/128, 1, func(k int) {
		lt := b.sbuf("lt", dtype.BF16, 128, M)
		rt := b.sbuf("rt", dtype.BF16, 128, N)
		b.dma(b.full(lt), b.tile(lhsT, []int64{128, M}, aff(0, lv(k, 128))))
		b.dma(b.full(rt), b.tile(rhs, []int64{128, N}, aff(0, lv(k, 128))))
		b.op("matmul", dts(b.full(ps)), dts(b.full(lt), b.full(rt)), attrs{"accumulate": B(true)})
	})
	sb := b.sbuf("sb", dtype.F32, M, N)
	b.op("tensor_copy", dts(b.full(sb)), dts(b.full(ps)), nil)
	b.dma(b.full(res), b.full(sb))
	k := b.kernel()
	r := rand.New(rand.NewPCG(11, 12))
	a := randTensor(r, dtype.BF16, -1, 1, K, M)
	bm := randTensor(r, dtype.BF16, -1, 1, K, N)
	var first []byte
	for _, par := range []int{1, 2, 3} {
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
	want := npRef(t, "r0 = a0.astype(np.float32).T @ a1.astype(np.float32)", []*tensor.Tensor{a, bm}, dtype.F32)[0]
	got := &tensor.Tensor{Type: dtype.F32, Dims: []int64{M, N}, Data: first}
	same(t, "sequential matmul", got, want, 1e-5)
}

// An alloc followed by a loop that fills the tensor slice by slice skips
// its sentinel fill; a loop that leaves a slice unwritten keeps it (the
// slice reads NaN).
func TestAllocCoveredByLoop(t *testing.T) {
	for _, trips := range []int64{4, 3} {
		b := newK("fill")
		x := b.param("x", dtype.F32, 512, 64)
		y := b.output("y", dtype.F32, 128, 4, 64)
		tt := b.sbuf("t", dtype.F32, 128, 4, 64)
		b.alloc(tt)
		b.loop(irpb.LoopKind_AFFINE, 0, trips, 1, func(i int) {
			b.dma(acc(tt, []int64{128, 64}, aff(0, tax(0, 1)), aff(0, lv(i, 1)), aff(0, tax(1, 1))),
				b.tile(x, []int64{128, 64}, aff(0, lv(i, 128))))
		})
		b.dma(b.full(y), b.full(tt))
		k := b.kernel()
		p, err := compile(k)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.body[0].inst.allocCovered; got != (trips == 4) {
			t.Errorf("trips %d: allocCovered = %v", trips, got)
		}
		xt := randTensor(rand.New(rand.NewPCG(5, 5)), dtype.F32, -1, 1, 512, 64)
		out, err := Run(k, []*tensor.Tensor{xt}, Options{Parallel: 1})
		if err != nil {
			t.Fatal(err)
		}
		xv, yv := values(xt), values(out[0])
		for p := 0; p < 128; p++ {
			for i := 0; i < 4; i++ {
				for f := 0; f < 64; f++ {
					got := yv[(p*4+i)*64+f]
					if i >= int(trips) {
						if !math.IsNaN(got) {
							t.Fatalf("trips %d: unwritten slice reads %g, want NaN", trips, got)
						}
					} else if want := xv[(i*128+p)*64+f]; got != want {
						t.Fatalf("trips %d: y[%d,%d,%d] = %g, want %g", trips, p, i, f, got, want)
					}
				}
			}
		}
	}
}

// The tutorial's fully optimized matmul: the K-block loop accumulates into
// result_tiles and stays in order, the loads and the (bm, bn) tiles fan out
// (result_tiles[bm] is each iteration's own slice); exact against numpy on
// integer-valued operands and the same bits for any Parallel.
func TestMatmulTutorialFansOutDeterministic(t *testing.T) {
	const K, M, N = 512, 256, 1024
	k := matmulTutorialKernel(K, M, N, 2, 2, 2, dtype.BF16, dtype.F32)
	byVar := map[int32]bool{}
	for _, l := range loopsOf(t, k) {
		byVar[l.v] = l.parallel
	}
	// vars: 0 n2, 1 m2, 2 k2, 3/4 the load loops, 5 bm, 6 bn, 7 bk, 8 store loop
	if byVar[2] || !byVar[3] || !byVar[4] || !byVar[5] || !byVar[6] || byVar[7] || !byVar[8] {
		t.Fatalf("parallel loops by variable: %v", byVar)
	}
	r := rand.New(rand.NewPCG(13, 14))
	a := intValued(randTensor(r, dtype.BF16, -8, 8, K, M))
	bm := intValued(randTensor(r, dtype.BF16, -8, 8, K, N))
	got := run(t, k, a, bm)[0]
	want := npRef(t, "r0 = a0.astype(np.float32).T @ a1.astype(np.float32)", []*tensor.Tensor{a, bm}, dtype.F32)[0]
	same(t, "tutorial matmul", got, want, 0)
	a = randTensor(r, dtype.BF16, -1, 1, K, M)
	bm = randTensor(r, dtype.BF16, -1, 1, K, N)
	var first []byte
	for _, par := range []int{1, 2, 4} {
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

// Slices selected by the loop variable must not overlap: big[:, i+1] read
// by the iteration after the one that wrote big[:, i+1]... or a tile wider
// than the stride keeps the loop in order.
func TestPartitionedSlicesMustBeDisjoint(t *testing.T) {
	for _, variant := range []string{"disjoint", "shifted", "wide"} {
		b := newK("part_" + variant)
		x := b.param("x", dtype.F32, 512, 64)
		y := b.output("y", dtype.F32, 128, 5*64)
		big := b.sbuf("big", dtype.F32, 128, 5*64)
		b.op("memset", dts(b.full(big)), nil, attrs{"value": F(0)})
		b.loop(irpb.LoopKind_AFFINE, 0, 4, 1, func(i int) {
			w := int64(64)
			if variant == "wide" {
				w = 128 // overlaps the next iteration's slice
			}
			b.dma(acc(big, []int64{128, w}, aff(0, tax(0, 1)), aff(0, lv(i, 64), tax(1, 1))),
				b.tile(x, []int64{128, w}, aff(0, lv(i, 128))))
			if variant == "shifted" {
				b.op("tensor_scalar", dts(acc(big, []int64{128, 64}, aff(0, tax(0, 1)), aff(64, lv(i, 64), tax(1, 1)))),
					dts(acc(big, []int64{128, 64}, aff(0, tax(0, 1)), aff(0, lv(i, 64), tax(1, 1)))), attrs{"op0": S("add"), "operand0": F(1)})
			}
		})
		b.dma(b.full(y), b.full(big))
		if got := loopsOf(t, b.kernel())[0].parallel; got != (variant == "disjoint") {
			t.Errorf("%s: parallel = %v", variant, got)
		}
	}
}

// A fanned-out loop that fails reports the error of its first failing
// iteration, as a serial run does, whatever the schedule.
func TestParallelLoopErrorIsSerialOne(t *testing.T) {
	b := newK("oob_loop")
	x := b.param("x", dtype.F32, 3*128, 64)
	y := b.output("y", dtype.F32, 8*128, 64)
	b.loop(irpb.LoopKind_AFFINE, 0, 8, 1, func(i int) {
		tt := b.sbuf("t", dtype.F32, 128, 64)
		b.dma(b.full(tt), b.tile(x, []int64{128, 64}, aff(0, lv(i, 128)))) // iterations 3.. leave x
		b.dma(b.tile(y, []int64{128, 64}, aff(0, lv(i, 128))), b.full(tt))
	})
	k := b.kernel()
	if !loopsOf(t, k)[0].parallel {
		t.Fatal("loop should fan out")
	}
	xt := randTensor(rand.New(rand.NewPCG(1, 1)), dtype.F32, -1, 1, 3*128, 64)
	_, err := Run(k, []*tensor.Tensor{xt}, Options{Parallel: 1})
	if err == nil {
		t.Fatal("out-of-bounds load not reported")
	}
	for rep := 0; rep < 50; rep++ {
		_, perr := Run(k, []*tensor.Tensor{xt}, Options{Parallel: 2 + rep%3})
		if perr == nil || perr.Error() != err.Error() {
			t.Fatalf("parallel run: %v\nserial run: %v", perr, err)
		}
	}
}

// HBM writes of a fanned-out loop must be provably disjoint between
// iterations, and no iteration may read an HBM tensor the loop writes:
// otherwise the loop keeps program order (the last writer wins, as serially).
func TestParallelLoopHBMWritesDisjoint(t *testing.T) {
	build := func(variant string) *irpb.Kernel {
		b := newK("hbm_" + variant)
		x := b.param("x", dtype.F32, 1024, 64)
		y := b.output("y", dtype.F32, 1024, 64)
		tt := b.sbuf("t", dtype.F32, 128, 64)
		b.loop(irpb.LoopKind_AFFINE, 0, 4, 1, func(i int) {
			b.dma(b.full(tt), b.tile(x, []int64{128, 64}, aff(0, lv(i, 128))))
			switch variant {
			case "disjoint": // rows 128i .. 128i+127
				b.dma(b.tile(y, []int64{128, 64}, aff(0, lv(i, 128))), b.full(tt))
			case "overlap": // rows 64i .. 64i+127: neighbours share 64 rows
				b.dma(b.tile(y, []int64{128, 64}, aff(0, lv(i, 64))), b.full(tt))
			case "readback": // reads y rows another iteration writes
				b.dma(b.full(tt), b.tile(y, []int64{128, 64}, aff(64, lv(i, 128))))
				b.dma(b.tile(y, []int64{128, 64}, aff(0, lv(i, 128))), b.full(tt))
			}
		})
		return b.kernel()
	}
	for variant, want := range map[string]bool{"disjoint": true, "overlap": false, "readback": false} {
		if got := loopsOf(t, build(variant))[0].parallel; got != want {
			t.Errorf("%s: parallel = %v, want %v", variant, got, want)
		}
	}
}
