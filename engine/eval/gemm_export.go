package eval

// GemmF32 exposes the packed f32 GEMM to other packages (the kernel
// simulator's matmul) without exporting the layout machinery:
//
//	c[i*n+j] (+)= sum_p a[i*ars+p*acs] * b[p*brs+j*bcs]
//
// for 0 <= i < m, 0 <= j < n, 0 <= p < k; c is row-major m×n with row stride
// n. With accumulate false c is overwritten, otherwise added to. par bounds
// the goroutines one product may use (1: the calling goroutine only).
func GemmF32(par, m, n, k int, a []float32, ars, acs int, b []float32, brs, bcs int, c []float32, accumulate bool) {
	if !accumulate {
		clear(c[:m*n])
	}
	gemmStrided(max(par, 1), 1, m, n, k, a, gemmLayout{0, ars, acs}, b, gemmLayout{0, brs, bcs}, c)
}
