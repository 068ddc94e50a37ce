//go:build goexperiment.simd && amd64

package eval

const simdExperiment = true

func vectorMathName() string {
	if len(xlaVectorSets) == 0 {
		return "scalar"
	}
	return xlaVectorSets[0].name
}
