package eval

import (
	"math"
	"sync"
)

// The evaluator's own FFT, computed in float64: a mixed-radix Stockham
// transform (radix 4, 2, 3, 5 butterflies, a direct DFT for other prime
// factors) over w lines at once, one line per vector lane. A batch of lines
// lives split: value e of lane l has its real part at e*2w+l and its
// imaginary part at e*2w+w+l, so every butterfly and twiddle product is
// the same vector operation on all lanes. Twiddles come from one table per
// stage, each computed directly from its angle reduced to the first octant
// (no recurrences), so a transform's error is that of the O(log n)
// correctly rounded float64 operations it runs: far below one float32 ulp,
// and about the float64 error of any other FFT for c128.
//
// Only the forward transform exists; the inverse runs it on conjugated
// values and conjugates the result. Real transforms of even length n run a
// complex transform of n/2 on the packed pairs (x[2k] + i*x[2k+1]) with a
// twiddle pass after it (rfft) or before it (irfft).

// fftStage is one Stockham pass: sub-transforms of length p*m at stride s.
// Its input value (q, pp, t) at q + s*(pp + t*m) goes, after a length-p DFT
// over t and a twiddle w^(r*pp), to q + s*(p*pp + r).
type fftStage struct {
	p, m, s int
	// tw holds, for each pp and r = 1..p-1, the twiddle exp(-2πi r pp/(p m))
	// as (re, im, -im): 3*(p-1) values per pp.
	tw []float64
	// dft holds, for a generic radix p, cos and sin of 2π j/p (j < p).
	dft []float64
}

// fftCPlan is a complex forward transform of length n on w lanes.
type fftCPlan struct {
	n, w   int
	stages []fftStage
	blue   *fftBluestein // set for lengths with a prime factor above fftMaxRadix
}

// fftMaxRadix is the largest prime factor the passes take directly (a
// direct radix-p pass costs p operations a value); lengths with a larger
// one go through Bluestein's convolution.
const fftMaxRadix = 64

// fftBluestein computes a length-n DFT as a cyclic convolution of length m
// (a power of two, m >= 2n-1): with ch_j = exp(-iπ j²/n),
// X[k] = ch_k Σ_t (x_t ch_t) conj(ch_{k-t}).
type fftBluestein struct {
	m     int
	sub   *fftCPlan
	chirp []float64 // (re, im) of ch_j, j < n
	bhat  []float64 // (re, im) of the DFT of conj(ch) wrapped to m, divided by m
}

func newFFTBluestein(n, w int) *fftBluestein {
	m := 1
	for m < 2*n-1 {
		m *= 2
	}
	bl := &fftBluestein{m: m, sub: fftCPlanFor(m, w), chirp: make([]float64, 2*n)}
	for j := 0; j < n; j++ {
		// j² mod 2n exactly, then the angle from its octant.
		c, s := fftRoot(int(int64(j)*int64(j)%int64(2*n)), 2*n)
		bl.chirp[2*j], bl.chirp[2*j+1] = c, -s
	}
	// The DFT of b_j = conj(ch_j), |j| < n, wrapped: on one lane, in Go.
	one := newFFTCPlan(m, 1)
	a, b := make([]float64, 2*m), make([]float64, 2*m)
	for j := 0; j < n; j++ {
		a[2*j], a[2*j+1] = bl.chirp[2*j], -bl.chirp[2*j+1]
		if j > 0 {
			a[2*(m-j)], a[2*(m-j)+1] = bl.chirp[2*j], -bl.chirp[2*j+1]
		}
	}
	r := one.runGo(a, b)
	bl.bhat = make([]float64, 2*m)
	for k := range bl.bhat {
		bl.bhat[k] = r[k] / float64(m)
	}
	return bl
}

// bufLen is the number of float64s each of run's two buffers needs.
func (pl *fftCPlan) bufLen() int {
	if pl.blue != nil {
		return 2 * pl.w * pl.blue.m
	}
	return 2 * pl.w * pl.n
}

// fftRoot returns cos and sin of 2πk/n, computed from the angle reduced
// to [0, π/4] so both are correctly rounded or nearly.
func fftRoot(k, n int) (float64, float64) {
	k %= n
	if k < 0 {
		k += n
	}
	neg := false
	if 2*k > n { // θ -> 2π - θ
		k = n - k
		neg = true
	}
	// θ = 2πk/n in [0, π]. Work with the exact fraction num/den of 2π.
	num, den := k, n
	flipC := false
	if 4*num > den { // θ -> π - θ: cos negates
		num, den = den-2*num, 2*den
		flipC = true
	}
	var c, s float64
	if 8*num > den { // θ -> π/2 - θ: cos and sin swap
		a := 2 * math.Pi * float64(den-4*num) / float64(4*den)
		s, c = math.Cos(a), math.Sin(a)
	} else {
		a := 2 * math.Pi * float64(num) / float64(den)
		c, s = math.Cos(a), math.Sin(a)
	}
	if flipC {
		c = -c
	}
	if neg {
		s = -s
	}
	return c, s
}

// fftFactors splits n into the radices the passes run: fours, then a two,
// then threes, fives and other primes in increasing order.
func fftFactors(n int) []int {
	var fs []int
	for n%4 == 0 {
		fs = append(fs, 4)
		n /= 4
	}
	if n%2 == 0 {
		fs = append(fs, 2)
		n /= 2
	}
	for p := 3; n > 1; p += 2 {
		if p*p > n {
			p = n
		}
		for n%p == 0 {
			fs = append(fs, p)
			n /= p
		}
	}
	return fs
}

func newFFTCPlan(n, w int) *fftCPlan {
	pl := &fftCPlan{n: n, w: w}
	if fs := fftFactors(n); len(fs) > 0 && fs[len(fs)-1] > fftMaxRadix {
		pl.blue = newFFTBluestein(n, w)
		return pl
	}
	l, s := n, 1
	for _, p := range fftFactors(n) {
		m := l / p
		st := fftStage{p: p, m: m, s: s, tw: make([]float64, 3*(p-1)*m)}
		for pp := 0; pp < m; pp++ {
			for r := 1; r < p; r++ {
				c, sn := fftRoot(r*pp*s, n)
				i := 3 * (pp*(p-1) + r - 1)
				st.tw[i], st.tw[i+1], st.tw[i+2] = c, -sn, sn
			}
		}
		if p > 5 {
			st.dft = make([]float64, 2*p)
			for j := 0; j < p; j++ {
				st.dft[2*j], st.dft[2*j+1] = fftRoot(j, p)
			}
		}
		pl.stages = append(pl.stages, st)
		l, s = m, s*p
	}
	return pl
}

// fftForceGo makes the passes and the real twiddle passes run in plain Go
// (tests compare both ways).
var fftForceGo bool

var fftPlanCache sync.Map // [2]int{n, w} -> *fftCPlan

func fftCPlanFor(n, w int) *fftCPlan {
	key := [2]int{n, w}
	if p, ok := fftPlanCache.Load(key); ok {
		return p.(*fftCPlan)
	}
	p, _ := fftPlanCache.LoadOrStore(key, newFFTCPlan(n, w))
	return p.(*fftCPlan)
}

var fftRealCache sync.Map // n -> []float64

// fftRealTwiddles is the table of exp(-2πik/n), k = 0..n/2, as (re, im, -im),
// that packs and unpacks an even-length real transform (made once per n).
func fftRealTwiddles(n int) []float64 {
	if t, ok := fftRealCache.Load(n); ok {
		return t.([]float64)
	}
	t, _ := fftRealCache.LoadOrStore(n, newFFTRealTwiddles(n))
	return t.([]float64)
}

func newFFTRealTwiddles(n int) []float64 {
	h := n / 2
	t := make([]float64, 3*(h+1))
	for k := 0; k <= h; k++ {
		c, s := fftRoot(k, n)
		t[3*k], t[3*k+1], t[3*k+2] = c, -s, s
	}
	return t
}

// run transforms the batch in a (2*n*w values) using b as scratch and
// returns the one holding the result.
func (pl *fftCPlan) run(a, b []float64) []float64 {
	if len(a) < pl.bufLen() || len(b) < pl.bufLen() {
		panic("fft: batch buffers too short")
	}
	if pl.blue != nil {
		return pl.runBluestein(a, b)
	}
	for i := range pl.stages {
		st := &pl.stages[i]
		if fftForceGo || !fftPassSIMD(pl.w, st, a, b) {
			fftPassGo(pl.w, st, a, b)
		}
		a, b = b, a
	}
	return a
}

// runGo is run with the plain-Go passes.
func (pl *fftCPlan) runGo(a, b []float64) []float64 {
	for i := range pl.stages {
		fftPassGo(pl.w, &pl.stages[i], a, b)
		a, b = b, a
	}
	return a
}

// runBluestein: a[t] *= ch_t (zero beyond n), transform, multiply by bhat,
// transform back (the forward transform of the conjugate, conjugated),
// X[k] = ch_k * that.
func (pl *fftCPlan) runBluestein(a, b []float64) []float64 {
	bl, w, n := pl.blue, pl.w, pl.n
	es := 2 * w
	sseAfterAVX()
	for t := 0; t < n; t++ {
		cr, ci := bl.chirp[2*t], bl.chirp[2*t+1]
		for l := 0; l < w; l++ {
			xr, xi := a[t*es+l], a[t*es+w+l]
			a[t*es+l], a[t*es+w+l] = xr*cr-xi*ci, xr*ci+xi*cr
		}
	}
	clear(a[n*es : bl.m*es])
	r := bl.sub.run(a, b)
	other := a
	if &r[0] == &a[0] {
		other = b
	}
	sseAfterAVX()
	for k := 0; k < bl.m; k++ {
		hr, hi := bl.bhat[2*k], bl.bhat[2*k+1]
		for l := 0; l < w; l++ {
			xr, xi := r[k*es+l], r[k*es+w+l]
			r[k*es+l], r[k*es+w+l] = xr*hr-xi*hi, -(xr*hi + xi*hr)
		}
	}
	r = bl.sub.run(r, other)
	sseAfterAVX()
	for k := 0; k < n; k++ {
		cr, ci := bl.chirp[2*k], bl.chirp[2*k+1]
		for l := 0; l < w; l++ {
			xr, xi := r[k*es+l], -r[k*es+w+l]
			r[k*es+l], r[k*es+w+l] = xr*cr-xi*ci, xr*ci+xi*cr
		}
	}
	return r
}

// fftPassGo is one stage on w lanes in plain Go, any radix.
func fftPassGo(w int, st *fftStage, x, y []float64) {
	switch st.p {
	case 2:
		fftPass2Go(w, st, x, y)
	case 4:
		fftPass4Go(w, st, x, y)
	default:
		fftPassDFTGo(w, st, x, y)
	}
}

func fftPass2Go(w int, st *fftStage, x, y []float64) {
	m, s, es := st.m, st.s, 2*w
	for pp := 0; pp < m; pp++ {
		wr, wi, nwi := st.tw[3*pp], st.tw[3*pp+1], st.tw[3*pp+2]
		for q := 0; q < s; q++ {
			i0 := (q + s*pp) * es
			i1 := i0 + s*m*es
			o0 := (q + s*2*pp) * es
			o1 := o0 + s*es
			for l := 0; l < w; l++ {
				ar, ai := x[i0+l], x[i0+w+l]
				br, bi := x[i1+l], x[i1+w+l]
				y[o0+l], y[o0+w+l] = ar+br, ai+bi
				dr, di := ar-br, ai-bi
				y[o1+l], y[o1+w+l] = dr*wr+di*nwi, dr*wi+di*wr
			}
		}
	}
}

func fftPass4Go(w int, st *fftStage, x, y []float64) {
	m, s, es := st.m, st.s, 2*w
	step, ostep := s*m*es, s*es
	for pp := 0; pp < m; pp++ {
		tw := st.tw[9*pp : 9*pp+9]
		for q := 0; q < s; q++ {
			i := (q + s*pp) * es
			o := (q + s*4*pp) * es
			for l := 0; l < w; l++ {
				a0r, a0i := x[i+l], x[i+w+l]
				a1r, a1i := x[i+step+l], x[i+step+w+l]
				a2r, a2i := x[i+2*step+l], x[i+2*step+w+l]
				a3r, a3i := x[i+3*step+l], x[i+3*step+w+l]
				t0r, t0i := a0r+a2r, a0i+a2i
				t1r, t1i := a0r-a2r, a0i-a2i
				t2r, t2i := a1r+a3r, a1i+a3i
				t3r, t3i := a1r-a3r, a1i-a3i
				y[o+l], y[o+w+l] = t0r+t2r, t0i+t2i
				b1r, b1i := t1r+t3i, t1i-t3r
				b2r, b2i := t0r-t2r, t0i-t2i
				b3r, b3i := t1r-t3i, t1i+t3r
				o1, o2, o3 := o+ostep, o+2*ostep, o+3*ostep
				y[o1+l], y[o1+w+l] = b1r*tw[0]+b1i*tw[2], b1r*tw[1]+b1i*tw[0]
				y[o2+l], y[o2+w+l] = b2r*tw[3]+b2i*tw[5], b2r*tw[4]+b2i*tw[3]
				y[o3+l], y[o3+w+l] = b3r*tw[6]+b3i*tw[8], b3r*tw[7]+b3i*tw[6]
			}
		}
	}
}

// fftPassDFTGo is a stage of any radix p: the length-p DFT directly,
// b_r = Σ_t a_t exp(-2πi r t/p), pairing t with p-t (p odd).
func fftPassDFTGo(w int, st *fftStage, x, y []float64) {
	p, m, s, es := st.p, st.m, st.s, 2*w
	dft := st.dft
	if dft == nil {
		dft = make([]float64, 2*p)
		for j := 0; j < p; j++ {
			dft[2*j], dft[2*j+1] = fftRoot(j, p)
		}
	}
	step, ostep := s*m*es, s*es
	// Lane l of point t at ar[t*w+l]; the lanes run innermost, each
	// summing the same terms in the same order as a line on its own.
	ar := make([]float64, p*w)
	ai := make([]float64, p*w)
	sr := make([]float64, w)
	si := make([]float64, w)
	for pp := 0; pp < m; pp++ {
		tw := st.tw[3*(p-1)*pp:]
		for q := 0; q < s; q++ {
			i := (q + s*pp) * es
			o := (q + s*p*pp) * es
			for t := 0; t < p; t++ {
				copy(ar[t*w:(t+1)*w], x[i+t*step:i+t*step+w])
				copy(ai[t*w:(t+1)*w], x[i+t*step+w:i+t*step+2*w])
			}
			for r := 0; r < p; r++ {
				clear(sr)
				clear(si)
				j := 0 // r*t mod p, stepped (a division per term was most of the pass)
				for t := 0; t < p; t++ {
					c, sn := dft[2*j], -dft[2*j+1]
					at, bt := ar[t*w:(t+1)*w], ai[t*w:(t+1)*w]
					for l := range sr {
						sr[l] += at[l]*c - bt[l]*sn
						si[l] += at[l]*sn + bt[l]*c
					}
					if j += r; j >= p {
						j -= p
					}
				}
				yr, yi := y[o+r*ostep:o+r*ostep+w], y[o+r*ostep+w:o+r*ostep+2*w]
				if r > 0 {
					k := 3 * (r - 1)
					for l := range sr {
						yr[l], yi[l] = sr[l]*tw[k]+si[l]*tw[k+2], sr[l]*tw[k+1]+si[l]*tw[k]
					}
					continue
				}
				copy(yr, sr)
				copy(yi, si)
			}
		}
	}
}

// fftRealPost is fftRealPostx8 on w lanes: the spectra X[0..h] of real
// lines from the transform z of their packed pairs.
func fftRealPost(w, h int, z, out, rt []float64) {
	if !fftForceGo && fftRealPostSIMD(w, h, z, out, rt) {
		return
	}
	es := 2 * w
	for k := 0; k <= h; k++ {
		i, j := k*es, (h-k)*es
		if k == 0 {
			j = 0
		} else if k == h {
			i = 0
		}
		wr, wi := rt[3*k], rt[3*k+1]
		for l := 0; l < w; l++ {
			zr, zi := z[i+l], z[i+w+l]
			ar, ai := z[j+l], z[j+w+l]
			sr, si := zr+ar, zi-ai
			dr, di := zr-ar, zi+ai
			out[k*es+l] = 0.5 * (sr + wr*di + wi*dr)
			out[k*es+w+l] = 0.5 * (si - wr*dr + wi*di)
		}
	}
}

// fftRealPre is fftRealPrex8 on w lanes: conj(Z') for the forward
// transform of h from the half spectra X[0..h].
func fftRealPre(w, h int, x, out, rt []float64) {
	if !fftForceGo && fftRealPreSIMD(w, h, x, out, rt) {
		return
	}
	es := 2 * w
	for k := 0; k < h; k++ {
		i, j := k*es, (h-k)*es
		wr, wi := rt[3*k], rt[3*k+1]
		for l := 0; l < w; l++ {
			ar, ai := x[i+l], x[i+w+l]
			br, bi := x[j+l], x[j+w+l]
			sr, si := ar+br, ai-bi
			dr, di := ar-br, ai+bi
			out[k*es+l] = sr - wr*di + wi*dr
			out[k*es+w+l] = -(si + wr*dr + wi*di)
		}
	}
}
