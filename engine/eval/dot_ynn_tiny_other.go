//go:build !(goexperiment.simd && amd64)

package eval

// ynnTinyVectors: no vector kernel in this build (ynnTinyTask runs).
const ynnTinyVectors = false

func ynnTinyTaskVec(t ynnTask, n, k int, a, bp, c []float32) {}
