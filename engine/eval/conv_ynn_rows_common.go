package eval

// tailRowScalar is tailRow on columns [j0, len(c)).
func tailRowScalar(t, tk int, a, b []float32, nc int, c []float32, j0 int, first bool) {
	for j := j0; j < len(c); j++ {
		var l [4]float32
		for r, x := range a[:t] {
			l[r] = float32(x*b[r*nc+j]) + 0
		}
		s := l[0] + l[1]
		if tk == 4 {
			s = (l[0] + l[1]) + (l[2] + l[3])
		}
		if first {
			c[j] = s
		} else {
			c[j] = s + c[j]
		}
	}
}
