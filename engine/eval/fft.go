package eval

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"gonum.org/v1/gonum/dsp/fourier"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func init() { Register("fft", evalFFT) }

// evalFFT transforms the last len(fft_length) dims in float64 and rounds once
// to the result type. Inverse transforms scale by 1/N. Inputs whose
// transformed dims differ from fft_length are zero-padded or truncated.
//
// Every line is an independent 1-D transform (gonum's FFTPACK in float64),
// so lines run on all cores, each goroutine with its own plan; the last axis
// reads its lines from the operand (when nothing is padded) and writes the
// rounded result straight into the output, so a one-axis transform of a c64
// or f32 array makes no full-size float64 copy. The arithmetic of each line
// is the same whatever the split.
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
	switch typ {
	case "FFT", "RFFT", "IFFT":
	case "IRFFT":
	default:
		return Value{}, fmt.Errorf("fft_type %q is not supported", in.FFTType)
	}
	n := work[r-1]
	keep := n // values kept of each transformed last-axis line
	if typ == "RFFT" {
		keep = n/2 + 1
	}
	if typ == "IRFFT" {
		keep = n
	}
	rows := tensor.NumElements(work) / max(n, 1)
	if n == 0 {
		rows = tensor.NumElements(work[:r-1])
	}
	if tensor.NumElements(in.Shape.Dims) != rows*keep {
		return Value{}, fmt.Errorf("fft result shape %v does not match the transform", in.Shape.Dims)
	}
	inverse := typ == "IFFT" || typ == "IRFFT"
	out := tensor.New(in.Shape.Elem, in.Shape.Dims)
	if rows == 0 || keep == 0 {
		return ArrayValue(out), nil
	}
	// The lines of the last axis come from the operand itself when the
	// transform is one-dimensional and nothing is padded or cut; otherwise
	// from a float64 buffer that the other axes were transformed in.
	var buf []complex128
	lineLen := inDims[r-1] // values of a last-axis line in the buffer/operand
	direct := k == 1 && slices.Equal(x.Dims, inDims) && fftDirectType(x.Type)
	if !direct {
		buf = loadC128(x, inDims)
		for ax := r - k; ax < r-1; ax++ {
			transformAxis(buf, inDims, ax, inverse)
		}
	}
	load := func(row int64, line []complex128) {
		if direct {
			loadLine(x, row*lineLen, line[:lineLen])
		} else {
			copy(line, buf[row*lineLen:(row+1)*lineLen])
		}
		if typ == "IRFFT" {
			// Rebuild the Hermitian-symmetric line from its n/2+1 values.
			h := lineLen
			for j := h; j < n; j++ {
				v := line[n-j]
				line[j] = complex(real(v), -imag(v))
			}
		}
	}
	store := fftStore(out, keep, typ == "IRFFT")
	pool := fftPlans(n, fftBatchWidth)
	scale := 1 / float64(n)
	parallelPull(int(rows), int(rows*n*int64(max(1, log2ceil(n)))), func(lo, hi int) {
		p := pool.Get().(*fftPlan)
		defer pool.Put(p)
		for row := int64(lo); row < int64(hi); row += fftBatchWidth {
			cnt := min(fftBatchWidth, int64(hi)-row)
			if typ != "IRFFT" && cnt == fftBatchWidth && p.batch != nil &&
				p.batch.directRows(x, buf, row*lineLen, out, row*keep, keep, inverse, scale) {
				continue
			}
			lines := p.line[:cnt*n]
			clear(lines)
			for c := int64(0); c < cnt; c++ {
				load(row+c, lines[c*n:(c+1)*n])
			}
			if n > 1 {
				p.transformLines(lines, int(cnt), inverse)
				if inverse {
					for j := range lines {
						lines[j] = fftScale(lines[j], scale)
					}
				}
			}
			for c := int64(0); c < cnt; c++ {
				store(row+c, lines[c*n:c*n+keep])
			}
		}
	})
	return ArrayValue(out), nil
}

// fftScale is v * complex(s, 0) as the evaluator's inverse transforms have
// always computed it, NaN operands included: the real part vr*s - 0*vi
// (its NaN vr's when vr is one), the imaginary part vi*s + 0*vr (its NaN
// vi's when vi is one). Go's complex multiply leaves the order of that add,
// and so which NaN it returns, to the compiler; here it is fixed.
func fftScale(v complex128, s float64) complex128 {
	re := real(v)*s - 0*imag(v)
	im := imag(v) * s
	if im == im {
		im += 0 * real(v)
	}
	return complex(re, im)
}

func log2ceil(n int64) int {
	b := 0
	for int64(1)<<b < n {
		b++
	}
	return b
}

// fftPlan is one goroutine's plans and line buffer for transforms of
// length n: gonum's, and the batched passes' when they apply.
type fftPlan struct {
	plan  *fourier.CmplxFFT
	batch *fftBatchPlan
	line  []complex128
}

// fftPlans is a pool of plans for length n with room for lines lines.
func fftPlans(n int64, lines int) *sync.Pool {
	return &sync.Pool{New: func() any {
		p := &fftPlan{line: make([]complex128, int64(lines)*n)}
		if n > 1 {
			p.plan = fourier.NewCmplxFFT(int(n))
			p.batch = newFFTBatchPlan(int(n))
		}
		return p
	}}
}

// transformLines runs the unscaled forward (inverse: backward) transform
// of the cnt lines held one after another in buf, in place: four at a time
// through the batched passes where they apply, the rest through gonum.
func (p *fftPlan) transformLines(buf []complex128, cnt int, inverse bool) {
	n := len(buf) / cnt
	l := 0
	if p.batch != nil {
		for ; l+fftBatchWidth <= cnt; l += fftBatchWidth {
			if !p.batch.transform(buf[l*n:(l+fftBatchWidth)*n], inverse) {
				for c := l; c < l+fftBatchWidth; c++ {
					p.gonumLine(buf[c*n:(c+1)*n], inverse)
				}
			}
		}
	}
	for ; l < cnt; l++ {
		p.gonumLine(buf[l*n:(l+1)*n], inverse)
	}
}

func (p *fftPlan) gonumLine(line []complex128, inverse bool) {
	if inverse {
		p.plan.Sequence(line, line)
	} else {
		p.plan.Coefficients(line, line)
	}
}

// fftDirectType reports whether loadLine reads lines of this type.
func fftDirectType(t dtype.Type) bool {
	return t == dtype.C64 || t == dtype.C128 || t == dtype.F32 || t == dtype.F64
}

// loadLine converts len(line) values of x from element off into line.
func loadLine(x *tensor.Tensor, off int64, line []complex128) {
	m := int64(len(line))
	switch x.Type {
	case dtype.C64:
		for j, v := range x.C64()[off : off+m] {
			line[j] = complex128(v)
		}
	case dtype.C128:
		copy(line, x.C128()[off:off+m])
	case dtype.F32:
		for j, v := range x.F32()[off : off+m] {
			line[j] = complex(float64(v), 0)
		}
	case dtype.F64:
		for j, v := range x.F64()[off : off+m] {
			line[j] = complex(v, 0)
		}
	default:
		panic("fft: loadLine on " + x.Type.String())
	}
}

// fftStore returns a function storing a result line (keep values) as row row
// of out, rounded once to out's type: the real parts for a real out.
func fftStore(out *tensor.Tensor, keep int64, realOut bool) func(row int64, line []complex128) {
	if realOut {
		switch out.Type {
		case dtype.F32:
			o := out.F32()
			return func(row int64, line []complex128) {
				d := o[row*keep : (row+1)*keep]
				for j, v := range line {
					d[j] = float32(real(v))
				}
			}
		case dtype.F64:
			o := out.F64()
			return func(row int64, line []complex128) {
				d := o[row*keep : (row+1)*keep]
				for j, v := range line {
					d[j] = real(v)
				}
			}
		case dtype.C64, dtype.C128:
			// The real parts as complex values with zero imaginary parts.
			return func(row int64, line []complex128) {
				for j, v := range line {
					line[j] = complex(real(v), 0)
				}
				fftStore(out, keep, false)(row, line)
			}
		}
		size := int64(out.Type.Size())
		return func(row int64, line []complex128) {
			for j, v := range line {
				putBits(out.Data[(row*keep+int64(j))*size:], int(size), dtype.FromF64(out.Type, real(v)))
			}
		}
	}
	switch out.Type {
	case dtype.C64:
		o := out.C64()
		return func(row int64, line []complex128) {
			d := o[row*keep : (row+1)*keep]
			for j, v := range line {
				d[j] = complex64(v)
			}
		}
	case dtype.C128:
		o := out.C128()
		return func(row int64, line []complex128) { copy(o[row*keep:(row+1)*keep], line) }
	}
	// A real result of a complex transform: the real parts, rounded once.
	return fftStore(out, keep, true)
}

// loadC128 converts x into a new complex128 array of dims to, keeping the
// overlapping corner: zero-padding or truncating each dim. Rows of the last
// dim are copied whole, on all cores.
func loadC128(x *tensor.Tensor, to []int64) []complex128 {
	from := x.Dims
	r := len(to)
	out := make([]complex128, tensor.NumElements(to))
	if len(out) == 0 {
		return out
	}
	var src []complex128
	if !fftDirectType(x.Type) {
		src = toC128s(x)
	}
	lastFrom, lastTo := from[r-1], to[r-1]
	m := min(lastFrom, lastTo)
	rowsTo := int64(len(out)) / max(lastTo, 1)
	fs := tensor.Strides(from)
	parallelFor(int(rowsTo), func(lo, hi int) {
		for row := int64(lo); row < int64(hi); row++ {
			// The source row of output row row, or none in the padding.
			rem, off, inside := row, int64(0), true
			for d := r - 2; d >= 0; d-- {
				i := rem % to[d]
				rem /= to[d]
				if i >= from[d] {
					inside = false
					break
				}
				off += i * fs[d]
			}
			if !inside || m <= 0 {
				continue
			}
			dst := out[row*lastTo : row*lastTo+m]
			if src != nil {
				copy(dst, src[off:off+m])
			} else {
				loadLine(x, off, dst)
			}
		}
	})
	return out
}

// transformAxis runs an in-place 1-D DFT (inverse: scaled by 1/n) along axis
// ax of buf, whose dims are dims, on all cores. Strided lines are gathered a
// few at a time, so each read of the array takes neighbouring columns.
func transformAxis(buf []complex128, dims []int64, ax int, inverse bool) {
	n := dims[ax]
	if n <= 1 || len(buf) == 0 {
		return
	}
	stride := tensor.Strides(dims)[ax]
	outer := stride * n
	const group = 8
	groups := (stride + group - 1) / group
	units := int64(len(buf)) / outer * groups
	pool := fftPlans(n, group)
	scale := 1 / float64(n)
	parallelPull(int(units), len(buf)*max(1, log2ceil(n)), func(lo, hi int) {
		p := pool.Get().(*fftPlan)
		defer pool.Put(p)
		for u := int64(lo); u < int64(hi); u++ {
			base := u / groups * outer
			i0 := u % groups * group
			g := min(group, stride-i0)
			// Four columns at a time straight through the batched passes;
			// what is left (or not finite) through lines.
			for p.batch != nil && g >= fftBatchWidth && p.batch.columns(buf, base, stride, i0, inverse, scale) {
				i0 += fftBatchWidth
				g -= fftBatchWidth
			}
			if g == 0 {
				continue
			}
			for j := int64(0); j < n; j++ {
				row := buf[base+j*stride+i0 : base+j*stride+i0+g]
				for c, v := range row {
					p.line[int64(c)*n+j] = v
				}
			}
			lines := p.line[:g*n]
			p.transformLines(lines, int(g), inverse)
			if inverse {
				for j := range lines {
					lines[j] = fftScale(lines[j], scale)
				}
			}
			for j := int64(0); j < n; j++ {
				row := buf[base+j*stride+i0 : base+j*stride+i0+g]
				for c := range row {
					row[c] = p.line[int64(c)*n+j]
				}
			}
		}
	})
}
