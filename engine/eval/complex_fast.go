package eval

// c64 elementwise work without a scalar loop on one core: complex(re, im)
// of two f32 arrays, and the c64 product, run on all cores into pooled
// storage the op writes whole (not zeroed first), the product's and the
// interleave's whole vectors through complex_simd_amd64.go under the simd
// experiment. Each computes what the path it replaces computes, bit for bit
// (complex_fast_test.go): the product is binaryCplx's arithmetic, lane by
// lane in float64 (the part products of two f32 are exact there), with the
// same flush of subnormal results (ftzComplex); a block whose result holds a
// NaN is recomputed by binaryCplx itself, so NaN payloads never depend on
// the vector instructions' operand order. Operands with subnormal or
// signaling-NaN parts (dazComplex would copy them) take the old path.

import (
	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// complexFastDisabled sends c64 products and complex() to the old paths (tests).
var complexFastDisabled bool

// cplxBlock is the elements one pass of the product handles before its
// flush scan, small enough that the scan reads the block from cache.
const cplxBlock = 2048

// multiplyC64Fast is binary("multiply", a, b) for c64 operands of one shape;
// nil when it does not apply (the caller then takes binary).
func multiplyC64Fast(ev *Evaluator, a, b *tensor.Tensor) *tensor.Tensor {
	if complexFastDisabled || a.Type != dtype.C64 || b.Type != dtype.C64 || sameShape(a, b) != nil {
		return nil
	}
	as, bs := a.C64(), b.C64()
	if !complexCleanAll(as) || !complexCleanAll(bs) {
		return nil
	}
	out := ev.newTensor(dtype.C64, a.Dims, false)
	o := out.C64()
	parallelFor(len(o), func(lo, hi int) {
		for s := lo; s < hi; s += cplxBlock {
			e := min(s+cplxBlock, hi)
			mulC64Block(as[s:e], bs[s:e], o[s:e])
			ftzComplex(o[s:e])
		}
	})
	return out
}

// mulC64Block is binaryCplx's multiply of a and b into o (before the flush
// of subnormal results): whole vectors by mulC64Vector, whose NaN-holding
// groups and the tail binaryCplx recomputes.
func mulC64Block(a, b, o []complex64) {
	k := mulC64Vector(a, b, o)
	if k < len(o) {
		binaryCplx("multiply", a[k:], b[k:], o[k:])
	}
}

// complexF32Fast is complex(re, im) of two f32 arrays of one shape; nil
// when it does not apply.
func complexF32Fast(ev *Evaluator, re, im *tensor.Tensor) *tensor.Tensor {
	if complexFastDisabled || re.Type != dtype.F32 || im.Type != dtype.F32 || sameShape(re, im) != nil {
		return nil
	}
	out := ev.newTensor(dtype.C64, re.Dims, false)
	o, r, i := out.C64(), re.F32(), im.F32()
	parallelFor(len(o), func(lo, hi int) {
		k := lo + interleaveC64Vector(r[lo:hi], i[lo:hi], o[lo:hi])
		for ; k < hi; k++ {
			o[k] = complex(r[k], i[k])
		}
	})
	return out
}
