//go:build goexperiment.simd && amd64

package eval

import (
	"math/bits"
	"simd/archsimd"
)

// The f32 subnormal scans of daz/ftz, 8 lanes at a time (AVX2): a lane is
// subnormal when its exponent bits are 0 and its mantissa bits are not.

var subnormalSIMD = archsimd.X86.AVX2()

// subnormalMask returns the lanes of v that are subnormal.
func subnormalMask(v archsimd.Uint32x8) uint8 {
	zero := archsimd.BroadcastUint32x8(0)
	e := v.And(archsimd.BroadcastUint32x8(0x7f800000)).Equal(zero).ToBits()
	m := v.And(archsimd.BroadcastUint32x8(0x007fffff)).Equal(zero).ToBits()
	return e &^ m
}

// firstSubnormalBits32 is firstSubnormal on f32 bit patterns.
func firstSubnormalBits32(xs []uint32) int {
	i := 0
	if subnormalSIMD {
		for ; i+8 <= len(xs); i += 8 {
			if m := subnormalMask(archsimd.LoadUint32x8((*[8]uint32)(xs[i:]))); m != 0 {
				return i + bits.TrailingZeros8(m)
			}
		}
	}
	for ; i < len(xs); i++ {
		if xs[i]&0x7fffffff-1 < 0x007fffff {
			return i
		}
	}
	return -1
}

// ftzBits32 is ftz on f32 bit patterns.
func ftzBits32(xs []uint32) {
	i := 0
	if subnormalSIMD {
		for ; i+8 <= len(xs); i += 8 {
			v := archsimd.LoadUint32x8((*[8]uint32)(xs[i:]))
			if subnormalMask(v) == 0 {
				continue
			}
			for k := i; k < i+8; k++ {
				if xs[k]&0x7fffffff-1 < 0x007fffff {
					xs[k] &= 0x80000000
				}
			}
		}
	}
	for ; i < len(xs); i++ {
		if xs[i]&0x7fffffff-1 < 0x007fffff {
			xs[i] &= 0x80000000
		}
	}
}
