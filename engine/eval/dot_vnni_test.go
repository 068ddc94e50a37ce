package eval

import (
	"fmt"
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// TestGemmS8VNNIMatchesExact holds the VNNI kernel to the exact sums
// wrapped to 32 bits: ragged rows, columns and depths (depth not a
// multiple of 4, several K slices), transposed operands, batches, the
// extreme values (-128·-128 everywhere) and a depth whose sums wrap past
// 2^31.
func TestGemmS8VNNIMatchesExact(t *testing.T) {
	if !vnniS8 {
		t.Skip("no AVX512-VNNI kernel here")
	}
	r := rand.New(rand.NewSource(5))
	shapes := [][4]int{ // nb, m, n, k
		{1, 6, 64, 4}, {1, 7, 65, 5}, {1, 37, 100, 300}, {2, 13, 130, 257}, {1, 1, 1, 1},
		{3, 64, 64, 1024}, {1, 100, 3, 7}, {1, 2, 70, 140000},
	}
	for _, s := range shapes {
		nb, m, n, k := s[0], s[1], s[2], s[3]
		for _, extreme := range []bool{false, true} {
			a, b := make([]int8, nb*m*k), make([]int8, nb*k*n)
			for i := range a {
				a[i] = int8(r.Intn(256) - 128)
				if extreme {
					a[i] = -128
				}
			}
			for i := range b {
				b[i] = int8(r.Intn(256) - 128)
				if extreme {
					b[i] = -128
				}
			}
			want := make([]int32, nb*m*n)
			for bi := 0; bi < nb; bi++ {
				for i := 0; i < m; i++ {
					for j := 0; j < n; j++ {
						var s int64
						for p := 0; p < k; p++ {
							s += int64(a[bi*m*k+i*k+p]) * int64(b[bi*k*n+p*n+j])
						}
						want[bi*m*n+i*n+j] = int32(s)
					}
				}
			}
			at, bt := transposeBatch(a, nb, m, k), transposeBatch(b, nb, k, n)
			for _, lay := range []struct {
				name string
				a    []int8
				la   gemmLayout
				b    []int8
				lb   gemmLayout
			}{
				{"row-major", a, rowMajor(m, k), b, rowMajor(k, n)},
				{"A transposed", at, colMajor(m, k), b, rowMajor(k, n)},
				{"B transposed", a, rowMajor(m, k), bt, colMajor(k, n)},
			} {
				for _, par := range []int{1, 2} {
					got := make([]int32, nb*m*n)
					for i := range got {
						got[i] = int32(r.Uint32())
					}
					if !gemmS8VNNI(par, nb, m, n, k, lay.a, lay.la, lay.b, lay.lb, got) {
						t.Fatal("gemmS8VNNI refused on a VNNI host")
					}
					name := fmt.Sprintf("%v extreme=%v %s par %d", s, extreme, lay.name, par)
					for i := range want {
						if got[i] != want[i] {
							t.Fatalf("%s: element %d = %d, want %d", name, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestDotS8MatchesExactFloatPath: an s8 dot through evalDot (the VNNI
// kernel where the CPU has it) gives the int64 path's bits, s32 and u32.
func TestDotS8MatchesExactFloatPath(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	for _, out := range []dtype.Type{dtype.S32, dtype.U32} {
		a := tensor.New(dtype.S8, []int64{33, 70})
		b := tensor.New(dtype.S8, []int64{70, 45})
		for i := range a.Data {
			a.Data[i] = byte(r.Intn(256))
		}
		for i := range b.Data {
			b.Data[i] = byte(r.Intn(256))
		}
		want := tensor.New(out, []int64{33, 45})
		for i := 0; i < 33; i++ {
			for j := 0; j < 45; j++ {
				var s int64
				for p := 0; p < 70; p++ {
					s += int64(a.I8()[i*70+p]) * int64(b.I8()[p*45+j])
				}
				want.I32()[i*45+j] = int32(s)
			}
		}
		src := fmt.Sprintf("HloModule m\n\nENTRY main {\n  a = s8[33,70] parameter(0)\n  b = s8[70,45] parameter(1)\n"+
			"  ROOT d = %v[33,45] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n", out)
		v, err := runText(t, src, a, b)
		if err != nil {
			t.Fatal(err)
		}
		got := v.T
		if string(got.Data) != string(want.Data) || got.Type != out {
			t.Fatalf("%v: s8 dot differs from the exact sums", out)
		}
	}
}
