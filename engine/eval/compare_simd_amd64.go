//go:build goexperiment.simd && amd64

package eval

import (
	bin "encoding/binary"
	"simd/archsimd"
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

// compareF32Vector computes the whole vectors at the front of o and returns
// how many elements that was (0 when dir has no vector form here).
func compareF32Vector(dir string, a, b []float32, o []byte) int {
	n := len(o)
	a, b = a[:n], b[:n]
	switch binaryLanes {
	case 16:
		n &^= 15
		for i := 0; i < n; i += 16 {
			x := archsimd.LoadFloat32x16((*[16]float32)(a[i:]))
			y := archsimd.LoadFloat32x16((*[16]float32)(b[i:]))
			var m archsimd.Mask32x16
			switch dir {
			case "EQ":
				m = x.Equal(y)
			case "NE":
				m = x.NotEqual(y)
			case "LT":
				m = x.Less(y)
			case "LE":
				m = x.LessEqual(y)
			case "GT":
				m = x.Greater(y)
			case "GE":
				m = x.GreaterEqual(y)
			default:
				return 0
			}
			bits := m.ToBits()
			bin.LittleEndian.PutUint64(o[i:], predSpread[uint8(bits)])
			bin.LittleEndian.PutUint64(o[i+8:], predSpread[bits>>8])
		}
	case 8:
		n &^= 7
		for i := 0; i < n; i += 8 {
			x := archsimd.LoadFloat32x8((*[8]float32)(a[i:]))
			y := archsimd.LoadFloat32x8((*[8]float32)(b[i:]))
			var m archsimd.Mask32x8
			switch dir {
			case "EQ":
				m = x.Equal(y)
			case "NE":
				m = x.NotEqual(y)
			case "LT":
				m = x.Less(y)
			case "LE":
				m = x.LessEqual(y)
			case "GT":
				m = x.Greater(y)
			case "GE":
				m = x.GreaterEqual(y)
			default:
				return 0
			}
			bin.LittleEndian.PutUint64(o[i:], predSpread[m.ToBits()])
		}
	default:
		return 0
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// compareInt32Vector is compareF32Vector for s32 (signed) or u32 bits.
func compareInt32Vector(dir string, signed bool, a, b []uint32, o []byte) int {
	n := len(o)
	a, b = a[:n], b[:n]
	switch dir {
	case "EQ", "NE", "LT", "LE", "GT", "GE":
	default:
		return 0
	}
	switch binaryLanes {
	case 16:
		n &^= 15
		flip := archsimd.BroadcastUint32x16(0)
		if !signed {
			flip = archsimd.BroadcastUint32x16(1 << 31) // unsigned order as signed order of flipped bits
		}
		for i := 0; i < n; i += 16 {
			x := archsimd.LoadUint32x16((*[16]uint32)(a[i:])).Xor(flip).AsInt32x16()
			y := archsimd.LoadUint32x16((*[16]uint32)(b[i:])).Xor(flip).AsInt32x16()
			var m archsimd.Mask32x16
			switch dir {
			case "EQ":
				m = x.Equal(y)
			case "NE":
				m = x.NotEqual(y)
			case "LT":
				m = x.Less(y)
			case "LE":
				m = x.LessEqual(y)
			case "GT":
				m = x.Greater(y)
			case "GE":
				m = x.GreaterEqual(y)
			}
			bits := m.ToBits()
			bin.LittleEndian.PutUint64(o[i:], predSpread[uint8(bits)])
			bin.LittleEndian.PutUint64(o[i+8:], predSpread[bits>>8])
		}
	case 8:
		n &^= 7
		flip := archsimd.BroadcastUint32x8(0)
		if !signed {
			flip = archsimd.BroadcastUint32x8(1 << 31)
		}
		for i := 0; i < n; i += 8 {
			x := archsimd.LoadUint32x8((*[8]uint32)(a[i:])).Xor(flip).AsInt32x8()
			y := archsimd.LoadUint32x8((*[8]uint32)(b[i:])).Xor(flip).AsInt32x8()
			var m archsimd.Mask32x8
			switch dir {
			case "EQ":
				m = x.Equal(y)
			case "NE":
				m = x.NotEqual(y)
			case "LT":
				m = x.Less(y)
			case "LE":
				m = x.LessEqual(y)
			case "GT":
				m = x.Greater(y)
			case "GE":
				m = x.GreaterEqual(y)
			}
			bin.LittleEndian.PutUint64(o[i:], predSpread[m.ToBits()])
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
	n := len(o)
	p, a, b = p[:n], a[:n], b[:n]
	switch binaryLanes {
	case 16:
		n &^= 15
		zero := archsimd.BroadcastUint32x16(0)
		for i := 0; i < n; i += 16 {
			m := archsimd.LoadUint8x16((*[16]uint8)(p[i:])).ExtendToUint32().NotEqual(zero)
			x := archsimd.LoadUint32x16((*[16]uint32)(a[i:]))
			y := archsimd.LoadUint32x16((*[16]uint32)(b[i:]))
			x.Merge(y, m).Store((*[16]uint32)(o[i:]))
		}
	case 8:
		n &^= 7
		zero := archsimd.BroadcastUint32x8(0)
		for i := 0; i < n; i += 8 {
			pv := archsimd.BroadcastUint64x2(bin.LittleEndian.Uint64(p[i:])).AsUint8x16()
			m := pv.ExtendLo8ToUint32().Equal(zero) // where b is taken
			x := archsimd.LoadUint32x8((*[8]uint32)(a[i:]))
			y := archsimd.LoadUint32x8((*[8]uint32)(b[i:]))
			y.Merge(x, m).Store((*[8]uint32)(o[i:]))
		}
	default:
		return 0
	}
	archsimd.ClearAVXUpperBits()
	return n
}
