package sim

import (
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
		acc := b.sbuf("acc", dtype.F32, 128, 64)
		if variant == "carried" {
			b.op("memset", dts(b.full(acc)), nil, attrs{"value": F(0)})
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
			case "carried", "escapes":
				b.dma(b.full(tt), b.tile(x, []int64{128, 64}, aff(0, lv(i, 128))))
			}
			if variant == "carried" {
				b.op("tensor_tensor", dts(b.full(acc)), dts(b.full(acc), b.full(tt)), attrs{"op": S("add")})
			}
			if variant != "readfirst" {
				b.dma(b.tile(y, []int64{128, 64}, aff(0, lv(i, 128))), b.full(tt))
			}
		})
		if variant == "escapes" || variant == "carried" {
			src := tt
			if variant == "carried" {
				src = acc
			}
			b.dma(b.tile(y, []int64{128, 64}), b.full(src))
		}
		return b.kernel()
	}
	for variant, want := range map[string]bool{"local": true, "readfirst": false, "partial": false, "carried": false, "escapes": false} {
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
