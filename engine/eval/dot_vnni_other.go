//go:build !(goexperiment.simd && amd64)

package eval

// vnniS8: no VNNI kernel in the portable build.
const vnniS8 = false

// gemmS8VNNI needs the simd experiment's AVX512-VNNI kernel (dot_vnni_simd_amd64.go).
func gemmS8VNNI(par, nb, m, n, k int, a []int8, la gemmLayout, bm []int8, lb gemmLayout, c []int32) bool {
	return false
}
