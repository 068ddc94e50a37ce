//go:build !(goexperiment.simd && amd64)

package eval

func roundBF16Vector(xs []uint32) int { return 0 }
func roundF16Vector(xs []uint32) int  { return 0 }

func widenBF16Vector(src []uint16, dst []uint32) int  { return 0 }
func widenF16Vector(src []uint16, dst []uint32) int   { return 0 }
func narrowBF16Vector(src []uint32, dst []uint16) int { return 0 }
func narrowF16Vector(src []uint32, dst []uint16) int  { return 0 }
func fmaF16Vector(a, b, c, o []float32) int           { return 0 }

// narrowBF16VectorOn has no vector form to turn on in the portable build.
var narrowBF16VectorOn = false
