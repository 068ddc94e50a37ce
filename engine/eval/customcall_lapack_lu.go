package eval

import (
	"math"

	"gonum.org/v1/gonum/lapack/gonum"

	"goldtrace/engine/hlo"
)

func init() {
	for _, p := range []string{"s", "d", "c", "z"} {
		RegisterCustomCall("lapack_"+p+"getrf_ffi", lapackGetrf)
	}
}

// lapackGetrf is ?getrf: LU with partial pivoting. Results: the factors
// (L below the unit diagonal, U on and above it), the 1-based pivots
// ipiv[min(m,n)] (row i was swapped with row ipiv[i]) and info (0, or the
// 1-based index of the first exactly-zero pivot; the factorization still
// completes).
func lapackGetrf(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	x, batch, m, n, err := lapackMatrix(args, 0, "getrf a")
	if err != nil {
		return Value{}, err
	}
	k := min(m, n)
	shapes, err := lapackResultShapes(in, batch*m*n, batch*k, batch)
	if err != nil {
		return Value{}, err
	}
	ipiv := make([]int32, batch*k)
	info := make([]int32, batch)
	var lu Value
	if x.Type.IsComplex() {
		a := complexCopy(x)
		for b := 0; b < batch; b++ {
			info[b] = zgetf2(m, n, a[b*m*n:(b+1)*m*n], ipiv[b*k:(b+1)*k])
		}
		lu = ArrayValue(fromC128s(shapes[0].Elem, shapes[0].Dims, a))
	} else {
		a := realCopy(x)
		piv := make([]int, k)
		for b := 0; b < batch && k > 0; b++ {
			mat := a[b*m*n : (b+1)*m*n]
			gonum.Implementation{}.Dgetrf(m, n, mat, n, piv)
			for i, p := range piv {
				ipiv[b*k+i] = int32(p + 1)
				if mat[i*n+i] == 0 && info[b] == 0 {
					info[b] = int32(i + 1)
				}
			}
		}
		lu = ArrayValue(fromF64s(shapes[0].Elem, shapes[0].Dims, a))
	}
	pt, err := int32Result(shapes[1], ipiv)
	if err != nil {
		return Value{}, err
	}
	it, err := int32Result(shapes[2], info)
	if err != nil {
		return Value{}, err
	}
	return TupleValue(lu, ArrayValue(pt), ArrayValue(it)), nil
}

// zgetf2 is LAPACK's unblocked complex LU (gonum has no complex LAPACK) on a
// row-major m x n matrix. The pivot is the first entry of largest
// |re|+|im| (izamax's measure, not the modulus). ipiv gets 1-based rows.
func zgetf2(m, n int, a []complex128, ipiv []int32) (info int32) {
	for j := 0; j < min(m, n); j++ {
		p, best := j, cabs1(a[j*n+j])
		for i := j + 1; i < m; i++ {
			if v := cabs1(a[i*n+j]); v > best {
				p, best = i, v
			}
		}
		ipiv[j] = int32(p + 1)
		if a[p*n+j] != 0 {
			if p != j {
				for c := 0; c < n; c++ {
					a[j*n+c], a[p*n+c] = a[p*n+c], a[j*n+c]
				}
			}
			r := 1 / a[j*n+j]
			for i := j + 1; i < m; i++ {
				a[i*n+j] *= r
			}
		} else if info == 0 {
			info = int32(j + 1)
		}
		for i := j + 1; i < m; i++ {
			l := a[i*n+j]
			for c := j + 1; c < n; c++ {
				a[i*n+c] -= l * a[j*n+c]
			}
		}
	}
	return info
}

func cabs1(z complex128) float64 { return math.Abs(real(z)) + math.Abs(imag(z)) }
