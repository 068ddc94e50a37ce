package eval

import (
	"fmt"
	"math"
	"math/cmplx"
	"sort"

	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// Complex SVD (lapack_{c,z}{gesdd,gesvd}_ffi) by one-sided Jacobi (Hestenes)
// in complex128, rounded once to the result type. Jacobi rather than
// bidiagonalization plus QR because it gets small singular values to high
// relative accuracy without a complex bidiagonal reduction; singular values
// then agree with LAPACK to rounding, but the vectors' phases cannot follow
// zgebrd's reflectors. What LAPACK does fix structurally is kept: zgebrd's
// reflectors never touch the first column (m >= n) or row (m < n) of the
// side that becomes V^H (U), so LAPACK returns VT[:, 0] (U[0, :]) real. Here
// that entry is made real and non-negative, where LAPACK's sign comes from
// the real bidiagonal SVD; vectors thus match LAPACK's up to a sign (a phase
// when that entry is zero). Null-space completions (full_matrices) are the
// Gram-Schmidt completion from the standard basis in index order; LAPACK's
// span the same subspace in another basis.

// complexSVDBatch fills lapackSVD's results for a complex operand. shapes
// are the result element shapes; U is m x ucols and VT vtrows x n when
// vectors are wanted.
func complexSVDBatch(x *tensor.Tensor, shapes []hlo.Shape, batch, m, n int, vectors bool, ucols, vtrows int) (Value, error) {
	for i := 2; i <= 3; i++ {
		if shapes[i].Elem != x.Type {
			return Value{}, fmt.Errorf("result element %d is %s, want element type %v like the operand", i, tensor.ShapeString(shapes[i].Elem, shapes[i].Dims), x.Type)
		}
	}
	k := min(m, n)
	a := toC128s(x)
	s, info := make([]float64, batch*k), make([]int32, batch)
	u := make([]complex128, tensor.NumElements(shapes[2].Dims))
	vt := make([]complex128, tensor.NumElements(shapes[3].Dims))
	for b := 0; b < batch && k > 0; b++ {
		var ub, vtb []complex128
		if vectors {
			ub, vtb = u[b*m*ucols:(b+1)*m*ucols], vt[b*vtrows*n:(b+1)*vtrows*n]
		}
		if !jacobiSVD(m, n, a[b*m*n:(b+1)*m*n], s[b*k:(b+1)*k], ub, ucols, vtb, vtrows) {
			info[b] = 1 // jax turns info != 0 into NaN results
		}
	}
	it, err := int32Result(shapes[4], info)
	if err != nil {
		return Value{}, err
	}
	return tupleOf(fromC128s(x.Type, x.Dims, a), fromF64s(shapes[1].Elem, shapes[1].Dims, s),
		fromC128s(shapes[2].Elem, shapes[2].Dims, u), fromC128s(shapes[3].Elem, shapes[3].Dims, vt), it), nil
}

// jacobiSVD computes the SVD of the row-major m x n matrix a into s
// (descending) and, when u is non-nil, u (m x ucols) and vt (vtrows x n). It
// works on B = A (m >= n) or B = A^H (m < n), so that B is p x q with p >= q:
// B = L diag(s) R^H with R square. It reports false for non-finite input or
// when the sweeps fail to converge.
func jacobiSVD(m, n int, a []complex128, s []float64, u []complex128, ucols int, vt []complex128, vtrows int) bool {
	trans := m < n
	p, q := m, n
	if trans {
		p, q = n, m
	}
	// w[j] is column j of B; rotations keep B R = W with R unitary.
	w := make([][]complex128, q)
	maxAbs := 0.0
	for j := range w {
		w[j] = make([]complex128, p)
		for i := range w[j] {
			if trans {
				w[j][i] = cmplx.Conj(a[j*n+i])
			} else {
				w[j][i] = a[i*n+j]
			}
			v := math.Max(math.Abs(real(w[j][i])), math.Abs(imag(w[j][i])))
			if !(v <= math.MaxFloat64) {
				return false
			}
			maxAbs = math.Max(maxAbs, v)
		}
	}
	// Power-of-two scaling to max |entry| in [0.5, 1) keeps the squared norms
	// from overflowing and is exact.
	_, exp := math.Frexp(maxAbs)
	if maxAbs > 0 {
		for _, col := range w {
			for i := range col {
				col[i] = complex(math.Ldexp(real(col[i]), -exp), math.Ldexp(imag(col[i]), -exp))
			}
		}
	}
	vectors := u != nil
	var r [][]complex128
	if vectors {
		r = make([][]complex128, q)
		for j := range r {
			r[j] = make([]complex128, q)
			r[j][j] = 1
		}
	}
	if !jacobiSweeps(w, r, math.Sqrt(float64(p))*0x1p-53) {
		return false
	}
	norms := make([]float64, q)
	for j, col := range w {
		norms[j] = math.Sqrt(sqNorm(col))
	}
	order := make([]int, q)
	for j := range order {
		order[j] = j
	}
	sort.SliceStable(order, func(x, y int) bool { return norms[order[x]] > norms[order[y]] })
	for j, o := range order {
		s[j] = math.Ldexp(norms[o], exp)
	}
	if !vectors {
		return true
	}
	// Left vectors of B: normalized columns of W, phase-fixed with R; zero
	// columns and the full_matrices extension are completed below.
	need := ucols
	if trans {
		need = vtrows
	}
	left := make([][]complex128, 0, need)
	right := make([][]complex128, q)
	var missing []int
	for j, o := range order {
		right[j] = r[o]
		ph := firstPhase(right[j])
		scaleVec(right[j], ph)
		if norms[o] == 0 {
			left = append(left, nil)
			missing = append(missing, j)
			continue
		}
		scaleVec(w[o], ph/complex(norms[o], 0))
		left = append(left, w[o])
	}
	for len(left) < need {
		missing = append(missing, len(left))
		left = append(left, nil)
	}
	completeBasis(left, missing, p)
	// A = B (or B^H): U = L, VT = R^H (or U = R, VT = L^H).
	uv, vv := left, right
	if trans {
		uv, vv = right, left
	}
	for i := 0; i < m; i++ {
		for j := 0; j < ucols; j++ {
			u[i*ucols+j] = uv[j][i]
		}
	}
	for j := 0; j < vtrows; j++ {
		for c := 0; c < n; c++ {
			vt[j*n+c] = cmplx.Conj(vv[j][c])
		}
	}
	return true
}

// jacobiSweeps orthogonalizes the columns of w by cyclic complex Jacobi
// rotations, applying each to r as well (when non-nil), until every pair
// satisfies |w_i^H w_j| <= tol ||w_i|| ||w_j||.
func jacobiSweeps(w, r [][]complex128, tol float64) bool {
	for sweep := 0; sweep < 100; sweep++ {
		rotated := false
		for i := 0; i < len(w); i++ {
			for j := i + 1; j < len(w); j++ {
				alpha, beta := sqNorm(w[i]), sqNorm(w[j])
				var gamma complex128
				for k := range w[i] {
					gamma += cmplx.Conj(w[i][k]) * w[j][k]
				}
				g := cmplx.Abs(gamma)
				if g == 0 || g <= tol*math.Sqrt(alpha)*math.Sqrt(beta) {
					continue
				}
				rotated = true
				// Rotating (w_i, w_j e^{-i arg gamma}) by the real Jacobi
				// rotation that zeroes the now real inner product |gamma|.
				zeta := (beta - alpha) / (2 * g)
				var t float64
				if math.Abs(zeta) > 1e150 {
					t = 0.5 / zeta
				} else {
					t = math.Copysign(1, zeta) / (math.Abs(zeta) + math.Sqrt(1+zeta*zeta))
				}
				c := 1 / math.Sqrt(1+t*t)
				sn := c * t
				ph := cmplx.Conj(gamma) / complex(g, 0)
				rotate(w[i], w[j], c, sn, ph)
				if r != nil {
					rotate(r[i], r[j], c, sn, ph)
				}
			}
		}
		if !rotated {
			return true
		}
	}
	return false
}

// rotate sets (x, y) to (c x - s y ph, s x + c y ph).
func rotate(x, y []complex128, c, s float64, ph complex128) {
	cc, sc := complex(c, 0), complex(s, 0)
	for k := range x {
		xv, yv := x[k], y[k]*ph
		x[k], y[k] = cc*xv-sc*yv, sc*xv+cc*yv
	}
}

func sqNorm(x []complex128) float64 {
	sum := 0.0
	for _, v := range x {
		sum += real(v)*real(v) + imag(v)*imag(v)
	}
	return sum
}

func scaleVec(x []complex128, f complex128) {
	for i := range x {
		x[i] *= f
	}
}

// firstPhase returns the unit factor that makes x's first nonzero entry real
// and positive.
func firstPhase(x []complex128) complex128 {
	for _, v := range x {
		if v != 0 {
			return cmplx.Conj(v) / complex(cmplx.Abs(v), 0)
		}
	}
	return 1
}

// completeBasis fills the nil slots of vecs (listed in missing) with unit
// p-vectors orthogonal to all others: standard basis vectors in index order,
// Gram-Schmidt-projected twice, skipping those with too small a remainder.
// Remainders only shrink as vectors are added, so a skipped candidate never
// qualifies later and one pass over the candidates suffices; the residual
// norms sum to at least p - len(filled), so a candidate always qualifies.
func completeBasis(vecs [][]complex128, missing []int, p int) {
	next := 0
	for _, slot := range missing {
		for ; next < p; next++ {
			x := make([]complex128, p)
			x[next] = 1
			for pass := 0; pass < 2; pass++ {
				for _, v := range vecs {
					if v == nil {
						continue
					}
					var d complex128
					for i := range v {
						d += cmplx.Conj(v[i]) * x[i]
					}
					for i := range v {
						x[i] -= d * v[i]
					}
				}
			}
			if nrm := math.Sqrt(sqNorm(x)); nrm*nrm > 1/(4*float64(p)) {
				scaleVec(x, complex(1/nrm, 0))
				vecs[slot] = x
				next++
				break
			}
		}
	}
}
