package eval

import (
	"fmt"
	"slices"
	"strings"

	"gonum.org/v1/gonum/dsp/fourier"

	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func init() { Register("fft", evalFFT) }

// evalFFT transforms the last len(fft_length) dims in float64 and rounds once
// to the result type. Inverse transforms scale by 1/N. Inputs whose
// transformed dims differ from fft_length are zero-padded or truncated.
func evalFFT(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if len(args) != 1 || args[0].T == nil {
		return Value{}, fmt.Errorf("fft takes one array operand")
	}
	x := args[0].T
	lens := in.FFTLength
	k := len(lens)
	r := len(x.Dims)
	if k == 0 || k > 3 || k > r {
		return Value{}, fmt.Errorf("fft_length %v invalid for operand rank %d", lens, r)
	}
	typ := strings.ToUpper(in.FFTType)
	// Logical (full-spectrum) dims of the work array.
	work := slices.Clone(x.Dims)
	copy(work[r-k:], lens)
	// Dims the input occupies in the work array (IRFFT input holds n/2+1).
	inDims := slices.Clone(work)
	if typ == "IRFFT" {
		inDims[r-1] = lens[k-1]/2 + 1
	}
	src := toC128s(x)
	buf := resize(src, x.Dims, inDims)
	switch typ {
	case "FFT", "RFFT":
		for ax := r - k; ax < r; ax++ {
			transformAxis(buf, work, ax, false)
		}
		if typ == "RFFT" {
			outDims := slices.Clone(work)
			outDims[r-1] = lens[k-1]/2 + 1
			buf = resize(buf, work, outDims)
		}
	case "IFFT":
		for ax := r - k; ax < r; ax++ {
			transformAxis(buf, work, ax, true)
		}
	case "IRFFT":
		half := inDims
		for ax := r - k; ax < r-1; ax++ {
			transformAxis(buf, half, ax, true)
		}
		// Rebuild the Hermitian-symmetric last axis, then invert it.
		n := lens[k-1]
		h := half[r-1]
		full := make([]complex128, tensor.NumElements(work))
		for row := int64(0); row*h < int64(len(buf)) && n > 0; row++ {
			line, dst := buf[row*h:(row+1)*h], full[row*n:(row+1)*n]
			for j := int64(0); j < n; j++ {
				if j < h {
					dst[j] = line[j]
				} else {
					v := line[n-j]
					dst[j] = complex(real(v), -imag(v))
				}
			}
		}
		buf = full
		transformAxis(buf, work, r-1, true)
		re := make([]float64, len(buf))
		for i, v := range buf {
			re[i] = real(v)
		}
		return ArrayValue(fromF64s(in.Shape.Elem, in.Shape.Dims, re)), nil
	default:
		return Value{}, fmt.Errorf("fft_type %q is not supported", in.FFTType)
	}
	if tensor.NumElements(in.Shape.Dims) != int64(len(buf)) {
		return Value{}, fmt.Errorf("fft result shape %v does not match the transform", in.Shape.Dims)
	}
	return ArrayValue(fromC128s(in.Shape.Elem, in.Shape.Dims, buf)), nil
}

// resize copies src (dims from) into a zeroed array of dims to, keeping the
// overlapping corner: zero-padding or truncating each dim.
func resize(src []complex128, from, to []int64) []complex128 {
	if slices.Equal(from, to) {
		return slices.Clone(src)
	}
	out := make([]complex128, tensor.NumElements(to))
	common := make([]int64, len(to))
	for i := range to {
		common[i] = min(from[i], to[i])
	}
	fs, ts := tensor.Strides(from), tensor.Strides(to)
	walkIndex(common, func(_ int64, idx []int64) {
		a, b := int64(0), int64(0)
		for d, i := range idx {
			a += i * fs[d]
			b += i * ts[d]
		}
		out[b] = src[a]
	})
	return out
}

// transformAxis runs an in-place 1-D DFT (inverse: scaled by 1/n) along axis
// ax of buf, whose dims are dims.
func transformAxis(buf []complex128, dims []int64, ax int, inverse bool) {
	n := dims[ax]
	if n <= 1 || len(buf) == 0 {
		return
	}
	stride := tensor.Strides(dims)[ax]
	plan := fourier.NewCmplxFFT(int(n))
	line := make([]complex128, n)
	res := make([]complex128, n)
	scale := complex(1/float64(n), 0)
	outer := stride * n
	for base := int64(0); base < int64(len(buf)); base += outer {
		for inner := int64(0); inner < stride; inner++ {
			for j := int64(0); j < n; j++ {
				line[j] = buf[base+inner+j*stride]
			}
			if inverse {
				plan.Sequence(res, line)
			} else {
				plan.Coefficients(res, line)
			}
			for j := int64(0); j < n; j++ {
				v := res[j]
				if inverse {
					v *= scale
				}
				buf[base+inner+j*stride] = v
			}
		}
	}
}
