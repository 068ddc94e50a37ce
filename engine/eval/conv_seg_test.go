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

// convSegCase is a 2-D NHWC/HWIO convolution with padding on each side and
// window dilation per dim.
type convSegCase struct {
	n, h, w, c, kh, kw, o, sh, sw int
	plh, phh, plw, phw, dh, dw    int
	seg                           bool // convYnnSegmented takes it (on the AVX2 kernels)
}

func (c convSegCase) outHW() (int, int) {
	return (c.h+c.plh+c.phh-((c.kh-1)*c.dh+1))/c.sh + 1, (c.w+c.plw+c.phw-((c.kw-1)*c.dw+1))/c.sw + 1
}

func (c convSegCase) module() *hlo.Module {
	oh, ow := c.outHW()
	src := fmt.Sprintf(`HloModule m
ENTRY e {
  x = f32[%d,%d,%d,%d] parameter(0)
  k = f32[%d,%d,%d,%d] parameter(1)
  ROOT y = f32[%d,%d,%d,%d] convolution(x, k), window={size=%dx%d stride=%dx%d pad=%d_%dx%d_%d rhs_dilate=%dx%d}, dim_labels=b01f_01io->b01f
}`, c.n, c.h, c.w, c.c, c.kh, c.kw, c.c, c.o, c.n, oh, ow, c.o, c.kh, c.kw, c.sh, c.sw, c.plh, c.phh, c.plw, c.phw, c.dh, c.dw)
	m, err := hlo.ParseText([]byte(src), "conv.hlo")
	if err != nil {
		panic(err)
	}
	return m
}

// convSegValues fills t with normal values, some zeros of either sign,
// tiny values (products that underflow to zeros of either sign), and, when
// specials, infinities and NaNs of several payloads (a padding zero times
// an infinite weight is NaN: the padding must be read, as im2col's is).
func convSegValues(r *rand.Rand, t *tensor.Tensor, specials bool) {
	for i := range t.F32() {
		v := float32(r.NormFloat64())
		switch r.Intn(60) {
		case 0:
			v = float32(math.Copysign(0, float64(r.Intn(2)*2-1)))
		case 1:
			v = float32(r.NormFloat64() * 1e-23)
		case 2:
			if specials {
				v = float32(math.Inf(r.Intn(2)*2 - 1))
			}
		case 3:
			if specials {
				v = math.Float32frombits(0x7fc00000 | uint32(r.Intn(1<<22)) | uint32(r.Intn(2))<<31)
			}
		}
		t.F32()[i] = v
	}
}

// The segmented convolution (no im2col, convYnnSegmented) gives
// convolveYnnF32's bits: strides, asymmetric and large padding, dilated
// rows, output widths not a multiple of the tile's 6 rows, feature counts
// not a multiple of its 16 columns, NaN and infinite operands, zeros of
// either sign; under the host's plans, both hosts' and a plan of several
// runs, serial and parallel; and through evalConvolution. The AVX-512 form
// runs under GOLDTRACE_GEMM_KERNEL=avx512 on hosts whose GEMM prefers AVX2.
func TestConvSegMatchesYnn(t *testing.T) {
	if ynnISA == 0 {
		t.Skip("no assembly FMA kernel in this build or on this CPU")
	}
	kern := convSegKernel() // the segmented kernel of the GEMM's tiles, if any
	rng := rand.New(rand.NewSource(9))
	cases := []convSegCase{
		{2, 30, 30, 3, 7, 7, 64, 2, 2, 2, 3, 2, 3, 1, 1, true}, // the ResNet stem's geometry
		{1, 17, 23, 3, 7, 7, 40, 2, 2, 3, 3, 3, 3, 1, 1, true},
		{2, 12, 13, 5, 3, 3, 17, 1, 1, 1, 1, 1, 1, 1, 1, true},
		{1, 9, 11, 8, 3, 5, 33, 1, 2, 0, 0, 4, 2, 1, 1, true},
		{1, 10, 14, 4, 3, 3, 20, 2, 1, 2, 0, 0, 5, 2, 1, true}, // dilated rows
		{1, 8, 6, 7, 1, 1, 24, 1, 1, 0, 0, 0, 0, 1, 1, true},   // 1x1, one tile wide
		{1, 6, 40, 2, 2, 4, 70, 3, 3, 5, 6, 1, 0, 1, 1, true},  // rows wholly in padding
		{3, 5, 9, 16, 3, 3, 18, 1, 1, 1, 1, 1, 1, 1, 1, true},
		// Not this path: dilated columns, too narrow an output, two
		// blocks of features, depth past two kc slices.
		{1, 9, 12, 3, 3, 3, 32, 1, 1, 1, 1, 2, 2, 1, 2, false},
		{1, 9, 5, 3, 3, 3, 32, 1, 1, 1, 1, 1, 1, 1, 1, false},
		{1, 8, 8, 64, 3, 3, 64, 1, 1, 1, 1, 1, 1, 1, 1, false},
		{1, 8, 8, 600, 3, 3, 32, 1, 1, 1, 1, 1, 1, 1, 1, false},
	}
	for ci, c := range cases {
		m := c.module()
		in := m.Entry.Instruction("y")
		x := tensor.New(dtype.F32, []int64{int64(c.n), int64(c.h), int64(c.w), int64(c.c)})
		k := tensor.New(dtype.F32, []int64{int64(c.kh), int64(c.kw), int64(c.c), int64(c.o)})
		convSegValues(rng, x, true)
		convSegValues(rng, k, ci%2 == 0)
		p, err := planConv(in, x.Dims, k.Dims)
		if err != nil {
			t.Fatal(err)
		}
		oh, ow := c.outHW()
		plans := map[string][]convYnnTask{}
		if y := convYnnRoute(in, p, x.Dims, k.Dims, dtype.F32, dtype.F32, dtype.F32); y != nil {
			plans["host"] = y.tasks
		}
		for _, avx512 := range []bool{true, false} {
			plans[fmt.Sprint("avx512=", avx512)] = convYnnPlanF32(p.nb, oh, ow, p.w, p.cg, p.og, false, avx512)
		}
		if ow >= 2 && p.og >= 2 {
			// Runs that sum alike, split by output column and feature.
			plans["split"] = []convYnnTask{{0, ow / 2, 0, p.og / 2, 1, 0, true}, {ow / 2, ow, 0, p.og / 2, 1, 0, true},
				{0, ow, p.og / 2, p.og, 1, 0, true}}
		}
		took := false
		for name, tasks := range plans {
			y := &convYnn{tasks: tasks, ow: ow}
			for _, par := range []int{1, 2} {
				pw := *p
				want := convolveYnnF32(par, &pw, y, x.Dims, k.Dims, x.F32(), k.F32())
				ps := *p
				got, ok := convYnnSegmented(par, &ps, y, in, x.Dims, k.Dims, x.F32(), k.F32())
				if !ok {
					continue
				}
				took = true
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("case %d %+v plan %s par %d: element %d = %x, convolveYnnF32 %x", ci, c, name, par, i,
							math.Float32bits(got[i]), math.Float32bits(want[i]))
					}
				}
			}
		}
		// (An output narrower than the kernel's tile goes the im2col way.)
		if want := c.seg && kern != nil && ow >= kern.mr; took != want {
			t.Errorf("case %d %+v: segmented path taken %v, want %v", ci, c, took, want)
		}
		// Through the evaluator, with the path on and off.
		run := func() []byte {
			v, err := New(m, Options{}).Run([]Value{ArrayValue(x.Clone()), ArrayValue(k.Clone())})
			if err != nil {
				t.Fatal(err)
			}
			return v.T.Data
		}
		got := run()
		convSegDisabled = true
		want := run()
		convSegDisabled = false
		if string(got) != string(want) {
			t.Fatalf("case %d %+v: evaluated with the segmented path, differs from without", ci, c)
		}
	}
}
