//go:build !(goexperiment.simd && amd64)

package eval

// mulAddRow is acc[j] += round(a·b[j]) (a multiply, then an add).
func mulAddRow(acc []float32, a float32, b []float32) {
	b = b[:len(acc)]
	for j, bv := range b {
		acc[j] += float32(a * bv)
	}
}

// addRow is c[j] = v[j] + c[j].
func addRow(c, v []float32) {
	v = v[:len(c)]
	for j, x := range v {
		c[j] = x + c[j]
	}
}

// tailRow is one output row's tail lanes (convYnnTail).
func tailRow(t, tk int, a, b []float32, nc int, c []float32, first bool) {
	tailRowScalar(t, tk, a, b, nc, c, 0, first)
}
