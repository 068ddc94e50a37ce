package eval

import (
	"math"
	"unsafe"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// Dots of bf16 and f16 operands compute in f32 (see contractionClass). Rather
// than decoding both operands whole into f32 copies before the GEMM (two
// full-size f32 buffers on top of the operands), dotHalfF32 decodes one
// kc-deep slice of the contraction at a time into two reused buffers and
// runs the packed GEMM on each slice, accumulating into the f32 result.
//
// The results are bit for bit those of decode-then-GEMM: decoding is exact
// and elementwise, and the packed GEMM (serial, shared and smallM alike)
// already computes every element of C as, per kc-deep slice of the
// contraction in increasing order, the tile's FMA chain from zero added to
// C. Cutting the contraction at the kernel's own kc boundaries and calling
// it once per slice therefore repeats exactly its own sequence of
// operations. The slices keep each operand's orientation (K contiguous or
// the free dim contiguous), so every call takes the same kernel path as the
// whole product would. Paths whose order is not kc-sliced — gonum's BLAS
// (floatsOnBLAS) and XLA's matrix-vector orders (gemvOrdered) — keep the
// whole-operand decode, as do contractions no deeper than one slice.

// halfOperand reports whether t is an operand dotHalfF32 takes.
func halfOperand(t dtype.Type) bool {
	return t == dtype.BF16 || t == dtype.F16 || t == dtype.F32
}

// dotHalfF32 computes the dot p of lhs and rhs (bf16, f16 or f32, at least
// one of them bf16 or f16) in f32 slice by slice; ok is false when the
// product is left to the whole-operand path.
//
// A dot in YNNPACK's order (ynn non-nil) is sliced this way when every task
// sums in FMA chains over the same K blocks: blocks no deeper than kc are
// the slices (each a chain from zero added to C, as the kernel does per
// slice); deeper blocks keep kc-deep slices and run the chain kernel, which
// continues each block's chains across them. Other YNNPACK plans take the
// whole-operand path.
func dotHalfF32(ev *Evaluator, par int, p *dotPlan, lhs, rhs *tensor.Tensor, ynn *ynnDot) (c []float32, ok bool) {
	if floatsOnBLAS || !halfOperand(lhs.Type) || !halfOperand(rhs.Type) ||
		(lhs.Type == dtype.F32 && rhs.Type == dtype.F32) {
		return nil, false
	}
	kn := kernelFor[float32]()
	ks := 0 // YNNPACK's K block, when deeper than the slices
	if ynn != nil {
		if ks = ynn.uniformKStep(); ks == 0 {
			return nil, false
		}
		// Slices as deep as the blocks when they hold less than half of
		// what the chain path's second accumulator (t, below) would: then
		// each block is one slice, a chain from zero added to C.
		if ks <= kn.kc || kn.chain == nil || (p.m+p.n)*ks <= p.m*p.n/2 {
			kn, ks = kn.withKC(ks), 0
		}
	}
	kc := kn.kc
	if p.k <= kc || p.b*p.m*p.n == 0 || (p.m == 1) != (p.n == 1) {
		return nil, false
	}
	a := newHalfSlicer(lhs, p.lhsPerm, p.nBatch, p.nLhsFree, p.b, p.m, p.k, kc, true)
	b := newHalfSlicer(rhs, p.rhsPerm, p.nBatch, p.nContract, p.b, p.k, p.n, kc, false)
	c = ev.newF32s(p.b*p.m*p.n, true) // the GEMM accumulates into c
	if ks > 0 {
		// YNNPACK's blocks are deeper than the decoded slices: the chain
		// kernel continues each block's FMA chains across its slices, the
		// first block in c, each later one in t, then added to c.
		var t []float32
		for lo := 0; lo < p.k; lo += ks {
			dst := c
			if lo > 0 {
				if t == nil {
					t = make([]float32, len(c))
				} else {
					clear(t)
				}
				dst = t
			}
			for pc := lo; pc < min(p.k, lo+ks); pc += kc {
				d := min(kc, lo+ks-pc, p.k-pc)
				av, la := a.slice(pc, d)
				bv, lb := b.slice(pc, d)
				kn.chain.run(par, p.b, p.m, p.n, d, av, la, bv, lb, dst)
			}
			if lo > 0 {
				addBlock(c, t, kn.name != "avx512")
			}
		}
		return c, true
	}
	for pc := 0; pc < p.k; pc += kc {
		d := min(kc, p.k-pc)
		av, la := a.slice(pc, d)
		bv, lb := b.slice(pc, d)
		kn.run(par, p.b, p.m, p.n, d, av, la, bv, lb, c)
	}
	return c, true
}

// halfSlicer hands out kc-deep slices of the contraction of one operand,
// viewed as a batch of matrices whose K dim is the columns (lhs) or the rows
// (rhs), decoded to f32 into a reused buffer (an f32 operand is viewed in
// place).
type halfSlicer struct {
	typ       dtype.Type
	f32       []float32 // the operand when it is f32
	u16       []uint16  // the operand's 16-bit words, in layout l
	l         gemmLayout
	lhs       bool
	nb, f, kc int // batch, free dim size, slice depth
	kStride   int // l's stride along K
	fStride   int // l's stride along the free dim
	kInner    bool
	buf       []float32
}

func newHalfSlicer(t *tensor.Tensor, perm []int, nBatch, nRows, nb, rows, cols, kc int, lhs bool) *halfSlicer {
	s := &halfSlicer{typ: t.Type, lhs: lhs, nb: nb, kc: kc}
	if t.Type == dtype.F32 {
		s.f32, s.l = asMatrices(asF32(t), t.Dims, perm, nBatch, nRows, rows, cols)
	} else {
		s.u16, s.l = asMatrices(t.U16(), t.Dims, perm, nBatch, nRows, rows, cols)
	}
	if lhs {
		s.f, s.kStride, s.fStride, s.kInner = rows, s.l.cs, s.l.rs, s.l.cs == 1
	} else {
		s.f, s.kStride, s.fStride, s.kInner = cols, s.l.rs, s.l.cs, s.l.cs != 1
	}
	if s.f32 == nil {
		s.buf = make([]float32, nb*s.f*kc)
	}
	return s
}

// slice returns K indices [pc, pc+d) of the operand and their layout.
func (s *halfSlicer) slice(pc, d int) ([]float32, gemmLayout) {
	if s.f32 != nil {
		return s.f32[pc*s.kStride:], s.l
	}
	// The slice keeps the operand's orientation: runs along K (kInner) or
	// along the free dim, decoded run by run.
	var nRuns, runLen int
	var off func(r int) int
	var sl gemmLayout // as (batch, free, K) strides, mapped below
	if s.kInner {
		nRuns, runLen = s.nb*s.f, d
		off = func(r int) int { return r/s.f*s.l.bs + r%s.f*s.fStride + pc }
		sl = gemmLayout{s.f * d, d, 1}
	} else {
		nRuns, runLen = s.nb*d, s.f
		off = func(r int) int { return r/d*s.l.bs + (pc+r%d)*s.kStride }
		sl = gemmLayout{s.f * d, 1, s.f}
	}
	dst := s.buf[:nRuns*runLen]
	parallelForWork(nRuns, nRuns*runLen, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			o := off(r)
			out := dst[r*runLen : (r+1)*runLen]
			if s.typ == dtype.BF16 {
				decodeBF16(out, s.u16[o:o+runLen])
			} else {
				dtype.DecodeF32(s.typ, u16Bytes(s.u16[o:o+runLen]), out)
			}
		}
	})
	if s.lhs { // rows are the free dim, columns K
		return dst, gemmLayout{sl.bs, sl.rs, sl.cs}
	}
	return dst, gemmLayout{sl.bs, sl.cs, sl.rs} // rows are K, columns the free dim
}

// u16Bytes views 16-bit words as their little-endian bytes.
func u16Bytes(s []uint16) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 2*len(s))
}

// addBlock sets c[i] = t[i] + c[i], taking the NaN a GEMM kernel's own final
// add would when both are NaN (c's for the AVX2 kernels, whose add has C as
// its first source, t's for the AVX-512 ones), so that blocks added here
// give the bits of blocks added by the kernel.
func addBlock(c, t []float32, cFirst bool) {
	sseAfterAVX()
	c = c[:len(t)]
	for i, v := range t {
		s := v + c[i]
		if s != s && v != v && c[i] != c[i] {
			w := c[i]
			if !cFirst {
				w = v
			}
			s = math.Float32frombits(math.Float32bits(w) | 0x00400000)
		}
		c[i] = s
	}
}
