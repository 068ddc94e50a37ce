//go:build !(goexperiment.simd && amd64)

package eval

// binaryF32Vector has no vector form in the portable build.
func binaryF32Vector(op string, a, b, o []float32) int { return 0 }

// foldRunMinMaxVector has no vector form in the portable build.
func foldRunMinMaxVector(op string, acc, xs []float32) int { return 0 }

// binaryLanes is binaryF32Vector's vector width: none in the portable build.
var binaryLanes = 0

func binaryLaneWidths() []int { return []int{0} }

// signBitF32Vector has no vector form in the portable build.
func signBitF32Vector(abs bool, x, o []float32) int { return 0 }

// fmaF32Vector has no vector form in the portable build.
func fmaF32Vector(a, b, c, o []float32) int { return 0 }

// foldWindowMinMaxVector has no vector form in the portable build.
func foldWindowMinMaxVector(op string, i0 float32, xs []float32, offs []int64, o []float32) int {
	return 0
}

// binaryFTZF32Vector has no vector form in the portable build.
func binaryFTZF32Vector(op string, a, b, o []float32) int { return 0 }

// minMaxF32Vector has no vector form in the portable build.
func minMaxF32Vector(op string, x, y, o []float32, flush bool) int { return 0 }

// binaryInt32Vector has no vector form in the portable build.
func binaryInt32Vector(op string, a, b, o []uint32) int { return 0 }

// compareF32Vector has no vector form in the portable build.
func compareF32Vector(dir string, a, b []float32, o []byte) int { return 0 }

// compareInt32Vector has no vector form in the portable build.
func compareInt32Vector(dir string, signed bool, a, b []uint32, o []byte) int { return 0 }

// selectBitsVector has no vector form in the portable build.
func selectBitsVector(p []byte, a, b, o []uint32) int { return 0 }

func selectHalvesVector(p []byte, a, b, o []uint16) int { return 0 }

func selectBytesVector(p, a, b, o []byte) int { return 0 }

// unaryF32Vector has no vector form in the portable build.
func unaryF32Vector(op string, x, o []float32) int { return 0 }

func sinCosF32Vector(op string, x, o []float32) int { return 0 }

func powF32Vector(x, y, o []float32) int { return 0 }

// divInt32Vector has no vector form in the portable build.
func divInt32Vector(op string, signed bool, a, b, o []uint32) int { return 0 }

// unaryInt32Vector has no vector form in the portable build.
func unaryInt32Vector(op string, signed bool, x, o []uint32) int { return 0 }
