package eval

import (
	"sync"
	"sync/atomic"
)

// Blocked real (float64) Cholesky factorization and triangular solve. Real
// operands (f32, f64, and the half types) are handled in float64 and rounded
// once to the result type, as the complex128 code in linalg.go does for every
// type; these paths only reorder that float64 arithmetic into cache-sized
// blocks whose bulk runs on the packed GEMM kernels, on all cores. Complex
// operands keep the complex128 code.

// linalgBlock is the width of the diagonal blocks: the unblocked work grows
// with it, the GEMM's efficiency with it too.
const linalgBlock = 64

// gemmSubF64 computes c[i*ldc+j] -= sum_l a(i,l) b(l,j) for i < m, j < n,
// with a and b laid out as la and lb (their batch strides unused), on up to
// par goroutines. The product goes through row-major scratch, so c may be
// any row-strided block.
func gemmSubF64(par, m, n, k int, a []float64, la gemmLayout, b []float64, lb gemmLayout, c []float64, ldc int) {
	if m == 0 || n == 0 || k == 0 {
		return
	}
	tmp := make([]float64, m*n)
	gemmStrided(par, 1, m, n, k, a, la, b, lb, tmp)
	for i := 0; i < m; i++ {
		ci, ti := c[i*ldc:i*ldc+n], tmp[i*n:(i+1)*n]
		for j, v := range ti {
			ci[j] -= v
		}
	}
}

// parallelItems runs f(item) for item in [0,n) on up to par goroutines that
// pull items from a shared counter.
func parallelItems(par, n int, f func(item int)) {
	if par <= 1 || n <= 1 {
		for i := 0; i < n; i++ {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < min(par, n); g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := int(next.Add(1)) - 1; it < n; it = int(next.Add(1)) - 1 {
				f(it)
			}
		}()
	}
	wg.Wait()
}

// choleskyRealLower factors the n x n row-major matrix w (lower triangle
// read, lower triangle and diagonal written; entries above the diagonal of
// the diagonal blocks are scratch) as L L^T. It returns 0 or the 1-based
// order of the first non-positive leading minor; NaNs then propagate, as in
// cholesky.
func choleskyRealLower(par int, w []float64, n int) (info int32) {
	for k0 := 0; k0 < n; k0 += linalgBlock {
		k1 := min(k0+linalgBlock, n)
		nb := k1 - k0
		// Panel w[k0:n, k0:k1] -= L[k0:n, 0:k0] L[k0:k1, 0:k0]^T.
		if k0 > 0 {
			rows := n - k0
			gemmSubF64(par, rows, nb, k0, w[k0*n:], gemmLayout{0, n, 1}, w[k0*n:], gemmLayout{0, 1, n}, w[k0*n+k0:], n)
		}
		// The diagonal block, unblocked.
		for j := k0; j < k1; j++ {
			rj := w[j*n : j*n+n]
			d := rj[j]
			for l := k0; l < j; l++ {
				d -= rj[l] * rj[l]
			}
			if !(d > 0) && info == 0 {
				info = int32(j + 1)
			}
			dj := sqrtOrNaN(d)
			rj[j] = dj
			for i := j + 1; i < k1; i++ {
				ri := w[i*n : i*n+n]
				s := ri[j]
				for l := k0; l < j; l++ {
					s -= ri[l] * rj[l]
				}
				ri[j] = s / dj
			}
		}
		// Rows below: solve L_kk y = w[r, k0:k1]^T row by row.
		below := n - k1
		if below == 0 {
			continue
		}
		chunk := max(16, (below+4*par-1)/(4*par))
		parallelItems(par, (below+chunk-1)/chunk, func(c int) {
			for r := k1 + c*chunk; r < min(n, k1+(c+1)*chunk); r++ {
				rr := w[r*n+k0 : r*n+k1]
				for j := 0; j < nb; j++ {
					lj := w[(k0+j)*n+k0 : (k0+j)*n+k0+j]
					s := rr[j]
					for l, v := range lj {
						s -= rr[l] * v
					}
					rr[j] = s / w[(k0+j)*n+k0+j]
				}
			}
		})
	}
	return info
}

// triSolveLowerLeft solves T X = B in place for the m x m lower-triangular
// T given as tneg (the negated strict lower triangle, row-major; the upper
// part unread) and diag (T's diagonal, nil for a unit one), and X, B m x w
// row-major.
func triSolveLowerLeft(tneg, diag []float64, m int, x []float64, w int) {
	for i0 := 0; i0 < m; i0 += linalgBlock {
		i1 := min(i0+linalgBlock, m)
		xi := x[i0*w : i1*w]
		if i0 > 0 {
			// X[i0:i1] += (-T[i0:i1, 0:i0]) X[0:i0].
			gemmStrided(1, 1, i1-i0, w, i0, tneg[i0*m:], gemmLayout{0, m, 1}, x, rowMajor(i0, w), xi)
		}
		for i := i0; i < i1; i++ {
			ri := x[i*w : (i+1)*w]
			for j := i0; j < i; j++ {
				t, rj := tneg[i*m+j], x[j*w:(j+1)*w]
				for c, v := range rj {
					ri[c] += t * v
				}
			}
			if diag != nil {
				d := diag[i]
				for c := range ri {
					ri[c] /= d
				}
			}
		}
	}
}

// triangularSolveReal is triangularSolve for real operands, in float64.
func triangularSolveReal(par int, a, b []float64, batch, m, rows, cols int, s triSolveSpec) []float64 {
	out := make([]float64, len(b))
	trans := s.trans == "TRANSPOSE" || s.trans == "ADJOINT"
	// The left-side problem T X' = B': T = op(A) on the left, op(A)^T on
	// the right (X op(A) = B  <=>  op(A)^T X^T = B^T).
	tt := trans == s.left // T is A's triangle transposed
	lowerEff := s.lower != tt
	// Element (i, j) of T is a[base + i*si + j*sj]; an upper T is flipped
	// (i -> m-1-i) to a lower one, the rows of X' with it.
	si, sj := m, 1
	if tt {
		si, sj = 1, m
	}
	base := 0
	if !lowerEff {
		base = (m - 1) * (si + sj)
		si, sj = -si, -sj
	}
	// X' is m x w where w counts right-hand sides: element (i, c) of B' is
	// b[i*bi + c*bc], before the flip.
	w, bi, bc := cols, cols, 1
	if !s.left {
		w, bi, bc = rows, 1, cols
	}
	xbase := 0
	if !lowerEff {
		xbase = (m - 1) * bi
		bi = -bi
	}
	// Work items: (batch, chunk of right-hand sides).
	chunkW := max(32, (w+par-1)/par)
	if batch >= par {
		chunkW = w
	}
	nChunks := (w + chunkW - 1) / chunkW
	tnegs := make([][]float64, batch)
	diags := make([][]float64, batch)
	onces := make([]sync.Once, batch)
	prep := func(bt int) ([]float64, []float64) {
		onces[bt].Do(func() { tnegs[bt], diags[bt] = triangleOf(a[bt*m*m:(bt+1)*m*m], m, base, si, sj, s.unit) })
		return tnegs[bt], diags[bt]
	}
	parallelItems(par, batch*nChunks, func(item int) {
		bt, ch := item/nChunks, item%nChunks
		c0, c1 := ch*chunkW, min((ch+1)*chunkW, w)
		cw := c1 - c0
		tn, dg := prep(bt)
		bm, om := b[bt*rows*cols:(bt+1)*rows*cols], out[bt*rows*cols:(bt+1)*rows*cols]
		x := make([]float64, m*cw)
		for i := 0; i < m; i++ {
			for c := 0; c < cw; c++ {
				x[i*cw+c] = bm[xbase+i*bi+(c0+c)*bc]
			}
		}
		triSolveLowerLeft(tn, dg, m, x, cw)
		for i := 0; i < m; i++ {
			for c := 0; c < cw; c++ {
				om[xbase+i*bi+(c0+c)*bc] = x[i*cw+c]
			}
		}
	})
	return out
}

// triangleOf returns the negated strict lower triangle of T (element (i, j)
// at am[base + i*si + j*sj]) as a row-major m x m matrix, and T's diagonal
// (nil when unit).
func triangleOf(am []float64, m, base, si, sj int, unit bool) (tn, dg []float64) {
	tn = make([]float64, m*m)
	for i := 0; i < m; i++ {
		for j := 0; j < i; j++ {
			tn[i*m+j] = -am[base+i*si+j*sj]
		}
	}
	if !unit {
		dg = make([]float64, m)
		for i := range dg {
			dg[i] = am[base+i*(si+sj)]
		}
	}
	return tn, dg
}

// choleskyReal factors every n x n matrix of a (row-major, float64) in
// place as cholesky does: the factor in the lower (or upper) triangle, the
// other triangle left as it was. It returns LAPACK's info per matrix.
func choleskyReal(par int, a []float64, batch, n int, lower bool) []int32 {
	info := make([]int32, batch)
	work := make([]float64, n*n)
	for b := 0; b < batch; b++ {
		m := a[b*n*n : (b+1)*n*n]
		// work = the lower triangle of A, or of A^T for an upper factor.
		for i := 0; i < n; i++ {
			for j := 0; j <= i; j++ {
				if lower {
					work[i*n+j] = m[i*n+j]
				} else {
					work[i*n+j] = m[j*n+i]
				}
			}
		}
		info[b] = choleskyRealLower(par, work, n)
		for i := 0; i < n; i++ {
			for j := 0; j <= i; j++ {
				if lower {
					m[i*n+j] = work[i*n+j]
				} else {
					m[j*n+i] = work[i*n+j]
				}
			}
		}
	}
	return info
}
