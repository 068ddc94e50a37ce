//go:build !(goexperiment.simd && amd64)

package eval

var f64BitLanes = 0

func f64BitLaneWidths() []int { return []int{0} }

// binaryFTZF64Vector has no vector form in the portable build.
func binaryFTZF64Vector(op string, a, b, o []float64) int { return 0 }

// scanSubnormal64 has no vector form in the portable build: nothing scanned.
func scanSubnormal64(xs []uint64) (int, bool) { return 0, false }
