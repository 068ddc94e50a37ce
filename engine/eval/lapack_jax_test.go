package eval

import (
	"fmt"
	"math"
	"math/cmplx"
	"testing"

	"goldtrace/engine/dtype"
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
	// SVD, on (u, s, vh) cases, limits the comparison with jax to the first
	// Pairs singular vector pairs after checking the factorization itself.
	SVD *struct{ Pairs int }
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
	if c.SVD != nil {
		if err := checkSVD(t, dir, c.jaxCase, got); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.Signs) > 0 {
		if err := alignPhases(got, want, c); err != nil {
			t.Fatal(err)
		}
	}
	if c.SVD != nil {
		// Beyond the leading pairs only the span is determined; U and V^H
		// being unitary with matching leading vectors pins it down.
		got[0] = adoptVectors(got[0], want[0], c.SVD.Pairs, true)
		got[2] = adoptVectors(got[2], want[2], c.SVD.Pairs, false)
	}
	compareJaxOutputs(t, got, want, c.jaxCase)
}

// checkSVD checks got = (u, s, vh) of the case's input a for
// a = u[:, :k] diag(s) vh[:k, :] and for unitary columns of u and rows of vh,
// to a few ulps of the result type per dimension.
func checkSVD(t *testing.T, dir string, c jaxCase, got []*tensor.Tensor) error {
	a, err := loadJaxArray(dir, c.Inputs[0])
	if err != nil {
		return err
	}
	batch, m, n, err := matrixBatch(a.Dims, "a")
	if err != nil {
		return err
	}
	k := min(m, n)
	_, _, uc, err := matrixBatch(got[0].Dims, "u")
	if err != nil {
		return err
	}
	_, vr, _, err := matrixBatch(got[2].Dims, "vh")
	if err != nil {
		return err
	}
	eps := 0x1p-52
	if a.Type == dtype.C64 {
		eps = 0x1p-23
	}
	tol := 8 * float64(max(m, n)) * eps
	av, u, s, vh := toC128s(a), toC128s(got[0]), toF64s(got[1]), toC128s(got[2])
	for b := 0; b < batch; b++ {
		ab, ub, sb, vb := av[b*m*n:], u[b*m*uc:], s[b*k:], vh[b*vr*n:]
		scale := math.SmallestNonzeroFloat64
		if k > 0 {
			scale = math.Max(scale, sb[0])
		}
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var r complex128
				for l := 0; l < k; l++ {
					r += ub[i*uc+l] * complex(sb[l], 0) * vb[l*n+j]
				}
				if d := cmplx.Abs(r - ab[i*n+j]); d > tol*scale {
					return fmt.Errorf("batch %d: (u diag(s) vh)[%d,%d] = %v, a = %v", b, i, j, r, ab[i*n+j])
				}
			}
		}
		// Column i of u is ub[i + uc*r]; row i of vh is vb[n*i + r].
		for _, q := range []struct {
			name              string
			x                 []complex128
			nvec, len, vs, es int
		}{{"u", ub, uc, m, 1, uc}, {"vh", vb, vr, n, n, 1}} {
			for i := 0; i < q.nvec; i++ {
				for j := 0; j < q.nvec; j++ {
					var d complex128
					for r := 0; r < q.len; r++ {
						d += cmplx.Conj(q.x[i*q.vs+r*q.es]) * q.x[j*q.vs+r*q.es]
					}
					if i == j {
						d--
					}
					if cmplx.Abs(d) > tol {
						return fmt.Errorf("batch %d: %s is not unitary: vectors %d, %d have inner product off by %v", b, q.name, i, j, d)
					}
				}
			}
		}
	}
	return nil
}

// adoptVectors returns got with its vectors (columns, or rows) from index
// from on replaced by want's.
func adoptVectors(got, want *tensor.Tensor, from int, cols bool) *tensor.Tensor {
	g, w := complexCopy(got), toC128s(want)
	_, r, cl, _ := matrixBatch(got.Dims, "vectors")
	for i := range g {
		row, col := i/cl%r, i%cl
		if (cols && col >= from) || (!cols && row >= from) {
			g[i] = w[i]
		}
	}
	return fromC128s(got.Type, got.Dims, g)
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
