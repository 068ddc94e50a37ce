//go:build goexperiment.simd && amd64

package eval

import (
	"math"
	"simd/archsimd"
	"sync"
	"unsafe"
)

// glibc's f32 sine and cosine (glibc_sincosf.go) in float64 lanes, for the
// lanes with 2^-12 ≤ |x| < 120 (the one-step reduction); the others (tiny,
// large, Inf, NaN) take the scalar glibcSinCosf. Both polynomials are
// computed and the quadrant picks one, as glibc's branch would.
var (
	sinCosK8 = [...][8]float64{
		splatF64x8(glibcHalfPiInv24),
		splatF64x8(glibcHalfPi),
		splatF64x8(0x1p23), // (int32(r) + 0x800000) >> 24 as floor((trunc(r) + 2^23)·2^-24)
		splatF64x8(0x1p-24),
		splatF64x8(0x1.8p52), // n's low bits into the mantissa
		splatF64x8(glibcSin1),
		splatF64x8(glibcSin2),
		splatF64x8(glibcSin3),
		splatF64x8(glibcCos0),
		splatF64x8(glibcCos1),
		splatF64x8(glibcCos2),
		splatF64x8(glibcCos3),
		splatF64x8(glibcCos4),
		splatF64x8(glibcTinyLimit),
		splatF64x8(glibcFastLimit),
	}
	sinCosBits8 = [...][8]uint64{splatU64x8(1), splatU64x8(2), splatU64x8(1 << 63), splatU64x8(1<<63 - 1)}
)

func splatF64x8(v float64) (o [8]float64) {
	for i := range o {
		o[i] = v
	}
	return
}

func splatU64x8(v uint64) (o [8]uint64) {
	for i := range o {
		o[i] = v
	}
	return
}

// sinCosF32Vector computes op ("sine" or "cosine") of whole groups of 8
// (AVX-512) or 4 (AVX2) elements of x into o and returns how many it did.
func sinCosF32Vector(op string, x, o []float32) int {
	if op != "sine" && op != "cosine" {
		return 0
	}
	switch binaryLanes {
	case 16:
		// Short arrays (a loop step's few elements) skip the memo: its pool
		// and bookkeeping cost more than the sine or cosine of a few vectors.
		if !sinCosMemoDisabled && len(x) <= sseBlock && len(x) >= sinCosMemoMin && len(o) >= 8 {
			return sinCosF32x8Memo(op, x, o)
		}
		return sinCosF32x8(op, x, o, nil)
	case 8:
		return sinCosF32x4(op, x, o)
	}
	return 0
}

// sinCosMemo is the other function's results of the last block one
// worker's sinCosF32x8 computed (a fused group takes the sine and the
// cosine of one value: complex exp, rotations), with a copy of that block.
type sinCosMemo struct {
	x, res  [sseBlock]float32
	n       int  // elements held; 0 for none
	cosine  bool // res holds cosines (else sines)
	calls   int  // since the counts were last reset
	hits    int
	pending bool // res was computed and not yet asked for
	misses  int  // results computed and never asked for
}

var sinCosMemos = sync.Pool{New: func() any { return new(sinCosMemo) }}

// sinCosMemoDisabled computes every sine and cosine afresh (tests).
var sinCosMemoDisabled bool

// sinCosMemoMin is the shortest block the memo is tried on.
const sinCosMemoMin = 256

// sinCosF32x8Memo is sinCosF32x8 for a block of at most sseBlock elements:
// a block whose bits equal the last one's, asked for the function that
// call also computed, takes those results (the same function of the same
// input); otherwise both functions are computed in one pass, the other
// kept, while workers' memos are being used (a lone sine or cosine stops
// paying for the second function after a few misses, and retries every
// 64 calls).
func sinCosF32x8Memo(op string, x, o []float32) int {
	cosine := op == "cosine"
	m := sinCosMemos.Get().(*sinCosMemo)
	defer sinCosMemos.Put(m)
	if m.calls++; m.calls > 64 {
		m.calls, m.hits, m.misses = 0, 0, 0
	}
	n := len(o) &^ 7
	if m.n == n && m.n > 0 && m.cosine == cosine &&
		unsafe.String((*byte)(unsafe.Pointer(&m.x[0])), 4*n) == unsafe.String((*byte)(unsafe.Pointer(&x[0])), 4*n) {
		copy(o[:n], m.res[:n])
		m.n, m.pending = 0, false
		m.hits++
		return n
	}
	if m.pending {
		m.misses++
	}
	m.n, m.pending = 0, false
	if m.misses > 2 && m.hits*4 < m.misses {
		return sinCosF32x8(op, x, o, nil)
	}
	k := sinCosF32x8(op, x, o, m.res[:])
	copy(m.x[:k], x[:k])
	m.n, m.cosine, m.pending = k, !cosine, true
	return k
}

// sinCosF32x8 computes op of the whole groups of 8 at the front of x into
// o and, when other is not nil, the other function (cosine for sine, sine
// for cosine) of the same elements into other, each as it would be alone.
func sinCosF32x8(op string, x, o, other []float32) int {
	cosine := op == "cosine"
	both := other != nil
	k := &sinCosK8
	hpiInv, hpi := archsimd.LoadFloat64x8(&k[0]), archsimd.LoadFloat64x8(&k[1])
	bias, scale, magic := archsimd.LoadFloat64x8(&k[2]), archsimd.LoadFloat64x8(&k[3]), archsimd.LoadFloat64x8(&k[4])
	s1, s2, s3 := archsimd.LoadFloat64x8(&k[5]), archsimd.LoadFloat64x8(&k[6]), archsimd.LoadFloat64x8(&k[7])
	c0, c1, c2 := archsimd.LoadFloat64x8(&k[8]), archsimd.LoadFloat64x8(&k[9]), archsimd.LoadFloat64x8(&k[10])
	c3, c4 := archsimd.LoadFloat64x8(&k[11]), archsimd.LoadFloat64x8(&k[12])
	tiny, fast := archsimd.LoadFloat64x8(&k[13]), archsimd.LoadFloat64x8(&k[14])
	bit1, bit2 := archsimd.LoadUint64x8(&sinCosBits8[0]), archsimd.LoadUint64x8(&sinCosBits8[1])
	signBit, absMask := archsimd.LoadUint64x8(&sinCosBits8[2]), archsimd.LoadUint64x8(&sinCosBits8[3])
	var zeroU archsimd.Uint64x8
	n := len(o) &^ 7
	x = x[:n]
	for i := 0; i < n; i += 8 {
		xv := archsimd.LoadFloat32x8((*[8]float32)(x[i:])).ConvertToFloat64()
		nf := xv.Mul(hpiInv).TruncScaled(0).Add(bias).Mul(scale).FloorScaled(0)
		r := nf.AsUint64x8().Xor(signBit).AsFloat64x8().MulAdd(hpi, xv) // fma(-n, π/2, x)
		q := nf.Add(magic).AsUint64x8()                                 // n mod 4 in the low bits
		x2 := r.Mul(r)
		// sign[n&3] = {1, -1, -1, 1}: negative where bit 1 of n+1 is set.
		rs := r.AsUint64x8().Xor(signBit).AsFloat64x8().Merge(r, q.Add(bit1).And(bit2).NotEqual(zeroU))
		x3 := rs.Mul(x2)
		sinR := x3.Mul(x2).MulAdd(x2.MulAdd(s3, s2), x3.MulAdd(s1, rs))
		x4 := x2.Mul(x2)
		cosR := x4.Mul(x2).MulAdd(x2.MulAdd(c4, c3), x4.MulAdd(c2, x2.MulAdd(c1, c0)))
		cosR = cosR.AsUint64x8().Xor(signBit).AsFloat64x8().Merge(cosR, q.And(bit2).NotEqual(zeroU))
		oddN := q.And(bit1).NotEqual(zeroU)
		sinRes, cosRes := cosR.Merge(sinR, oddN), sinR.Merge(cosR, oddN)
		res, oth := sinRes, cosRes
		if cosine {
			res, oth = cosRes, sinRes
		}
		res.ConvertToFloat32().Store((*[8]float32)(o[i:]))
		if both {
			oth.ConvertToFloat32().Store((*[8]float32)(other[i:]))
		}
		ax := xv.AsUint64x8().And(absMask).AsFloat64x8()
		if ax.GreaterEqual(tiny).And(ax.Less(fast)).ToBits() != 0xff {
			for j := i; j < i+8; j++ {
				if v := math.Abs(float64(x[j])); !(v >= glibcTinyLimit && v < glibcFastLimit) {
					o[j] = glibcSinCosf(x[j], cosine)
					if both {
						other[j] = glibcSinCosf(x[j], !cosine)
					}
				}
			}
		}
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// sinCosF32x4 is sinCosF32x8 in 4 lanes of AVX2 (with FMA), without the
// other function.
func sinCosF32x4(op string, x, o []float32) int {
	cosine := op == "cosine"
	k := &sinCosK8
	ld := func(i int) archsimd.Float64x4 { return archsimd.LoadFloat64x4((*[4]float64)(k[i][:4])) }
	hpiInv, hpi, bias, scale, magic := ld(0), ld(1), ld(2), ld(3), ld(4)
	s1, s2, s3 := ld(5), ld(6), ld(7)
	c0, c1, c2, c3, c4 := ld(8), ld(9), ld(10), ld(11), ld(12)
	tiny, fast := ld(13), ld(14)
	bit1, bit2 := archsimd.LoadUint64x4((*[4]uint64)(sinCosBits8[0][:4])), archsimd.LoadUint64x4((*[4]uint64)(sinCosBits8[1][:4]))
	signBit, absMask := archsimd.LoadUint64x4((*[4]uint64)(sinCosBits8[2][:4])), archsimd.LoadUint64x4((*[4]uint64)(sinCosBits8[3][:4]))
	var zeroU archsimd.Uint64x4
	n := len(o) &^ 3
	x = x[:n]
	for i := 0; i < n; i += 4 {
		xv := archsimd.LoadFloat32x4((*[4]float32)(x[i:])).ConvertToFloat64()
		nf := xv.Mul(hpiInv).Trunc().Add(bias).Mul(scale).Floor()
		r := nf.AsUint64x4().Xor(signBit).AsFloat64x4().MulAdd(hpi, xv)
		q := nf.Add(magic).AsUint64x4()
		x2 := r.Mul(r)
		rs := r.AsUint64x4().Xor(signBit).AsFloat64x4().Merge(r, q.Add(bit1).And(bit2).NotEqual(zeroU))
		x3 := rs.Mul(x2)
		sinR := x3.Mul(x2).MulAdd(x2.MulAdd(s3, s2), x3.MulAdd(s1, rs))
		x4 := x2.Mul(x2)
		cosR := x4.Mul(x2).MulAdd(x2.MulAdd(c4, c3), x4.MulAdd(c2, x2.MulAdd(c1, c0)))
		cosR = cosR.AsUint64x4().Xor(signBit).AsFloat64x4().Merge(cosR, q.And(bit2).NotEqual(zeroU))
		oddN := q.And(bit1).NotEqual(zeroU)
		res := cosR.Merge(sinR, oddN)
		if cosine {
			res = sinR.Merge(cosR, oddN)
		}
		res.ConvertToFloat32().Store((*[4]float32)(o[i:]))
		ax := xv.AsUint64x4().And(absMask).AsFloat64x4()
		if ax.GreaterEqual(tiny).And(ax.Less(fast)).ToBits() != 0xf {
			for j := i; j < i+4; j++ {
				if v := math.Abs(float64(x[j])); !(v >= glibcTinyLimit && v < glibcFastLimit) {
					o[j] = glibcSinCosf(x[j], cosine)
				}
			}
		}
	}
	archsimd.ClearAVXUpperBits()
	return n
}
