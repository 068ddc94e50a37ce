package eval

import (
	"fmt"
	"math"
	"math/cmplx"

	"gonum.org/v1/gonum/lapack/gonum"

	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func init() {
	for _, p := range []string{"s", "d", "c", "z"} {
		RegisterCustomCall("lapack_"+p+"geqrf_ffi", lapackGeqrf)
	}
	for _, t := range []string{"sorgqr", "dorgqr", "cungqr", "zungqr"} {
		RegisterCustomCall("lapack_"+t+"_ffi", lapackOrgqr)
	}
}

// lapackGeqrf is ?geqrf: Householder QR. Results: R on and above the
// diagonal with the reflectors' tails below it, and tau[min(m,n)]; reflector
// i is H = I - tau[i] v v^H with v = (0..0, 1, a[i+1:, i]).
func lapackGeqrf(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	x, batch, m, n, err := lapackMatrix(args, 0, "geqrf a")
	if err != nil {
		return Value{}, err
	}
	k := min(m, n)
	shapes, err := lapackResultShapes(in, batch*m*n, batch*k)
	if err != nil {
		return Value{}, err
	}
	if x.Type.IsComplex() {
		a, tau := complexCopy(x), make([]complex128, batch*k)
		for b := 0; b < batch; b++ {
			zgeqr2(m, n, a[b*m*n:(b+1)*m*n], tau[b*k:(b+1)*k])
		}
		return tupleOf(fromC128s(shapes[0].Elem, shapes[0].Dims, a), fromC128s(shapes[1].Elem, shapes[1].Dims, tau)), nil
	}
	a, tau := realCopy(x), make([]float64, batch*k)
	if k > 0 {
		impl := gonum.Implementation{}
		work := gonumWork(func(w []float64) { impl.Dgeqrf(m, n, a, n, tau, w, -1) })
		for b := 0; b < batch; b++ {
			impl.Dgeqrf(m, n, a[b*m*n:(b+1)*m*n], n, tau[b*k:(b+1)*k], work, len(work))
		}
	}
	return tupleOf(fromF64s(shapes[0].Elem, shapes[0].Dims, a), fromF64s(shapes[1].Elem, shapes[1].Dims, tau)), nil
}

// lapackOrgqr is ?orgqr / ?ungqr: the first n columns of
// Q = H(0) H(1) ... H(k-1) from geqrf's reflectors, for an m x n operand
// (m >= n >= k) holding the reflectors in its first k columns.
func lapackOrgqr(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	x, batch, m, n, err := lapackMatrix(args, 0, "orgqr a")
	if err != nil {
		return Value{}, err
	}
	tt, tb, k, err := lapackVector(args, 1, "orgqr tau")
	if err != nil {
		return Value{}, err
	}
	if tb != batch || k > n || n > m || tt.Type != x.Type {
		return Value{}, fmt.Errorf("operands a %v and tau %v do not agree (want m >= n >= k, one tau row per matrix)", x, tt)
	}
	if in.Shape.Elem != x.Type || !equalDims(in.Shape.Dims, x.Dims) {
		return Value{}, fmt.Errorf("result %v does not match operand %v", in.Shape, x)
	}
	if x.Type.IsComplex() {
		a, tau := complexCopy(x), toC128s(tt)
		for b := 0; b < batch; b++ {
			zung2r(m, n, k, a[b*m*n:(b+1)*m*n], tau[b*k:(b+1)*k])
		}
		return ArrayValue(fromC128s(in.Shape.Elem, in.Shape.Dims, a)), nil
	}
	a, tau := realCopy(x), toF64s(tt)
	if n > 0 {
		impl := gonum.Implementation{}
		work := gonumWork(func(w []float64) { impl.Dorgqr(m, n, k, a, n, tau, w, -1) })
		for b := 0; b < batch; b++ {
			impl.Dorgqr(m, n, k, a[b*m*n:(b+1)*m*n], n, tau[b*k:(b+1)*k], work, len(work))
		}
	}
	return ArrayValue(fromF64s(in.Shape.Elem, in.Shape.Dims, a)), nil
}

// lapackVector returns operand i as a batch of vectors of length k.
func lapackVector(args []Value, i int, what string) (*tensor.Tensor, int, int, error) {
	if i >= len(args) || args[i].T == nil || len(args[i].T.Dims) < 1 {
		return nil, 0, 0, fmt.Errorf("operand %d (%s) must be an array of rank >= 1", i, what)
	}
	t := args[i].T
	k := int(t.Dims[len(t.Dims)-1])
	return t, int(tensor.NumElements(t.Dims[:len(t.Dims)-1])), k, nil
}

// The complex Householder routines below follow LAPACK's zgeqr2 / zung2r /
// zlarfg (gonum has no complex LAPACK) on row-major matrices, one column of
// reflector at a time.

// zlarfg turns v = (alpha, x) into (beta, v') and returns tau such that
// (I - tau (1,v')(1,v')^H)^H (alpha, x) = (beta, 0), with LAPACK's choice
// beta = -sign(re alpha) ||(alpha, x)|| (real), tau = ((beta-re)/beta,
// -im/beta) and v' = x / (alpha - beta). tau is 0 (H = I) when x = 0 and
// alpha is real. LAPACK's rescaling of tiny beta (below the safe minimum) is
// not reproduced.
func zlarfg(v []complex128) complex128 {
	var xnorm float64
	for _, z := range v[1:] {
		xnorm = math.Hypot(xnorm, cmplx.Abs(z))
	}
	ar, ai := real(v[0]), imag(v[0])
	if xnorm == 0 && ai == 0 {
		return 0
	}
	beta := -math.Copysign(math.Hypot(math.Hypot(ar, ai), xnorm), ar)
	tau := complex((beta-ar)/beta, -ai/beta)
	s := 1 / (v[0] - complex(beta, 0))
	for i := 1; i < len(v); i++ {
		v[i] *= s
	}
	v[0] = complex(beta, 0)
	return tau
}

// applyReflector applies I - tau v v^H (v[0] = 1 implied) from the left to
// rows r0.. and columns c0..n-1 of the row-major m x n matrix a.
func applyReflector(a []complex128, m, n, r0, c0 int, v []complex128, tau complex128) {
	if tau == 0 {
		return
	}
	for c := c0; c < n; c++ {
		var w complex128
		for i, vi := range v {
			w += cmplx.Conj(vi) * a[(r0+i)*n+c]
		}
		w *= tau
		for i, vi := range v {
			a[(r0+i)*n+c] -= vi * w
		}
	}
}

func zgeqr2(m, n int, a, tau []complex128) {
	v := make([]complex128, m)
	for i := 0; i < min(m, n); i++ {
		col := v[:m-i]
		for r := range col {
			col[r] = a[(i+r)*n+i]
		}
		tau[i] = zlarfg(col)
		for r := range col {
			a[(i+r)*n+i] = col[r]
		}
		col[0] = 1
		applyReflector(a, m, n, i, i+1, col, cmplx.Conj(tau[i]))
	}
}

func zung2r(m, n, k int, a, tau []complex128) {
	for j := k; j < n; j++ {
		for r := 0; r < m; r++ {
			a[r*n+j] = 0
		}
		a[j*n+j] = 1
	}
	v := make([]complex128, m)
	for i := k - 1; i >= 0; i-- {
		col := v[:m-i]
		col[0] = 1
		for r := 1; r < len(col); r++ {
			col[r] = a[(i+r)*n+i]
		}
		applyReflector(a, m, n, i, i+1, col, tau[i])
		for r := i + 1; r < m; r++ {
			a[r*n+i] *= -tau[i]
		}
		a[i*n+i] = 1 - tau[i]
		for r := 0; r < i; r++ {
			a[r*n+i] = 0
		}
	}
}
