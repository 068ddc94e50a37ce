package eval

import "testing"

// TestPart2AgainstJax compares dot, convolution, gather/scatter, sort/top-k,
// fft and linalg programs with jax.jit on CPU (cases in gen_part2.py).
func TestPart2AgainstJax(t *testing.T) {
	dir, cases := jaxCases(t, "gen_part2.py")
	requireCases(t, cases, 100)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) { runJaxCase(t, dir, c) })
	}
}
