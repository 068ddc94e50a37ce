package eval

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// Convolutions of a dilated input (transposed convolutions, input gradients
// of strided ones), run one GEMM per class of output positions over the
// window elements that can reach an input value, give the whole im2col
// GEMM's bits: f32 and f64, 3x3 and 4x4 windows, asymmetric padding,
// dilation 2 and 3, a stride, window reversal, contractions longer than one
// kc slice, non-finite inputs; a non-finite kernel takes the whole GEMM.
func TestConvDilatedMatchesWholeIm2col(t *testing.T) {
	rng := rand.New(rand.NewSource(21))
	type tc struct {
		n, h, w, c, kh, kw, o      int
		stride, padLo, padHi, ldil int
		rev                        bool
		runs                       bool // convolveDilated applies
	}
	cases := []tc{
		{2, 14, 14, 16, 3, 3, 24, 1, 2, 1, 2, false, true},
		{2, 14, 13, 64, 4, 4, 32, 1, 2, 2, 2, false, true},
		{1, 9, 11, 200, 3, 3, 8, 1, 2, 1, 2, true, true},
		{2, 10, 10, 8, 5, 5, 8, 1, 3, 3, 3, false, true},
		{2, 12, 12, 8, 3, 3, 16, 2, 1, 1, 2, false, true}, // stride 2 over dilation 2
		{1, 8, 8, 300, 1, 1, 5, 2, 0, 0, 2, false, false}, // every element live: not worth it
	}
	before := convDilatedRuns.Load()
	want := int64(0)
	for _, typ := range []dtype.Type{dtype.F32, dtype.F64} {
		for ci, c := range cases {
			for _, nonFinite := range []string{"", "input", "kernel"} {
				outDim := func(in, k int) int { return ((in-1)*c.ldil+1+c.padLo+c.padHi-k)/c.stride + 1 }
				win := fmt.Sprintf("size=%dx%d stride=%dx%d pad=%d_%dx%d_%d lhs_dilate=%dx%d",
					c.kh, c.kw, c.stride, c.stride, c.padLo, c.padHi, c.padLo, c.padHi, c.ldil, c.ldil)
				if c.rev {
					win += " rhs_reversal=1x1"
				}
				src := fmt.Sprintf(`HloModule m
ENTRY e {
  x = %[1]s[%[2]d,%[3]d,%[4]d,%[5]d] parameter(0)
  k = %[1]s[%[6]d,%[7]d,%[5]d,%[8]d] parameter(1)
  ROOT y = %[1]s[%[2]d,%[9]d,%[10]d,%[8]d] convolution(x, k), window={%[11]s}, dim_labels=b01f_01io->b01f
}`, typ, c.n, c.h, c.w, c.c, c.kh, c.kw, c.o, outDim(c.h, c.kh), outDim(c.w, c.kw), win)
				m, err := hlo.ParseText([]byte(src), "conv.hlo")
				if err != nil {
					t.Fatalf("case %d: %v\n%s", ci, err, src)
				}
				x := tensor.New(typ, []int64{int64(c.n), int64(c.h), int64(c.w), int64(c.c)})
				k := tensor.New(typ, []int64{int64(c.kh), int64(c.kw), int64(c.c), int64(c.o)})
				for _, tt := range []*tensor.Tensor{x, k} {
					for i := int64(0); i < tt.NumElements(); i++ {
						v := rng.NormFloat64()
						if typ == dtype.F32 {
							tt.F32()[i] = float32(v)
						} else {
							tt.F64()[i] = v
						}
					}
				}
				switch nonFinite {
				case "input":
					if typ == dtype.F32 {
						x.F32()[7], x.F32()[300] = float32(math.Inf(1)), float32(math.NaN())
					} else {
						x.F64()[7] = math.Inf(-1)
					}
				case "kernel":
					if typ == dtype.F32 {
						k.F32()[5] = float32(math.Inf(1))
					} else {
						k.F64()[5] = math.NaN()
					}
				}
				if c.runs && nonFinite != "kernel" && !floatsOnBLAS {
					want++
				}
				args := []Value{ArrayValue(x), ArrayValue(k)}
				got, err := Evaluate(m, args, Options{})
				if err != nil {
					t.Fatalf("case %d: %v", ci, err)
				}
				convStreaming = false
				whole, err := Evaluate(m, args, Options{})
				convStreaming = true
				if err != nil {
					t.Fatal(err)
				}
				if string(got.T.Data) != string(whole.T.Data) {
					t.Fatalf("%v case %d (non-finite %q): class GEMMs and whole-matrix results differ", typ, ci, nonFinite)
				}
			}
		}
	}
	if n := convDilatedRuns.Load() - before; n != want {
		t.Errorf("convolveDilated ran %d times, want %d", n, want)
	}
}
