package eval

import (
	"fmt"
	"math/cmplx"
	"testing"

	"goldtrace/engine/tensor"
)

// lapackCase is a gen_lapack.py manifest entry: a jaxCase plus the vector
// outputs whose signs (phases) are aligned to jax's before comparing.
type lapackCase struct {
	jaxCase
	Signs []struct {
		Out  int
		Axis string // "col" or "row"
	}
}

func TestLapackAgainstJax(t *testing.T) {
	dir := genJaxCases(t, "gen_lapack.py")
	cases := readManifest[lapackCase](t, dir)
	if len(cases) < 80 {
		t.Fatalf("only %d cases generated", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) { runLapackCase(t, dir, c) })
	}
}

func runLapackCase(t *testing.T, dir string, c lapackCase) {
	got, want := evalJaxCase(t, dir, c.jaxCase)
	if len(c.Signs) > 0 {
		if err := alignPhases(got, want, c); err != nil {
			t.Fatal(err)
		}
	}
	compareJaxOutputs(t, got, want, c.jaxCase)
}

// alignPhases rescales, per batch and per index k, vector k (a column, or a
// row for outputs holding V^H) of each listed output of got by the unit phase
// that aligns it with jax's. Eigen- and singular vectors are unique only up to
// that phase, which LAPACK's drivers fix by accidents of their algorithm. For
// k below every listed output's vector count (paired singular vectors u_k,
// v_k) the phase comes from the first listed output and applies to all
// (conjugated for rows), so a u_k/v_k pair flipped inconsistently still fails;
// the remaining vectors (null-space completions) are aligned on their own.
func alignPhases(got, want []*tensor.Tensor, c lapackCase) error {
	type vecs struct {
		out              int
		vals, ref        []complex128
		rows, cols, nvec int
		col              bool
	}
	// at is the flat offset of element i of vector k in batch b.
	at := func(v vecs, b, k, i int) int {
		if v.col {
			return b*v.rows*v.cols + i*v.cols + k
		}
		return b*v.rows*v.cols + k*v.cols + i
	}
	phaseOf := func(v vecs, b, k int) complex128 {
		var dot complex128
		for i := 0; i < v.rows*v.cols/v.nvec; i++ {
			j := at(v, b, k, i)
			dot += cmplx.Conj(v.vals[j]) * v.ref[j]
		}
		if dot == 0 {
			return 1
		}
		return dot / complex(cmplx.Abs(dot), 0)
	}
	var vs []vecs
	batch, shared := -1, -1
	for _, s := range c.Signs {
		if s.Out >= len(got) || s.Out >= len(want) {
			return fmt.Errorf("signs name output %d of %d", s.Out, len(got))
		}
		b, r, cl, err := matrixBatch(got[s.Out].Dims, "vectors")
		if err != nil {
			return err
		}
		if batch >= 0 && b != batch {
			return fmt.Errorf("vector outputs disagree on batch count")
		}
		batch = b
		v := vecs{out: s.Out, vals: complexCopy(got[s.Out]), ref: toC128s(want[s.Out]), rows: r, cols: cl, nvec: r, col: s.Axis == "col"}
		if v.col {
			v.nvec = cl
		}
		if shared < 0 || v.nvec < shared {
			shared = v.nvec
		}
		vs = append(vs, v)
	}
	for b := 0; b < batch; b++ {
		for k := 0; k < shared; k++ {
			p := phaseOf(vs[0], b, k)
			for _, v := range vs {
				q := p
				if !v.col {
					q = cmplx.Conj(p)
				}
				for i := 0; i < v.rows*v.cols/v.nvec; i++ {
					v.vals[at(v, b, k, i)] *= q
				}
			}
		}
		for _, v := range vs {
			for k := shared; k < v.nvec; k++ {
				p := phaseOf(v, b, k)
				for i := 0; i < v.rows*v.cols/v.nvec; i++ {
					v.vals[at(v, b, k, i)] *= p
				}
			}
		}
	}
	for _, v := range vs {
		g := got[v.out]
		got[v.out] = fromC128s(g.Type, g.Dims, v.vals)
	}
	return nil
}
