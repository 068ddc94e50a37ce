//go:build !(goexperiment.simd && amd64)

package eval

// i32PanelWidth: no vector tiles in the portable build, so no panels.
func i32PanelWidth() int { return 0 }

// i32BlockVector: no vector kernel in the portable build (i32RowsScalar
// computes every column).
func i32BlockVector(groups, rows, kc, n int, ap, pk []int32, np, pstride int, c []int32, ldc int) int {
	return 0
}
