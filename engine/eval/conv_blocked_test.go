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

// Streaming im2col gives the bits of the whole-matrix GEMM on convolutions
// of every form the gradients produce (padding, strides, lhs and rhs
// dilation, feature and batch groups, window reversal), f32 and f64, with a
// non-finite input too.
func TestConvBlockedMatchesWholeIm2col(t *testing.T) {
	// The im2col paths' own bits: convolutions XLA:CPU gives YNNPACK take
	// its order instead (conv_ynn.go), held to it by conv_ynn_test.go.
	convYnnOff = true
	defer func() { convYnnOff = false }()
	rng := rand.New(rand.NewSource(12))
	type tc struct {
		n, h, w, c, kh, kw, o   int
		stride, pad, ldil, rdil int
		rev                     bool
		fg, bg                  int
	}
	cases := []tc{
		{8, 30, 30, 16, 3, 3, 32, 1, 1, 1, 1, false, 1, 1},
		{2, 17, 23, 8, 3, 3, 8, 2, 1, 1, 1, false, 1, 1},
		{2, 12, 12, 8, 3, 3, 16, 1, 2, 2, 1, false, 1, 1},
		{2, 15, 15, 8, 3, 3, 8, 1, 2, 1, 2, false, 1, 1},
		{2, 14, 14, 16, 3, 3, 16, 1, 1, 1, 1, true, 4, 1},
		{4, 20, 20, 6, 20, 20, 12, 1, 0, 1, 1, false, 1, 2},
		{3, 40, 40, 5, 5, 5, 7, 1, 2, 1, 1, false, 1, 1},
		// Long contractions (convolveSliced): a weight-gradient shape
		// whose rows run contiguously through the input and padding, a
		// dilated window, a dilated input, and feature groups.
		{8, 30, 30, 8, 28, 28, 16, 1, 1, 1, 1, false, 1, 1},
		{2, 40, 40, 8, 19, 19, 8, 1, 0, 1, 2, false, 1, 1},
		{2, 20, 20, 8, 30, 30, 8, 1, 2, 2, 1, true, 1, 1},
		{2, 30, 30, 16, 26, 26, 8, 1, 1, 1, 1, false, 2, 1},
	}
	sliced := convSlicedRuns.Load()
	defer func() {
		if !floatsOnBLAS && convSlicedRuns.Load()-sliced < 8 {
			t.Errorf("the long-contraction cases ran convolveSliced %d times, want 8", convSlicedRuns.Load()-sliced)
		}
	}()
	for _, typ := range []dtype.Type{dtype.F32, dtype.F64} {
		for ci, c := range cases {
			for _, nonFinite := range []bool{false, true} {
				ty := typ.String()
				outDim := func(in, k int) int {
					return ((in-1)*c.ldil+1+2*c.pad-((k-1)*c.rdil+1))/c.stride + 1
				}
				win := fmt.Sprintf("size=%dx%d stride=%dx%d pad=%d_%dx%d_%d lhs_dilate=%dx%d rhs_dilate=%dx%d",
					c.kh, c.kw, c.stride, c.stride, c.pad, c.pad, c.pad, c.pad, c.ldil, c.ldil, c.rdil, c.rdil)
				if c.rev {
					win += " rhs_reversal=1x1"
				}
				kin := c.c / c.fg
				outN := c.n / c.bg
				src := fmt.Sprintf(`HloModule m
ENTRY e {
  x = %[1]s[%[2]d,%[3]d,%[4]d,%[5]d] parameter(0)
  k = %[1]s[%[6]d,%[7]d,%[8]d,%[9]d] parameter(1)
  ROOT y = %[1]s[%[10]d,%[14]d,%[15]d,%[9]d] convolution(x, k), window={%[11]s}, dim_labels=b01f_01io->b01f, feature_group_count=%[12]d, batch_group_count=%[13]d
}`, ty, c.n, c.h, c.w, c.c, c.kh, c.kw, kin, c.o, outN, win, c.fg, c.bg, outDim(c.h, c.kh), outDim(c.w, c.kw))
				m, err := hlo.ParseText([]byte(src), "conv.hlo")
				if err != nil {
					t.Fatalf("case %d: %v", ci, err)
				}
				x := tensor.New(typ, []int64{int64(c.n), int64(c.h), int64(c.w), int64(c.c)})
				k := tensor.New(typ, []int64{int64(c.kh), int64(c.kw), int64(kin), int64(c.o)})
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
				if nonFinite {
					if typ == dtype.F32 {
						x.F32()[7] = float32(math.Inf(1))
					} else {
						x.F64()[7] = math.NaN()
					}
				}
				args := []Value{ArrayValue(x), ArrayValue(k)}
				got, err := Evaluate(m, args, Options{})
				if err != nil {
					t.Fatalf("case %d: %v", ci, err)
				}
				convStreaming = false
				want, err := Evaluate(m, args, Options{})
				convStreaming = true
				if err != nil {
					t.Fatal(err)
				}
				if string(got.T.Data) != string(want.T.Data) {
					t.Fatalf("%v case %d (non-finite %v): streamed and whole-matrix results differ", typ, ci, nonFinite)
				}
			}
		}
	}
}

// Depthwise convolutions (one input feature per group, channel multipliers
// 1 and 2, strides, padding, dilations, several im2col blocks and a ragged
// one): gathering every feature per window position and reading each
// group's column in place gives convolveBlocked's per-group bits, f32 and
// f64, with non-finite inputs too.
func TestConvDepthwiseMatchesPerGroup(t *testing.T) {
	// The im2col paths' own bits: convolutions XLA:CPU gives YNNPACK take
	// its order instead (conv_ynn.go), held to it by conv_ynn_test.go.
	convYnnOff = true
	defer func() { convYnnOff = false }()
	rng := rand.New(rand.NewSource(14))
	type tc struct{ n, h, w, c, k, mult, stride, pad, rdil int }
	cases := []tc{
		{2, 30, 30, 32, 3, 1, 1, 1, 1}, {2, 17, 23, 8, 3, 2, 2, 1, 1}, {1, 28, 28, 128, 3, 1, 1, 1, 1},
		{3, 15, 15, 12, 5, 1, 1, 2, 2}, {2, 20, 20, 6, 7, 2, 2, 3, 1},
		// Channel counts with 16- and 8-lane tails for the direct f32 form.
		{2, 9, 11, 29, 3, 1, 1, 1, 1}, {1, 7, 7, 5, 3, 1, 2, 0, 1},
	}
	for _, typ := range []dtype.Type{dtype.F32, dtype.F64} {
		for ci, c := range cases {
			for _, nonFinite := range []bool{false, true} {
				outDim := func(in int) int { return (in+2*c.pad-((c.k-1)*c.rdil+1))/c.stride + 1 }
				win := fmt.Sprintf("size=%dx%d stride=%dx%d pad=%d_%dx%d_%d rhs_dilate=%dx%d",
					c.k, c.k, c.stride, c.stride, c.pad, c.pad, c.pad, c.pad, c.rdil, c.rdil)
				o := c.c * c.mult
				src := fmt.Sprintf(`HloModule m
ENTRY e {
  x = %[1]s[%[2]d,%[3]d,%[4]d,%[5]d] parameter(0)
  k = %[1]s[%[6]d,%[6]d,1,%[7]d] parameter(1)
  ROOT y = %[1]s[%[2]d,%[8]d,%[9]d,%[7]d] convolution(x, k), window={%[10]s}, dim_labels=b01f_01io->b01f, feature_group_count=%[5]d
}`, typ, c.n, c.h, c.w, c.c, c.k, o, outDim(c.h), outDim(c.w), win)
				m, err := hlo.ParseText([]byte(src), "conv.hlo")
				if err != nil {
					t.Fatalf("case %d: %v\n%s", ci, err, src)
				}
				x := tensor.New(typ, []int64{int64(c.n), int64(c.h), int64(c.w), int64(c.c)})
				k := tensor.New(typ, []int64{int64(c.k), int64(c.k), 1, int64(o)})
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
				if nonFinite {
					if typ == dtype.F32 {
						x.F32()[7], x.F32()[100] = float32(math.Inf(1)), float32(math.NaN())
						// A kernel NaN with its own payload against the input's.
						k.F32()[3] = math.Float32frombits(0x7fc0beef)
					} else {
						x.F64()[7] = math.NaN()
					}
				}
				args := []Value{ArrayValue(x), ArrayValue(k)}
				got, err := Evaluate(m, args, Options{})
				if err != nil {
					t.Fatalf("case %d: %v", ci, err)
				}
				depthwiseDirect = false
				viaGEMM, err := Evaluate(m, args, Options{})
				depthwiseDirect = true
				if err != nil {
					t.Fatal(err)
				}
				depthwiseIm2col = false
				want, err := Evaluate(m, args, Options{})
				depthwiseIm2col = true
				if err != nil {
					t.Fatal(err)
				}
				if string(got.T.Data) != string(want.T.Data) || string(viaGEMM.T.Data) != string(want.T.Data) {
					t.Fatalf("%v case %d (non-finite %v): depthwise and per-group results differ", typ, ci, nonFinite)
				}
			}
		}
	}
}
