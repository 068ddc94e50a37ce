package eval

import (
	"fmt"
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func benchConv(b *testing.B, n, h, w, c, kh, kw, o, stride, pad, dil, fg int) {
	oh := (h+2*pad-((kh-1)*dil+1))/stride + 1
	ow := (w+2*pad-((kw-1)*dil+1))/stride + 1
	src := fmt.Sprintf(`HloModule m
ENTRY e {
  x = f32[%d,%d,%d,%d] parameter(0)
  k = f32[%d,%d,%d,%d] parameter(1)
  ROOT y = f32[%d,%d,%d,%d] convolution(x, k), window={size=%dx%d stride=%dx%d pad=%d_%dx%d_%d rhs_dilate=%dx%d}, dim_labels=b01f_01io->b01f, feature_group_count=%d
}`, n, h, w, c, kh, kw, c/fg, o, n, oh, ow, o, kh, kw, stride, stride, pad, pad, pad, pad, dil, dil, fg)
	m, err := hlo.ParseText([]byte(src), "conv.hlo")
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	x := tensor.New(dtype.F32, []int64{int64(n), int64(h), int64(w), int64(c)})
	k := tensor.New(dtype.F32, []int64{int64(kh), int64(kw), int64(c / fg), int64(o)})
	for _, t := range []*tensor.Tensor{x, k} {
		for i := range t.F32() {
			t.F32()[i] = float32(rng.NormFloat64())
		}
	}
	args := []Value{ArrayValue(x), ArrayValue(k)}
	for _, off := range []bool{false, true} {
		b.Run(fmt.Sprintf("ynnOff=%v", off), func(b *testing.B) {
			convYnnOff = off
			defer func() { convYnnOff = false }()
			c0 := procCPU()
			for i := 0; i < b.N; i++ {
				if _, err := Evaluate(m, args, Options{Parallelism: 1}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((procCPU()-c0)*1e3/float64(b.N), "cpu-ms/op")
		})
	}
}

func BenchmarkConvYnnS2(b *testing.B)   { benchConv(b, 8, 112, 112, 64, 3, 3, 128, 2, 1, 1, 1) }
func BenchmarkConvYnnDil2(b *testing.B) { benchConv(b, 8, 56, 56, 64, 3, 3, 64, 1, 2, 2, 1) }
func BenchmarkConvYnnStem(b *testing.B) { benchConv(b, 8, 224, 224, 3, 7, 7, 64, 2, 3, 1, 1) }
func BenchmarkConvYnn1x1(b *testing.B)  { benchConv(b, 8, 56, 56, 256, 1, 1, 64, 1, 0, 1, 1) }
func BenchmarkConvYnnC256(b *testing.B) { benchConv(b, 8, 14, 14, 256, 3, 3, 256, 1, 1, 1, 1) }
func BenchmarkConvYnnDW(b *testing.B)   { benchConv(b, 8, 56, 56, 128, 3, 3, 128, 1, 1, 1, 128) }
func BenchmarkConvYnnTk4(b *testing.B)  { benchConv(b, 8, 28, 28, 65, 3, 3, 17, 1, 1, 1, 1) }

func BenchmarkConvYnnLanes2(b *testing.B) { benchConv(b, 4, 28, 28, 192, 3, 3, 96, 1, 1, 1, 1) }
func BenchmarkConvYnnLanes4(b *testing.B) { benchConv(b, 8, 8, 8, 256, 1, 1, 1000, 1, 0, 1, 1) }
