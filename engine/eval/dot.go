package eval

import (
	"fmt"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func init() { Register("dot", evalDot) }

// number is the set of compute types the contraction kernels run in: f32 for
// f32 and narrower floats, f64, int64 for every integer (wrapping to the result
// width once at the end, as XLA:CPU's widened accumulation does), and
// complex128 for both complex types.
type number interface {
	float32 | float64 | int64 | complex128
}

// dotPlan describes a dot as a batched [B,M,K]x[B,K,N] product: the operand
// permutations that bring each operand into that order.
type dotPlan struct {
	b, m, k, n int
	lhsPerm    []int // batch, free, contracting
	rhsPerm    []int // batch, contracting, free
}

func planDot(lhs, rhs []int64, dn *hlo.DotDimensionNumbers) (*dotPlan, error) {
	var d hlo.DotDimensionNumbers
	if dn != nil {
		d = *dn
	}
	if len(d.LhsBatch) != len(d.RhsBatch) {
		return nil, fmt.Errorf("dot has %d lhs batch dims but %d rhs batch dims", len(d.LhsBatch), len(d.RhsBatch))
	}
	if len(d.LhsContracting) != len(d.RhsContracting) {
		return nil, fmt.Errorf("dot has %d lhs contracting dims but %d rhs contracting dims", len(d.LhsContracting), len(d.RhsContracting))
	}
	p := &dotPlan{b: 1, m: 1, k: 1, n: 1}
	var err error
	lfree, err := freeDims(lhs, d.LhsBatch, d.LhsContracting, "lhs")
	if err != nil {
		return nil, err
	}
	rfree, err := freeDims(rhs, d.RhsBatch, d.RhsContracting, "rhs")
	if err != nil {
		return nil, err
	}
	for i := range d.LhsBatch {
		a, b := lhs[d.LhsBatch[i]], rhs[d.RhsBatch[i]]
		if a != b {
			return nil, fmt.Errorf("dot batch dimension %d: lhs size %d != rhs size %d", i, a, b)
		}
		p.b *= int(a)
	}
	for i := range d.LhsContracting {
		a, b := lhs[d.LhsContracting[i]], rhs[d.RhsContracting[i]]
		if a != b {
			return nil, fmt.Errorf("dot contracting dimension %d: lhs size %d != rhs size %d", i, a, b)
		}
		p.k *= int(a)
	}
	for _, f := range lfree {
		p.m *= int(lhs[f])
	}
	for _, f := range rfree {
		p.n *= int(rhs[f])
	}
	p.lhsPerm = concatInts(d.LhsBatch, lfree, d.LhsContracting)
	p.rhsPerm = concatInts(d.RhsBatch, d.RhsContracting, rfree)
	return p, nil
}

// freeDims returns the dims of an operand that are neither batch nor
// contracting, in increasing order, checking the attribute's dims are valid.
func freeDims(dims []int64, batch, contracting []int64, side string) ([]int64, error) {
	used := make([]bool, len(dims))
	for _, list := range [][]int64{batch, contracting} {
		for _, d := range list {
			if d < 0 || int(d) >= len(dims) {
				return nil, fmt.Errorf("dot %s dimension %d out of range for rank %d", side, d, len(dims))
			}
			if used[d] {
				return nil, fmt.Errorf("dot %s dimension %d used twice", side, d)
			}
			used[d] = true
		}
	}
	var free []int64
	for i, u := range used {
		if !u {
			free = append(free, int64(i))
		}
	}
	return free, nil
}

func concatInts(lists ...[]int64) []int {
	var out []int
	for _, l := range lists {
		for _, v := range l {
			out = append(out, int(v))
		}
	}
	return out
}

func evalDot(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if len(args) != 2 || args[0].T == nil || args[1].T == nil {
		return Value{}, fmt.Errorf("dot takes two array operands")
	}
	lhs, rhs := args[0].T, args[1].T
	p, err := planDot(lhs.Dims, rhs.Dims, in.DotDims)
	if err != nil {
		return Value{}, err
	}
	out := in.Shape
	if !out.IsArray() || tensor.NumElements(out.Dims) != int64(p.b*p.m*p.n) {
		return Value{}, fmt.Errorf("dot result shape %v does not hold %dx%dx%d elements", tensor.ShapeString(out.Elem, out.Dims), p.b, p.m, p.n)
	}
	par := ev.parallelism()
	c := contractAs(contractionClass(out.Elem, lhs.Type, rhs.Type), lhs, rhs, out.Elem, out.Dims, kernels{
		f32:  func(a, b []float32) []float32 { return dotIn(par, p, lhs.Dims, rhs.Dims, a, b) },
		f64:  func(a, b []float64) []float64 { return dotIn(par, p, lhs.Dims, rhs.Dims, a, b) },
		c128: func(a, b []complex128) []complex128 { return dotIn(par, p, lhs.Dims, rhs.Dims, a, b) },
		i64:  func(a, b []int64) []int64 { return dotIn(par, p, lhs.Dims, rhs.Dims, a, b) },
	})
	return ArrayValue(c), nil
}

func dotIn[T number](par int, p *dotPlan, ldims, rdims []int64, lhs, rhs []T) []T {
	a := permuteTo(lhs, ldims, p.lhsPerm)
	b := permuteTo(rhs, rdims, p.rhsPerm)
	c := make([]T, p.b*p.m*p.n)
	gemm(par, p.b, p.m, p.n, p.k, a, b, c)
	return c
}

// kernels is one contraction instantiated for each compute type.
type kernels struct {
	f32  func(a, b []float32) []float32
	f64  func(a, b []float64) []float64
	c128 func(a, b []complex128) []complex128
	i64  func(a, b []int64) []int64
}

// contractAs converts both operands to the compute type of class, runs that
// type's kernel and stores its result as a typ tensor of dims.
func contractAs(class computeClass, lhs, rhs *tensor.Tensor, typ dtype.Type, dims []int64, k kernels) *tensor.Tensor {
	switch class {
	case classF32:
		return newFromF32(typ, dims, k.f32(toF32s(lhs), toF32s(rhs)))
	case classF64:
		return fromF64s(typ, dims, k.f64(toF64s(lhs), toF64s(rhs)))
	case classC64, classC128:
		return fromC128s(typ, dims, k.c128(toC128s(lhs), toC128s(rhs)))
	}
	return newFromI64(typ, dims, k.i64(toI64s(lhs), toI64s(rhs)))
}

// toI64s converts integers exactly and floats by truncation toward zero.
func toI64s(t *tensor.Tensor) []int64 {
	switch classOf(t.Type) {
	case classF32, classF64, classC64, classC128:
		f := toF64s(t)
		out := make([]int64, len(f))
		for i, v := range f {
			out[i] = int64(v)
		}
		return out
	}
	return asI64(t)
}

// contractionClass picks the arithmetic of a dot or convolution: the widest of
// the result's and operands' classes, so s8 x s8 -> f32 computes in f32 and
// bf16 x bf16 -> bf16 computes in f32 with one rounding at the end (XLA:CPU
// upcasts bf16/f16/f8 dots to f32).
func contractionClass(out dtype.Type, operands ...dtype.Type) computeClass {
	rank := func(c computeClass) int {
		switch c {
		case classC128, classC64:
			return 4
		case classF64:
			return 3
		case classF32:
			return 2
		}
		return 1
	}
	best := classOf(out)
	for _, t := range operands {
		if c := classOf(t); rank(c) > rank(best) {
			best = c
		}
	}
	if best == classPred || best == classUnsigned {
		return classSigned
	}
	return best
}

func (ev *Evaluator) parallelism() int {
	if ev != nil && ev.Options.Parallelism > 0 {
		return ev.Options.Parallelism
	}
	return runtime.GOMAXPROCS(0)
}

// permuteTo returns src (row-major over dims) transposed so that the result's
// dimension i is source dimension perm[i]. The identity permutation returns src.
func permuteTo[T any](src []T, dims []int64, perm []int) []T {
	identity := true
	for i, p := range perm {
		if p != i {
			identity = false
		}
	}
	if identity {
		return src
	}
	out := make([]T, len(src))
	if len(out) == 0 {
		return out
	}
	strides := tensor.Strides(dims)
	r := len(perm)
	pd := make([]int64, r) // permuted sizes
	ps := make([]int64, r) // source stride of each result dim
	for i, p := range perm {
		pd[i], ps[i] = dims[p], strides[p]
	}
	inner, innerStride := pd[r-1], ps[r-1]
	idx := make([]int64, r)
	src0 := int64(0)
	for o := 0; o < len(out); o += int(inner) {
		s := src0
		row := out[o : o+int(inner)]
		for j := range row {
			row[j] = src[s]
			s += innerStride
		}
		for d := r - 2; d >= 0; d-- {
			idx[d]++
			src0 += ps[d]
			if idx[d] < pd[d] {
				break
			}
			src0 -= ps[d] * pd[d]
			idx[d] = 0
		}
	}
	return out
}

// Conversions between tensors of any type and the compute types.

func toF32s(t *tensor.Tensor) []float32 {
	switch classOf(t.Type) {
	case classF32:
		return asF32(t)
	case classF64:
		out := make([]float32, t.NumElements())
		for i, v := range t.F64() {
			out[i] = float32(v)
		}
		return out
	case classUnsigned, classPred:
		out := make([]float32, t.NumElements())
		for i, v := range asU64(t) {
			out[i] = float32(v)
		}
		return out
	case classC64, classC128:
		out := make([]float32, t.NumElements())
		for i, v := range toC128s(t) {
			out[i] = float32(real(v))
		}
		return out
	}
	out := make([]float32, t.NumElements())
	for i, v := range asI64(t) {
		out[i] = float32(v)
	}
	return out
}

func toF64s(t *tensor.Tensor) []float64 {
	out := make([]float64, t.NumElements())
	switch classOf(t.Type) {
	case classF32:
		for i, v := range asF32(t) {
			out[i] = float64(v)
		}
	case classF64:
		return t.F64()
	case classUnsigned, classPred:
		for i, v := range asU64(t) {
			out[i] = float64(v)
		}
	case classC64, classC128:
		for i, v := range toC128s(t) {
			out[i] = real(v)
		}
	default:
		for i, v := range asI64(t) {
			out[i] = float64(v)
		}
	}
	return out
}

func toC128s(t *tensor.Tensor) []complex128 {
	switch t.Type {
	case dtype.C128:
		return t.C128()
	case dtype.C64:
		out := make([]complex128, t.NumElements())
		for i, v := range t.C64() {
			out[i] = complex128(v)
		}
		return out
	}
	out := make([]complex128, t.NumElements())
	for i, v := range toF64s(t) {
		out[i] = complex(v, 0)
	}
	return out
}

// fromF64s stores float64 results in a new tensor of a real float type,
// rounding each value once.
func fromF64s(typ dtype.Type, dims []int64, vals []float64) *tensor.Tensor {
	switch classOf(typ) {
	case classF64:
		out := tensor.New(typ, dims)
		copy(out.F64(), vals)
		return out
	case classF32:
		if typ == dtype.F32 {
			out := tensor.New(typ, dims)
			o := out.F32()
			for i, v := range vals {
				o[i] = float32(v)
			}
			return out
		}
		out := tensor.New(typ, dims)
		size := typ.Size()
		for i, v := range vals {
			putBits(out.Data[i*size:], size, dtype.FromF64(typ, v))
		}
		return out
	case classC64, classC128:
		c := make([]complex128, len(vals))
		for i, v := range vals {
			c[i] = complex(v, 0)
		}
		return fromC128s(typ, dims, c)
	}
	iv := make([]int64, len(vals))
	for i, v := range vals {
		iv[i] = int64(v)
	}
	return newFromI64(typ, dims, iv)
}

// fromC128s stores complex results in a new c64 or c128 tensor.
func fromC128s(typ dtype.Type, dims []int64, vals []complex128) *tensor.Tensor {
	out := tensor.New(typ, dims)
	switch typ {
	case dtype.C128:
		copy(out.C128(), vals)
	case dtype.C64:
		o := out.C64()
		for i, v := range vals {
			o[i] = complex64(v)
		}
	default:
		re := make([]float64, len(vals))
		for i, v := range vals {
			re[i] = real(v)
		}
		return fromF64s(typ, dims, re)
	}
	return out
}

// putBits stores the low size bytes of bits little-endian.
func putBits(dst []byte, size int, bits uint64) {
	for i := 0; i < size; i++ {
		dst[i] = byte(bits >> (8 * i))
	}
}

// Blocked GEMM. Operands are packed into panels so the micro-kernel streams
// through contiguous memory; the 4x4 register tile gives 16 independent
// accumulators, enough to hide the add latency.
const (
	gemmMR = 4
	gemmNR = 4
	gemmKC = 256
	gemmMC = 64
	gemmNC = 2048
)

// gemm computes c[b] = a[b] x bm[b] for row-major a [B,M,K], bm [B,K,N] and
// zeroed c [B,M,N], using up to par goroutines.
func gemm[T number](par, nb, m, n, k int, a, bm, c []T) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		return // c is already zero
	}
	if blasGemm(par, nb, m, n, k, a, bm, c) {
		return
	}
	if nb >= par || m*n*k < 32*32*32 {
		// Whole products per goroutine: enough batches to keep everyone busy,
		// or problems too small to split.
		runParallel(par, nb, func(lo, hi int) {
			w := newGemmWork[T]()
			for b := lo; b < hi; b++ {
				w.product(m, n, k, a[b*m*k:(b+1)*m*k], bm[b*k*n:(b+1)*k*n], c[b*m*n:(b+1)*m*n], 0, m)
			}
		})
		return
	}
	for b := 0; b < nb; b++ {
		ab, bb, cb := a[b*m*k:(b+1)*m*k], bm[b*k*n:(b+1)*k*n], c[b*m*n:(b+1)*m*n]
		blocks := (m + gemmMC - 1) / gemmMC
		runParallel(par, blocks, func(lo, hi int) {
			w := newGemmWork[T]()
			w.product(m, n, k, ab, bb, cb, lo*gemmMC, min(hi*gemmMC, m))
		})
	}
}

// blasGemm runs float and complex products on gonum's BLAS, which measured
// 2.5x faster than the portable kernel below (its inner loops are assembly).
// It reports false for types it does not handle.
func blasGemm[T number](par, nb, m, n, k int, a, bm, c []T) bool {
	impl := gonum.Implementation{}
	// gonum parallelises one large product itself; small batched ones are
	// spread over goroutines here.
	each := func(f func(b int)) {
		if nb == 1 {
			f(0)
			return
		}
		runParallel(par, nb, func(lo, hi int) {
			for b := lo; b < hi; b++ {
				f(b)
			}
		})
	}
	switch a := any(a).(type) {
	case []float32:
		b, c := any(bm).([]float32), any(c).([]float32)
		each(func(i int) {
			impl.Sgemm(blas.NoTrans, blas.NoTrans, m, n, k, 1, a[i*m*k:(i+1)*m*k], k, b[i*k*n:(i+1)*k*n], n, 0, c[i*m*n:(i+1)*m*n], n)
		})
	case []float64:
		b, c := any(bm).([]float64), any(c).([]float64)
		each(func(i int) {
			impl.Dgemm(blas.NoTrans, blas.NoTrans, m, n, k, 1, a[i*m*k:(i+1)*m*k], k, b[i*k*n:(i+1)*k*n], n, 0, c[i*m*n:(i+1)*m*n], n)
		})
	case []complex128:
		b, c := any(bm).([]complex128), any(c).([]complex128)
		each(func(i int) {
			impl.Zgemm(blas.NoTrans, blas.NoTrans, m, n, k, 1, a[i*m*k:(i+1)*m*k], k, b[i*k*n:(i+1)*k*n], n, 0, c[i*m*n:(i+1)*m*n], n)
		})
	default:
		return false
	}
	return true
}

// runParallel splits [0,n) into up to par contiguous chunks run concurrently.
func runParallel(par, n int, f func(lo, hi int)) {
	if par <= 1 || n <= 1 {
		f(0, n)
		return
	}
	chunks := min(par, n)
	var wg sync.WaitGroup
	for i := 0; i < chunks; i++ {
		lo, hi := i*n/chunks, (i+1)*n/chunks
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	wg.Wait()
}

type gemmWork[T number] struct {
	ap, bp []T
}

func newGemmWork[T number]() *gemmWork[T] {
	return &gemmWork[T]{ap: make([]T, gemmMC*gemmKC), bp: make([]T, gemmKC*gemmNC)}
}

// product accumulates rows [r0,r1) of a x b into c.
func (w *gemmWork[T]) product(m, n, k int, a, b, c []T, r0, r1 int) {
	for jc := 0; jc < n; jc += gemmNC {
		nc := min(gemmNC, n-jc)
		for pc := 0; pc < k; pc += gemmKC {
			kc := min(gemmKC, k-pc)
			w.packB(b, n, pc, kc, jc, nc)
			for ic := r0; ic < r1; ic += gemmMC {
				mc := min(gemmMC, r1-ic)
				w.packA(a, k, ic, mc, pc, kc)
				w.macro(c, n, ic, mc, jc, nc, kc)
			}
		}
	}
}

// packB lays b[pc:pc+kc, jc:jc+nc] out as NR-wide column panels, zero-padded.
func (w *gemmWork[T]) packB(b []T, n, pc, kc, jc, nc int) {
	bp := w.bp
	for j := 0; j < nc; j += gemmNR {
		cols := min(gemmNR, nc-j)
		panel := bp[j*kc : j*kc+kc*gemmNR]
		for p := 0; p < kc; p++ {
			row := b[(pc+p)*n+jc+j:]
			dst := panel[p*gemmNR : p*gemmNR+gemmNR]
			for q := 0; q < cols; q++ {
				dst[q] = row[q]
			}
			for q := cols; q < gemmNR; q++ {
				dst[q] = 0
			}
		}
	}
}

// packA lays a[ic:ic+mc, pc:pc+kc] out as MR-tall row panels, zero-padded.
func (w *gemmWork[T]) packA(a []T, k, ic, mc, pc, kc int) {
	ap := w.ap
	for i := 0; i < mc; i += gemmMR {
		rows := min(gemmMR, mc-i)
		panel := ap[i*kc : i*kc+kc*gemmMR]
		for r := 0; r < gemmMR; r++ {
			if r >= rows {
				for p := 0; p < kc; p++ {
					panel[p*gemmMR+r] = 0
				}
				continue
			}
			src := a[(ic+i+r)*k+pc : (ic+i+r)*k+pc+kc]
			for p, v := range src {
				panel[p*gemmMR+r] = v
			}
		}
	}
}

func (w *gemmWork[T]) macro(c []T, n, ic, mc, jc, nc, kc int) {
	for j := 0; j < nc; j += gemmNR {
		bpan := w.bp[j*kc : j*kc+kc*gemmNR]
		cols := min(gemmNR, nc-j)
		for i := 0; i < mc; i += gemmMR {
			apan := w.ap[i*kc : i*kc+kc*gemmMR]
			rows := min(gemmMR, mc-i)
			var t [gemmMR * gemmNR]T
			micro4x4(kc, apan, bpan, &t)
			for r := 0; r < rows; r++ {
				crow := c[(ic+i+r)*n+jc+j:]
				for q := 0; q < cols; q++ {
					crow[q] += t[r*gemmNR+q]
				}
			}
		}
	}
}

// micro4x4 computes the 4x4 tile of the packed panels' product.
func micro4x4[T number](kc int, a, b []T, t *[16]T) {
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 T
	a = a[:kc*4]
	b = b[:kc*4]
	for p := 0; p < len(a); p += 4 {
		av := a[p : p+4 : p+4]
		bv := b[p : p+4 : p+4]
		a0, a1, a2, a3 := av[0], av[1], av[2], av[3]
		b0, b1, b2, b3 := bv[0], bv[1], bv[2], bv[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	*t = [16]T{c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33}
}
