package eval

import (
	"fmt"
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// TestDotFlushedForItsReaders: a dot's result is flushed (subnormals to
// zero) before the groups reading it run, which then skip scanning it; a
// group run as the dot's epilogue sees the GEMM's tiles before the flush,
// so it must scan them. Products here are subnormal and the group
// multiplies them by 2^100: a reader that trusted unflushed tiles would
// give 2^100 times a subnormal instead of zero.
func TestDotFlushedForItsReaders(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	for _, n := range []int64{64, 256} {
		src := fmt.Sprintf(`HloModule m
ENTRY e {
  a = f32[%[1]d,40] parameter(0)
  b = f32[40,%[1]d] parameter(1)
  d = f32[%[1]d,%[1]d] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  big = f32[] constant(1.2676506e+30)
  bb = f32[%[1]d,%[1]d] broadcast(big), dimensions={}
  u = f32[%[1]d,%[1]d] multiply(d, bb)
  ROOT w = f32[%[1]d,%[1]d] add(u, u)
}
`, n)
		m, err := hlo.ParseText([]byte(src), "t.hlo")
		if err != nil {
			t.Fatal(err)
		}
		tiny := func(dims ...int64) *tensor.Tensor {
			x := tensor.New(dtype.F32, dims)
			for i := range x.F32() {
				x.F32()[i] = float32(rng.NormFloat64() * 1e-20)
			}
			return x
		}
		a, b := tiny(n, 40), tiny(40, n)
		got, err := New(m, Options{}).Run([]Value{ArrayValue(a), ArrayValue(b)})
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range got.T.F32() {
			if v != 0 {
				t.Fatalf("n=%d element %d: %g, want 0 (the dot's subnormal results flushed)", n, i, v)
			}
		}
	}
}
