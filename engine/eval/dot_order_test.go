package eval

import "testing"

// TestDotOrderAgainstJax compares f32 matrix-vector dots bit for bit with
// jax.jit on CPU (cases in testdata/gen_dot_order.py).
func TestDotOrderAgainstJax(t *testing.T) {
	dir, cases := jaxCases(t, "gen_dot_order.py")
	requireCases(t, cases, 34)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) { runJaxCase(t, dir, c) })
	}
}
