package eval

import "math"

// FFTPACK's complex transform, four lines at a time. fftBatchPasses (the
// simd build, AVX2) runs gonum's FFTPACK radix-2 and radix-4 passes on four
// lines at once, one line per vector lane, with the same operations in the
// same order per line: the same factorization, the same twiddle table
// (computed here by the same formulas), each butterfly's adds, subtracts,
// sign multiplies and negations, and each twiddle product as Go's complex
// multiply computes it (re = wr*xr - wi*xi, im = wr*xi + wi*xr, no fused
// multiply-add). On finite values every one of those operations is exact
// or correctly rounded, so each lane's result is bit for bit gonum's; a
// batch whose input or output is not all finite is redone line by line by
// gonum, so NaN payloads and signs stay gonum's too. Lengths with other
// factors (3, 5, ...) use gonum throughout.

// fftBatchWidth is the number of lines transformed together.
const fftBatchWidth = 4

// fftBatchPlan is one goroutine's batched transform of length n.
type fftBatchPlan struct {
	n       int
	factors []int
	wa      []float64 // FFTPACK's twiddle table (cffti1's wa)
	waF     []float64 // wa with its imaginary parts negated (sign -1: forward)
	c, ch   []float64 // four lines interleaved: value x of lane l at x*4+l
}

// newFFTBatchPlan returns nil when n has a factor other than 2 and 4 in
// FFTPACK's factorization, or the batched passes do not run here.
func newFFTBatchPlan(n int) *fftBatchPlan {
	if n < 2 || !fftBatchAvailable() {
		return nil
	}
	factors := fftpackFactors(n)
	for _, f := range factors {
		if f != 2 && f != 4 {
			return nil
		}
	}
	wa := fftpackTwiddles(n, factors)
	waF := make([]float64, len(wa))
	for i, v := range wa {
		if i%2 == 1 {
			v *= -1 // the passes' sign*wa[i], sign -1
		}
		waF[i] = v
	}
	return &fftBatchPlan{n: n, factors: factors, wa: wa, waF: waF,
		c: make([]float64, 2*n*fftBatchWidth), ch: make([]float64, 2*n*fftBatchWidth)}
}

// fftpackFactors is FFTPACK's factorization of n (cffti1): trial factors
// 3, 4, 2, 5, then odd numbers from 7, each taken as often as it divides,
// a factor 2 moved to the front.
func fftpackFactors(n int) []int {
	tries := [4]int{3, 4, 2, 5}
	var fs []int
	nl, ntry := n, 0
	for j := 0; nl > 1; j++ {
		if j < 4 {
			ntry = tries[j]
		} else {
			ntry += 2
		}
		for nl > 1 && nl%ntry == 0 {
			nl /= ntry
			if ntry == 2 && len(fs) > 0 {
				fs = append([]int{2}, fs...)
			} else {
				fs = append(fs, ntry)
			}
		}
	}
	return fs
}

// fftpackTwiddles is FFTPACK's table of cos/sin pairs for factors (cffti1).
func fftpackTwiddles(n int, factors []int) []float64 {
	wa := make([]float64, 2*n+2)
	argh := 2 * math.Pi / float64(n)
	i, l1 := 1, 1
	for _, ip := range factors {
		ld := 0
		l2 := l1 * ip
		ido := n / l2
		for j := 0; j < ip-1; j++ {
			i1 := i
			wa[i-1], wa[i] = 1, 0
			ld += l1
			fi := 0.0
			argld := float64(ld) * argh
			for ii := 3; ii < 2*ido+2; ii += 2 {
				i += 2
				fi++
				arg := fi * argld
				wa[i-1] = math.Cos(arg)
				wa[i] = math.Sin(arg)
			}
			if ip > 5 {
				wa[i1-1], wa[i1] = wa[i-1], wa[i]
			}
		}
		l1 = l2
	}
	return wa
}

// transform runs the forward (inverse: backward, unscaled) transform of the
// four lines in lines (each n values, one after another), in place; false
// when a value in or out is not finite (the caller then uses gonum).
func (b *fftBatchPlan) transform(lines []complex128, inverse bool) bool {
	n, c := b.n, b.c
	for l := 0; l < fftBatchWidth; l++ {
		for j, v := range lines[l*n : (l+1)*n] {
			c[(2*j)*4+l], c[(2*j+1)*4+l] = real(v), imag(v)
		}
	}
	if !finiteFloats(c) {
		return false
	}
	sign, wa := -1.0, b.waF
	if inverse {
		sign, wa = 1, b.wa
	}
	fftBatchPasses(n, c, b.ch, wa, b.factors, sign)
	if !finiteFloats(c) {
		return false
	}
	for l := 0; l < fftBatchWidth; l++ {
		line := lines[l*n : (l+1)*n]
		for j := range line {
			line[j] = complex(c[(2*j)*4+l], c[(2*j+1)*4+l])
		}
	}
	return true
}

func finiteFloats(xs []float64) bool {
	for _, v := range xs {
		if v-v != 0 {
			return false
		}
	}
	return true
}
