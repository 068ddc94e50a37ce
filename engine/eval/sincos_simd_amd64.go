//go:build goexperiment.simd && amd64

package eval

import (
	"math"
	"simd/archsimd"
	"sync"
	"unsafe"
)

// f32 sine and cosine in float64 lanes: x reduced by π/2 (k = x·2/π rounded
// to even, r = x - k·π/2 with π/2 in three parts and FMAs, exact enough for
// every f32 below 2^20), then fdlibm's kernel polynomials on [-π/4, π/4] and
// the quadrant k mod 4. The float64 result is within about an ulp of
// math.Sin's, so the f32 results are math.Sin's rounded except in the rare
// case of an f64 value next to an f32 rounding boundary; lanes with |x| ≥
// 2^20, infinities and NaNs take math.Sin/math.Cos. XLA:CPU calls glibc's
// sinf/cosf here, which goldtrace matches within a few ulp either way.
const sinCosFastLimit = 0x1p20

var (
	sinCosK8 = [...][8]float64{
		splatF64x8(2 / math.Pi),
		splatF64x8(1.5707963267948966), // π/2, three parts
		splatF64x8(6.123233995736766e-17),
		splatF64x8(-1.4973849048591698e-33),
		splatF64x8(0x1.8p52),                    // k's low bits into the mantissa
		splatF64x8(-1.66666666666666324348e-01), // fdlibm k_sin S1..S6
		splatF64x8(8.33333333332248946124e-03),
		splatF64x8(-1.98412698298579493134e-04),
		splatF64x8(2.75573137070700676789e-06),
		splatF64x8(-2.50507602534068634195e-08),
		splatF64x8(1.58969099521155010221e-10),
		splatF64x8(4.16666666666666019037e-02), // fdlibm k_cos C1..C6
		splatF64x8(-1.38888888888741095749e-03),
		splatF64x8(2.48015872894767294178e-05),
		splatF64x8(-2.75573143513906633035e-07),
		splatF64x8(2.08757232129817482790e-09),
		splatF64x8(-1.13596475577881948265e-11),
		splatF64x8(0.5),
		splatF64x8(1),
		splatF64x8(sinCosFastLimit),
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
	twoOverPi := archsimd.LoadFloat64x8(&k[0])
	p1, p2, p3 := archsimd.LoadFloat64x8(&k[1]), archsimd.LoadFloat64x8(&k[2]), archsimd.LoadFloat64x8(&k[3])
	magic := archsimd.LoadFloat64x8(&k[4])
	s1, s2, s3 := archsimd.LoadFloat64x8(&k[5]), archsimd.LoadFloat64x8(&k[6]), archsimd.LoadFloat64x8(&k[7])
	s4, s5, s6 := archsimd.LoadFloat64x8(&k[8]), archsimd.LoadFloat64x8(&k[9]), archsimd.LoadFloat64x8(&k[10])
	c1, c2, c3 := archsimd.LoadFloat64x8(&k[11]), archsimd.LoadFloat64x8(&k[12]), archsimd.LoadFloat64x8(&k[13])
	c4, c5, c6 := archsimd.LoadFloat64x8(&k[14]), archsimd.LoadFloat64x8(&k[15]), archsimd.LoadFloat64x8(&k[16])
	half, one, limit := archsimd.LoadFloat64x8(&k[17]), archsimd.LoadFloat64x8(&k[18]), archsimd.LoadFloat64x8(&k[19])
	bit1, bit2 := archsimd.LoadUint64x8(&sinCosBits8[0]), archsimd.LoadUint64x8(&sinCosBits8[1])
	signBit, absMask := archsimd.LoadUint64x8(&sinCosBits8[2]), archsimd.LoadUint64x8(&sinCosBits8[3])
	var zeroU archsimd.Uint64x8
	var zeroF archsimd.Float64x8
	n := len(o) &^ 7
	x = x[:n]
	for i := 0; i < n; i += 8 {
		xv := archsimd.LoadFloat32x8((*[8]float32)(x[i:])).ConvertToFloat64()
		kf := xv.Mul(twoOverPi).RoundToEvenScaled(0)
		// r = x - k·p1 - k·p2 - k·p3 with FMAs: fma(-k, p, r).
		nk := kf.AsUint64x8().Xor(signBit).AsFloat64x8()
		rr := nk.MulAdd(p1, xv)
		rr = nk.MulAdd(p2, rr)
		rr = nk.MulAdd(p3, rr)
		z := rr.Mul(rr)
		sp := s6.MulAdd(z, s5).MulAdd(z, s4).MulAdd(z, s3).MulAdd(z, s2).MulAdd(z, s1)
		sinR := sp.Mul(z).MulAdd(rr, rr) // r + r·z·poly
		cp := c6.MulAdd(z, c5).MulAdd(z, c4).MulAdd(z, c3).MulAdd(z, c2).MulAdd(z, c1)
		cosR := cp.Mul(z).Mul(z).Add(one.Sub(z.Mul(half))) // 1 - z/2 + z²·poly
		qs := kf.Add(magic).AsUint64x8()                   // k mod 4 in the low bits
		qc := qs.Add(bit1)                                 // cos(x) = sin(x + π/2)
		q, qo := qs, qc
		if cosine {
			q, qo = qc, qs
		}
		swap := q.And(bit1).NotEqual(zeroU)
		neg := q.And(bit2).NotEqual(zeroU)
		res := cosR.Merge(sinR, swap)
		res = res.AsUint64x8().Xor(signBit).AsFloat64x8().Merge(res, neg)
		if !cosine {
			res = xv.Merge(res, xv.Equal(zeroF)) // sin(±0) is ±0
		}
		res.ConvertToFloat32().Store((*[8]float32)(o[i:]))
		if both {
			swap := qo.And(bit1).NotEqual(zeroU)
			neg := qo.And(bit2).NotEqual(zeroU)
			res := cosR.Merge(sinR, swap)
			res = res.AsUint64x8().Xor(signBit).AsFloat64x8().Merge(res, neg)
			if cosine {
				res = xv.Merge(res, xv.Equal(zeroF)) // the other is the sine
			}
			res.ConvertToFloat32().Store((*[8]float32)(other[i:]))
		}
		if xv.AsUint64x8().And(absMask).AsFloat64x8().Less(limit).ToBits() != 0xff {
			for j := i; j < i+8; j++ {
				if v := float64(x[j]); !(math.Abs(v) < sinCosFastLimit) {
					c, s := float32(math.Cos(v)), float32(math.Sin(v))
					if cosine {
						o[j] = c
						if both {
							other[j] = s
						}
					} else {
						o[j] = s
						if both {
							other[j] = c
						}
					}
				}
			}
		}
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func sinCosF32x4(op string, x, o []float32) int {
	cosine := op == "cosine"
	k := &sinCosK8
	twoOverPi := archsimd.LoadFloat64x4((*[4]float64)(k[0][:4]))
	p1, p2, p3 := archsimd.LoadFloat64x4((*[4]float64)(k[1][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[2][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[3][:4]))
	magic := archsimd.LoadFloat64x4((*[4]float64)(k[4][:4]))
	s1, s2, s3 := archsimd.LoadFloat64x4((*[4]float64)(k[5][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[6][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[7][:4]))
	s4, s5, s6 := archsimd.LoadFloat64x4((*[4]float64)(k[8][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[9][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[10][:4]))
	c1, c2, c3 := archsimd.LoadFloat64x4((*[4]float64)(k[11][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[12][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[13][:4]))
	c4, c5, c6 := archsimd.LoadFloat64x4((*[4]float64)(k[14][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[15][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[16][:4]))
	half, one, limit := archsimd.LoadFloat64x4((*[4]float64)(k[17][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[18][:4])), archsimd.LoadFloat64x4((*[4]float64)(k[19][:4]))
	bit1, bit2 := archsimd.LoadUint64x4((*[4]uint64)(sinCosBits8[0][:4])), archsimd.LoadUint64x4((*[4]uint64)(sinCosBits8[1][:4]))
	signBit, absMask := archsimd.LoadUint64x4((*[4]uint64)(sinCosBits8[2][:4])), archsimd.LoadUint64x4((*[4]uint64)(sinCosBits8[3][:4]))
	var zeroU archsimd.Uint64x4
	var zeroF archsimd.Float64x4
	n := len(o) &^ 3
	x = x[:n]
	for i := 0; i < n; i += 4 {
		xv := archsimd.LoadFloat32x4((*[4]float32)(x[i:])).ConvertToFloat64()
		kf := xv.Mul(twoOverPi).RoundToEvenScaled(0)
		// r = x - k·p1 - k·p2 - k·p3 with FMAs: fma(-k, p, r).
		nk := kf.AsUint64x4().Xor(signBit).AsFloat64x4()
		rr := nk.MulAdd(p1, xv)
		rr = nk.MulAdd(p2, rr)
		rr = nk.MulAdd(p3, rr)
		z := rr.Mul(rr)
		sp := s6.MulAdd(z, s5).MulAdd(z, s4).MulAdd(z, s3).MulAdd(z, s2).MulAdd(z, s1)
		sinR := sp.Mul(z).MulAdd(rr, rr) // r + r·z·poly
		cp := c6.MulAdd(z, c5).MulAdd(z, c4).MulAdd(z, c3).MulAdd(z, c2).MulAdd(z, c1)
		cosR := cp.Mul(z).Mul(z).Add(one.Sub(z.Mul(half))) // 1 - z/2 + z²·poly
		q := kf.Add(magic).AsUint64x4()                    // k mod 4 in the low bits
		if cosine {
			q = q.Add(bit1) // cos(x) = sin(x + π/2)
		}
		swap := q.And(bit1).NotEqual(zeroU)
		neg := q.And(bit2).NotEqual(zeroU)
		res := cosR.Merge(sinR, swap)
		res = res.AsUint64x4().Xor(signBit).AsFloat64x4().Merge(res, neg)
		if !cosine {
			res = xv.Merge(res, xv.Equal(zeroF)) // sin(±0) is ±0
		}
		res.ConvertToFloat32().Store((*[4]float32)(o[i:]))
		if xv.AsUint64x4().And(absMask).AsFloat64x4().Less(limit).ToBits() != 0xf {
			for j := i; j < i+4; j++ {
				if v := float64(x[j]); !(math.Abs(v) < sinCosFastLimit) {
					if cosine {
						o[j] = float32(math.Cos(v))
					} else {
						o[j] = float32(math.Sin(v))
					}
				}
			}
		}
	}
	archsimd.ClearAVXUpperBits()
	return n
}
