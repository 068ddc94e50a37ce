//go:build goexperiment.simd && amd64

package eval

// i32TestLanes is every vector width the tiles may take on this CPU (0, the
// scalar loop alone, included).
func i32TestLanes() []int { return binaryLaneWidths() }

func setI32Lanes(l int) func() {
	saved := i32Lanes
	i32Lanes = l
	return func() { i32Lanes = saved }
}
