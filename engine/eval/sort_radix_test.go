package eval

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// The radix path sorts exactly as the merge sort does: jnp.sort's and
// jnp.argsort's comparators (canonicalized NaN and -0, TOTALORDER),
// ascending and descending, f32, f64 and s32 keys with many ties, along
// either dimension, with an index operand carried along.
func TestRadixSortMatchesMergeSort(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	canon := func(ty, v string) string {
		return fmt.Sprintf(`  ne.%[2]s = pred[] compare(%[2]s, %[2]s), direction=NE
  eq.%[2]s = pred[] compare(%[2]s, zero), direction=EQ
  z.%[2]s = %[1]s[] select(eq.%[2]s, zero, %[2]s)
  c.%[2]s = %[1]s[] select(ne.%[2]s, nan, z.%[2]s)
`, ty, v)
	}
	for _, ty := range []string{"f32", "f64", "s32"} {
		for _, dir := range []string{"LT", "GT"} {
			for _, dim := range []int{0, 1} {
				t.Run(fmt.Sprintf("%s/%s/dim%d", ty, dir, dim), func(t *testing.T) {
					dims := []int64{3, 1500}
					if dim == 0 {
						dims = []int64{1500, 3}
					}
					shape := fmt.Sprintf("[%d,%d]", dims[0], dims[1])
					var cmp string
					if ty == "s32" {
						cmp = fmt.Sprintf("c {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n  i = s32[] parameter(2)\n  j = s32[] parameter(3)\n  ROOT r = pred[] compare(a, b), direction=%s\n}\n", dir)
					} else {
						cmp = fmt.Sprintf("c {\n  a = %[1]s[] parameter(0)\n  b = %[1]s[] parameter(1)\n  i = s32[] parameter(2)\n  j = s32[] parameter(3)\n  zero = %[1]s[] constant(0)\n  nan = %[1]s[] constant(nan)\n", ty) +
							canon(ty, "a") + canon(ty, "b") +
							fmt.Sprintf("  ROOT r = pred[] compare(c.a, c.b), direction=%s, type=TOTALORDER\n}\n", dir)
					}
					src := "HloModule m\n" + cmp + fmt.Sprintf(
						"ENTRY e {\n  x = %[1]s%[2]s parameter(0)\n  i = s32%[2]s iota(), iota_dimension=%[3]d\n"+
							"  ROOT s = (%[1]s%[2]s, s32%[2]s) sort(x, i), dimensions={%[3]d}, is_stable=true, to_apply=c\n}\n", ty, shape, dim)
					typ := map[string]dtype.Type{"f32": dtype.F32, "f64": dtype.F64, "s32": dtype.S32}[ty]
					x := tensor.New(typ, dims)
					n := int(tensor.NumElements(dims))
					for k := 0; k < n; k++ {
						v := float64(r.Intn(50) - 25) // many ties
						switch r.Intn(20) {
						case 0:
							v = math.NaN()
						case 1:
							v = math.Copysign(0, -1)
						case 2:
							v = math.Inf(r.Intn(2)*2 - 1)
						case 3:
							v = r.NormFloat64() * 1e30
						}
						switch typ {
						case dtype.F32:
							x.F32()[k] = float32(v)
							if r.Intn(40) == 0 {
								x.F32()[k] = math.Float32frombits(0xffc00001) // a negative NaN with a payload
							}
						case dtype.F64:
							x.F64()[k] = v
						case dtype.S32:
							x.I32()[k] = int32(r.Intn(2000) - 1000)
							if r.Intn(50) == 0 {
								x.I32()[k] = math.MinInt32 + int32(r.Intn(3))
							}
						}
					}
					radixSortDisabled = false
					got, err := runText(t, src, x.Clone())
					if err != nil {
						t.Fatal(err)
					}
					radixSortDisabled = true
					defer func() { radixSortDisabled = false }()
					want, err := runText(t, src, x.Clone())
					if err != nil {
						t.Fatal(err)
					}
					gi, wi := got.Tuple[1].T.I32(), want.Tuple[1].T.I32()
					for k := range gi {
						if gi[k] != wi[k] {
							t.Fatalf("position %d: radix takes element %d, merge sort %d", k, gi[k], wi[k])
						}
					}
				})
			}
		}
	}
}
