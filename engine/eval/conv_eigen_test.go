package eval

import (
	"fmt"
	"math/rand"
	"testing"

	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// eigenConvKC gives the slices fitted against jax.jit (1-D convolutions of
// 64+ output rows on an AVX-512 host).
func TestEigenConvKC(t *testing.T) {
	for depth, want := range map[int]int{40: 40, 256: 256, 300: 300, 320: 320, 328: 168, 384: 192, 500: 256,
		512: 256, 576: 288, 640: 320, 648: 216, 1280: 320, 1400: 280, 4608: 312} {
		if got := eigenConvKC(depth); got != want {
			t.Errorf("eigenConvKC(%d) = %d, want %d", depth, got, want)
		}
	}
}

// An f32 1-D convolution deeper than one slice gives the same bits whether
// its im2col product runs whole (convolve), in row blocks
// (convolveBlocked) or in contraction slices (convolveSliced), and differs
// from the kernel's own 256-deep slices.
func TestEigenConvOrderPaths(t *testing.T) {
	if floatsOnBLAS {
		t.Skip("f32 products run on gonum in this build")
	}
	rng := rand.New(rand.NewSource(5))
	for _, c := range []struct{ n, l, ci, co, w int }{{2, 300, 128, 24, 3}, {1, 40, 72, 8, 9}, {2, 64, 512, 8, 9}} {
		src := fmt.Sprintf(`HloModule m
ENTRY e {
  x = f32[%[1]d,%[2]d,%[3]d] parameter(0)
  k = f32[%[5]d,%[3]d,%[4]d] parameter(1)
  ROOT y = f32[%[1]d,%[2]d,%[4]d] convolution(x, k), window={size=%[5]d pad=%[6]d_%[6]d}, dim_labels=b0f_0io->b0f
}`, c.n, c.l, c.ci, c.co, c.w, c.w/2)
		m, err := hlo.ParseText([]byte(src), "conv.hlo")
		if err != nil {
			t.Fatal(err)
		}
		x := tensor.New(m.Entry.Params[0].Shape.Elem, m.Entry.Params[0].Shape.Dims)
		k := tensor.New(m.Entry.Params[1].Shape.Elem, m.Entry.Params[1].Shape.Dims)
		for _, tt := range []*tensor.Tensor{x, k} {
			for i := range tt.F32() {
				tt.F32()[i] = float32(rng.NormFloat64())
			}
		}
		run := func() string {
			v, err := Evaluate(m, []Value{ArrayValue(x), ArrayValue(k)}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			return string(v.T.Data)
		}
		blocked := run()
		convStreaming = false
		whole := run()
		convStreaming = true
		if blocked != whole {
			t.Errorf("%+v: blocked and whole-matrix results differ", c)
		}
		eigenConvOrder = false
		own := run()
		eigenConvOrder = true
		if own == blocked {
			t.Errorf("%+v: eigenConvKC's slices changed nothing", c)
		}
	}
}
