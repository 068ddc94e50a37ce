//go:build !(goexperiment.simd && amd64)

package eval

// firstSubnormalBits32 is firstSubnormal on f32 bit patterns.
func firstSubnormalBits32(xs []uint32) int {
	for i, b := range xs {
		if b&0x7fffffff-1 < 0x007fffff {
			return i
		}
	}
	return -1
}

// ftzBits32 is ftz on f32 bit patterns.
func ftzBits32(xs []uint32) {
	for i, b := range xs {
		if b&0x7fffffff-1 < 0x007fffff {
			xs[i] = b & 0x80000000
		}
	}
}

// subnormalLanes is the scans' vector width: none in the portable build.
var subnormalLanes = 0

func subnormalLaneWidths() []int { return []int{0} }

// scanSubnormalOrSNaN has no vector form in the portable build: nothing
// scanned, nothing found.
func scanSubnormalOrSNaN(xs []uint32) (int, bool) { return 0, true }
