//go:build goexperiment.simd && amd64

package eval

import (
	"simd/archsimd"
	"unsafe"
)

// Compares of f32, s32 and u32 blocks into pred bytes, and selects of
// 32-bit elements through pred bytes, a vector at a time. Each lane computes
// what compareKernel's and selectBits's loops do: an f32 compare is the
// ordered IEEE compare (false with a NaN operand) for EQ, LT, LE, GT, GE and
// its negation for NE, -0 equals +0, and its pred byte is 1 or 0; a select
// takes a's bits where the pred byte is nonzero, else b's
// (TestCompareSelectVectorMatchesScalar).

// predSpread maps 8 mask bits to 8 pred bytes (bit k set: byte k is 1).
var predSpread = func() (t [256]uint64) {
	for b := range t {
		for k := range 8 {
			t[b] |= uint64(b>>k&1) << (8 * k)
		}
	}
	return
}()

// Compare directions as the loops test them: GT and GE run as LT and LE
// with the operands swapped, so each loop tells four cases apart, by a
// small integer the branch predictor learns in one vector.
const (
	cmpEQ = iota
	cmpNE
	cmpLT
	cmpLE
)

// compareOrder returns dir's loop case and whether the operands swap; ok is
// false for a direction with no vector form.
func compareOrder(dir string) (c int, swap, ok bool) {
	switch dir {
	case "EQ":
		return cmpEQ, false, true
	case "NE":
		return cmpNE, false, true
	case "LT":
		return cmpLT, false, true
	case "LE":
		return cmpLE, false, true
	case "GT":
		return cmpLT, true, true
	case "GE":
		return cmpLE, true, true
	}
	return 0, false, false
}

// storePred8 writes the pred bytes of 8 mask bits at p+off.
func storePred8(bits uint8, p unsafe.Pointer, off int) {
	*(*uint64)(unsafe.Add(p, off)) = predSpread[bits]
}

// compareF32Vector computes the whole vectors at the front of o and returns
// how many elements that was (0 when dir has no vector form here).
func compareF32Vector(dir string, a, b []float32, o []byte) int {
	c, swap, ok := compareOrder(dir)
	if !ok {
		return 0
	}
	if swap {
		a, b = b, a
	}
	var n int
	switch binaryLanes {
	case 16:
		if n = len(o) &^ 15; n == 0 {
			return 0
		}
		pa, pb, po := f32Base(a, n), f32Base(b, n), unsafe.Pointer(&o[:n][0])
		for i := 0; i < n; i += 16 {
			x, y := loadFloat32x16(pa, 4*i), loadFloat32x16(pb, 4*i)
			var m archsimd.Mask32x16
			switch c {
			case cmpEQ:
				m = x.Equal(y)
			case cmpNE:
				m = x.NotEqual(y)
			case cmpLT:
				m = x.Less(y)
			default:
				m = x.LessEqual(y)
			}
			bits := m.ToBits()
			storePred8(uint8(bits), po, i)
			storePred8(uint8(bits>>8), po, i+8)
		}
	case 8:
		if n = len(o) &^ 7; n == 0 {
			return 0
		}
		pa, pb, po := f32Base(a, n), f32Base(b, n), unsafe.Pointer(&o[:n][0])
		for i := 0; i < n; i += 8 {
			x, y := loadFloat32x8(pa, 4*i), loadFloat32x8(pb, 4*i)
			var m archsimd.Mask32x8
			switch c {
			case cmpEQ:
				m = x.Equal(y)
			case cmpNE:
				m = x.NotEqual(y)
			case cmpLT:
				m = x.Less(y)
			default:
				m = x.LessEqual(y)
			}
			storePred8(m.ToBits(), po, i)
		}
	default:
		return 0
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// compareInt32Vector is compareF32Vector for s32 (signed) or u32 bits.
func compareInt32Vector(dir string, signed bool, a, b []uint32, o []byte) int {
	c, swap, ok := compareOrder(dir)
	if !ok {
		return 0
	}
	if swap {
		a, b = b, a
	}
	var n int
	switch binaryLanes {
	case 16:
		if n = len(o) &^ 15; n == 0 {
			return 0
		}
		pa, pb, po := u32Base(a, n), u32Base(b, n), unsafe.Pointer(&o[:n][0])
		flip := archsimd.BroadcastUint32x16(0)
		if !signed {
			flip = archsimd.BroadcastUint32x16(1 << 31) // unsigned order as signed order of flipped bits
		}
		for i := 0; i < n; i += 16 {
			x := loadUint32x16(pa, 4*i).Xor(flip).AsInt32x16()
			y := loadUint32x16(pb, 4*i).Xor(flip).AsInt32x16()
			var m archsimd.Mask32x16
			switch c {
			case cmpEQ:
				m = x.Equal(y)
			case cmpNE:
				m = x.NotEqual(y)
			case cmpLT:
				m = x.Less(y)
			default:
				m = x.LessEqual(y)
			}
			bits := m.ToBits()
			storePred8(uint8(bits), po, i)
			storePred8(uint8(bits>>8), po, i+8)
		}
	case 8:
		if n = len(o) &^ 7; n == 0 {
			return 0
		}
		pa, pb, po := u32Base(a, n), u32Base(b, n), unsafe.Pointer(&o[:n][0])
		flip := archsimd.BroadcastUint32x8(0)
		if !signed {
			flip = archsimd.BroadcastUint32x8(1 << 31)
		}
		for i := 0; i < n; i += 8 {
			x := loadUint32x8(pa, 4*i).Xor(flip).AsInt32x8()
			y := loadUint32x8(pb, 4*i).Xor(flip).AsInt32x8()
			var m archsimd.Mask32x8
			switch c {
			case cmpEQ:
				m = x.Equal(y)
			case cmpNE:
				m = x.NotEqual(y)
			case cmpLT:
				m = x.Less(y)
			default:
				m = x.LessEqual(y)
			}
			storePred8(m.ToBits(), po, i)
		}
	default:
		return 0
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// selectBitsVector computes the whole vectors at the front of o (selectBits
// on them) and returns how many elements that was.
func selectBitsVector(p []byte, a, b, o []uint32) int {
	var n int
	switch binaryLanes {
	case 16:
		if n = len(o) &^ 15; n == 0 {
			return 0
		}
		pp, pa, pb, po := unsafe.Pointer(&p[:n][0]), u32Base(a, n), u32Base(b, n), u32Base(o, n)
		zero := archsimd.BroadcastUint32x16(0)
		for i := 0; i < n; i += 16 {
			m := archsimd.LoadUint8x16((*[16]uint8)(unsafe.Add(pp, i))).ExtendToUint32().NotEqual(zero)
			storeUint32x16(loadUint32x16(pa, 4*i).Merge(loadUint32x16(pb, 4*i), m), po, 4*i)
		}
	case 8:
		if n = len(o) &^ 7; n == 0 {
			return 0
		}
		pp, pa, pb, po := unsafe.Pointer(&p[:n][0]), u32Base(a, n), u32Base(b, n), u32Base(o, n)
		zero := archsimd.BroadcastUint32x8(0)
		for i := 0; i < n; i += 8 {
			pv := archsimd.BroadcastUint64x2(*(*uint64)(unsafe.Add(pp, i))).AsUint8x16()
			m := pv.ExtendLo8ToUint32().Equal(zero) // where b is taken
			storeUint32x8(loadUint32x8(pb, 4*i).Merge(loadUint32x8(pa, 4*i), m), po, 4*i)
		}
	default:
		return 0
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// selectHalvesVector is selectBitsVector for 2-byte elements, sixteen at a
// time.
func selectHalvesVector(p []byte, a, b, o []uint16) int {
	n := len(o) &^ 15
	if binaryLanes < 8 || n == 0 {
		return 0
	}
	pp, pa, pb, po := unsafe.Pointer(&p[:n][0]), unsafe.Pointer(&a[:n][0]), unsafe.Pointer(&b[:n][0]), unsafe.Pointer(&o[:n][0])
	zero := archsimd.BroadcastUint16x16(0)
	for i := 0; i < n; i += 16 {
		m := archsimd.LoadUint8x16((*[16]uint8)(unsafe.Add(pp, i))).ExtendToUint16().NotEqual(zero)
		x := archsimd.LoadUint16x16((*[16]uint16)(unsafe.Add(pa, 2*i)))
		y := archsimd.LoadUint16x16((*[16]uint16)(unsafe.Add(pb, 2*i)))
		x.Merge(y, m).Store((*[16]uint16)(unsafe.Add(po, 2*i)))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// selectBytesVector is selectBitsVector for 1-byte elements, thirty-two at
// a time.
func selectBytesVector(p, a, b, o []byte) int {
	n := len(o) &^ 31
	if binaryLanes < 8 || n == 0 {
		return 0
	}
	pp, pa, pb, po := unsafe.Pointer(&p[:n][0]), unsafe.Pointer(&a[:n][0]), unsafe.Pointer(&b[:n][0]), unsafe.Pointer(&o[:n][0])
	zero := archsimd.BroadcastUint8x32(0)
	for i := 0; i < n; i += 32 {
		m := archsimd.LoadUint8x32((*[32]uint8)(unsafe.Add(pp, i))).NotEqual(zero)
		x := archsimd.LoadUint8x32((*[32]uint8)(unsafe.Add(pa, i)))
		y := archsimd.LoadUint8x32((*[32]uint8)(unsafe.Add(pb, i)))
		x.Merge(y, m).Store((*[32]uint8)(unsafe.Add(po, i)))
	}
	archsimd.ClearAVXUpperBits()
	return n
}
