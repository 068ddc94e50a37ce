package eval

import (
	"sync"
	"sync/atomic"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// Integer dots of 32-bit operands (s32 x s32 and the like) have no exact
// float route (their products pass 2^53), and the int64 GEMM ran them a
// scalar multiply-add at a time. Results of at most 32 bits only keep their
// sums' low bits, though, and those low 32 bits are the sums of the
// products' low 32 bits taken mod 2^32 in any order: wrapping int32
// arithmetic is associative and commutative. dotInt32 therefore multiplies
// and adds in int32 (wrapping, VPMULLD/VPADDD a vector at a time where the
// simd experiment builds dot_int32_simd_amd64.go), which gives the bits the
// int64 path wrapped to the result type gives, in whatever order the tiles
// and goroutines sum.

// int32Operand reports whether t's values are integers of at most 32 bits
// (signed or unsigned; their low 32 bits are all the wrapped sum needs).
func int32Operand(t dtype.Type) bool {
	switch t {
	case dtype.S8, dtype.S16, dtype.S32, dtype.U8, dtype.U16, dtype.U32:
		return true
	}
	return false
}

// int32DotResult reports whether t is an integer result of at most 32 bits that
// newFromI64 wraps to its width (so only the sum's low 32 bits matter).
func int32DotResult(t dtype.Type) bool {
	switch t {
	case dtype.S8, dtype.S16, dtype.S32, dtype.U8, dtype.U16, dtype.U32:
		return true
	}
	return false
}

// dotInt32 computes an integer dot whose sums would otherwise run on the
// int64 GEMM (no exact f32/f64 route, see contractAs) with wrapping int32
// arithmetic; nil when the types do not allow it.
func dotInt32(ev *Evaluator, par int, p *dotPlan, lhs, rhs *tensor.Tensor, out hlo.Shape) *tensor.Tensor {
	if p.k == 0 || p.b*p.m*p.n == 0 || !out.IsArray() || !int32Operand(lhs.Type) || !int32Operand(rhs.Type) || !int32DotResult(out.Elem) {
		return nil
	}
	if exactFloatClass(lhs.Type, rhs.Type, int64(p.k)) != classSigned || exactF32Slice(lhs.Type, rhs.Type) >= 256 {
		return nil // the exact float routes (contractAs) keep these
	}
	if c := dotInt32Exact(ev, par, p, lhs, rhs, out); c != nil {
		return c
	}
	a, la := asMatrices(int32Values(lhs), lhs.Dims, p.lhsPerm, p.nBatch, p.nLhsFree, p.m, p.k)
	b, lb := asMatrices(int32Values(rhs), rhs.Dims, p.rhsPerm, p.nBatch, p.nContract, p.k, p.n)
	if out.Elem == dtype.S32 || out.Elem == dtype.U32 {
		t := tensor.New(out.Elem, out.Dims) // zeroed: the kernel adds to it
		gemmI32(par, p.b, p.m, p.n, p.k, a, la, b, lb, t.I32())
		return t
	}
	c := make([]int32, p.b*p.m*p.n)
	gemmI32(par, p.b, p.m, p.n, p.k, a, la, b, lb, c)
	v := make([]int64, len(c))
	for i, x := range c {
		v[i] = int64(x)
	}
	return newFromI64(out.Elem, out.Dims, v)
}

// dotInt32Exact runs dotInt32's dot on the f32 GEMM when the operands'
// values (not just their types, as exactFloatClass goes by) keep every
// partial sum an integer below 2^24, whole or in slices of the depth of at
// least 256 (dotExactSlices): the sums are then exact in any order, and
// wrap to the result type as the int32 kernel's do. s32 matrices of small
// values (indices, counts, quantized data) thus take the float kernels'
// speed. nil when the values are too large.
func dotInt32Exact(ev *Evaluator, par int, p *dotPlan, lhs, rhs *tensor.Tensor, out hlo.Shape) *tensor.Tensor {
	ma := int32Magnitude(lhs)
	if ma > 1<<16 {
		return nil
	}
	mb := int32Magnitude(rhs)
	if mb > 1<<16 {
		return nil
	}
	prod := ma * mb // at most 2^32
	if prod == 0 || prod <= (1<<24)/int64(p.k) {
		return exactToInts(out.Elem, out.Dims, dotInF32(ev, par, p, lhs.Dims, rhs.Dims, toF32s(lhs), toF32s(rhs), nil))
	}
	if kc := (1 << 24) / prod; kc >= 256 {
		return exactToInts(out.Elem, out.Dims, dotExactSlices(par, p, lhs.Dims, rhs.Dims, toF32s(lhs), toF32s(rhs), int(kc)))
	}
	return nil
}

// int32Magnitude is the largest |v| over t's values (an int32Operand type).
func int32Magnitude(t *tensor.Tensor) int64 {
	switch t.Type {
	case dtype.S32:
		var lo, hi int32
		for _, v := range t.I32() {
			lo, hi = min(lo, v), max(hi, v)
		}
		return max(-int64(lo), int64(hi))
	case dtype.U32:
		var hi uint32
		for _, v := range t.U32() {
			hi = max(hi, v)
		}
		return int64(hi)
	}
	var m int64
	for _, v := range asI64(t) {
		m = max(m, v, -v)
	}
	return m
}

// int32Values is t's integers as int32s: s32/u32 storage as it lies, the
// narrower types sign- or zero-extended.
func int32Values(t *tensor.Tensor) []int32 {
	if t.Type == dtype.S32 || t.Type == dtype.U32 {
		return t.I32()
	}
	v := asI64(t)
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out
}

const (
	i32RowBlock = 64  // output rows a task computes
	i32KBlock   = 256 // depth a pass over a row block's tiles sums
)

// gemmI32 adds to c (nb row-major m×n matrices) the wrapping int32 products
// of a (nb m×k) and b (nb k×n) in the given layouts, on par goroutines over
// blocks of output rows. Where the build has vector tiles, b's columns are
// packed in panels of the tile width (each panel's k rows contiguous), so a
// tile streams its panel instead of reading rows a matrix width apart.
func gemmI32(par, nb, m, n, k int, a []int32, la gemmLayout, b []int32, lb gemmLayout, c []int32) {
	if nb*m*n == 0 || k == 0 {
		return
	}
	if lb.cs != 1 {
		// The kernels read rows of b: pack it row-major.
		bp := make([]int32, nb*k*n)
		for bi := 0; bi < nb; bi++ {
			for kk := 0; kk < k; kk++ {
				row := bp[(bi*k+kk)*n:][:n]
				for j := range row {
					row[j] = b[bi*lb.bs+kk*lb.rs+j*lb.cs]
				}
			}
		}
		b, lb = bp, rowMajor(k, n)
	}
	w := i32PanelWidth()
	var pk []int32
	np := 0
	if w > 0 {
		np = n / w
	}
	if np > 0 {
		pk = make([]int32, nb*np*k*w)
		for bi := 0; bi < nb; bi++ {
			for p := 0; p < np; p++ {
				dst := pk[(bi*np+p)*k*w:][:k*w]
				for kk := 0; kk < k; kk++ {
					copy(dst[kk*w:][:w], b[bi*lb.bs+kk*lb.rs+p*w:][:w])
				}
			}
		}
	}
	blocks := (m + i32RowBlock - 1) / i32RowBlock
	tasks := nb * blocks
	run := func(t int, ap []int32) {
		bi, i0 := t/blocks, (t%blocks)*i32RowBlock
		i1 := min(i0+i32RowBlock, m)
		groups := (i1 - i0 + 3) / 4
		for k0 := 0; k0 < k; k0 += i32KBlock {
			kc := min(i32KBlock, k-k0)
			// a's rows×kc block in groups of 4 rows, each packed k-major:
			// group g's ap[g*4*kc+kk*4+r].
			for g := 0; g < groups; g++ {
				i := i0 + 4*g
				rows := min(4, i1-i)
				ag := ap[g*4*kc:][:4*kc]
				for kk := 0; kk < kc; kk++ {
					for r := 0; r < rows; r++ {
						ag[kk*4+r] = a[bi*la.bs+(i+r)*la.rs+(k0+kk)*la.cs]
					}
				}
			}
			bk := b[bi*lb.bs+k0*lb.rs:]
			var pkk []int32
			if np > 0 {
				pkk = pk[bi*np*k*w+k0*w:]
			}
			cb := c[(bi*m+i0)*n:]
			j := i32BlockVector(groups, i1-i0, kc, n, ap, pkk, np, k*w, cb, n)
			if j < n {
				for g := 0; g < groups; g++ {
					i32RowsScalar(min(4, i1-i0-4*g), kc, j, n, ap[g*4*kc:], bk, lb.rs, cb[4*g*n:], n)
				}
			}
		}
	}
	workers := min(par, tasks)
	if workers < 2 || m*n*k < 1<<16 {
		ap := make([]int32, i32RowBlock*i32KBlock)
		for t := 0; t < tasks; t++ {
			run(t, ap)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ap := make([]int32, i32RowBlock*i32KBlock)
			for {
				t := int(next.Add(1) - 1)
				if t >= tasks {
					return
				}
				run(t, ap)
			}
		}()
	}
	wg.Wait()
}

// i32RowsScalar adds to rows r < rows (≤ 4) of c (ldc apart) in columns
// [j0, n) the sums over kk < kc of ap[kk*4+r] times b[kk*ldb+j]: four rows
// at a time share each load of b.
func i32RowsScalar(rows, kc, j0, n int, ap, b []int32, ldb int, c []int32, ldc int) {
	w := n - j0
	if rows == 4 {
		c0 := c[j0:][:w]
		c1 := c[ldc+j0:][:w]
		c2 := c[2*ldc+j0:][:w]
		c3 := c[3*ldc+j0:][:w]
		for kk := 0; kk < kc; kk++ {
			a := ap[kk*4:][:4]
			a0, a1, a2, a3 := a[0], a[1], a[2], a[3]
			br := b[kk*ldb+j0:][:w]
			for j, x := range br {
				c0[j] += a0 * x
				c1[j] += a1 * x
				c2[j] += a2 * x
				c3[j] += a3 * x
			}
		}
		return
	}
	for r := 0; r < rows; r++ {
		cr := c[r*ldc+j0:][:w]
		for kk := 0; kk < kc; kk++ {
			av := ap[kk*4+r]
			br := b[kk*ldb+j0:][:w]
			for j, x := range br {
				cr[j] += av * x
			}
		}
	}
}
