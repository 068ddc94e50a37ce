package eval

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func init() { Register("fft", evalFFT) }

// evalFFT transforms the last len(fft_length) dims in float64 and rounds once
// to the result type. Inverse transforms scale by 1/N. Inputs whose
// transformed dims differ from fft_length are zero-padded or truncated.
//
// Lines are transformed a batch of fftLanes() at a time (fft_plan.go), the
// batches on all cores. The last axis reads its lines from the operand
// (when nothing is padded) and writes the rounded result straight into the
// output. Multi-dimensional transforms run the last axis first into a
// complex128 buffer (rfft: only the n/2+1 kept values), the other axes in
// place there, then round once; irfft runs the other axes first and the
// complex-to-real last axis into the output.
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
	rows := tensor.NumElements(work) / max(n, 1)
	if n == 0 {
		rows = tensor.NumElements(work[:r-1])
	}
	if tensor.NumElements(in.Shape.Dims) != rows*keep {
		return Value{}, fmt.Errorf("fft result shape %v does not match the transform", in.Shape.Dims)
	}
	inverse := typ == "IFFT" || typ == "IRFFT"
	if rows == 0 || keep == 0 || n == 0 {
		return ArrayValue(tensor.New(in.Shape.Elem, in.Shape.Dims)), nil
	}
	// Every result value is written below (each row's keep values).
	out := ev.newTensor(in.Shape.Elem, in.Shape.Dims, false)
	job := newFFTRowJob(typ, int(n), int(inDims[r-1]), int(keep))
	// The last axis's lines come from the operand itself when nothing is
	// padded or cut; otherwise from a complex128 copy of it.
	if slices.Equal(x.Dims, inDims) && fftDirectType(x.Type) {
		job.x = x
	} else {
		job.src = loadC128(x, inDims)
	}
	if typ == "IRFFT" {
		if k > 1 {
			if job.src == nil {
				job.src = loadC128(x, inDims)
				job.x = nil
			}
			for ax := r - k; ax < r-1; ax++ {
				fftColumns(job.src, inDims, ax, true, nil)
			}
		}
		job.out = out
		job.runRows(rows)
		return ArrayValue(out), nil
	}
	if k == 1 {
		job.out = out
		job.runRows(rows)
		return ArrayValue(out), nil
	}
	outDims := slices.Clone(work)
	outDims[r-1] = keep
	if out.Type == dtype.C128 {
		job.dst = out.C128()
	} else {
		// Written whole by the rows.
		b := tensor.StorageForWriting(int(rows*keep) * 16)
		job.dst = unsafe.Slice((*complex128)(unsafe.Pointer(unsafe.SliceData(b))), rows*keep)
	}
	job.runRows(rows)
	for ax := r - k; ax < r-1; ax++ {
		var o64 []float32
		if ax == r-2 && out.Type == dtype.C64 {
			o64 = f32View(out) // the last axis rounds straight into the result
		}
		fftColumns(job.dst, outDims, ax, inverse, o64)
	}
	if out.Type != dtype.C128 && out.Type != dtype.C64 {
		store := fftStore(out, keep, false)
		parallelFor(int(rows), func(lo, hi int) {
			for row := int64(lo); row < int64(hi); row++ {
				store(row, job.dst[row*keep:(row+1)*keep])
			}
		})
	}
	return ArrayValue(out), nil
}

// The ways a last-axis line is loaded into a batch and stored from it.
const (
	fftModeC      = iota // complex transform of length n
	fftModeRPack         // rfft, n even: the n/2 packed pairs, then the twiddle pass
	fftModeRFull         // rfft, n odd: complex transform of the real line
	fftModeIRHalf        // irfft, n even: the twiddle pass, then n/2 packed pairs
	fftModeIRFull        // irfft, n odd: complex transform of the Hermitian line
)

// fftRowJob transforms rows of the last axis from x (or src) into out
// (rounded once to its type) or dst.
type fftRowJob struct {
	mode          int
	n             int // logical length
	inverse       bool
	w             int
	plan          *fftCPlan // the complex transform (n, or n/2 packed)
	rt            []float64 // packing twiddles of the real modes
	lineLen, keep int       // values per source row, per result row
	x             *tensor.Tensor
	src           []complex128
	out           *tensor.Tensor
	dst           []complex128
}

func newFFTRowJob(typ string, n, lineLen, keep int) *fftRowJob {
	j := &fftRowJob{n: n, w: fftLanes(), lineLen: lineLen, keep: keep}
	j.inverse = typ == "IFFT" || typ == "IRFFT"
	lc := n
	switch {
	case typ == "RFFT" && n%2 == 0:
		j.mode, lc = fftModeRPack, n/2
	case typ == "RFFT":
		j.mode = fftModeRFull
	case typ == "IRFFT" && n%2 == 0:
		j.mode, lc = fftModeIRHalf, n/2
	case typ == "IRFFT":
		j.mode = fftModeIRFull
	}
	if j.mode == fftModeRPack || j.mode == fftModeIRHalf {
		j.rt = fftRealTwiddles(n)
	}
	j.plan = fftCPlanFor(lc, j.w)
	return j
}

// fftWork is one goroutine's batch buffers.
type fftWork struct {
	a, b, c []float64
	line    []complex128
}

func (j *fftRowJob) newWork() *fftWork {
	sz := max(j.plan.bufLen(), 2*j.w*(j.plan.n+1))
	return &fftWork{a: make([]float64, sz), b: make([]float64, sz), c: make([]float64, sz),
		line: make([]complex128, max(j.lineLen, j.n, j.keep))}
}

func (j *fftRowJob) runRows(rows int64) {
	if n1, n2 := fftSplit(j.plan.n); j.plan.n >= fftFourStepMin && n1 > 0 {
		for row := int64(0); row < rows; row++ {
			j.longRow(row, n1, n2)
		}
		return
	}
	w := int64(j.w)
	batches := (rows + w - 1) / w
	var pool sync.Pool
	cost := int(rows) * j.n * max(1, log2ceil(int64(j.n)))
	parallelPull(int(batches), cost, func(lo, hi int) {
		wk, _ := pool.Get().(*fftWork)
		if wk == nil {
			wk = j.newWork()
		}
		defer pool.Put(wk)
		for b := int64(lo); b < int64(hi); b++ {
			r0 := b * w
			j.batch(wk, r0, int(min(w, rows-r0)))
		}
	})
}

// fftFourStepMin is the complex length from which each line is
// transformed on its own, on all cores, as an n1 x n2 matrix (fftFourStep)
// rather than w lines at once (whose buffers would outgrow the caches and
// leave lanes idle when there are few lines). A variable for tests.
var fftFourStepMin = 1 << 15

// fftSplit is n = n1*n2 with n1 the largest divisor of n up to sqrt(n), or
// 0, 0 when that is below 16.
func fftSplit(n int) (int, int) {
	for n1 := int(math.Sqrt(float64(n))); n1 >= 16; n1-- {
		if n%n1 == 0 {
			return n1, n / n1
		}
	}
	return 0, 0
}

// c128Floats views complex128s as their float64 parts (the layout of a
// one-lane batch).
func c128Floats(c []complex128) []float64 {
	if len(c) == 0 {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(c))), 2*len(c))
}

// fftFourStep returns the forward DFT of x (length n1*n2, left as it was):
// DFTs of length n1 down the columns of x as an n1 x n2 matrix, twiddles
// w^(k1 t2), DFTs of length n2 along the rows, then the transpose.
func fftFourStep(x []complex128, n1, n2 int) []complex128 {
	n := n1 * n2
	buf := slices.Clone(x)
	fftColumns(buf, []int64{int64(n1), int64(n2)}, 0, false, nil)
	// w^j = hi[j>>10] * lo[j&1023], each from its own angle.
	const bits = 10
	lo := make([]complex128, 1<<bits)
	hi := make([]complex128, n>>bits+1)
	for i := range lo {
		c, sn := fftRoot(i, n)
		lo[i] = complex(c, -sn)
	}
	for i := range hi {
		c, sn := fftRoot(i<<bits%n, n)
		hi[i] = complex(c, -sn)
	}
	parallelForWork(n1, n*4, func(a, b int) {
		for k1 := a; k1 < b; k1++ {
			row := buf[k1*n2 : (k1+1)*n2]
			j := 0
			for t2 := range row {
				row[t2] *= hi[j>>bits] * lo[j&(1<<bits-1)]
				if j += k1; j >= n {
					j -= n
				}
			}
		}
	})
	rows := newFFTRowJob("FFT", n2, n2, n2)
	rows.src = buf
	rows.dst = make([]complex128, n)
	rows.runRows(int64(n1))
	out := buf
	const blk = 32
	z := rows.dst
	parallelFor((n2+blk-1)/blk, func(a, b int) {
		for k2b := a * blk; k2b < min(b*blk, n2); k2b += blk {
			for k1 := 0; k1 < n1; k1++ {
				for k2 := k2b; k2 < min(k2b+blk, n2); k2++ {
					out[k2*n1+k1] = z[k1*n2+k2]
				}
			}
		}
	})
	return out
}

// longRow transforms row row by fftFourStep (the line alone on all cores).
func (j *fftRowJob) longRow(row int64, n1, n2 int) {
	n, h := j.n, j.n/2
	lc := j.plan.n
	ll := j.lineLen
	var line []complex128
	if j.src != nil {
		line = j.src[row*int64(ll) : (row+1)*int64(ll)]
	} else {
		line = make([]complex128, ll)
		loadLine(j.x, row*int64(ll), line)
	}
	at := func(e int) complex128 {
		if e < ll {
			return line[e]
		}
		return 0
	}
	z := make([]complex128, lc)
	switch j.mode {
	case fftModeC:
		for e := range z {
			v := at(e)
			if j.inverse {
				v = complex(real(v), -imag(v))
			}
			z[e] = v
		}
	case fftModeRPack:
		for e := range z {
			z[e] = complex(real(at(2*e)), real(at(2*e+1)))
		}
	case fftModeRFull:
		for e := range z {
			z[e] = complex(real(at(e)), 0)
		}
	case fftModeIRHalf:
		x := make([]complex128, h+1)
		for e := range x {
			x[e] = at(e)
		}
		x[0], x[h] = complex(real(x[0]), 0), complex(real(x[h]), 0)
		fftRealPre(1, h, c128Floats(x), c128Floats(z), j.rt)
	case fftModeIRFull:
		for e := range z {
			if e <= h {
				v := at(e)
				z[e] = complex(real(v), -imag(v))
			} else {
				z[e] = at(n - e)
			}
		}
	}
	r := fftFourStep(z, n1, n2)
	s := 1 / float64(n)
	res := make([]complex128, j.keep)
	switch j.mode {
	case fftModeC:
		for e := range res {
			v := r[e]
			if j.inverse {
				v = complex(real(v)*s, -imag(v)*s)
			}
			res[e] = v
		}
	case fftModeRPack:
		fftRealPost(1, h, c128Floats(r), c128Floats(res), j.rt)
	case fftModeRFull:
		copy(res, r)
	case fftModeIRHalf:
		for e := 0; e < h; e++ {
			res[2*e] = complex(real(r[e])*s, 0)
			res[2*e+1] = complex(-imag(r[e])*s, 0)
		}
	case fftModeIRFull:
		for e := range res {
			res[e] = complex(real(r[e])*s, 0)
		}
	}
	if j.dst != nil {
		copy(j.dst[row*int64(j.keep):], res)
		return
	}
	fftStore(j.out, int64(j.keep), j.mode == fftModeIRHalf || j.mode == fftModeIRFull)(row, res)
}

// srcLine is row row of the source as complex128 values.
func (j *fftRowJob) srcLine(wk *fftWork, row int64) []complex128 {
	ll := int64(j.lineLen)
	if j.src != nil {
		return j.src[row*ll : (row+1)*ll]
	}
	line := wk.line[:ll]
	loadLine(j.x, row*ll, line)
	return line
}

// f32View is the float32s of a c64 or f32 tensor's data.
func f32View(t *tensor.Tensor) []float32 {
	if len(t.Data) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&t.Data[0])), len(t.Data)/4)
}

// elemAt is element i of x as complex128.
func (j *fftRowJob) elemAt(i int64) complex128 {
	if j.src != nil {
		return j.src[i]
	}
	switch j.x.Type {
	case dtype.C64:
		return complex128(j.x.C64()[i])
	case dtype.C128:
		return j.x.C128()[i]
	case dtype.F32:
		return complex(float64(j.x.F32()[i]), 0)
	default:
		return complex(j.x.F64()[i], 0)
	}
}

// fastLoad moves the leading positions of full batches of c64 / f32 rows
// into the lanes with vector transposes; it returns how many it moved.
func (j *fftRowJob) fastLoad(wk *fftWork, a []float64, r0 int64, cnt int) int {
	if j.x == nil || cnt != j.w {
		return 0
	}
	ll := j.lineLen
	switch {
	case j.mode == fftModeC && j.x.Type == dtype.C64 && ll == j.n:
		return fftPairsInSIMD(j.w, f32View(j.x), 2*int(r0)*ll, 2*ll, j.n, j.inverse, a)
	case j.mode == fftModeRPack && j.x.Type == dtype.F32 && ll == j.n:
		return fftPairsInSIMD(j.w, f32View(j.x), int(r0)*ll, ll, j.n/2, false, a)
	case j.mode == fftModeIRHalf && j.x.Type == dtype.C64 && ll == j.n/2+1:
		return fftPairsInSIMD(j.w, f32View(j.x), 2*int(r0)*ll, 2*ll, ll, false, wk.c)
	}
	return 0
}

// fastStore is fastLoad's counterpart for the results.
func (j *fftRowJob) fastStore(res []float64, r0 int64, cnt int) int {
	if cnt != j.w {
		return 0
	}
	kp, s := j.keep, 1/float64(j.n)
	if j.dst != nil {
		switch j.mode {
		case fftModeC:
			return fftRowsOutC128SIMD(j.w, res, j.n, j.inverse, s, -s, j.dst, int(r0)*kp, kp)
		case fftModeRPack:
			return fftRowsOutC128SIMD(j.w, res, kp, false, 1, 1, j.dst, int(r0)*kp, kp)
		}
		return 0
	}
	switch {
	case j.mode == fftModeC && j.out.Type == dtype.C64:
		return fftPairsOutSIMD(j.w, res, j.n, j.inverse, s, -s, f32View(j.out), 2*int(r0)*kp, 2*kp)
	case j.mode == fftModeRPack && j.out.Type == dtype.C64:
		return fftPairsOutSIMD(j.w, res, kp, false, 1, 1, f32View(j.out), 2*int(r0)*kp, 2*kp)
	case j.mode == fftModeIRHalf && j.out.Type == dtype.F32:
		return fftPairsOutSIMD(j.w, res, j.n/2, true, s, -s, f32View(j.out), int(r0)*kp, kp)
	}
	return 0
}

// batch transforms rows r0..r0+cnt-1 (cnt <= w; missing lanes are zero).
func (j *fftRowJob) batch(wk *fftWork, r0 int64, cnt int) {
	w, n := j.w, j.n
	es := 2 * w
	lc := j.plan.n
	a := wk.a[:lc*es]
	h := n / 2
	e0 := j.fastLoad(wk, a, r0, cnt)
	for l := 0; l < w; l++ {
		if l >= cnt {
			for e := 0; e < lc; e++ {
				a[e*es+l], a[e*es+w+l] = 0, 0
			}
			if j.mode == fftModeIRHalf {
				for e := 0; e <= h; e++ {
					wk.c[e*es+l], wk.c[e*es+w+l] = 0, 0
				}
			}
			continue
		}
		var at func(e int) complex128
		if e0 > 0 {
			// Only a tail is left: read it element by element.
			base := (r0 + int64(l)) * int64(j.lineLen)
			at = func(e int) complex128 { return j.elemAt(base + int64(e)) }
		} else {
			line := j.srcLine(wk, r0+int64(l))
			at = func(e int) complex128 {
				if e < len(line) {
					return line[e]
				}
				return 0
			}
		}
		switch j.mode {
		case fftModeC:
			sg := 1.0
			if j.inverse {
				sg = -1
			}
			for e := e0; e < n; e++ {
				v := at(e)
				a[e*es+l], a[e*es+w+l] = real(v), sg*imag(v)
			}
		case fftModeRPack:
			for e := e0; e < h; e++ {
				a[e*es+l], a[e*es+w+l] = real(at(2*e)), real(at(2*e+1))
			}
		case fftModeRFull:
			for e := e0; e < n; e++ {
				a[e*es+l], a[e*es+w+l] = real(at(e)), 0
			}
		case fftModeIRHalf:
			c := wk.c
			for e := e0; e <= h; e++ {
				v := at(e)
				c[e*es+l], c[e*es+w+l] = real(v), imag(v)
			}
		case fftModeIRFull:
			for e := e0; e < n; e++ {
				var v complex128
				if e <= h {
					v = at(e)
					v = complex(real(v), -imag(v))
				} else {
					v = at(n - e)
				}
				a[e*es+l], a[e*es+w+l] = real(v), imag(v)
			}
		}
	}
	if j.mode == fftModeIRHalf {
		for l := 0; l < w; l++ {
			wk.c[w+l], wk.c[h*es+w+l] = 0, 0
		}
		fftRealPre(w, h, wk.c, a, j.rt)
	}
	res := j.plan.run(wk.a, wk.b)
	if j.mode == fftModeRPack {
		fftRealPost(w, h, res, wk.c, j.rt)
		res = wk.c
	}
	e0 = j.fastStore(res, r0, cnt)
	sseAfterAVX()
	s := 1 / float64(n)
	realOut := j.mode == fftModeIRHalf || j.mode == fftModeIRFull
	var store func(row int64, line []complex128)
	if j.dst == nil && e0 == 0 {
		store = fftStore(j.out, int64(j.keep), realOut)
	}
	for l := 0; l < cnt; l++ {
		if e0 > 0 && j.dst != nil {
			// The tail, value by value.
			base := (r0 + int64(l)) * int64(j.keep)
			for e := e0; e < j.keep; e++ {
				v := complex(res[e*es+l], res[e*es+w+l])
				if j.inverse {
					v = complex(real(v)*s, -imag(v)*s)
				}
				j.dst[base+int64(e)] = v
			}
			continue
		}
		if e0 > 0 {
			// The tail, value by value.
			base := (r0 + int64(l)) * int64(j.keep)
			switch j.mode {
			case fftModeC:
				o := j.out.C64()
				for e := e0; e < n; e++ {
					v := complex(res[e*es+l], res[e*es+w+l])
					if j.inverse {
						v = complex(real(v)*s, -imag(v)*s)
					}
					o[base+int64(e)] = complex64(v)
				}
			case fftModeRPack:
				o := j.out.C64()
				for e := e0; e <= h; e++ {
					o[base+int64(e)] = complex64(complex(res[e*es+l], res[e*es+w+l]))
				}
			case fftModeIRHalf:
				o := j.out.F32()
				for e := e0; e < h; e++ {
					o[base+int64(2*e)] = float32(res[e*es+l] * s)
					o[base+int64(2*e+1)] = float32(-res[e*es+w+l] * s)
				}
			}
			continue
		}
		line := wk.line[:j.keep]
		switch j.mode {
		case fftModeC:
			if j.inverse {
				for e := range line {
					line[e] = complex(res[e*es+l]*s, -res[e*es+w+l]*s)
				}
			} else {
				for e := range line {
					line[e] = complex(res[e*es+l], res[e*es+w+l])
				}
			}
		case fftModeRPack, fftModeRFull:
			for e := range line {
				line[e] = complex(res[e*es+l], res[e*es+w+l])
			}
		case fftModeIRHalf:
			for e := 0; e < h; e++ {
				line[2*e] = complex(res[e*es+l]*s, 0)
				line[2*e+1] = complex(-res[e*es+w+l]*s, 0)
			}
		case fftModeIRFull:
			for e := range line {
				line[e] = complex(res[e*es+l]*s, 0)
			}
		}
		row := r0 + int64(l)
		if j.dst != nil {
			copy(j.dst[row*int64(j.keep):], line)
		} else {
			store(row, line)
		}
	}
}

func log2ceil(n int64) int {
	b := 0
	for int64(1)<<b < n {
		b++
	}
	return b
}

// fftColumns runs an in-place 1-D DFT (inverse: scaled by 1/n) along axis
// ax of buf, whose dims are dims, on all cores: w neighbouring columns at
// a time, one per lane, read and written a cache line at a time. With o64
// set (the float32 pairs of a c64 array of the same dims) the results go
// there, rounded once, instead of back into buf.
func fftColumns(buf []complex128, dims []int64, ax int, inverse bool, o64 []float32) {
	n := int(dims[ax])
	if len(buf) == 0 {
		return
	}
	w := fftLanes()
	plan := fftCPlanFor(max(n, 1), w)
	stride := int(tensor.Strides(dims)[ax])
	outer := stride * n
	groups := (stride + w - 1) / w
	units := len(buf) / outer * groups
	s := 1 / float64(n)
	sg := 1.0
	if inverse {
		sg = -1
	}
	var pool sync.Pool
	es := 2 * w
	parallelPull(units, len(buf)*max(1, log2ceil(int64(n))), func(lo, hi int) {
		wk, _ := pool.Get().(*fftWork)
		if wk == nil {
			wk = &fftWork{a: make([]float64, plan.bufLen()), b: make([]float64, plan.bufLen())}
		}
		defer pool.Put(wk)
		for u := lo; u < hi; u++ {
			base := u / groups * outer
			i0 := u % groups * w
			g := min(w, stride-i0)
			a := wk.a
			if g < w || !fftColsInSIMD(w, buf, base+i0, stride, n, inverse, a) {
				for e := 0; e < n; e++ {
					row := buf[base+e*stride+i0 : base+e*stride+i0+g]
					for l, v := range row {
						a[e*es+l], a[e*es+w+l] = real(v), sg*imag(v)
					}
					for l := g; l < w; l++ {
						a[e*es+l], a[e*es+w+l] = 0, 0
					}
				}
			}
			res := a
			if n > 1 {
				res = plan.run(a, wk.b)
			}
			if g == w && fftColsOutSIMD(w, res, n, inverse, s, -s, buf, o64, base+i0, stride) {
				continue
			}
			sseAfterAVX()
			for e := 0; e < n; e++ {
				at := base + e*stride + i0
				for l := 0; l < g; l++ {
					v := complex(res[e*es+l], res[e*es+w+l])
					if inverse {
						v = complex(real(v)*s, -imag(v)*s)
					}
					if o64 != nil {
						o64[2*(at+l)], o64[2*(at+l)+1] = float32(real(v)), float32(imag(v))
					} else {
						buf[at+l] = v
					}
				}
			}
		}
	})
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
