//go:build !(goexperiment.simd && amd64)

package eval

func dotF64(x, y []float64) float64                { return dotF64Go(x, y) }
func axpyF64(y, x []float64, alpha float64)        { axpyF64Go(y, x, alpha) }
func rank2F64(row, v, w []float64, vi, wi float64) { rank2F64Go(row, v, w, vi, wi) }
