package eval

import (
	"fmt"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"math"
	"math/rand"
	"testing"
)

// ynnScalar is YNNPACK's order for one plan written out element by element
// with the exact scalar fma32: per task, per K block, tk lane chains from
// zero (FMA, or rounded products added), lanes added pairwise, the block
// added to the element.
func ynnScalar(tasks []ynnTask, nb, m, n, k int, a []float32, la gemmLayout, b []float32, lb gemmLayout) []float32 {
	c := make([]float32, nb*m*n)
	for _, t := range tasks {
		km := k - k%t.tk
		for bi := 0; bi < nb; bi++ {
			for i := t.i0; i < t.i1; i++ {
				for j := t.j0; j < t.j1; j++ {
					var acc float32
					first := true
					block := func(lo, hi int) {
						var lane [4]float32
						for p := lo; p < hi; p++ {
							x, y := a[bi*la.bs+i*la.rs+p*la.cs], b[bi*lb.bs+p*lb.rs+j*lb.cs]
							r := (p - lo) % t.tk
							if t.fma {
								lane[r] = fma32(x, y, lane[r])
							} else {
								lane[r] += float32(x * y)
							}
						}
						s := lane[0]
						switch t.tk {
						case 2:
							s = lane[0] + lane[1]
						case 4:
							s = (lane[0] + lane[1]) + (lane[2] + lane[3])
						}
						if first {
							acc = s
						} else {
							acc = s + acc
						}
						first = false
					}
					for lo := 0; lo < km; lo += t.kstep {
						block(lo, min(km, lo+t.kstep))
					}
					if km < k {
						block(km, k)
					}
					c[(bi*m+i)*n+j] = acc
				}
			}
		}
	}
	return c
}

// TestYnnDotMatchesScalarOrder holds the fast paths (kc-blocked GEMM, lane
// GEMMs on gathered operands, multiply-add tasks) to the element-by-element
// order of the same plan, for both hosts' plans and both B layouts.
func TestYnnDotMatchesScalarOrder(t *testing.T) {
	if ynnISA == 0 {
		t.Skip("no assembly FMA kernel in this build or on this CPU")
	}
	kn := kernelFor[float32]()
	r := rand.New(rand.NewSource(7))
	shapes := [][4]int{{1, 16, 300, 16}, {1, 100, 1000, 37}, {1, 48, 1030, 32}, {1, 33, 4097, 17},
		{2, 70, 1500, 5}, {1, 200, 257, 300}, {3, 20, 600, 24}, {1, 64, 2050, 256}, {1, 51, 2048, 100}, {1, 9, 7, 9}}
	kinds := map[[2]bool]bool{}
	for _, s := range shapes {
		nb, m, k, n := s[0], s[1], s[2], s[3]
		a := make([]float32, nb*m*k)
		b := make([]float32, nb*k*n)
		for i := range a {
			a[i] = float32(r.NormFloat64())
		}
		for i := range b {
			b[i] = float32(r.NormFloat64())
		}
		la := rowMajor(m, k)
		for _, avx512 := range []bool{true, false} {
			for _, nk := range []bool{false, true} {
				lb := rowMajor(k, n)
				bv := b
				if nk { // B stored [N,K]
					lb = colMajor(k, n)
					bv = make([]float32, len(b))
					for bi := 0; bi < nb; bi++ {
						for p := 0; p < k; p++ {
							for j := 0; j < n; j++ {
								bv[bi*k*n+j*k+p] = b[bi*k*n+p*n+j]
							}
						}
					}
				}
				y := &ynnDot{tasks: ynnPlanF32(m, n, k, avx512, nk), kn: kn}
				for _, tk := range y.tasks {
					kinds[[2]bool{tk.tk > 1, tk.fma}] = true
				}
				want := ynnScalar(y.tasks, nb, m, n, k, a, la, bv, lb)
				for _, par := range []int{1, 2} {
					got := make([]float32, nb*m*n)
					y.run(par, nb, m, n, k, a, la, bv, lb, got)
					name := fmt.Sprintf("%dx%dx%dx%d/avx512=%v/nk=%v/par%d", nb, m, k, n, avx512, nk, par)
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s: element %d = %g, scalar order %g", name, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
	// The shapes must reach every kind of task.
	for _, kd := range [][2]bool{{false, true}, {true, true}, {false, false}} {
		if !kinds[kd] {
			t.Errorf("no task with lanes=%v fma=%v among the shapes", kd[0], kd[1])
		}
	}
}

// TestYnnPlanKnownShapes pins the plan for shapes whose kernel perf named
// (jaxlib 0.10.2): the kernel's tile_k and the K block.
func TestYnnPlanKnownShapes(t *testing.T) {
	cases := []struct {
		m, n, k   int
		avx512    bool
		tk, kstep int
	}{
		{2048, 2048, 2048, true, 1, 512},   // dot_fp32_5x64x1_1x16x1_avx512
		{2048, 2048, 2048, false, 1, 2048}, // dot_fp32_6x16x1_1x8x1_fma3
		{16, 16, 300, true, 4, 2048},       // dot_fp32_4x16x4_1x4x4_avx512
		{100, 37, 1000, true, 4, 1024},     // dot_fp32_5x16x4_1x4x4_avx512
		{100, 37, 1000, false, 2, 1024},    // dot_fp32_6x8x2_1x4x2_avx2_fma3
		{48, 32, 1030, true, 1, 1024},      // dot_fp32_5x32x1_1x16x1_avx512, B unpacked
	}
	for _, c := range cases {
		tasks := ynnPlanF32(c.m, c.n, c.k, c.avx512, false)
		for _, tk := range tasks {
			if tk.tk != c.tk || tk.kstep != c.kstep || !tk.fma {
				t.Fatalf("%dx%dx%d avx512=%v: task %+v, want tile_k %d, K block %d, FMA", c.m, c.k, c.n, c.avx512, tk, c.tk, c.kstep)
			}
		}
	}
}

// keptPackings is how many packings of a loop-invariant B an m×k by k×n f32
// product makes (B stored [N,K] when nk): one in today's order, one per run
// of columns with their own K blocks in YNNPACK's (ynnPrepacked), none for
// plans with lanes.
func keptPackings(t *testing.T, m, k, n int, nk bool) int {
	rc := int64(0)
	rdims := []int64{int64(k), int64(n)}
	if nk {
		rc, rdims = 1, []int64{int64(n), int64(k)}
	}
	p, err := planDot([]int64{int64(m), int64(k)}, rdims, &hlo.DotDimensionNumbers{LhsContracting: []int64{1}, RhsContracting: []int64{rc}})
	if err != nil {
		t.Fatal(err)
	}
	y := ynnRoute(p, dtype.F32, dtype.F32, dtype.F32, nil, nil)
	if y == nil {
		return 1
	}
	return len(y.columnGroups(k))
}

// TestGemmChainMatchesOneSlice holds the chain kernels (accumulators loaded
// from C, gemm_gen.go's "C" variants) run over kc slices to the plain
// kernels run with kc as deep as the whole contraction: both sum every
// element as one FMA chain from zero. Row counts reach every short kernel;
// ragged columns, the few-row, packed and in-place-A paths and a transposed
// B are all taken.
func TestGemmChainMatchesOneSlice(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	ran := 0
	for _, kn := range gemmKernelsF32() {
		if kn.chain == nil {
			continue
		}
		for _, s := range [][3]int{{1, 700, 5}, {5, 700, 33}, {12, 513, 64}, {13, 700, 31}, {40, 1000, 70}, {97, 600, 100}} {
			m, k, n := s[0], s[1], s[2]
			a := make([]float32, m*k)
			b := make([]float32, k*n)
			for i := range a {
				a[i] = float32(r.NormFloat64())
			}
			for i := range b {
				b[i] = float32(r.NormFloat64())
			}
			bt := make([]float32, len(b))
			for p := 0; p < k; p++ {
				for j := 0; j < n; j++ {
					bt[j*k+p] = b[p*n+j]
				}
			}
			for _, tr := range []bool{false, true} {
				bv, lb := b, rowMajor(k, n)
				if tr {
					bv, lb = bt, colMajor(k, n)
				}
				for _, par := range []int{1, 2} {
					want := make([]float32, m*n)
					kn.withKC(k).run(par, 1, m, n, k, a, rowMajor(m, k), bv, lb, want)
					got := make([]float32, m*n)
					kn.chain.run(par, 1, m, n, k, a, rowMajor(m, k), bv, lb, got)
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s %dx%dx%d transposedB=%v par%d: element %d = %g, one slice %g", kn.name, m, k, n, tr, par, i, got[i], want[i])
						}
					}
					ran++
				}
			}
		}
	}
	if ynnISA != 0 && ran == 0 {
		t.Fatal("no chain kernel ran")
	}
}

// TestXLADotLayout checks the operand layouts XLA's DotDecomposer and
// TransposeFolding leave a dot with, which pick YNNPACK's order (the bits
// are held to jax by tests/test_dot_ynn_order.py).
func TestXLADotLayout(t *testing.T) {
	param := func(dims ...int64) *hlo.Instruction {
		return &hlo.Instruction{Opcode: "parameter", Shape: hlo.Shape{Elem: dtype.F32, Dims: dims}}
	}
	transpose := func(x *hlo.Instruction, perm ...int64) *hlo.Instruction {
		dims := make([]int64, len(perm))
		for i, p := range perm {
			dims[i] = x.Shape.Dims[p]
		}
		return &hlo.Instruction{Opcode: "transpose", Shape: hlo.Shape{Elem: dtype.F32, Dims: dims}, Dimensions: perm, Operands: []*hlo.Instruction{x}}
	}
	dn := func(lb, lc, rb, rc []int64) *hlo.DotDimensionNumbers {
		return &hlo.DotDimensionNumbers{LhsBatch: lb, LhsContracting: lc, RhsBatch: rb, RhsContracting: rc}
	}
	cases := []struct {
		name         string
		lhs, rhs     *hlo.Instruction
		d            *hlo.DotDimensionNumbers
		lp, rp       []int
		lCopy, rCopy bool
	}{
		{"canonical", param(4, 8, 16), param(4, 16, 32), dn([]int64{0}, []int64{2}, []int64{0}, []int64{1}),
			[]int{0, 1, 2}, []int{0, 1, 2}, false, false},
		{"x @ w.T", param(8, 16), param(32, 16), dn(nil, []int64{1}, nil, []int64{1}),
			[]int{0, 1}, []int{1, 0}, false, false},
		{"folded transpose", param(8, 16), transpose(param(32, 16), 1, 0), dn(nil, []int64{1}, nil, []int64{0}),
			[]int{0, 1}, []int{1, 0}, false, false},
		// dot_product_attention's scores: [B,T,N,H] x [B,S,N,H], batch
		// dims 0 and 2, copied into [B,N,T,H] and [B,N,H,S].
		{"attention scores", param(2, 96, 4, 64), param(2, 80, 4, 64), dn([]int64{0, 2}, []int64{3}, []int64{0, 2}, []int64{3}),
			[]int{0, 1, 2, 3}, []int{0, 1, 2, 3}, true, true},
		// A canonical dot of a transpose that moves a batch dim: the
		// transpose is a copy, read as the dot's own dims say.
		{"unfoldable transpose", transpose(param(96, 4, 64), 1, 0, 2), transpose(param(80, 4, 64), 1, 2, 0),
			dn([]int64{0}, []int64{2}, []int64{0}, []int64{1}), []int{0, 1, 2}, []int{0, 1, 2}, true, true},
		// rhs [B, N1, N2, K]: two free dims, so DotDecomposer copies it to
		// [B, K, N1*N2]; the lhs needs no transpose.
		{"two free rhs dims", param(3, 40, 70), param(3, 8, 12, 70), dn([]int64{0}, []int64{2}, []int64{0}, []int64{3}),
			[]int{0, 1, 2}, []int{0, 1, 2, 3}, false, true},
	}
	for _, c := range cases {
		p, err := planDot(c.lhs.Shape.Dims, c.rhs.Shape.Dims, c.d)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		lp, rp, lc, rc := xlaDotLayout(p, c.lhs, c.rhs)
		if fmt.Sprint(lp, rp, lc, rc) != fmt.Sprint(c.lp, c.rp, c.lCopy, c.rCopy) {
			t.Errorf("%s: layout %v %v copies %v %v, want %v %v %v %v", c.name, lp, rp, lc, rc, c.lp, c.rp, c.lCopy, c.rCopy)
		}
	}
}
