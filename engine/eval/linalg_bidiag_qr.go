package eval

import "math"

// Singular values and vectors of an upper bidiagonal matrix by Golub-Kahan
// implicit-shift QR steps whose plane rotations are recorded, then applied
// to the rows of VT and U^T in one pass, strips of columns on all cores (as
// applyQLSweeps does for eigenvectors): gonum's Dbdsqr applies each sweep
// over whole rows, on one core. Only the plain case is taken: a diagonal
// entry that becomes negligible (a rank-deficient matrix), or a step count
// past 30 per value, hands the matrix back to Dbdsqr.

// bidiagSweep is the rotations of one QR step, planes (j, j+1) for j from
// lo up to lo+len(cs)/2-1, applied as rows (x, y) -> (c x + s y, -s x + c y).
type bidiagSweep struct {
	lo int
	cs []float64
}

// bidiagQR diagonalizes the k x k upper bidiagonal matrix (diagonal d,
// superdiagonal e[0..k-2]) in place, returning the right rotations (for VT)
// and left rotations (for U^T) in the order they were made; false when it
// declines (see above).
func bidiagQR(d, e []float64) (right, left []bidiagSweep, ok bool) {
	k := len(d)
	const eps = 0x1p-52
	anorm := 0.0
	for i := range d {
		anorm = math.Max(anorm, math.Abs(d[i]))
		if i+1 < k {
			anorm = math.Max(anorm, math.Abs(e[i]))
		}
	}
	if anorm == 0 || math.IsNaN(anorm) || math.IsInf(anorm, 0) {
		return nil, nil, false
	}
	small := eps * anorm
	budget := 30 * k
	var store []float64
	take := func(n int) []float64 {
		if len(store) < n {
			store = make([]float64, max(n, 1<<16))
		}
		s := store[:0:n]
		store = store[n:]
		return s
	}
	for hi := k - 1; hi > 0; {
		if math.Abs(e[hi-1]) <= eps*(math.Abs(d[hi-1])+math.Abs(d[hi])) {
			e[hi-1] = 0
			hi--
			continue
		}
		lo := hi - 1
		for lo > 0 && math.Abs(e[lo-1]) > eps*(math.Abs(d[lo-1])+math.Abs(d[lo])) {
			lo--
		}
		if lo > 0 {
			e[lo-1] = 0
		}
		for i := lo; i <= hi; i++ {
			if math.Abs(d[i]) <= small {
				return nil, nil, false
			}
		}
		if budget--; budget < 0 {
			return nil, nil, false
		}
		// Wilkinson shift from the trailing 2 x 2 of B^T B.
		a := d[hi-1] * d[hi-1]
		if hi-1 > lo {
			a += e[hi-2] * e[hi-2]
		}
		b := d[hi-1] * e[hi-1]
		c := d[hi]*d[hi] + e[hi-1]*e[hi-1]
		delta := (a - c) / 2
		var mu float64
		if delta == 0 {
			mu = c - math.Abs(b)
		} else {
			mu = c - b*b/(delta+math.Copysign(math.Hypot(delta, b), delta))
		}
		y, z := d[lo]*d[lo]-mu, d[lo]*e[lo]
		rc, lc := take(2*(hi-lo)), take(2*(hi-lo))
		for j := lo; j < hi; j++ {
			// Right rotation of columns j, j+1: [y z] -> [r 0].
			cr, sr := givens(y, z)
			if j > lo {
				e[j-1] = math.Hypot(y, z)
			}
			f := cr*d[j] + sr*e[j]
			e[j] = -sr*d[j] + cr*e[j]
			g := sr * d[j+1]
			d[j+1] = cr * d[j+1]
			d[j] = f
			rc = append(rc, cr, sr)
			// Left rotation of rows j, j+1: [d_j; g] -> [r; 0].
			cl, sl := givens(d[j], g)
			d[j] = math.Hypot(d[j], g)
			f = cl*e[j] + sl*d[j+1]
			d[j+1] = -sl*e[j] + cl*d[j+1]
			e[j] = f
			if j < hi-1 {
				y, z = e[j], sl*e[j+1]
				e[j+1] = cl * e[j+1]
			}
			lc = append(lc, cl, sl)
		}
		right = append(right, bidiagSweep{lo, rc})
		left = append(left, bidiagSweep{lo, lc})
	}
	return right, left, true
}

// givens returns (c, s) with c*y + s*z = hypot(y, z) and -s*y + c*z = 0.
func givens(y, z float64) (c, s float64) {
	if z == 0 {
		return 1, 0
	}
	r := math.Hypot(y, z)
	return y / r, z / r
}

// applyBidiagSweeps applies the sweeps, in order, to the rows of the
// rows x cols row-major x, strips of columns on up to par goroutines; the
// items of both matrices share the goroutines.
func applyBidiagSweeps(par int, jobs []bidiagJob) {
	type item struct {
		j      int
		c0, c1 int
	}
	var items []item
	for ji, jb := range jobs {
		for c0 := 0; c0 < jb.cols; c0 += qlStrip {
			items = append(items, item{ji, c0, min(c0+qlStrip, jb.cols)})
		}
	}
	parallelItems(par, len(items), func(i int) {
		it := items[i]
		jb := jobs[it.j]
		var carry [qlStrip]float64
		x := carry[:it.c1-it.c0]
		for _, sw := range jb.sweeps {
			cols := jb.cols
			copy(x, jb.x[sw.lo*cols+it.c0:sw.lo*cols+it.c1])
			j := sw.lo
			for q := 0; q < len(sw.cs); q, j = q+2, j+1 {
				rotateRowsFwd(sw.cs[q], sw.cs[q+1], x, jb.x[(j+1)*cols+it.c0:(j+1)*cols+it.c1], jb.x[j*cols+it.c0:j*cols+it.c1])
			}
			copy(jb.x[j*cols+it.c0:j*cols+it.c1], x)
		}
	})
}

// bidiagJob is one matrix the sweeps rotate.
type bidiagJob struct {
	x      []float64
	cols   int
	sweeps []bidiagSweep
}

// rotateRowsFwdGo sets out = c*x + s*y and x = -s*x + c*y elementwise.
func rotateRowsFwdGo(c, s float64, x, y, out []float64) {
	y, out = y[:len(x)], out[:len(x)]
	for i, xv := range x {
		yv := y[i]
		out[i] = c*xv + s*yv
		x[i] = c*yv - s*xv
	}
}
