//go:build !goexperiment.simd || !amd64

package eval

// c64EigenVector has no vector path in this build: dotC64Eigen runs the
// scalar loops.
func c64EigenVector(par, m, n, k int, p c64Seg, groups []c64Group, a, b c64Operand, c []complex64) bool {
	return false
}

func c64VectorTestSet(width int) int { return 0 }

func c64VectorWidths() []int { return nil }
