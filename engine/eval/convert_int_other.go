//go:build !(goexperiment.simd && amd64)

package eval

// f32ToSmallIntVector has no vector form in the portable build.
func f32ToSmallIntVector[T int8 | int16 | uint8 | uint16](f []float32, o []T, lo, hi float32) int {
	return 0
}

// f32ToInt32Vector has no vector form in the portable build.
func f32ToInt32Vector(f []float32, o []int32) int { return 0 }
