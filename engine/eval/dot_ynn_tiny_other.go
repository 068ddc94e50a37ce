//go:build !(goexperiment.simd && amd64)

package eval

// ynnTinyVectors: no vector kernel in this build (ynnTinyTask runs).
const ynnTinyVectors = false

func ynnTinyTaskVec(t ynnTask, n, k int, a []float32, lda int, bp []float32, ldb int, c []float32) {}

// ynnLanesTaskVec: never called in this build (ynnTinyVectors is false).
func ynnLanesTaskVec(t ynnTask, n, k int, as, bs, cs []float32) {}
