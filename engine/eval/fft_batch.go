package eval

import (
	"math"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

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

// directRows is transform for four consecutive rows of x (n values each,
// from element off) written straight into out (keep values a row, from
// element ooff), scaled by s for an inverse and rounded once to out's
// type, without the complex128 lines in between. It reports false (out's
// rows then partly written) when a kept value is not finite or the types
// are not ones it reads and writes; the caller redoes the rows. A
// non-finite value never turns finite again through the passes' adds,
// subtracts and multiplies, and the first value of each line (the sum of
// the line) is kept, so finite kept values were computed from finite
// values only: gonum's bits.
//
// With src set, the rows come from src (a complex128 buffer) instead of x.
func (b *fftBatchPlan) directRows(x *tensor.Tensor, src []complex128, off int64, out *tensor.Tensor, ooff, keep int64, inverse bool, s float64) bool {
	n, c := b.n, b.c
	if out.Type != dtype.C64 && out.Type != dtype.C128 {
		return false
	}
	for l := 0; l < fftBatchWidth; l++ {
		o := off + int64(l*n)
		if src != nil {
			for j, v := range src[o : o+int64(n)] {
				c[8*j+l], c[8*j+4+l] = real(v), imag(v)
			}
			continue
		}
		switch x.Type {
		case dtype.C64:
			for j, v := range x.C64()[o : o+int64(n)] {
				c[8*j+l], c[8*j+4+l] = float64(real(v)), float64(imag(v))
			}
		case dtype.C128:
			for j, v := range x.C128()[o : o+int64(n)] {
				c[8*j+l], c[8*j+4+l] = real(v), imag(v)
			}
		case dtype.F32:
			for j, v := range x.F32()[o : o+int64(n)] {
				c[8*j+l], c[8*j+4+l] = float64(v), 0
			}
		case dtype.F64:
			for j, v := range x.F64()[o : o+int64(n)] {
				c[8*j+l], c[8*j+4+l] = v, 0
			}
		default:
			return false
		}
	}
	sign, wa := -1.0, b.waF
	if inverse {
		sign, wa = 1, b.wa
	}
	fftBatchPasses(n, c, b.ch, wa, b.factors, sign)
	for l := 0; l < fftBatchWidth; l++ {
		o := ooff + int64(l)*keep
		if out.Type == dtype.C64 {
			d := out.C64()[o : o+keep]
			for j := range d {
				v := complex(c[8*j+l], c[8*j+4+l])
				if inverse {
					v = fftScale(v, s)
				}
				if real(v)-real(v) != 0 || imag(v)-imag(v) != 0 {
					return false
				}
				d[j] = complex64(v)
			}
			continue
		}
		d := out.C128()[o : o+keep]
		for j := range d {
			v := complex(c[8*j+l], c[8*j+4+l])
			if inverse {
				v = fftScale(v, s)
			}
			if real(v)-real(v) != 0 || imag(v)-imag(v) != 0 {
				return false
			}
			d[j] = v
		}
	}
	return true
}

// columns transforms, in place, the four lines of buf at positions
// base + j*stride + i0 + l (lane l, value j): four neighbouring columns of
// a strided axis, read and written a cache line at a time, scaled by s for
// an inverse. It reports false, buf untouched, when a value is not finite
// (the caller redoes the columns through gonum).
func (b *fftBatchPlan) columns(buf []complex128, base, stride, i0 int64, inverse bool, s float64) bool {
	n, c := b.n, b.c
	for j := 0; j < n; j++ {
		row := buf[base+int64(j)*stride+i0 : base+int64(j)*stride+i0+fftBatchWidth]
		for l, v := range row {
			c[8*j+l], c[8*j+4+l] = real(v), imag(v)
		}
	}
	sign, wa := -1.0, b.waF
	if inverse {
		sign, wa = 1, b.wa
	}
	fftBatchPasses(n, c, b.ch, wa, b.factors, sign)
	if !finiteFloats(c) {
		return false
	}
	for j := 0; j < n; j++ {
		row := buf[base+int64(j)*stride+i0 : base+int64(j)*stride+i0+fftBatchWidth]
		for l := range row {
			v := complex(c[8*j+l], c[8*j+4+l])
			if inverse {
				v = fftScale(v, s)
			}
			row[l] = v
		}
	}
	return true
}
