package eval

import (
	"fmt"
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// Integer dots deeper than f32 holds exactly (s8 x s8 past depth 1024,
// u8 x s8 past 513) run on the f32 GEMM in slices of the depth; the result
// is the exact integer sum, wrapped to the result type, checked against a
// plain int64 loop, extreme values (every product -128*-128) included.
func TestIntegerDotDepthSlicesExact(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	cases := []struct {
		lt, rt, ot    string
		b, m, k, n    int
		lhsT, extreme bool
	}{
		{"s8", "s8", "s32", 1, 7, 2500, 9, false, false},
		{"s8", "s8", "s32", 1, 5, 3000, 6, false, true},
		{"s8", "s8", "s32", 3, 4, 1300, 5, true, false},
		{"u8", "s8", "s32", 1, 6, 1100, 7, false, true},
		{"s8", "s8", "s8", 2, 3, 2049, 4, false, false},
		{"u8", "u8", "u32", 1, 4, 700, 3, true, true},
		// unbatched products (dotByteSlices widens one slice at a time)
		{"s8", "s8", "s32", 1, 37, 2100, 45, true, false},
		{"u8", "u8", "s32", 1, 19, 1500, 70, false, false},
		{"s8", "u8", "s32", 1, 8, 1301, 17, true, true},
		{"s8", "s8", "s8", 1, 5, 4097, 3, false, true},
	}
	for _, c := range cases {
		ldims, lcontract := fmt.Sprintf("%d,%d,%d", c.b, c.m, c.k), 2
		if c.lhsT {
			ldims, lcontract = fmt.Sprintf("%d,%d,%d", c.b, c.k, c.m), 1
		}
		src := fmt.Sprintf("HloModule d\nENTRY e {\n  a = %s[%s] parameter(0)\n  b = %s[%d,%d,%d] parameter(1)\n"+
			"  ROOT d = %s[%d,%d,%d] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={%d}, rhs_batch_dims={0}, rhs_contracting_dims={1}\n}\n",
			c.lt, ldims, c.rt, c.b, c.k, c.n, c.ot, c.b, c.m, c.n, lcontract)
		m, err := hlo.ParseText([]byte(src), "d.hlo")
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		lt, rt, ot := m.Entry.Params[0].Shape.Elem, m.Entry.Params[1].Shape.Elem, m.Entry.Root.Shape.Elem
		val := func(typ dtype.Type) int64 {
			if c.extreme {
				if typ.IsSigned() {
					return -128
				}
				return 255
			}
			if typ.IsSigned() {
				return int64(rng.Intn(256) - 128)
			}
			return int64(rng.Intn(256))
		}
		a := tensor.New(lt, m.Entry.Params[0].Shape.Dims)
		bt := tensor.New(rt, m.Entry.Params[1].Shape.Dims)
		av, bv := make([]int64, c.b*c.m*c.k), make([]int64, c.b*c.k*c.n)
		for i := range a.Data {
			v := val(lt)
			a.Data[i] = byte(v)
			if c.lhsT { // stored [b,k,m]; av is [b,m,k]
				bb, kk, mm := i/(c.k*c.m), i/c.m%c.k, i%c.m
				av[bb*c.m*c.k+mm*c.k+kk] = v
			} else {
				av[i] = v
			}
		}
		for i := range bt.Data {
			v := val(rt)
			bt.Data[i] = byte(v)
			bv[i] = v
		}
		got, err := New(m, Options{}).Run([]Value{ArrayValue(a), ArrayValue(bt)})
		if err != nil {
			t.Fatal(err)
		}
		want := naiveGemm(c.b, c.m, c.n, c.k, av, bv)
		for i, w := range want {
			var g int64
			switch ot {
			case dtype.S32:
				g, w = int64(got.T.I32()[i]), int64(int32(w))
			case dtype.U32:
				g, w = int64(got.T.U32()[i]), int64(uint32(w))
			case dtype.S8:
				g, w = int64(int8(got.T.Data[i])), int64(int8(w))
			}
			if g != w {
				t.Fatalf("%s: element %d = %d, want %d", src, i, g, w)
			}
		}
	}
}
