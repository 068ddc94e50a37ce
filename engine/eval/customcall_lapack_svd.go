package eval

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/lapack"
	"gonum.org/v1/gonum/lapack/gonum"

	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func init() {
	for _, p := range []string{"s", "d", "c", "z"} {
		RegisterCustomCall("lapack_"+p+"gesdd_ffi", func(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
			return lapackSVD(ev.parallelism(), in, args, true)
		})
		RegisterCustomCall("lapack_"+p+"gesvd_ffi", func(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
			return lapackSVD(ev.parallelism(), in, args, false)
		})
	}
}

// lapackSVD serves ?gesdd (jnp.linalg.svd's default) and ?gesvd
// (SvdAlgorithm.QR): A = U diag(s) VT with s descending (complex types: see
// complexSVDBatch). Results: the destroyed input, s[min(m,n)], U (m x m for
// mode 'A', m x min(m,n) for 'S'), VT (n x n or min(m,n) x n), info. Mode 'N' computes s only and leaves U and
// VT zero (LAPACK leaves them unset; jax discards them).
//
// Both bidiagonalize and run implicit-shift QR on the bidiagonal (gonum's
// Dgesvd, or svdDirect). dgesdd's divide and conquer reduces to that same QR
// iteration for min(m,n) <= 25, so singular vectors agree in sign there;
// above that LAPACK may flip pairs (u_k, v_k). The drivers differ in when
// they first reduce a tall (wide) matrix by QR (LQ): dgesvd from
// max(m,n) >= int(1.6 min(m,n)), as gonum does, dgesdd only from
// int(min(m,n)*11/6). The paths give different signs and different bases of
// U's (VT's) null-space columns, so gesdd takes svdDirect below its threshold.
func lapackSVD(par int, in *hlo.Instruction, args []Value, gesdd bool) (Value, error) {
	x, batch, m, n, err := lapackMatrix(args, 0, "svd a")
	if err != nil {
		return Value{}, err
	}
	k := min(m, n)
	mode := ffiChar(ffiAttrs(in), "mode", 'A')
	job, ucols, vtrows := lapack.SVDAll, m, n
	switch mode {
	case 'A':
	case 'S':
		job, ucols, vtrows = lapack.SVDStore, k, k
	case 'N':
		job = lapack.SVDNone
	default:
		return Value{}, Unsupported("svd mode %q (jax emits 'A', 'S' or 'N')", mode)
	}
	usize, vtsize := batch*m*ucols, batch*vtrows*n
	if job == lapack.SVDNone {
		usize, vtsize = -1, -1 // shapes vary (full_matrices) and are never read
	}
	shapes, err := lapackResultShapes(in, batch*m*n, batch*k, usize, vtsize, batch)
	if err != nil {
		return Value{}, err
	}
	if x.Type.IsComplex() {
		return complexSVDBatch(x, shapes, batch, m, n, job != lapack.SVDNone, ucols, vtrows)
	}
	a, s, info := realCopy(x), make([]float64, batch*k), make([]int32, batch)
	u := make([]float64, tensor.NumElements(shapes[2].Dims))
	vt := make([]float64, tensor.NumElements(shapes[3].Dims))
	ldu, ldvt := max(1, ucols), max(1, n)
	if k > 0 {
		impl := gonum.Implementation{}
		work := gonumWork(func(w []float64) { impl.Dgesvd(job, job, m, n, a, n, s, u, ldu, vt, ldvt, w, -1) })
		for b := 0; b < batch; b++ {
			ab, sb := a[b*m*n:(b+1)*m*n], s[b*k:(b+1)*k]
			var ub, vtb []float64
			if job != lapack.SVDNone {
				ub, vtb = u[b*m*ucols:(b+1)*m*ucols], vt[b*vtrows*n:(b+1)*vtrows*n]
			}
			ok := lapackAttempt(func() bool {
				if gesdd && max(m, n) < int(float64(k)*11/6) {
					return svdDirect(par, impl, m, n, ab, sb, ub, ldu, vtb, ldvt)
				}
				return impl.Dgesvd(job, job, m, n, ab, n, sb, ub, ldu, vtb, ldvt, work, len(work))
			})
			if !ok {
				info[b] = 1 // LAPACK counts unconverged superdiagonals; jax only tests != 0
			}
		}
	}
	it, err := int32Result(shapes[4], info)
	if err != nil {
		return Value{}, err
	}
	var out []*tensor.Tensor
	for i, vals := range [][]float64{a, s, u, vt} {
		out = append(out, fromF64s(shapes[i].Elem, shapes[i].Dims, vals))
	}
	return tupleOf(append(out, it)...), nil
}

// svdDirect is the SVD without a preliminary QR/LQ (dgesdd's paths 5 and
// 5t): bidiagonalize A, generate Q and P^T from the reflectors, then QR
// iteration on the bidiagonal applied to both. u and vt are nil when no
// vectors are wanted; otherwise u has ldu columns (m or min(m,n)) and vt
// len(vt)/n rows.
func svdDirect(par int, impl gonum.Implementation, m, n int, a, s, u []float64, ldu int, vt []float64, ldvt int) bool {
	k := min(m, n)
	e, tauQ, tauP := make([]float64, k), make([]float64, k), make([]float64, k)
	work := gonumWork(func(w []float64) { impl.Dgebrd(m, n, a, n, s, e, tauQ, tauP, w, -1) })
	impl.Dgebrd(m, n, a, n, s, e, tauQ, tauP, work, len(work))
	nru, ncvt := 0, 0
	if u != nil {
		vtrows := len(vt) / n
		for r := 0; r < m; r++ {
			copy(u[r*ldu:r*ldu+min(n, ldu)], a[r*n:])
		}
		for r := 0; r < min(m, vtrows); r++ {
			copy(vt[r*n:(r+1)*n], a[r*n:])
		}
		qw := gonumWork(func(w []float64) { impl.Dorgbr(lapack.GenerateQ, m, ldu, n, u, ldu, tauQ, w, -1) })
		impl.Dorgbr(lapack.GenerateQ, m, ldu, n, u, ldu, tauQ, qw, len(qw))
		pw := gonumWork(func(w []float64) { impl.Dorgbr(lapack.GeneratePT, vtrows, n, m, vt, n, tauP, w, -1) })
		impl.Dorgbr(lapack.GeneratePT, vtrows, n, m, vt, n, tauP, pw, len(pw))
		nru, ncvt = m, n
	}
	uplo := blas.Upper
	if m < n {
		uplo = blas.Lower
	}
	if nru == 0 {
		return impl.Dbdsqr(uplo, k, ncvt, 0, 0, s, e, vt, ldvt, u, ldu, nil, 1, make([]float64, 4*k))
	}
	// U Q is computed as (Q^T U^T)^T: Dbdsqr rotates the rows of its C
	// operand with the same arithmetic per element as the columns of its U
	// operand, but along rows of contiguous memory rather than down columns.
	ut := make([]float64, k*m)
	for r := 0; r < m; r++ {
		for c, v := range u[r*ldu : r*ldu+k] {
			ut[c*m+r] = v
		}
	}
	var ok bool
	if uplo == blas.Upper && k > eighFollowMax && ldvt == ncvt {
		ok = bidiagSVD(par, k, s, e, vt, ncvt, ut, m)
	}
	if !ok {
		ok = bdsqrStrips(par, impl, uplo, k, s, e, vt, ncvt, ldvt, ut, m)
	}
	for r := 0; r < m; r++ {
		for c := range u[r*ldu : r*ldu+k] {
			u[r*ldu+c] = ut[c*m+r]
		}
	}
	return ok
}

// bidiagSVD finishes svdDirect past dstedc's dsteqr range (k > 25, where
// dgesdd's divide and conquer fixes signs no other algorithm follows) with
// bidiagQR: s, e (upper bidiagonal), the rows of vt (k x n) and of ut (U^T,
// k x m) become the singular values (descending) and vectors. It reports
// false, touching nothing, when bidiagQR declines.
func bidiagSVD(par, k int, s, e, vt []float64, n int, ut []float64, m int) bool {
	d, ee := append([]float64(nil), s...), append([]float64(nil), e...)
	right, left, ok := bidiagQR(d, ee)
	if !ok {
		return false
	}
	applyBidiagSweeps(par, []bidiagJob{{vt[:k*n], n, right}, {ut, m, left}})
	for i, v := range d {
		if v < 0 {
			d[i] = -v
			for j := range vt[i*n : (i+1)*n] {
				vt[i*n+j] = -vt[i*n+j]
			}
		}
	}
	perm := make([]int, k)
	for i := range perm {
		perm[i] = i
	}
	for i := 1; i < k; i++ {
		for j := i; j > 0 && d[perm[j]] > d[perm[j-1]]; j-- {
			perm[j], perm[j-1] = perm[j-1], perm[j]
		}
	}
	v2, u2 := append([]float64(nil), vt[:k*n]...), append([]float64(nil), ut...)
	for i, p := range perm {
		s[i] = d[p]
		copy(vt[i*n:(i+1)*n], v2[p*n:(p+1)*n])
		copy(ut[i*m:(i+1)*m], u2[p*m:(p+1)*m])
	}
	return true
}

// bdsqrStrips is Dbdsqr(uplo, k, ncvt, 0, ncc, s, e, vt, ldvt, nil, 1, c,
// ldc) run as several Dbdsqr calls in parallel, each on its own copy of the
// bidiagonal and on a strip of columns of VT or of C. The iteration on the
// bidiagonal reads neither, and every rotation acts on each column alone, so
// each strip gets exactly the arithmetic the single call gives it.
func bdsqrStrips(par int, impl gonum.Implementation, uplo blas.Uplo, k int, s, e, vt []float64, ncvt, ldvt int, c []float64, ncc int) bool {
	type strip struct {
		vt     bool
		c0, c1 int
	}
	var strips []strip
	split := func(isVT bool, cols int) {
		parts := max(1, min(par, cols/64))
		for p := 0; p < parts; p++ {
			strips = append(strips, strip{isVT, p * cols / parts, (p + 1) * cols / parts})
		}
	}
	split(true, ncvt)
	split(false, ncc)
	oks := make([]bool, len(strips))
	ds := make([][]float64, len(strips))
	parallelItems(par, len(strips), func(i int) {
		st := strips[i]
		d, ee := append([]float64(nil), s...), append([]float64(nil), e...)
		ds[i] = d
		w := make([]float64, 4*k)
		oks[i] = lapackAttempt(func() bool {
			if st.vt {
				return impl.Dbdsqr(uplo, k, st.c1-st.c0, 0, 0, d, ee, vt[st.c0:], ldvt, nil, 1, nil, 1, w)
			}
			return impl.Dbdsqr(uplo, k, 0, 0, st.c1-st.c0, d, ee, nil, 1, nil, 1, c[st.c0:], ncc, w)
		})
	})
	copy(s, ds[0])
	for _, ok := range oks {
		if !ok {
			return false
		}
	}
	return true
}
