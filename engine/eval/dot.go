package eval

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"unsafe"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func init() { Register("dot", flushingArithmetic(evalDot, flushAlways)) }

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
	// nBatch, nLhsFree and nContract count the dims in each group of the
	// permutations.
	nBatch, nLhsFree, nContract int
	// eigen, when set, is the order of an f32 dot XLA:CPU runs as an
	// Eigen contraction (dot_f32_eigen.go); dotInF32 takes it.
	eigen *f32EigenPlan
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
	p.nBatch, p.nLhsFree, p.nContract = len(d.LhsBatch), len(lfree), len(d.LhsContracting)
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
	class := contractionClass(out.Elem, lhs.Type, rhs.Type)
	var ynn *ynnDot
	var lhsIn, rhsIn *hlo.Instruction
	if len(in.Operands) == 2 {
		lhsIn, rhsIn = in.Operands[0], in.Operands[1]
	}
	if class == classF32 {
		p.eigen = eigenF32Route(p, lhs.Type, rhs.Type, out.Elem, lhsIn, rhsIn)
		if c, ok := dotBF16F32(ev, par, p, lhs, rhs, out.Elem, lhsIn, rhsIn); ok {
			return ArrayValue(adoptF32(out.Elem, out.Dims, c)), nil
		}
		ynn = ynnRoute(p, lhs.Type, rhs.Type, out.Elem, lhsIn, rhsIn)
		if p.eigen == nil {
			if c, ok := dotBF16Pairs(ev, par, p, lhs, rhs, out.Elem, ynn); ok {
				return ArrayValue(adoptF32(out.Elem, out.Dims, c)), nil
			}
			if c, ok := dotHalfF32(ev, par, p, lhs, rhs, ynn); ok {
				return ArrayValue(adoptF32(out.Elem, out.Dims, c)), nil
			}
		}
	}
	if t := dotS8(ev, par, p, lhs, rhs, out); t != nil {
		return ArrayValue(t), nil
	}
	if class == classSigned {
		if t := dotInt32(ev, par, p, lhs, rhs, out); t != nil {
			return ArrayValue(t), nil
		}
	}
	if dotC64EigenApplies(p, lhs.Type, rhs.Type, out.Elem) {
		a, la := asMatrices(lhs.C64(), lhs.Dims, p.lhsPerm, p.nBatch, p.nLhsFree, p.m, p.k)
		b, lb := asMatrices(rhs.C64(), rhs.Dims, p.rhsPerm, p.nBatch, p.nContract, p.k, p.n)
		if p.m >= 2 || c64GemvApplies(p.m, lb) {
			// Storage never cleared (huge pages when large): the dot
			// clears its rows in the goroutines that write them.
			t := &tensor.Tensor{Type: dtype.C64, Dims: slices.Clone(out.Dims), Data: tensor.StorageForWriting(8 * p.b * p.m * p.n)}
			if p.m == 1 {
				dotC64Gemv(p.b, p.n, p.k, a, la, b, lb, t.C64())
			} else {
				dotC64Eigen(par, p.b, p.m, p.n, p.k, a, la, b, lb, t.C64())
			}
			return ArrayValue(t), nil
		}
	}
	c := contractAs(class, lhs, rhs, out.Elem, out.Dims, kernels{
		f32: func(a, b []float32) []float32 { return dotInF32(ev, par, p, lhs.Dims, rhs.Dims, a, b, ynn) },
		f64: func(a, b []float64) []float64 {
			if tasks := ynnRouteF64(p, lhs.Type, rhs.Type, out.Elem, lhsIn, rhsIn); tasks != nil {
				return dotInF64(par, p, lhs.Dims, rhs.Dims, a, b, tasks)
			}
			return dotIn(par, p, lhs.Dims, rhs.Dims, a, b)
		},
		c128: func(a, b []complex128) []complex128 { return dotIn(par, p, lhs.Dims, rhs.Dims, a, b) },
		i64:  func(a, b []int64) []int64 { return dotIn(par, p, lhs.Dims, rhs.Dims, a, b) },
		f32Slices: func(a, b []float32, kc int) []int64 {
			return dotExactSlices(par, p, lhs.Dims, rhs.Dims, a, b, kc)
		},
		byteSlices: func(kc int) []int64 { return dotByteSlices(par, p, lhs, rhs, kc) },
		depth:      int64(p.k),
	})
	return ArrayValue(c), nil
}

// dotS8 computes an s8 x s8 dot with an s32 or u32 result on the VNNI
// kernel (dot_vnni_simd_amd64.go): the exact sums wrapped to 32 bits, as
// the int64 and exact-float paths give them. nil when it does not apply.
func dotS8(ev *Evaluator, par int, p *dotPlan, lhs, rhs *tensor.Tensor, out hlo.Shape) *tensor.Tensor {
	if lhs.Type != dtype.S8 || rhs.Type != dtype.S8 || (out.Elem != dtype.S32 && out.Elem != dtype.U32) || !out.IsArray() {
		return nil
	}
	a, la := asMatrices(lhs.I8(), lhs.Dims, p.lhsPerm, p.nBatch, p.nLhsFree, p.m, p.k)
	b, lb := asMatrices(rhs.I8(), rhs.Dims, p.rhsPerm, p.nBatch, p.nContract, p.k, p.n)
	t := ev.newTensor(out.Elem, out.Dims, false) // every element is set
	if !gemmS8VNNI(par, p.b, p.m, p.n, p.k, a, la, b, lb, t.I32()) {
		return nil
	}
	return t
}

func dotIn[T number](par int, p *dotPlan, ldims, rdims []int64, lhs, rhs []T) []T {
	a, la := asMatrices(lhs, ldims, p.lhsPerm, p.nBatch, p.nLhsFree, p.m, p.k)
	b, lb := asMatrices(rhs, rdims, p.rhsPerm, p.nBatch, p.nContract, p.k, p.n)
	c := make([]T, p.b*p.m*p.n)
	gemmStrided(par, p.b, p.m, p.n, p.k, a, la, b, lb, c)
	return c
}

// dotInF32 is dotIn for f32, taking XLA:CPU's matrix-vector order where
// dot_order.go reproduces it, and YNNPACK's where ynn (dot_ynn.go) says
// XLA:CPU hands the dot to it.
func dotInF32(ev *Evaluator, par int, p *dotPlan, ldims, rdims []int64, lhs, rhs []float32, ynn *ynnDot) []float32 {
	a, la := asMatrices(lhs, ldims, p.lhsPerm, p.nBatch, p.nLhsFree, p.m, p.k)
	b, lb := asMatrices(rhs, rdims, p.rhsPerm, p.nBatch, p.nContract, p.k, p.n)
	if c, ok := gemvOrdered(p, a, la, b, lb); ok {
		return c
	}
	if p.eigen != nil && ynn == nil {
		return dotF32EigenEval(ev, par, p, a, la, b, lb)
	}
	if ynn != nil {
		// A B kept across loop steps is packed once for YNNPACK's K
		// blocks when every element sums in FMA chains over them.
		if p.b == 1 && p.m <= prepackMaxRows {
			if c := ynnPrepacked(ev, par, ynn, p.m, p.n, p.k, a, la, b, lb); c != nil {
				return c
			}
		}
		c := ev.newF32sOver(p.b * p.m * p.n)
		if ks := ynn.uniformKStep(); ks > 0 && p.m > 1 && p.n > 1 &&
			gemmBF16Pairs(par, p.b, p.m, p.n, p.k, ks, bf16Src{f32: a, l: la}, bf16Src{f32: b, l: lb}, c) {
			ev.noteFlushFree(c)
			return c // operands holding bf16 values (converted from bf16)
		}
		if e := ev.takeDotEpilogue(); e != nil && p.b == 1 && max(p.m, p.n, p.k) > ynnTinyMax {
			// As run (runGeneral on blockKernel's runOver), each tile
			// finished by the group reading it (dot_epilogue.go).
			if kn := ynn.blockKernel(p.k); kn != nil && kn.runOverTiles(par, p.m, p.n, p.k, a, la, b, lb, c,
				func(r0, r1, c0, c1 int) { e.tile(c, r0, r1, c0, c1) }) {
				e.ran = true
				return c
			}
		}
		ynn.run(par, p.b, p.m, p.n, p.k, a, la, b, lb, c)
		return c
	}
	if p.b == 1 && p.m <= prepackMaxRows {
		if bp, kn := ev.packedInvariant(b, lb, p.k, p.n); bp != nil {
			c := ev.newF32s(p.m*p.n, true)
			kn.runPrepacked(par, p.m, p.n, p.k, a, la, bp, c)
			return c
		}
	}
	if p.b > 1 && ynnISA != 0 && takesSmall(p.b, p.m, p.n, p.k) {
		// Many small products: the GEMM's own sums (kc-deep FMA chains
		// from +0, blocks added in order) as one task of the batched
		// small-product path, without a GEMM set-up per product.
		kn := kernelFor[float32]()
		y := &ynnDot{tasks: []ynnTask{{i1: p.m, j1: p.n, tk: 1, kstep: kn.kc, fma: true}}, kn: kn}
		c := ev.newF32sOver(p.b * p.m * p.n)
		if y.runTiny(par, p.b, p.m, p.n, p.k, a, la, b, lb, c) {
			return c
		}
		ev.freeF32s(c)
	}
	c := ev.newF32sOver(p.b * p.m * p.n) // the GEMM sets every element
	if p.m > 1 && p.n > 1 && gemmBF16Pairs(par, p.b, p.m, p.n, p.k, kernelFor[float32]().kc, bf16Src{f32: a, l: la}, bf16Src{f32: b, l: lb}, c) {
		ev.noteFlushFree(c)
		return c // operands holding bf16 values (converted from bf16)
	}
	if e := ev.takeDotEpilogue(); e != nil && p.b == 1 && !floatsOnBLAS {
		// As gemmStridedOver, each tile finished by the group reading it.
		if kernelFor[float32]().runOverTiles(par, p.m, p.n, p.k, a, la, b, lb, c, func(r0, r1, c0, c1 int) { e.tile(c, r0, r1, c0, c1) }) {
			e.ran = true
			return c
		}
	}
	gemmStridedOver(par, p.b, p.m, p.n, p.k, a, la, b, lb, c)
	return c
}

// dotBF16Pairs computes a bf16 x bf16 -> bf16 dot on the AVX512-BF16
// kernel (gemmBF16Pairs) in the K blocks the f32 kernels would sum it in
// (YNNPACK's, when its plan is FMA chains over uniform blocks, else the
// kernel's kc); ok is false when the kernel or the operands do not allow
// it. (bf16 x bf16 -> f32 dots take XLA's bf16 kernel order elsewhere.)
func dotBF16Pairs(ev *Evaluator, par int, p *dotPlan, lhs, rhs *tensor.Tensor, out dtype.Type, ynn *ynnDot) ([]float32, bool) {
	if lhs.Type != dtype.BF16 || rhs.Type != dtype.BF16 || out != dtype.BF16 || p.m < 2 || p.n < 2 || p.b*p.m*p.n == 0 {
		return nil, false
	}
	kc := kernelFor[float32]().kc
	if ynn != nil {
		if kc = ynn.uniformKStep(); kc == 0 {
			return nil, false
		}
	}
	a, la := asMatrices(lhs.U16(), lhs.Dims, p.lhsPerm, p.nBatch, p.nLhsFree, p.m, p.k)
	b, lb := asMatrices(rhs.U16(), rhs.Dims, p.rhsPerm, p.nBatch, p.nContract, p.k, p.n)
	c := ev.newF32sOver(p.b * p.m * p.n)
	if !gemmBF16Pairs(par, p.b, p.m, p.n, p.k, kc, bf16Src{u16: a, l: la}, bf16Src{u16: b, l: lb}, c) {
		ev.freeF32s(c)
		return nil, false
	}
	return c, true
}

// newF32sOver is newF32s for storage its caller overwrites whole: never
// cleared, whether it comes from a loop's pool or from the heap
// (tensor.StorageForWriting).
func (ev *Evaluator) newF32sOver(n int) []float32 {
	if ev != nil && ev.recycling() {
		return ev.newF32s(n, false)
	}
	return storageForWriting[float32](n)
}

// storageForWriting is storageOf for a caller that writes every element:
// the storage is not cleared.
func storageForWriting[T number](n int) []T {
	if n == 0 {
		return nil
	}
	b := tensor.StorageForWriting(n * int(unsafe.Sizeof(*new(T))))
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// asMatrices views src (row-major over dims) as a batch of rows×cols
// matrices whose batch, row and column dims are perm's first nBatch, next
// nRows and remaining entries. When the batch dims lead and the row and
// column groups are each contiguous and in order, in either order, the GEMM
// reads src in place (the second case is a transposed operand, as in x·Wᵀ);
// otherwise src is permuted into row-major order first.
func asMatrices[T any](src []T, dims []int64, perm []int, nBatch, nRows, rows, cols int) ([]T, gemmLayout) {
	r := len(perm)
	inOrder := func(from, to, first int) bool {
		for i := from; i < to; i++ {
			if perm[i] != first+i-from {
				return false
			}
		}
		return true
	}
	nCols := r - nBatch - nRows
	if inOrder(0, nBatch, 0) {
		if inOrder(nBatch, r, nBatch) {
			return src, rowMajor(rows, cols)
		}
		if inOrder(nBatch, nBatch+nRows, nBatch+nCols) && inOrder(nBatch+nRows, r, nBatch) {
			return src, colMajor(rows, cols)
		}
	}
	return permuteTo(src, dims, perm), rowMajor(rows, cols)
}

// kernels is one contraction instantiated for each compute type.
type kernels struct {
	f32  func(a, b []float32) []float32
	f64  func(a, b []float64) []float64
	c128 func(a, b []complex128) []complex128
	i64  func(a, b []int64) []int64
	// depth bounds the number of products summed into one output element
	// (K for a dot); 0 when unknown. It lets integer contractions run exactly
	// on the float GEMM (see exactFloatClass).
	depth int64
	// f32Slices, when set, computes an integer contraction exactly on the
	// f32 GEMM in slices of at most kc of the depth, each slice's sums
	// exact in f32, added up in int64 (see exactF32Slice).
	f32Slices func(a, b []float32, kc int) []int64
	// byteSlices, when set, is f32Slices for s8/u8 operands converting one
	// slice of each operand at a time (nil when it does not apply).
	byteSlices func(kc int) []int64
}

// contractAs converts both operands to the compute type of class, runs that
// type's kernel and stores its result as a typ tensor of dims.
func contractAs(class computeClass, lhs, rhs *tensor.Tensor, typ dtype.Type, dims []int64, k kernels) *tensor.Tensor {
	if class == classSigned {
		exact := exactFloatClass(lhs.Type, rhs.Type, k.depth)
		if kc := exactF32Slice(lhs.Type, rhs.Type); exact != classF32 && k.f32Slices != nil && kc >= 256 {
			// Deeper than f32 holds exactly: f32 slices of the depth cost
			// the f32 GEMM's time, half the f64 GEMM's.
			if k.byteSlices != nil && isByteInt(lhs.Type) && isByteInt(rhs.Type) {
				if v := k.byteSlices(int(kc)); v != nil {
					return exactToInts(typ, dims, v)
				}
			}
			return exactToInts(typ, dims, k.f32Slices(toF32s(lhs), toF32s(rhs), int(kc)))
		}
		switch exact {
		case classF32:
			return exactToInts(typ, dims, k.f32(toF32s(lhs), toF32s(rhs)))
		case classF64:
			return newFromI64(typ, dims, floatsToI64(k.f64(toF64s(lhs), toF64s(rhs))))
		}
	}
	switch class {
	case classF32:
		return adoptF32(typ, dims, k.f32(operandF32(lhs), operandF32(rhs)))
	case classF64:
		return adoptF64(typ, dims, k.f64(toF64s(lhs), toF64s(rhs)))
	case classC64, classC128:
		return fromC128s(typ, dims, k.c128(toC128s(lhs), toC128s(rhs)))
	}
	return newFromI64(typ, dims, k.i64(toI64s(lhs), toI64s(rhs)))
}

// adoptF64 is fromF64s for a kernel's freshly allocated result: an f64
// result becomes the tensor's storage without a copy.
func adoptF64(typ dtype.Type, dims []int64, vals []float64) *tensor.Tensor {
	if typ == dtype.F64 && len(vals) > 0 && int64(len(vals)) == tensor.NumElements(dims) &&
		uintptr(unsafe.Pointer(&vals[0]))%16 == 0 {
		return &tensor.Tensor{Type: typ, Dims: slices.Clone(dims), Data: unsafe.Slice((*byte)(unsafe.Pointer(&vals[0])), 8*len(vals))}
	}
	return fromF64s(typ, dims, vals)
}

// adoptF32 is newFromF32 for a kernel's freshly allocated result: an f32
// result becomes the tensor's storage without a copy (for a batch of small
// products the copy cost as much as the products).
// Other types round in chunks on all cores (bf16/f16 results of f32 GEMMs).
func adoptF32(typ dtype.Type, dims []int64, vals []float32) *tensor.Tensor {
	if typ == dtype.F32 && len(vals) > 0 && int64(len(vals)) == tensor.NumElements(dims) &&
		uintptr(unsafe.Pointer(&vals[0]))%16 == 0 {
		return &tensor.Tensor{Type: typ, Dims: slices.Clone(dims), Data: unsafe.Slice((*byte)(unsafe.Pointer(&vals[0])), 4*len(vals))}
	}
	if typ != dtype.BF16 && typ != dtype.F16 {
		return newFromF32(typ, dims, vals)
	}
	out := tensor.New(typ, dims)
	parallelFor(len(vals), func(lo, hi int) {
		if typ == dtype.BF16 {
			encodeBF16(out.U16()[lo:hi], vals[lo:hi])
		} else {
			dtype.EncodeF32(typ, vals[lo:hi], out.Data[2*lo:2*hi])
		}
	})
	return out
}

// encodeBF16 and decodeBF16 are dtype.EncodeF32 and DecodeF32 for bf16 as
// tight loops over the tensor's 16-bit view: round to nearest even keeping
// subnormals, every NaN to the quiet NaN of its sign (checked against dtype's
// loops in TestBF16LoopsMatchDtype).
func encodeBF16(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		b := math.Float32bits(x)
		if b&0x7fffffff > 0x7f800000 {
			dst[i] = uint16(b>>16)&0x8000 | 0x7fc0
			continue
		}
		dst[i] = uint16((b + 0x7fff + (b>>16)&1) >> 16)
	}
}

func decodeBF16(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, b := range src {
		dst[i] = math.Float32frombits(uint32(b) << 16)
	}
}

// operandF32 is toF32s for a contraction operand, decoding bf16 and f16 in
// chunks on all cores (each element converts on its own, so the chunks give
// toF32s's values).
func operandF32(t *tensor.Tensor) []float32 {
	if t.Type != dtype.BF16 && t.Type != dtype.F16 {
		return toF32s(t)
	}
	out := storageForWriting[float32](int(t.NumElements()))
	parallelFor(len(out), func(lo, hi int) {
		if t.Type == dtype.BF16 {
			decodeBF16(out[lo:hi], t.U16()[lo:hi])
		} else {
			dtype.DecodeF32(t.Type, t.Data[2*lo:2*hi], out[lo:hi])
		}
	})
	return out
}

// exactFloatClass picks a float GEMM that computes an integer contraction
// exactly: when every partial sum of depth products of lhs and rhs values is
// an integer below 2^24 (f32) or 2^53 (f64), any summation order gives the
// exact sum, which then wraps to the result type like the int64 path. s8 and
// u8 matmuls, the common quantized case, thus run on the SIMD float kernels.
// It returns classSigned when neither is exact.
func exactFloatClass(a, b dtype.Type, depth int64) computeClass {
	if depth <= 0 {
		return classSigned
	}
	bound := exactMagnitude(a) * exactMagnitude(b) * float64(depth)
	switch {
	case bound <= 1<<24:
		return classF32
	case bound <= 1<<53:
		return classF64
	}
	return classSigned
}

// exactF32Slice is the largest depth whose sums of products of a and b
// values are all integers below 2^24, so exact in f32 in any order (0 when
// the types are not integers of at most 32 bits).
func exactF32Slice(a, b dtype.Type) int64 {
	ma, mb := exactMagnitude(a), exactMagnitude(b)
	if math.IsInf(ma*mb, 1) {
		return 0
	}
	return int64(math.Floor((1 << 24) / (ma * mb)))
}

// dotExactSlices computes an integer dot exactly: the contraction is cut in
// slices of at most kc, each slice's product run on the f32 GEMM (exact, see
// exactF32Slice) and added to the int64 result.
func dotExactSlices(par int, p *dotPlan, ldims, rdims []int64, lhs, rhs []float32, kc int) []int64 {
	a, la := asMatrices(lhs, ldims, p.lhsPerm, p.nBatch, p.nLhsFree, p.m, p.k)
	b, lb := asMatrices(rhs, rdims, p.rhsPerm, p.nBatch, p.nContract, p.k, p.n)
	total := storageForWriting[int64](p.b * p.m * p.n)
	c := storageForWriting[float32](len(total))
	for k0 := 0; k0 < p.k; k0 += kc {
		gemmStridedOver(par, p.b, p.m, p.n, min(kc, p.k-k0), a[k0*la.cs:], la, b[k0*lb.rs:], lb, c)
		addExactSlice(total, c, k0 == 0)
	}
	return total
}

// isByteInt reports whether t is s8 or u8.
func isByteInt(t dtype.Type) bool { return t == dtype.S8 || t == dtype.U8 }

// dotByteSlices is dotExactSlices for an unbatched dot of s8/u8 operands:
// the same slices of the depth, the same f32 GEMM on each (exact), but each
// slice of the operands is widened to f32 only when its turn comes, so no
// f32 copy of a whole operand (four times its bytes) is ever made. It
// returns nil for batched dots.
func dotByteSlices(par int, p *dotPlan, lhs, rhs *tensor.Tensor, kc int) []int64 {
	if p.b != 1 {
		return nil
	}
	m, n, k := p.m, p.n, p.k
	a, la := asMatrices(lhs.Data, lhs.Dims, p.lhsPerm, p.nBatch, p.nLhsFree, m, k)
	b, lb := asMatrices(rhs.Data, rhs.Dims, p.rhsPerm, p.nBatch, p.nContract, k, n)
	total := storageForWriting[int64](m * n)
	c := storageForWriting[float32](m * n)
	as := storageForWriting[float32](m * min(kc, k))
	bs := storageForWriting[float32](min(kc, k) * n)
	for k0 := 0; k0 < k; k0 += kc {
		w := min(kc, k-k0)
		as, bs := as[:m*w], bs[:w*n]
		parallelFor(m, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				widenByteRow(lhs.Type, a, i*la.rs+k0*la.cs, la.cs, as[i*w:(i+1)*w])
			}
		})
		parallelFor(w, func(lo, hi int) {
			for j := lo; j < hi; j++ {
				widenByteRow(rhs.Type, b, (k0+j)*lb.rs, lb.cs, bs[j*n:(j+1)*n])
			}
		})
		gemmStridedOver(par, 1, m, n, w, as, rowMajor(m, w), bs, rowMajor(w, n), c)
		addExactSlice(total, c, k0 == 0)
	}
	return total
}

// addExactSlice adds a slice's exact f32 sums to the int64 totals (sets
// them for the first slice), on all cores.
func addExactSlice(total []int64, c []float32, first bool) {
	parallelFor(len(c), func(lo, hi int) {
		t := total[lo:hi]
		if first {
			for i, v := range c[lo:hi] {
				t[i] = int64(v)
			}
			return
		}
		for i, v := range c[lo:hi] {
			t[i] += int64(v)
		}
	})
}

// widenByteRow sets o[j] to the s8 or u8 element of src at off+j*stride.
func widenByteRow(t dtype.Type, src []byte, off, stride int, o []float32) {
	if t == dtype.S8 {
		for j := range o {
			o[j] = float32(int8(src[off+j*stride]))
		}
		return
	}
	for j := range o {
		o[j] = float32(src[off+j*stride])
	}
}

// exactMagnitude bounds |v| for the values v of an integer type (+Inf for
// other types).
func exactMagnitude(t dtype.Type) float64 {
	switch {
	case t == dtype.Pred:
		return 1
	case t.IsSigned() && t.Bits() <= 32:
		return math.Ldexp(1, t.Bits()-1)
	case t.IsUnsigned() && t.Bits() <= 32:
		return math.Ldexp(1, t.Bits()) - 1
	}
	return math.Inf(1)
}

// exactToInts stores the exact integer sums vals (int64s, or integral
// floats) as a typ tensor, wrapping as newFromI64 does; 32-bit results on
// all cores without an int64 copy.
func exactToInts[T int64 | float32](typ dtype.Type, dims []int64, vals []T) *tensor.Tensor {
	if f, ok := any(vals).([]float32); ok && (typ == dtype.S32 || typ == dtype.U32) && len(f) > 0 &&
		int64(len(f)) == tensor.NumElements(dims) && uintptr(unsafe.Pointer(&f[0]))%16 == 0 {
		// A kernel's fresh f32 result becomes the tensor's storage, each
		// element converted where it lies: no second full-size buffer.
		d := unsafe.Slice((*int32)(unsafe.Pointer(&f[0])), len(f))
		parallelFor(len(f), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				d[i] = int32(int64(f[i]))
			}
		})
		return &tensor.Tensor{Type: typ, Dims: slices.Clone(dims), Data: unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*len(f))}
	}
	if typ == dtype.S32 || typ == dtype.U32 {
		out := tensor.New(typ, dims)
		d := out.I32()
		parallelFor(len(vals), func(lo, hi int) {
			for i, v := range vals[lo:hi] {
				d[lo+i] = int32(int64(v))
			}
		})
		return out
	}
	iv, ok := any(vals).([]int64)
	if !ok {
		iv = make([]int64, len(vals))
		for i, v := range vals {
			iv[i] = int64(v)
		}
	}
	return newFromI64(typ, dims, iv)
}

func floatsToI64[T float32 | float64](vals []T) []int64 {
	out := make([]int64, len(vals))
	for i, v := range vals {
		out[i] = int64(v)
	}
	return out
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

// Conversions between tensors of any type and the compute types.

func toF32s(t *tensor.Tensor) []float32 {
	switch t.Type {
	case dtype.S8:
		return intsToF32(t.I8())
	case dtype.U8:
		return intsToF32(t.Data)
	case dtype.S16:
		return intsToF32(t.I16())
	case dtype.U16:
		return intsToF32(t.U16())
	case dtype.S32:
		return intsToF32(t.I32())
	}
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

// intsToF32 converts integers to f32 (each rounded once, as through int64),
// on all cores.
func intsToF32[T int8 | uint8 | int16 | uint16 | int32](src []T) []float32 {
	out := storageForWriting[float32](len(src))
	parallelFor(len(src), func(lo, hi int) {
		for i, v := range src[lo:hi] {
			out[lo+i] = float32(v)
		}
	})
	return out
}

func toF64s(t *tensor.Tensor) []float64 {
	if classOf(t.Type) == classF64 {
		return t.F64()
	}
	out := make([]float64, t.NumElements())
	switch classOf(t.Type) {
	case classF32:
		for i, v := range asF32(t) {
			out[i] = float64(v)
		}
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
