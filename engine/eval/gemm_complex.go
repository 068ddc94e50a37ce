package eval

// Complex products run on the real f64 GEMM: C = A·B with A [M,K] and
// B [K,N] complex is the real product
//
//	[Re A | Im A] · [[Re B, Im B], [-Im B, Re B]] = [Re C | Im C]
//
// of an M×2K by a 2K×2N matrix, each element an FMA chain over Re A's
// columns and then Im A's. This is how XLA:CPU's complex dots compute too
// (real multiply-adds on the parts, no C99 infinity recovery), and it runs
// on the assembly kernels instead of gonum's pure-Go Zgemm.

// complexGemmMinFlops is the product size from which the real form pays for
// its copies.
const complexGemmMinFlops = 1 << 12

// complexGemmViaReal computes c[b] += a[b]·bm[b] for complex128 matrices in
// layouts la and lb; false when the product is too small to bother.
func complexGemmViaReal(par, nb, m, n, k int, a []complex128, la gemmLayout, bm []complex128, lb gemmLayout, c []complex128) bool {
	if m*n*k < complexGemmMinFlops {
		return false
	}
	k2, n2 := 2*k, 2*n
	ar := make([]float64, nb*m*k2)
	br := make([]float64, nb*k2*n2)
	cr := make([]float64, nb*m*n2)
	runParallel(par, nb*m, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			b, i := r/m, r%m
			row := ar[r*k2 : (r+1)*k2]
			src := a[b*la.bs+i*la.rs:]
			for p := 0; p < k; p++ {
				v := src[p*la.cs]
				row[p], row[k+p] = real(v), imag(v)
			}
		}
	})
	runParallel(par, nb*k, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			b, p := r/k, r%k
			top := br[(b*k2+p)*n2 : (b*k2+p+1)*n2]
			bot := br[(b*k2+k+p)*n2 : (b*k2+k+p+1)*n2]
			src := bm[b*lb.bs+p*lb.rs:]
			for j := 0; j < n; j++ {
				v := src[j*lb.cs]
				top[j], top[n+j] = real(v), imag(v)
				bot[j], bot[n+j] = -imag(v), real(v)
			}
		}
	})
	gemmStrided(par, nb, m, n2, k2, ar, rowMajor(m, k2), br, rowMajor(k2, n2), cr)
	for r := 0; r < nb*m; r++ {
		row := cr[r*n2 : (r+1)*n2]
		out := c[r*n : (r+1)*n]
		for j := range out {
			out[j] += complex(row[j], row[n+j])
		}
	}
	return true
}
