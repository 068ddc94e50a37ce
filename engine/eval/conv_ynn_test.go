package eval

import (
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// TestConvYnnPlanKnownShapes pins the plans of shapes from the fit against
// jax.jit (tests/test_conv_ynn_order.py checks the bits): the define-time
// kernel's tile_k and packing, the per-task kernels (SSE2 multiply-add for
// small depthwise groups), K blocks of input features.
func TestConvYnnPlanKnownShapes(t *testing.T) {
	cases := []struct {
		nb, oh, ow, win, cg, og int
		grouped, avx512, pack   bool
		tasks                   []convYnnTask
	}{
		{2, 28, 28, 9, 64, 64, false, true, true, []convYnnTask{{0, 28, 0, 64, 1, 56, true}}},
		{2, 28, 28, 9, 64, 64, false, false, true, []convYnnTask{{0, 28, 0, 64, 1, 75, true}}},
		{2, 14, 14, 9, 256, 128, false, true, true, []convYnnTask{{0, 14, 0, 64, 1, 56, true}, {0, 14, 64, 128, 1, 56, true}}},
		{2, 14, 14, 9, 256, 128, false, false, true, []convYnnTask{{0, 14, 0, 64, 1, 227, true}, {0, 14, 64, 128, 1, 227, true}}},
		{2, 13, 13, 9, 65, 17, false, true, true, []convYnnTask{{0, 13, 0, 17, 2, 150, true}}},
		{1, 16, 15, 6, 17, 96, false, true, true, []convYnnTask{{0, 15, 0, 96, 2, 56, true}}},
		{1, 3, 2, 12, 64, 32, false, true, false, []convYnnTask{{0, 2, 0, 32, 1, 85, true}}},
		{1, 8, 8, 1, 256, 1000, false, true, true, []convYnnTask{{0, 8, 0, 256, 4, 256, true}, {0, 8, 256, 512, 4, 256, true}, {0, 8, 512, 768, 4, 256, true}, {0, 8, 768, 1000, 4, 256, true}}},
		{1, 8, 8, 1, 256, 1000, false, false, true, []convYnnTask{{0, 8, 0, 256, 2, 256, true}, {0, 8, 256, 512, 2, 256, true}, {0, 8, 512, 768, 2, 256, true}, {0, 8, 768, 1000, 2, 256, true}}},
		{8, 112, 112, 49, 3, 64, false, true, true, []convYnnTask{{0, 112, 0, 64, 1, 10, true}}},
		{64, 3, 3, 784, 2, 64, false, true, true, []convYnnTask{{0, 3, 0, 64, 1, 0, true}}},
		{2, 28, 28, 9, 1, 1, true, true, true, []convYnnTask{{0, 28, 0, 1, 1, 910, false}}},
		{1, 2, 5, 3, 1, 8, true, true, false, []convYnnTask{{0, 5, 0, 8, 1, 1365, true}}},
		{1, 14, 14, 9, 1, 16, true, true, true, []convYnnTask{{0, 14, 0, 16, 1, 227, true}}},
		{2, 14, 14, 9, 2, 2, true, true, true, []convYnnTask{{0, 14, 0, 2, 2, 910, true}}},
		{2, 28, 28, 9, 1, 4, true, false, true, []convYnnTask{{0, 28, 0, 4, 1, 910, false}}},
		{1, 4, 5, 9, 24, 17, false, true, false, []convYnnTask{{0, 5, 0, 17, 1, 214, true}}},
		// One output feature per group: B packed even with a tiny image.
		{1, 2, 5, 6, 17, 1, true, false, true, []convYnnTask{{0, 5, 0, 1, 2, 1364, true}}},
		{1, 2, 5, 6, 17, 2, true, false, false, []convYnnTask{{0, 5, 0, 2, 1, 2730, true}}},
	}
	for _, c := range cases {
		got := convYnnPlanF32(c.nb, c.oh, c.ow, c.win, c.cg, c.og, c.grouped, c.avx512)
		if !reflect.DeepEqual(got, c.tasks) {
			t.Errorf("%+v: plan %v, want %v", c, got, c.tasks)
		}
	}
}

// TestConvYnnKernelCosts checks the block costs against the constants
// jaxlib's get_dot_kernel multiplies by (read from its machine code).
func TestConvYnnKernelCosts(t *testing.T) {
	want := map[[6]int]float32{
		{1, 64, 1, 16, 1, int(ynnArchAVX512)}: 58.0015983581543,
		{8, 4, 4, 4, 4, int(ynnArchAVX512)}:   60.0015983581543,
		{8, 8, 1, 8, 1, int(ynnArchFMA3)}:     60.00080108642578,
		{8, 4, 2, 4, 2, int(ynnArchAVX2FMA3)}: 60.00080108642578,
		{1, 8, 1, 4, 1, int(ynnArchSSE2)}:     36.00040054321289,
		{8, 4, 1, 4, 1, int(ynnArchSSE2)}:     60.00040054321289,
	}
	for _, kn := range ynnConvKernels {
		key := [6]int{kn.bm, kn.bn, kn.bk, kn.tn, kn.tk, int(kn.arch)}
		if w, ok := want[key]; ok {
			if got := kn.cost(1, 1, 1); got != w {
				t.Errorf("%v: block cost %v, want %v", key, got, w)
			}
			delete(want, key)
		}
	}
	if len(want) > 0 {
		t.Errorf("kernels missing from the list: %v", want)
	}
}

// convYnnCase is a 2-D convolution for the tests.
type convYnnCase struct {
	n, h, w, c, kh, kw, o, sh, sw, ph, pw, dil, fg int
}

func (c convYnnCase) outHW() (int, int) {
	return (c.h+2*c.ph-((c.kh-1)*c.dil+1))/c.sh + 1, (c.w+2*c.pw-((c.kw-1)*c.dil+1))/c.sw + 1
}

func (c convYnnCase) module(typ string, extra string) *hlo.Module {
	oh, ow := c.outHW()
	src := fmt.Sprintf(`HloModule m
ENTRY e {
  x = %[1]s[%[2]d,%[3]d,%[4]d,%[5]d] parameter(0)
  k = %[1]s[%[6]d,%[7]d,%[8]d,%[9]d] parameter(1)
  ROOT y = %[1]s[%[2]d,%[10]d,%[11]d,%[9]d] convolution(x, k), window={size=%[6]dx%[7]d stride=%[12]dx%[13]d pad=%[14]d_%[14]dx%[15]d_%[15]d rhs_dilate=%[16]dx%[16]d%[18]s}, dim_labels=b01f_01io->b01f, feature_group_count=%[17]d
}`, typ, c.n, c.h, c.w, c.c, c.kh, c.kw, c.c/c.fg, c.o, oh, ow, c.sh, c.sw, c.ph, c.pw, c.dil, c.fg, extra)
	m, err := hlo.ParseText([]byte(src), "conv.hlo")
	if err != nil {
		panic(err)
	}
	return m
}

// convYnnScalar is convolution p in the order of plan y, element by
// element with the exact scalar fma32: per task, per block of input
// features, tk lane chains (FMA, or rounded products added) over the
// window and the block's features, lanes added pairwise, blocks added to
// the output in order, then the tail features one window position at a
// time.
func convYnnScalar(p *convPlan, y *convYnn, x, k []float32) []float32 {
	out := make([]float32, p.nb*p.p*p.o)
	av := make([]float32, p.w*p.cg)
	for q := 0; q < p.groups; q++ {
		n0, c0 := p.groupStart(q)
		for r := 0; r < p.nb*p.p; r++ {
			im2colRow(p, av, x, n0, c0, r, 0, len(av))
			ow := (r % p.p) % y.ow
			for j := 0; j < p.og; j++ {
				var t convYnnTask
				for _, tt := range y.tasks {
					if tt.i0 <= ow && ow < tt.i1 && tt.j0 <= j && j < tt.j1 {
						t = tt
					}
				}
				bcol := func(w, f int) float32 { return k[(w*p.cg+f)*p.o+q*p.og+j] }
				tk, main := t.tk, p.cg-p.cg%t.tk
				ks := t.kstep
				if ks <= 0 || ks > main {
					ks = main
				}
				combine := func(l [4]float32) float32 {
					if tk == 1 {
						return l[0]
					}
					if tk == 2 {
						return l[0] + l[1]
					}
					return (l[0] + l[1]) + (l[2] + l[3])
				}
				var c float32
				first := true
				add := func(s float32) {
					if first {
						c = s
					} else {
						c = s + c
					}
					first = false
				}
				for lo := 0; lo < main; lo += ks {
					var l [4]float32
					for w := 0; w < p.w; w++ {
						for f := lo; f < min(main, lo+ks); f++ {
							a, b := av[w*p.cg+f], bcol(w, f)
							if t.fma {
								l[(f-lo)%tk] = fma32(a, b, l[(f-lo)%tk])
							} else {
								l[(f-lo)%tk] = l[(f-lo)%tk] + float32(a*b)
							}
						}
					}
					add(combine(l))
				}
				for w := 0; main < p.cg && w < p.w; w++ {
					var l [4]float32
					for f := main; f < p.cg; f++ {
						l[f-main] = fma32(av[w*p.cg+f], bcol(w, f), 0)
					}
					add(combine(l))
				}
				out[r*p.o+q*p.og+j] = c
			}
		}
	}
	return out
}

// TestConvYnnMatchesScalarOrder holds the fast paths (the GEMM with kc
// slices as the blocks, chain-kernel blocks, lane GEMMs, multiply-add rows,
// tail lanes, the depthwise vector forms, plans whose tasks sum
// differently) to the element-by-element order of the same plan, for both
// hosts' plans, serial and parallel.
func TestConvYnnMatchesScalarOrder(t *testing.T) {
	if ynnISA == 0 {
		t.Skip("no assembly FMA kernel in this build or on this CPU")
	}
	rng := rand.New(rand.NewSource(5))
	cases := []convYnnCase{
		{2, 12, 12, 64, 3, 3, 64, 1, 1, 1, 1, 1, 1},  // two blocks of features (56 + 8)
		{1, 10, 9, 600, 3, 3, 32, 1, 1, 1, 1, 1, 1},  // blocks deeper than two kc slices (chain kernel)
		{2, 9, 9, 65, 3, 3, 17, 1, 1, 1, 1, 1, 1},    // tile_k lanes and a tail feature
		{1, 8, 9, 18, 2, 3, 96, 2, 1, 0, 1, 1, 1},    // tile_k 2 lanes
		{1, 5, 5, 64, 3, 4, 32, 1, 1, 0, 0, 1, 1},    // B unpacked
		{1, 6, 6, 256, 1, 1, 1000, 1, 1, 0, 0, 1, 1}, // several feature tasks
		{2, 20, 20, 3, 7, 7, 64, 2, 2, 3, 3, 1, 1},   // a stem
		{2, 9, 9, 64, 3, 3, 64, 1, 1, 2, 2, 2, 1},    // dilated window
		{2, 11, 11, 32, 3, 3, 32, 1, 1, 1, 1, 1, 32}, // depthwise: rounded products added
		{1, 4, 9, 16, 3, 1, 128, 2, 2, 1, 0, 1, 16},  // depthwise x8 on a tiny image: FMA, B unpacked
		{1, 7, 7, 8, 3, 3, 128, 1, 1, 1, 1, 1, 8},    // depthwise x16: FMA chains
		{2, 7, 7, 32, 3, 3, 32, 1, 1, 1, 1, 1, 16},   // groups of 2 features: tile_k 2
		{2, 7, 7, 64, 3, 3, 64, 1, 1, 1, 1, 1, 2},    // two groups
		{1, 7, 7, 24, 3, 3, 17, 1, 1, 1, 1, 1, 1},    // SSE2 multiply-add tasks (AVX2 host)
		{1, 33, 5, 40, 3, 3, 20, 1, 1, 1, 1, 1, 1},
	}
	kinds := map[string]bool{}
	for ci, c := range cases {
		m := c.module("f32", "")
		in := m.Entry.Instruction("y")
		x := tensor.New(dtype.F32, []int64{int64(c.n), int64(c.h), int64(c.w), int64(c.c)})
		k := tensor.New(dtype.F32, []int64{int64(c.kh), int64(c.kw), int64(c.c / c.fg), int64(c.o)})
		for _, tt := range []*tensor.Tensor{x, k} {
			for i := range tt.F32() {
				tt.F32()[i] = float32(rng.NormFloat64())
			}
		}
		p, err := planConv(in, x.Dims, k.Dims)
		if err != nil {
			t.Fatal(err)
		}
		oh, ow := c.outHW()
		xs, _ := permuteScratch(1, x.F32(), x.Dims, p.lhsPerm)
		ks, _ := permuteScratch(1, k.F32(), k.Dims, p.rhsPerm)
		kT, _ := permuteScratch(1, k.F32(), k.Dims, []int{3, 2, 0, 1})
		kTDims := []int64{k.Dims[3], k.Dims[2], k.Dims[0], k.Dims[1]}
		xT, _ := permuteScratch(1, x.F32(), x.Dims, []int{3, 1, 2, 0})
		xTDims := []int64{x.Dims[3], x.Dims[1], x.Dims[2], x.Dims[0]}
		plans := map[string][]convYnnTask{}
		for _, avx512 := range []bool{true, false} {
			plans[fmt.Sprint("avx512=", avx512)] = convYnnPlanF32(p.nb, oh, ow, p.w, p.cg, p.og, p.groups > 1, avx512)
		}
		// A plan whose tasks sum differently: by output column and feature.
		mixed := []convYnnTask{{0, ow / 2, 0, p.og / 2, 1, 5, true}, {ow / 2, ow, 0, p.og / 2, 4, 8, true},
			{0, ow, p.og / 2, p.og, 1, 3, false}}
		if p.og >= 2 && ow >= 2 {
			plans["mixed"] = mixed
		}
		for name, tasks := range plans {
			y := &convYnn{tasks: tasks, ow: ow}
			for _, tk := range tasks {
				kinds[fmt.Sprintf("tk%d fma=%v", tk.tk, tk.fma)] = true
			}
			if len(y.runs(p.og)) > 1 {
				kinds["mixed"] = true
			}
			want := convYnnScalar(p, y, xs, ks)
			for _, par := range []int{1, 2} {
				got := convolveYnnF32(par, p, y, x.Dims, k.Dims, x.F32(), k.F32())
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("case %d %+v %s par %d: element %d = %g, scalar order %g (tasks %v)", ci, c, name, par, i, got[i], want[i], tasks)
					}
				}
			}
			// The same kernel stored oi01 (output feature outermost, so B's
			// columns are strided in it): B is gathered from it in place.
			pT := *p
			pT.rhsPerm = []int{2, 3, 1, 0}
			got := convolveYnnF32(2, &pT, y, x.Dims, kTDims, x.F32(), kT)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("case %d %+v %s, kernel oi01: element %d = %g, scalar order %g", ci, c, name, i, got[i], want[i])
				}
			}
			// And the input stored f01b (batch innermost, as a weight
			// gradient's is), gathered image by image for the row blocks.
			pX := *p
			pX.lhsPerm = []int{3, 1, 2, 0}
			// Then with B in chunks of one K block and one image gathered
			// at a time (convYnnWholeByImages), for the tasks it takes.
			saved := [4]int{convYnnGatherMin, convYnnChunkMin, convYnnChunkB, convYnnImagesElems}
			for _, chunked := range []bool{false, true} {
				convYnnGatherMin = 0
				if chunked {
					convYnnChunkMin, convYnnChunkB, convYnnImagesElems = 0, 1, 1
				}
				got = convolveYnnF32(2, &pX, y, xTDims, k.Dims, xT, k.F32())
				convYnnGatherMin, convYnnChunkMin, convYnnChunkB, convYnnImagesElems = saved[0], saved[1], saved[2], saved[3]
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("case %d %+v %s, input f01b (chunked %v): element %d = %g, scalar order %g", ci, c, name, chunked, i, got[i], want[i])
					}
				}
			}
		}
	}
	for _, kd := range []string{"tk1 fma=true", "tk2 fma=true", "tk4 fma=true", "tk1 fma=false", "mixed"} {
		if !kinds[kd] {
			t.Errorf("no task of kind %s among the cases", kd)
		}
	}
}

// TestConvYnnRoute checks which convolutions take YNNPACK's order, as
// XLA:CPU hands them to YNNPACK (probed with jax.jit's compiled HLO).
func TestConvYnnRoute(t *testing.T) {
	if ynnISA == 0 {
		t.Skip("no assembly FMA kernel in this build or on this CPU")
	}
	cases := []struct {
		c     convYnnCase
		typ   string
		extra string
		want  bool
	}{
		{convYnnCase{2, 8, 8, 64, 3, 3, 64, 1, 1, 1, 1, 1, 1}, "f32", "", true},
		{convYnnCase{2, 8, 8, 16, 3, 3, 16, 1, 1, 1, 1, 1, 1}, "f32", "", false}, // max(features) <= 16
		{convYnnCase{2, 8, 8, 16, 3, 3, 17, 1, 1, 1, 1, 1, 1}, "f32", "", true},
		{convYnnCase{2, 8, 8, 3, 3, 3, 64, 1, 1, 1, 1, 1, 1}, "f32", "", true},
		{convYnnCase{2, 8, 8, 64, 3, 3, 64, 1, 1, 1, 1, 1, 64}, "f32", "", true}, // depthwise
		{convYnnCase{2, 8, 8, 64, 3, 3, 64, 1, 1, 1, 1, 1, 1}, "bf16", "", true},
		{convYnnCase{2, 8, 8, 64, 3, 3, 64, 1, 1, 1, 1, 1, 1}, "f64", "", false},
		{convYnnCase{2, 8, 8, 64, 3, 3, 64, 1, 1, 3, 3, 1, 1}, "f32", "", false}, // output larger than the input
		{convYnnCase{2, 4, 4, 64, 5, 5, 64, 1, 1, 2, 2, 1, 1}, "f32", "", false}, // kernel larger than the input
		{convYnnCase{2, 8, 8, 64, 3, 3, 64, 1, 1, 1, 1, 1, 1}, "f32", " rhs_reversal=1x1", false},
	}
	for _, c := range cases {
		m := c.c.module(c.typ, c.extra)
		in := m.Entry.Instruction("y")
		ld := []int64{int64(c.c.n), int64(c.c.h), int64(c.c.w), int64(c.c.c)}
		rd := []int64{int64(c.c.kh), int64(c.c.kw), int64(c.c.c / c.c.fg), int64(c.c.o)}
		p, err := planConv(in, ld, rd)
		if err != nil {
			t.Fatal(err)
		}
		ty := dtype.F32
		switch c.typ {
		case "bf16":
			ty = dtype.BF16
		case "f64":
			ty = dtype.F64
		}
		if got := convYnnRoute(in, p, ld, rd, ty, ty, ty) != nil; got != c.want {
			t.Errorf("%+v %s%s: routed %v, want %v", c.c, c.typ, c.extra, got, c.want)
		}
	}
}
