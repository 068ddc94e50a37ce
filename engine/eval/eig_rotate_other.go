//go:build !(goexperiment.simd && amd64)

package eval

func rotateRows(c, s float64, x, y, out []float64) { rotateRowsGo(c, s, x, y, out) }

func rotateRowsFwd(c, s float64, x, y, out []float64) { rotateRowsFwdGo(c, s, x, y, out) }
