//go:build !(goexperiment.simd && amd64)

package eval

// unaryF64Vector has no vector form in the portable build.
func unaryF64Vector(op string, x, o []float64) int { return 0 }

var f64MathLanes = 0

func f64MathLaneWidths() []int { return []int{0} }
