//go:build goexperiment.simd && amd64

package eval

// f64 subnormal scans and the flushing add, subtract, multiply and divide
// a vector at a time: 8 lanes with AVX-512, 4 with AVX2. A bit pattern b is
// subnormal when (b&^sign)-1, unsigned, is below 2^52-1. The arithmetic is
// the IEEE operation per lane, as the scalar loops compute it
// (TestF64VectorKernelsMatchScalar).

import (
	"simd/archsimd"
	"unsafe"
)

// f64BitLanes is the width of these kernels: 8, 4 or 0 (scalar). Tests
// set it to each width the CPU runs.
var f64BitLanes = defaultF64BitLanes()

func defaultF64BitLanes() int {
	switch {
	case archsimd.X86.AVX512():
		return 8
	case archsimd.X86.AVX2():
		return 4
	}
	return 0
}

func f64BitLaneWidths() []int {
	var ws []int
	if archsimd.X86.AVX512() {
		ws = append(ws, 8)
	}
	if archsimd.X86.AVX2() {
		ws = append(ws, 4)
	}
	return append(ws, 0)
}

var f64Bits64K = func() (t [4][8]uint64) {
	for l := range 8 {
		t[0][l], t[1][l], t[2][l], t[3][l] = 1<<63-1, 1, 1<<52-1, 1<<63
	}
	return t
}()

// binaryFTZF64Vector is binaryFloat then ftz for add, subtract, multiply
// and divide on the whole vectors at the front of o; it returns how many
// elements that was (0 for other ops).
func binaryFTZF64Vector(op string, a, b, o []float64) int {
	switch op {
	case "add", "subtract", "multiply", "divide":
	default:
		return 0
	}
	switch f64BitLanes {
	case 8:
		return binaryFTZF64x8(op, a, b, o)
	case 4:
		return binaryFTZF64x4(op, a, b, o)
	}
	return 0
}

// scanSubnormal64 returns (i, true) when xs[i:i+32] holds the first
// subnormal of xs, else (n, false) with xs[:n] free of subnormals.
func scanSubnormal64(xs []uint64) (int, bool) {
	switch f64BitLanes {
	case 8:
		return scanSubnormal64x8(xs)
	case 4:
		return scanSubnormal64x4(xs)
	}
	return 0, false
}

// binaryFTZF64x4 is add, subtract, multiply or divide of 4 lanes, each
// result's subnormal replaced by its signed zero before the store.
func binaryFTZF64x4(op string, a, b, o []float64) int {
	n := len(o) &^ (4 - 1)
	if n == 0 {
		return 0
	}
	k := f64OpCode(op)
	pa, pb, po := unsafe.Pointer(&a[:n][0]), unsafe.Pointer(&b[:n][0]), unsafe.Pointer(&o[:n][0])
	mag := archsimd.LoadUint64x4((*[4]uint64)(f64Bits64K[0][:4]))
	minNormal := archsimd.BroadcastFloat64x4(0x1p-1022)
	for off, end := 0, 8*n; off < end; off += 32 {
		x := archsimd.LoadFloat64x4((*[4]float64)(unsafe.Add(pa, off)))
		y := archsimd.LoadFloat64x4((*[4]float64)(unsafe.Add(pb, off)))
		var r archsimd.Float64x4
		switch k {
		case f64Add:
			r = x.Add(y)
		case f64Sub:
			r = x.Sub(y)
		case f64Mul:
			r = x.Mul(y)
		default:
			r = x.Div(y)
		}
		// A lane whose magnitude is below the smallest normal (a subnormal
		// or a zero) keeps only its sign; NaN magnitudes compare false.
		u := r.AsUint64x4()
		tiny := u.And(mag).AsFloat64x4().Less(minNormal).ToInt64x4().AsUint64x4()
		u.AndNot(tiny.And(mag)).AsFloat64x4().Store((*[4]float64)(unsafe.Add(po, off)))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// scanSubnormal64x4 is scanSubnormal64 on 4 lanes.
func scanSubnormal64x4(xs []uint64) (int, bool) {
	abs := archsimd.LoadUint64x4((*[4]uint64)(f64Bits64K[0][:4]))
	one := archsimd.LoadUint64x4((*[4]uint64)(f64Bits64K[1][:4]))
	lim := archsimd.LoadUint64x4((*[4]uint64)(f64Bits64K[2][:4]))
	i := 0
	for ; i+4*4 <= len(xs); i += 4 * 4 {
		a := archsimd.LoadUint64x4((*[4]uint64)(xs[i:])).And(abs).Sub(one).Less(lim)
		b := archsimd.LoadUint64x4((*[4]uint64)(xs[i+4:])).And(abs).Sub(one).Less(lim)
		c := archsimd.LoadUint64x4((*[4]uint64)(xs[i+2*4:])).And(abs).Sub(one).Less(lim)
		d := archsimd.LoadUint64x4((*[4]uint64)(xs[i+3*4:])).And(abs).Sub(one).Less(lim)
		if a.Or(b).Or(c.Or(d)).ToBits() != 0 {
			archsimd.ClearAVXUpperBits()
			return i, true
		}
	}
	for ; i+4 <= len(xs); i += 4 {
		if archsimd.LoadUint64x4((*[4]uint64)(xs[i:])).And(abs).Sub(one).Less(lim).ToBits() != 0 {
			archsimd.ClearAVXUpperBits()
			return i, true
		}
	}
	archsimd.ClearAVXUpperBits()
	return i, false
}

// binaryFTZF64x8 is add, subtract, multiply or divide of 8 lanes, each
// result's subnormal replaced by its signed zero before the store.
func binaryFTZF64x8(op string, a, b, o []float64) int {
	n := len(o) &^ (8 - 1)
	if n == 0 {
		return 0
	}
	k := f64OpCode(op)
	pa, pb, po := unsafe.Pointer(&a[:n][0]), unsafe.Pointer(&b[:n][0]), unsafe.Pointer(&o[:n][0])
	sign := archsimd.LoadUint64x8((*[8]uint64)(f64Bits64K[3][:8]))
	minNormal := archsimd.BroadcastFloat64x8(0x1p-1022)
	for off, end := 0, 8*n; off < end; off += 64 {
		x := archsimd.LoadFloat64x8((*[8]float64)(unsafe.Add(pa, off)))
		y := archsimd.LoadFloat64x8((*[8]float64)(unsafe.Add(pb, off)))
		var r archsimd.Float64x8
		switch k {
		case f64Add:
			r = x.Add(y)
		case f64Sub:
			r = x.Sub(y)
		case f64Mul:
			r = x.Mul(y)
		default:
			r = x.Div(y)
		}
		u := r.AsUint64x8()
		tiny := u.AndNot(sign).AsFloat64x8().Less(minNormal)
		u.And(sign).Merge(u, tiny).AsFloat64x8().Store((*[8]float64)(unsafe.Add(po, off)))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// The f64 binary ops as small integers for the loops' per-vector switch.
const (
	f64Add = iota
	f64Sub
	f64Mul
	f64Div
)

func f64OpCode(op string) int {
	switch op {
	case "add":
		return f64Add
	case "subtract":
		return f64Sub
	case "multiply":
		return f64Mul
	}
	return f64Div
}

// scanSubnormal64x8 is scanSubnormal64 on 8 lanes.
func scanSubnormal64x8(xs []uint64) (int, bool) {
	abs := archsimd.LoadUint64x8((*[8]uint64)(f64Bits64K[0][:8]))
	one := archsimd.LoadUint64x8((*[8]uint64)(f64Bits64K[1][:8]))
	lim := archsimd.LoadUint64x8((*[8]uint64)(f64Bits64K[2][:8]))
	i := 0
	for ; i+4*8 <= len(xs); i += 4 * 8 {
		a := archsimd.LoadUint64x8((*[8]uint64)(xs[i:])).And(abs).Sub(one).Less(lim)
		b := archsimd.LoadUint64x8((*[8]uint64)(xs[i+8:])).And(abs).Sub(one).Less(lim)
		c := archsimd.LoadUint64x8((*[8]uint64)(xs[i+2*8:])).And(abs).Sub(one).Less(lim)
		d := archsimd.LoadUint64x8((*[8]uint64)(xs[i+3*8:])).And(abs).Sub(one).Less(lim)
		if a.Or(b).Or(c.Or(d)).ToBits() != 0 {
			archsimd.ClearAVXUpperBits()
			return i, true
		}
	}
	for ; i+8 <= len(xs); i += 8 {
		if archsimd.LoadUint64x8((*[8]uint64)(xs[i:])).And(abs).Sub(one).Less(lim).ToBits() != 0 {
			archsimd.ClearAVXUpperBits()
			return i, true
		}
	}
	archsimd.ClearAVXUpperBits()
	return i, false
}
