//go:build !goexperiment.simd || !amd64

package eval

const simdExperiment = false

func vectorMathName() string { return "scalar" }
