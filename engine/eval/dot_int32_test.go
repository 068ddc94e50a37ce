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

// s32-class integer dots (dotInt32: wrapping int32 products and sums) give
// the exact sums wrapped to the result type, as the int64 path does: batch
// dims, transposed operands (a packed B), odd sizes that leave vector and
// scalar column tails and several depth blocks, mixed operand widths,
// narrower results and extreme values (every element MinInt32 or MaxInt32).
func TestDotInt32MatchesInt64(t *testing.T) {
	for _, lanes := range i32TestLanes() {
		t.Run(fmt.Sprint("lanes", lanes), func(t *testing.T) {
			restore := setI32Lanes(lanes)
			defer restore()
			testDotInt32(t)
		})
	}
}

func testDotInt32(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	cases := []struct {
		lt, rt, ot   string
		b, m, k, n   int
		lhsT, rhsT   bool
		extreme      int // 0 random, 1 the type's minimum, 2 its maximum, 3 mixed extremes, 4-6 |v| <= 100, 200, 1000
		wantInt32Way bool
	}{
		{"s32", "s32", "s32", 1, 37, 300, 45, false, false, 0, true},
		{"s32", "s32", "s32", 1, 4, 17, 32, false, false, 1, true},
		{"s32", "s32", "s32", 1, 9, 600, 77, false, false, 2, true},
		{"s32", "s32", "s32", 3, 5, 259, 50, true, false, 3, true},
		{"s32", "s32", "s32", 2, 66, 70, 33, false, true, 0, true},
		{"s32", "s32", "s32", 2, 7, 513, 16, true, true, 3, true},
		{"u32", "u32", "u32", 1, 13, 100, 97, false, false, 3, true},
		{"u32", "s32", "s32", 2, 3, 40, 8, false, false, 0, true},
		{"s32", "s8", "s32", 1, 10, 70000, 3, false, false, 3, true},
		{"s32", "s32", "s16", 1, 6, 50, 40, false, false, 0, true},
		{"s32", "u16", "u8", 2, 5, 5000, 19, false, true, 3, true},
		{"s32", "u16", "u8", 2, 5, 33, 19, false, true, 3, false},
		{"s32", "s32", "s32", 1, 1, 1, 1, false, false, 1, true},
		{"s32", "s32", "s32", 1, 130, 257, 200, false, false, 0, true},
		{"s32", "s32", "s64", 1, 5, 20, 7, false, false, 3, false},
		// small values: the f32 GEMM whole (dotInt32Exact), in slices
		// of the depth, and the int32 kernel again past 2^16 a product
		{"s32", "s32", "s32", 2, 37, 300, 70, false, true, 4, true},
		{"u32", "s32", "s32", 1, 40, 1000, 65, true, false, 4, true},
		{"s32", "s32", "s16", 1, 9, 3000, 50, false, false, 5, true},
		{"s32", "s32", "s32", 1, 9, 3000, 50, false, false, 6, true},
		{"s16", "s16", "s32", 1, 5, 20, 7, false, false, 3, false},
		{"s32", "s32", "s32", 2, 5, 0, 7, false, false, 0, false},
		{"s32", "s32", "s32", 2, 0, 9, 7, false, false, 0, false},
	}
	for _, c := range cases {
		ldims, lc := fmt.Sprintf("%d,%d,%d", c.b, c.m, c.k), 2
		if c.lhsT {
			ldims, lc = fmt.Sprintf("%d,%d,%d", c.b, c.k, c.m), 1
		}
		rdims, rc := fmt.Sprintf("%d,%d,%d", c.b, c.k, c.n), 1
		if c.rhsT {
			rdims, rc = fmt.Sprintf("%d,%d,%d", c.b, c.n, c.k), 2
		}
		src := fmt.Sprintf("HloModule d\nENTRY e {\n  a = %s[%s] parameter(0)\n  b = %s[%s] parameter(1)\n"+
			"  ROOT d = %s[%d,%d,%d] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={%d}, rhs_batch_dims={0}, rhs_contracting_dims={%d}\n}\n",
			c.lt, ldims, c.rt, rdims, c.ot, c.b, c.m, c.n, lc, rc)
		m, err := hlo.ParseText([]byte(src), "d.hlo")
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		lt, rt, ot := m.Entry.Params[0].Shape.Elem, m.Entry.Params[1].Shape.Elem, m.Entry.Root.Shape.Elem
		val := func(typ dtype.Type) int64 {
			bits := typ.Bits()
			lo, hi := int64(0), int64(1)<<bits-1
			if typ.IsSigned() {
				lo, hi = -(int64(1) << (bits - 1)), int64(1)<<(bits-1)-1
			}
			switch c.extreme {
			case 4, 5, 6:
				r := int64([]int{100, 200, 1000}[c.extreme-4])
				lo, hi = max(lo, -r), min(hi, r)
			case 1:
				return lo
			case 2:
				return hi
			case 3:
				switch rng.Intn(3) {
				case 0:
					return lo
				case 1:
					return hi
				}
			}
			return lo + rng.Int63n(hi-lo+1)
		}
		fill := func(typ dtype.Type, dims []int64, trans bool, rows, cols int) (*tensor.Tensor, []int64) {
			tt := tensor.New(typ, dims)
			size := typ.Bits() / 8
			v := make([]int64, c.b*rows*cols) // [b, rows, cols]
			for i := 0; i < len(v); i++ {
				x := val(typ)
				putBits(tt.Data[i*size:], size, uint64(x))
				if trans { // stored [b, cols, rows]
					bb, cc, rr := i/(rows*cols), i/rows%cols, i%rows
					v[bb*rows*cols+rr*cols+cc] = x
				} else {
					v[i] = x
				}
			}
			return tt, v
		}
		a, av := fill(lt, m.Entry.Params[0].Shape.Dims, c.lhsT, c.m, c.k)
		bt, bv := fill(rt, m.Entry.Params[1].Shape.Dims, c.rhsT, c.k, c.n)
		p, err := planDot(a.Dims, bt.Dims, m.Entry.Root.DotDims)
		if err != nil {
			t.Fatal(err)
		}
		if got := dotInt32(nil, 2, p, a, bt, m.Entry.Root.Shape) != nil; got != c.wantInt32Way {
			t.Fatalf("%s: dotInt32 taken %v, want %v", src, got, c.wantInt32Way)
		}
		if exact := dotInt32Exact(nil, 2, p, a, bt, m.Entry.Root.Shape) != nil; c.wantInt32Way && exact != (c.extreme == 4 || c.extreme == 5) {
			t.Fatalf("%s: dotInt32Exact taken %v", src, exact)
		}
		got, err := New(m, Options{}).Run([]Value{ArrayValue(a), ArrayValue(bt)})
		if err != nil {
			t.Fatal(err)
		}
		want := naiveGemm(c.b, c.m, c.n, c.k, av, bv)
		size := ot.Bits() / 8
		mask := uint64(math.MaxUint64)
		if size < 8 {
			mask = 1<<(8*size) - 1
		}
		for i, w := range want {
			var g uint64
			for j := size - 1; j >= 0; j-- {
				g = g<<8 | uint64(got.T.Data[i*size+j])
			}
			if g != uint64(w)&mask {
				t.Fatalf("%s: element %d = %#x, want %#x", src, i, g, uint64(w)&mask)
			}
		}
	}
}
